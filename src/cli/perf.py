"""``kubesched perf``: kube-scheduler's scheduler_perf workloads, with a status line while they run
and SchedulingThroughput as a table or upstream's DataItems JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional, TextIO

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubesched.core.features import FeatureGates
from kubesched.perf import PerfConfigError, run
from kubesched.perf.results import OUTPUTS, UNSUPPORTED, WorkloadResult, data_items_document
from kubesched.perf.throughput import PERCENTILES

from .common import EMULATED_VERSION_HELP, FEATURE_GATES_HELP, Output, feature_gates
from .progress import Reporter


def perf(
    config: Path = typer.Argument(..., help="A scheduler_perf performance-config.yaml."),
    test: Optional[str] = typer.Option(None, "--test", help="Only this test case."),
    workload: Optional[str] = typer.Option(None, "--workload", help="Only this workload."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json (upstream DataItems)."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...",
                                    help=FEATURE_GATES_HELP + " Over each workload's featureGates."),
    emulated_version: Optional[str] = typer.Option(None, "--emulated-version", metavar="1.MINOR",
                                                   help=EMULATED_VERSION_HELP),
) -> None:
    """Run kube-scheduler's scheduler_perf workloads and report SchedulingThroughput."""
    raise typer.Exit(perf_command(config, test, workload, output.value, feature_gates(emulated_version, gates)))


def render(results: list[WorkloadResult], output: str = "table", out: TextIO | None = None,
           err: TextIO | None = None) -> None:
    """Print ``results`` as a table (``output="table"``) or as upstream's
    DataItems JSON (``"json"``) on ``out`` (default stdout).  With JSON,
    workloads that did not run are listed on ``err`` (default stderr)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if output == "json":
        out.write(json.dumps(data_items_document(results), indent=2) + "\n")
        for result in results:
            if not result.ran:
                err.write(f"{result.name}: {result.status}: {result.reason}\n")
        return
    if output != "table":
        raise ValueError(f"unknown output {output!r} (use {' or '.join(OUTPUTS)})")
    _render_table(results, out)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _render_table(results: list[WorkloadResult], out: TextIO) -> None:
    table = Table(title="SchedulingThroughput (pods/s)", title_justify="left", box=box.SIMPLE_HEAD,
                  padding=(0, 0), pad_edge=False)
    table.add_column("test/workload", overflow="fold", min_width=16)
    for header in ("pods", "Average", *(f"Perc{p}" for p in PERCENTILES), "threshold"):
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    table.add_column("result", no_wrap=True)
    for result in results:
        if not result.ran:
            style = "yellow" if result.status == UNSUPPORTED else "red"
            table.add_row(result.name, "-", "-", *("-" for _ in PERCENTILES),
                          _fmt(result.threshold) if result.threshold else "-",
                          f"[{style}]{result.status}[/{style}]")
            continue
        data = result.throughput()
        if result.below_threshold:
            verdict = "[red]below[/red]"
        elif result.threshold and data:
            verdict = "[green]ok[/green]"
        else:
            verdict = "ok" if data else "[yellow]no samples[/yellow]"
        table.add_row(
            result.name,
            str(result.measured_pods),
            _fmt(data.get("Average")),
            *(_fmt(data.get(f"Perc{p}")) for p in PERCENTILES),
            _fmt(result.threshold) if result.threshold else "-",
            verdict,
        )
    console = Console(file=out, width=None if out.isatty() else 200)
    console.print(table)
    for result in results:
        lines: list[tuple[str, str]] = []  # (style, text)
        if not result.ran:
            lines.append(("yellow" if result.status == UNSUPPORTED else "red", _reason(result)))
        if result.below_threshold:
            lines.append(("red", f"Average {_fmt(result.average)} pods/s is below the threshold "
                                 f"{_fmt(result.threshold)}"))
        lines += [("dim", note) for note in result.notes]
        if result.feature_gates and result.ran:
            gates = ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(result.feature_gates.items()))
            lines.append(("dim", f"featureGates {gates} (applied)"))
        for style, text in lines:
            console.print(f"[{style}]{_escape(result.name)}: {_escape(text)}[/{style}]", highlight=False)


def _reason(result: WorkloadResult) -> str:
    if result.status == UNSUPPORTED and result.reason.startswith("unsupported"):
        return result.reason
    return f"{result.status}: {result.reason}"


def _escape(text: str) -> str:
    return escape(text)


#: perf_command's exit codes.
EXIT_OK, EXIT_NOTHING_RAN, EXIT_INVALID = 0, 1, 2


def perf_command(config: str | Path, test: str | None = None, workload: str | None = None,
                 output: str = "table", features: FeatureGates | None = None) -> int:
    """What ``kubesched perf CONFIG [--test NAME] [--workload NAME] [-o table|json]`` does;
    returns the exit code.

    Prints the results (``table`` or upstream's DataItems ``json``) on stdout;
    a bad config file, field or name is one line on stderr and exit code 2;
    exit code 1 when no selected workload ran (all unsupported or failed),
    else 0 (a throughput below the threshold is shown, not an error).  While
    workloads run, their status is shown on stderr: a live line on a terminal,
    a line every few seconds elsewhere (:class:`~kubesched.cli.progress.Reporter`).
    ``features``: the command line's feature gates (each workload's featureGates apply under them)."""
    if output not in ("table", "json"):
        print(f"unknown output {output!r} (use table or json)", file=sys.stderr)
        return EXIT_INVALID
    try:
        with Reporter("perf") as progress:
            results = run(config, test=test, workload=workload, progress=progress.status, features=features)
    except PerfConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    render(results, output)
    return EXIT_OK if any(r.ran for r in results) else EXIT_NOTHING_RAN
