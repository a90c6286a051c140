#!/usr/bin/env python3
"""kube-scheduler's affinity, spreading and basic throughput workloads on kubesched, beside 3x upstream's threshold.

    python benchmarks/constraints.py                       # every threshold-bearing workload (~25 min)
    python benchmarks/constraints.py --only TopologySpreading SchedulingBasic
    python benchmarks/constraints.py -o json > constraints.json

Runs, one at a time, each workload with a threshold in
data/scheduler_perf/affinity/ and topology_spreading/ (the variants with
``_QueueingHintsEnabled`` only differ in a feature gate kubesched does not
have, so they are left out) plus SchedulingBasic/5000Nodes_10000Pods of
misc/ with the full default profile, and prints SchedulingThroughput Average
(pods/s, wall clock) beside the target: three times upstream's threshold
(2,000 pods/s for SchedulingBasic), stated at machine factor 1.0
(benchmarks/machine_speed.py, measured first): a workload meets it when its
Average is at least target / factor here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from machine_speed import factor_note, machine_factor

from kubesched.perf import run
from kubesched.perf.config import load_test_cases

DATA = Path(__file__).resolve().parents[1] / "data/scheduler_perf"
FOLDERS = ("affinity", "topology_spreading")
#: SchedulingBasic's target with the full default profile (the issue's, not a multiple of a threshold)
BASIC = ("misc", "SchedulingBasic", "5000Nodes_10000Pods", 2000.0)


def workloads() -> list[tuple[str, str, str, float]]:
    """(folder, test, workload, target pods/s) for every threshold-bearing workload, then SchedulingBasic."""
    found = []
    for folder in FOLDERS:
        for case in load_test_cases(DATA / folder / "performance-config.yaml"):
            for workload in case.workloads:
                if workload.threshold and not workload.name.endswith("_QueueingHintsEnabled"):
                    found.append((folder, case.name, workload.name, 3 * workload.threshold))
    return found + [BASIC]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="test case names to run (default: all)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    args = parser.parse_args()
    factor = machine_factor()
    if args.output == "table":
        print(f"targets at factor 1.0; {factor_note(factor)}", flush=True)
    rows = []
    for folder, test, workload, target in workloads():
        if args.only and test not in args.only:
            continue
        started = time.time()
        [result] = run(DATA / folder / "performance-config.yaml", test=test, workload=workload)
        average = result.data_items[0].data["Average"] if result.data_items else None
        rows.append({"test": f"{test}/{workload}", "status": result.status, "average": average,
                     "threshold": result.threshold, "target": target, "seconds": round(time.time() - started),
                     "reason": result.reason, "machine_factor": round(factor, 3)})
        if args.output == "table":
            row = rows[-1]
            shown = f"{average:8.0f}" if average is not None else "       -"
            verdict = "met" if average is not None and average >= target / factor else result.status \
                if average is None else "below"
            print(f"{row['test']:<66} {shown} {result.threshold:8.0f} {target:8.0f}  {verdict:<6} "
                  f"{row['seconds']:4d}s {result.reason[:80]}", flush=True)
    if args.output == "json":
        json.dump(rows, sys.stdout, indent=1)
    return 0 if all(r["average"] is not None and r["average"] >= r["target"] / factor for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
