"""The scheduler end to end on a simulated cluster: cycles, Permit, binding, profiles, messages."""

from __future__ import annotations

import random

import attrs
import numpy as np
import pytest

import kubesched
from kubesched import Code, PostFilterResult, Status
from kubesched.core.api.meta import evolve_meta
from kubesched.core.cluster.client import ApiError, Conflict
from kubesched.core.features import FeatureGates
from kubesched.core.scheduler.scheduling_cycle import FEW_SCORED_NODES, SchedulingCycle, num_feasible_nodes_to_find
from kubesched.testing import node, pod

from .helpers import DEFAULT, condition, config, plugin, simulation

CALLS: list[tuple] = []


@pytest.fixture(autouse=True)
def clear_calls():
    CALLS.clear()
    yield
    CALLS.clear()


# --- numFeasibleNodesToFind ----------------------------------------------------------------


@pytest.mark.parametrize(
    "nodes, expected",
    [(1, 1), (50, 50), (99, 99), (100, 100), (200, 100), (500, 230), (1000, 420), (2000, 680), (5000, 500),
     (6000, 300), (15000, 750), (50000, 2500)],
)
def test_adaptive_number_of_feasible_nodes(nodes, expected):
    assert num_feasible_nodes_to_find(None, nodes) == expected
    assert num_feasible_nodes_to_find(0, nodes) == expected


@pytest.mark.parametrize(
    "percentage, nodes, expected",
    [(10, 5000, 500), (1, 5000, 100), (50, 1000, 500), (100, 5000, 5000), (30, 50, 50), (5, 150, 100)],
)
def test_explicit_percentage_of_nodes_to_score(percentage, nodes, expected):
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


@pytest.mark.parametrize("count", [1, 5, FEW_SCORED_NODES, FEW_SCORED_NODES + 1, 300])
@pytest.mark.parametrize("as_list", [False, True])
def test_select_host_draws_among_the_best_alike_for_few_and_many_nodes(count, as_list):
    # the same seed gives the same draws whether the scores are compared in Python (few nodes, or a list of
    # them: a PodGroup member's re-scoring) or by numpy
    totals = [np.array([(i * 7 + k) % 3 for i in range(count)], dtype=np.int64) for k in range(20)]
    # every node alike, and all but one (a gang's next member: the node the one before took scores less)
    totals += [np.full(count, 4, dtype=np.int64)] * 3
    totals += [np.full(count, 4, dtype=np.int64) - (np.arange(count) == (at * 5) % count) for at in range(12)]
    cycle = SchedulingCycle(None, None, random.Random(11))
    reference = random.Random(11)
    for total in totals:
        ties = [i for i, v in enumerate(total.tolist()) if v == max(total.tolist())]
        expected = ties[0] if len(ties) == 1 else ties[reference.randrange(len(ties))]
        assert cycle.select_host(total.tolist() if as_list else total, np.arange(count)) == expected


class CountScored:
    name = "CountScored"

    def __init__(self, args, handle):
        self.scored = []

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        self.scored.append(node_info.name)
        return 0


@pytest.mark.parametrize("top, profile_pct, scored", [(None, None, 100), (70, None, 140), (70, 25, 100), (None, 60, 120)])
def test_percentage_of_nodes_to_score_limits_the_nodes_scored(top, profile_pct, scored):
    prof = {"plugins": {"score": {"enabled": [{"name": "CountScored"}]}}}
    if profile_pct is not None:
        prof["percentageOfNodesToScore"] = profile_pct
    cfg = config(prof, **({"percentageOfNodesToScore": top} if top is not None else {}))
    sim = simulation(cfg, CountScored)
    sim.create([node(f"n{i:03}") for i in range(200)] + [pod("p")])
    sim.run()
    assert sim.pod("p").spec.node_name
    assert len(plugin(sim, "CountScored").scored) == scored


def test_without_score_plugins_one_feasible_node_is_enough_and_the_start_rotates():
    cfg = config({"plugins": {"score": {"disabled": [{"name": "*"}]}, "preScore": {"disabled": [{"name": "*"}]}}})
    sim = simulation(cfg)
    sim.create([node("n1"), node("n2"), node("n3")] + [pod(f"p{i}") for i in range(5)])
    sim.run()
    assert [sim.pod(f"p{i}").spec.node_name for i in range(5)] == ["n1", "n2", "n3", "n1", "n2"]


# --- ordinary placement --------------------------------------------------------------------


