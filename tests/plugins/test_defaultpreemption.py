"""DefaultPreemption end to end on the simulated cluster, plus its choices in isolation."""

from __future__ import annotations

import attrs
import pytest

import kubesched
from kubesched import Code, Status
from kubesched.core.api import from_manifest
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.preemption import Candidate, default_score_funcs, pick_one_candidate
from kubesched.core.framework.registry import Registry
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

from .helpers import config, failure, make

NO_VICTIMS = "No preemption victims found for incoming pod"


def registry(*plugins):
    reg = Registry.discover()
    for cls in plugins:
        reg.add(cls)
    return reg


def bound(name, node_name, cpu="1", priority=0, **kwargs):
    return pod(name, cpu=cpu, priority=priority, node_name=node_name, **kwargs)


def started(p, at):
    return attrs.evolve(p, status=attrs.evolve(p.status, start_time=at))


def settle(objects, cfg=None, plugins=(), features=None):
    """A simulation that has placed ``objects`` (and run its controllers)."""
    sim = Simulation(cfg, registry=registry(*plugins), features=features)
    sim.create(objects)
    sim.run()
    return sim


def arrive(sim, *pods, seconds=None):
    sim.create(pods)
    if seconds is None:
        sim.run()
    else:
        sim.run_for(seconds)
    return sim


def preempted(sim):
    """{victim: message} of the Preempted events."""
    return {e.involved_object.name: e.message for e in sim.events("Preempted")}


#: the scenarios that watch a preemptor wait out its backoff (SchedulerPopFromBackoffQ would cut it short)
WAITS_OUT_BACKOFF = FeatureGates(overrides={"SchedulerPopFromBackoffQ": False})


def gone(sim, name):
    return all(p.metadata.name != name for p in sim.pods())


# --- the Done-when scenarios -----------------------------------------------------------------


def test_single_victim_is_evicted_and_the_preemptor_takes_its_place():
    sim = settle([node("n1", cpu="2"), node("n2", cpu="2"),
                  bound("low", "n1", cpu="2", priority=1), bound("busy", "n2", cpu="2", priority=500)])
    arrive(sim, pod("vip", cpu="2", priority=100))
    vip = sim.pod("vip")
    assert vip.spec.node_name == "n1"
    assert gone(sim, "low") and sim.pod("busy").spec.node_name == "n2"
    assert preempted(sim) == {"low": f"Preempted by pod {vip.metadata.uid} on node n1"}
    [event] = sim.events("Preempted")
    assert (event.type, event.action, event.source.component) == ("Normal", "Preempting", "default-scheduler")
    # the failed attempt reported the fit error only: preemption succeeded
    assert failure(sim) == "0/2 nodes are available: 2 Insufficient cpu."


def test_the_preemptor_is_nominated_while_its_victims_leave():
    sim = settle([node("n1", cpu="2"), bound("low", "n1", cpu="2")], features=WAITS_OUT_BACKOFF)
    arrive(sim, pod("vip", cpu="2", priority=100), seconds=0.5)  # before its 1 s backoff ends
    vip = sim.pod("vip")
    assert vip.spec.node_name == "" and vip.status.nominated_node_name == "n1"
    assert sim.scheduler.queue.nominator.nominated_node(vip) == "n1"
    sim.run()
    assert sim.pod("vip").spec.node_name == "n1"
    assert sim.pod("vip").status.nominated_node_name == ""  # the API server clears it on binding
    assert sim.scheduler.queue.nominator.nodes() == []


def test_victims_across_priorities_the_node_with_the_least_important_victims_wins():
    sim = settle([
        node("n1", cpu="4"), node("n2", cpu="4"),
        bound("a1", "n1", priority=1), bound("a2", "n1", priority=2), bound("a5", "n1", priority=5),
        bound("b1", "n2", priority=1), bound("b3", "n2", priority=3), bound("b5", "n2", priority=5),
    ])
    # 3 cpu needed, 1 free: on each node the priority-5 pod is reprieved and the other two go;
    # n1's most important victim (priority 2) is less important than n2's (priority 3)
    arrive(sim, pod("vip", cpu="3", priority=10))
    assert sim.pod("vip").spec.node_name == "n1"
    assert set(preempted(sim)) == {"a1", "a2"}
    assert sorted(sim.placements().items()) == [
        ("default/a5", "n1"), ("default/b1", "n2"), ("default/b3", "n2"), ("default/b5", "n2"), ("default/vip", "n1")]


