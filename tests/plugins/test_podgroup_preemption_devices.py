"""Workload-aware preemption when members or victims hold devices (issue 35, item 9): the group's dry
run counts a victim's devices as freed and a reprieved victim's devices as held again, exactly, so the
victims evicted are enough for the whole group, or none are evicted - one test per shape, in a
simulation and through the embedded daemon."""

from __future__ import annotations

import threading

from kubesched.core.clock import RealClock
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.framework.config import load_config
from kubesched.drivers.daemon import Daemon
from kubesched.drivers.simulation import Simulation
from kubesched.plugins import DEFAULT_PLUGINS
from kubesched.testing import device, device_class, node, pod, pod_group, resource_claim_template, resource_slice

ONE_GPU = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def gpu_nodes(count: int, gpus: int = 2, cpu: str = "16") -> list:
    objects: list = [device_class(), resource_claim_template("one-gpu")]
    for i in range(count):
        objects += [node(f"n{i}", cpu=cpu), resource_slice(f"n{i}", [device(f"gpu-{d}") for d in range(gpus)])]
    return objects


def gang(name: str, size: int, priority: int, gpu: bool | list[bool] = True, cpu: str = "1",
         **group_spec) -> list:
    """PodGroup ``name`` (gang of ``size``) at ``priority`` and its members ``name-i``, each asking ``cpu`` and,
    where ``gpu`` says so, one GPU through ResourceClaimTemplate one-gpu."""
    wants = gpu if isinstance(gpu, list) else [gpu] * size
    members = [pod(f"{name}-{i}", cpu=cpu, priority=priority, pod_group=name,
                   **({"resourceClaims": ONE_GPU} if wants[i] else {})) for i in range(size)]
    return [pod_group(name, size, priority=priority, **group_spec), *members]


def running(sim: Simulation, prefix: str) -> dict[str, str]:
    return {p.metadata.name: p.spec.node_name for p in sim.pods()
            if p.metadata.name.startswith(prefix) and p.spec.node_name and p.metadata.deletion_timestamp is None}


def preempted(sim: Simulation) -> set[str]:
    return {e.involved_object.name for e in sim.events("Preempted")}


def settle(*objects) -> Simulation:
    sim = Simulation()
    sim.create(list(objects))
    sim.run()
    return sim


def test_one_gpu_per_member_from_a_template_the_low_gang_goes_whole():
    """The issue's scenario: 2 nodes with 2 GPUs, a running gang of 4 holding them all, and a gang of 4 at
    priority 1000 that needs every GPU: all four victims go, and the high gang binds 4 of 4."""
    sim = settle(*gpu_nodes(2), *gang("low", 4, priority=0))
    assert len(running(sim, "low-")) == 4
    sim.create(gang("high", 4, priority=1000))
    sim.run()
    assert len(running(sim, "high-")) == 4
    assert running(sim, "low-") == {}
    assert preempted(sim) == {f"low-{i}" for i in range(4)}


def test_victims_spread_over_nodes_only_those_needed_go():
    """Three nodes of 2 GPUs, six single low pods holding one GPU each: the gang of 4 needs two nodes' GPUs,
    so exactly four victims go and the two on the third node keep running."""
    singles = [pod(f"low-{i}", cpu="1", priority=0, resourceClaims=ONE_GPU) for i in range(6)]
    sim = settle(*gpu_nodes(3), *singles)
    assert len(running(sim, "low-")) == 6
    sim.create(gang("high", 4, priority=1000))
    sim.run()
    placed = running(sim, "high-")
    assert len(placed) == 4
    left = running(sim, "low-")
    assert len(left) == 2 and len(preempted(sim)) == 4
    assert not set(left.values()) & set(placed.values())  # the survivors share no node with the gang


def test_mixed_cpu_and_gpu_members():
    """Half of each gang wants a GPU, the other half most of a node's CPU: the high gang needs every GPU and
    the CPU the low CPU members hold, so the low gang goes whole and the high one binds 4 of 4."""
    low = gang("low", 4, priority=0, gpu=[True, True, False, False], cpu="4")
    sim = settle(*gpu_nodes(2, gpus=1, cpu="8"), *low)
    assert len(running(sim, "low-")) == 4
    sim.create(gang("high", 4, priority=1000, gpu=[True, True, False, False], cpu="4"))
    sim.run()
    assert len(running(sim, "high-")) == 4
    assert running(sim, "low-") == {}


def test_a_victim_gangs_shared_group_claim_is_freed_only_with_the_whole_group():
    """Each low gang shares one group claim of 2 GPUs on its node (KEP-5729); the high gang needs all 4 GPUs:
    the shared claims are freed when every member that holds them goes, so both low gangs go whole."""
    two = resource_claim_template("two-gpus", count=2)
    shared = [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]
    low = []
    for name in ("low-a", "low-b"):
        low += [pod_group(name, 2, priority=0, resourceClaims=shared),
                *(pod(f"{name}-{i}", cpu="1", priority=0, pod_group=name, resourceClaims=shared) for i in range(2))]
    sim = settle(*gpu_nodes(2), two, *low)
    assert len(running(sim, "low-")) == 4
    sim.create(gang("high", 4, priority=1000))
    sim.run()
    assert len(running(sim, "high-")) == 4
    assert running(sim, "low-") == {}


def test_victims_that_are_not_enough_are_not_touched():
    """The high gang needs 5 GPUs; the cluster has 4: evicting the low gang could not place it, so nothing
    is evicted and the low gang keeps running."""
    sim = settle(*gpu_nodes(2), *gang("low", 4, priority=0))
    sim.create(gang("high", 5, priority=1000))
    sim.run()
    assert running(sim, "high-") == {}
    assert len(running(sim, "low-")) == 4
    assert preempted(sim) == set()


def test_through_the_embedded_daemon_the_low_gang_goes_whole():
    cluster = MemoryCluster(RealClock())
    changed = threading.Event()
    cluster.watch("Pod", cluster.resource_version(), lambda event: changed.set())
    for obj in [*gpu_nodes(2), *gang("low", 4, priority=0)]:
        cluster.create(obj)
    daemon = Daemon(cluster, load_config(None, DEFAULT_PLUGINS), embedded=True, port=None)
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    try:
        def bound(prefix: str) -> dict[str, str]:
            return {p.metadata.name: p.spec.node_name for p in cluster.list("Pod").items
                    if p.metadata.name.startswith(prefix) and p.spec.node_name}

        _wait(lambda: len(bound("low-")) == 4, changed)
        for obj in gang("high", 4, priority=1000):
            cluster.create(obj)
        _wait(lambda: len(bound("high-")) == 4, changed)
        assert bound("low-") == {}
    finally:
        daemon.stop()
        thread.join(30)


def _wait(predicate, changed: threading.Event, timeout: float = 30.0) -> None:
    """Return once ``predicate()`` holds, checking again on every pod change (no sleeping)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        remaining = deadline - time.monotonic()
        assert remaining > 0, "timed out"
        changed.clear()
        if not predicate():
            changed.wait(remaining)
