"""Preemption on behalf of a deferred in-place resize (KEP-5836, InPlacePodVerticalScalingSchedulerPreemption).

The cases of upstream's integration test ``TestDeferredResizePodPreemption`` (test/integration/scheduler/preemption,
the version of index id 55654063332): a node of 300m CPU and 300 bytes of memory, a bound pod whose resize to
300m the kubelet deferred (allocated 100m); with the gate on the scheduler evicts the lower-priority pods that
keep the resize from fitting, leaves the resizing pod bound with no nominatedNodeName, and keeps it queued
("parked"); with a PreemptNever policy, or a resize that already fits, nothing is evicted; a
``PodResizePreemptionDisabled=True`` condition keeps the pod out of the queue.  Gate off: nothing happens."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api.core_v1 import ContainerStatus, PodCondition, ResourceRequirements
from kubesched.core.features import FeatureGates
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

ON = FeatureGates("1.37", {"InPlacePodVerticalScalingSchedulerPreemption": True})


def victim(name: str, cpu: str, memory: str):
    return pod(name, cpu=cpu, memory=memory, priority=1, node_name="node1")


def resizing(sim: Simulation, cpu: str, memory: str, *, policy: str | None = None, disabled: bool = False):
    """The preemptor: bound to node1 with the resources it resizes to, its status saying the kubelet deferred the
    resize and allocated 100m / 100 bytes (upstream's test writes the status the same way)."""
    spec = {"preemptionPolicy": policy} if policy else {}
    made = sim.cluster.create(pod("preemptor-pod", cpu=cpu, memory=memory, priority=100, node_name="node1", **spec))
    conditions = [PodCondition(type="PodScheduled", status="True"),
                  PodCondition(type="PodResizePending", status="True", reason="Deferred")]
    if disabled:
        conditions.append(PodCondition(type="PodResizePreemptionDisabled", status="True"))
    small = {"cpu": 100, "memory": 100}
    status = attrs.evolve(made.status, phase="Running", conditions=tuple(conditions), container_statuses=(
        ContainerStatus(name=made.spec.containers[0].name, allocated_resources=small,
                        resources=ResourceRequirements(requests=small)),))
    sim.cluster.update_status(attrs.evolve(made, status=status))


def run(victims, cpu="300m", memory="100", features=ON, **options):
    sim = Simulation(features=features)
    sim.create([node("node1", cpu="300m", memory="300"), *victims])
    sim.run()
    resizing(sim, cpu, memory, **options)
    sim.run()
    return sim


def evicted(sim: Simulation, *names: str) -> list[str]:
    present = {p.metadata.name for p in sim.pods() if p.metadata.deletion_timestamp is None}
    return [n for n in names if n not in present]


@pytest.mark.parametrize("name, victims, options, gone", [
    ("preempt single low priority pod", [victim("victim-1", "200m", "100")], {}, ["victim-1"]),
    ("preempt multiple low priority pods", [victim("victim-1", "100m", "50"), victim("victim-2", "100m", "50")], {},
     ["victim-1", "victim-2"]),
    ("no preemption when preemptor policy is PreemptNever", [victim("victim-1", "200m", "100")],
     {"policy": "Never"}, []),
    ("parking strategy when deferred resize fits on node", [], {}, []),
])
def test_deferred_resize_pod_preemption(name, victims, options, gone):
    sim = run(victims, **options)
    names = [v.metadata.name for v in victims]
    assert evicted(sim, *names) == gone
    preemptor = sim.pod("preemptor-pod")
    assert preemptor.spec.node_name == "node1" and preemptor.status.nominated_node_name == ""
    assert any(c.type == "PodScheduled" and c.status == "True" for c in preemptor.status.conditions)
    assert preemptor in sim.scheduler.queue  # parked


def test_a_pod_whose_resize_preemption_is_disabled_is_not_queued():
    sim = run([victim("victim-1", "200m", "100")], disabled=True)
    assert evicted(sim, "victim-1") == []
    assert sim.pod("preemptor-pod") not in sim.scheduler.queue


def test_gate_off_no_preemption_for_a_resize():
    sim = run([victim("victim-1", "200m", "100")], features=FeatureGates("1.37"))
    assert evicted(sim, "victim-1") == []
    assert sim.pod("preemptor-pod") not in sim.scheduler.queue


def test_the_pod_leaves_the_queue_once_its_resize_is_no_longer_deferred():
    sim = run([victim("victim-1", "200m", "100")])
    assert sim.pod("preemptor-pod") in sim.scheduler.queue
    now = sim.pod("preemptor-pod")
    done = {"cpu": 300, "memory": 100}
    sim.cluster.update_status(attrs.evolve(now, status=attrs.evolve(
        now.status, conditions=tuple(c for c in now.status.conditions if c.type != "PodResizePending"),
        container_statuses=(attrs.evolve(now.status.container_statuses[0], allocated_resources=done,
                                         resources=ResourceRequirements(requests=done)),))))
    sim.run()
    assert sim.pod("preemptor-pod") not in sim.scheduler.queue
    assert sim.pod("preemptor-pod").spec.node_name == "node1"
