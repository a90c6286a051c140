"""The framework runs each extension point with kube-scheduler's semantics.

Small plugins written the way a plugin author would (``@kubesched.hookimpl``)
are enabled through a profile and run on a simulated cluster; the tests look
at what a user sees: placements, pod conditions, events, and which plugin
methods ran.
"""

from __future__ import annotations

import pytest

import kubesched
from kubesched import Code, PostFilterResult, PreFilterResult, Status
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.cycle_state import CycleState, StateNotFound
from kubesched.testing import node, pod

from .helpers import condition, config, simulation

CALLS: list[tuple] = []


@pytest.fixture(autouse=True)
def clear_calls():
    CALLS.clear()
    yield
    CALLS.clear()


def enable(**points) -> dict:
    """A default-scheduler profile with extra plugins at the given points
    (``filter=["A"]``); ``multiPoint`` keyword for multiPoint."""
    plugins = {}
    for point, names in points.items():
        plugins[point] = {"enabled": [n if isinstance(n, dict) else {"name": n} for n in names]}
    return config({"plugins": plugins})


def three_nodes():
    return [node("n1"), node("n2"), node("n3")]


def run(cfg, plugins, objects, **kwargs):
    sim = simulation(cfg, *plugins, **kwargs)
    sim.create(objects)
    sim.run()
    return sim


# --- validation at start-up ----------------------------------------------------------------


class TooFewArguments:
    name = "TooFewArguments"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filter(self, pod, node_info):
        return None


class WrongArgumentName:
    name = "WrongArgumentName"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filter(self, state, pod, node):
        return None


class SwappedArguments:
    name = "SwappedArguments"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def score(self, state, node_info, pod):
        return 0


class MisspelledHook:
    name = "MisspelledHook"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filtre(self, state, pod, node_info):
        return None


class BadArgs:
    name = "BadArgs"

    def __init__(self, args, handle):
        if "limit" not in args:
            raise ValueError("limit: Required value")

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        return None


@pytest.mark.parametrize(
    "cls, problem",
    [
        (TooFewArguments, "plugin TooFewArguments: hook filter(pod, node_info) must take exactly (state, pod, node_info)"),
        (WrongArgumentName, "plugin WrongArgumentName: Plugin 'WrongArgumentName' for hook 'filter'"),
        (SwappedArguments, "plugin SwappedArguments: hook score(state, node_info, pod) must take exactly"),
        (MisspelledHook, "plugin MisspelledHook: unknown hook 'filtre'"),
        (BadArgs, "pluginConfig BadArgs: args: limit: Required value"),
    ],
)
def test_plugins_are_checked_at_start_up_not_at_the_first_pod(cls, problem):
    with pytest.raises(ConfigError) as err:
        simulation(enable(multiPoint=[cls.name]), cls)
    assert str(err.value).startswith(f"profile 'default-scheduler': {problem}")


# --- PreFilter ---------------------------------------------------------------------------


class SkipFilter:
    """PreFilter says Skip, so its Filter (which would reject everything) never runs."""

    name = "SkipFilter"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        return Status.skip()

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        CALLS.append(("SkipFilter.filter", node_info.name))
        return Status.unschedulable("should not run")


