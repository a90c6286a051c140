"""scheduler_perf's metrics collector: the scheduler's histograms over a measured window, as DataItems.

Upstream's ``metricsCollector`` resets the registry when measuring starts and,
when it stops, turns each histogram its ``metricsCollectorConfig`` names
(default: :data:`DEFAULT_METRICS`) into a DataItem per label value: Perc50,
Perc90, Perc95, Perc99 and Average in milliseconds, labelled ``Metric`` (and
the label value), skipping a histogram without observations.  kubesched's
metrics are process-wide, so :class:`HistogramWindow` keeps the buckets at the
start and reports the difference at the end.  Quantiles interpolate linearly
within a bucket, as Prometheus' ``histogram_quantile`` (and upstream's
testutil) does.
"""

from __future__ import annotations

import math
from typing import Any

from prometheus_client import REGISTRY

from ..core.observability.metrics import ERROR as ERROR_RESULT
from ..core.observability.metrics import SCHEDULED, UNSCHEDULABLE
from .errors import PerfConfigError
from .results import DataItem

#: Upstream's ``metrics.ExtentionPoints`` (the extension_point label values collected by default).
EXTENSION_POINTS = ("PreFilter", "Filter", "PreFilterExtensionAddPod", "PreFilterExtensionRemovePod", "PostFilter",
                    "PreScore", "Score", "ScoreExtensionNormalize", "PreBind", "Bind", "PostBind", "Reserve",
                    "Unreserve", "Permit")

#: Upstream's ``defaultMetricsCollectorConfig``: histogram -> (label, values) to split by, or None for the whole
#: histogram.  (``scheduler_pod_scheduling_duration_seconds``, also listed upstream, no longer exists.)
DEFAULT_METRICS: dict[str, list[tuple[str, tuple[str, ...]]] | None] = {
    "scheduler_framework_extension_point_duration_seconds": [("extension_point", EXTENSION_POINTS)],
    "scheduler_scheduling_attempt_duration_seconds": [("result", (SCHEDULED, UNSCHEDULABLE, ERROR_RESULT))],
    "scheduler_pod_scheduling_sli_duration_seconds": None,
}

#: series key: (metric, label, value) -> (cumulative bucket counts by upper bound, sum)
Snapshot = dict[tuple[str, str, str], tuple[dict[float, float], float]]


def metrics_from_config(config: Any, where: str) -> dict[str, list[tuple[str, tuple[str, ...]]] | None]:
    """A test case's ``metricsCollectorConfig`` (``{metrics: {NAME: [{label, values}] | null}}``) as
    :data:`DEFAULT_METRICS` reads; None gives the default.  Raises :class:`PerfConfigError` naming ``where``."""
    if config is None:
        return DEFAULT_METRICS
    metrics = config.get("metrics") if isinstance(config, dict) else None
    if not isinstance(metrics, dict):
        raise PerfConfigError(f"{where}: metricsCollectorConfig: expected {{metrics: {{NAME: [{{label, values}}]}}}}")
    out: dict[str, list[tuple[str, tuple[str, ...]]] | None] = {}
    for name, splits in metrics.items():
        if splits is None:
            out[str(name)] = None
            continue
        if not isinstance(splits, list) or not all(isinstance(s, dict) and isinstance(s.get("label"), str)
                                                    and isinstance(s.get("values"), list) for s in splits):
            raise PerfConfigError(f"{where}: metricsCollectorConfig.metrics.{name}: expected a list of "
                                  "{label, values}")
        out[str(name)] = [(s["label"], tuple(str(v) for v in s["values"])) for s in splits]
    return out


def _snapshot(names: set[str]) -> Snapshot:
    """Every series of the histograms ``names``, summed over the labels not split by, keyed per label value
    (and ("", "") for the whole histogram)."""
    out: Snapshot = {}

    def add(key: tuple[str, str, str], bound: float | None, value: float, total: float | None) -> None:
        buckets, acc = out.get(key, ({}, 0.0))
        if bound is not None:
            buckets[bound] = buckets.get(bound, 0.0) + value
        out[key] = (buckets, acc + (total or 0.0))

    for family in REGISTRY.collect():
        if family.name not in names:
            continue
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                bound = float(sample.labels["le"])
                series = [(label, value) for label, value in sample.labels.items() if label != "le"]
                add((family.name, "", ""), bound, sample.value, None)
                for label, value in series:
                    add((family.name, label, value), bound, sample.value, None)
            elif sample.name.endswith("_sum"):
                add((family.name, "", ""), None, 0.0, sample.value)
                for label, value in sample.labels.items():
                    add((family.name, label, value), None, 0.0, sample.value)
    return out


def quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus' ``histogram_quantile``: ``buckets`` are (upper bound, cumulative count), ascending, the last
    +Inf; linear within the bucket holding rank ``q * total`` (the highest finite bound when it is +Inf's)."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


class HistogramWindow:
    """The histograms ``metrics`` (see :data:`DEFAULT_METRICS`) from :meth:`__init__` to :meth:`data_items`."""

    def __init__(self, metrics: dict[str, list[tuple[str, tuple[str, ...]]] | None]):
        self.metrics = metrics
        self.start = _snapshot(set(metrics))

    def data_items(self, name: str) -> list[DataItem]:
        """One DataItem per histogram and label value that got observations in the window (ms, as upstream),
        labelled ``Metric``, the label and ``Name`` (the workload)."""
        end = _snapshot(set(self.metrics))
        items = []
        for metric, splits in self.metrics.items():
            wanted = [("", "")] if splits is None else [(label, v) for label, values in splits for v in values]
            for label, value in wanted:
                item = self._item(metric, label, value, end)
                if item is not None:
                    item.labels["Name"] = name
                    items.append(item)
        return items

    def _item(self, metric: str, label: str, value: str, end: Snapshot) -> DataItem | None:
        key = (metric, label, value)
        if key not in end:
            return None
        buckets_end, sum_end = end[key]
        buckets_start, sum_start = self.start.get(key, ({}, 0.0))
        buckets = sorted((bound, count - buckets_start.get(bound, 0.0)) for bound, count in buckets_end.items())
        if not buckets or buckets[-1][1] <= 0:
            return None
        count = buckets[-1][1]
        data = {f"Perc{int(q * 100)}": quantile(q, buckets) * 1000 for q in (0.5, 0.9, 0.95, 0.99)}
        data["Average"] = (sum_end - sum_start) / count * 1000
        labels = {"Metric": metric}
        if label:
            labels[label] = value
        return DataItem(data=data, unit="ms", labels=labels)
