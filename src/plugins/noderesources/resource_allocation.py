"""What the noderesources scoring plugins share: the per-resource requested/allocatable view.

Upstream's ``resourceAllocationScorer``: for each configured resource the
node's allocatable and what would be requested with the pod on it.  cpu and
memory count the non-zero requests (containers that ask for nothing count as
100m / 200Mi) unless the scorer uses real requests; an extended resource the
pod does not request is left out of the score.  Everything is computed for many
nodes at once on the snapshot's NodeTable (int64 arrays).
"""

from __future__ import annotations

from operator import add
from typing import Any, Callable, Iterable

import numpy as np
from attrs import field, frozen

from kubesched import CPU, MEMORY, NATIVE_RESOURCES, PodInfo
from kubesched.core.api.convert import ManifestError


def is_scalar_resource(name: str) -> bool:
    """Extended, hugepages and attachable-volumes resources (upstream ``IsScalarResourceName``)."""
    return name not in NATIVE_RESOURCES


@frozen
class ResourceSpec:
    """A resource to score and its weight (1-100; 0 or unset means 1, as upstream's v1 defaulting)."""

    name: str = ""
    weight: int = field(default=1, converter=lambda weight: weight or 1)

    def __attrs_post_init__(self):
        if not 1 <= self.weight <= 100:
            raise ManifestError("weight", f"resource weight of {self.name} not in valid range (0, 100]")


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def resources_or_default(resources) -> tuple[ResourceSpec, ...]:
    """An empty resources list means cpu and memory, weight 1 (upstream's v1 defaulting)."""
    return tuple(resources) or DEFAULT_RESOURCES


#: (resource, NodeTable rows) -> (devices of the resource's DeviceClass per row, of them in use per row), or None
DeviceCounts = Callable[[str, np.ndarray], "tuple[np.ndarray, np.ndarray] | None"]


def scoring_requests(info: PodInfo, use_requested: bool) -> dict[str, int]:
    """The pod's requests as a scorer counts them (scheduler units), from its
    :class:`PodInfo` (the cycle's, :meth:`CycleState.pod_info_of`): the real
    ones, or cpu and memory with :data:`NON_ZERO_DEFAULTS` for containers that
    ask for none (upstream ``calculatePodResourceRequestList``).  Read-only."""
    if use_requested:
        return info.requests
    return {**info.requests, CPU: info.non_zero_cpu, MEMORY: info.non_zero_memory}


def resource_names(resources: Iterable[ResourceSpec]) -> tuple[str, ...]:
    """The names of ``resources``, in order (the NodeTable matrices' columns)."""
    return tuple(spec.name for spec in resources)


