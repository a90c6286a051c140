"""startCollectingMetrics / stopCollectingMetrics: measuring across several ops."""

from __future__ import annotations

from typing import Any

from ..errors import PerfConfigError
from .base import PerfOp, check_namespace_list


class StartCollectingMetrics(PerfOp):
    """Starts measuring SchedulingThroughput of the pods of ``namespaces``
    (matching ``labelSelector``); a second collector before the first stops
    fails the workload."""

    FIELDS = ("name", "namespaces", "labelSelector")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) empty or malformed ``namespaces``."""
        check_namespace_list(fields, where)
        if not fields.get("namespaces"):
            raise PerfConfigError(f"{where}: namespaces cannot be empty")

    def run(self) -> None:
        self.executor.start_collecting(list(self.fields["namespaces"]), self.fields.get("labelSelector"))


class StopCollectingMetrics(PerfOp):
    """Stops the collector ``startCollectingMetrics`` started and records its DataItem."""

    @classmethod
    def collects_metrics(cls, fields: dict[str, Any]) -> bool:
        """True: the stop op is the one that records SchedulingThroughput."""
        return True

    def run(self) -> None:
        self.executor.finish_collecting()
