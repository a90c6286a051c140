"""The volume workloads: pods with bound PVs and claims, node allocatable strategies and CSINodes."""

from __future__ import annotations

from kubesched.core.volume.csi_translation import MIGRATED_PLUGINS_ANNOTATION
from kubesched.perf import run

from .helpers import DATA, basic_case, executor_for, write_config

VOLUMES = DATA / "volumes/performance-config.yaml"


def test_every_volume_workload_but_preemption_runs():
    results = {r.test: r for r in run(VOLUMES, workload="5Nodes_QueueingHintsEnabled")}
    for test in ("SchedulingSecrets", "SchedulingInTreePVs", "SchedulingMigratedInTreePVs", "SchedulingCSIPVs"):
        assert results[test].status == "ok", results[test].reason
        assert results[test].measured_pods == 10
    # their 5Nodes twins turn SchedulerQueueingHints off, locked on since 1.34: refused as upstream refuses them
    for result in run(VOLUMES, workload="5Nodes"):
        assert result.status == "unsupported" and result.reason == (
            "featureGates: cannot set feature gate SchedulerQueueingHints to false, feature is locked to true "
            "(in every release kubesched emulates, 1.34-1.37)")


def test_in_tree_pvs_are_created_bound_to_their_claims():
    executor = executor_for(VOLUMES, "SchedulingInTreePVs", "5Nodes_QueueingHintsEnabled")
    cluster = executor.cluster
    pods = cluster.list("Pod", "namespace-2").items
    assert len(pods) == 10 and all(p.spec.node_name for p in pods)
    claim = cluster.get("PersistentVolumeClaim", "pvc-3", "namespace-2")
    pv = cluster.get("PersistentVolume", "namespace-2-vol-3")
    assert claim.spec.volume_name == pv.metadata.name and claim.status.phase == "Bound"
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "true"
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name, pv.status.phase) == ("namespace-2", "pvc-3", "Bound")
    assert pv.spec.aws_elastic_block_store.volume_id == "vol-3"
    pod = next(p for p in pods if p.spec.volumes[0].persistent_volume_claim.claim_name == "pvc-3")
    assert pod.spec.volumes[0].name == "vol"


def test_node_allocatable_strategy_creates_csi_nodes():
    executor = executor_for(VOLUMES, "SchedulingMigratedInTreePVs", "5Nodes_QueueingHintsEnabled")
    cluster = executor.cluster
    nodes = cluster.list("Node").items
    csi_nodes = {c.metadata.name: c for c in cluster.list("CSINode").items}
    assert set(csi_nodes) == {n.metadata.name for n in nodes}
    node = nodes[0]
    assert node.allocatable["attachable-volumes-csi-ebs.csi.aws.com"] == 39
    assert node.allocatable["cpu"] == 4000  # kept
    (driver,) = csi_nodes[node.metadata.name].spec.drivers
    assert (driver.name, driver.allocatable.count) == ("ebs.csi.aws.com", 39)
    assert csi_nodes[node.metadata.name].metadata.annotations[MIGRATED_PLUGINS_ANNOTATION] == "kubernetes.io/aws-ebs"
    csi = executor_for(VOLUMES, "SchedulingCSIPVs", "5Nodes_QueueingHintsEnabled").cluster.get("PersistentVolume", "namespace-2-vol-0")
    assert (csi.spec.csi.driver, csi.spec.csi.volume_handle) == ("ebs.csi.aws.com", "namespace-2-vol-0")


def test_attach_limits_stop_a_workload_saying_why(tmp_path):
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 2,
         "nodeAllocatableStrategy": {"csiNodeAllocatable": {"ebs.csi.aws.com": {"count": 1}}}},
        {"opcode": "createPods", "count": 3, "collectMetrics": True,
         "persistentVolumeTemplatePath": str(DATA / "templates/pv-csi.yaml"),
         "persistentVolumeClaimTemplatePath": str(DATA / "templates/pvc.yaml")},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "failed"
    assert "node(s) exceed max volume count" in result.reason


def test_a_malformed_node_allocatable_strategy_is_refused(tmp_path):
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 1, "nodeAllocatableStrategy": {"csiNodeAllocatable": {"d": {"count": "x"}}}},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "failed"
    assert "nodeAllocatableStrategy.csiNodeAllocatable.d.count: expected an integer" in result.reason
