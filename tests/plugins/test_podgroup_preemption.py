"""Workload-aware preemption (KEP-5710) through a simulation: a PodGroup that fits
nowhere preempts lower-priority pods and PodGroups across nodes; a pod preempting
a member of a PodGroup with disruptionMode all evicts the whole group; and
kubesched's EveryPlacement candidates."""

from __future__ import annotations

from kubesched.core.api import from_manifest
from kubesched.core.api.scheduling_v1beta1 import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from kubesched.core.features import FeatureGates
from kubesched.core.observability import metrics
from kubesched.drivers.simulation import Simulation
from kubesched.testing import config, node, pod, pod_group

RACK = "topology.kubernetes.io/rack"


def settle(*objects, cfg=None, features=None) -> Simulation:
    sim = Simulation(cfg, features=features)
    sim.create(list(objects))
    sim.run()
    return sim


def bound(name, node_name, cpu="2", priority=0, **kwargs):
    return pod(name, cpu=cpu, priority=priority, node_name=node_name, **kwargs)


def gang(name, count, cpu="2", priority=100, prefix=None, **group_args):
    """PodGroup ``name`` (minCount ``count``, ``priority``) and its ``count`` pending members."""
    prefix = prefix or name
    return [pod_group(name, count, priority=priority, **group_args),
            *(pod(f"{prefix}-{i}", cpu=cpu, priority=priority, pod_group=name) for i in range(count))]


def running(sim, *names):
    """{name: node} of the pods still in the cluster among ``names``."""
    here = {p.metadata.name: p.spec.node_name for p in sim.pods()}
    return {name: here[name] for name in names if name in here}


def preempted(sim):
    return {e.involved_object.name: e.message for e in sim.events("Preempted")}


def group_condition(sim, name, type_):
    return sim.cluster.get("PodGroup", name, "default").condition(type_)


def counter(sample, **labels):
    return next((s.value for m in sample.collect() for s in m.samples
                 if s.name.endswith("_total") and s.labels == labels), 0.0)


# --- a PodGroup preempts -----------------------------------------------------------------------------


def test_a_gang_preempts_single_pods_spread_over_several_nodes():
    """No node frees room for the whole gang, so pod-by-pod preemption could not
    help; the gang takes the three nodes whose low-priority pods it evicts, and
    leaves the more important pod on n3 alone."""
    attempts = counter(metrics.PODGROUP_PREEMPTION_ATTEMPTS, result="Success")
    sim = settle(*(node(f"n{i}", cpu="2") for i in range(4)),
                 *(bound(f"low-{i}", f"n{i}", cpu="1", priority=1) for i in range(3)),
                 bound("keep", "n3", cpu="1", priority=500),
                 features=FeatureGates(overrides={"SchedulerPopFromBackoffQ": False}))  # the members wait out their backoff
    sim.create(gang("train", 3))
    sim.run_for(0.5)  # the preemption happened; the members wait, nominated, for their backoff
    members = {p.metadata.name: p for p in sim.pods() if p.metadata.name.startswith("train-")}
    assert {p.status.nominated_node_name for p in members.values()} == {"n0", "n1", "n2"}
    assert not any(p.spec.node_name for p in members.values())
    uid = sim.cluster.get("PodGroup", "train", "default").metadata.uid
    assert preempted(sim) == {f"low-{i}": f"Preempted by podgroup default/train (uid {uid})" for i in range(3)}
    sim.run()
    assert sorted(running(sim, "train-0", "train-1", "train-2").values()) == ["n0", "n1", "n2"]
    assert running(sim, "keep") == {"keep": "n3"}
    assert counter(metrics.PODGROUP_PREEMPTION_ATTEMPTS, result="Success") == attempts + 1


def test_a_victim_gang_with_disruption_mode_all_loses_every_member():
    """One member's node would do (n2 holds one preemptor member); with
    disruptionMode all both members go, and the PodGroup says why."""
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"), node("n2", cpu="3"),
                 pod_group("batch", 2, priority=1, disruption_mode="all"),
                 *(bound(f"batch-{i}", f"n{i}", priority=1, pod_group="batch") for i in range(2)))
    sim.create(gang("train", 2))
    sim.run()
    assert running(sim, "batch-0", "batch-1") == {}
    assert sorted(running(sim, "train-0", "train-1").values())[1] == "n2"
    condition = group_condition(sim, "batch", DISRUPTION_TARGET)
    assert (condition.status, condition.reason) == ("True", REASON_PREEMPTION_BY_SCHEDULER)
    assert condition.message == "default-scheduler: preempting to accommodate a higher priority podgroup"
    evicted = sim.events("Preempted")
    assert {e.involved_object.name for e in evicted} == {"batch-0", "batch-1"}


def test_a_victim_gang_with_disruption_mode_single_loses_only_the_members_needed():
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"), node("n2", cpu="3"),
                 pod_group("batch", 2, priority=1, disruption_mode="single"),
                 *(bound(f"batch-{i}", f"n{i}", priority=1, pod_group="batch") for i in range(2)))
    sim.create(gang("train", 2))
    sim.run()
    [survivor] = running(sim, "batch-0", "batch-1").values()
    placed = running(sim, "train-0", "train-1")
    assert sorted(placed.values()) == sorted({"n0", "n1", "n2"} - {survivor})
    assert group_condition(sim, "batch", DISRUPTION_TARGET) is None  # the group was not preempted as a whole


