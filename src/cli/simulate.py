"""``kubesched simulate``: schedule manifests on the embedded cluster until nothing more can happen,
and print the placements, the pending pods' reasons and the preemptions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from kubesched.analysis.html_page import html_report
from kubesched.core.api.manifests import InvalidManifest, write_json_list, write_yaml
from kubesched.core.framework.config import ConfigError, parse_duration
from kubesched.core.framework.registry import PluginError
from kubesched.core.observability.decision_log import DecisionLog, read_decisions
from kubesched.drivers.simulation import DEFAULT_START, Simulation, parse_start_time

from .common import (
    EMULATED_VERSION_HELP,
    FEATURE_GATES_HELP,
    Output,
    configuration,
    feature_gates,
    print_feature_notes,
    refuse,
    timed_changes,
)
from .progress import Reporter

if TYPE_CHECKING:
    from rich.console import Console


def simulate(
    filename: List[Path] = typer.Option(..., "-f", "--filename", help="Manifest file or directory (repeatable)."),
    config: Optional[str] = typer.Option(
        None, "--config", metavar="FILE[:PROFILE]",
        help="KubeSchedulerConfiguration file; FILE:PROFILE runs that profile of FILE as the default scheduler."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table, or the final state as yaml/json."),
    start_time: Optional[str] = typer.Option(None, "--start-time", help="Simulated start, RFC 3339."),
    until: Optional[str] = typer.Option(None, "--until", help="Run this long in simulated time (90s, 5m, 1h30m)."),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking between equal nodes and generated names."),
    html: Optional[Path] = typer.Option(
        None, "--html", help="Also write a self-contained HTML report here: summary, a page per pod (why it is "
                             "where it is), devices, timeline."),
    record: Optional[Path] = typer.Option(
        None, "--record", help="Write the record of every scheduling attempt here (JSON Lines; "
                               "`kubesched explain POD --from FILE` reads it)."),
    at: List[str] = typer.Option(
        [], "--at", metavar="OFFSET=FILE",
        help="At simulated time --start-time + OFFSET (90s, 5m, 1h30m) create the objects in FILE, or replace "
             "the stored ones of the same name (metadata, spec, status; uid kept; status fields the file "
             "leaves out keep their values). Repeatable."),
    delete_at: List[str] = typer.Option(
        [], "--delete-at", metavar="OFFSET=FILE",
        help="At simulated time --start-time + OFFSET delete the objects FILE names (missing ones are skipped). "
             "Repeatable."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...", help=FEATURE_GATES_HELP),
    emulated_version: Optional[str] = typer.Option(None, "--emulated-version", metavar="1.MINOR",
                                                   help=EMULATED_VERSION_HELP),
) -> None:
    """Schedule the objects in PATHs on the embedded cluster until nothing more can happen."""
    try:
        start = parse_start_time(start_time) if start_time else DEFAULT_START
    except ValueError as err:
        refuse(f"--start-time: {err}")
    features = feature_gates(emulated_version, gates)
    try:
        horizon = parse_duration(until, "--until") if until else None
        decisions = _decision_log(record)
        if decisions is None and html is not None:
            decisions = DecisionLog()  # the report's pod pages need the records: kept in memory
        with Reporter("simulate") as reporter:
            def progress(phase: str, done: int, total: int) -> None:
                what = {"reading": "objects read", "creating": "objects created"}.get(phase, "scheduling attempts")
                reporter.update(done, total or None, f"simulate: {what}")

            with configuration(config) as config_path:
                sim = Simulation.from_paths(filename, config=config_path, start=start, seed=seed,
                                            decisions=decisions, progress=progress, features=features)
            for change in timed_changes(at, delete_at):
                sim.change_at(change.offset, [change.file], delete=change.delete)
            sim.run(until=start + horizon if horizon is not None else None, progress=progress)
    except (InvalidManifest, ConfigError, PluginError) as err:
        refuse(str(err))
    print_feature_notes(features)
    if decisions is not None:
        decisions.close()
    if html is not None:
        records = decisions.records if decisions is not None and decisions.path is None else (
            list(read_decisions(record)) if record is not None else [])
        html.write_text(html_report(sim, records, title=f"kubesched simulate {' '.join(str(f) for f in filename)}"))
    if output is Output.yaml:
        write_yaml(sim.cluster.objects(), sys.stdout)
    elif output is Output.json:
        write_json_list(sim.cluster.objects(), sys.stdout)
    else:
        _print_placements(sim)


def _decision_log(path: Optional[Path]) -> DecisionLog | None:
    if path is None:
        return None
    try:
        return DecisionLog(path)
    except OSError as err:
        refuse(f"--record: {path}: {err.strerror}")
        raise  # not reached: _refuse exits


#: Rows of the placements table at most; the rest are counted (-o yaml/json lists every object).
TABLE_ROWS = 1000


def _print_placements(sim: Simulation) -> None:
    from rich.console import Console  # here: -o json and -o yaml print no table

    from .tables import print_table

    console = Console()
    rows: list[tuple[str, str, str, str]] = []
    bound = pending = 0
    for pod in sim.pods():
        if bound + pending >= TABLE_ROWS:
            bound, pending = bound + bool(pod.spec.node_name), pending + (not pod.spec.node_name)
            continue
        if pod.spec.node_name:
            bound += 1
            rows.append((pod.key, str(pod.spec.priority or 0), pod.spec.node_name, "Scheduled"))
            continue
        pending += 1
        condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
        queued = sim.scheduler.queued(pod)
        if condition is not None:
            reason = f"{condition.reason}: {condition.message}"
        elif queued is not None and queued.gating_status is not None:
            reason = f"Gated by {queued.gating_plugin}: {queued.gating_status.message()}"
        else:
            reason = "Pending"
        rows.append((pod.key, str(pod.spec.priority or 0), "-", reason))
    print_table(console, "Placements", ("POD", "PRIORITY", "NODE", "STATUS"), rows)
    if bound + pending > TABLE_ROWS:
        console.print(f"(the first {TABLE_ROWS} of {bound + pending} pods; -o yaml or -o json lists them all)")
    _print_preemptions(sim, console)
    console.print(
        f"{bound} pod(s) scheduled, {pending} pending, {sim.scheduler.cache_sizes()['nodes']} node(s); "
        f"{sim.scheduler.stats.cycles} scheduling attempt(s), {sim.clock.now() - sim.start_time:g}s simulated",
        soft_wrap=True,
    )


def _print_preemptions(sim: Simulation, console: Console) -> None:
    """The Preempted events (victim, the preemptor by name, upstream's message), if any."""
    preemptions = sim.preemptions()
    if not preemptions:
        return
    from .tables import print_table

    print_table(console, "Preemptions (Preempted events)", ("TIME", "VICTIM", "PREEMPTOR", "MESSAGE"),
                [(f"+{preemption.time:g}s", preemption.victim, preemption.preemptor or "-", preemption.message)
                 for preemption in preemptions])
