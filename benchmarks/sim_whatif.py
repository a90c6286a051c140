#!/usr/bin/env python3
"""What kubesched.sim's questions cost on a generated cluster (issue 39, item 4's measures).

    python benchmarks/sim_whatif.py                      # 500 nodes / 1,000 pods and 5,000 / 10,000
    python benchmarks/sim_whatif.py --sizes 500:1000     # a quick look

Each row: nodes of 32 CPU / 128 GiB in racks of 20 (``topology.kubernetes.io/rack``),
pods of 1 CPU / 1 GiB scheduled to quiescence; then the CPU milliseconds of this
process (``time.process_time``: other processes on a shared machine inflate it
less than wall time; median of ``--repeat``, after a warm-up) of a ``can_schedule`` of one pod, of
a 64-pod gang that must fit in one rack, of the rollback of a transaction that
scheduled 100 pods (leaving the with-block), and of one fork.  The targets
(issue 39, at machine factor 1.0 on 5,000 nodes / 10,000 pods) are printed
beside, scaled to this machine's factor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import factor_note, machine_factor  # noqa: E402

from kubesched.sim import Simulator  # noqa: E402

RACK = 20
#: issue 39's targets, milliseconds at machine factor 1.0 on 5,000 nodes / 10,000 pods
TARGETS = {"can_schedule": 2.0, "gang": 50.0, "rollback": 10.0}


def node(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}",
                                                        "topology.kubernetes.io/rack": f"rack-{i // RACK}"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}


def pod(name: str, namespace: str = "default", group: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def gang(name: str, size: int) -> list[dict]:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": size}},
                      "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}}
    return [group, *(pod(f"{name}-{i}", group=name) for i in range(size))]


def median_ms(run: Callable[[int], float], repeat: int) -> float:
    run(-1)  # warm-up
    return statistics.median(run(i) for i in range(repeat)) * 1000


def timed(action: Callable[[], object]) -> float:
    """CPU seconds of this process ``action()`` took."""
    started = time.process_time()
    action()
    return time.process_time() - started


def rolled_back(sim: Simulator, i: int) -> float:
    """Seconds to leave a transaction that scheduled 100 pods (the rollback alone)."""
    tx = sim.transaction()
    tx.__enter__()
    sim.schedule([pod(f"extra-{i}-{j}") for j in range(100)])
    return timed(lambda: tx.__exit__(None, None, None))


def measure(nodes: int, pods: int, repeat: int) -> dict[str, float]:
    """Build seconds and the milliseconds of each question on one generated cluster."""
    started = time.perf_counter()
    sim = Simulator.from_manifests([node(i) for i in range(nodes)] + [pod(f"pod-{i}") for i in range(pods)])
    out = {"build": time.perf_counter() - started}
    out["can_schedule"] = median_ms(lambda i: timed(lambda: sim.can_schedule(pod(f"asked-{i}"))), repeat)
    out["gang"] = median_ms(lambda i: timed(lambda: sim.can_schedule(gang(f"gang{i + 1}", 64))), repeat)
    out["rollback"] = median_ms(lambda i: rolled_back(sim, i), repeat)
    out["fork"] = timed(sim.fork) * 1000
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["500:1000", "5000:10000"], metavar="NODES:PODS")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measure (median)")
    args = parser.parse_args()
    factor = machine_factor()
    print("| nodes | pods | build s (wall) | can_schedule ms | 64-pod gang ms | 100 pods rolled back ms | fork ms |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        nodes, _, pods = size.partition(":")
        m = measure(int(nodes), int(pods), args.repeat)
        print(f"| {int(nodes):,} | {int(pods):,} | {m['build']:.1f} | {m['can_schedule']:.1f} | {m['gang']:.1f} | "
              f"{m['rollback']:.1f} | {m['fork']:.0f} |", flush=True)
    targets = ", ".join(f"{name} {ms:g} ms -> {ms * factor:.1f} ms here" for name, ms in TARGETS.items())
    print(f"targets on 5,000 nodes / 10,000 pods at factor 1.0 ({targets})")
    print(factor_note(factor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