class Deferred:
    """API workers that run what was submitted only when told (a daemon's, slowed down)."""

    def __init__(self):
        self.calls = []

    def submit(self, call):
        self.calls.append(call)

    def run(self):
        calls, self.calls = self.calls, []
        for call in calls:
            call()


def test_with_api_workers_the_evictions_run_there_and_the_group_waits_nominated():
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"),
                 pod_group("batch", 2, priority=1, disruption_mode="all"),
                 *(bound(f"batch-{i}", f"n{i}", priority=1, pod_group="batch") for i in range(2)))
    workers = Deferred()
    framework = sim.scheduler.profiles["default-scheduler"]
    framework.handle.api_workers = workers
    sim.create(gang("train", 2))
    sim.run_for(0.5)
    assert running(sim, "batch-0", "batch-1") == {"batch-0": "n0", "batch-1": "n1"}  # not yet: on the workers
    assert len(workers.calls) == 3  # two evictions and the PodGroup's condition
    uid = sim.cluster.get("PodGroup", "train", "default").metadata.uid
    assert framework.plugins["DefaultPreemption"].group_evaluator.executor.in_flight(uid) == 3
    assert {p.status.nominated_node_name for p in sim.pods() if p.metadata.name.startswith("train-")} == {"n0", "n1"}
    workers.run()
    sim.run()
    assert running(sim, "batch-0", "batch-1") == {}
    assert sorted(running(sim, "train-0", "train-1").values()) == ["n0", "n1"]
    assert group_condition(sim, "batch", DISRUPTION_TARGET).reason == REASON_PREEMPTION_BY_SCHEDULER


def pdb(name, min_available, **labels):
    return from_manifest({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}})


def test_a_pdb_protected_victim_is_spared_when_another_fits():
    """Each member needs 3 of a node's 4 CPUs: one of the two 1-CPU victims per
    node must go.  The batch pods are more important, so without the budget
    the db pods would go; the budget's pods are reprieved first."""
    sim = settle(*(node(f"n{i}", cpu="4") for i in range(2)),
                 *(bound(f"db-{i}", f"n{i}", cpu="1", priority=1, labels={"app": "db"}) for i in range(2)),
                 *(bound(f"batch-{i}", f"n{i}", cpu="1", priority=2) for i in range(2)),
                 pdb("db", 2, app="db"))
    sim.create(gang("train", 2, cpu="3"))
    sim.run()
    assert running(sim, "db-0", "db-1") == {"db-0": "n0", "db-1": "n1"}
    assert running(sim, "batch-0", "batch-1") == {}
    assert sorted(running(sim, "train-0", "train-1").values()) == ["n0", "n1"]


def test_without_the_budget_the_least_important_victims_go():
    sim = settle(*(node(f"n{i}", cpu="4") for i in range(2)),
                 *(bound(f"db-{i}", f"n{i}", cpu="1", priority=1, labels={"app": "db"}) for i in range(2)),
                 *(bound(f"batch-{i}", f"n{i}", cpu="1", priority=2) for i in range(2)))
    sim.create(gang("train", 2, cpu="3"))
    sim.run()
    assert running(sim, "db-0", "db-1") == {}
    assert running(sim, "batch-0", "batch-1") == {"batch-0": "n0", "batch-1": "n1"}


def test_preemption_policy_never_does_not_preempt():
    sim = settle(node("n0", cpu="2"), bound("low", "n0", priority=1))
    sim.create([pod_group("polite", 1, priority=100, preemptionPolicy="Never"),
                pod("polite-0", cpu="2", priority=100, pod_group="polite", preemptionPolicy="Never")])
    sim.run()
    assert running(sim, "low", "polite-0") == {"low": "n0", "polite-0": ""}
    assert preempted(sim) == {}
    condition = group_condition(sim, "polite", "PodGroupInitiallyScheduled")
    assert condition.message.endswith("pod group preemption: not eligible due to preemptionPolicy=Never.")


def test_a_gang_that_would_not_fit_even_without_its_victims_evicts_nothing():
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"), bound("low", "n0", priority=1),
                 bound("peer", "n1", priority=100))
    sim.create(gang("train", 2))
    sim.run()
    assert running(sim, "low", "peer") == {"low": "n0", "peer": "n1"}
    assert preempted(sim) == {}
    message = group_condition(sim, "train", "PodGroupInitiallyScheduled").message
    assert message.endswith("pod group preemption: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining")


def test_only_lower_priority_groups_are_victims():
    """The PodGroup's priority counts, not its pods' (equal here): a group of the
    preemptor's priority is no victim."""
    sim = settle(node("n0", cpu="2"), pod_group("peer", 1, priority=100),
                 bound("peer-0", "n0", priority=100, pod_group="peer"))
    sim.create(gang("train", 1))
    sim.run()
    assert running(sim, "peer-0", "train-0") == {"peer-0": "n0", "train-0": ""}
    message = group_condition(sim, "train", "PodGroupInitiallyScheduled").message
    assert message.endswith("pod group preemption: No preemption victims found for incoming preemptor")


