"""Results of a perf run and their two outputs: a rich table and upstream's DataItems JSON.

``-o json`` prints exactly what scheduler_perf writes for perf-dash::

    {"version": "v1", "dataItems": [{"data": {"Average": ..., "Perc50": ..., ...},
                                     "unit": "pods/s",
                                     "labels": {"Metric": "SchedulingThroughput",
                                                "Name": "TEST/WORKLOAD"}}]}

Workloads that did not run (an unsupported op, an error) have no data item;
they are listed on stderr so that stdout stays valid JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, TextIO

import attrs

from .throughput import PERCENTILES

#: WorkloadResult.status values.
OK = "ok"                    # ran; data items collected
UNSUPPORTED = "unsupported"  # skipped before running: needs something kubesched does not do yet
FAILED = "failed"            # started but could not finish (pods never scheduled, a bad template ...)

OUTPUTS = ("table", "json")


@attrs.define
class DataItem:
    """One upstream DataItem: ``data`` (bucket -> value), ``unit``, ``labels``."""

    data: dict[str, float]
    unit: str
    labels: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"data": dict(self.data), "unit": self.unit, "labels": dict(self.labels)}


@attrs.define
class WorkloadResult:
    """What one workload gave.

    ``name`` is ``TEST/WORKLOAD``; ``status`` is ``ok``, ``unsupported`` or
    ``failed`` with ``reason``; ``data_items`` the SchedulingThroughput items
    (pods/s); ``threshold`` the workload's minimum Average (pods/s, 0 = none);
    ``samples`` the per-second throughput samples; ``measured_pods`` the pods
    scheduled while measuring; ``duration`` the wall seconds the workload took;
    ``feature_gates`` the gates the config sets (accepted and reported,
    kubesched has no such switches); ``labels`` the test case's and workload's."""

    test: str
    workload: str
    status: str = OK
    reason: str = ""
    data_items: list[DataItem] = attrs.field(factory=list)
    threshold: float = 0.0
    threshold_metric: str = "SchedulingThroughput"
    samples: list[float] = attrs.field(factory=list)
    measured_pods: int = 0
    duration: float = 0.0
    feature_gates: dict[str, bool] = attrs.field(factory=dict)
    labels: tuple[str, ...] = ()
    notes: list[str] = attrs.field(factory=list)

    @property
    def name(self) -> str:
        return f"{self.test}/{self.workload}"

    @property
    def ran(self) -> bool:
        return self.status == OK

    def throughput(self) -> dict[str, float]:
        """The data of the (last) SchedulingThroughput item, or {}."""
        for item in reversed(self.data_items):
            if item.labels.get("Metric") == self.threshold_metric:
                return item.data
        return {}

    @property
    def average(self) -> float | None:
        return self.throughput().get("Average")

    @property
    def below_threshold(self) -> bool:
        """True when a threshold is set and the measured Average is lower."""
        average = self.average
        return bool(self.threshold) and average is not None and average < self.threshold


def data_items_document(results: Iterable[WorkloadResult]) -> dict[str, Any]:
    """Upstream's DataItems document for every data item of the results."""
    return {"version": "v1", "dataItems": [item.to_json() for r in results for item in r.data_items]}


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
    from rich import box
    from rich.console import Console
    from rich.table import Table

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
        if result.feature_gates:
            gates = ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(result.feature_gates.items()))
            lines.append(("dim", f"featureGates {gates} (accepted and reported; kubesched has no such switches)"))
        for style, text in lines:
            console.print(f"[{style}]{_escape(result.name)}: {_escape(text)}[/{style}]", highlight=False)


def _reason(result: WorkloadResult) -> str:
    if result.status == UNSUPPORTED and result.reason.startswith("unsupported"):
        return result.reason
    return f"{result.status}: {result.reason}"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