def allocatable_and_requested(
    table, rows: np.ndarray, resources, pod_all: dict[str, int], use_requested: bool,
    devices: DeviceCounts | None = None,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Allocatable and requested-with-the-pod, int64 arrays of shape
    (resources, ``rows``) in scheduler units (fresh: a caller may write into
    them), and the resources' weights;
    ``pod_all`` is the pod's :func:`scoring_requests`.  A scalar resource the
    pod does not request gets zero allocatable (so it is left out, as
    upstream).  ``devices`` (resource, rows) -> (device count, devices in use)
    or None stands in for an extended resource that devices serve on the rows
    that do not advertise it (DRAExtendedResource)."""
    names = resource_names(resources)
    allocs = table.allocatable_matrix(names).take(rows, axis=1)
    requests = table.requested_matrix(names, non_zero=not use_requested).take(rows, axis=1)
    asked = [pod_all.get(name, 0) for name in names]
    for i, name in enumerate(names):
        if is_scalar_resource(name) and asked[i] == 0:
            allocs[i] = 0
            requests[i] = 0
            continue
        requests[i] += asked[i]
        counted = devices(name, rows) if devices is not None else None
        if counted is not None:
            device_count, in_use = counted
            classic = allocs[i] > 0
            requests[i] = np.where(classic, requests[i], in_use + asked[i])
            allocs[i] = np.where(classic, allocs[i], device_count)
    return allocs, requests, [spec.weight for spec in resources]


#: Values below this are exact as float64 and never overflow int64 once scaled to a score: the bound of the
#: one-row path (:class:`RowReader`), so that its Python arithmetic gives numpy's answers.
EXACT_BOUND = 1 << 53


class RowReader:
    """:func:`allocatable_and_requested` of one NodeTable row as Python ints per resource of ``names``
    (:func:`resource_names`), counting requests as a scorer does (``use_requested``: real requests, else cpu and
    memory non-zero) - re-scoring one node, as a PodGroup's next member does: numpy's cost per call exceeds the
    arithmetic then.  The values are the row's NodeInfo's (the table's ``allocatable_row``/``requested_row``),
    the same as the table's matrices hold there; the pod's amounts are looked up once per requests dict
    (read-only, see :func:`scoring_requests`: the members of a PodGroup share their cycle's)."""

    __slots__ = ("names", "use_requested", "_cpu_and_memory", "_asked")

    def __init__(self, names: tuple[str, ...], use_requested: bool):
        self.names = names
        self.use_requested = use_requested
        self._cpu_and_memory = names == (CPU, MEMORY)  # the scorers' default: read at once
        #: (the requests dict, its amount per resource, the resources left out: scalar ones it does not request)
        self._asked: tuple[dict[str, int], list[int], list[int]] | None = None

    def read(self, table, row: int, pod_all: dict[str, int]) -> tuple[list[int], list[int]] | None:
        """(allocatable, requested with the pod) at ``row``, ``pod_all`` being the pod's
        :func:`scoring_requests`; None when a value reaches :data:`EXACT_BOUND` (the caller takes the array path).
        Without device-backed extended resources (a caller with some takes the array path)."""
        asked = self._asked
        if asked is None or asked[0] is not pod_all:
            amounts = [pod_all.get(name, 0) for name in self.names]
            asked = self._asked = (pod_all, amounts, [i for i, name in enumerate(self.names)
                                                      if amounts[i] == 0 and is_scalar_resource(name)])
        if self._cpu_and_memory:  # the row's NodeInfo read here: a call per value costs more than the values
            info = table.infos[row]
            allocatable = info.allocatable
            allocs = [allocatable.get(CPU, 0), allocatable.get(MEMORY, 0)]
            cpu, memory = asked[1]
            if self.use_requested:
                requested = info.requested
                requests = [requested.get(CPU, 0) + cpu, requested.get(MEMORY, 0) + memory]
            else:  # the non-zero requests (the table's requested_row)
                requests = [info.non_zero_cpu + cpu, info.non_zero_memory + memory]
            if (allocs[0] >= EXACT_BOUND or allocs[1] >= EXACT_BOUND or requests[0] >= EXACT_BOUND
                    or requests[1] >= EXACT_BOUND):
                return None
            return allocs, requests
        allocs = table.allocatable_row(self.names, row)
        requests = list(map(add, table.requested_row(self.names, row, not self.use_requested), asked[1]))
        for i in asked[2]:
            allocs[i] = requests[i] = 0
        if max(allocs, default=0) >= EXACT_BOUND or max(requests, default=0) >= EXACT_BOUND:
            return None
        return allocs, requests


def kept_scores(owner: object, table, rows: np.ndarray, requests: dict[str, int], names: tuple[str, ...],
                scores: Callable[[np.ndarray], np.ndarray],
                score_row: Callable[[int], int | None] | None) -> np.ndarray:
    """A scorer's scores of ``rows`` (int64) for a pod of scoring ``requests``, without device-backed extended
    resources: ``scores(rows)`` is its array path, ``score_row(row)`` (None: it has none) the same answer for
    one row in Python arithmetic, or None where it cannot tell.  One row (a PodGroup's next member re-scoring
    the node the member before was assumed on) is scored alone; otherwise the scores are a NodeTable derived
    column keyed by ``owner`` and the requests of ``names``: kept for the next pod of the same requests, only
    the nodes changed since scored again."""
    if score_row is not None and len(rows) == 1:
        one = score_row(int(rows[0]))
        if one is not None:
            return np.array((one,), dtype=np.int64)
    key = (owner, tuple(requests.get(name, 0) for name in names))
    return table.derived(key, scores, score_row)[rows]


def dra_manager(handle) -> Any:
    """The handle's DRA manager, or None in a profile whose Filter does not
    run DynamicResources or while DRAExtendedResource is off: then no extended
    resource is device-backed, and a node must advertise it (nothing else
    would give the pod its devices)."""
    if not handle.features.enabled("DRAExtendedResource"):
        return None
    framework = handle.framework
    if framework is not None and not any(name == "DynamicResources" for name, _ in framework.filter_plugins):
        return None
    return handle.dra


def device_counts(dra, resources: Iterable[str], table) -> DeviceCounts:
    """For the device-backed extended ``resources`` (DRAExtendedResource): on
    each NodeTable row, how many devices of the resource's DeviceClass the node
    can use and how many of them are allocated (upstream's
    ``calculateResourceAllocatableRequest``); ``dra`` is the DRA manager."""
    classes = dra.device_backed(resources)

    def counts(resource: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        class_name = classes.get(resource)
        if class_name is None:
            return None
        total, in_use = dra.class_device_counts(class_name, table)
        return total[rows], in_use[rows]

    return counts


def weighted_average(per_resource: np.ndarray, allocs: np.ndarray, weights: list[int],
                     rounding: bool = False) -> np.ndarray:
    """Per node, the sum of weight x score over the resources with
    allocatable > 0, divided by the sum of those weights (integer division,
    or rounded); 0 when none.  ``per_resource`` and ``allocs`` are int64
    arrays of shape (resources, nodes); returns an int64 array of nodes."""
    weight = np.asarray(weights, dtype=np.int64)
    if np.count_nonzero(allocs) == allocs.size:  # every resource counts on every node (the usual case)
        total = weight @ per_resource
        divisor = sum(weights)
        if rounding:
            return np.floor(total / divisor + 0.5).astype(np.int64)
        if divisor & (divisor - 1) == 0:  # a power of two (the default weights: 2): a shift is its floor division
            total >>= divisor.bit_length() - 1
        else:
            total //= divisor
        return total
    present = allocs != 0
    total = weight @ (per_resource * present)  # 0 on a node where no resource counts
    safe = np.maximum(weight @ present, 1)
    if rounding:
        return np.floor(total / safe + 0.5).astype(np.int64)
    return total // safe
