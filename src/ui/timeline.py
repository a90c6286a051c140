"""The run in simulated time: every pod's arrival, binding and deletion, and the cluster at any moment.

:class:`PlacementLog` listens to the simulation's pod informer (the same
events the scheduler sees, stamped with the fake clock) while it runs;
:class:`Timeline` turns that log, the ``--at`` changes and the Preempted
events into the series the Timeline page charts (pending pods, share of
each resource allocated, share of each DeviceClass's devices claims hold)
and answers where every pod was at a time T.
"""

from __future__ import annotations

import bisect
from typing import Any, Iterable

import numpy as np

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.resource_v1 import ResourceClaim
from kubesched.core.api.scheduling_v1beta1 import pod_group_key
from kubesched.core.framework.resources import pod_requests

from .device_columns import holders_of

#: A log entry's kinds.
CREATED, BOUND, DELETED = "created", "bound", "deleted"


class PlacementLog:
    """(time, kind, pod key, node) for every pod created, bound or deleted, in
    the order the informers delivered them; ``requests``: each pod's
    requests (scheduler units); ``claims``: (time, claim key, the
    (driver, pool, device) its allocation holds, empty once released) at
    every change of a ResourceClaim's allocation.  Attach before the
    simulation starts; :meth:`stop` when it is over (what-ifs on its end
    state, rolled back, are not the run's history)."""

    def __init__(self, informers: Any, clock: Any):
        self.clock = clock
        self.entries: list[tuple[float, str, str, str]] = []
        self.requests: dict[str, dict[str, int]] = {}
        #: pod key -> the PodGroup key it named (kept after the pod is deleted: a preemption's victims)
        self.groups: dict[str, str] = {}
        self.claims: list[tuple[float, str, frozenset[tuple[str, str, str]]]] = []
        self._held: dict[str, frozenset[tuple[str, str, str]]] = {}
        self.recording = True
        informers.add_handlers("Pod", on_add=self._added, on_update=self._updated, on_delete=self._deleted)
        informers.add_handlers("ResourceClaim", on_add=self._claimed, on_update=lambda _, new: self._claimed(new),
                               on_delete=lambda claim: self._hold(claim.key, frozenset()))

    def stop(self) -> None:
        """Record nothing more: later events are not the run's."""
        self.recording = False

    def _added(self, pod: Pod) -> None:
        if not self.recording:
            return
        self.requests[pod.key] = pod_requests(pod)
        group = pod_group_key(pod)
        if group is not None:
            self.groups[pod.key] = group
        self.entries.append((self.clock.now(), CREATED, pod.key, ""))
        if pod.spec.node_name:
            self.entries.append((self.clock.now(), BOUND, pod.key, pod.spec.node_name))

    def _updated(self, old: Pod, new: Pod) -> None:
        if self.recording and new.spec.node_name and not old.spec.node_name:
            self.entries.append((self.clock.now(), BOUND, new.key, new.spec.node_name))

    def _deleted(self, pod: Pod) -> None:
        if self.recording:
            self.entries.append((self.clock.now(), DELETED, pod.key, pod.spec.node_name))

    def _claimed(self, claim: ResourceClaim) -> None:
        self._hold(claim.key, frozenset(holders_of([claim])))

    def _hold(self, claim: str, devices: frozenset[tuple[str, str, str]]) -> None:
        if self.recording and self._held.get(claim, frozenset()) != devices:
            self._held[claim] = devices
            self.claims.append((self.clock.now(), claim, devices))


