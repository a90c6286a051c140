#!/usr/bin/env python3
"""What kubesched.sim's questions cost on a generated cluster (issue 39, item 4's measures).

    python benchmarks/sim_whatif.py                      # 500 nodes / 1,000 pods and 2,000 / 4,000
    python benchmarks/sim_whatif.py --sizes 5000:10000   # the issue's size (long: minutes)

Each row: nodes of 32 CPU / 128 GiB, pods of 1 CPU / 1 GiB scheduled to
quiescence; then the milliseconds of one fork, of one ``can_schedule`` of a
pod after a warm-up, and of a transaction that schedules 100 pods and is
rolled back (entering it takes the deep copy; leaving swaps it back).  Issue
39's targets at factor 1.0 on 5,000 nodes / 10,000 pods: can_schedule <= 2 ms,
the rolled-back transaction <= 10 ms - not met: both copy the whole
simulation.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import factor_note, machine_factor  # noqa: E402

from kubesched.sim import Simulator  # noqa: E402


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def measure(nodes: int, pods: int) -> list[str]:
    """One row: nodes, pods, seconds to build, ms per fork, can_schedule, rolled-back transaction."""
    started = time.perf_counter()
    sim = Simulator.from_manifests([node(i) for i in range(nodes)] + [pod(f"pod-{i}") for i in range(pods)])
    build = time.perf_counter() - started
    started = time.perf_counter()
    sim.fork()
    fork = time.perf_counter() - started
    sim.can_schedule(pod("warm-up"))
    started = time.perf_counter()
    sim.can_schedule(pod("asked"))
    asked = time.perf_counter() - started
    started = time.perf_counter()
    with sim.transaction():
        sim.schedule([pod(f"extra-{i}") for i in range(100)])
    transaction = time.perf_counter() - started
    return [f"{nodes:,}", f"{pods:,}", f"{build:.1f}", f"{fork * 1000:.0f}", f"{asked * 1000:.0f}",
            f"{transaction * 1000:.0f}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["500:1000", "2000:4000"], metavar="NODES:PODS")
    args = parser.parse_args()
    factor = machine_factor()
    print("| nodes | pods | build s | fork ms | can_schedule ms | 100 pods rolled back ms |")
    print("|---|---|---|---|---|---|")
    for size in args.sizes:
        nodes, _, pods = size.partition(":")
        print("| " + " | ".join(measure(int(nodes), int(pods))) + " |", flush=True)
    print(factor_note(factor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
