"""The replicaset-controller (upstream pkg/controller/replicaset/replica_set_test.go: TestSyncReplicaSetCreates,
TestSyncReplicaSetDeletes, TestDeletedPodsAreReplaced-style churn, the controller refs of created pods; and
pkg/controller/controller_utils_test.go TestSortingActivePods for which pods go first)."""

from __future__ import annotations

import attrs

from kubesched.controllers.replicaset import deletion_rank
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

from .workloads import workload


def run(*objects):
    sim = Simulation()
    sim.create([node("n1", cpu="4"), *objects])
    sim.run()
    return sim


def owned(sim, name="web"):
    return [p for p in sim.pods() if p.metadata.owner_references and p.metadata.owner_references[0].name == name]


def test_a_replicaset_creates_its_replicas_named_after_it_and_controlled_by_it():
    sim = run(workload("ReplicaSet", "web", replicas=3))
    rs = sim.get("ReplicaSet", "default/web")
    pods = owned(sim)
    assert len(pods) == 3
    for p in pods:
        name = p.metadata.name
        assert name.startswith("web-") and len(name) == len("web-") + 5
        (ref,) = p.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == \
            ("apps/v1", "ReplicaSet", "web", rs.metadata.uid, True, True)
        assert p.metadata.labels == {"app": "web"} and p.spec.node_name == "n1"
    assert rs.status == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                         "observedGeneration": 1}


def test_names_repeat_from_run_to_run():
    assert [p.metadata.name for p in owned(run(workload("ReplicaSet", "web")))] == \
        [p.metadata.name for p in owned(run(workload("ReplicaSet", "web")))]


def test_a_deleted_pod_is_replaced():
    sim = run(workload("ReplicaSet", "web", replicas=2))
    gone = owned(sim)[0].metadata.name
    sim.cluster.delete("Pod", gone, "default")
    sim.run()
    names = [p.metadata.name for p in owned(sim)]
    assert len(names) == 2 and gone not in names


def test_scaling_down_deletes_the_pending_pods_first():
    sim = Simulation()
    sim.create([node("n1", cpu="1"), workload("ReplicaSet", "web", replicas=4, cpu="400m")])
    sim.run()
    assert sorted(bool(p.spec.node_name) for p in owned(sim)) == [False, False, True, True]
    rs = sim.get("ReplicaSet", "default/web")
    sim.cluster.update(attrs.evolve(rs, spec=attrs.evolve(rs.spec, replicas=2)))
    sim.run()
    assert [bool(p.spec.node_name) for p in owned(sim)] == [True, True]


def test_active_pods_sort_unassigned_then_pending_then_not_ready_first():
    unassigned = pod("u")
    pending = pod("p", node_name="n1")
    running = attrs.evolve(pending, metadata=attrs.evolve(pending.metadata, name="r"),
                           status=attrs.evolve(pending.status, phase="Running"))
    assert [p.metadata.name for p in sorted([running, pending, unassigned], key=deletion_rank)] == ["u", "p", "r"]


def test_deleting_the_replicaset_deletes_its_pods():
    sim = run(workload("ReplicaSet", "web", replicas=2), pod("alone", node_name="n1"))
    sim.cluster.delete("ReplicaSet", "web", "default")
    sim.run()
    assert [p.metadata.name for p in sim.pods()] == ["alone"]
