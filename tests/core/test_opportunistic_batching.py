"""Opportunistic batching (KEP-5598): pods signed alike reuse the previous pod's sorted feasible nodes, land
where the full cycle puts them, and the batch is dropped when it could mislead (upstream's batch_test.go
and schedule_one_test.go cases, on the embedded cluster)."""

from __future__ import annotations

import pytest

from kubesched import hookimpl
from kubesched.core.features import FeatureGates
from kubesched.core.framework.registry import Registry
from kubesched.core.observability import metrics
from kubesched.drivers.simulation import Simulation
from kubesched.testing import config, node, pod

GATE = "OpportunisticBatching"


def run(objects, batching: bool, seed: int = 7, then=None) -> tuple[dict[str, str], Simulation]:
    """Simulate ``objects`` with the gate on or off; pod name -> node name, and the simulation."""
    sim = Simulation(features=FeatureGates(overrides={GATE: batching}), seed=seed)
    sim.create(objects)
    sim.run()
    if then is not None:
        then(sim)
        sim.run()
    placed = {p.metadata.name: p.spec.node_name for p in sim.cluster.list("Pod").items}
    return placed, sim


def batched(sim: Simulation) -> int:
    """Pods placed on a hinted node, over every profile."""
    return sum(batch.batched_pods for batch in sim.scheduler.pods.batches.values())


def flushes(reason: str) -> float:
    return metrics.BATCH_CACHE_FLUSHED.labels("default-scheduler", reason)._value.get()


def nodes(count: int, **kwargs) -> list:
    # capacities differ, so scores differ from node to node as well as tie
    return [node(f"n{i:02d}", cpu=str(4 + i % 3), memory=f"{16 + 4 * (i % 2)}Gi", **kwargs) for i in range(count)]


SHAPES = {
    # one pod per node through a host port (upstream's HostPortConflict)
    "host ports": nodes(12) + [pod(f"p{i:02d}", cpu="100m", host_ports=[80]) for i in range(12)],
    # one pod per node through CPU (upstream's ResourceSaturation): 3 CPUs on 4-6 CPU nodes
    "resource saturation": nodes(12) + [pod(f"p{i:02d}", cpu="3") for i in range(14)],
    # two signatures alternating (upstream's AlternatingSignatures): every batch is broken by the next pod
    "alternating signatures": nodes(10) + [pod(f"p{i:02d}", cpu="100m", host_ports=[80 + i % 2])
                                           for i in range(20)],
    # runs of signatures through a label (createPods' signatureBatchSize), pods of the same size
    "signature runs": nodes(16) + [pod(f"p{i:02d}", cpu="3", labels={"signature": f"s{i // 4}"})
                                   for i in range(16)],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_batching_places_every_pod_where_the_full_cycle_does(shape):
    on, sim_on = run(SHAPES[shape], batching=True)
    off, sim_off = run(SHAPES[shape], batching=False)
    assert on == off
    assert sum(1 for name in on.values() if name) >= 10
    assert batched(sim_off) == 0
    if shape != "alternating signatures":
        assert batched(sim_on) >= 5
    else:  # a batch lives one pod: the next pod is signed otherwise
        assert batched(sim_on) == 0


def test_the_same_holds_over_seeds_with_ties_between_equal_nodes():
    objects = [node(f"n{i:02d}") for i in range(9)] + [pod(f"p{i:02d}", cpu="100m", host_ports=[8080])
                                                       for i in range(9)]
    for seed in (1, 2, 3):
        on, sim_on = run(objects, batching=True, seed=seed)
        off, _ = run(objects, batching=False, seed=seed)
        assert on == off
        assert batched(sim_on) == 8  # the first pod runs the full cycle, the others take its list


def test_an_unsignable_pod_is_never_batched_and_breaks_the_batch():
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    unsignable = [pod(f"db{i}", cpu="3", labels={"app": "db"}, affinity=affinity) for i in range(6)]
    before = flushes("pod_not_batchable")
    on, sim_on = run(nodes(8) + unsignable, batching=True)
    off, _ = run(nodes(8) + unsignable, batching=False)
    assert on == off
    assert batched(sim_on) == 0
    # each unsignable pod counted once, as upstream counts them when they store: the first one when the next
    # pod's hint finds it unsignable, the others (InterPodAffinity refused before) when they store
    assert flushes("pod_not_batchable") == before + 6

    # signable pods, one unsignable pod in their midst, signable pods again
    mixed = [pod(f"a{i}", cpu="3") for i in range(4)] + unsignable[:1] + [pod(f"b{i}", cpu="3") for i in range(4)]
    four_cpu = [node(f"m{i}", cpu="4") for i in range(10)]  # every 3-CPU pod fills its node
    on, sim_on = run(four_cpu + mixed, batching=True)
    off, _ = run(four_cpu + mixed, batching=False)
    assert on == off
    assert batched(sim_on) == 6  # a1-a3, then b1-b3: b0 ran the full cycle after db0


class Unsigned:
    """A Filter plugin without sign_pod (an out-of-tree plugin written before KEP-5598)."""

    name = "Unsigned"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, state, pod, node_info):
        return None


