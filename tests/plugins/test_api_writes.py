"""What the scheduler's plugins write to the API server, as kube-scheduler writes it (issue 30):
pod status as strategic-merge patches, an eviction that survives a failed condition write,
a deallocation the API server accepts."""

from __future__ import annotations

import attrs

from kubesched.core.api.convert import structure
from kubesched.core.api.resource_v1 import AllocatedDeviceStatus, AllocationResult
from kubesched.core.cluster.client import ApiError
from kubesched.testing import node, pod

from .dynamicresources.test_dynamicresources import DRIVER, claim, device_class, devices, gpu_pod, gpu_slice, sim_with
from .test_defaultpreemption import arrive, bound, gone, settle


def _verbs(sim):
    seen: list[tuple[str, str]] = []
    sim.cluster.fail_hook = lambda verb, kind, target: seen.append((verb, kind))
    return seen


def test_pod_status_is_patched_never_put():
    sim = settle([node("n1", cpu="2"), bound("low", "n1", cpu="2")])
    seen = _verbs(sim)
    arrive(sim, pod("vip", cpu="2", priority=10), pod("big", cpu="4"))
    assert sim.pod("vip").spec.node_name == "n1" and gone(sim, "low")
    assert ("patch_status", "Pod") in seen  # PodScheduled=False, nominatedNodeName, DisruptionTarget
    assert ("update_status", "Pod") not in seen


def test_a_failed_disruption_target_write_does_not_skip_the_eviction():
    sim = settle([node("n1", cpu="2"), bound("low", "n1", cpu="2")])

    def refuse_conditions(verb, kind, target):
        name = target if isinstance(target, str) else getattr(target, "key", "")
        if verb in ("update_status", "patch_status") and (kind, name) == ("Pod", "default/low"):
            raise ApiError("etcdserver: request timed out")

    sim.cluster.fail_hook = refuse_conditions
    arrive(sim, pod("vip", cpu="2", priority=10))
    assert gone(sim, "low")
    assert sim.pod("vip").spec.node_name == "n1"


def test_post_filter_deallocation_clears_the_device_statuses():
    sim = sim_with(node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"}), device_class(),
                   gpu_slice("n1", count=1), gpu_slice("n2", count=1), claim("parked"))
    parked = sim.get("ResourceClaim", "default/parked")
    allocation = structure({"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n1",
                                                     "device": "gpu-0"}]},
                            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}, AllocationResult)
    status = AllocatedDeviceStatus(driver=DRIVER, pool="n1", device="gpu-0")  # a driver's report on its device
    sim.cluster.update_status(attrs.evolve(parked, status=attrs.evolve(parked.status, allocation=allocation,
                                                                       devices=(status,))))
    sim.create([gpu_pod("mover", claim_name="parked", node_selector={"zone": "b"})])
    sim.run()
    # the API server refuses a device status without its allocation: the deallocation clears both
    assert sim.pod("mover").spec.node_name == "n2"
    moved = sim.get("ResourceClaim", "default/parked")
    assert devices(moved)[0][2] == "n2" and moved.status.devices == ()
