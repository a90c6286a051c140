"""``kubesched trace ...``: convert a production trace and replay it.

- ``kubesched trace alibaba-openb --nodes CSV --pods CSV [--seed N] [--arrival 1.3] [--rng python|go] -o DIR``
  writes the trace as manifests (:mod:`kubesched.trace.openb`); ``--rng go``
  draws the arrival order (and the replay's node ranking) from Go's
  math/rand exactly as the FGD paper's simulator does, so a seed gives the
  paper's run of that seed; with ``--replay`` it is replayed right away
  (``--config``, ``--format``);
- ``kubesched trace replay DIR --config FILE [-o table|json|csv] [--durations [--interval 60s]]``
  replays a converted trace (:mod:`kubesched.trace.replay`) with the generator
  it was converted with; ``--durations`` lets pods end after their run time
  (the simulated kubelet's path).

Invalid input exits with status 2 and one line naming the file and the problem.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.clock import go_duration
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.trace.openb import TraceError, convert
from kubesched.trace.replay import ReplayResult, replay

from .progress import Reporter

INVALID_INPUT = 2

trace_app = typer.Typer(help="Convert production traces to manifests and replay them.", no_args_is_help=True)


class Format(str, enum.Enum):
    """``trace replay -o`` / ``trace alibaba-openb --replay --format``: a table, one JSON object, or CSV of the
    curves."""

    table = "table"
    json = "json"
    csv = "csv"


class TieBreak(str, enum.Enum):
    """``--tie-break``: "ranked" (a seeded node priority, as the FGD paper's simulator) or "random" (upstream's
    random pick among the best-scored nodes)."""

    ranked = "ranked"
    random = "random"


class Rng(str, enum.Enum):
    """:data:`kubesched.trace.openb.RNGS`."""

    python = "python"
    go = "go"


def _refuse(message: str) -> None:
    typer.echo(message, err=True)
    raise typer.Exit(INVALID_INPUT)


@trace_app.command("alibaba-openb")
def alibaba_openb(
    nodes: Path = typer.Option(..., "--nodes", help="Node list CSV (sn, cpu_milli, memory_mib, gpu, model)."),
    pods: Path = typer.Option(..., "--pods", help="Pod list CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, ...)."),
    out: Path = typer.Option(..., "-o", "--out", help="Directory to write the manifests to."),
    seed: int = typer.Option(42, "--seed", help="Seed of the arrival order (shuffle and padding)."),
    arrival: float = typer.Option(1.3, "--arrival", help="GPU demand to arrive, as a multiple of the cluster's GPUs (0: as is)."),
    do_replay: bool = typer.Option(False, "--replay", help="Replay the converted trace right away."),
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration for --replay."),
    output: Format = typer.Option(Format.table, "--format", help="--replay output: table, json or csv."),
    tie_break: TieBreak = typer.Option(TieBreak.ranked, "--tie-break", help="--replay: ties between nodes (see trace replay)."),
    rng: Rng = typer.Option(
        Rng.python, "--rng",
        help="Generator of the arrival order and node ranking: 'python' (Mersenne Twister) or 'go' (Go's math/rand, "
             "drawn as the FGD paper's simulator draws: a seed gives the paper's run of that seed)."),
) -> None:
    """Convert Alibaba's GPU trace (cluster-trace-gpu-v2023, "openb") into Nodes,
    ResourceSlices and pods with ResourceClaims, in the FGD paper's arrival order."""
    try:
        info = convert(nodes, pods, out, seed=seed, arrival=arrival, rng=rng.value)
    except TraceError as err:
        _refuse(str(err))
    except ValueError as err:
        _refuse(f"--seed: {err}")
    typer.echo(f"{out}: {info['pods']} pods asking for {int(info['gpu-demand-milli']) / 1000:g} GPUs "
               f"on {int(info['gpu-capacity-milli']) // 1000} GPUs (seed {seed}, arrival {arrival:g}, rng {rng.value})",
               err=True)
    if do_replay:
        _replay_and_print(out, config, output, None, tie_break, None)


