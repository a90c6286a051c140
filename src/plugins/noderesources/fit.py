"""NodeResourcesFit: does the node have room for the pod's requests? (upstream plugins/noderesources/fit.go)

Filter: the node must have a free pod slot and, for every resource the pod
requests, ``request <= allocatable - requested``; the reasons are
"Too many pods", "Insufficient cpu", "Insufficient memory",
"Insufficient <resource>".  A request larger than the whole allocatable is
UnschedulableAndUnresolvable (preemption cannot help).  Extended resources in
``ignoredResources`` / ``ignoredResourceGroups`` are not checked.

PreScore computes the pod's requests for scoring once per cycle; Score, by
``scoringStrategy.type``: LeastAllocated (default; prefer free
nodes), MostAllocated (bin packing) or RequestedToCapacityRatio (a piecewise
linear shape over utilisation), each a weighted average over
``scoringStrategy.resources`` (default cpu and memory, weight 1).
Both Filter and Score have vectorised batch forms over the NodeTable.
PlacementScore prefers the placement a PodGroup fills most tightly.
"""

from __future__ import annotations

import numpy as np
from attrs import field, frozen

from kubesched import (
    ASSIGNED_POD,
    CPU,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    NATIVE_RESOURCES,
    NODE,
    PODS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    NodeTable,
    QueueingHint,
    Status,
    hookimpl,
    pod_requests,
    resources_fragment,
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import is_extended_resource
from kubesched.core.api.resource_v1 import IMPLICIT_EXTENDED_RESOURCE_PREFIX
from kubesched.core.plugin_helpers.shape import (
    MAX_UTILIZATION,
    BrokenLinear,
    UtilizationShapePoint,
    validate_shape,
)

from .resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    RowReader,
    allocatable_and_requested,
    device_counts,
    dra_manager,
    kept_scores,
    resource_names,
    resources_or_default,
    scoring_requests,
    weighted_average,
)

LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO = (
    "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio",
)
STATE_KEY = "PreFilterNodeResourcesFit"
#: How many pod shapes' PreFilter states NodeResourcesFit keeps (all dropped when full)
MAX_KEPT_STATES = 1024
PRE_SCORE_KEY = "PreScoreNodeResourcesFit"
#: the group's CycleState key of its members' cpu and memory requests (pod UID -> (milli-CPU, bytes)), for PlacementScore
PLACEMENT_AMOUNTS_KEY = "PlacementScoreNodeResourcesFit"


@frozen
class RequestedToCapacityRatioParam:
    shape: tuple[UtilizationShapePoint, ...] = ()

    def __attrs_post_init__(self):
        validate_shape(self.shape)


@frozen
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = field(default=DEFAULT_RESOURCES, converter=resources_or_default)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def __attrs_post_init__(self):
        if self.type not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ManifestError("type", f"Unsupported value: {self.type!r}: supported values: "
                                f'"{LEAST_ALLOCATED}", "{MOST_ALLOCATED}", "{REQUESTED_TO_CAPACITY_RATIO}"')
        if self.type == REQUESTED_TO_CAPACITY_RATIO and self.requested_to_capacity_ratio is None:
            raise ManifestError("requestedToCapacityRatio", "Required value")


