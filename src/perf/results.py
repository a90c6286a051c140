"""Results of a perf run, and upstream's DataItems JSON of them (``kubesched perf`` prints both: :mod:`kubesched.cli.perf`).

``-o json`` prints exactly what scheduler_perf writes for perf-dash::

    {"version": "v1", "dataItems": [{"data": {"Average": ..., "Perc50": ..., ...},
                                     "unit": "pods/s",
                                     "labels": {"Metric": "SchedulingThroughput",
                                                "Name": "TEST/WORKLOAD"}}]}

Workloads that did not run (an unsupported op, an error) have no data item;
they are listed on stderr so that stdout stays valid JSON.
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

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
        """The DataItem as upstream's JSON output writes it: ``{"data", "unit", "labels"}``."""
        return {"data": dict(self.data), "unit": self.unit, "labels": dict(self.labels)}


@attrs.define
class WorkloadResult:
    """What one workload gave.

    ``name`` is ``TEST/WORKLOAD``; ``status`` is ``ok``, ``unsupported`` or
    ``failed`` with ``reason``; ``data_items`` the SchedulingThroughput items
    (pods/s); ``threshold`` the workload's minimum Average (pods/s, 0 = none);
    ``samples`` the per-second throughput samples; ``measured_pods`` the pods
    scheduled while measuring; ``duration`` the wall seconds the workload took;
    ``feature_gates`` the gates the config sets (applied over the emulated
    release's defaults; a gate locked there to the other value makes the workload unsupported);
    ``labels`` the test case's and workload's."""

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


