#!/usr/bin/env python3
"""Throughput of the DRA structured allocator on a scheduler_perf-like cluster.

    python benchmarks/bench_allocator.py                 # 500 nodes x 10 devices
    python benchmarks/bench_allocator.py --nodes 100 --devices 20 --pods 100

The cluster is upstream's ``SchedulingWithResourceClaimTemplate`` one: one
ResourceSlice per node (pool = node name) with devices ``instance-<i>``
(attributes model, family, driverVersion, numa; capacity memory 1Gi) and the
class ``test-class``.  Each simulated pod does what the DynamicResources plugin
does per scheduling cycle: build one Allocator from the current allocated state
and call ``allocate()`` on every node (Filter), then keep the first node's
result (the cluster fills up, like the upstream workload).  Printed per case:
``allocate()`` calls per second and the time of one pod's Filter over all nodes.
The class selector is evaluated for every device before the clock starts (the
scheduler's SelectorCache keeps those results for the life of a device).
"""

from __future__ import annotations

import argparse
import time

from machine_speed import factor_note, machine_factor

from kubesched.core.api import from_manifest
from kubesched.core.dra.allocator import AllocatedState, Allocator
from kubesched.core.dra.selectors import SelectorCache
from kubesched.testing import node

DRIVER = "test-driver.cdi.k8s.io"
API = "resource.k8s.io/v1"


def cluster(nodes: int, devices: int):
    names = [f"node-{i}" for i in range(nodes)]
    slices = [
        from_manifest({
            "apiVersion": API, "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{DRIVER}", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER, "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{
                    "name": f"instance-{i}",
                    "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                                   "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                    "capacity": {"memory": {"value": "1Gi"}},
                } for i in range(devices)],
            },
        })
        for name in names
    ]
    device_class = from_manifest({
        "apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "test-class"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    })
    return [node(n) for n in names], slices, {"test-class": device_class}


def claim(index: int, count: int, match: bool):
    devices = {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class", "count": count}}]}
    if match:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/model"}]
    return from_manifest({
        "apiVersion": API, "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{index}", "namespace": "default", "uid": f"claim-uid-{index}"},
        "spec": {"devices": devices},
    })


def run(nodes: int, devices: int, pods: int, count: int, match: bool) -> tuple[float, float, int]:
    """(allocate calls per second, seconds per pod, pods that got devices)."""
    node_objects, slices, classes = cluster(nodes, devices)
    cache, state = SelectorCache(), AllocatedState()
    selector = classes["test-class"].spec.selectors[0].expression
    for resource_slice in slices:  # a running scheduler has judged every device once already
        for device in resource_slice.spec.devices:
            cache.matches(selector, resource_slice, device)
    calls, placed = 0, 0
    start = time.perf_counter()
    for index in range(pods):
        claims = [claim(index, count, match)]
        allocator = Allocator(slices, classes, state, cache)
        chosen = None
        for n in node_objects:
            results = allocator.allocate(n, claims)
            calls += 1
            if chosen is None and results is not None:
                chosen = results
        if chosen is not None:
            placed += 1
            for result in chosen:
                state.add(result)
    elapsed = time.perf_counter() - start
    return calls / elapsed, elapsed / pods, placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=10, help="devices per node")
    parser.add_argument("--pods", type=int, default=50, help="pods (scheduling cycles) per case")
    args = parser.parse_args()
    print(f"{args.nodes} nodes x {args.devices} devices, {args.pods} pods per case; {factor_note(machine_factor())}")
    for label, count, match in (("1 claim x 1 device", 1, False), ("1 claim x 4 devices, matchAttribute", 4, True)):
        rate, per_pod, placed = run(args.nodes, args.devices, args.pods, count, match)
        print(f"{label:40s} {rate:10.0f} allocations/s   {per_pod * 1000:7.1f} ms per pod over all nodes"
              f"   ({placed}/{args.pods} pods placed)")


if __name__ == "__main__":
    main()
