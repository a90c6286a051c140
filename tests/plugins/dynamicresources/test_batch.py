"""DynamicResources judging every node at once (the batch Filter), planning on
demand, and device preferences of Score plugins."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.core.dra.manager import planned_allocations, prefer_devices
from kubesched.core.framework.cycle_state import CycleState
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.dynamicresources.plugin import DynamicResources
from kubesched.testing import device, device_class, node, pod, resource_claim, resource_slice

GPU = "gpu.example.com"


def gpu_cluster(seed: int = 1) -> Simulation:
    """Eight nodes with 0-4 GPUs (shareable compute, models A/B; one node with
    exclusive GPUs), half filled by sharing and whole-GPU pods."""
    rng = random.Random(seed)
    sim = Simulation(seed=seed)
    objects = [device_class()]
    for index in range(8):
        name = f"n{index}"
        objects.append(node(name, cpu="64", memory="256Gi"))
        count = index % 5
        if count:
            shared = index != 3
            objects.append(resource_slice(name, [
                device(f"gpu-{g}", attributes={"model": "AB"[index % 2]},
                       capacity={"compute": "1"} if shared else None, shared=shared)
                for g in range(count)]))
    for index in range(14):
        milli = rng.choice([250, 500, 750, 1000])
        capacity = {"compute": f"{milli}m"} if milli < 1000 else None
        objects += [resource_claim(f"c{index}", capacity=capacity), pod(f"p{index}", cpu="1", claims=[f"c{index}"])]
    sim.create(objects)
    sim.run()
    return sim


def cycle(sim: Simulation, pending) -> tuple[DynamicResources, CycleState]:
    """A fresh cycle's PreFilter for ``pending`` (created in the cluster, not scheduled)."""
    scheduler = sim.scheduler
    scheduler.informers.pump()
    scheduler.cache.update_snapshot(scheduler.snapshot)
    plugin = scheduler.profiles["default-scheduler"].plugins["DynamicResources"]
    state = CycleState()
    assert plugin.pre_filter(state, pending, scheduler.snapshot.nodes) is None
    return plugin, state


def pending(sim: Simulation, name: str, **claim) -> object:
    created = sim.create([resource_claim(f"{name}-claim", **claim),
                          pod(name, cpu="1", claims=[f"{name}-claim"], schedulerName="someone-else")])
    return created[-1]


CLAIMS = [
    {"capacity": {"compute": "300m"}},
    {"capacity": {"compute": "800m"}},
    {"count": 1},
    {"count": 2},
    {"count": 2, "capacity": {"compute": "500m"}},
    {"selectors": [f"device.attributes['{GPU}'].model == 'B'"], "capacity": {"compute": "200m"}},
]


@pytest.mark.parametrize("claim", CLAIMS)
def test_the_batch_filter_agrees_with_the_per_node_filter(claim):
    sim = gpu_cluster()
    wanted = pending(sim, "new", **claim)
    plugin, state = cycle(sim, wanted)
    snapshot = sim.scheduler.snapshot
    per_node = [plugin.filter(state, wanted, info) for info in snapshot.nodes]  # the allocator, node by node
    plugin, state = cycle(sim, wanted)
    rows = np.arange(len(snapshot))
    batch = plugin.filter_batch(state, wanted, snapshot.table, rows)
    assert batch is not None
    assert batch.tolist() == [status is None for status in per_node]
    assert any(batch) and not all(batch)
    index, statuses = plugin.filter_batch_status(state, wanted, snapshot.table, rows)
    assert [statuses[i] if i >= 0 else None for i in index] == per_node
    # the per-node Filter now answers from the batch result, with the same statuses
    assert [plugin.filter(state, wanted, info) for info in snapshot.nodes] == per_node


def test_scheduling_is_the_same_with_and_without_the_batch_filter(monkeypatch):
    with_batch = gpu_cluster(seed=5)
    monkeypatch.setattr(DynamicResources, "filter_batch",
                        lambda self, state, pod, table, rows: None, raising=True)
    without = gpu_cluster(seed=5)
    assert with_batch.placements() == without.placements()
    results = lambda sim: {c.metadata.name: [(r.pool, r.device) for r in c.status.allocation.devices.results]  # noqa: E731
                           for c in sim.cluster.list("ResourceClaim").items if c.status.allocation}
    assert results(with_batch) == results(without)


def test_other_shapes_are_left_to_the_per_node_filter():
    sim = gpu_cluster()
    objects = sim.create([resource_claim("x1"), resource_claim("x2"),
                          pod("two-claims", claims=["x1", "x2"], schedulerName="someone-else")])
    plugin, state = cycle(sim, objects[-1])
    snapshot = sim.scheduler.snapshot
    assert plugin.filter_batch(state, objects[-1], snapshot.table, np.arange(len(snapshot))) is None
    assert plugin.filter_batch_status(state, objects[-1], snapshot.table, np.arange(len(snapshot))) is None


def three_shared_gpus() -> tuple[Simulation, object]:
    """One node with three shareable GPUs, and a pending pod asking for 300m of one."""
    sim = Simulation()
    sim.create([device_class(), node("n1"), resource_slice("n1", [
        device(f"gpu-{g}", capacity={"compute": "1"}, shared=True) for g in range(3)])])
    sim.run()
    return sim, pending(sim, "new", capacity={"compute": "300m"})


def test_plans_are_made_on_demand_and_follow_device_preferences():
    sim, wanted = three_shared_gpus()
    plugin, state = cycle(sim, wanted)
    assert planned_allocations(state, "n1").popitem()[1].devices.results[0].device == "gpu-0"  # ResourceSlice order
    prefer_devices(state, lambda device: -int(device.device[-1]))
    plan = planned_allocations(state, "n1")
    assert plan["default/new-claim"].devices.results[0].device == "gpu-2"
    assert planned_allocations(state, "nowhere") is None
    assert planned_allocations(CycleState(), "n1") is None  # no DRA claims this cycle


def test_reserve_commits_the_preferred_devices():
    sim, wanted = three_shared_gpus()
    plugin, state = cycle(sim, wanted)
    prefer_devices(state, lambda device: {"gpu-1": 0}.get(device.device, 1))
    assert plugin.reserve(state, wanted, "n1") is None
    (in_flight,) = [c for c in sim.scheduler.dra_manager().allocated_claims() if c.metadata.name == "new-claim"]
    assert in_flight.status.allocation.devices.results[0].device == "gpu-1"


def test_preferences_registered_before_prefilter_count_too():
    sim, wanted = three_shared_gpus()
    scheduler = sim.scheduler
    scheduler.informers.pump()
    scheduler.cache.update_snapshot(scheduler.snapshot)
    plugin = scheduler.profiles["default-scheduler"].plugins["DynamicResources"]
    state = CycleState()
    prefer_devices(state, lambda device: -int(device.device[-1]))  # e.g. from an earlier PreFilter plugin
    plugin.pre_filter(state, wanted, scheduler.snapshot.nodes)
    assert plugin.filter(state, wanted, scheduler.snapshot.nodes[0]) is None  # plans in slice order...
    assert planned_allocations(state, "n1")["default/new-claim"].devices.results[0].device == "gpu-2"  # ...not kept
