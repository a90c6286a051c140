#!/usr/bin/env python3
"""Cost of the DeviceTaintEviction controller on a cluster full of allocated claims.

    python benchmarks/bench_devicetainteviction.py              # 100 nodes x 8 devices, one pod per device
    python benchmarks/bench_devicetainteviction.py --nodes 500

Like upstream's ``BenchmarkTaintUntaint``: every device of driver
``test-driver`` is allocated to one claim reserved for one pod.  Measured, in
wall-clock seconds on the in-memory cluster with a fake clock:

- ``start``: the informers list everything and the handlers index it;
- ``taint``/``untaint``: the handlers of a NoExecute DeviceTaintRule (with
  ``tolerationSeconds`` 60, so nothing is deleted yet) selecting every device,
  then of its deletion (every eviction cancelled, with an event each);
- ``evict``: the same rule again, then the clock moves past the deadline and
  the workers delete every pod (GET, DisruptionTarget condition, event, DELETE).
"""

from __future__ import annotations

import argparse
import time

from machine_speed import factor_note, machine_factor

from kubesched.controllers.devicetainteviction import DeviceTaintEvictionController
from kubesched.core.api import from_manifest
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.controller.base import ControllerContext, ControllerManager
from kubesched.drivers.quiescence import run_simulation
from kubesched.testing import pod

API = "resource.k8s.io/v1"
DRIVER = "test-driver"


def build(nodes: int, devices: int) -> tuple[MemoryCluster, FakeClock]:
    clock = FakeClock(1_800_000_000.0)
    cluster = MemoryCluster(clock)
    for n in range(nodes):
        node = f"node-{n}"
        cluster.create(from_manifest({
            "apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-slice"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{d}"} for d in range(devices)]},
        }))
        for d in range(devices):
            name = f"{node}-{d}"
            consumer = cluster.create(pod(name, node_name=node, resourceClaims=[{"name": "dev", "resourceClaimName": name}]))
            cluster.create(from_manifest({
                "apiVersion": API, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": "test-class"}}]}},
                "status": {"allocation": {"devices": {"results": [{
                    "request": "dev", "driver": DRIVER, "pool": node, "device": f"dev-{d}",
                    "tolerations": [{"key": "broken", "operator": "Exists", "effect": "NoExecute",
                                     "tolerationSeconds": 60}]}]}},
                    "reservedFor": [{"resource": "pods", "name": name, "uid": consumer.metadata.uid}]},
            }))
    return cluster, clock


def rule():
    return from_manifest({
        "apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": "everything"},
        "spec": {"deviceSelector": {"driver": DRIVER}, "taint": {"key": "broken", "effect": "NoExecute"}},
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()
    factor = machine_factor()
    cluster, clock = build(args.nodes, args.devices)
    pods = args.nodes * args.devices
    informers = Informers(cluster)
    controller = DeviceTaintEvictionController(ControllerContext(cluster, informers, clock))
    manager = ControllerManager(informers, [controller])

    timings = {}
    began = time.perf_counter()
    manager.start()
    timings["start"] = time.perf_counter() - began

    cluster.create(rule())
    began = time.perf_counter()
    informers.pump()
    timings["taint"] = time.perf_counter() - began
    assert len(controller.pending_evictions()) == pods

    cluster.delete("DeviceTaintRule", "everything")
    began = time.perf_counter()
    informers.pump()
    timings["untaint"] = time.perf_counter() - began
    assert not controller.pending_evictions()

    cluster.create(rule())
    began = time.perf_counter()
    run_simulation([manager], clock, clock.now() + 120)
    timings["evict"] = time.perf_counter() - began
    assert not cluster.list("Pod").items

    print(f"{args.nodes} nodes x {args.devices} devices = {pods} claims/pods; {factor_note(factor)}")
    for name, seconds in timings.items():
        print(f"  {name:8s} {seconds * 1000:9.1f} ms  {pods / seconds:10.0f} pods/s")


if __name__ == "__main__":
    main()
