"""DynamicResources Filter for every node at once: the columnar fast path.

The structured allocator searches one node at a time.  For the common shape
of a pod's claims - one claim to allocate, with one ``exactly`` request for
N devices, no constraints, no admin access, not "All" - on devices that are
node-local and plain (published in a ResourceSlice with ``nodeName``, in a
usable pool, without taints, shared counters or per-device node selection),
its answer on a node only depends on how many of the node's devices fit the
request on their own: the search takes the first N that do.  Whether one
device fits depends on the request's selectors, whether the device is
exclusively allocated, and its capacity still free.

:class:`DeviceColumns` holds every such device of every node as numpy columns
(node row, in use, consumed capacity), kept current from the
:class:`~kubesched.core.dra.allocated_devices.AllocatedState` as claims change,
and :meth:`DeviceColumns.feasible` answers for all nodes with a few array
operations.  When the cluster or the pod is of another shape it answers None
and the per-node Filter runs, so both always agree.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

import numpy as np

from kubesched.core.dra.allocated_devices import AllocatedState, DeviceID
from kubesched.core.dra.allocator import AllocationError, Allocator, capacity

from ...core.api.resource_v1 import ALLOCATION_RESULTS_MAX_SIZE, ResourceClaim

#: Capacities are compared as integers in thousandths of their base unit.
SCALE = 1000
#: Amounts at or beyond this (scaled) are left to the allocator's exact arithmetic.
LIMIT = 2 ** 62
#: Device refreshes remembered for bringing requests' answers up to date (then every request starts afresh).
MAX_CHANGES = 1 << 16


def _scaled(amount: Fraction | int) -> int | None:
    """``amount`` in thousandths, or None when that is not an integer within :data:`LIMIT`."""
    if type(amount) is int:
        value = amount * SCALE
    else:
        exact = amount if type(amount) is Fraction else Fraction(amount)
        value, remainder = divmod(exact.numerator * SCALE, exact.denominator)
        if remainder:
            return None
    return value if abs(value) < LIMIT else None


def _content(candidate) -> tuple:
    """What selectors and capacity requests can see of a device (not its name)."""
    device = candidate.device
    return (candidate.id.driver, candidate.multi, repr(sorted(device.attributes.items())),
            repr(sorted(device.capacity.items())))


class _RequestColumns:
    """What one request needs of every device: ``admitted`` (its selectors
    admit it and its capacity request policy allows it), ``need`` (capacity
    name -> amount it would consume, scaled) and ``whole`` (it asks for no
    capacity).  ``usable`` (per device: it could serve the request now) and
    ``counts`` (per row: usable devices) are as of entry ``seen`` of the
    columns' change log (None: to be judged afresh)."""

    __slots__ = ("admitted", "need", "whole", "usable", "counts", "seen")

    def __init__(self, admitted: np.ndarray, need: dict[str, np.ndarray], whole: bool):
        self.admitted = admitted
        self.need = need
        self.whole = whole
        self.usable: np.ndarray | None = None
        self.counts = np.zeros(0, dtype=np.int64)
        self.seen = 0


class Feasible:
    """The batch Filter's answer for one claim: ``rows`` (per table row: the
    claim can get its devices there) and ``usable`` (per device of
    ``columns``: it could serve the claim's request), the devices the
    allocator's search would take the first of on a node."""

    __slots__ = ("columns", "rows", "usable")

    def __init__(self, columns: DeviceColumns, rows: np.ndarray, usable: np.ndarray):
        self.columns = columns
        self.rows = rows
        self.usable = usable

    def devices_on(self, row: int) -> set[DeviceID]:
        """The usable devices of table row ``row`` (the columns' devices are in row order)."""
        columns = self.columns
        start, end = np.searchsorted(columns.rows, (row, row + 1))
        return {columns.candidates[d].id for d in (np.flatnonzero(self.usable[start:end]) + start).tolist()}


