#!/usr/bin/env python3
"""What recording every scheduling decision costs (``simulate --record``,
``kubesched explain``): a scheduler_perf workload run without and with the
record, alternately, on the wall clock.

    python benchmarks/decision_record.py                       # SchedulingBasic/5000Nodes_10000Pods, 2 rounds
    python benchmarks/decision_record.py --test TopologySpreading --workload 500Nodes \\
        --config data/scheduler_perf/topology_spreading/performance-config.yaml --rounds 3

Printed per run: SchedulingThroughput (pods/s, the measured op), the whole
workload's wall time, and with the record its size per recorded attempt line
and per pod; then the slowdown (throughput off / on, mean over rounds).  The
record streams to a temporary JSON Lines file, as ``simulate --record`` does.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from machine_speed import factor_note, machine_factor

from kubesched.core.observability.decision_log import DecisionLog
from kubesched.perf.config import load_test_cases
from kubesched.perf.executor import WorkloadExecutor

ROOT = Path(__file__).resolve().parents[1]


def run_once(config: Path, test: str, workload: str, record: Path | None) -> tuple[float, float, int, int]:
    """(pods/s, wall seconds, record lines, record bytes) of one run."""
    case = next(c for c in load_test_cases(config) if c.name == test)
    executor = WorkloadExecutor(case, case.workload(workload))
    executor.check()
    log = DecisionLog(record) if record is not None else None
    executor.scheduler.decisions = log
    started = time.perf_counter()
    executor.run()
    wall = time.perf_counter() - started
    lines = size = 0
    if log is not None and record is not None:
        log.close()
        lines, size = log.written, record.stat().st_size
    throughput = executor.data_items[0].data["Average"] if executor.data_items else float("nan")
    return throughput, wall, lines, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "data/scheduler_perf/misc/performance-config.yaml")
    parser.add_argument("--test", default="SchedulingBasic")
    parser.add_argument("--workload", default="5000Nodes_10000Pods")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    factor = machine_factor()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        record = Path(scratch) / "decisions.jsonl"
        for _ in range(args.rounds):
            for recording in (False, True):
                rows.append((recording, *run_once(args.config, args.test, args.workload,
                                                  record if recording else None)))
    print(f"{args.test}/{args.workload}; {factor_note(factor)}")
    print(f"{'record':>7} {'pods/s':>8} {'wall s':>7} {'lines':>7} {'MB':>7} {'bytes/line':>10}")
    for recording, throughput, wall, lines, size in rows:
        per_line = f"{size / lines:.0f}" if lines else "-"
        print(f"{'on' if recording else 'off':>7} {throughput:8.0f} {wall:7.1f} {lines or '-':>7} "
              f"{size / 1e6 if lines else 0:7.1f} {per_line:>10}")
    off = statistics.mean(t for r, t, *_ in rows if not r)
    on = statistics.mean(t for r, t, *_ in rows if r)
    print(f"slowdown (throughput off / on): {off / on:.2f}x")


if __name__ == "__main__":
    main()
