"""Nodes of one template searched once: the allocator remembers a search by what decides it (the claims, each
candidate device's content and whether it is in use) and gives an equivalent node the devices at the same
positions, without searching - the same results a search there gives."""

from __future__ import annotations

from kubesched.core.dra.allocator import AllocatedState, DeviceID

from .helpers import (
    DRIVER_A,
    allocator,
    claim,
    counter_set,
    counters,
    device,
    node,
    request,
    resource_slice,
    taint_rule,
)

NODES = [f"node-{i}" for i in range(1, 5)]


def gpus(name: str, **fields) -> list:
    """Four devices on ``name``, PCI roots 0 1 0 1, in pool ``pool-<name>``."""
    return [device(f"{name}-gpu-{i}", {"root": i % 2}, **fields) for i in range(4)]


def cluster(**fields) -> list:
    return [resource_slice(f"slice-{name}", f"pool-{name}", node_name=name, devices=gpus(name, **fields))
            for name in NODES]


def matched_pair():
    return claim("claim-0", request("req-0"), request("req-1"), constraints=[{"matchAttribute": "driver-a/root"}])


def fresh(slices, state=None):
    return allocator(slices, state=state)


def test_an_equivalent_node_gets_the_same_positions_without_a_search():
    slices = cluster()
    shared = fresh(slices)
    pair = matched_pair()
    first = shared.allocate(node(NODES[0]), [pair])
    steps = shared.search_steps
    for name in NODES[1:]:
        remembered = shared.allocate(node(name), [pair])
        assert remembered == fresh(slices).allocate(node(name), [pair])
        assert [r.device for r in remembered[0].devices.results] == [f"{name}-gpu-0", f"{name}-gpu-2"]
    assert shared.search_steps == steps, "no search after the first node"
    assert [r.device for r in first[0].devices.results] == ["node-1-gpu-0", "node-1-gpu-2"]


def test_used_devices_make_another_pattern():
    slices = cluster()
    state = AllocatedState(devices={DeviceID(DRIVER_A, "pool-node-2", "node-2-gpu-0")})
    shared = fresh(slices, state)
    pair = matched_pair()
    shared.allocate(node("node-1"), [pair])
    got = shared.allocate(node("node-2"), [pair])
    assert [r.device for r in got[0].devices.results] == ["node-2-gpu-1", "node-2-gpu-3"]
    assert got == fresh(slices, state).allocate(node("node-2"), [pair])


def test_the_verdict_alone_is_known_after_one_search():
    slices = cluster()
    shared = fresh(slices)
    three = claim("claim-0", *(request(f"req-{i}") for i in range(3)),
                  constraints=[{"matchAttribute": "driver-a/root"}])
    assert shared.known_fit(node("node-1"), [three]) is None, "nothing searched yet"
    assert shared.allocate(node("node-1"), [three]) is None
    assert shared.known_fit(node("node-2"), [three]) is False
    pair = matched_pair()
    shared.allocate(node("node-1"), [pair])
    assert shared.known_fit(node("node-3"), [pair]) is True
    assert shared.known_fit(node("node-3"), [matched_pair()]) is None, "another claim object"


def test_nodes_whose_devices_are_not_plain_are_always_searched():
    for slices, rules in (
        ([resource_slice(f"slice-{n}", f"pool-{n}", count=2, node_name=n,
                         devices=gpus(n, consumesCounters=[counters("set-1", memory="1Gi")]))
          for n in NODES[:2]]
         + [resource_slice(f"counters-{n}", f"pool-{n}", count=2, node_name=n,
                           shared_counters=[counter_set("set-1", memory="8Gi")]) for n in NODES[:2]], ()),
        (cluster(), [taint_rule("rule", {"key": "k", "effect": "NoSchedule"}, device="node-3-gpu-0")]),
    ):
        shared = allocator(slices, rules=rules)
        pair = matched_pair()
        shared.allocate(node("node-1"), [pair])
        assert shared.known_fit(node("node-2"), [pair]) is None
