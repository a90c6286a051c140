"""DynamicResources: pods get the devices their ResourceClaims ask for (upstream plugins/dynamicresources).

- PreEnqueue: every claim of the pod must exist (a template's claim must have
  been generated for the pod); otherwise the pod is gated until it does.
- PreFilter: resolves the pod's claims; claims already allocated restrict the
  pod to their ``allocation.nodeSelector``; unallocated ones need their
  DeviceClasses and no allocation in flight, and get a structured
  :class:`Allocator` over the slices and the devices already taken.  Extended
  resources that devices serve add one more claim (:mod:`.extended`), which
  PreBind creates.
- Filter (per node): allocated claims must be usable on the node; the others
  must be allocatable there (the result is kept for Reserve and published
  for Score plugins through :mod:`kubesched.core.dra.manager`).  A CEL error is
  an Error (the attempt is aborted, never a silent "no match").  For the
  common shape of claims and devices the batch form judges every node at
  once (:mod:`.batch`); the allocation itself is then planned only for the
  nodes someone asks about (Reserve, Score plugins), honouring the device
  preferences Score plugins registered (:func:`~kubesched.core.dra.manager.prefer_devices`).
- PostFilter: deallocates one allocated claim nobody else uses when that is
  what keeps the pod out ("deallocation of ResourceClaim completed").
- Claims shared by a PodGroup (KEP-5729): a pod claim equal to one of its
  PodGroup's ``spec.resourceClaims`` is the group's claim, reserved for the
  PodGroup (one ``reservedFor`` entry however many members).  In the group's
  cycle the first member allocates it and later members share that in-flight
  allocation; the cycle's revert (last member first) releases it with the
  first member.  Unreserve after PreBind drops the group's reservation and
  deallocates the claim once no member of the group is scheduled any more;
  PodGroupPostFilter deallocates group claims pinned to nodes and reserved
  only for a group none of whose members is scheduled (and then ends the
  PodGroupPostFilter chain: preemption would judge a stale allocation).
- PreScore/Score: with ``firstAvailable`` requests, nodes where earlier
  (preferred) subrequests could be satisfied score higher.
- Reserve: the node's allocations become in-flight (their devices are taken for
  every other cycle); Unreserve undoes that and drops the pod from
  ``reservedFor``.
- PreBind: writes the finalizer, ``status.allocation`` and the pod in
  ``status.reservedFor`` through the cluster client, retrying on conflicts,
  and waits for the devices' binding conditions (:mod:`.binding`, which also
  holds Unreserve's write).
- PreFilter AddPod/RemovePod: a preemption dry run that removes every
  consumer of a claim frees its devices.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
from attrs import field, frozen

from kubesched import (
    NODE,
    REMOVED_PODS_KEY,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    ConfigError,
    HintIndex,
    QueueingHint,
    Status,
    hookimpl,
    parse_duration,
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.meta import evolve
from kubesched.core.api.nodeaffinity import selector_matches
from kubesched.core.api.resource_v1 import (
    FINALIZER,
    FIRST_AVAILABLE_MAX_SIZE,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from kubesched.core.api.scheduling_v1beta1 import PodGroup, pod_group_key
from kubesched.core.cluster.client import ApiError
from kubesched.core.dra.allocator import (
    INVALID_POOLS,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    Allocator,
    gate_options,
    within_deadline,
)
from kubesched.core.dra.claims import (
    ClaimNameError,
    claim_keys,
    claim_name,
    group_claim_name,
    group_reference,
    is_pod_done,
    pod_claims,
    pod_reference,
    reserved_for_others,
    shared_claim_names,
)
from kubesched.core.dra.manager import PLANNED_ALLOCATIONS_KEY, PlannedAllocations
from kubesched.core.dra.selectors import SelectorCache

from .batch import DeviceColumns, Feasible
from .binding import BindError, ClaimBinder
from .extended import ExtendedResourceClaim, extended_resource_claim

NAME = "DynamicResources"
STATE_KEY = NAME

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
TIMED_OUT = "timed out trying to allocate devices"
_CANNOT_ALLOCATE = Status(Code.UNSCHEDULABLE, (CANNOT_ALLOCATE,))
_TIMED_OUT_STATUS = Status(Code.UNSCHEDULABLE, (TIMED_OUT,))


def _waiting_for(pod) -> list[str] | None:
    """The claim hint's index keys of a waiting pod: the claims it names (a PodGroup's member: None, asked
    about every claim event, as its claims may come through the group)."""
    return None if pod.spec.scheduling_group is not None else claim_keys(pod)


def _claim_event_keys(old, new) -> tuple[str, ...] | None:
    """The claim hint's index keys of a claim event: the claim's own, or None for a deallocation (which may
    help any pod: upstream's hint queues them all)."""
    if old is not None and old.status.allocation is not None and new.status.allocation is None:
        return None
    return (f"{new.metadata.namespace}/{new.metadata.name}",)


@frozen
class DynamicResourcesArgs:
    """Upstream ``DynamicResourcesArgs``: ``filterTimeout`` (a duration, default
    10s; 0 disables it) bounds how long Filter may search for allocations;
    ``bindingTimeout`` (default 10m, at least 1s) how long PreBind waits for
    the binding conditions of the pod's devices, on the scheduler's clock.

    filterTimeout is wall-clock time (it bounds computing, which a
    simulation's fake clock does not see) and counts from the pod's first
    Filter call in a scheduling cycle, batch Filter included: upstream bounds
    each Filter call and runs 16 in parallel; here Filter calls run one
    after another on the scheduling loop, so a per-node bound would let a
    slow selector hold every other pod for filterTimeout times the nodes.
    Past it, every node answers Unschedulable "timed out trying to allocate
    devices" at once."""

    filter_timeout: str = "10s"
    binding_timeout: str = "10m"

    @property
    def filter_timeout_seconds(self) -> float:
        return parse_duration(self.filter_timeout, "filterTimeout")

    @property
    def binding_timeout_seconds(self) -> float:
        return parse_duration(self.binding_timeout, "bindingTimeout")

    def __attrs_post_init__(self):
        for name, seconds_of in (("filterTimeout", lambda: self.filter_timeout_seconds),
                                 ("bindingTimeout", lambda: self.binding_timeout_seconds)):
            try:
                seconds = seconds_of()
            except ConfigError as err:
                raise ManifestError(name, str(err).partition(": ")[2]) from None
            if name == "filterTimeout" and seconds < 0:
                raise ManifestError(name, "must be zero or positive")
            if name == "bindingTimeout" and seconds < 1:
                raise ManifestError(name, "must be at least 1s")


@attrs.define
class _State:
    """What PreFilter found for one pod (upstream ``stateData``).

    ``claims`` are the pod's claims in ``spec.resourceClaims`` order;
    ``to_allocate`` the indices of the unallocated ones; ``allocated`` the
    devices taken, shared with the plugin's tracker until a preemption dry run
    changes it (``owns_allocated``: copied on first change); ``released`` the
    UIDs of claims a dry run freed and ``removed`` the victim pods per claim UID;
    ``feasible`` the batch Filter's answer (:class:`~.batch.Feasible`: per
    NodeTable row, and the devices it found usable; None: not used);
    ``extended`` the claim for the pod's device-backed extended resources, last
    in ``claims`` (None: the pod has none).  ``group`` is the pod's PodGroup
    (None: none, or not known yet); ``shared`` the indices of the claims it
    shares with that group, ``joined`` those whose in-flight allocation another
    member made (``claims`` holds that version), ``bound`` those PreBind
    found or made reserved for this pod (or its group) and ``refused`` the one
    PreBind refused for a device another claim in use holds (Unreserve
    withdraws its allocation).
    """

    claims: list[ResourceClaim]
    to_allocate: list[int] = field(factory=list)
    allocator: Allocator | None = None
    allocated: AllocatedState | None = None
    owns_allocated: bool = False
    unavailable: set[int] = field(factory=set)
    node_allocations: PlannedAllocations = field(factory=PlannedAllocations)
    allocations: dict[int, Any] = field(factory=dict)
    released: set[str] = field(factory=set)
    removed: dict[str, set[str]] = field(factory=dict)
    feasible: Feasible | None = None
    extended: ExtendedResourceClaim | None = None
    group: PodGroup | None = None
    shared: set[int] = field(factory=set)
    joined: set[int] = field(factory=set)
    bound: set[int] = field(factory=set)
    refused: set[int] = field(factory=set)
    #: when this cycle's filterTimeout runs out (``time.monotonic()`` seconds; None: Filter not called yet)
    filter_ends: float | None = None
    #: the batch Filter ran out of filterTimeout: every node timed out
    timed_out: bool = False

    def consumer(self, index: int, pod) -> ResourceClaimConsumerReference:
        """Who claim ``index`` is reserved for: the PodGroup for a shared claim, else the pod."""
        if self.group is not None and index in self.shared:
            return group_reference(self.group)
        return pod_reference(pod)

    def clone(self) -> "_State":
        """Dry runs (nominated pods, preemption) change a clone, never this state."""
        if self.allocator is None:
            return self
        return attrs.evolve(self, owns_allocated=False, released=set(self.released),
                            removed={uid: set(pods) for uid, pods in self.removed.items()},
                            unavailable=self.unavailable, node_allocations=self.node_allocations,
                            feasible=None)

    def writable_allocated(self) -> AllocatedState:
        """``allocated``, copied first if it is still shared (copy on write)."""
        self.feasible = None
        if self.allocated is None or self.allocator is None:
            raise RuntimeError("writable_allocated() needs a state with claims to allocate")
        if not self.owns_allocated:
            self.allocated = self.allocated.copy()
            self.allocator = self.allocator.with_allocated(self.allocated)
            self.owns_allocated = True
        return self.allocated


class DynamicResources:
    """The DynamicResources plugin (see the module docstring for each extension point)."""

    name = NAME
    args_class = DynamicResourcesArgs

    def __init__(self, args: DynamicResourcesArgs, handle):
        self.handle = handle
        self.dra = handle.dra
        self.filter_timeout = args.filter_timeout_seconds
        self.binding_timeout = args.binding_timeout_seconds
        self.binder = ClaimBinder(handle)
        self.selectors = SelectorCache()
        #: devices taken by allocated and in-flight claims (the DRA manager's, kept current)
        self.allocated = self.dra.allocated
        # what depends only on slices, classes and taint rules is kept across cycles
        self._allocator: Allocator | None = None
        self._columns: DeviceColumns | None = None
        self._columns_table = None  # the NodeTable the columns were built for
        self._changed_devices: set = set()
        self.dra.add_device_listener(self._changed_devices.update)  # the batch columns re-read them
        for kind in ("ResourceSlice", "DeviceClass", "DeviceTaintRule"):
            handle.informers.add_handlers(kind, self._inputs_changed, lambda old, new: self._inputs_changed(new),
                                          self._inputs_changed)

    def _inputs_changed(self, _obj) -> None:
        self._allocator = None
        self._columns = self._columns_table = None

    def _cycle_allocator(self) -> Allocator:
        """An allocator for this cycle over the devices taken now."""
        now = self.handle.clock.now()
        if self._allocator is None:
            self._allocator = Allocator(self.dra.slices(), self.dra.device_classes(), self.allocated,
                                        self.selectors, self.dra.taint_rules(), now=now,
                                        **gate_options(self.handle.features))
        return self._allocator.with_allocated(self.allocated, now)

    # --- events --------------------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod):
        """A pod with resource claims is unsignable (upstream: whether its claims are node-local is not
        simple to tell)."""
        if pod.spec.resource_claims:
            return Status.unschedulable("pods with dra resource claims are not signable")
        return None

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                                              | ActionType.UPDATE_NODE_TAINT)),
            ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.ADD | ActionType.UPDATE),
                                 self._hint_claim_change, HintIndex(_waiting_for, _claim_event_keys)),
            ClusterEventWithHint(ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                                 self._hint_pod_change),
            ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent("ResourceSlice", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent("DeviceTaintRule", ActionType.ALL)),
            # the ResourceClaim controller recorded a claim generated for the pod's PodGroup
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.UPDATE), self._hint_pod_group_change),
        ]

    def _group(self, pod) -> PodGroup | None:
        """The PodGroup ``pod`` belongs to, as the scheduler knows it (None: none or not yet)."""
        if pod.spec.scheduling_group is None:
            return None
        return self.handle.pod_groups.group_of(pod)

    def _claims(self, pod, group: PodGroup | None = None) -> list[tuple[str, ResourceClaim]]:
        return pod_claims(pod, self.dra.get_claim, group if group is not None else self._group(pod))

    def _hint_claim_change(self, pod, old, new) -> QueueingHint:
        """Upstream ``isSchedulableAfterClaimChange``."""
        try:
            uses = any(c.metadata.uid == new.metadata.uid for _, c in self._claims(pod))
        except ClaimNameError:
            return QueueingHint.QUEUE_SKIP
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.QUEUE  # deallocated: its devices are free for anyone
        if not uses:
            return QueueingHint.QUEUE_SKIP
        if old is None or old.status != new.status:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _hint_pod_group_change(self, pod, old, new) -> QueueingHint:
        """The pod's PodGroup got the names of the claims generated for it."""
        if new is None or pod_group_key(pod) != new.key or (
                old is not None and old.status.resource_claim_statuses == new.status.resource_claim_statuses):
            return QueueingHint.QUEUE_SKIP
        try:
            self._claims(pod, new)
        except ClaimNameError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _hint_pod_change(self, pod, old, new) -> QueueingHint:
        if new is None or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            self._claims(new)
        except ClaimNameError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # --- PreEnqueue / PreFilter ----------------------------------------------------------

    @hookimpl
    def pre_enqueue(self, pod):
        if not pod.spec.resource_claims:
            return None
        try:
            self._claims(pod)
        except ClaimNameError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),))
        return None

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        extended = extended_resource_claim(pod, self.dra)
        if not pod.spec.resource_claims and extended is None:
            return Status.skip()
        data = _State([])  # upstream writes an empty state first: PostFilter then has nothing to deallocate
        state.write(STATE_KEY, data)
        group = data.group = self._group(pod)
        try:
            found = self._claims(pod, group)
        except ClaimNameError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),))
        claims = [claim for _, claim in found]
        shared = shared_claim_names(pod, group)
        data.shared = {index for index, (name, _) in enumerate(found) if name in shared}
        if extended is not None:
            extended.index = len(claims)
            claims.append(extended.claim)
            data.extended = extended
        if not claims:
            return Status.skip()
        for index, claim in enumerate(claims):
            if claim.status.allocation is not None:
                continue
            if self.dra.claim_has_pending_allocation(claim.metadata.uid):
                # a member of the pod's group allocated the group's claim in this cycle: use that allocation
                pending = (self.dra.group_pending_allocation(claim.metadata.uid, group.key)
                           if group is not None and index in data.shared else None)
                if pending is not None:
                    claims[index] = pending
                    data.joined.add(index)
                    continue
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
                    f"resource claim {claim.key} is in the process of being allocated",))
            data.to_allocate.append(index)
            for request in claim.spec.devices.requests:
                status = self._check_classes(request)
                if status is not None:
                    return status
        data.claims = claims
        if data.to_allocate:
            data.allocated = self.allocated
            data.allocator = self._cycle_allocator()
            data.node_allocations = PlannedAllocations(lambda node_name, order: self._plan(data, node_name, order),
                                                       state)
            for victim in state.get(REMOVED_PODS_KEY, ()):  # a PodGroup's preemption placing it without them
                self._discount(data, victim)
        state.write(PLANNED_ALLOCATIONS_KEY, data.node_allocations)
        return None

    def _plan(self, data: _State, node_name: str, order) -> dict | None:
        """The allocation of the pod's unallocated claims on ``node_name`` (in
        the device ``order`` Score plugins asked for), or None."""
        node_info = self.handle.snapshot.get(node_name)
        if node_info is None or data.allocator is None:
            return None
        to_allocate = self._to_allocate(data, node_info.node)
        only = None
        feasible = data.feasible
        if feasible is not None and feasible.columns.table is self.handle.snapshot.table:
            # the batch Filter found which devices could serve the claim: the search takes the first of them
            only = feasible.devices_on(self.handle.snapshot.index[node_name])
        try:
            results = data.allocator.allocate(node_info.node, to_allocate, order=order, only=only)
        except (AllocationError, AllocationTimeout):
            return None
        if results is None or len(results) != len(to_allocate):
            return None
        return {claim.key: result for claim, result in zip(to_allocate, results)}

    def _to_allocate(self, data: _State, node) -> list[ResourceClaim]:
        """The claims to allocate on ``node``; the extended-resource claim as
        ``node`` needs it (:meth:`ExtendedResourceClaim.on`), or not at all."""
        extended = data.extended
        claims = []
        for i in data.to_allocate:
            if extended is not None and i == extended.index:
                variant = extended.on(node)
                if variant is not None:
                    claims.append(variant[0])
            else:
                claims.append(data.claims[i])
        return claims

    def _check_classes(self, request) -> Status | None:
        """Upstream ``validateDeviceClass`` for a request, or for the subrequests
        of a ``firstAvailable`` request: an alternative whose class does not
        exist is passed over by the allocator, so only all of them missing is
        UnschedulableAndUnresolvable."""
        if request.exactly is not None:
            wanted = [(request.name, request.exactly.device_class_name)]
        else:
            wanted = [(f"{request.name}/{sub.name}", sub.device_class_name) for sub in request.first_available]
        for name, class_name in wanted:
            if not class_name:
                return Status(Code.ERROR, (f"request {name}: unsupported request type",))
        missing = [(name, class_name) for name, class_name in wanted if self.dra.device_class(class_name) is None]
        if not missing or len(missing) < len(wanted):
            return None
        name, class_name = missing[0]
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"request {name}: device class {class_name} does not exist",))

    @hookimpl
    def pre_filter_add_pod(self, state, pod, pod_info_to_add, node_info):
        data = state.get(STATE_KEY)
        if data is None or data.allocator is None:
            return None
        for claim in self._victim_claims(pod_info_to_add.pod):
            uid = claim.metadata.uid
            removed = data.removed.get(uid)
            if removed is None or pod_info_to_add.pod.metadata.uid not in removed:
                continue
            removed.discard(pod_info_to_add.pod.metadata.uid)
            if uid in data.released:
                data.released.discard(uid)
                data.writable_allocated().add(claim.status.allocation)
        return None

    @hookimpl
    def pre_filter_remove_pod(self, state, pod, pod_info_to_remove, node_info):
        data = state.get(STATE_KEY)
        if data is None or data.allocator is None:
            return None
        self._discount(data, pod_info_to_remove.pod)
        return None

    def _discount(self, data: _State, victim) -> None:
        """Free, for this cycle's allocations, the devices of the claims that only ``victim`` and pods removed
        before it use (a claim reserved for a PodGroup: once every running member holding it is removed)."""
        for claim in self._victim_claims(victim):
            uid = claim.metadata.uid
            removed = data.removed.setdefault(uid, set())
            if victim.metadata.uid in removed:
                continue
            removed.add(victim.metadata.uid)
            if claim.status.allocation is None or uid in data.released:
                continue
            users = self._claim_users(claim)
            if users is not None and users <= removed:
                data.released.add(uid)
                data.writable_allocated().remove(claim.status.allocation)

    def _claim_users(self, claim: ResourceClaim) -> set[str] | None:
        """The UIDs of the running pods holding allocated ``claim``: the pods it is reserved for, and the
        running (assigned or assumed) members of a PodGroup it is reserved for that use it; None when it is
        reserved for something else."""
        users: set[str] = set()
        for ref in claim.status.reserved_for:
            if ref.resource == "pods" and not ref.api_group:
                users.add(ref.uid)
            elif ref.resource == "podgroups":
                state = self.handle.pod_groups.state(f"{claim.metadata.namespace}/{ref.name}")
                users.update(member.metadata.uid for member in state.assigned_pods() + state.assumed_pods()
                             if any(c.metadata.uid == claim.metadata.uid for c in self._victim_claims(member)))
            else:
                return None
        return users

    def _victim_claims(self, pod) -> list[ResourceClaim]:
        """The claims of a (running) pod, each once; unresolvable ones are skipped."""
        seen: dict[str, ResourceClaim] = {}
        group = self._group(pod)
        for pod_claim in pod.spec.resource_claims:
            try:
                name, _ = claim_name(pod, pod_claim, group)
            except ClaimNameError:
                continue
            claim = self.dra.get_claim(pod.metadata.namespace, name) if name else None
            if claim is not None:
                seen.setdefault(claim.metadata.uid, claim)
        return list(seen.values())

    # --- Filter --------------------------------------------------------------------------

    @hookimpl
    def filter(self, state, pod, node_info):
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return None
        node = node_info.node
        unavailable = [
            index for index, claim in enumerate(data.claims)
            if claim.status.allocation is not None and claim.status.allocation.node_selector is not None
            and not selector_matches(claim.status.allocation.node_selector, node)
        ]
        if unavailable:
            data.unavailable.update(unavailable)
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_AVAILABLE,))
        if data.allocator is None:
            return None
        if data.feasible is not None:
            row = self.handle.snapshot.index.get(node.metadata.name)
            if row is not None and row < len(data.feasible.rows):
                return None if data.feasible.rows[row] else _CANNOT_ALLOCATE
        to_allocate = self._to_allocate(data, node)
        deadline = self._filter_deadline(data)
        if data.timed_out or (deadline is not None and deadline()):
            return _TIMED_OUT_STATUS
        known = data.allocator.known_fit(node, to_allocate)
        if known is not None:  # an equivalent node was searched: the plan is made when asked for (_plan)
            return None if known else Status(Code.UNSCHEDULABLE, (CANNOT_ALLOCATE,))
        try:
            results = data.allocator.allocate(node, to_allocate, deadline=deadline)
        except AllocationTimeout:
            return _TIMED_OUT_STATUS
        except AllocationError as err:
            return Status(Code.ERROR, (str(err),), error=err)
        if results is None or len(results) != len(to_allocate):
            if data.allocator.has_invalid_pools(node):
                return Status(Code.UNSCHEDULABLE, (INVALID_POOLS,))
            # Unschedulable (not ...AndUnresolvable): preemption may free devices (upstream DRAPreemption)
            return Status(Code.UNSCHEDULABLE, (CANNOT_ALLOCATE,))
        data.node_allocations.set(node.metadata.name, {claim.key: result for claim, result in zip(to_allocate, results)})
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        """Every node at once when the pod's claims and the devices are of the
        plain shape (:mod:`.batch`); None otherwise (Filter runs per node)."""
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return np.ones(len(rows), dtype=bool)
        if data.timed_out:
            return np.zeros(len(rows), dtype=bool)
        if data.allocator is None or len(data.to_allocate) != 1 or data.owns_allocated:
            return None
        if data.extended is not None and any((table.allocatable(name) > 0).any() for name in data.extended.resources):
            return None  # some node serves the resources the classic way: judged per node
        if any(c.status.allocation is not None and c.status.allocation.node_selector is not None
               for c in data.claims):
            return None
        columns = self._device_columns(table)
        if columns is None:
            return None
        try:
            with within_deadline(self._filter_deadline(data)):
                feasible = columns.feasible(data.allocator, data.claims[data.to_allocate[0]])
        except AllocationTimeout:
            data.timed_out = True
            return np.zeros(len(rows), dtype=bool)
        if feasible is None:
            return None
        data.feasible = feasible
        return feasible.rows[rows]

    @hookimpl
    def filter_batch_status(self, state, pod, table, rows):
        """The batch Filter's rejections (all "cannot allocate all claims"), or None."""
        data: _State | None = state.get(STATE_KEY)
        if data is not None and data.timed_out:
            return np.zeros(len(rows), dtype=np.int64), [_TIMED_OUT_STATUS]
        if data is not None and data.feasible is not None and not data.owns_allocated:
            feasible = data.feasible.rows[rows]  # this cycle's batch Filter already judged every node
        else:
            feasible = self.filter_batch(state, pod, table, rows)
        if feasible is None:
            return None
        return np.where(feasible, -1, 0), [_CANNOT_ALLOCATE]

    def _filter_deadline(self, data: _State):
        """The check of this cycle's filterTimeout (started at the first call), or None when it is 0."""
        if self.filter_timeout <= 0:
            return None
        if data.filter_ends is None:
            data.filter_ends = time.monotonic() + self.filter_timeout
        ends = data.filter_ends
        return lambda: time.monotonic() > ends

    def _device_columns(self, table) -> DeviceColumns | None:
        """The batch columns for ``table``, built when slices, classes, taint rules
        or the nodes changed, with the devices whose use changed re-read."""
        if self._columns_table is not table:
            self._columns_table = table
            self._changed_devices.clear()
            self._columns = DeviceColumns.build(table, self._cycle_allocator(), self.allocated)
            return self._columns
        columns = self._columns
        if columns is None:
            return None  # this cluster is not of the plain shape
        if self._changed_devices:
            columns.refresh(self.allocated, self._changed_devices)
            self._changed_devices.clear()
        return columns

    # --- PostFilter ----------------------------------------------------------------------

    @hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        if not pod.spec.resource_claims:
            return None, Status(Code.UNSCHEDULABLE)
        data: _State | None = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None, Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",))
        # upstream picks one at random (map order); the lowest index keeps runs reproducible
        for index in sorted(data.unavailable):
            claim = data.claims[index]
            users = claim.status.reserved_for
            if not users or (len(users) == 1 and users[0].uid == pod.metadata.uid):
                # upstream clears the device statuses with the allocation: the API server
                # refuses a device status for a device that is not allocated
                freed = attrs.evolve(claim, status=attrs.evolve(claim.status, allocation=None, reserved_for=(),
                                                                devices=()))
                try:
                    self.handle.cluster.update_status(freed)
                except ApiError as err:
                    return None, Status(Code.ERROR, (str(err),), error=err)
                return None, Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",))
        return None, Status(Code.UNSCHEDULABLE, ("still not schedulable",))

    @hookimpl
    def pod_group_post_filter(self, state, group, schedule_group):
        """The whole group failed: deallocate the group's claims that are
        allocated to some nodes only (``allocation.nodeSelector``), reserved for
        nobody but this PodGroup, while none of its members is scheduled - an
        allocation left from an earlier run of the group that may be what keeps
        it out.  Success (no nominations) when one was deallocated: the chain
        ends, so no preemption judges the group against the stale allocation,
        and the group is tried again once the deallocation is seen (its
        members' Filter rejected nodes over the claim, so the claim's update
        moves them).  Unschedulable otherwise: the next PodGroupPostFilter
        plugin (DefaultPreemption) gets its turn."""
        pod_group: PodGroup = group.pod_group
        if not pod_group.spec.resource_claims or self.handle.pod_groups.state(pod_group.key).scheduled_count():
            return None, Status(Code.UNSCHEDULABLE)
        namespace, uid = pod_group.metadata.namespace, pod_group.metadata.uid
        freed = 0
        for group_claim in pod_group.spec.resource_claims:
            try:
                name, must_check_owner = group_claim_name(pod_group, group_claim)
            except ClaimNameError:
                continue
            claim = self.dra.get_claim(namespace, name) if name else None
            if (claim is None or claim.status.allocation is None or claim.status.allocation.node_selector is None
                    or reserved_for_others(claim, uid) or self.dra.claim_has_pending_allocation(claim.metadata.uid)
                    or (must_check_owner and not any(ref.controller and ref.uid == uid
                                                     for ref in claim.metadata.owner_references))):
                continue
            freed_claim = attrs.evolve(claim, status=attrs.evolve(claim.status, allocation=None, reserved_for=(),
                                                                  devices=()))
            try:
                self.handle.cluster.update_status(freed_claim)
            except ApiError as err:
                return None, Status(Code.ERROR, (str(err),), error=err)
            freed += 1
        return None, (None if freed else Status(Code.UNSCHEDULABLE))

    # --- Score ---------------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        data: _State | None = state.get(STATE_KEY)
        if data is None or not any(r.first_available for i in data.to_allocate
                                   for r in data.claims[i].spec.devices.requests):
            return Status.skip()
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        """Per allocated subrequest at position i of its ``firstAvailable``: ``8 - i``."""
        data: _State = state.read(STATE_KEY)
        planned = data.node_allocations.get(node_info.name) or {}
        total = 0
        for claim in (data.claims[i] for i in data.to_allocate):
            allocation = planned.get(claim.key)
            if allocation is None:
                continue
            positions = {f"{r.name}/{sub.name}": n for r in claim.spec.devices.requests
                         for n, sub in enumerate(r.first_available)}
            for result in allocation.devices.results:
                position = positions.get(result.request)
                if position is not None:
                    total += FIRST_AVAILABLE_MAX_SIZE - position
        return total

    @hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        """Upstream ``DefaultNormalizeScore``: the best node gets 100."""
        top = int(scores.max()) if len(scores) else 0
        if top > 0:
            scores[:] = scores * 100 // top
        return None

    # --- Reserve / Unreserve -------------------------------------------------------------

    @hookimpl
    def reserve(self, state, pod, node_name):
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return None
        for index in data.joined:  # the group's claim another member allocated: shared until PreBind writes it
            claim = data.claims[index]
            data.allocations[index] = claim.status.allocation
            self.dra.share_claim_pending_allocation(claim.metadata.uid, pod.metadata.uid)
        if not data.to_allocate:
            return None
        planned = data.node_allocations.get(node_name)
        if planned is None:
            return Status(Code.ERROR, ("claim allocation not found for node",))
        extended = data.extended
        for index in data.to_allocate:
            claim = data.claims[index]
            allocation = planned.get(claim.key)
            if allocation is None:  # the extended-resource claim on a node that serves the resources itself
                continue
            if extended is not None and index == extended.index:
                node_info = self.handle.snapshot.get(node_name)
                extended.chosen = extended.on(node_info.node) if node_info is not None else None
                if extended.chosen is not None:
                    claim = extended.chosen[0]
            data.allocations[index] = allocation
            finalizers = claim.metadata.finalizers
            if FINALIZER not in finalizers:
                finalizers = finalizers + (FINALIZER,)
            pending = evolve(claim, metadata=evolve(claim.metadata, finalizers=finalizers),
                             status=evolve(claim.status, allocation=allocation))
            group = data.group.key if data.group is not None and index in data.shared else None
            self.dra.signal_claim_pending_allocation(pending, pod.metadata.uid, group)
        return None

    @hookimpl
    def unreserve(self, state, pod, node_name):
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return
        extended = data.extended
        if extended is not None and extended.created is not None:
            # upstream deletes the extended-resource claim of a failed binding; the next cycle makes a new one
            try:
                self.handle.cluster.delete("ResourceClaim", extended.created.metadata.name,
                                           extended.created.metadata.namespace, uid=extended.created.metadata.uid)
            except ApiError:
                pass  # the claim controller deletes it once no pod uses it
            data.claims[extended.index] = extended.claim
            extended.created = None
        for index, claim in enumerate(data.claims):
            if self.dra.release_claim_pending_allocation(claim.metadata.uid, pod.metadata.uid):
                self.dra.restore_claim(claim.key)
            current = self.dra.get_claim(claim.metadata.namespace, claim.metadata.name) or claim
            if current.status.allocation is None:
                continue
            consumer = data.consumer(index, pod)
            if index in data.shared:
                # the group's reservation goes (and the claim with it) with the last member scheduled
                if index not in data.bound or data.group is None or self._members_scheduled(data.group, pod):
                    continue
            if any(ref.uid == consumer.uid for ref in current.status.reserved_for):
                try:
                    self.binder.drop_reservation(current, consumer.uid,
                                                 deallocate=index in data.shared or index in data.refused)
                except ApiError:
                    pass  # upstream only logs: the claim controller drops stale reservations

    def _members_scheduled(self, group: PodGroup, pod) -> bool:
        """Is a member of ``group`` other than ``pod`` assumed or bound (and not finished)?"""
        state = self.handle.pod_groups.state(group.key)
        return any(member.metadata.uid != pod.metadata.uid and not is_pod_done(member)
                   for member in state.assigned_pods() + state.assumed_pods())

    # --- PreBind -------------------------------------------------------------------------

    @hookimpl
    def pre_bind_pre_flight(self, state, pod, node_name):
        """Skip for a pod without claims (PreFilter skipped it or found none), as upstream; else it will act."""
        data: _State | None = state.get(STATE_KEY)
        return Status(Code.SKIP) if data is None or not data.claims else None

    @hookimpl
    def pre_bind(self, state, pod, node_name):
        data: _State | None = state.get(STATE_KEY)
        if data is None:
            return None
        for index, claim in enumerate(data.claims):
            consumer = data.consumer(index, pod)
            if any(ref.uid == consumer.uid for ref in claim.status.reserved_for):
                data.bound.add(index)
                continue
            allocation = data.allocations.get(index)
            try:
                if data.extended is not None and index == data.extended.index:
                    written = self.binder.create_extended_claim(data.extended, allocation, pod)
                    if written is not None:
                        data.claims[index] = written
                else:
                    data.claims[index] = self.binder.bind_claim(claim, allocation, index in data.shared, pod, consumer)
            except (ApiError, BindError) as err:
                return Status(Code.ERROR, (str(err),), error=err)
            data.bound.add(index)
        conflict = self.binder.device_conflict(pod, [(claim, data.allocations.get(index), data.consumer(index, pod).uid)
                                                     for index, claim in enumerate(data.claims)])
        if conflict is not None:
            index, status = conflict
            data.refused.add(index)
            return status
        return self.binder.wait_for_binding_conditions(pod, node_name, data.claims, self.binding_timeout)


