"""``kubesched plan``: the nodes to add so every pending pod and gang fits, or (``--scale-down``) the nodes that can go.

The answer is a table (templates x count and cost, where each pending pod or
gang would land, what still cannot fit and why) or JSON (``-o json``); see
:mod:`kubesched.plan` for the method.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.core.api.manifests import InvalidManifest, load_sourced_objects
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.plan.expanders import EXPANDERS
from kubesched.plan.scale_down import ScaleDown, plan_scale_down
from kubesched.plan.scale_up import ScaleUp, plan_scale_up
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
            emit(scale_down_answer(plan_scale_down(sim, threshold)), output, _render_scale_down)
        else:
            answer = scale_up_answer(plan_scale_up(sim, templates, expander.value, search=mode is Mode.search))
            emit({"mode": mode.value, "expander": expander.value, **answer}, output, _render_scale_up)
    except (InvalidManifest, ConfigError, PluginError) as err:
        refuse(str(err))


def scale_up_answer(result: ScaleUp) -> dict[str, Any]:
    """A scale-up plan as plain data (the JSON ``-o json`` prints)."""
    costs = {step.template.name: step.template.cost_per_hour for step in result.steps}
    return {
        "add": [{"template": name, "count": count, "costPerHourEach": costs[name],
                 "costPerHour": round(count * costs[name], 6)} for name, count in result.added.items()],
        "nodes": sum(result.added.values()),
        "costPerHour": round(result.cost_per_hour, 6),
        "steps": [{"template": s.template.name, "count": s.count, "pods": list(s.pods)} for s in result.steps],
        "placements": dict(result.placements),
        "groups": {group: list(pods) for group, pods in result.groups.items()},
        "owners": {pod: owner for pod, owner in result.owners.items() if owner},
        "unplaced": [{"pod": u.pod, "group": u.group, "message": u.message, "templates": dict(u.templates)}
                     for u in result.unplaced],
    }


def scale_down_answer(result: ScaleDown) -> dict[str, Any]:
    """A scale-down plan as plain data (the JSON ``-o json`` prints)."""
    return {
        "remove": [{"node": r.node, "utilization": round(r.utilization, 4), "moved": list(r.moved),
                    "destinations": dict(r.destinations)} for r in result.removed],
        "keep": dict(result.kept),
    }


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
    for what, nodes in _landing_rows(answer):
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


def _landing_rows(answer: dict) -> list[tuple[str, str]]:
    """One row per gang, then per controller (a ReplicaSet's pods), then per pod."""
    rows = []
    grouped = {pod for pods in answer["groups"].values() for pod in pods}
    for group, pods in answer["groups"].items():
        rows.append((f"podgroup/{group} ({len(pods)} pods)", _nodes([answer["placements"][p] for p in pods])))
    workloads: dict[str, list[str]] = {}
    for pod in answer["placements"]:
        if pod not in grouped:
            owner = answer["owners"].get(pod)
            kind, _, name = (owner or "").partition("/")
            workloads.setdefault(f"{kind} {pod.split('/')[0]}/{name}" if owner else pod, []).append(pod)
    for owner, pods in workloads.items():
        label = pods[0] if owner == pods[0] else f"{owner} ({len(pods)} pods)"
        rows.append((label, _nodes([answer["placements"][p] for p in pods])))
    return rows


def _nodes(nodes: list[str]) -> str:
    counts: dict[str, int] = {}
    for node in sorted(nodes, key=lambda n: (not n, n)):
        counts[node or "(pending)"] = counts.get(node or "(pending)", 0) + 1
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts.items())


def _render_scale_down(answer: dict, console: Console) -> None:
    table = Table(title="Nodes to remove")
    for column in ("node", "utilization", "pods moved", "where they go"):
        table.add_column(column)
    for row in answer["remove"]:
        table.add_row(row["node"], f"{row['utilization']:.0%}", str(len(row["moved"])),
                      _nodes(list(row["destinations"].values())) or "-")
    console.print(table)
    kept = Table(title="Nodes kept")
    kept.add_column("node")
    kept.add_column("why")
    for node, why in answer["keep"].items():
        kept.add_row(node, why)
    console.print(kept)
    console.print(f"{len(answer['remove'])} node(s) can be removed, {len(answer['keep'])} kept")
