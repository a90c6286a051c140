"""CycleState: per-pod scratch space shared by the plugins during one scheduling cycle."""

from __future__ import annotations

import random
from typing import Any

from kubesched.core.observability.metrics import PLUGIN_METRICS_SAMPLE_PERCENT

from ..api.core_v1 import Pod
from .nodeinfo import PodInfo

#: Draws which cycles time their plugins one by one (its own source: the scheduler's seeded one decides placements).
_SAMPLE = random.Random().random


class StateNotFound(KeyError):
    """Raised by :meth:`CycleState.read` for a key nobody wrote ("not found" upstream)."""


#: Where the framework leaves the feasible nodes' snapshot NodeTable rows (an int
#: array, in the order of the ``nodes`` PreScore gets), for PreScore plugins
#: that work on NodeTable columns.
FEASIBLE_ROWS_KEY = "FeasibleRows"

#: Where a dry run leaves the pods it took out of the cache and snapshot (a
#: tuple of Pods): a PodGroup's preemption places the group as if its victims
#: were gone.  Plugins whose PreFilter reads the snapshot see them gone
#: already; a plugin that keeps state outside it (DynamicResources' allocated
#: devices) discounts them in PreFilter, as its RemovePod does in a pod's
#: preemption.
REMOVED_PODS_KEY = "RemovedPods"


class CycleState:
    """A key -> value store that lives for one pod's scheduling (and binding) cycle.

    Plugins write what PreFilter computed and read it back in Filter, Score,
    Reserve, PreBind.  :meth:`clone` copies it for dry runs (nominated pods,
    preemption); values with a ``clone()`` method are cloned, others shared,
    as upstream's ``StateData.Clone``.  ``skip_filter_plugins`` and
    ``skip_score_plugins`` hold the plugins whose PreFilter/PreScore said Skip.
    ``record``: the attempt's :class:`~kubesched.core.framework.attempt_record.AttemptRecord`
    when decisions are recorded (None otherwise, and in clones: dry runs are
    not the decision).  ``record_plugin_metrics``: this cycle times each plugin
    call (scheduler_plugin_execution_duration_seconds), drawn for
    PLUGIN_METRICS_SAMPLE_PERCENT of the cycles as upstream's ScheduleOne draws it.
    ``evaluated_nodes`` / ``feasible_nodes``: how many nodes the cycle's
    Filter looked at and how many passed it and the extenders (upstream
    ``ScheduleResult.EvaluatedNodes`` / ``FeasibleNodes``; 0 before Filter).
    ``pod_info``: the scheduled pod's :class:`PodInfo` when the scheduler
    already has it (its queue entry's): :meth:`pod_info_of` hands it out.
    """

    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "record_plugin_metrics", "record",
                 "evaluated_nodes", "feasible_nodes", "_pod_info", "_cloned_keys")

    def __init__(self, pod_info: PodInfo | None = None) -> None:
        self._data: dict[str, Any] = {}
        #: the keys whose values :meth:`clone` clones, worked out on the first clone since the last write
        self._cloned_keys: list[str] | None = None
        self._pod_info = pod_info
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.record_plugin_metrics = _SAMPLE() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT
        self.record: Any = None
        self.evaluated_nodes = 0
        self.feasible_nodes = 0

    def write(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``, replacing what was there (upstream ``CycleState.Write``)."""
        self._data[key] = value
        self._cloned_keys = None

    def read(self, key: str) -> Any:
        """The value under ``key``; raises :class:`StateNotFound`."""
        try:
            return self._data[key]
        except KeyError:
            raise StateNotFound(f"{key!r} not found in cycle state") from None

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default`` when nobody wrote it (use :meth:`read` to fail instead)."""
        return self._data.get(key, default)

    def delete(self, key: str) -> None:
        """Forget ``key``; no error when it is absent (upstream ``CycleState.Delete``)."""
        self._data.pop(key, None)
        self._cloned_keys = None

    def pod_info_of(self, pod: Pod) -> PodInfo:
        """What the scheduler derives from ``pod`` once (:class:`PodInfo`: its requests in scheduler units,
        non-zero cpu and memory requests, host ports), shared by the cycle's plugins instead of each adding up
        the containers again: the PodInfo the cycle was started with when it is ``pod``'s (the same object),
        else made now and kept for the cycle."""
        info = self._pod_info
        if info is None or info.pod is not pod:
            info = self._pod_info = PodInfo(pod)
        return info

    def clone(self) -> "CycleState":
        """A copy for a dry run: values whose class has a ``clone()`` method cloned, others shared, the skip sets
        copied, ``record`` left None, ``evaluated_nodes``/``feasible_nodes`` 0 (upstream ``CycleState.Clone``)."""
        keys = self._cloned_keys
        if keys is None:  # a PodGroup's members clone the same state again and again: worked out once
            keys = self._cloned_keys = [key for key, value in self._data.items() if _has_clone(type(value))]
        copy = _new_state(CycleState)
        copy._data = data = self._data.copy()
        for key in keys:
            data[key] = data[key].clone()
        copy._cloned_keys = None
        copy._pod_info = self._pod_info
        copy.skip_filter_plugins = self.skip_filter_plugins.copy()
        copy.skip_score_plugins = self.skip_score_plugins.copy()
        copy.record_plugin_metrics = self.record_plugin_metrics
        copy.record = None
        copy.evaluated_nodes = copy.feasible_nodes = 0
        return copy


_new_state = object.__new__


#: class of a value -> whether it has a ``clone()`` method
_HAS_CLONE: dict[type, bool] = {}


def _has_clone(kind: type) -> bool:
    """Whether values of class ``kind`` have a ``clone()`` method (looked up once per class)."""
    has = _HAS_CLONE.get(kind)
    if has is None:
        has = _HAS_CLONE[kind] = callable(getattr(kind, "clone", None))
    return has
