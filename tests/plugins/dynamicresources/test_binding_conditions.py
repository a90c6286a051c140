"""Binding conditions (KEP-5007): PreBind waits until the driver reports the
allocated devices ready, fails on a binding failure condition or after
DynamicResourcesArgs.bindingTimeout, and the pod is then retried."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kubesched.core.api import ManifestError, from_manifest
from kubesched.core.api.meta import Condition
from kubesched.core.api.resource_v1 import AllocatedDeviceStatus
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.dynamicresources.binding import BINDING_TIMED_OUT
from kubesched.plugins.dynamicresources.plugin import DynamicResourcesArgs
from kubesched.testing import node, pod

DRIVER = "fabric.example.com"


def fabric_slice(node_name: str):
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": f"{node_name}-fabric"},
                          "spec": {"driver": DRIVER, "nodeName": node_name,
                                   "pool": {"name": node_name, "resourceSliceCount": 1},
                                   "devices": [{"name": "gpu-0", "bindsToNode": True,
                                                "bindingConditions": ["DeviceAttached"],
                                                "bindingFailureConditions": ["AttachmentFailed"]}]}})


def objects():
    return [
        node("n1"), node("n2"),
        from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                       "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}),
        fabric_slice("n1"),
        from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "fabric-gpu", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}),
        pod("trainer", resourceClaims=[{"name": "gpu", "resourceClaimName": "fabric-gpu"}]),
    ]


def simulation(binding_timeout: str = "10m") -> Simulation:
    sim = Simulation({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                      "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                          {"name": "DynamicResources", "args": {"bindingTimeout": binding_timeout}}]}]})
    sim.create(objects())
    return sim


def claim(sim):
    return sim.get("ResourceClaim", "default/fabric-gpu")


def report(sim, condition: str) -> None:
    """What the driver does: set ``condition`` True on the allocated device in the claim's status."""
    current = claim(sim)
    (result,) = current.status.allocation.devices.results
    entry = AllocatedDeviceStatus(driver=result.driver, pool=result.pool, device=result.device,
                                  conditions=(Condition(type=condition, status="True", reason="Driver",
                                                        last_transition_time=sim.clock.now()),))
    sim.cluster.update_status(attrs.evolve(current, status=attrs.evolve(current.status, devices=(entry,))))


def test_the_pod_waits_in_prebind_and_binds_when_the_device_is_attached():
    sim = simulation()
    sim.run_for(30)
    assert not sim.pod("trainer").spec.node_name
    assert [e.reason for e in sim.events("BindingConditionsPending")] == ["BindingConditionsPending"]
    allocation = claim(sim).status.allocation
    assert allocation.allocation_timestamp is not None
    assert [r.binding_conditions for r in allocation.devices.results] == [("DeviceAttached",)]
    assert [ref.name for ref in claim(sim).status.reserved_for] == ["trainer"]
    report(sim, "DeviceAttached")
    sim.run_for(10)
    assert sim.pod("trainer").spec.node_name == "n1"


def test_a_binding_failure_deallocates_and_the_pod_is_retried_elsewhere():
    sim = simulation()
    sim.run_for(10)
    report(sim, "AttachmentFailed")
    # the driver also takes the broken device out and another node's device appears
    sim.cluster.delete("ResourceSlice", "n1-fabric")
    sim.cluster.create(fabric_slice("n2"))
    sim.run_for(12)
    failed = [e.message for e in sim.events("FailedScheduling")]
    assert any("binding failure condition AttachmentFailed is true" in m for m in failed), failed
    allocation = claim(sim).status.allocation
    assert allocation is not None and [r.pool for r in allocation.devices.results] == ["n2"]
    assert claim(sim).status.devices == ()  # the failed device's status went with the old allocation
    report(sim, "DeviceAttached")
    sim.run_for(10)
    assert sim.pod("trainer").spec.node_name == "n2"


def test_the_binding_timeout_deallocates_and_retries():
    sim = simulation(binding_timeout="20s")
    sim.run_for(22)
    failed = [e.message for e in sim.events("FailedScheduling")]
    assert any(BINDING_TIMED_OUT in m for m in failed), failed
    assert not sim.pod("trainer").spec.node_name


def test_binding_timeout_must_be_a_duration_of_at_least_a_second():
    with pytest.raises(ManifestError, match="at least 1s"):
        DynamicResourcesArgs(binding_timeout="500ms")
    assert DynamicResourcesArgs().binding_timeout_seconds == 600


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "binding-conditions"


def test_example_attached_binds_after_the_condition_turns_true():
    sim = Simulation.from_paths([EXAMPLE / "cluster"])
    sim.change_at(20, [EXAMPLE / "attached-a.yaml"])
    sim.run()
    assert sim.pod("default/trainer").spec.node_name == "node-a"
    assert sim.clock.now() - sim.start_time == 25  # the first poll after the driver's report


def test_example_failed_attachment_is_retried_on_the_other_node():
    sim = Simulation.from_paths([EXAMPLE / "cluster"])
    sim.change_at(20, [EXAMPLE / "failed-a.yaml"])
    sim.change_at(20, [EXAMPLE / "node-a-fabric.yaml"], delete=True)
    sim.change_at(60, [EXAMPLE / "attached-b.yaml"])
    sim.run()
    assert sim.pod("default/trainer").spec.node_name == "node-b"


def test_example_binding_timeout_keeps_the_pod_pending_with_the_reason():
    sim = Simulation.from_paths([EXAMPLE / "cluster"], config=EXAMPLE / "binding-timeout.yaml")
    sim.run_for(100)
    p = sim.pod("default/trainer")
    assert not p.spec.node_name
    (scheduled,) = [c for c in p.status.conditions if c.type == "PodScheduled"]
    assert BINDING_TIMED_OUT in scheduled.message


def test_a_simulation_whose_devices_are_never_attached_ends_with_the_pod_pending():
    # without --until: each attempt times out after 10 minutes and is retried; an hour of that ends the run
    sim = Simulation.from_paths([EXAMPLE / "cluster"])
    sim.run()
    p = sim.pod("default/trainer")
    assert not p.spec.node_name
    assert BINDING_TIMED_OUT in next(c.message for c in p.status.conditions if c.type == "PodScheduled")
    assert sim.clock.now() - sim.start_time <= 3600 + 600