def test_pods_are_placed_and_events_recorded():
    sim = simulation(None)
    sim.create([node("small", cpu="1"), node("big", cpu="8"), pod("web", cpu="500m", memory="1Gi")])
    sim.run()
    web = sim.pod("web")
    assert web.spec.node_name == "big"  # LeastAllocated + BalancedAllocation prefer the roomy node
    assert condition(web).status == "True"
    (event,) = sim.events()
    assert (event.type, event.reason, event.message) == ("Normal", "Scheduled", "Successfully assigned default/web to big")
    assert event.source.component == DEFAULT
    assert (event.involved_object.kind, event.involved_object.name, event.involved_object.uid) == (
        "Pod", "web", web.metadata.uid)
    assert sim.scheduler.stats.bound == 1


def test_higher_priority_pods_are_scheduled_first():
    sim = simulation(None)
    sim.create([node("n1", cpu="1")] + [pod(f"low{i}", cpu="600m", priority=1) for i in range(2)]
               + [pod("high", cpu="600m", priority=100)])
    sim.run()
    assert sim.placements() == {"default/high": "n1", "default/low0": "", "default/low1": ""}


def test_bound_pods_take_room_and_finished_pods_give_it_back():
    sim = simulation(None)
    busy = pod("busy", cpu="2", node_name="n1")
    sim.create([node("n1", cpu="2"), busy, pod("waiting", cpu="1")])
    sim.run()
    assert sim.pod("waiting").spec.node_name == ""
    assert condition(sim.pod("waiting")).message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    done = sim.pod("busy")
    sim.cluster.update_status(attrs.evolve(done, status=attrs.evolve(done.status, phase="Succeeded")))
    sim.run()
    assert sim.pod("waiting").spec.node_name == "n1"


def test_a_deleted_pod_frees_its_room():
    sim = simulation(None)
    sim.create([node("n1", cpu="2"), pod("old", cpu="2", node_name="n1"), pod("new", cpu="2")])
    sim.run()
    assert sim.pod("new").spec.node_name == ""
    sim.cluster.delete("Pod", "old", "default")
    sim.run()
    assert sim.pod("new").spec.node_name == "n1"


def test_a_new_node_lets_a_pending_pod_in():
    sim = simulation(None)
    sim.create([node("n1", cpu="1"), pod("p", cpu="2")])
    sim.run()
    assert sim.pod("p").spec.node_name == ""
    sim.create([node("n2", cpu="4")])
    sim.run()
    assert sim.pod("p").spec.node_name == "n2"


def test_pods_being_deleted_are_not_scheduled():
    sim = simulation(None)
    sim.create([node("n1"), evolve_meta(pod("going", cpu="1"), finalizers=("example.com/hold",))])
    sim.cluster.delete("Pod", "going", "default")
    sim.run()
    assert sim.pod("going").spec.node_name == ""
    assert sim.events() == []


# --- FitError messages ---------------------------------------------------------------------