@frozen
class NodeResourcesFitArgs:
    """Upstream ``NodeResourcesFitArgs``."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(factory=ScoringStrategy)

    def __attrs_post_init__(self):
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                raise ManifestError(f"ignoredResourceGroups[{i}]", "resource group name can't contain '/'")


class _PreFilterState:
    """The pod's requests (scheduler units) without the ignored extended resources,
    in the order Filter checks them; ``device_backed``: the extended resources
    among them that devices can serve (DRAExtendedResource): on a node that does
    not advertise one, DynamicResources decides instead."""

    __slots__ = ("requests", "device_backed")

    def __init__(self, requests: dict[str, int], device_backed: frozenset[str] = frozenset()):
        self.requests = {name: requests[name] for name in _ordered(requests)}
        self.device_backed = device_backed


class NodeResourcesFit:
    name = "NodeResourcesFit"
    args_class = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs, handle):
        self.args = args
        self.handle = handle
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.strategy = strategy.type
        self.resources = strategy.resources
        self._row = RowReader(resource_names(self.resources), use_requested=False)
        self._weights = [spec.weight for spec in self.resources]
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO and strategy.requested_to_capacity_ratio is not None:
            self.shape = BrokenLinear(strategy.requested_to_capacity_ratio.shape)
        #: the PreFilter state of pods asking for native resources alone, by their requests (read-only, shared by
        #: the cycles of pods of one shape: it depends on the requests and this plugin's args alone)
        self._native_states: dict[tuple[tuple[str, int], ...], _PreFilterState] = {}

    # --- Filter --------------------------------------------------------------------------

    def _checked_requests(self, pod_info_requests: dict[str, int]) -> dict[str, int]:
        out = {}
        for name, amount in pod_info_requests.items():
            if amount == 0 or name == PODS:
                continue
            if is_extended_resource(name) and (
                name in self.ignored or name.split("/", 1)[0] in self.ignored_groups
            ):
                continue
            out[name] = amount
        return out

    def _state(self, state, pod) -> _PreFilterState:
        cached = state.get(STATE_KEY)
        if cached is None:
            cached = self._pre_filter_state(state, pod)
            state.write(STATE_KEY, cached)
        return cached

    def _requests(self, state, pod) -> dict[str, int]:
        return self._state(state, pod).requests

    def _pre_filter_state(self, state, pod) -> _PreFilterState:
        asked = state.pod_info_of(pod).requests
        key = tuple(asked.items())
        pre = self._native_states.get(key)
        if pre is None:
            requests = self._checked_requests(asked)
            pre = _PreFilterState(requests, self._device_backed(requests))
            if all(name in NATIVE_RESOURCES for name in asked):  # nothing for devices or the DRA state to decide
                if len(self._native_states) >= MAX_KEPT_STATES:
                    self._native_states.clear()
                self._native_states[key] = pre
        return pre

    @hookimpl
    def sign_pod(self, pod):
        """Filter and Score read what the pod requests."""
        fragment = resources_fragment(pod, self.handle.features)
        return fragment if isinstance(fragment, Status) else [fragment]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        state.write(STATE_KEY, self._pre_filter_state(state, pod))
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        pre = state.get(STATE_KEY) or self._state(state, pod)
        allocatable = node_info.allocatable
        used = node_info.requested
        if len(node_info.pods) < allocatable.get(PODS, 0):
            for name, amount in pre.requests.items():
                if amount > allocatable.get(name, 0) - used.get(name, 0):
                    break
            else:
                return None  # the usual answer, without working out the reasons
        reasons = []
        unresolvable = False
        if len(node_info.pods) + 1 > allocatable.get(PODS, 0):
            reasons.append("Too many pods")
        for name, amount in pre.requests.items():
            total = allocatable.get(name, 0)
            if total == 0 and name in pre.device_backed:
                continue  # served by devices here, if at all: DynamicResources' Filter decides
            if amount > total - used.get(name, 0):
                reasons.append(f"Insufficient {name}")
                unresolvable = unresolvable or amount > total
        if not reasons:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, tuple(reasons))

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        pre = self._state(state, pod)
        # whether each node fits a pod of these requests, kept for the next pod of the same requests (the
        # nodes changed since judged again, by Filter itself): a cycle costs those nodes, not a pass over the rows
        key = (self, tuple(pre.requests.items()), pre.device_backed)
        return table.derived(key, lambda some: self._fits(table, some, pre),
                             lambda row: self.filter(state, pod, table.infos[row]) is None)[rows]

    @staticmethod
    def _fits(table: NodeTable, rows: np.ndarray, pre: _PreFilterState) -> np.ndarray:
        """:meth:`filter`'s verdict on each of ``rows`` at once (True: the node has room)."""
        ok = table.free_pods()[rows] >= 1
        for name, amount in pre.requests.items():
            fits = table.free(name)[rows] >= amount
            ok &= (fits | (table.allocatable(name)[rows] == 0)) if name in pre.device_backed else fits
        return ok

    @hookimpl
    def filter_batch_status(self, state, pod, table, rows):
        """:meth:`filter`'s statuses for ``rows`` at once: one Status per
        combination of reasons."""
        pre = self._state(state, pod)
        requests = pre.requests
        too_many = table.free_pods()[rows] < 1
        flags = [too_many]
        unresolvable = np.zeros(len(rows), dtype=bool)
        names = _ordered(requests)
        for name in names:
            total = table.allocatable(name)[rows]
            amount = requests[name]
            short = table.free(name)[rows] < amount
            if name in pre.device_backed:
                short &= total > 0
            flags.append(short)
            unresolvable |= short & (amount > total)
        code = np.zeros(len(rows), dtype=np.int64)
        for bit, flag in enumerate(flags):
            code |= flag.astype(np.int64) << bit
        rejected = code != 0
        code |= (rejected & unresolvable).astype(np.int64) << len(flags)
        labels = ["Too many pods", *(f"Insufficient {name}" for name in names)]
        index = np.full(len(rows), -1, dtype=np.int64)
        present = np.bincount(code[rejected], minlength=1)  # the combinations are small numbers: counted, not sorted
        values = np.flatnonzero(present)
        position = np.zeros(len(present), dtype=np.int64)
        position[values] = np.arange(len(values))
        index[rejected] = position[code[rejected]]
        statuses = []
        for value in values.tolist():
            reasons = tuple(label for bit, label in enumerate(labels) if value >> bit & 1)
            statuses.append(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if value >> len(flags) & 1
                                   else Code.UNSCHEDULABLE, reasons))
        return index, statuses

    # --- PreScore / Score ------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        """The pod's requests as the scoring strategy counts them (non-zero
        defaults for cpu and memory), once per cycle (upstream's
        ``preScoreState``); Score computes them itself when PreScore is off."""
        state.write(PRE_SCORE_KEY, scoring_requests(state.pod_info_of(pod), use_requested=False))
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        return int(self.score_batch(state, pod, NodeTable([node_info]), np.zeros(1, dtype=np.int64))[0])

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        pre = self._state(state, pod)
        devices = device_counts(self.handle.dra, pre.device_backed, table) if pre.device_backed else None
        # (resources, nodes) arrays: every resource scored by the same few numpy operations
        requests = state.get(PRE_SCORE_KEY)
        if requests is None:  # PreScore is disabled in the profile
            requests = scoring_requests(state.pod_info_of(pod), use_requested=False)
        if devices is not None:  # devices' allocations are not the table's: scored afresh
            return self._scores(table, rows, requests, devices)
        score_row = None if self.strategy == REQUESTED_TO_CAPACITY_RATIO else (
            lambda row: self.score_row(state, pod, table, row))
        return kept_scores(self, table, rows, requests, self._row.names,
                           lambda some: self._scores(table, some, requests, None), score_row)

    @hookimpl
    def score_row(self, state, pod, table, row):
        """:meth:`score_batch`'s LeastAllocated or MostAllocated score of the one ``row`` in Python arithmetic
        (the same answer; None: device-backed extended resources, RequestedToCapacityRatio or values too large
        for it: the array path decides)."""
        pre = state.get(STATE_KEY) or self._state(state, pod)
        if pre.device_backed or self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return None
        requests = state.get(PRE_SCORE_KEY)
        if requests is None:  # PreScore is disabled in the profile
            requests = scoring_requests(state.pod_info_of(pod), use_requested=False)
        counted = self._row.read(table, row, requests)
        if counted is None:
            return None
        # upstream's weighted average over the resources the node has (allocatable > 0), floor-divided
        total = divisor = 0
        least = self.strategy == LEAST_ALLOCATED  # else MostAllocated
        allocs, requested = counted
        for alloc, asked, weight in zip(allocs, requested, self._weights):
            if alloc:
                total += weight * ((max(alloc - asked, 0) if least else min(asked, alloc)) * MAX_NODE_SCORE // alloc)
                divisor += weight
        return total // divisor if divisor else 0

    def _scores(self, table: NodeTable, rows: np.ndarray, requests: dict[str, int], devices) -> np.ndarray:
        """The scores of ``rows`` (int64) for a pod of scoring ``requests`` (``devices``: the device counts of
        device-backed extended resources, or None)."""
        # (resources, nodes) arrays, fresh: worked on in place
        alloc, requested, weights = allocatable_and_requested(table, rows, self.resources, requests,
                                                              use_requested=False, devices=devices)
        safe = np.maximum(alloc, 1)
        # requests are never negative, so a resource the node lacks (alloc 0) scores 0 in the first two
        if self.strategy == LEAST_ALLOCATED:  # 0 when more is requested than the node has
            free = np.subtract(alloc, requested, out=requested)
            np.maximum(free, 0, out=free)
            free *= MAX_NODE_SCORE
            free //= safe
            return weighted_average(free, alloc, weights)
        used = np.minimum(requested, alloc, out=requested)
        if self.strategy == MOST_ALLOCATED:
            used *= MAX_NODE_SCORE
            used //= safe
            return weighted_average(used, alloc, weights)
        used *= MAX_UTILIZATION
        used //= safe
        scores = self.shape(used)
        scores[alloc == 0] = 0
        # upstream averages only the resources whose shape score is positive
        return weighted_average(scores, np.where(scores > 0, alloc, 0), weights, rounding=True)

    # --- PlacementScore (a PodGroup's placements) -----------------------------------------

    @hookimpl
    def placement_score(self, state, group, assignments):
        """The tightest fit (KEP-5732): how much of the placement's cpu and
        memory is requested with the group's members there, 0..100 (the mean
        of the two shares), so that a group fills a domain before opening
        another."""
        snapshot = self.handle.snapshot
        table = snapshot.table
        rows = assignments.placement.rows
        inside = set(rows.tolist())
        # members the table already counts here: assumed on a node of this placement (the one last tried)
        counted = {pod.metadata.uid for pod, node in self.handle.pod_groups.state(group.key).scheduled_pods()
                   if snapshot.index.get(node) in inside}
        allocatable = {r: int(table.allocatable(r)[rows].sum()) for r in (CPU, MEMORY)}
        requested = {r: int(table.requested(r)[rows].sum()) for r in (CPU, MEMORY)}
        # each member's cpu and memory, worked out once per attempt (the group's state): every placement asks again
        amounts = state.get(PLACEMENT_AMOUNTS_KEY) if state is not None else None
        if amounts is None:
            amounts = {}
            if state is not None:
                state.write(PLACEMENT_AMOUNTS_KEY, amounts)
        for pod, _ in assignments.assignments:
            uid = pod.metadata.uid
            if uid not in counted:
                asked = amounts.get(uid)
                if asked is None:
                    every = pod_requests(pod)
                    asked = amounts[uid] = (every.get(CPU, 0), every.get(MEMORY, 0))
                requested[CPU] += asked[0]
                requested[MEMORY] += asked[1]
        shares = [min(requested[r], allocatable[r]) * MAX_NODE_SCORE // allocatable[r]
                  for r in (CPU, MEMORY) if allocatable[r]]
        return sum(shares) // len(shares) if shares else 0

    # --- queueing hints ------------------------------------------------------------------

    @hookimpl
    def events_to_register(self):
        """Upstream's: a placed pod deleted (or, with InPlacePodVerticalScaling,
        scaled down), a node added or grown; with DRAExtendedResource a
        DeviceClass added or updated (it may map the pod's extended resource
        to devices)."""
        features = self.handle.features
        pod_actions = ActionType.DELETE
        if features.enabled("InPlacePodVerticalScaling"):
            pod_actions |= ActionType.UPDATE_POD_SCALE_DOWN
        events = [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, pod_actions), self._after_pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                                 self._after_node_change),
        ]
        if features.enabled("DRAExtendedResource"):
            events.append(ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE),
                                               self._after_device_class_change))
        return events

    def _after_pod_change(self, pod, old, new):
        """A placed (or nominated) pod that leaves may help; an update helps only
        while InPlacePodVerticalScaling is on, for ``pod`` itself or a placed
        pod, when it now counts less (its spec, or what the kubelet allocated
        after an in-place resize) of a resource ``pod`` asks for (upstream
        ``isSchedulableAfterPodEvent`` / ``isResourceScaleDown``)."""
        if new is None:
            if not old.spec.node_name and not old.status.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if not self.handle.features.enabled("InPlacePodVerticalScaling"):
            return QueueingHint.QUEUE_SKIP
        if new.metadata.uid != pod.metadata.uid and not new.spec.node_name:
            return QueueingHint.QUEUE_SKIP
        wanted = self._checked_requests(pod_requests(pod))
        before, after = pod_requests(old), pod_requests(new)
        if any(after.get(name, 0) < before.get(name, 0) for name in wanted):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_node_change(self, pod, old, new):
        """A node the pod fits on (allocatable alone) helps when it is new, or
        when it now offers more of something the pod asks for (upstream
        ``isSchedulableAfterNodeChange``: ``isFit``, then
        ``haveAnyRequestedResourcesIncreased``)."""
        requests = pod_requests(pod)
        if not is_fit(self._checked_requests(requests), new.allocatable, self._device_backed(requests)):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if not have_any_requested_resources_increased(requests, old.allocatable, new.allocatable,
                                                      self.handle.features.enabled("DRAExtendedResource")):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _device_backed(self, requests: dict[str, int]) -> frozenset[str]:
        extended = [name for name in requests if name not in NATIVE_RESOURCES]
        dra = dra_manager(self.handle) if extended else None
        return frozenset(dra.device_backed(extended)) if dra is not None else frozenset()

    def _after_device_class_change(self, pod, old, new):
        """A DeviceClass helps when it newly maps an extended resource the pod
        asks for: by ``spec.extendedResourceName`` (added or changed), or, for
        a new class, by its implicit ``deviceclass.resource.kubernetes.io/<name>``
        (upstream ``isSchedulableAfterDeviceClassEvent``)."""
        name = new.spec.extended_resource_name
        if old is not None and old.spec.extended_resource_name == name:
            return QueueingHint.QUEUE_SKIP
        for resource, amount in pod_requests(pod).items():
            if amount and ((name and resource == name)
                           or (old is None and resource == IMPLICIT_EXTENDED_RESOURCE_PREFIX + new.metadata.name)):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def is_fit(requests: dict[str, int], allocatable: dict[str, int], device_backed: frozenset[str] = frozenset()) -> bool:
    """Whether a pod asking ``requests`` (scheduler units, the ignored
    resources left out) fits an empty node of ``allocatable``: one pod slot
    and every request within allocatable, a device-backed extended resource
    the node does not advertise left to DynamicResources (upstream ``isFit``)."""
    if allocatable.get(PODS, 0) < 1:
        return False
    return all(amount <= allocatable.get(name, 0) or (name in device_backed and not allocatable.get(name, 0))
               for name, amount in requests.items())


def have_any_requested_resources_increased(requests: dict[str, int], before: dict[str, int], after: dict[str, int],
                                           dra_extended_resource: bool) -> bool:
    """Whether a node's allocatable grew from ``before`` to ``after`` in
    something a pod asking ``requests`` needs: pod slots always; cpu, memory,
    ephemeral storage and scalar resources the pod asks a non-zero amount of;
    with DRAExtendedResource, an extended resource the node does not
    advertise (devices may serve it) counts as grown (upstream
    ``haveAnyRequestedResourcesIncreased``)."""
    if after.get(PODS, 0) > before.get(PODS, 0):
        return True
    for name, amount in requests.items():
        if amount == 0 or name == PODS:
            continue
        if after.get(name, 0) > before.get(name, 0):
            return True
        if dra_extended_resource and name not in NATIVE_RESOURCES and not after.get(name, 0):
            return True
    return False


def _ordered(requests: dict[str, int]) -> list[str]:
    """cpu, memory, ephemeral-storage first, then the others by name (upstream's order of checks)."""
    head = [r for r in (CPU, MEMORY, EPHEMERAL_STORAGE) if r in requests]
    return head + sorted(r for r in requests if r not in (CPU, MEMORY, EPHEMERAL_STORAGE))
