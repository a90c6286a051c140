"""A deposed leader's late allocation write can leave one device in two claims (the API server knows
nothing of leases): the scheduler never binds a pod on such a claim while the other is in use, the
allocation is withdrawn (by the binding cycle that refused it, or by the ResourceClaim controller when no pod
uses it), and the pod is allocated again."""

from __future__ import annotations

import attrs
import yaml

from kubesched.core.api import from_manifest
from kubesched.core.api.resource_v1 import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaimConsumerReference,
)
from kubesched.drivers.simulation import Simulation

MANIFESTS = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""


def claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def pod(name: str, claim_name: str, node: str = "") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}]}}


def allocate(sim: Simulation, name: str, device: str, pod_name: str | None) -> None:
    """Write ``name``'s allocation of ``device`` as a scheduler's PreBind does (reserved for ``pod_name``, or
    for no pod: a deposed leader's write that arrived after the new leader gave the device to another claim)."""
    stored = sim.get("ResourceClaim", f"default/{name}")
    stored = sim.cluster.update(attrs.evolve(stored, metadata=attrs.evolve(
        stored.metadata, finalizers=("resource.kubernetes.io/delete-protection",))))
    result = DeviceRequestAllocationResult(request="gpu", driver="gpu.example.com", pool="n1", device=device)
    allocation = AllocationResult(devices=DeviceAllocationResult(results=(result,)))
    reserved = ()
    if pod_name is not None:
        uid = sim.pod(pod_name).metadata.uid
        reserved = (ResourceClaimConsumerReference(resource="pods", name=pod_name, uid=uid),)
    sim.cluster.update_status(attrs.evolve(stored, status=attrs.evolve(
        stored.status, allocation=allocation, reserved_for=reserved)))


def test_a_device_in_two_claims_ends_under_one_pod_and_the_other_claim_is_allocated_again():
    sim = Simulation()
    for doc in yaml.safe_load_all(MANIFESTS):
        sim.cluster.create(from_manifest(doc))
    for doc in (claim("c1"), claim("c2"), pod("pod2", "c2", node="n1"), pod("pod1", "c1")):
        sim.cluster.create(from_manifest(doc))
    allocate(sim, "c2", "gpu-0", "pod2")  # the new leader's: pod2 runs on gpu-0
    allocate(sim, "c1", "gpu-0", None)    # the deposed leader's late write, accepted: gpu-0 again
    sim.run()
    assert sim.pod("pod1").spec.node_name == "n1"
    devices = {c.metadata.name: [r.device for r in c.status.allocation.devices.results]
               for c in sim.cluster.list("ResourceClaim").items}
    assert devices == {"c1": ["gpu-1"], "c2": ["gpu-0"]}  # c2 kept the device it had in use
    messages = [e.message for e in sim.events("DeviceAllocatedTwice")]
    assert any("gpu.example.com/n1/gpu-0" in m and "default/c1" in m and "default/c2" in m for m in messages)


def test_a_late_write_reserved_for_the_pod_itself_is_withdrawn_by_the_binding_cycle_that_refuses_it():
    """The deposed leader's write allocated gpu-0 and reserved c1 for pod1 itself: PreBind refuses it and
    Unreserve withdraws the allocation at once (else pod1, retried at once, would reserve c1 again before the
    controller sees it unused, again and again: a daemon under load did so for good)."""
    sim = Simulation()
    for doc in yaml.safe_load_all(MANIFESTS):
        sim.cluster.create(from_manifest(doc))
    for doc in (claim("c1"), claim("c2"), pod("pod2", "c2", node="n1"), pod("pod1", "c1")):
        sim.cluster.create(from_manifest(doc))
    allocate(sim, "c2", "gpu-0", "pod2")
    allocate(sim, "c1", "gpu-0", "pod1")
    sim.run()
    assert sim.pod("pod1").spec.node_name == "n1"
    devices = {c.metadata.name: [r.device for r in c.status.allocation.devices.results]
               for c in sim.cluster.list("ResourceClaim").items}
    assert devices == {"c1": ["gpu-1"], "c2": ["gpu-0"]}
    # one refusal, on the pod; the controller found no allocation of c1 left to withdraw
    assert [(e.involved_object.kind, e.involved_object.name) for e in sim.events("DeviceAllocatedTwice")] == [
        ("Pod", "pod1")]


def test_a_device_shared_by_design_is_no_conflict():
    sim = Simulation()
    for doc in yaml.safe_load_all(MANIFESTS):
        sim.cluster.create(from_manifest(doc))
    for doc in (claim("c1"), claim("c2"), pod("pod2", "c2", node="n1"), pod("pod1", "c1", node="n1")):
        sim.cluster.create(from_manifest(doc))
    for name, owner in (("c2", "pod2"), ("c1", "pod1")):
        stored = sim.get("ResourceClaim", f"default/{name}")
        admin = DeviceRequestAllocationResult(request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0",
                                              admin_access=name == "c1")
        sim.cluster.update_status(attrs.evolve(stored, status=attrs.evolve(stored.status, allocation=AllocationResult(
            devices=DeviceAllocationResult(results=(admin,))), reserved_for=(ResourceClaimConsumerReference(
                resource="pods", name=owner, uid=sim.pod(owner).metadata.uid),))))
    sim.run()
    assert all(c.status.allocation is not None for c in sim.cluster.list("ResourceClaim").items)
    assert not sim.events("DeviceAllocatedTwice")