def test_the_node_whose_most_important_victim_has_the_lowest_priority_is_chosen():
    sim = settle([
        node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"),
        bound("p7", "n1", cpu="2", priority=7), bound("p3", "n2", cpu="2", priority=3),
        bound("p5", "n3", cpu="2", priority=5),
    ])
    arrive(sim, pod("vip", cpu="2", priority=10))
    assert sim.pod("vip").spec.node_name == "n2" and set(preempted(sim)) == {"p3"}


def test_reprieve_keeps_the_most_important_pods():
    sim = settle([node("n1", cpu="4"), bound("p1", "n1", priority=1), bound("p2", "n1", priority=2),
                  bound("p3", "n1", priority=3)])
    arrive(sim, pod("vip", cpu="3", priority=10))
    # removing all frees 4; p3 comes back (3 free), then p2 and p1 no longer fit
    assert set(preempted(sim)) == {"p1", "p2"}
    assert sim.placements() == {"default/p3": "n1", "default/vip": "n1"}


def test_fewer_victims_then_later_start_time_break_ties():
    sim = settle([
        node("two", cpu="2"), node("one", cpu="2"), node("old", cpu="2"),
        bound("t1", "two", priority=1), bound("t2", "two", priority=1),
        started(bound("o1", "one", cpu="2", priority=1), 1000.0),
        started(bound("o2", "old", cpu="2", priority=1), 10.0),
    ])
    arrive(sim, pod("vip", cpu="2", priority=10))
    # same highest priority everywhere; "two" needs two victims (larger sum); "one" started later than "old"
    assert sim.pod("vip").spec.node_name == "one" and set(preempted(sim)) == {"o1"}


def pdb(name, min_available, **labels):
    return from_manifest({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}})


def test_pdb_protected_pods_are_avoided_when_another_node_needs_no_violation():
    sim = settle([
        node("n1", cpu="2"), node("n2", cpu="2"), node("n3", cpu="2"),
        bound("db-1", "n1", cpu="2", priority=1, labels={"app": "db"}),
        bound("db-2", "n3", cpu="2", priority=1, labels={"app": "db"}),
        # more important than the db pods, so only the PDB can make n2 the better choice
        bound("web", "n2", cpu="2", priority=5, labels={"app": "web"}),
        pdb("db", 2, app="db"),
    ])
    budget = sim.get("PodDisruptionBudget", "default/db")
    assert (budget.status.current_healthy, budget.status.disruptions_allowed) == (2, 0)
    arrive(sim, pod("vip", cpu="2", priority=10))
    assert sim.pod("vip").spec.node_name == "n2" and set(preempted(sim)) == {"web"}


def test_a_pdb_is_violated_when_no_other_node_can_make_room():
    sim = settle([node("n1", cpu="2"), bound("db-1", "n1", cpu="2", priority=1, labels={"app": "db"}),
                  pdb("db", 1, app="db")])
    arrive(sim, pod("vip", cpu="2", priority=10))
    assert sim.pod("vip").spec.node_name == "n1" and set(preempted(sim)) == {"db-1"}


def test_pdb_violating_victims_are_reprieved_first():
    sim = settle([
        node("n1", cpu="3"),
        bound("db", "n1", priority=1, labels={"app": "db"}), bound("batch", "n1", priority=2),
        bound("other", "n1", priority=2), pdb("db", 1, app="db"),
    ])
    arrive(sim, pod("vip", cpu="2", priority=10))
    # without the PDB the least important (db) would go first; it is reprieved before the others
    assert sim.pod("vip").spec.node_name == "n1"
    assert set(preempted(sim)) == {"batch", "other"} and not gone(sim, "db")