@trace_app.command("replay")
def replay_command(
    trace: Path = typer.Argument(..., help="A directory written by kubesched trace alibaba-openb."),
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration file."),
    output: Format = typer.Option(Format.table, "-o", "--output", help="table, json (one object) or csv (the curves)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Replay only the first N pods."),
    tie_break: TieBreak = typer.Option(
        TieBreak.ranked, "--tie-break",
        help="Equally scored nodes: 'ranked' (a seeded node priority, as the paper's simulator) or 'random' (upstream)."),
    save: Optional[Path] = typer.Option(None, "--save", help="Also write the JSON result to this file."),
    durations: bool = typer.Option(
        False, "--durations",
        help="Pods leave: they arrive --interval apart and the simulated kubelet ends each after its "
             "kubesched.io/run-duration (the trace's run time). Default: the paper's protocol, no pod leaves."),
    interval: str = typer.Option("60s", "--interval", help="With --durations: simulated time between arrivals "
                                                           "(a Go duration)."),
) -> None:
    """Replay a converted trace: pods arrive one at a time, each is tried once;
    GPU allocation and fragmentation are recorded as arrival grows."""
    try:
        seconds = go_duration(interval)
    except ValueError as err:
        _refuse(f"--interval: {err}")
    _replay_and_print(trace, config, output, limit, tie_break, save, seconds if durations else None)


def _replay_and_print(trace: Path, config: Path | None, output: Format, limit: int | None, tie_break: TieBreak,
                      save: Path | None, interval: float | None = None) -> None:
    try:
        with Reporter("trace replay", unit="pods") as progress:
            result = replay(trace, config, limit=limit, tie_break=tie_break.value, progress=progress.update,
                            durations=interval is not None, interval=interval or 60.0)
    except (InvalidManifest, ConfigError, PluginError, ValueError) as err:
        _refuse(str(err) if config is None or str(err).startswith(str(config)) or isinstance(err, InvalidManifest)
                else f"{config}: {err}")
    if save is not None:
        save.write_text(json.dumps(result.to_json()) + "\n")
    if output is Format.json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    elif output is Format.csv:
        sys.stdout.write(curves_csv(result))
    else:
        _print_table(result)


def curves_csv(result: ReplayResult) -> str:
    """``arrived_pct,allocated_pct,fragmented_pct`` per whole percent of arrived demand."""
    fragmented = dict((point, value) for point, value in result.fragmentation)
    lines = ["arrived_pct,allocated_pct,fragmented_pct"]
    lines += [f"{point},{value},{fragmented.get(point, '')}" for point, value in result.curve]
    return "\n".join(lines) + "\n"


def _print_table(result: ReplayResult) -> None:
    console = Console()
    fragmented = dict((point, value) for point, value in result.fragmentation)
    table = Table(title=f"Replay of {result.trace} with {result.config}")
    for column in ("ARRIVED %", "ALLOCATED %", "FRAGMENTED %"):
        table.add_column(column, justify="right")
    for point, value in result.curve:
        if point % 10 == 0 or point == result.curve[-1][0]:
            table.add_row(str(point), f"{value:.2f}", f"{fragmented.get(point, float('nan')):.2f}")
    console.print(table)
    console.print(
        f"seed {result.seed} ({result.rng} rng), arrival {result.arrival:g}: {result.pods} pod(s) arrived, {result.bound} scheduled, "
        f"{result.failed} failed{_departures(result)}; GPU allocation {result.gpu_allocation_ratio:.2f} % of {result.gpus} GPUs; "
        f"{result.wall_seconds:g}s", soft_wrap=True)


def _departures(result: ReplayResult) -> str:
    return "" if result.interval is None else f", {result.finished} ended (arrivals {result.interval:g}s apart)"
