"""The deployment-controller (upstream pkg/controller/deployment/deployment_controller_test.go: a new Deployment
creates its ReplicaSet with pod-template-hash; sync_test.go scaling; rolling_test.go TestReconcileNewReplicaSet /
TestReconcileOldReplicaSets bounds: never more than replicas + maxSurge pods, never fewer than replicas -
maxUnavailable available)."""

from __future__ import annotations

import attrs

from kubesched.controllers.deployment import surge_and_unavailable
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node

from .workloads import workload


def replica_sets(sim):
    return sorted(sim.cluster.list("ReplicaSet").items, key=lambda rs: rs.metadata.annotations[
        "deployment.kubernetes.io/revision"])


def test_a_deployment_runs_its_pods_through_a_replicaset_with_the_pod_template_hash():
    sim = Simulation()
    sim.create([node("n1", cpu="8"), workload("Deployment", "web", replicas=3)])
    sim.run()
    (rs,) = replica_sets(sim)
    hashed = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == f"web-{hashed}" and rs.spec.replicas == 3
    assert rs.spec.selector.match_labels == {"app": "web", "pod-template-hash": hashed}
    assert rs.metadata.owner_references[0].kind == "Deployment"
    pods = sim.pods()
    assert len(pods) == 3
    for p in pods:
        assert p.metadata.name.startswith(f"web-{hashed}-")
        assert p.metadata.labels == {"app": "web", "pod-template-hash": hashed}
        assert p.metadata.owner_references[0].name == rs.metadata.name
    assert sim.get("Deployment", "default/web").status["availableReplicas"] == 3


def test_scaling_changes_the_replicasets_replicas():
    sim = Simulation()
    sim.create([node("n1", cpu="8"), workload("Deployment", "web", replicas=3)])
    sim.run()
    d = sim.get("Deployment", "default/web")
    sim.cluster.update(attrs.evolve(d, spec=attrs.evolve(d.spec, replicas=5)))
    sim.run()
    assert [rs.spec.replicas for rs in replica_sets(sim)] == [5] and len(sim.pods()) == 5


def test_a_template_change_rolls_over_within_max_surge_and_max_unavailable():
    sim = Simulation(controller_options={"kubelet": {"startDelay": "10s"}})
    sim.create([node("n1", cpu="8"), workload("Deployment", "web", replicas=4)])
    sim.run()
    d = sim.get("Deployment", "default/web")
    assert surge_and_unavailable(d) == (1, 1)
    template = attrs.evolve(d.spec.template, metadata=attrs.evolve(d.spec.template.metadata, annotations={"v": "2"}))
    sim.cluster.update(attrs.evolve(d, spec=attrs.evolve(d.spec, template=template)))
    for _ in range(20):
        sim.run_for(1)
        active = [p for p in sim.pods() if p.metadata.deletion_timestamp is None]
        assert len(active) <= 5
        assert sum(int(rs.status.get("availableReplicas", 0)) for rs in replica_sets(sim)) >= 3
    sim.run()
    old, new = replica_sets(sim)
    assert (old.spec.replicas, new.spec.replicas) == (0, 4)
    assert new.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    assert all(p.metadata.owner_references[0].name == new.metadata.name for p in sim.pods())
