#!/usr/bin/env python3
"""Workload-aware preemption on kubesched: every workload of upstream's
data/scheduler_perf/workload_preemption/ and default_preemption's
PreemptionPodGroupDisruptionMode, unchanged.

    python benchmarks/workload_preemption.py                  # all of them (~6 min on 2 cores)
    python benchmarks/workload_preemption.py --only Basic     # workloads whose name contains "Basic"

Prints the machine factor first (benchmarks/machine_speed.py), then per
workload: the measured pods, SchedulingThroughput Average (pods/s, wall clock,
as upstream's scheduler_perf) and the same at factor 1.0, the PodGroup
preemptions (scheduler_podgroup_preemption_attempts_total) with their seconds
inside PodGroupPostFilter (..._attempt_duration_seconds) and their victims,
the pod preemptions' victims, the workload's CPU seconds (this process,
setup included) and its result.  The wall-clock rate is mostly the queue's
backoff: each preemptor needs a second attempt after its victims are gone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from machine_speed import factor_note, machine_factor

from kubesched.core.framework.registry import Registry
from kubesched.core.observability import metrics
from kubesched.perf import TestCase, Workload, load_test_cases, run_workload

DATA = Path(__file__).resolve().parents[1] / "data/scheduler_perf"
SUITES = [(DATA / "workload_preemption/performance-config.yaml", None),
          (DATA / "default_preemption/performance-config.yaml", "PreemptionPodGroupDisruptionMode")]


def total(metric, suffix: str) -> float:
    """The sum of ``metric``'s samples named ``*suffix`` over every label value."""
    return sum(s.value for m in metric.collect() for s in m.samples if s.name.endswith(suffix))


def counters() -> tuple[float, ...]:
    return (total(metrics.PODGROUP_PREEMPTION_ATTEMPTS, "_total"),
            total(metrics.PODGROUP_PREEMPTION_ATTEMPT_DURATION, "_sum"),
            total(metrics.PODGROUP_PREEMPTION_VICTIMS, "_sum"),
            total(metrics.PREEMPTION_VICTIMS, "_sum"),
            time.process_time())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="only workloads whose test/workload name contains this")
    args = parser.parse_args()
    factor = machine_factor()
    print(factor_note(factor), flush=True)
    header = ("test/workload", "pods", "pods/s", "pods/s at 1.0", "group preemptions", "in PodGroupPostFilter s",
              "group victims", "pod victims", "CPU s", "result")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    registry = Registry.discover()
    failed = 0
    for config, test in SUITES:
        for case in load_test_cases(config):
            if test is not None and case.name != test:
                continue
            for workload in case.workloads:
                if args.only in f"{case.name}/{workload.name}":
                    failed += not run_one(case, workload, registry, factor)
    return 1 if failed else 0


def run_one(case: TestCase, workload: Workload, registry: Registry, factor: float) -> bool:
    """Run one workload and print its row; True when it ran ``ok``."""
    before = counters()
    result = run_workload(case, workload, registry=registry)
    after = counters()
    attempts, seconds, group_victims, pod_victims, cpu = (a - b for a, b in zip(after, before))
    average = result.average
    cells = (result.name, str(result.measured_pods), f"{average:.1f}" if average is not None else "-",
             f"{average * factor:.1f}" if average is not None else "-", f"{attempts:.0f}", f"{seconds:.2f}",
             f"{group_victims:.0f}", f"{pod_victims:.0f}", f"{cpu:.1f}",
             result.status if result.ran else f"{result.status}: {result.reason}")
    print("| " + " | ".join(cells) + " |", flush=True)
    return result.status == "ok"


if __name__ == "__main__":
    sys.exit(main())
