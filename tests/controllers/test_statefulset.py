"""The statefulset-controller (upstream pkg/controller/statefulset/stateful_set_control_test.go: CreatesPods,
ScalesUp/ScalesDown in ordinal order, OrderedReady waits for Running and Ready, Parallel does not, start
ordinal; stateful_set_utils_test.go: pod identity and storage)."""

from __future__ import annotations

import attrs

from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node, storage_class

from .workloads import workload


def db(replicas=3, **spec):
    return workload("StatefulSet", "db", replicas=replicas, serviceName="db", **spec)


def names(sim):
    return [p.metadata.name for p in sim.pods()]


def test_pods_are_named_by_ordinal_with_identity_labels_hostname_and_owner():
    sim = Simulation()
    sim.create([node("n1"), db()])
    sim.run()
    assert names(sim) == ["db-0", "db-1", "db-2"]
    pod = sim.pod("db-1")
    revision = sim.get("StatefulSet", "default/db").status["updateRevision"]
    assert revision.startswith("db-")
    assert pod.metadata.labels == {"app": "db", "statefulset.kubernetes.io/pod-name": "db-1",
                                   "apps.kubernetes.io/pod-index": "1", "controller-revision-hash": revision}
    assert (pod.spec.extra["hostname"], pod.spec.extra["subdomain"]) == ("db-1", "db")
    (ref,) = pod.metadata.owner_references
    assert (ref.kind, ref.name, ref.controller) == ("StatefulSet", "db", True)
    assert sim.get("StatefulSet", "default/db").status["readyReplicas"] == 3


def test_ordered_ready_creates_the_next_pod_only_once_the_previous_one_is_running_and_ready():
    sim = Simulation(controller_options={"kubelet": {"startDelay": "10s"}})
    sim.create([node("n1"), db()])
    sim.run_for(5)
    assert names(sim) == ["db-0"]
    sim.run_for(10)
    assert names(sim) == ["db-0", "db-1"]
    sim.run()
    created = [p.metadata.creation_timestamp - DEFAULT_START for p in sim.pods()]
    assert created == [0, 10, 20]


def test_parallel_creates_every_pod_at_once():
    sim = Simulation(controller_options={"kubelet": {"startDelay": "10s"}})
    sim.create([node("n1"), db(podManagementPolicy="Parallel")])
    sim.run_for(1)
    assert names(sim) == ["db-0", "db-1", "db-2"]


def test_ordinals_start_where_the_set_says():
    sim = Simulation()
    sim.create([node("n1"), db(replicas=2, ordinals={"start": 5})])
    sim.run()
    assert names(sim) == ["db-5", "db-6"]


def test_scaling_down_removes_the_highest_ordinals():
    sim = Simulation()
    sim.create([node("n1"), db(replicas=4)])
    sim.run()
    sts = sim.get("StatefulSet", "default/db")
    sim.cluster.update(attrs.evolve(sts, spec=attrs.evolve(sts.spec, replicas=2)))
    sim.run()
    assert names(sim) == ["db-0", "db-1"]


def test_each_pod_gets_its_claims_from_the_volume_claim_templates_and_volume_binding_acts():
    claims = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                                      "resources": {"requests": {"storage": "1Gi"}}}}]
    sim = Simulation()
    sim.create([node("n1"), storage_class("fast", provisioner="disk.example.com"), db(replicas=2,
                                                                                       volumeClaimTemplates=claims)])
    sim.run()
    for ordinal in (0, 1):
        claim = sim.get("PersistentVolumeClaim", f"default/data-db-{ordinal}")
        assert claim.metadata.labels == {"app": "db"} and claim.spec.volume_name
        volumes = {v.name: v.persistent_volume_claim.claim_name for v in sim.pod(f"db-{ordinal}").spec.volumes}
        assert volumes == {"data": f"data-db-{ordinal}"}
    assert all(p.spec.node_name == "n1" for p in sim.pods())