class DeviceColumns:
    """Every candidate device of the nodes of one NodeTable, as columns.

    Build with :meth:`build` (None when some device or pool is not plain);
    keep current with :meth:`refresh`; ask with :meth:`feasible`.
    """

    def __init__(self, table, allocator: Allocator, rows: list[int], candidates: list):
        self.table = table
        self.allocator = allocator
        self.candidates = candidates
        self.rows = np.asarray(rows, dtype=np.int64)
        self.index = {candidate.id: d for d, candidate in enumerate(candidates)}
        count = len(candidates)
        self.multi = np.fromiter((c.multi for c in candidates), dtype=bool, count=count)
        # Devices alike in everything a selector or a capacity request can see
        # (driver, attributes, capacity, allowMultipleAllocations) are judged once.
        groups: dict = {}
        self.group = np.fromiter((groups.setdefault(_content(c), len(groups)) for c in candidates),
                                 dtype=np.int64, count=count)
        first_of_group: dict[int, Any] = {}
        for d, candidate in enumerate(candidates):
            first_of_group.setdefault(int(self.group[d]), candidate)
        self.representatives = [first_of_group[g] for g in range(len(groups))]
        self.fits_whole = np.fromiter((c.fits_whole for c in candidates), dtype=bool, count=count)
        names = sorted({name for c in candidates for name in c.device.capacity})
        #: capacity name -> per device its value (scaled); LIMIT for a device without that capacity
        self.value: dict[str, np.ndarray] = {}
        for name in names:
            values = np.full(count, LIMIT, dtype=np.int64)
            for d, candidate in enumerate(candidates):
                entry = candidate.device.capacity.get(name)
                if entry is not None:
                    values[d] = _scaled(entry.value) or 0  # build() left out devices whose amounts do not scale
            self.value[name] = values
        #: not exclusively allocated; capacity some allocation consumes from
        self.free = np.ones(count, dtype=bool)
        self.has_consumed = np.zeros(count, dtype=bool)
        #: capacity name -> per device what is left of it (scaled; LIMIT without that capacity)
        self.room = {name: values.copy() for name, values in self.value.items()}
        #: False once some consumed amount is not representable: then never answer
        self.exact = True
        self._requests: dict[tuple, _RequestColumns | None] = {}
        #: the devices refreshed, in order: a request's answer is brought up to date from where it left off
        self._changed: list[int] = []

    @classmethod
    def build(cls, table, allocator: Allocator, allocated: AllocatedState) -> DeviceColumns | None:
        """Columns for the nodes of ``table`` (a NodeTable) as ``allocator`` sees
        them, or None when some node has a device or pool that is not plain."""
        rows: list[int] = []
        candidates: list = []
        for row, info in enumerate(table.infos):
            node = info.node
            view = allocator.node_view(node)
            if not all(pool.usable for pool in view.pools):
                return None
            for candidate in view.candidates:
                device = candidate.device
                if (candidate.slice.spec.node_name != node.metadata.name or candidate.per_device
                        or device.consumes_counters or allocator.taints(candidate)):
                    return None
                if any(_scaled(entry.value) is None for entry in device.capacity.values()):
                    return None
                rows.append(row)
                candidates.append(candidate)
        columns = cls(table, allocator, rows, candidates)
        columns.refresh(allocated, columns.index)
        return columns

    def refresh(self, allocated: AllocatedState, devices: Iterable[DeviceID]) -> None:
        """Re-read the use of ``devices`` from ``allocated``."""
        index = self.index
        if len(self._changed) > MAX_CHANGES:  # every request is judged afresh next time
            self._changed.clear()
            for request in self._requests.values():
                if request is not None:
                    request.usable = None
        for device in devices:
            d = index.get(device)
            if d is None:
                continue
            self._changed.append(d)
            self.free[d] = device not in allocated.devices
            used = allocated.consumed_capacity.get(device)
            self.has_consumed[d] = used is not None
            for name, room in self.room.items():
                amount = _scaled(used.get(name, 0)) if used else 0
                if amount is None:
                    self.exact = False
                    return
                value = self.value[name][d]
                room[d] = value - amount if value != LIMIT else LIMIT

    def feasible(self, allocator: Allocator, claim: ResourceClaim) -> Feasible | None:
        """Can ``claim`` (unallocated) get its devices on each node of the table
        now, and which devices could serve it?  ``allocator`` is this cycle's
        (it resolves the claim's requests).  None when the claim is not of the
        plain shape (module docstring), a selector fails to evaluate, or
        amounts are not exact."""
        if not self.exact or claim.spec.devices.constraints:
            return None
        try:
            entries = allocator.request_specs(claim)
        except AllocationError:
            return None
        if len(entries) != 1 or not hasattr(entries[0], "selectors"):
            return None
        spec = entries[0]
        if spec.all_mode or spec.admin or spec.count > ALLOCATION_RESULTS_MAX_SIZE:
            return None
        request = self._request(spec)
        if request is None:
            return None
        changed = self._changed[request.seen:]
        if request.usable is None or len(changed) > len(self.rows) // 16:
            request.usable = self._usable(request, slice(None))
            request.counts = np.bincount(self.rows[request.usable], minlength=len(self.table))
        elif changed:  # only the devices whose use changed since this request was last judged
            at = np.fromiter(set(changed), dtype=np.int64)
            usable = self._usable(request, at)
            np.add.at(request.counts, self.rows[at], usable.astype(np.int64) - request.usable[at])
            request.usable[at] = usable
        request.seen = len(self._changed)
        return Feasible(self, request.counts >= spec.count, request.usable.copy())

    def _usable(self, request: _RequestColumns, at: Any) -> np.ndarray:
        """Whether each device ``at`` (an index array, or every device) could serve ``request`` now."""
        fits: Any = True
        for name, need in request.need.items():
            fits = fits & (need[at] <= self.room[name][at])  # a device without the capacity has room LIMIT, needs 0
        if request.whole:
            # a plain exclusive device nobody consumes from: the allocator's shortcut
            fits = np.where(~self.multi[at] & ~self.has_consumed[at], self.fits_whole[at], fits)
        return request.admitted[at] & self.free[at] & fits

    def _request(self, spec) -> _RequestColumns | None:
        key = (spec.device_class.metadata.name, tuple(repr(s[2]) for s in spec.selectors),
               tuple(sorted((spec.capacity or {}).items())))
        if key in self._requests:
            return self._requests[key]
        representatives = self.representatives
        try:
            selected = np.array([self.allocator.matches(spec, c) for c in representatives], dtype=bool)
        except AllocationError:
            return None  # the per-node Filter raises it where upstream would
        possible = np.ones(len(representatives), dtype=bool)
        need = {name: np.zeros(len(representatives), dtype=np.int64) for name in self.value}
        for g, candidate in enumerate(representatives):
            consumed = capacity.consumption(candidate.device, candidate.id.driver, spec.capacity)
            if consumed is None:
                possible[g] = False
                continue
            for name, amount in consumed.items():
                scaled = _scaled(amount)
                if scaled is None:
                    self._requests[key] = None
                    return None
                need[name][g] = scaled
        group = self.group
        request = _RequestColumns((selected & possible)[group], {name: n[group] for name, n in need.items()},
                                  not spec.capacity)
        self._requests[key] = request
        return request