def test_fit_error_message_counts_reasons_per_node_sorted():
    sim = simulation(None)
    sim.create([
        node("small", cpu="1"),
        node("gpu-1", cpu="8", taints=[("dedicated", "gpu", "NoSchedule")]),
        node("gpu-2", cpu="8", taints=[("dedicated", "gpu", "NoSchedule")]),
        node("cordoned", cpu="8", unschedulable=True),
        pod("p", cpu="2", memory="1Gi"),
    ])
    sim.run()
    cond = condition(sim.pod("p"))
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message == ("0/4 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, "
                            "2 node(s) had untolerated taint {dedicated: gpu}. "
                            "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
    (event,) = sim.events("FailedScheduling")
    assert (event.type, event.message) == ("Warning", cond.message)


def test_preemption_counts_the_nodes_it_tried_and_the_others_as_not_helpful():
    """Upstream's FitError after a failed preemption: the nodes dry-run with their status, every other node
    (here the cordoned one, UnschedulableAndUnresolvable) "Preemption is not helpful for scheduling"."""
    sim = simulation(None)
    sim.create([node("busy", cpu="2"), node("cordoned", cpu="8", unschedulable=True),
                pod("running", cpu="1", node_name="busy"), pod("p", cpu="2")])
    sim.run()
    assert condition(sim.pod("p")).message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.")


def test_several_reasons_from_one_node_each_count():
    sim = simulation(None)
    sim.create([node("n1", cpu="1", memory="1Gi"), node("n2", cpu="1", memory="8Gi"), pod("p", cpu="2", memory="2Gi")])
    sim.run()
    assert condition(sim.pod("p")).message == (
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_no_nodes_at_all():
    sim = simulation(None)
    sim.create([pod("p")])
    sim.run_for(1)
    assert condition(sim.pod("p")).message == "no nodes available to schedule pods"
    sim.create([node("n1")])
    sim.run_for(30)
    assert sim.pod("p").spec.node_name == "n1"


# --- profiles -----------------------------------------------------------------------------


def test_profiles_are_chosen_by_scheduler_name():
    cfg = config(
        {"schedulerName": DEFAULT},
        {"schedulerName": "bin-packer",
         "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
         "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]},
    )
    sim = simulation(cfg)
    sim.create([
        node("busy", cpu="8", memory="32Gi"), node("idle", cpu="8", memory="32Gi"),
        pod("existing", cpu="4", memory="16Gi", node_name="busy"),
        pod("spread", cpu="1", memory="1Gi"),
        pod("packed", cpu="1", memory="1Gi", scheduler_name="bin-packer"),
    ])
    sim.run()
    assert sim.pod("spread").spec.node_name == "idle"
    assert sim.pod("packed").spec.node_name == "busy"
    by_pod = {e.involved_object.name: e.source.component for e in sim.events("Scheduled")}
    assert by_pod == {"spread": DEFAULT, "packed": "bin-packer"}


def test_pods_of_another_scheduler_are_left_alone():
    sim = simulation(None)
    sim.create([node("n1"), pod("theirs", scheduler_name="someone-else"), pod("ours")])
    sim.run()
    assert sim.placements() == {"default/ours": "n1", "default/theirs": ""}
    theirs = sim.pod("theirs")
    assert theirs.status.conditions == ()
    assert theirs not in sim.scheduler.queue
    assert [e.involved_object.name for e in sim.events()] == ["ours"]


# --- nominated node -------------------------------------------------------------------------


def nominated(p, node_name):
    return attrs.evolve(p, status=attrs.evolve(p.status, nominated_node_name=node_name))


class CountFiltered:
    name = "CountFiltered"

    def __init__(self, args, handle):
        self.seen = []

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        self.seen.append(node_info.name)
        return None


def test_the_nominated_node_is_tried_first_and_taken_when_it_fits():
    cfg = config({"plugins": {"filter": {"enabled": [{"name": "CountFiltered"}]}}})
    sim = simulation(cfg, CountFiltered)
    sim.create([node("roomy-1", cpu="32"), node("roomy-2", cpu="32"), node("tight", cpu="2"),
                nominated(pod("p", cpu="1"), "tight")])
    sim.run()
    assert sim.pod("p").spec.node_name == "tight"  # scoring would have picked a roomy node
    assert plugin(sim, "CountFiltered").seen == ["tight"]


def test_a_nominated_node_that_no_longer_fits_is_passed_over():
    sim = simulation(None)
    sim.create([node("roomy", cpu="32"), node("tight", cpu="2"), nominated(pod("p", cpu="4"), "tight")])
    sim.run()
    assert sim.pod("p").spec.node_name == "roomy"


class EvictLower:
    """A toy preemption: deletes the lower-priority pods on n1 and nominates n1."""

    name = "EvictLower"

    def __init__(self, args, handle):
        self.handle = handle

    @kubesched.hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        victims = [info.pod for info in self.handle.snapshot.get("n1").pods
                   if (info.pod.spec.priority or 0) < (pod.spec.priority or 0)]
        if not victims:
            return None, Status.unschedulable("preemption: no victims")
        for victim in victims:
            self.handle.cluster.delete("Pod", victim.metadata.name, victim.metadata.namespace)
        return PostFilterResult("n1"), None


def test_room_made_for_a_nominated_pod_is_not_taken_by_lower_priority_pods():
    sim = simulation(config({"plugins": {"postFilter": {"enabled": [{"name": "EvictLower"}]}}}), EvictLower,
                     features=FeatureGates(overrides={"SchedulerPopFromBackoffQ": False}))  # vip waits out its backoff
    sim.create([
        node("n1", cpu="2"),
        pod("victim", cpu="2", node_name="n1", priority=0),
        pod("vip", cpu="2", priority=100),
        pod("sneaky", cpu="1", priority=0),
    ])
    sim.run_for(0.5)
    assert sim.placements() == {"default/vip": "", "default/sneaky": ""}
    assert sim.pod("vip").status.nominated_node_name == "n1"
    # n1 is empty now, but the room belongs to the nominated vip
    assert condition(sim.pod("sneaky")).message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    sim.run()
    assert sim.pod("vip").spec.node_name == "n1"
    assert sim.pod("sneaky").spec.node_name == ""


# --- Permit: wait, allow, reject, timeout ----------------------------------------------------


class Reserving:
    name = "Reserving"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def reserve(self, state, pod, node_name):
        CALLS.append((self.name, "reserve", pod.metadata.name))
        return None

    @kubesched.hookimpl
    def unreserve(self, state, pod, node_name):
        CALLS.append((self.name, "unreserve", pod.metadata.name))


class ReservingB(Reserving):
    name = "ReservingB"


class WaitForApproval:
    """Permit: every pod waits (args.timeout seconds) for someone to allow it."""

    name = "WaitForApproval"

    def __init__(self, args, handle):
        self.handle = handle
        self.timeout = args.get("timeout", 30)

    @kubesched.hookimpl
    def permit(self, state, pod, node_name):
        CALLS.append((self.name, "permit", pod.metadata.name))
        return Status(Code.WAIT), self.timeout

    def waiting(self, sim, name):
        return self.handle.waiting_pods.get(sim.pod(name).metadata.uid)


def permit_sim(timeout=30, *extra):
    cfg = config({
        "plugins": {"reserve": {"enabled": [{"name": "Reserving"}, {"name": "ReservingB"}]},
                    "permit": {"enabled": [{"name": "WaitForApproval"}]}},
        "pluginConfig": [{"name": "WaitForApproval", "args": {"timeout": timeout}}],
    })
    return simulation(cfg, Reserving, ReservingB, WaitForApproval, *extra)


def test_permit_wait_then_allow_binds():
    sim = permit_sim()
    sim.create([node("n1", cpu="2"), pod("p", cpu="2"), pod("q", cpu="1")])
    sim.run_for(5)
    gate = plugin(sim, "WaitForApproval")
    waiting = gate.waiting(sim, "p")
    assert waiting is not None and sim.pod("p").spec.node_name == ""
    # the waiting pod is assumed: its cpu is taken
    assert condition(sim.pod("q")).message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    waiting.allow("WaitForApproval")
    sim.run_for(1)
    assert sim.pod("p").spec.node_name == "n1"
    assert gate.waiting(sim, "p") is None
    assert not any(c[1] == "unreserve" for c in CALLS)


def test_permit_wait_then_reject_unreserves_and_requeues():
    sim = permit_sim()
    sim.create([node("n1"), pod("p")])
    sim.run_for(5)
    plugin(sim, "WaitForApproval").waiting(sim, "p").reject("WaitForApproval", "approval denied")
    sim.run_for(1)
    p = sim.pod("p")
    assert p.spec.node_name == ""
    assert (condition(p).reason, condition(p).message) == ("Unschedulable", "0/1 nodes are available: 1 approval denied.")
    assert [c for c in CALLS if c[1] == "unreserve"] == [("ReservingB", "unreserve", "p"), ("Reserving", "unreserve", "p")]
    assert sim.scheduler.cache.assumed_pods() == []
    assert sim.scheduler.queue.get(p).unschedulable_plugins == {"WaitForApproval"}


def test_permit_timeout_rejects():
    sim = permit_sim(timeout=10)
    sim.create([node("n1"), pod("p")])
    sim.run_for(9.9)
    assert plugin(sim, "WaitForApproval").waiting(sim, "p") is not None
    assert not any(c[1] == "unreserve" for c in CALLS)
    sim.run_for(0.1)
    p = sim.pod("p")
    assert p.spec.node_name == ""
    assert condition(p).message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin WaitForApproval.")
    assert condition(p).last_transition_time == sim.start_time + 10
    assert [c[:2] for c in CALLS] == [
        ("Reserving", "reserve"), ("ReservingB", "reserve"), ("WaitForApproval", "permit"),
        ("ReservingB", "unreserve"), ("Reserving", "unreserve"),
    ]


def test_permit_timeout_is_capped_at_fifteen_minutes():
    sim = permit_sim(timeout=3600)
    sim.create([node("n1"), pod("p")])
    sim.run_for(15 * 60)
    assert condition(sim.pod("p")).message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 900s at plugin WaitForApproval.")


def test_deleting_a_waiting_pod_unreserves_it():
    sim = permit_sim()
    sim.create([node("n1"), pod("p")])
    sim.run_for(1)
    sim.cluster.delete("Pod", "p", "default")
    sim.run_for(1)
    assert [c for c in CALLS if c[1] == "unreserve"] == [("ReservingB", "unreserve", "p"), ("Reserving", "unreserve", "p")]
    assert sim.scheduler.cache.assumed_pods() == []
    assert sim.scheduler.waiting_pods == {}


class Gang:
    """Permit: pods of a group wait until ``size`` of them are placed, then all go."""

    name = "Gang"

    def __init__(self, args, handle):
        self.handle = handle
        self.size = args["size"]

    @kubesched.hookimpl
    def permit(self, state, pod, node_name):
        waiting = list(self.handle.waiting_pods.values())
        if len(waiting) + 1 < self.size:
            return Status(Code.WAIT), 60
        for other in waiting:
            other.allow(self.name)
        return None


def test_a_gang_of_pods_binds_together():
    cfg = config({"plugins": {"permit": {"enabled": [{"name": "Gang"}]}},
                  "pluginConfig": [{"name": "Gang", "args": {"size": 3}}]})
    sim = simulation(cfg, Gang)
    sim.create([node("n1"), node("n2"), pod("g0"), pod("g1")])
    sim.run_for(10)
    assert sim.placements() == {"default/g0": "", "default/g1": ""}
    assert len(sim.scheduler.waiting_pods) == 2
    sim.create([pod("g2")])
    sim.run_for(1)
    assert all(sim.placements().values())
    assert sim.scheduler.waiting_pods == {}
    assert sim.scheduler.stats.bound == 3


# --- binding failures ------------------------------------------------------------------------


def fail_first_bind(sim):
    binds = []

    def hook(verb, kind, target):
        if verb == "bind":
            binds.append((target, sim.clock.now()))
            if len(binds) == 1:
                raise Conflict("etcd hiccup")

    sim.cluster.fail_hook = hook
    return binds


def binding_sim(*extra_points, **kwargs):
    points = {"reserve": {"enabled": [{"name": "Reserving"}, {"name": "ReservingB"}]}}
    for point, name in extra_points:
        points[point] = {"enabled": [{"name": name}]}
    # the retries below come after a 1 s backoff as it expires (no SchedulerPopFromBackoffQ window)
    kwargs.setdefault("features", FeatureGates(overrides={"SchedulerPopFromBackoffQ": False}))
    return simulation(config({"plugins": points}), Reserving, ReservingB, FlakyPreBind, **kwargs)


def test_a_failed_bind_unreserves_in_reverse_order_requeues_and_binds_later():
    sim = binding_sim()
    binds = fail_first_bind(sim)
    sim.create([node("n1"), pod("p")])
    sim.run()
    p = sim.pod("p")
    assert p.spec.node_name == "n1"
    assert [c[:2] for c in CALLS] == [
        ("Reserving", "reserve"), ("ReservingB", "reserve"),
        ("ReservingB", "unreserve"), ("Reserving", "unreserve"),
        ("Reserving", "reserve"), ("ReservingB", "reserve"),
    ]
    # the retry came after the 1 s backoff
    assert [t - sim.start_time for _, t in binds] == [0, 1]
    (failed,) = sim.events("FailedScheduling")
    assert "etcd hiccup" in failed.message
    (scheduled,) = sim.events("Scheduled")
    assert scheduled.last_timestamp == sim.start_time + 1
    assert sim.scheduler.stats.binding_failures == 1
    # nothing is left assumed and the pod is counted once
    assert sim.scheduler.cache.assumed_pods() == []
    assert [info.pod.metadata.name for info in sim.scheduler.cache.nodes["n1"].pods] == ["p"]


class FlakyPreBind:
    """PreBind fails the first time it sees each pod."""

    name = "FlakyPreBind"

    def __init__(self, args, handle):
        self.seen = set()

    @kubesched.hookimpl
    def pre_bind(self, state, pod, node_name):
        CALLS.append(("FlakyPreBind", "pre_bind", pod.metadata.name))
        if pod.metadata.uid not in self.seen:
            self.seen.add(pod.metadata.uid)
            return Status.as_error("volume not attached yet")
        return None


def test_a_failed_prebind_skips_bind_unreserves_and_retries():
    sim = binding_sim(("preBind", "FlakyPreBind"))
    binds = []
    sim.cluster.fail_hook = lambda verb, kind, target: binds.append(sim.clock.now()) if verb == "bind" else None
    sim.create([node("n1"), pod("p")])
    sim.run()
    assert sim.pod("p").spec.node_name == "n1"
    assert [c[:2] for c in CALLS] == [
        ("Reserving", "reserve"), ("ReservingB", "reserve"), ("FlakyPreBind", "pre_bind"),
        ("ReservingB", "unreserve"), ("Reserving", "unreserve"),
        ("Reserving", "reserve"), ("ReservingB", "reserve"), ("FlakyPreBind", "pre_bind"),
    ]
    assert binds == [sim.start_time + 1]  # bind ran once, at the retry after the 1 s backoff
    (failed,) = sim.events("FailedScheduling")
    assert "volume not attached yet" in failed.message and "FlakyPreBind" in failed.message
    assert condition(sim.pod("p")).status == "True"


class WaitForLabel:
    """PreBind waits until the node carries ``attached=<pod name>`` (as a volume
    plugin waits for a controller), at most 30 s."""

    name = "WaitForLabel"

    def __init__(self, args, handle):
        self.handle = handle
        self.timeout = args.get("timeout", 30)

    @kubesched.hookimpl
    def pre_bind(self, state, pod, node_name):
        CALLS.append(("WaitForLabel", "pre_bind", pod.metadata.name))

        def attached():
            node = self.handle.cluster.get("Node", node_name)
            if node.metadata.labels.get("attached") == pod.metadata.name:
                return None
            if node.metadata.labels.get("attached") == "broken":
                return Status(Code.UNSCHEDULABLE, ("attachment failed",))
            return Status(Code.WAIT)

        return kubesched.PreBindWait(attached, timeout=self.timeout, message="volume not attached in time")


def label_node(sim, value):
    current = sim.cluster.get("Node", "n1")
    sim.cluster.update(evolve_meta(current, labels={"attached": value}))


def test_a_prebind_wait_binds_once_the_condition_holds_while_other_pods_go_on():
    sim = simulation(config({"plugins": {"preBind": {"enabled": [{"name": "WaitForLabel"}]}}}), WaitForLabel)
    sim.create([node("n1", cpu="4"), pod("p", cpu="1")])
    sim.run_for(5)
    assert sim.pod("p").spec.node_name == ""
    assert sim.scheduler.cache.is_assumed(sim.pod("p"))  # its room stays taken while it waits
    label_node(sim, "p")
    sim.run_for(1)
    assert sim.pod("p").spec.node_name == "n1"
    assert not sim.scheduler.binding.waits


def test_a_prebind_wait_times_out_unreserves_and_retries():
    sim = simulation(config({"plugins": {"reserve": {"enabled": [{"name": "Reserving"}]},
                                         "preBind": {"enabled": [{"name": "WaitForLabel"}]}}}),
                     Reserving, WaitForLabel, features=FeatureGates(overrides={"SchedulerPopFromBackoffQ": False}))
    sim.create([node("n1"), pod("p")])
    sim.run_for(29.5)
    assert not sim.events("FailedScheduling")
    sim.run_for(1)
    (failed,) = sim.events("FailedScheduling")
    assert failed.message == 'running PreBind plugin "WaitForLabel": volume not attached in time'
    assert ("Reserving", "unreserve", "p") in [c[:3] for c in CALLS]
    assert not sim.scheduler.cache.is_assumed(sim.pod("p"))
    assert condition(sim.pod("p")).reason == "SchedulerError"
    sim.run_for(1)  # retried after the 1 s backoff
    assert [c[:2] for c in CALLS].count(("WaitForLabel", "pre_bind")) == 2


def test_a_long_prebind_wait_runs_to_its_timeout_in_a_simulation_without_an_end_time():
    sim = simulation(config({"plugins": {"preBind": {"enabled": [{"name": "WaitForLabel"}]}},
                             "pluginConfig": [{"name": "WaitForLabel", "args": {"timeout": 300}}]}), WaitForLabel)
    sim.create([node("n1"), pod("p")])
    sim.run()
    assert condition(sim.pod("p")).message == 'running PreBind plugin "WaitForLabel": volume not attached in time'


def test_a_prebind_wait_that_fails_is_an_unschedulable_binding():
    sim = simulation(config({"plugins": {"preBind": {"enabled": [{"name": "WaitForLabel"}]}}}), WaitForLabel)
    sim.create([node("n1"), pod("p")])
    sim.run_for(2)
    label_node(sim, "broken")
    sim.run_for(1)
    assert sim.pod("p").spec.node_name == ""
    assert condition(sim.pod("p")).message == "0/1 nodes are available: 1 attachment failed."


def test_aborting_binding_waits_forgets_the_assumed_pod():
    sim = simulation(config({"plugins": {"preBind": {"enabled": [{"name": "WaitForLabel"}]}}}), WaitForLabel)
    sim.create([node("n1"), pod("p")])
    sim.run_for(2)
    assert sim.scheduler.binding.abort_binding_waits("scheduler is shutting down") == 1
    assert not sim.scheduler.cache.is_assumed(sim.pod("p"))
    assert condition(sim.pod("p")).message == "scheduler is shutting down"


def test_a_failed_binding_frees_the_room_for_other_pods():
    sim = binding_sim()
    binds = fail_first_bind(sim)
    sim.create([node("n1", cpu="1"), pod("first", cpu="1", priority=10), pod("second", cpu="1")])
    sim.run_for(0.5)
    # first's bind failed: second got the room at once
    assert sim.pod("second").spec.node_name == "n1"
    assert sim.pod("first").spec.node_name == ""
    assert len(binds) == 2


def test_a_failed_binding_cycle_requeues_pods_waiting_for_room():
    sim = permit_sim(timeout=10)
    sim.create([node("n1", cpu="1"), pod("first", cpu="1", priority=10), pod("second", cpu="1")])
    sim.run_for(5)
    gate = plugin(sim, "WaitForApproval")
    assert gate.waiting(sim, "first") is not None
    assert condition(sim.pod("second")).message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
    assert sim.scheduler.queue.get(sim.pod("second")).where == "unschedulable"
    # first times out at Permit: its room is given back and second is retried at once
    sim.run_for(5)
    assert gate.waiting(sim, "first") is None
    assert gate.waiting(sim, "second") is not None
    assert ("WaitForApproval", "permit", "second") in CALLS


class HoldBack:
    """PreFilter: pods labelled ``hold: "yes"`` are not to be placed yet."""

    name = "HoldBack"

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        if pod.metadata.labels.get("hold") == "yes":
            return Status.unschedulable("held back")
        return None


def test_a_nomination_in_the_pod_status_holds_the_room():
    # without PostFilter nothing revisits vip's nomination (preemption would clear it: no victims)
    sim = simulation(config({"plugins": {"preFilter": {"enabled": [{"name": "HoldBack"}]},
                                         "postFilter": {"disabled": [{"name": "*"}]}}}), HoldBack)
    sim.create([
        node("n1", cpu="2"),
        nominated(pod("vip", cpu="2", priority=100, labels={"hold": "yes"}), "n1"),
        pod("low", cpu="1", priority=0),
        pod("peer", cpu="1", priority=100),
    ])
    sim.run()
    assert sim.pod("vip").status.nominated_node_name == "n1"
    # lower-priority pods must leave the nominated room alone; equal priority ones too
    assert condition(sim.pod("low")).message == "0/1 nodes are available: 1 Insufficient cpu."
    assert sim.pod("peer").spec.node_name == ""


def held_nominee_sim():
    sim = simulation(config({"plugins": {"preFilter": {"enabled": [{"name": "HoldBack"}]},
                                         "postFilter": {"disabled": [{"name": "*"}]}}}), HoldBack)
    sim.create([node("n1", cpu="2"), node("n2", cpu="2"),
                nominated(pod("vip", cpu="2", priority=100, labels={"hold": "yes"}), "n1")])
    sim.run()
    assert sim.scheduler.queue.nominator.nominated_node(sim.pod("vip")) == "n1"
    return sim


def test_a_nomination_ends_when_the_pod_is_bound_elsewhere():
    sim = held_nominee_sim()
    vip = sim.pod("vip")
    sim.cluster.bind("default", "vip", vip.metadata.uid, "n2")  # e.g. by another scheduler
    sim.create([pod("low", cpu="2")])
    sim.run()
    assert sim.scheduler.queue.nominator.nodes() == []
    assert sim.placements() == {"default/low": "n1", "default/vip": "n2"}


def test_a_nomination_ends_when_the_pod_is_deleted():
    sim = held_nominee_sim()
    sim.cluster.delete("Pod", "vip", "default")
    sim.create([pod("low-1", cpu="2"), pod("low-2", cpu="2")])
    sim.run()
    assert sim.scheduler.queue.nominator.nodes() == []
    assert sorted(sim.placements().values()) == ["n1", "n2"]  # n1's room is free again


def test_a_failure_after_the_node_was_chosen_clears_the_nomination():
    cfg = config({"plugins": {"permit": {"enabled": [{"name": "WaitForApproval"}]}},
                  "pluginConfig": [{"name": "WaitForApproval", "args": {"timeout": 5}}]})
    sim = simulation(cfg, WaitForApproval)
    sim.create([node("n1"), nominated(pod("p"), "n1")])
    sim.run_for(6)  # assumed on n1, then rejected at Permit by the timeout
    assert sim.pod("p").status.nominated_node_name == ""
    assert sim.scheduler.queue.nominator.nodes() == []


class SecondApprover(WaitForApproval):
    name = "SecondApprover"


def test_a_pod_waiting_on_two_permit_plugins_needs_both():
    cfg = config({"plugins": {"permit": {"enabled": [{"name": "WaitForApproval"}, {"name": "SecondApprover"}]}},
                  "pluginConfig": [{"name": "SecondApprover", "args": {"timeout": 60}}]})
    sim = simulation(cfg, WaitForApproval, SecondApprover)
    sim.create([node("n1"), pod("p"), pod("q")])
    sim.run_for(1)
    first, second = plugin(sim, "WaitForApproval"), plugin(sim, "SecondApprover")
    first.waiting(sim, "p").allow("WaitForApproval")
    sim.run_for(1)
    assert sim.pod("p").spec.node_name == ""  # still waiting for the second plugin
    second.waiting(sim, "p").allow("SecondApprover")
    sim.run_for(1)
    assert sim.pod("p").spec.node_name == "n1"
    # q: allowed by the first plugin (its 30 s timer stops), never by the second (60 s)
    first.waiting(sim, "q").allow("WaitForApproval")
    sim.run_for(56)
    assert second.waiting(sim, "q") is not None
    sim.run_for(1)
    assert condition(sim.pod("q")).message == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 60s at plugin SecondApprover.")


class Unlock:
    """Filter rejects everything until unlocked; it registers no events, so only an
    explicit activation (or the 5-minute flush) retries its pods.  PostBind of a pod
    labelled ``unlocks`` unlocks and activates the pod it names."""

    name = "Unlock"

    def __init__(self, args, handle):
        self.handle = handle
        self.unlocked = False

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        if pod.metadata.labels.get("locked") == "yes" and not self.unlocked:
            return Status.unschedulable("locked")
        return None

    @kubesched.hookimpl
    def events_to_register(self):
        return []

    @kubesched.hookimpl
    def post_bind(self, state, pod, node_name):
        target = pod.metadata.labels.get("unlocks")
        if target:
            self.unlocked = True
            self.handle.activate(self.handle.informers.get("Pod", f"default/{target}"))


def test_activating_a_pod_retries_it_at_once():
    sim = simulation(config({"plugins": {"multiPoint": {"enabled": [{"name": "Unlock"}]}}}), Unlock)
    sim.create([node("n1"), pod("locked", labels={"locked": "yes"})])
    sim.run_for(10)
    assert sim.pod("locked").spec.node_name == ""
    sim.create([pod("key", labels={"unlocks": "locked"})])
    sim.run_for(1)  # long before the 5-minute flush
    assert sim.pod("key").spec.node_name == "n1"
    assert sim.pod("locked").spec.node_name == "n1"


def test_a_pod_bound_although_its_binding_answer_was_lost_is_scheduled_not_failed():
    """The pods/binding call reached the API server, which bound the pod, but its answer was lost (a timeout):
    the pod is bound, so it gets a Scheduled event and no PodScheduled=False/SchedulerError nor FailedScheduling
    (upstream's handleSchedulingFailure would still report a failure)."""
    sim = simulation()
    bind = sim.cluster.bind
    lost = []

    def bind_and_lose_the_answer(namespace, name, uid, node_name):
        bind(namespace, name, uid, node_name)
        lost.append(name)
        raise ApiError("POST pods/binding: read timed out")

    sim.cluster.bind = bind_and_lose_the_answer
    sim.create([node("n1"), pod("p")])
    sim.run()
    p = sim.pod("p")
    assert lost == ["p"] and p.spec.node_name == "n1"
    assert condition(p, "PodScheduled") is None or condition(p, "PodScheduled").status != "False"
    assert sim.events("FailedScheduling") == []
    (scheduled,) = sim.events("Scheduled")
    assert scheduled.message == "Successfully assigned default/p to n1"
    assert sim.scheduler.stats.bound == 1 and sim.scheduler.stats.binding_failures == 0
    assert sim.scheduler.cache.assumed_pods() == []


def test_a_binding_that_really_failed_is_still_a_failure():
    sim = simulation()
    sim.cluster.bind = lambda namespace, name, uid, node_name: (_ for _ in ()).throw(ApiError("connection refused"))
    sim.create([node("n1"), pod("p")])
    sim.run_for(5)
    assert not sim.pod("p").spec.node_name
    assert condition(sim.pod("p"), "PodScheduled").reason == "SchedulerError"
    assert sim.events("FailedScheduling") and not sim.events("Scheduled")
