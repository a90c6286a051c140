#!/usr/bin/env python3
"""The workload-aware scheduling targets (issue 26): upstream's podgroup scheduler_perf
workloads on kubesched, each beside its target at machine factor 1.0.

    python benchmarks/podgroup_perf.py            # every workload below (tens of minutes)
    python benchmarks/podgroup_perf.py --quick    # the first of each test case only

For each workload the machine factor is measured just before it
(benchmarks/machine_speed.py: shared machines drift), and the table gives the
average SchedulingThroughput, the factor, the throughput at factor 1.0
(measured pods/s x factor) and the target.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from machine_speed import machine_factor

from kubesched.perf import run

DATA = Path(__file__).resolve().parents[1] / "data/scheduler_perf"

#: (config, test case, workload, target pods/s at factor 1.0 or None: "unchanged")
WORKLOADS = [
    ("podgroup/gangscheduling", "GangScheduling", "5000Nodes_1000Gangs_3000Pods", 1500),
    ("podgroup/gangscheduling", "GangScheduling", "5000Nodes_10Gangs_50000Pods_5000PerGroup", 1000),
    ("podgroup/tas", "TopologyAwareScheduling", "5000Nodes_750Gangs_3000Pods", 750),
    ("podgroup/tas", "TopologyAwareScheduling", "5000Nodes_3Gangs_3000Pods_1000PerGroup", 300),
    ("podgroup/tas", "TopologyAwareScheduling", "5000Nodes_6Gangs_6000Pods_1000PerGroup", 300),
    ("podgroup/tas", "TopologyAwareScheduling", "5000Nodes_9Gangs_9000Pods_1000PerGroup", 300),
    ("misc", "SchedulingBasic", "5000Nodes_10000Pods", None),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one workload per test case")
    args = parser.parse_args()
    chosen = WORKLOADS
    if args.quick:
        firsts: dict[str, tuple] = {}
        for entry in WORKLOADS:
            firsts.setdefault(entry[1], entry)
        chosen = list(firsts.values())
    print(f"{'workload':<66} {'pods/s':>8} {'factor':>6} {'at 1.0':>8} {'target':>7}  result")
    for config, test, workload, target in chosen:
        factor = machine_factor()
        (result,) = run(DATA / config / "performance-config.yaml", test=test, workload=workload)
        average = result.average or 0.0
        at_one = average * factor
        verdict = result.status if not result.ran else (
            "-" if target is None else "met" if at_one >= target else "below")
        print(f"{test + '/' + workload:<66} {average:>8.1f} {factor:>6.2f} {at_one:>8.1f} "
              f"{target if target is not None else '-':>7}  {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
