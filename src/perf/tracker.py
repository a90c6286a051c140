"""Counting pods per namespace as the cluster changes (what scheduler_perf asks its pod informer).

:class:`PodTracker` watches Pods on the cluster; the watch is called inside
every write, so the counts are exact the moment a binding lands.  Per
namespace it keeps how many pods exist, how many are scheduled (have
``spec.nodeName``) and how many were attempted (scheduled, or carrying a
``PodScheduled`` condition: unschedulable, or held by a scheduling gate).
A :class:`ScheduledCounter` counts every pod of some namespaces (and labels)
that becomes scheduled, including ones deleted later: the throughput
collector's input.  :class:`SelectedCounts` keeps the scheduled and attempted
counts of the pods matching one label selector (a barrier's
``labelSelector``), also exact at every write.
"""

from __future__ import annotations

import collections
from typing import Any, Iterable

from ..core.api.core_v1 import Pod
from ..core.cluster.client import DELETED, ClusterClient, WatchEvent

_SCHEDULED = 1
_ATTEMPTED = 2


def _flags(pod: Pod) -> int:
    if pod.spec.node_name:
        return _SCHEDULED | _ATTEMPTED
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled":
            return _ATTEMPTED
    return 0


def labels_match(labels: dict[str, str], selector: dict[str, str] | None) -> bool:
    """True when every ``key: value`` of ``selector`` is among ``labels`` (an empty selector matches all)."""
    if not selector:
        return True
    return all(labels.get(key) == value for key, value in selector.items())


class ScheduledCounter:
    """How many pods in ``namespaces`` (matching ``selector``) became scheduled since it was made."""

    __slots__ = ("namespaces", "selector", "value")

    def __init__(self, namespaces: Iterable[str], selector: dict[str, str] | None = None):
        self.namespaces = frozenset(namespaces)
        self.selector = dict(selector or {})
        self.value = 0


class SelectedCounts:
    """Per-namespace ``scheduled`` and ``attempted`` counts of the existing
    pods whose labels match ``selector`` (``{key: value}``)."""

    __slots__ = ("selector", "scheduled", "attempted")

    def __init__(self, selector: dict[str, str]):
        self.selector = dict(selector)
        self.scheduled: collections.Counter[str] = collections.Counter()
        self.attempted: collections.Counter[str] = collections.Counter()


class PodTracker:
    """Per-namespace pod counts, kept current by a watch on ``cluster``.

    ``existing[ns]``, ``scheduled[ns]`` and ``attempted[ns]`` are current
    counts; :meth:`counter` makes a :class:`ScheduledCounter`;
    :meth:`selected` the :class:`SelectedCounts` of a label selector."""

    def __init__(self, cluster: ClusterClient):
        self.existing: collections.Counter[str] = collections.Counter()
        self.scheduled: collections.Counter[str] = collections.Counter()
        self.attempted: collections.Counter[str] = collections.Counter()
        self._pods: dict[str, tuple[int, Pod]] = {}
        self._counters: list[ScheduledCounter] = []
        self._selected: dict[tuple[tuple[str, str], ...], SelectedCounts] = {}
        listed = cluster.list("Pod")
        for pod in listed.items:
            self._apply(pod.key, pod, _flags(pod))
        self._stop = cluster.watch("Pod", listed.resource_version, self._on_event)

    def stop(self) -> None:
        """Stop watching."""
        self._stop()

    def counter(self, namespaces: Iterable[str], selector: dict[str, str] | None = None) -> ScheduledCounter:
        """A new counter of pods becoming scheduled in ``namespaces``."""
        counter = ScheduledCounter(namespaces, selector)
        self._counters.append(counter)
        return counter

    def release(self, counter: ScheduledCounter) -> None:
        """Stop updating ``counter``."""
        if counter in self._counters:
            self._counters.remove(counter)

    def selected(self, selector: dict[str, str]) -> SelectedCounts:
        """The counts of the pods matching ``selector``, kept current from now on
        (one scan of the known pods the first time a selector is asked for)."""
        key = tuple(sorted(selector.items()))
        counts = self._selected.get(key)
        if counts is None:
            counts = self._selected[key] = SelectedCounts(selector)
            for flags, pod in self._pods.values():
                if labels_match(pod.metadata.labels, counts.selector):
                    counts.scheduled[pod.metadata.namespace] += bool(flags & _SCHEDULED)
                    counts.attempted[pod.metadata.namespace] += bool(flags & _ATTEMPTED)
        return counts

    def pending_pod(self, namespace: str) -> Pod | None:
        """Some pod of ``namespace`` that is not scheduled (for error messages)."""
        for flags, pod in self._pods.values():
            if not flags & _SCHEDULED and pod.metadata.namespace == namespace:
                return pod
        return None

    def _on_event(self, event: WatchEvent) -> None:
        pod = event.obj
        self._apply(pod.key, pod, -1 if event.type == DELETED else _flags(pod))

    def _apply(self, key: str, pod: Any, flags: int) -> None:
        namespace = pod.metadata.namespace
        old = self._pods.get(key)
        old_flags = -1 if old is None else old[0]
        if flags < 0:
            self._pods.pop(key, None)
        else:
            self._pods[key] = (flags, pod)
        if old_flags < 0 and flags >= 0:
            self.existing[namespace] += 1
        elif old_flags >= 0 and flags < 0:
            self.existing[namespace] -= 1
        old_flags = max(old_flags, 0)
        flags = max(flags, 0)
        changed = old_flags ^ flags
        if not changed:
            return
        if changed & _SCHEDULED:
            delta = 1 if flags & _SCHEDULED else -1
            self.scheduled[namespace] += delta
            if delta > 0:
                for counter in self._counters:
                    if namespace in counter.namespaces and labels_match(pod.metadata.labels, counter.selector):
                        counter.value += 1
        if changed & _ATTEMPTED:
            self.attempted[namespace] += 1 if flags & _ATTEMPTED else -1
        for counts in self._selected.values():
            if labels_match(pod.metadata.labels, counts.selector):
                if changed & _SCHEDULED:
                    counts.scheduled[namespace] += 1 if flags & _SCHEDULED else -1
                if changed & _ATTEMPTED:
                    counts.attempted[namespace] += 1 if flags & _ATTEMPTED else -1
