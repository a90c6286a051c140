"""``kubesched sweep``: every cell of an experiment grid not already done, locally or on Ray, with a progress bar."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.framework.config import ConfigError

from .common import refuse
from .progress import Reporter


def sweep(
    spec: Path = typer.Argument(..., help="The sweep file (traces, configs, seeds, arrivals, record)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Results directory (default: NAME-results "
                                                                 "beside the sweep file)."),
    engine: str = typer.Option("local", "--engine", help="local (a process pool) or ray."),
    workers: int = typer.Option(0, "--workers", help="Local processes (default: the core count)."),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: the cluster "
                                                                  "(ray start --head prints it)."),
    rerun: bool = typer.Option(False, "--rerun", help="Compute every cell again, even those already done."),
    export: Optional[str] = typer.Option(None, "--export", help="Also write the table as csv or json."),
) -> None:
    """Run every cell of a sweep (trace x config x seed x arrival) not already
    done; one row per run in NAME.parquet in the results directory."""


    try:
        from kubesched.sweep.engines import ENGINES
        from kubesched.sweep.results import EXPORTS
        from kubesched.sweep.runner import run_sweep
        from kubesched.sweep.spec import SweepError, load_spec
    except ImportError as err:
        refuse(f"kubesched sweep needs pyarrow ({err.name} is missing): pip install 'kubesched[sweep]'")

    if engine not in ENGINES:
        refuse(f"--engine: one of {', '.join(ENGINES)}, got {engine!r}")
    if export is not None and export not in EXPORTS:
        refuse(f"--export: one of {', '.join(EXPORTS)}, got {export!r}")
    if workers < 0:
        refuse(f"--workers: zero (the core count) or more, got {workers}")
    if engine == "ray" and workers:
        refuse("--workers: the local engine's; with --engine ray the Ray cluster's CPUs decide")
    if engine == "local" and address is not None:
        refuse("--address: the Ray cluster's; give --engine ray with it")
    try:
        loaded = load_spec(spec)
    except SweepError as err:
        refuse(str(err))
    directory = out or spec.parent / f"{loaded.name}-results"
    with Reporter(loaded.name, unit="cells") as reporter:

        def progress(done: int, total: int, cell) -> None:
            reporter.update(done, total, f"{loaded.name}: {cell.id}" if cell is not None else loaded.name)

        try:
            outcome = run_sweep(loaded, directory, engine=engine, workers=workers or os.cpu_count() or 1,
                                address=address, rerun=rerun, export=export, progress=progress)
        except KeyboardInterrupt:
            typer.echo("interrupted: the finished cells are kept; run the same command to go on", err=True)
            raise typer.Exit(130) from None
        except (OSError, RuntimeError, ConfigError, InvalidManifest, ValueError) as err:
            refuse(f"sweep: {err}")
    typer.echo(f"{len(outcome.computed)} cell(s) computed, {len(outcome.skipped)} already done")
    for path in outcome.files:
        typer.echo(str(path))
