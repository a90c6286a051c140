"""In-place pod resize (KEP-1287) as the scheduler sees it: a placed pod counts the largest of its spec and what
its status says the kubelet allocated or applied (upstream's NodeInfo), and a resize that frees room brings back
the pods it may help."""

from __future__ import annotations

import attrs

from kubesched.core.api.core_v1 import ContainerStatus, PodCondition, ResourceRequirements
from kubesched.core.framework.resources import pod_scaled_down
from kubesched.drivers.simulation import Simulation
from kubesched.perf.ops.objects import kubelet_resize_status
from kubesched.testing import node, pod


def resized(p, cpu: str):
    """``p`` after pods/resize to ``cpu`` (its status untouched: the kubelet has not acted yet)."""
    amount = {"cpu": int(float(cpu) * 1000)}
    containers = tuple(attrs.evolve(c, resources=ResourceRequirements(requests=amount)) for c in p.spec.containers)
    return attrs.evolve(p, spec=attrs.evolve(p.spec, containers=containers))


def allocated(p, cpu: int):
    """``p`` with its container statuses saying the kubelet allocated and applied ``cpu`` milli-CPU."""
    statuses = tuple(ContainerStatus(name=c.name, allocated_resources={"cpu": cpu},
                                     resources=ResourceRequirements(requests={"cpu": cpu})) for c in p.spec.containers)
    return attrs.evolve(p, status=attrs.evolve(p.status, container_statuses=statuses))


def requested_cpu(sim: Simulation, name: str) -> int:
    return next(i for i in sim.scheduler.node_infos() if i.name == name).requested.get("cpu", 0)


def test_a_pod_resized_up_but_deferred_counts_its_new_spec_and_a_shrink_counts_when_allocated():
    sim = Simulation()
    sim.create([node("n1", cpu="4"), pod("big", cpu="3", node_name="n1")])
    sim.run()
    big = sim.pod("big")
    # resized down in the spec, the kubelet not done yet: it still holds what was allocated (3 CPUs)
    sim.cluster.update_status(allocated(big, 3000))
    sim.cluster.patch("Pod", "big", {"spec": {"containers": [{"name": big.spec.containers[0].name,
                                                              "resources": {"requests": {"cpu": "1"}}}]}},
                      "default", subresource="resize")
    sim.run()
    assert requested_cpu(sim, "n1") == 3000
    # the kubelet allocates the smaller size: the node has room again
    now = sim.pod("big")
    sim.cluster.update_status(attrs.evolve(now, status=kubelet_resize_status(now, sim.get("Node", "n1"), [])))
    sim.run()
    assert requested_cpu(sim, "n1") == 1000


def test_a_shrink_the_kubelet_allocates_schedules_the_pod_waiting_for_it():
    sim = Simulation()
    sim.create([node("n1", cpu="4"), pod("big", cpu="3", node_name="n1")])
    sim.run()
    sim.cluster.update_status(allocated(sim.pod("big"), 3000))
    sim.create([pod("waiting", cpu="2")])
    sim.run()
    assert not sim.pod("waiting").spec.node_name
    start = sim.clock.now()
    # pods/resize to 1 CPU, then the kubelet's status: the freed CPUs bring the waiting pod back at once
    name = sim.pod("big").spec.containers[0].name
    sim.cluster.patch("Pod", "big", {"spec": {"containers": [{"name": name, "resources": {"requests": {"cpu": "1"}}}]}},
                      "default", subresource="resize")
    now = sim.pod("big")
    sim.cluster.update_status(attrs.evolve(now, status=kubelet_resize_status(now, sim.get("Node", "n1"), [])))
    sim.run()
    assert sim.pod("waiting").spec.node_name == "n1"
    assert sim.clock.now() - start < 60  # requeued by the resize, not by the 5-minute flush


def test_the_kubelet_defers_a_resize_the_node_has_no_room_for_and_refuses_one_beyond_it():
    n1 = node("n1", cpu="4")
    small = allocated(pod("small", cpu="1", node_name="n1"), 1000)
    other = pod("other", cpu="2", node_name="n1")
    deferred = kubelet_resize_status(resized(small, "3"), n1, [other])
    condition = deferred.conditions[-1]
    assert (condition.type, condition.reason) == ("PodResizePending", "Deferred")
    assert condition.message == "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"
    assert deferred.container_statuses[0].allocated_resources == {"cpu": 1000}
    infeasible = kubelet_resize_status(resized(small, "5"), n1, [])
    assert infeasible.conditions[-1].reason == "Infeasible"
    assert infeasible.conditions[-1].message == "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"
    done = kubelet_resize_status(resized(small, "2"), n1, [other])
    assert done.container_statuses[0].allocated_resources == {"cpu": 2000} and not done.conditions


def test_scale_down_is_read_from_the_status_too():
    big = allocated(pod("big", cpu="3", node_name="n1"), 3000)
    assert not pod_scaled_down(big, resized(big, "1"))  # still allocated 3 CPUs
    assert pod_scaled_down(resized(big, "1"), allocated(resized(big, "1"), 1000))
    # an infeasible resize counts only what was allocated or applied: the larger spec does not count
    infeasible = attrs.evolve(resized(big, "5"), status=attrs.evolve(big.status, conditions=(
        PodCondition(type="PodResizePending", status="True", reason="Infeasible"),)))
    assert not pod_scaled_down(big, infeasible) and not pod_scaled_down(infeasible, big)