def test_a_profile_with_a_plugin_that_cannot_sign_batches_nothing():
    registry = Registry.discover()
    registry.add(Unsigned)
    configuration = config()
    configuration["profiles"][0]["plugins"]["filter"] = {"enabled": [{"name": "Unsigned"}]}
    sim = Simulation(config=configuration, registry=registry, features=FeatureGates(overrides={GATE: True}))
    sim.create(SHAPES["host ports"])
    sim.run()
    batch = sim.scheduler.pods.batches["default-scheduler"]
    assert not batch.signer.enabled and batch.signer.unsupported == ["Unsigned"]
    assert batched(sim) == 0
    assert all(p.spec.node_name for p in sim.cluster.list("Pod").items)


def test_a_node_changed_under_the_batch_breaks_it():
    before = flushes("node_changed")
    objects = nodes(6) + [pod(f"p{i:02d}", cpu="100m", host_ports=[80]) for i in range(3)]

    def relabel_and_add(sim: Simulation) -> None:
        # a node still in the batch's list changes, then two more pods of the same signature arrive
        target = next(n for n in sim.cluster.list("Node").items
                      if not any(p.spec.node_name == n.metadata.name for p in sim.cluster.list("Pod").items))
        sim.cluster.patch("Node", target.metadata.name, {"metadata": {"labels": {"zone": "b"}}})
        sim.create([pod("late-0", cpu="100m", host_ports=[80]), pod("late-1", cpu="100m", host_ports=[80])])

    on, sim_on = run(objects, batching=True, then=relabel_and_add)
    off, _ = run(objects, batching=False, then=relabel_and_add)
    assert on == off
    assert flushes("node_changed") == before + 1
    assert batched(sim_on) == 3  # p01, p02, then late-1 after late-0 ran the full cycle again


def test_a_pod_whose_nominated_node_fails_falls_back_to_the_hint():
    blocked = node("blocked", taints=[("nnn-bench/blocked", "", "NoSchedule")])
    objects = [blocked, *nodes(6)]
    pods = [pod(f"p{i:02d}", cpu="3") for i in range(6)]

    def nominated(sim: Simulation) -> None:
        for p in pods:
            created = sim.cluster.create(p)
            sim.cluster.patch("Pod", created.metadata.name, {"status": {"nominatedNodeName": "blocked"}},
                              "default", subresource="status")

    on, sim_on = run(objects, batching=True, then=nominated)
    off, _ = run(objects, batching=False, then=nominated)
    assert on == off and "blocked" not in on.values()
    assert batched(sim_on) >= 3


def test_batching_metrics_carry_upstreams_names_and_labels():
    from prometheus_client import REGISTRY

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, {"profile": "default-scheduler", **labels}) or 0.0

    before = {"used": sample("scheduler_batch_attempts_total", result="hint_used"),
              "none": sample("scheduler_batch_attempts_total", result="no_hint"),
              "hinted": sample("scheduler_get_node_hint_duration_seconds_count", hinted="hint"),
              "stored": sample("scheduler_store_schedule_results_duration_seconds_count"),
              "incompatible": sample("scheduler_batch_cache_flushed_total", reason="pod_incompatible")}
    _, sim = run(SHAPES["alternating signatures"][:10] + SHAPES["host ports"][12:18], batching=True)
    assert sample("scheduler_batch_attempts_total", result="hint_used") == before["used"] + batched(sim) == \
        before["used"] + 5
    assert sample("scheduler_batch_attempts_total", result="no_hint") == before["none"] + 1
    assert sample("scheduler_get_node_hint_duration_seconds_count", hinted="hint") == before["hinted"] + 5
    assert sample("scheduler_store_schedule_results_duration_seconds_count") == before["stored"] + 6
    assert sample("scheduler_batch_cache_flushed_total", reason="pod_incompatible") == before["incompatible"]
