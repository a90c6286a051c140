"""The embedded cluster refuses what kube-apiserver refuses (issue 30): claim status, pod update, binding rules."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api.convert import structure
from kubesched.core.api.resource_v1 import AllocatedDeviceStatus, AllocationResult, ResourceClaimConsumerReference
from kubesched.core.api.validation import POD_UPDATE_FORBIDDEN
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import Conflict, Invalid
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.testing import node, pod, resource_claim


@pytest.fixture
def cluster():
    return MemoryCluster(FakeClock(1000.0))


def _allocation(device: str) -> AllocationResult:
    return structure({"devices": {"results": [{"request": "req-0", "driver": "gpu.example.com", "pool": "n1",
                                               "device": device}]}}, AllocationResult)


def _status(claim, **changes):
    return attrs.evolve(claim, status=attrs.evolve(claim.status, **changes))


USER = ResourceClaimConsumerReference(resource="pods", name="p", uid="p-uid")


def test_reserved_for_needs_an_allocation(cluster):
    claim = cluster.create(resource_claim("gpu"))
    with pytest.raises(Invalid, match="status.reservedFor: Forbidden: may not be specified when `allocated` is not set"):
        cluster.update_status(_status(claim, reserved_for=(USER,)))


def test_an_allocation_is_immutable_once_set_and_cannot_go_while_reserved(cluster):
    claim = cluster.update_status(_status(cluster.create(resource_claim("gpu")), allocation=_allocation("gpu-0"),
                                          reserved_for=(USER,)))
    with pytest.raises(Invalid, match="status.allocation: Invalid value: .*field is immutable"):
        cluster.update_status(_status(claim, allocation=_allocation("gpu-1")))
    with pytest.raises(Invalid, match="status.reservedFor: Forbidden"):
        cluster.update_status(_status(claim, allocation=None))  # still reserved
    freed = cluster.update_status(_status(claim, allocation=None, reserved_for=()))
    assert freed.status.allocation is None


def test_device_statuses_only_for_allocated_devices(cluster):
    claim = cluster.update_status(_status(cluster.create(resource_claim("gpu")), allocation=_allocation("gpu-0")))
    device = AllocatedDeviceStatus(driver="gpu.example.com", pool="n1", device="gpu-0")
    claim = cluster.update_status(_status(claim, devices=(device,)))
    with pytest.raises(Invalid, match=r'status.devices\[0\]: Invalid value: "gpu.example.com/n1/gpu-0": must be an '
                                      "allocated device in the claim"):
        cluster.update_status(_status(claim, allocation=None))  # what PostFilter's deallocation sent
    assert cluster.update_status(_status(claim, allocation=None, devices=())).status.devices == ()


def test_reserved_for_uids_are_unique_and_none_are_added_once_deleting(cluster):
    claim = cluster.update_status(_status(cluster.create(resource_claim("gpu")), allocation=_allocation("gpu-0")))
    with pytest.raises(Invalid, match=r"status.reservedFor\[1\]: Duplicate value"):
        cluster.update_status(_status(claim, reserved_for=(USER, USER)))
    claim = cluster.update(attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, finalizers=("f",))))
    cluster.delete("ResourceClaim", "gpu", "default")
    deleting = cluster.get("ResourceClaim", "gpu", "default")
    with pytest.raises(Invalid, match="new entries may not be added"):
        cluster.update_status(_status(deleting, reserved_for=(USER,)))


def test_a_pod_update_may_not_change_its_spec_but_images_tolerations_and_gates(cluster):
    created = cluster.create(pod("web", cpu="1", scheduling_gates=["g"]))
    for changed in (attrs.evolve(created.spec, node_name="n1"), attrs.evolve(created.spec, priority=5),
                    attrs.evolve(created.spec, containers=())):
        with pytest.raises(Invalid, match="pod updates may not change fields other than"):
            cluster.update(attrs.evolve(created, spec=changed))
    with pytest.raises(Invalid, match="only deletion is allowed"):
        cluster.update(attrs.evolve(created, spec=attrs.evolve(created.spec, scheduling_gates=created.spec.scheduling_gates * 2
                                                               + (attrs.evolve(created.spec.scheduling_gates[0], name="h"),))))
    image = attrs.evolve(created.spec.containers[0], image="web:2")
    ungated = cluster.update(attrs.evolve(created, spec=attrs.evolve(created.spec, containers=(image,),
                                                                     scheduling_gates=())))
    assert ungated.spec.containers[0].image == "web:2" and ungated.spec.scheduling_gates == ()
    assert POD_UPDATE_FORBIDDEN.startswith("spec: Forbidden:")


def test_update_keeps_status_and_update_status_keeps_the_rest(cluster):
    created = cluster.create(pod("web"))
    running = attrs.evolve(created.status, phase="Running")
    updated = cluster.update(attrs.evolve(created, status=running,
                                          metadata=attrs.evolve(created.metadata, labels={"a": "b"})))
    assert updated.status.phase == "" and updated.metadata.labels == {"a": "b"}


def test_generation_on_every_object_with_a_spec(cluster):
    claim = cluster.create(resource_claim("gpu"))
    assert claim.metadata.generation == 1
    created = cluster.create(pod("web"))
    assert created.metadata.generation == 1
    relabelled = cluster.update(attrs.evolve(created, metadata=attrs.evolve(created.metadata, labels={"a": "b"})))
    assert relabelled.metadata.generation == 1
    image = attrs.evolve(created.spec.containers[0], image="web:2")
    assert cluster.update(attrs.evolve(relabelled, spec=attrs.evolve(created.spec, containers=(image,)))
                          ).metadata.generation == 2


def test_a_gated_pod_is_not_bound(cluster):
    cluster.create(node("n1"))
    gated = cluster.create(pod("web", scheduling_gates=["g"]))
    with pytest.raises(Conflict, match="has non-empty .spec.schedulingGates"):
        cluster.bind("default", "web", gated.metadata.uid, "n1")


def test_an_update_naming_another_uid_conflicts_with_upstream_s_message(cluster):
    created = cluster.create(pod("web"))
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: other, UID in object meta: "):
        cluster.update(attrs.evolve(created, metadata=attrs.evolve(created.metadata, uid="other")))


def test_pod_resize_changes_only_container_resources(cluster):
    cluster.create(pod("web", cpu="1"))
    resized = cluster.patch("Pod", "web", {"spec": {"containers": [{"name": "main", "resources": {
        "requests": {"cpu": "2"}}}]}}, "default", subresource="resize")
    assert resized.spec.containers[0].resources.requests["cpu"] == 2000
    with pytest.raises(Invalid, match="only cpu and memory resources"):
        cluster.patch("Pod", "web", {"spec": {"nodeName": "n1"}}, "default", subresource="resize")
