"""``kubesched compare``: the same manifests, scheduler_perf workload or trace under two
configurations, printed side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.analysis.compare import MAX_DIFFERENCES_SHOWN, compare_replays, run_manifests, run_trace, run_workload
from kubesched.analysis.compare import compare as compare_runs
from kubesched.core.api.manifests import InvalidManifest, load_sourced_objects
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.perf.errors import PerfConfigError, Unsupported, WorkloadFailed

from .common import EMULATED_VERSION_HELP, FEATURE_GATES_HELP, Output, emit, feature_gates, print_feature_notes, refuse


def compare(
    config: List[str] = typer.Option([], "--config", metavar="FILE[:PROFILE]",
                                     help="KubeSchedulerConfiguration of side a, then of side b (two; one: both "
                                          "sides; none: the default profile); :PROFILE runs that profile of FILE "
                                          "as the default scheduler."),
    filename: List[Path] = typer.Option([], "-f", "--filename", help="Manifests to simulate (file or directory)."),
    perf_workload: Optional[str] = typer.Option(
        None, "--perf", metavar="FILE:TEST/WORKLOAD", help="A scheduler_perf workload instead of manifests."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="A converted trace (kubesched trace alibaba-openb) "
                                                               "to replay instead of manifests."),
    seed: int = typer.Option(0, "--seed", help="Seed of both runs."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json."),
    emulated_version: List[str] = typer.Option(
        [], "--emulated-version", metavar="1.MINOR",
        help=EMULATED_VERSION_HELP + " Twice: side a's release, then side b's (what an upgrade moves)."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...",
                                    help=FEATURE_GATES_HELP + " Both sides."),
) -> None:
    """Run the same input with two configurations or two releases: placements that differ,
    pending pods, per-node utilisation, fragmentation and the feature gates that differ side by side."""
    if len(config) > 2 or len(emulated_version) > 2 or 2 not in (len(config), len(emulated_version)):
        refuse(f"compare: give --config or --emulated-version twice, side a then side b "
               f"(got {len(config)} --config, {len(emulated_version)} --emulated-version)")
    if [bool(filename), perf_workload is not None, trace is not None].count(True) != 1:
        refuse("compare: give either -f DIR, --perf FILE:TEST/WORKLOAD or --trace DIR")
    if trace is not None and seed != 0:
        refuse("compare: --seed does not apply to --trace (a converted trace carries its seed)")
    if trace is not None and (emulated_version or gates or len(config) != 2):
        refuse("compare: --trace compares two --config files at the newest release "
               "(--emulated-version and --feature-gates do not apply to a replay)")
    configs = _both_sides(config)
    versions = _both_sides(emulated_version)
    features = [feature_gates(version, gates) for version in versions]
    labels = [(side or "default profile") + (f" @ {version}" if len(emulated_version) == 2 else "")
              for side, version in zip(configs, versions)]
    try:
        if trace is not None:
            replays = [run_trace(trace, side) for side in config]
            emit(compare_replays(*replays), output, render_replays)
            return
        if perf_workload is not None:
            file, _, name = perf_workload.rpartition(":")
            test, _, workload = name.partition("/")
            if not file or not test or not workload:
                refuse(f"--perf: expected FILE:TEST/WORKLOAD, got {perf_workload!r}")
            sides = [run_workload(Path(file), test, workload, side, seed, gates_, label)
                     for side, gates_, label in zip(configs, features, labels)]
        else:
            sourced = load_sourced_objects(filename)  # read and parsed once, for both sides
            sides = [run_manifests(sourced, side, seed, gates_, label)
                     for side, gates_, label in zip(configs, features, labels)]
    except (InvalidManifest, ConfigError, PluginError, PerfConfigError, Unsupported, WorkloadFailed,
            ValueError) as err:
        refuse(str(err))
    for gates_ in features:
        print_feature_notes(gates_)
    result = compare_runs(*sides)
    emit(result, output, render)


def _both_sides(values: list[str]) -> list[str | None]:
    """An option given twice (side a, side b), once (both sides) or not at all (None on both)."""
    return [values[0], values[-1]] if values else [None, None]


def render_replays(result: dict[str, Any], console: Console) -> None:
    """Print a :func:`compare_replays` answer as rich tables."""
    a, b = result["sides"]["a"], result["sides"]["b"]
    summary = Table(title=f"Replay of {result['trace']}")
    for column in ("", f"a: {a['config']}", f"b: {b['config']}"):
        summary.add_column(column)
    for label, key in (("pods", "pods"), ("placed", "bound"), ("failed", "failed"),
                       ("GPU allocation (% of GPU compute)", "gpuAllocationRatio"),
                       ("fragmented GPU compute (%)", "fragmentationPercent"), ("wall time (s)", "wallSeconds")):
        summary.add_row(label, str(a[key]), str(b[key]))
    console.print(summary)
    table = Table(title=f"{result['nodesDiffering']} node(s) with a different GPU utilisation at "
                        f"{result['gpuUtilisationAt']} % arrival, the last sample of a replay to "
                        f"{result['arrivedPercent']} % (first {MAX_DIFFERENCES_SHOWN})")
    for column in ("NODE", "GPU % (a)", "GPU % (b)"):
        table.add_column(column)
    for row in result["nodes"][:min(result["nodesDiffering"], MAX_DIFFERENCES_SHOWN)]:
        table.add_row(row["node"], str(row["a"]), str(row["b"]))
    console.print(table)


def render(result: dict[str, Any], console: Console) -> None:
    """Print a :func:`compare` answer as rich tables."""
    a, b = result["sides"]["a"], result["sides"]["b"]
    summary = Table(title="Outcome")
    for column in ("", f"a: {a['config']}", f"b: {b['config']}"):
        summary.add_column(column)
    summary.add_row("pods bound", str(a["bound"]), str(b["bound"]))
    summary.add_row("pods pending", str(a["pending"]), str(b["pending"]))
    summary.add_row("nodes in use", f"{a['nodesInUse']} of {a['nodes']}", f"{b['nodesInUse']} of {b['nodes']}")
    for resource in result["resources"]:
        summary.add_row(f"free {resource} stranded on partly used nodes",
                        _cell(a["strandedFreePercent"][resource]), _cell(b["strandedFreePercent"][resource]))
    console.print(summary)
    moved = result["moved"]
    table = Table(title=f"{len(moved)} pod(s) placed differently"
                        + (f" (first {MAX_DIFFERENCES_SHOWN})" if len(moved) > MAX_DIFFERENCES_SHOWN else ""))
    for column in ("POD", "NODE (a)", "NODE (b)"):
        table.add_column(column)
    for row in moved[:MAX_DIFFERENCES_SHOWN]:
        table.add_row(row["pod"], row["a"] or "(pending)", row["b"] or "(pending)")
    console.print(table)
    nodes = Table(title="Per node: pods, % of each resource requested (a | b)")
    nodes.add_column("NODE")
    nodes.add_column("PODS", justify="right")
    for resource in result["resources"]:
        nodes.add_column(resource, justify="right")
    for row in result["nodes"]:
        cells = [f"{_pods(row['a'])} | {_pods(row['b'])}"]
        for resource in result["resources"]:
            cells.append(f"{_cell(_get(row['a'], resource))} | {_cell(_get(row['b'], resource))}")
        nodes.add_row(row["node"], *cells)
    console.print(nodes)
    if result["gates"]:
        changed = Table(title=f"{len(result['gates'])} feature gate(s) that differ")
        for column in ("GATE", "a", "b"):
            changed.add_column(column)
        for row in result["gates"]:
            changed.add_row(row["gate"], _gate(row["a"]), _gate(row["b"]))
        console.print(changed)


def _gate(value: bool | None) -> str:
    return "(not in this release)" if value is None else str(value).lower()


def _get(side: dict[str, Any] | None, key: str) -> Any:
    return None if side is None else side.get(key)


def _pods(side: dict[str, Any] | None) -> str:
    return "-" if side is None else str(side["pods"])


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}%"