def test_preemption_policy_never_does_not_preempt():
    never = from_manifest({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": "polite"}, "value": 1000, "preemptionPolicy": "Never"})
    sim = settle([never, node("n1", cpu="2"), bound("low", "n1", cpu="2")])
    arrive(sim, pod("vip", cpu="2", priorityClassName="polite"))
    assert sim.pod("vip").spec.preemption_policy == "Never"
    assert sim.placements() == {"default/low": "n1", "default/vip": ""}
    assert preempted(sim) == {}
    assert failure(sim) == ("0/1 nodes are available: 1 Insufficient cpu. "
                            "preemption: not eligible due to preemptionPolicy=Never.")


def test_a_pod_that_cannot_fit_even_after_preemption_deletes_nothing():
    sim = settle([node("n1", cpu="4"), bound("low", "n1", cpu="1"), bound("peer", "n1", cpu="2", priority=100)])
    arrive(sim, pod("vip", cpu="3", priority=100))
    assert sim.placements() == {"default/low": "n1", "default/peer": "n1", "default/vip": ""}
    assert preempted(sim) == {}
    assert failure(sim) == ("0/1 nodes are available: 1 Insufficient cpu. "
                            "preemption: 0/1 nodes are available: 1 Insufficient cpu.")
    assert sim.pod("vip").status.nominated_node_name == ""


def test_no_lower_priority_pods_means_no_victims():
    sim = settle([node(f"n{i}", cpu="1") for i in range(3)] + [bound(f"p{i}", f"n{i}") for i in range(3)])
    arrive(sim, pod("same", cpu="1"))
    assert failure(sim) == (f"0/3 nodes are available: 3 Insufficient cpu. "
                            f"preemption: 0/3 nodes are available: 3 {NO_VICTIMS}.")


def test_unresolvable_nodes_are_not_candidates():
    sim = settle([node("small", cpu="1"), node("tainted", cpu="8", taints=[("k", "v", "NoSchedule")]),
                  bound("low", "small"), bound("low-t", "tainted")])
    arrive(sim, pod("vip", cpu="2", priority=10))
    assert preempted(sim) == {}
    assert failure(sim) == ("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {k: v}. "
                            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_two_preemptors_racing_for_one_node_respect_the_nomination():
    sim = settle([node("n1", cpu="2"), bound("low", "n1", cpu="2")], features=WAITS_OUT_BACKOFF)
    arrive(sim, pod("first", cpu="2", priority=100), pod("second", cpu="2", priority=100), seconds=0.5)
    # first evicted low and holds n1; second sees the room as taken and finds nobody to evict
    assert sim.pod("first").status.nominated_node_name == "n1"
    assert sim.pod("second").status.nominated_node_name == ""
    assert failure(sim) == (f"0/1 nodes are available: 1 Insufficient cpu. "
                            f"preemption: 0/1 nodes are available: 1 {NO_VICTIMS}.")
    sim.run()
    assert sim.placements() == {"default/first": "n1", "default/second": ""}
    assert set(preempted(sim)) == {"low"}


def test_a_more_important_preemptor_ignores_a_lower_nomination():
    sim = settle([node("n1", cpu="2"), bound("low", "n1", cpu="2")], features=WAITS_OUT_BACKOFF)
    arrive(sim, pod("first", cpu="2", priority=100), seconds=0.5)
    assert sim.pod("first").status.nominated_node_name == "n1"
    arrive(sim, pod("boss", cpu="2", priority=200))
    assert sim.placements() == {"default/boss": "n1", "default/first": ""}


def test_nominations_of_lower_priority_pods_on_the_node_are_cleared():
    sim = settle([node("n1", cpu="3"), bound("low-a", "n1", cpu="2"), bound("low-b", "n1", cpu="1")], features=WAITS_OUT_BACKOFF)
    arrive(sim, pod("mid", cpu="2", priority=50), seconds=0.2)
    assert set(preempted(sim)) == {"low-a"}
    assert sim.pod("mid").status.nominated_node_name == "n1"
    arrive(sim, pod("high", cpu="3", priority=100), seconds=0.2)
    # high needed low-b gone too; mid's claim on n1 no longer holds
    assert set(preempted(sim)) == {"low-a", "low-b"}
    assert sim.pod("high").status.nominated_node_name == "n1"
    assert sim.pod("mid").status.nominated_node_name == ""
    assert sim.scheduler.queue.nominator.nominated_node(sim.pod("mid")) == ""
    sim.run()
    assert sim.placements() == {"default/high": "n1", "default/mid": ""}


class HoldAtPermit:
    """Permit: pods labelled ``hold`` wait a minute at Permit."""

    name = "HoldAtPermit"

    def __init__(self, args, handle):
        self.handle = handle

    @kubesched.hookimpl
    def permit(self, state, pod, node_name):
        if pod.metadata.labels.get("hold"):
            return Status(Code.WAIT), 60
        return None


def test_a_victim_waiting_at_permit_is_rejected_not_deleted():
    cfg = config(plugins={"permit": {"enabled": [{"name": "HoldAtPermit"}]}})
    sim = Simulation(cfg, registry=registry(HoldAtPermit))
    arrive(sim, node("n1", cpu="2"), pod("waiter", cpu="2", labels={"hold": "yes"}), seconds=1)
    holder = sim.scheduler.profiles["default-scheduler"].plugins["HoldAtPermit"]
    assert sim.pod("waiter").metadata.uid in holder.handle.waiting_pods
    arrive(sim, pod("vip", cpu="2", priority=10), seconds=5)
    assert holder.handle.waiting_pods == {}
    assert set(preempted(sim)) == {"waiter"}
    # still there: rejected at Permit with an error, so it is retried after backoff
    assert sim.pod("waiter").spec.node_name == ""
    failures = [e.message for e in sim.events("FailedScheduling") if e.involved_object.name == "waiter"]
    assert failures[0] == "preempted"
    assert sim.pod("vip").spec.node_name == "n1"


def test_a_terminating_victim_blocks_further_preemption_by_its_preemptor():
    low = bound("low", "n1", cpu="2")
    low = attrs.evolve(low, metadata=attrs.evolve(low.metadata, finalizers=("example.com/slow",)))
    sim = settle([node("n1", cpu="2"), node("n2", cpu="2"), low, bound("other", "n2", cpu="2", priority=5)])
    arrive(sim, pod("vip", cpu="2", priority=10))
    victim = sim.pod("low")
    assert victim.metadata.deletion_timestamp is not None  # deleting, but its finalizer keeps it on n1
    (target,) = [c for c in victim.status.conditions if c.type == "DisruptionTarget"]
    assert (target.status, target.reason, target.message) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    # a terminating pod is no event: vip is retried when the queue flushes old unschedulable pods;
    # it then waits for low instead of evicting "other" too
    sim.run_for(400)
    assert sim.pod("vip").status.nominated_node_name == "n1"
    assert set(preempted(sim)) == {"low"} and not gone(sim, "other")
    assert failure(sim) == ("0/2 nodes are available: 2 Insufficient cpu. "
                            "preemption: not eligible due to a terminating pod on the nominated node.")
    sim.cluster.update(attrs.evolve(victim, metadata=attrs.evolve(victim.metadata, finalizers=())))
    sim.run()
    assert sim.pod("vip").spec.node_name == "n1"


# --- PreFilter AddPod/RemovePod take part in the dry run --------------------------------------


class Seats:
    """At most one pod labelled ``seat`` per node, counted in PreFilter and kept
    current through AddPod/RemovePod (a stand-in for any plugin with per-pod
    state, e.g. DynamicResources or VolumeBinding)."""

    name = "Seats"
    calls: list = []

    def __init__(self, args, handle):
        Seats.calls = []

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        state.write("Seats", {ni.name: sum(1 for pi in ni.pods if "seat" in pi.pod.metadata.labels) for ni in nodes})
        return None

    @kubesched.hookimpl
    def pre_filter_add_pod(self, state, pod, pod_info_to_add, node_info):
        Seats.calls.append(("add", pod_info_to_add.pod.metadata.name))
        self._count(state, pod_info_to_add, node_info, +1)

    @kubesched.hookimpl
    def pre_filter_remove_pod(self, state, pod, pod_info_to_remove, node_info):
        Seats.calls.append(("remove", pod_info_to_remove.pod.metadata.name))
        self._count(state, pod_info_to_remove, node_info, -1)

    def _count(self, state, info, node_info, delta):
        if "seat" in info.pod.metadata.labels:
            seats = dict(state.read("Seats"))
            seats[node_info.name] += delta
            state.write("Seats", seats)

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        if "seat" in pod.metadata.labels and state.read("Seats")[node_info.name] >= 1:
            return Status.unschedulable("seat taken")
        return None


def test_plugins_with_per_pod_state_see_victims_leave_through_remove_pod():
    cfg = config(plugins={"multiPoint": {"enabled": [{"name": "Seats"}]}})
    sim = settle([node("n1", cpu="8"), bound("sitter", "n1", labels={"seat": ""}), bound("stander", "n1")],
                 cfg, [Seats])
    arrive(sim, pod("vip", cpu="1", priority=10, labels={"seat": ""}))
    # only the seat was in the way: the one pod holding it is the only victim
    assert set(preempted(sim)) == {"sitter"}
    assert sim.placements() == {"default/stander": "n1", "default/vip": "n1"}
    assert ("remove", "sitter") in Seats.calls and ("remove", "stander") in Seats.calls
    assert ("add", "stander") in Seats.calls  # reprieved through AddPod
    assert failure(sim) == "0/1 nodes are available: 1 seat taken."


# --- sampling candidates -----------------------------------------------------------------------


@pytest.mark.parametrize("nodes, percentage, absolute, expected", [
    (10, 5, 100, 10), (1000, 10, 100, 100), (1000, 40, 100, 400), (5000, 10, 100, 500),
    (50, 0, 3, 3), (4, 50, 1, 2),
])
def test_number_of_candidates(nodes, percentage, absolute, expected):
    from kubesched.plugins.defaultpreemption import DefaultPreemption

    plugin = make(DefaultPreemption, {"minCandidateNodesPercentage": percentage,
                                      "minCandidateNodesAbsolute": absolute})
    assert plugin.calculate_num_candidates(nodes) == expected


def test_the_dry_run_samples_candidates_from_a_random_offset():
    cfg = config({"DefaultPreemption": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}})
    objects = [node(f"n{i}", cpu="1") for i in range(10)] + [bound(f"low{i}", f"n{i}") for i in range(10)]
    sim = settle(objects, cfg)
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["DefaultPreemption"]
    tried = []
    select = plugin.select_victims_on_node

    def recording(state, p, node_info, pdbs):
        tried.append(node_info.name)
        return select(state, p, node_info, pdbs)

    plugin.select_victims_on_node = recording
    arrive(sim, pod("vip", cpu="1", priority=10))
    assert len(tried) == 3
    first = int(tried[0][1:])
    assert tried == [f"n{(first + i) % 10}" for i in range(3)]
    assert sim.pod("vip").spec.node_name in tried


def test_args_are_validated_at_load_time():
    for args, message in [
        ({"minCandidateNodesPercentage": 120}, "minCandidateNodesPercentage: Invalid value: 120: not in valid range"),
        ({"minCandidateNodesAbsolute": -1}, r"minCandidateNodesAbsolute: Invalid value: -1: not in valid range \[0, inf\)"),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time"),
        ({"minCandidateNodes": 3}, "minCandidateNodes: unknown field"),
    ]:
        with pytest.raises(ConfigError, match=r"pluginConfig DefaultPreemption: args\." + message):
            Simulation(config({"DefaultPreemption": args}))


# --- picking the best candidate ----------------------------------------------------------------


def victim(name, priority, start=None):
    p = pod(name, priority=priority)
    return started(p, start) if start is not None else p


@pytest.mark.parametrize("candidates, expected", [
    ([Candidate("a", (victim("x", 1),), 1), Candidate("b", (victim("y", 9),), 0)], "b"),
    ([Candidate("a", (victim("x", 5), victim("x2", 1))), Candidate("b", (victim("y", 4),))], "b"),
    ([Candidate("a", (victim("x", 5), victim("x2", 5))), Candidate("b", (victim("y", 5), victim("y2", 1)))], "b"),
    ([Candidate("a", (victim("x", -5), victim("x2", -5))), Candidate("b", (victim("y", -5),))], "b"),
    ([Candidate("a", (victim("x", 5, 100.0),)), Candidate("b", (victim("y", 5, 200.0),))], "b"),
    ([Candidate("a", (victim("x", 5, 100.0),)), Candidate("b", (victim("y", 5, 100.0),))], "a"),
])
def test_best_candidate_criteria_in_order(candidates, expected):
    assert pick_one_candidate(candidates, default_score_funcs(now=1000.0)).node_name == expected