class Timeline:
    """The run from ``start`` to ``end`` (seconds since the epoch).

    ``times`` (numpy, seconds since the start) with, at each, ``pending``
    (pods created and not bound) and ``allocated[resource]`` (% of the
    cluster's allocatable of cpu, memory and each extended resource, as the
    final nodes have it, and of each ``devices/<class>`` column of
    ``devices``: {(driver, pool, device): node row} of the devices the class
    selects, as :func:`~kubesched.ui.device_columns.class_devices` gives
    them - the share its claims hold, sampled at the pod events' times);
    ``marks``: (seconds since the start, label) of ``--at`` changes and
    preemptions.
    """

    def __init__(self, log: PlacementLog, start: float, end: float, capacity: dict[str, int],
                 marks: Iterable[tuple[float, str]] = (),
                 devices: dict[str, dict[tuple[str, str, str], int]] | None = None):
        self.start, self.end = start, end
        self.entries = log.entries
        self.requests = log.requests
        self.resources = [r for r, total in capacity.items() if total]
        self.marks = sorted(marks)
        self._entry_times = [when - start for when, *_ in self.entries]
        pending, used = 0, dict.fromkeys(self.resources, 0)
        on_node: dict[str, str] = {}
        times: list[float] = []
        rows: list[list[float]] = []
        for (_, kind, pod, node), offset in zip(self.entries, self._entry_times):
            wants = self.requests.get(pod, {})
            if kind == CREATED:
                pending += 1
            elif kind == BOUND:
                pending -= 1
                on_node[pod] = node
                for r in self.resources:
                    used[r] += wants.get(r, 0)
            elif kind == DELETED:
                if on_node.pop(pod, None) is not None:
                    for r in self.resources:
                        used[r] -= wants.get(r, 0)
                else:
                    pending -= 1
            row = [float(pending), *(100.0 * used[r] / capacity[r] for r in self.resources)]
            if times and times[-1] == offset:
                rows[-1] = row
            else:
                times.append(offset)
                rows.append(row)
        table = np.array(rows, dtype=float).reshape(len(rows), 1 + len(self.resources))
        self.times = np.array(times, dtype=float)
        self.pending = table[:, 0]
        self.allocated = {r: table[:, 1 + i] for i, r in enumerate(self.resources)}
        for column, selected in (devices or {}).items():
            self.resources.append(column)
            self.allocated[column] = self._held_share(log.claims, set(selected), start)

    def _held_share(self, claims: list[tuple[float, str, frozenset[tuple[str, str, str]]]],
                    selected: set[tuple[str, str, str]], start: float) -> np.ndarray:
        """% of the ``selected`` devices that claims hold at each of :attr:`times`."""
        held: dict[str, int] = {}
        share = np.zeros(len(self.times))
        changes = iter(claims)
        change = next(changes, None)
        for i, offset in enumerate(self.times):
            while change is not None and change[0] - start <= offset:
                held[change[1]] = len(change[2] & selected)
                change = next(changes, None)
            share[i] = 100.0 * sum(held.values()) / len(selected)
        return share

    @property
    def duration(self) -> float:
        """Simulated seconds from the start to the end of the run."""
        return self.end - self.start

    def placements_at(self, offset: float) -> dict[str, str]:
        """pod key -> node ("" while pending) of every pod that exists
        ``offset`` seconds after the start."""
        out: dict[str, str] = {}
        for _, kind, pod, node in self.entries[:bisect.bisect_right(self._entry_times, offset)]:
            if kind == DELETED:
                out.pop(pod, None)
            else:
                out[pod] = node
        return out

    def entries_near(self, offset: float, count: int) -> list[tuple[float, str, str, str]]:
        """At most ``count`` log entries (seconds since the start, kind, pod,
        node) around ``offset``: those just before it and just after."""
        middle = bisect.bisect_right(self._entry_times, offset)
        low = max(0, middle - count // 2)
        chosen = self.entries[low:low + count]
        return [(when - self.start, kind, pod, node) for when, kind, pod, node in chosen]

    def series(self) -> dict[str, Any]:
        """The charts' data (JSON-ready): ``times``, ``pending``,
        ``allocated`` per resource, ``marks``."""
        return {"times": self.times.round(3).tolist(), "pending": self.pending.astype(int).tolist(),
                "allocated": {r: v.round(2).tolist() for r, v in self.allocated.items()},
                "marks": [[round(t, 3), label] for t, label in self.marks]}
