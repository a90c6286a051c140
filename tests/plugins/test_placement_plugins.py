"""TopologyPlacementGenerator and PodGroupPodsCount (upstream topologyaware's
TestGeneratePlacements and podgrouppodscount's TestScorePlacement /
TestNormalizePlacementScore), on a real scheduler's snapshot."""

import numpy as np
import pytest

from kubesched.core.framework.podgroups import Placement, PodGroupAssignments, PodGroupInfo
from kubesched.core.framework.status import Code
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod, pod_group

RACK = "topology.kubernetes.io/rack"


def started(*objects):
    sim = Simulation()
    sim.create(list(objects))
    sim.start()
    sim.harness.informers.pump()
    sim.scheduler.current_snapshot()
    return sim


def plugin(sim, name):
    return sim.scheduler.profiles["default-scheduler"].plugins[name]


def generate(sim, group):
    parent = Placement("", np.arange(len(sim.scheduler.snapshot), dtype=np.int64))
    info = PodGroupInfo(group.metadata.namespace, group.metadata.name, group)
    return plugin(sim, "TopologyPlacementGenerator").placement_generate(None, info, parent), parent


def names(sim, placement):
    return sorted(sim.scheduler.snapshot.table.names[placement.rows].tolist())


NODES = [node("a1", labels={RACK: "a"}), node("a2", labels={RACK: "a"}), node("b1", labels={RACK: "b"}),
         node("bare")]


def test_no_constraint_returns_the_parent_placement():
    sim = started(*NODES, pod_group("g", 2))
    placements, parent = generate(sim, pod_group("g", 2))
    assert placements == [parent]


def test_placements_partition_the_nodes_by_the_key_leaving_unlabeled_nodes_out():
    group = pod_group("g", 2, topology_key=RACK)
    sim = started(*NODES, group)
    placements, _ = generate(sim, group)
    assert [(p.name, names(sim, p)) for p in placements] == [("a", ["a1", "a2"]), ("b", ["b1"])]


def test_members_already_scheduled_lock_the_domain():
    group = pod_group("g", 2, topology_key=RACK)
    sim = started(*NODES, group, pod("p0", pod_group="g", node_name="b1"))
    placements, _ = generate(sim, group)
    assert [p.name for p in placements] == ["b"]


@pytest.mark.parametrize("where", [("a1", "b1"), ("bare",)])
def test_members_on_several_domains_or_an_unlabeled_node_are_an_error(where):
    group = pod_group("g", 2, topology_key=RACK)
    sim = started(*NODES, group, *(pod(f"p{i}", pod_group="g", node_name=n) for i, n in enumerate(where)))
    status, _ = generate(sim, group)
    assert status.code == Code.ERROR and status.reasons == ("more than 1 domain found for pod group",)


def test_pods_count_scores_scheduled_plus_proposed_and_normalizes_to_the_highest():
    group = pod_group("g", 2)
    sim = started(node("n0"), group)
    counts = plugin(sim, "PodGroupPodsCount")
    info = PodGroupInfo("default", "g", group, scheduled_before=1)
    rows = np.arange(1, dtype=np.int64)
    two = PodGroupAssignments(Placement("x", rows), ((pod("a"), "n0"),))
    four = PodGroupAssignments(Placement("y", rows), tuple((pod(f"p{i}"), "n0") for i in range(3)))
    scores = np.array([counts.placement_score(None, info, two), counts.placement_score(None, info, four)])
    assert scores.tolist() == [2, 4]
    assert counts.normalize_placement_score(None, info, scores) is None and scores.tolist() == [50, 100]


def test_pods_count_all_zero_is_an_error():
    sim = started(node("n0"), pod_group("g", 2))
    status = plugin(sim, "PodGroupPodsCount").normalize_placement_score(
        None, PodGroupInfo("default", "g", pod_group("g", 2)), np.zeros(2, dtype=np.int64))
    assert status.code == Code.ERROR
    assert status.reasons == ("no pods from pod group are assigned to any of the candidate placements",)


def test_resources_fit_prefers_the_placement_the_group_fills_tightest():
    group = pod_group("g", 1, topology_key=RACK)
    sim = started(node("a1", cpu="4", memory="4Gi", labels={RACK: "a"}),
                  node("b1", cpu="8", memory="8Gi", labels={RACK: "b"}), group)
    fit = plugin(sim, "NodeResourcesFit")
    info = PodGroupInfo("default", "g", group)
    placements, _ = generate(sim, group)
    member = pod("p0", cpu="2", memory="2Gi", pod_group="g")
    a, b = (fit.placement_score(None, info, PodGroupAssignments(p, ((member, names(sim, p)[0]),)))
            for p in placements)
    assert (a, b) == (50, 25)