# --- a pod preempts a member of a PodGroup ----------------------------------------------------------


def test_a_pod_preempting_one_member_of_an_all_group_evicts_the_whole_group():
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"),
                 pod_group("batch", 2, priority=1, disruption_mode="all"),
                 *(bound(f"batch-{i}", f"n{i}", cpu="1500m", priority=1, pod_group="batch") for i in range(2)))
    sim.create([pod("vip", cpu="2", priority=100)])
    sim.run()
    assert running(sim, "batch-0", "batch-1") == {}
    assert running(sim, "vip")["vip"] in ("n0", "n1")
    condition = group_condition(sim, "batch", DISRUPTION_TARGET)
    assert (condition.status, condition.reason) == ("True", REASON_PREEMPTION_BY_SCHEDULER)
    assert condition.message == "default-scheduler: preempting to accommodate a higher priority pod"


def test_a_pod_preempting_a_member_of_a_single_group_evicts_that_member():
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"),
                 pod_group("batch", 2, priority=1, disruption_mode="single"),
                 *(bound(f"batch-{i}", f"n{i}", cpu="1500m", priority=1, pod_group="batch") for i in range(2)))
    sim.create([pod("vip", cpu="2", priority=100)])
    sim.run()
    assert len(running(sim, "batch-0", "batch-1")) == 1
    assert group_condition(sim, "batch", DISRUPTION_TARGET) is None


def test_a_pod_prefers_the_node_whose_victims_are_fewer_pods():
    """The whole group counts as victims: a single pod elsewhere costs less."""
    sim = settle(node("n0", cpu="2"), node("n1", cpu="2"), node("n2", cpu="2"),
                 pod_group("batch", 2, priority=1, disruption_mode="all"),
                 *(bound(f"batch-{i}", f"n{i}", cpu="1500m", priority=1, pod_group="batch") for i in range(2)),
                 bound("solo", "n2", cpu="1500m", priority=1))
    sim.create([pod("vip", cpu="2", priority=100)])
    sim.run()
    assert running(sim, "vip", "solo", "batch-0", "batch-1") == {"vip": "n2", "batch-0": "n0", "batch-1": "n1"}


# --- kubesched: every placement a candidate -----------------------------------------------------------


def racks_with_victims():
    """rack-a: both nodes held by the low-priority gang "batch"; rack-b: one
    node free, one held by a single low-priority pod."""
    return [*(node(f"a{i}", cpu="2", labels={RACK: "rack-a"}) for i in range(2)),
            *(node(f"b{i}", cpu="2", labels={RACK: "rack-b"}) for i in range(2)),
            pod_group("batch", 2, priority=1),
            *(bound(f"batch-{i}", f"a{i}", priority=1, pod_group="batch") for i in range(2)),
            bound("solo", "b1", priority=1)]


def candidates(mode):
    cfg = config(args={"DefaultPreemption": {"podGroupCandidates": mode}}, only=False)
    return cfg


def test_upstream_preempts_in_the_placement_it_would_score_best_with_every_victim_gone():
    sim = settle(*racks_with_victims())
    sim.create(gang("train", 2, topology_key=RACK))
    sim.run()
    assert running(sim, "batch-0", "batch-1") == {}
    assert running(sim, "solo") == {"solo": "b1"}
    assert sorted(running(sim, "train-0", "train-1").values()) == ["a0", "a1"]


def test_every_placement_picks_the_candidate_disrupting_the_fewest_groups():
    """kubesched's podGroupCandidates: EveryPlacement: rack-b combines its free
    node with one single victim instead of breaking the batch gang."""
    sim = settle(*racks_with_victims(), cfg=candidates("EveryPlacement"))
    sim.create(gang("train", 2, topology_key=RACK))
    sim.run()
    assert running(sim, "batch-0", "batch-1") == {"batch-0": "a0", "batch-1": "a1"}
    assert running(sim, "solo") == {}
    assert sorted(running(sim, "train-0", "train-1").values()) == ["b0", "b1"]


def test_every_placement_then_prefers_the_lowest_total_victim_priority():
    sim = settle(*(node(f"{r}{i}", cpu="2", labels={RACK: f"rack-{r}"}) for r in "ab" for i in range(2)),
                 bound("a-low", "a0", priority=5), bound("b-low", "b1", priority=3),
                 cfg=candidates("EveryPlacement"))
    sim.create(gang("train", 2, topology_key=RACK))
    sim.run()
    assert running(sim, "a-low", "b-low") == {"a-low": "a0"}
    assert sorted(running(sim, "train-0", "train-1").values()) == ["b0", "b1"]


def test_an_unknown_candidates_mode_is_refused_at_load():
    import pytest

    from kubesched.core.framework.config import ConfigError

    with pytest.raises(ConfigError, match="podGroupCandidates"):
        Simulation(candidates("Cheapest"))
