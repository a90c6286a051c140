"""``kubesched plan``: the nodes to add so every pending pod and gang fits, or (``--scale-down``) the nodes that can go.

The answer is a table (templates x count and cost, where each pending pod or
gang would land, what still cannot fit and why) or JSON (``-o json``); see
:mod:`kubesched.plan` for the method.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.core.api.manifests import InvalidManifest, load_sourced_objects
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.plan.expanders import EXPANDERS
from kubesched.plan.scale_down import plan_scale_down
from kubesched.plan.scale_up import landing_rows, node_counts, plan_scale_up
from kubesched.plan.templates import TEMPLATE_ANNOTATION, split_templates
from kubesched.sim import Simulator

from .common import (
    EMULATED_VERSION_HELP,
    FEATURE_GATES_HELP,
    Output,
    configuration,
    emit,
    feature_gates,
    print_feature_notes,
    refuse,
)

Expander = enum.Enum("Expander", {name.replace("-", "_"): name for name in EXPANDERS}, type=str)  # type: ignore[misc]


class Mode(str, enum.Enum):
    """``--mode``: cluster-autoscaler's greedy rounds, or the rollout search (kubesched.plan.scale_up)."""

    greedy = "greedy"
    search = "search"


def plan(
    filename: List[Path] = typer.Option(
        ..., "-f", "--filename",
        help=f"Manifests or a `kubesched snapshot` directory (repeatable); Nodes annotated {TEMPLATE_ANNOTATION}: "
             "\"true\" are the templates of nodes to add."),
    expander: Expander = typer.Option("least-waste", "--expander",
                                      help="Which template each round adds, as cluster-autoscaler's --expander."),
    mode: Mode = typer.Option(Mode.greedy, "--mode", help="greedy: cluster-autoscaler's rounds; search: try each "
                                                             "template first and finish greedily, keep the cheapest."),
    scale_down: bool = typer.Option(False, "--scale-down", help="Which nodes can be removed with every pod "
                                                                 "still fitting (PodDisruptionBudgets respected)."),
    threshold: float = typer.Option(0.5, "--utilization-threshold", min=0.0, max=1.0,
                                    help="--scale-down: nodes whose pods request less than this share of CPU "
                                         "and memory are candidates (cluster-autoscaler's default 0.5)."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table, json or yaml."),
    config: Optional[str] = typer.Option(None, "--config", metavar="FILE[:PROFILE]",
                                         help="KubeSchedulerConfiguration file (FILE:PROFILE as simulate)."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...", help=FEATURE_GATES_HELP),
    emulated_version: Optional[str] = typer.Option(None, "--emulated-version", metavar="1.MINOR",
                                                   help=EMULATED_VERSION_HELP),
) -> None:
    """Plan capacity: the nodes to add so that every pending pod and gang fits, at the lowest cost, through
    kube-scheduler's own decisions; or with --scale-down the nodes that can go."""
    features = feature_gates(emulated_version, gates)
    try:
        templates, objects = split_templates(load_sourced_objects(filename))
        if not templates and not scale_down:
            refuse(f"{', '.join(map(str, filename))}: no Node annotated {TEMPLATE_ANNOTATION}: \"true\": "
                   "nothing to add (or pass --scale-down)")
        with configuration(config) as config_path:
            sim = Simulator.from_manifests(objects, config=config_path, feature_gates=features.overrides,
                                           emulated_version=emulated_version)
        print_feature_notes(sim.simulation.features)
        if scale_down:
            emit(plan_scale_down(sim, threshold).as_dict(), output, _render_scale_down)
        else:
            answer = plan_scale_up(sim, templates, expander.value, search=mode is Mode.search).as_dict()
            emit({"mode": mode.value, "expander": expander.value, **answer}, output, _render_scale_up)
    except (InvalidManifest, ConfigError, PluginError) as err:
        refuse(str(err))


def _render_scale_up(answer: dict, console: Console) -> None:
    table = Table(title="Nodes to add")
    for column in ("template", "count", "cost/hour each", "cost/hour"):
        table.add_column(column, justify="left" if column == "template" else "right")
    for row in answer["add"]:
        table.add_row(row["template"], str(row["count"]), f"{row['costPerHourEach']:.2f}", f"{row['costPerHour']:.2f}")
    table.add_row("total", str(answer["nodes"]), "", f"{answer['costPerHour']:.2f}", style="bold")
    console.print(table)
    landing = Table(title="Where the pending pods land")
    landing.add_column("pods")
    landing.add_column("nodes")
    for what, nodes in landing_rows(answer):
        landing.add_row(what, nodes)
    console.print(landing)
    if answer["unplaced"]:
        still = Table(title="Still pending")
        for column in ("pod", "on", "why (kube-scheduler's words)"):
            still.add_column(column)
        for item in answer["unplaced"]:
            still.add_row(item["pod"], "the planned cluster", item["message"])
            for template, why in item["templates"].items():
                still.add_row("", f"a new {template}", why or "fits (alone; its gang or max-count is in the way)")
        console.print(still)
    console.print(f"{answer['mode']} plan, expander {answer['expander']}: {answer['nodes']} node(s) to add, "
                  f"{answer['costPerHour']:.2f}/hour; {len(answer['unplaced'])} pod(s) still pending")


def _render_scale_down(answer: dict, console: Console) -> None:
    table = Table(title="Nodes to remove")
    for column in ("node", "utilization", "pods moved", "where they go"):
        table.add_column(column)
    for row in answer["remove"]:
        table.add_row(row["node"], f"{row['utilization']:.0%}", str(len(row["moved"])),
                      node_counts(list(row["destinations"].values())) or "-")
    console.print(table)
    kept = Table(title="Nodes kept")
    kept.add_column("node")
    kept.add_column("why")
    for node, why in answer["keep"].items():
        kept.add_row(node, why)
    console.print(kept)
    console.print(f"{len(answer['remove'])} node(s) can be removed, {len(answer['keep'])} kept")
