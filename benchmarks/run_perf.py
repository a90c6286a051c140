#!/usr/bin/env python3
"""Run kube-scheduler's scheduler_perf SchedulingBasic test case (every workload) on kubesched.

    python benchmarks/run_perf.py                      # table on stdout
    python benchmarks/run_perf.py -o json > out.json   # upstream's DataItems
    python benchmarks/run_perf.py --workload 5000Nodes_10000Pods
    python benchmarks/run_perf.py --config PATH --test NAME

Also prints the machine factor first (benchmarks/machine_speed.py; on stderr
with ``-o json``) and the process's peak resident memory (MiB) on stderr.  The config
defaults to the repository's data/scheduler_perf/misc/performance-config.yaml
(override with --config or $SCHEDULER_PERF_CONFIG).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

from machine_speed import factor_note, machine_factor

from kubesched.cli.perf import perf_command

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "data/scheduler_perf/misc/performance-config.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=os.environ.get("SCHEDULER_PERF_CONFIG", str(DEFAULT_CONFIG)),
                        help="scheduler_perf performance-config.yaml")
    parser.add_argument("--test", default="SchedulingBasic", help="test case (default SchedulingBasic)")
    parser.add_argument("--workload", default=None, help="one workload (default: all of the test case)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    args = parser.parse_args()
    print(factor_note(machine_factor()), file=sys.stderr if args.output == "json" else sys.stdout, flush=True)
    code = perf_command(args.config, args.test, args.workload, args.output)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS: {peak:.0f} MiB", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
