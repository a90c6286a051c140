"""``kubesched perf``: kube-scheduler's scheduler_perf config files, run unchanged on kubesched.

    from kubesched.perf import run, render
    results = run("misc/performance-config.yaml", test="SchedulingBasic", workload="5000Nodes_10000Pods")
    render(results, "table")      # or "json": upstream's DataItems document

Modules: :mod:`.config` (test cases, workloads, ops, params),
:mod:`.template` (the Go text/template subset the templates use),
:mod:`.ops` (the executor: ops against a MemoryCluster and the scheduler),
:mod:`.tracker` (pods per namespace), :mod:`.throughput` (the per-second
SchedulingThroughput collector), :mod:`.report` (results, table, JSON),
:mod:`.runner` (choosing and running workloads).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from .config import PerfConfigError, TestCase, Workload, load_test_cases
from .report import DataItem, WorkloadResult, data_items_document, render
from .runner import run, run_workload
from .template import TemplateError

#: perf_command's exit codes.
EXIT_OK, EXIT_NOTHING_RAN, EXIT_INVALID = 0, 1, 2


def perf_command(config: str | Path, test: str | None = None, workload: str | None = None,
                 output: str = "table") -> int:
    """What ``kubesched perf CONFIG [--test NAME] [--workload NAME] [-o table|json]`` does;
    returns the exit code.

    Prints the results (``table`` or upstream's DataItems ``json``) on stdout;
    a bad config file, field or name is one line on stderr and exit code 2;
    exit code 1 when no selected workload ran (all unsupported or failed),
    else 0 (a throughput below the threshold is shown, not an error).  On a
    terminal, a status line shows progress while workloads run."""
    if output not in ("table", "json"):
        print(f"unknown output {output!r} (use table or json)", file=sys.stderr)
        return EXIT_INVALID
    progress = None
    status: AbstractContextManager[Any] = nullcontext()
    if sys.stdout.isatty():
        from rich.console import Console

        status = Console(stderr=True).status("loading", spinner="dots")
    try:
        with status as live:
            if live is not None:
                progress = live.update
            results = run(config, test=test, workload=workload, progress=progress)
    except PerfConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    render(results, output)
    return EXIT_OK if any(r.ran for r in results) else EXIT_NOTHING_RAN


__all__ = [
    "DataItem",
    "PerfConfigError",
    "TemplateError",
    "TestCase",
    "Workload",
    "WorkloadResult",
    "data_items_document",
    "load_test_cases",
    "perf_command",
    "render",
    "run",
    "run_workload",
]
