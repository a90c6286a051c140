"""What the DRA manager offers plugins: the devices in use, a node's slices, and
the planned allocations with device preferences."""

from __future__ import annotations

import attrs

from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import ConfigMap
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.dra.allocated_devices import DeviceID
from kubesched.core.dra.manager import PlannedAllocations, device_order, prefer_devices
from kubesched.core.framework.cycle_state import CycleState
from kubesched.drivers.simulation import Simulation
from kubesched.testing import device, device_class, node, pod, resource_claim, resource_slice


def test_allocated_state_and_node_slices_follow_the_cluster():
    sim = Simulation()
    sim.create([device_class(), node("n1"), node("n2"),
                resource_slice("n1", [device("gpu-0", capacity={"compute": "1"}, shared=True), device("gpu-1")]),
                resource_claim("share", capacity={"compute": "250m"}), pod("a", claims=["share"]),
                resource_claim("whole"), pod("b", claims=["whole"])])
    sim.run()
    dra = sim.scheduler.dra_manager()
    shared, exclusive = DeviceID("gpu.example.com", "n1", "gpu-0"), DeviceID("gpu.example.com", "n1", "gpu-1")
    assert dra.allocated.devices == {exclusive}
    assert dra.allocated.consumed_capacity[shared]["compute"] == 0.25
    assert [s.metadata.name for s in dra.node_slices("n1")] == ["n1-gpu.example.com"]
    assert dra.node_slices("n2") == []
    generation = dra.slice_generation
    sim.create([resource_slice("n2", [device("gpu-0")])])
    sim.scheduler.informers.pump()
    assert dra.slice_generation > generation and len(dra.node_slices("n2")) == 1
    sim.cluster.delete("Pod", "b", "default")
    sim.run()  # the ResourceClaim controller deallocates the claim nobody uses any more
    assert dra.allocated.devices == set() and shared in dra.allocated.consumed_capacity


def test_planned_allocations_ask_the_planner_once_per_node_and_preference():
    calls = []

    def planner(node_name, order):
        calls.append((node_name, order))
        return {"ns/c": node_name} if node_name != "full" else None

    state = CycleState()
    planned = PlannedAllocations(planner, state)
    assert planned.get("n1") == {"ns/c": "n1"} and planned.get("n1") == {"ns/c": "n1"}
    assert planned.get("full") is None and len(calls) == 2 and calls[0][1] is None
    prefer_devices(state, lambda device: device.device)
    prefer_devices(state, lambda device: 0)
    assert planned.get("n1") == {"ns/c": "n1"} and len(calls) == 3  # planned again, with the preferences
    assert calls[-1][1](DeviceID("d", "p", "x")) == ("x", 0)
    assert planned.get("n1") and len(calls) == 3
    planned.set("n2", {"ns/c": "found in slice order"})  # not what the preferences ask for
    assert planned.get("n2") == {"ns/c": "n2"}
    assert PlannedAllocations().get("n1") is None and device_order(CycleState()) is None


def test_configmaps_are_kept_for_plugins_and_tools():
    sim = Simulation()
    (stored,) = sim.create([ConfigMap(metadata=ObjectMeta(name="cfg", namespace="default"), data={"key": "value"})])
    assert sim.get("ConfigMap", "default/cfg").data == {"key": "value"} and stored.metadata.uid


def test_a_group_claims_in_flight_allocation_is_shared_by_its_members_until_the_last_lets_go():
    """Members of the PodGroup the allocation was made for share it (a pod of another
    group does not); it ends, freeing the device, only when every holder released it."""
    sim = Simulation()
    sim.create([device_class(), node("n1"), resource_slice("n1", [device("gpu-0")]), resource_claim("c")])
    sim.run()
    dra = sim.scheduler.dra_manager()
    claim = dra.get_claim("default", "c")
    gpu = DeviceID("gpu.example.com", "n1", "gpu-0")
    allocation = from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}, "spec": {},
        "status": {"allocation": {"devices": {"results": [
            {"request": "req", "driver": gpu.driver, "pool": gpu.pool, "device": gpu.device}]}}}}).status.allocation
    pending = attrs.evolve(claim, status=attrs.evolve(claim.status, allocation=allocation))
    dra.signal_claim_pending_allocation(pending, "pod-1", "default/g")
    uid = claim.metadata.uid
    assert dra.group_pending_allocation(uid, "default/g") is pending
    assert dra.group_pending_allocation(uid, "default/other") is None
    assert dra.share_claim_pending_allocation(uid, "pod-2")
    assert dra.release_claim_pending_allocation(uid, "pod-2") is None  # pod-1 still holds it
    assert dra.claim_has_pending_allocation(uid) and dra.allocated.devices == {gpu}
    assert dra.release_claim_pending_allocation(uid, "pod-1") is pending
    assert not dra.claim_has_pending_allocation(uid) and dra.allocated.devices == set()
    assert not dra.share_claim_pending_allocation(uid, "pod-3")  # over: nothing to share