def test_prefilter_skip_skips_the_plugins_filter():
    sim = run(enable(multiPoint=["SkipFilter"]), [SkipFilter], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name
    assert CALLS == []


class RejectAtPreFilter:
    name = "RejectAtPreFilter"

    def __init__(self, args, handle):
        self.code = Code[args.get("code", "UNSCHEDULABLE")]

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        CALLS.append(("RejectAtPreFilter", len(nodes)))
        return Status(self.code, ("pod is not welcome",))


class RecordPreFilter:
    name = "RecordPreFilter"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        CALLS.append(("RecordPreFilter", len(nodes)))
        return None


@pytest.mark.parametrize("code, later_plugins_run", [("UNSCHEDULABLE", True), ("UNSCHEDULABLE_AND_UNRESOLVABLE", False)])
def test_prefilter_rejection(code, later_plugins_run):
    cfg = enable(preFilter=["RejectAtPreFilter", "RecordPreFilter"])
    cfg["profiles"][0]["pluginConfig"] = [{"name": "RejectAtPreFilter", "args": {"code": code}}]
    sim = run(cfg, [RejectAtPreFilter, RecordPreFilter], three_nodes() + [pod("p")])
    p = sim.pod("p")
    assert p.spec.node_name == ""
    cond = condition(p)
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    # PreFilter's message stands for every node
    # preemption finds no victims where PreFilter's rejection was resolvable, and does not try elsewhere
    preemption = ("No preemption victims found for incoming pod" if later_plugins_run
                  else "Preemption is not helpful for scheduling")
    assert cond.message == f"0/3 nodes are available: pod is not welcome. preemption: 0/3 nodes are available: 3 {preemption}."
    assert ("RejectAtPreFilter", 3) in CALLS
    assert (("RecordPreFilter", 3) in CALLS) is later_plugins_run


def test_prefilter_error_is_a_scheduler_error():
    cfg = enable(preFilter=["RejectAtPreFilter"])
    cfg["profiles"][0]["pluginConfig"] = [{"name": "RejectAtPreFilter", "args": {"code": "ERROR"}}]
    sim = run(cfg, [RejectAtPreFilter], three_nodes() + [pod("p")])
    cond = condition(sim.pod("p"))
    assert cond.reason == "SchedulerError"
    assert "RejectAtPreFilter" in cond.message and "pod is not welcome" in cond.message


class Narrow:
    """PreFilter narrows the nodes to those named in its args; Filter records what it sees."""

    name = "Narrow"

    def __init__(self, args, handle):
        self.nodes = frozenset(args["nodes"])

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        return PreFilterResult(self.nodes), None

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        CALLS.append(("Narrow.filter", node_info.name))
        return None


class NarrowToo(Narrow):
    name = "NarrowToo"


def narrowing(first, second=None):
    names = ["Narrow"] + (["NarrowToo"] if second is not None else [])
    cfg = enable(multiPoint=names)
    cfg["profiles"][0]["pluginConfig"] = [{"name": "Narrow", "args": {"nodes": first}}] + (
        [{"name": "NarrowToo", "args": {"nodes": second}}] if second is not None else [])
    return cfg


def test_prefilter_results_are_intersected():
    sim = run(narrowing(["n1", "n2"], ["n2", "n3"]), [Narrow, NarrowToo], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name == "n2"
    assert ("Narrow.filter", "n1") not in CALLS and ("Narrow.filter", "n3") not in CALLS


def test_empty_prefilter_intersection_is_unresolvable():
    sim = run(narrowing(["n1"], ["n3"]), [Narrow, NarrowToo], three_nodes() + [pod("p")])
    assert condition(sim.pod("p")).message == (
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [Narrow NarrowToo] simultaneously. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert CALLS == []


def test_nodes_cut_by_prefilter_count_in_the_fit_error():
    objects = [node("n1", cpu="1"), node("n2"), node("n3"), pod("p", cpu="2")]
    sim = run(narrowing(["n1", "ghost"]), [Narrow], objects)
    p = sim.pod("p")
    assert p.spec.node_name == ""
    assert condition(p).message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [Narrow]. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


# --- Filter ------------------------------------------------------------------------------


class RejectN1:
    name = "RejectN1"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        if node_info.name == "n1":
            return Status.unschedulable("n1 is reserved")
        return None


class RecordFilter:
    name = "RecordFilter"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        CALLS.append(("RecordFilter", node_info.name))
        return None


def test_the_first_failing_filter_ends_a_nodes_filtering():
    sim = run(enable(filter=["RejectN1", "RecordFilter"]), [RejectN1, RecordFilter], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name in ("n2", "n3")
    assert sorted(CALLS) == [("RecordFilter", "n2"), ("RecordFilter", "n3")]


class BrokenFilter:
    name = "BrokenFilter"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        if node_info.name == "n2":
            return Status.as_error("disk on fire")
        return None


def test_a_filter_error_aborts_the_cycle():
    sim = run(enable(filter=["BrokenFilter"]), [BrokenFilter], three_nodes() + [pod("p")])
    p = sim.pod("p")
    assert p.spec.node_name == ""
    cond = condition(p)
    assert cond.reason == "SchedulerError"
    assert "BrokenFilter" in cond.message and "disk on fire" in cond.message
    assert sim.scheduler.stats.errors >= 1


# --- PreScore / Score ----------------------------------------------------------------------


class Likes:
    """Scores 100 on the node named in its args, 0 elsewhere."""

    name = "Likes"

    def __init__(self, args, handle):
        self.node = args["node"]

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        CALLS.append((self.name, node_info.name))
        return 100 if node_info.name == self.node else 0


class LikesToo(Likes):
    name = "LikesToo"


def scoring(w1, w2):
    cfg = config({
        "plugins": {"score": {"enabled": [{"name": "Likes", "weight": w1}, {"name": "LikesToo", "weight": w2}],
                              "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "Likes", "args": {"node": "n1"}}, {"name": "LikesToo", "args": {"node": "n3"}}],
    })
    return cfg


@pytest.mark.parametrize("w1, w2, winner", [(2, 3, "n3"), (5, 4, "n1")])
def test_scores_are_weighted_and_summed(w1, w2, winner):
    sim = run(scoring(w1, w2), [Likes, LikesToo], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name == winner


class Normalized:
    """Raw scores up to 1000, brought into [0, 100] by NormalizeScore."""

    name = "Normalized"

    def __init__(self, args, handle):
        self.normalize = args.get("normalize", True)

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        return {"n1": 1000, "n2": 500, "n3": 0}[node_info.name]

    @kubesched.hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        CALLS.append(("normalize", list(node_names), [int(s) for s in scores]))
        if self.normalize:
            scores //= 10
        return None


def normalized(normalize):
    return config({
        "plugins": {"score": {"enabled": [{"name": "Normalized"}], "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "Normalized", "args": {"normalize": normalize}}],
    })


def test_normalize_score_brings_scores_into_range():
    sim = run(normalized(True), [Normalized], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name == "n1"
    ((_, names, raw),) = CALLS
    assert sorted(zip(names, raw)) == [("n1", 1000), ("n2", 500), ("n3", 0)]


def test_a_score_out_of_range_after_normalizing_is_an_error():
    sim = run(normalized(False), [Normalized], three_nodes() + [pod("p")])
    cond = condition(sim.pod("p"))
    assert cond.reason == "SchedulerError"
    assert "Normalized" in cond.message and "invalid score 1000" in cond.message
    assert "[0, 100] after normalizing" in cond.message


class Negative:
    """A score below the range on one node."""

    name = "Negative"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        return -5 if node_info.name == "n2" else 50


def test_a_negative_score_is_an_error_naming_the_plugin_and_the_score():
    cfg = config({"plugins": {"score": {"enabled": [{"name": "Negative"}], "disabled": [{"name": "*"}]}}})
    cond = condition(run(cfg, [Negative], three_nodes() + [pod("p")]).pod("p"))
    assert cond.reason == "SchedulerError"
    assert 'plugin "Negative" returns an invalid score -5' in cond.message


class SkipScore:
    name = "SkipScore"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def pre_score(self, state, pod, nodes):
        CALLS.append(("SkipScore.pre_score", sorted(n.name for n in nodes)))
        return Status.skip()

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        CALLS.append(("SkipScore.score", node_info.name))
        return 0


def test_prescore_skip_skips_the_plugins_score():
    sim = run(enable(multiPoint=["SkipScore"]), [SkipScore], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name
    assert CALLS == [("SkipScore.pre_score", ["n1", "n2", "n3"])]


def test_one_feasible_node_is_taken_without_scoring():
    cfg = enable(multiPoint=["SkipScore"], filter=["RejectN1"])
    objects = [node("n1"), node("n2"), pod("p")]
    sim = run(cfg, [SkipScore, RejectN1], objects)
    assert sim.pod("p").spec.node_name == "n2"
    assert CALLS == []


# --- PostFilter --------------------------------------------------------------------------


class PostFilterNo:
    name = "PostFilterNo"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        CALLS.append(("PostFilterNo", sorted(filtered_node_status)))
        return None, Status.unschedulable("no victims here")


class PostFilterNominate:
    name = "PostFilterNominate"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        CALLS.append(("PostFilterNominate", sorted(filtered_node_status)))
        return PostFilterResult("n2"), None


class PostFilterNever:
    name = "PostFilterNever"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        CALLS.append(("PostFilterNever",))
        return None, Status.unschedulable("too late")


def test_postfilter_runs_until_one_succeeds_and_nominates():
    cfg = enable(postFilter=["PostFilterNo", "PostFilterNominate", "PostFilterNever"])
    sim = simulation(cfg, PostFilterNo, PostFilterNominate, PostFilterNever)
    sim.create(three_nodes() + [pod("big", cpu="100")])
    sim.run_for(0.5)
    p = sim.pod("big")
    assert p.status.nominated_node_name == "n2"
    assert CALLS == [("PostFilterNo", ["n1", "n2", "n3"]), ("PostFilterNominate", ["n1", "n2", "n3"])]
    assert condition(p).message == "0/3 nodes are available: 3 Insufficient cpu."
    assert sim.scheduler.queue.nominator.nominated_node(p) == "n2"


def test_postfilter_message_is_appended_to_the_fit_error():
    sim = run(enable(postFilter=["PostFilterNo"]), [PostFilterNo], three_nodes() + [pod("big", cpu="100")])
    # every PostFilter plugin's reasons, joined (DefaultPreemption runs first: multiPoint before the others)
    assert condition(sim.pod("big")).message == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling., no victims here")


def test_postfilter_does_not_run_when_a_node_fits():
    sim = run(enable(postFilter=["PostFilterNo"]), [PostFilterNo], three_nodes() + [pod("p")])
    assert sim.pod("p").spec.node_name and CALLS == []


# --- Reserve, Permit, Bind, PostBind -------------------------------------------------------


class Reserving:
    """Reserve/Unreserve that log; fails Reserve when its args say so."""

    name = "Reserving"

    def __init__(self, args, handle):
        self.fail = args.get("fail", False)

    @kubesched.hookimpl
    def reserve(self, state, pod, node_name):
        CALLS.append((self.name, "reserve", pod.metadata.name, node_name))
        if self.fail:
            return Status.unschedulable(f"{self.name} has no room")
        state.write(self.name, node_name)
        return None

    @kubesched.hookimpl
    def unreserve(self, state, pod, node_name):
        CALLS.append((self.name, "unreserve", pod.metadata.name, node_name))


class ReservingB(Reserving):
    name = "ReservingB"


class ReservingC(Reserving):
    name = "ReservingC"


def test_a_reserve_failure_unreserves_every_reserve_plugin_in_reverse_order():
    cfg = enable(reserve=["Reserving", "ReservingB", "ReservingC"])
    cfg["profiles"][0]["pluginConfig"] = [{"name": "ReservingB", "args": {"fail": True}}]
    sim = simulation(cfg, Reserving, ReservingB, ReservingC)
    sim.create([node("n1"), pod("p")])
    sim.run_for(0.5)
    assert [(c[0], c[1]) for c in CALLS] == [
        ("Reserving", "reserve"), ("ReservingB", "reserve"),
        ("ReservingC", "unreserve"), ("ReservingB", "unreserve"), ("Reserving", "unreserve"),
    ]
    p = sim.pod("p")
    assert p.spec.node_name == ""
    assert (condition(p).reason, condition(p).message) == ("Unschedulable", "0/1 nodes are available: 1 ReservingB has no room.")
    # the assumed pod was forgotten: the node is empty again
    assert sim.scheduler.cache.assumed_pods() == []
    assert sim.scheduler.cache.nodes["n1"].pods == []


class RejectPermit:
    name = "RejectPermit"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def permit(self, state, pod, node_name):
        CALLS.append(("RejectPermit", "permit", pod.metadata.name, node_name))
        return Status.unschedulable("not now")


def test_a_permit_rejection_unreserves():
    cfg = enable(reserve=["Reserving", "ReservingB"], permit=["RejectPermit"])
    sim = simulation(cfg, Reserving, ReservingB, RejectPermit)
    sim.create([node("n1"), pod("p")])
    sim.run_for(0.5)
    assert [(c[0], c[1]) for c in CALLS] == [
        ("Reserving", "reserve"), ("ReservingB", "reserve"), ("RejectPermit", "permit"),
        ("ReservingB", "unreserve"), ("Reserving", "unreserve"),
    ]
    assert condition(sim.pod("p")).message == "0/1 nodes are available: 1 not now."
    assert sim.scheduler.cache.assumed_pods() == []


class SkipBind:
    name = "SkipBind"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def bind(self, state, pod, node_name):
        CALLS.append(("SkipBind", node_name))
        return Status.skip()


class LabelBind:
    """Binds pods labelled ``bind-by: label-bind`` itself; skips the others."""

    name = "LabelBind"

    def __init__(self, args, handle):
        self.cluster = handle.cluster

    @kubesched.hookimpl
    def bind(self, state, pod, node_name):
        if pod.metadata.labels.get("bind-by") != "label-bind":
            return Status.skip()
        CALLS.append(("LabelBind", pod.metadata.name, node_name))
        self.cluster.bind(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, node_name)
        return None


class PostBindLog:
    name = "PostBindLog"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def post_bind(self, state, pod, node_name):
        CALLS.append(("PostBindLog", pod.metadata.name, node_name, state.read("Reserving")))


def test_bind_plugins_run_in_order_until_one_does_not_skip_then_postbind():
    cfg = config({"plugins": {
        "bind": {"enabled": [{"name": "SkipBind"}, {"name": "LabelBind"}, {"name": "DefaultBinder"}],
                 "disabled": [{"name": "*"}]},
        "reserve": {"enabled": [{"name": "Reserving"}]},
        "postBind": {"enabled": [{"name": "PostBindLog"}]},
    }})
    sim = run(cfg, [SkipBind, LabelBind, PostBindLog, Reserving],
              [node("n1"), pod("mine", labels={"bind-by": "label-bind"}), pod("other")])
    assert sim.placements() == {"default/mine": "n1", "default/other": "n1"}
    assert ("LabelBind", "mine", "n1") in CALLS
    assert not any(c[0] == "LabelBind" and c[1] == "other" for c in CALLS)
    assert [c for c in CALLS if c[0] == "SkipBind"] == [("SkipBind", "n1"), ("SkipBind", "n1")]
    # PostBind sees the cycle state written at Reserve
    assert sorted(c for c in CALLS if c[0] == "PostBindLog") == [
        ("PostBindLog", "mine", "n1", "n1"), ("PostBindLog", "other", "n1", "n1")]
    assert [e.message for e in sim.events("Scheduled")] == [
        "Successfully assigned default/mine to n1", "Successfully assigned default/other to n1"]


def test_bind_when_every_plugin_skips_is_an_error():
    cfg = config({"plugins": {"bind": {"enabled": [{"name": "SkipBind"}], "disabled": [{"name": "*"}]}}})
    sim = simulation(cfg, SkipBind)
    sim.create([node("n1"), pod("p")])
    sim.run_for(0.5)
    p = sim.pod("p")
    assert p.spec.node_name == ""
    assert condition(p).reason == "SchedulerError"


# --- CycleState ----------------------------------------------------------------------------


def test_cycle_state_read_write_clone():
    class Counter:
        def __init__(self, n):
            self.n = n

        def clone(self):
            return Counter(self.n)

    state = CycleState()
    state.write("shared", [1])
    state.write("counter", Counter(1))
    state.skip_filter_plugins.add("X")
    state.skip_score_plugins.add("S")
    state.record, state.evaluated_nodes, state.feasible_nodes = object(), 5, 3
    copy = state.clone()
    copy.read("counter").n = 5
    copy.skip_filter_plugins.add("Y")
    copy.skip_score_plugins.add("T")
    assert state.read("counter").n == 1  # values with clone() are cloned
    assert copy.read("shared") is state.read("shared")  # others are shared
    assert state.skip_filter_plugins == {"X"} and state.skip_score_plugins == {"S"}
    assert copy.skip_filter_plugins == {"X", "Y"} and copy.skip_score_plugins == {"S", "T"}
    assert (copy.record, copy.evaluated_nodes, copy.feasible_nodes) == (None, 0, 0)  # a dry run is not the decision
    copy.write("later", 1)
    assert state.get("later") is None
    state.write("shared", Counter(2))  # a value written after a clone is cloned by the next one
    assert state.clone().read("shared") is not state.read("shared")
    with pytest.raises(StateNotFound):
        state.read("missing")
    assert state.get("missing", 7) == 7
    state.delete("shared")
    assert state.get("shared") is None


class ReadsPodInfo:
    """Reads the cycle's PodInfo at PreFilter, Filter and Score."""

    name = "ReadsPodInfo"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        CALLS.append(("pre_filter", pod.metadata.name, state.pod_info_of(pod)))
        return None

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        CALLS.append(("filter", pod.metadata.name, state.clone().pod_info_of(pod)))
        return None

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        CALLS.append(("score", pod.metadata.name, state.pod_info_of(pod)))
        return 0


def test_a_cycles_plugins_share_one_pod_info_of_the_pod():
    run(enable(multiPoint=["ReadsPodInfo"]), [ReadsPodInfo],
        [node("n1"), node("n2"), pod("a", cpu="500m", memory="1Gi"), pod("b", cpu="2")])
    infos = {name: {id(info) for _, seen, info in CALLS if seen == name} for name in ("a", "b")}
    assert {point for point, _, _ in CALLS} == {"pre_filter", "filter", "score"}
    assert len(infos["a"]) == len(infos["b"]) == 1 and infos["a"] != infos["b"]  # one per pod, clones included
    requests = {name: info.requests for _, name, info in CALLS}
    assert requests == {"a": {"cpu": 500, "memory": 1024**3}, "b": {"cpu": 2000}}
    other = pod("c", cpu="1")
    state = CycleState()
    assert state.pod_info_of(other).requests == {"cpu": 1000}  # made on first ask for a pod the cycle was not
    assert state.pod_info_of(other) is state.pod_info_of(other)  # started with, then kept
