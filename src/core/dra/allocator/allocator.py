"""The structured-parameters device allocator of Dynamic Resource Allocation.

Given the ResourceSlices, DeviceClasses and what is already allocated, find
devices for the unallocated ResourceClaims of a pod on one node, or report
that there are none.  It mirrors upstream's allocator
(k8s.io/dynamic-resource-allocation ``structured``, the "incubating" variant:
every GA and beta feature on, deterministic order) with these features:
prioritized lists (``firstAvailable``), admin access, device taints and
tolerations (also from DeviceTaintRules), partitionable devices (shared
counters, per-device node selection), consumable capacity
(``allowMultipleAllocations``, capacity requests, ``distinctAttribute``) and
binding conditions; and two alpha features of upstream's "experimental"
variant, each only when its gate is on (the caller says so):
DRAListTypeAttributes (list-typed attributes in ``matchAttribute`` and
``distinctAttribute`` as sets, :mod:`.constraints`) and
DRADeviceCompatibilityGroups (devices sharing a counter set must share a
compatibility group, :mod:`.compatibility`).

The search is depth-first with backtracking, first solution wins: claims in
order, their requests in order, a ``firstAvailable`` request's subrequests in
order (the first one with which *everything after it* can still be allocated
is chosen), and devices in pool order (driver, pool name), slice name and
published order.  Devices for one request are tried as combinations, not
permutations.  Selectors are evaluated class first, then request, the first
false result deciding; their results are remembered in the
:class:`~kubesched.core.dra.selectors.SelectorCache`, so each (selector, device) pair is
evaluated once per device version.

Usage (the DynamicResources plugin: one allocator per scheduling cycle, one
:meth:`Allocator.allocate` per candidate node)::

    state = AllocatedState.from_claims(allocated_and_in_flight_claims)
    allocator = Allocator(slices, classes_by_name, state, selector_cache, taint_rules)
    results = allocator.allocate(node, claims_to_allocate)   # None: not on this node
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import uuid
from fractions import Fraction
from typing import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from kubesched.core import cel
from kubesched.core.api.core_v1 import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.core.api.nodeaffinity import NAME_FIELD
from kubesched.core.api.resource_v1 import (
    ALLOCATION_CONFIG_SOURCE_CLAIM,
    ALLOCATION_CONFIG_SOURCE_CLASS,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceTaintRule,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.core.cel import CelCompileError, CelRuntimeError
from kubesched.core.dra.allocated_devices import AllocatedState, DeviceID
from kubesched.core.dra.allocator import capacity, compatibility
from kubesched.core.dra.allocator.constraints import AttributeConstraint
from kubesched.core.dra.allocator.equivalence import SearchMemo, equivalence_key
from kubesched.core.dra.allocator.pools import Pool, SliceIndex, node_matches
from kubesched.core.dra.allocator.requests import (
    AllocationError,
    Candidate,
    ClaimSpec,
    NodeView,
    RequestSpec,
)
from kubesched.core.dra.devicetaints import affects_scheduling, rule_taints, untolerated
from kubesched.core.dra.selectors import SelectorCache
from kubesched.core.features import FeatureGates

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "gate_options",
    "within_deadline",
    "DeviceID",
]

#: The deadline is checked every 64 search steps (a clock read costs more than a step).
DEADLINE_CHECK_MASK = 63

#: (device, capacity requests) consumptions an allocator lineage remembers before it starts afresh.
MAX_REMEMBERED_CONSUMPTIONS = 100_000

#: Namespace of the deterministic share IDs (uuid5 of claim, request and device).
SHARE_ID_NAMESPACE = uuid.UUID("6b1d6f0e-3c2a-5d43-9a55-6b7562657363")


#: Why allocation failed on a node where some pool is invalid (upstream's ErrFailedAllocationOnNode):
#: per node, Unschedulable there.
INVALID_POOLS = "invalid resource pools were encountered"


def gate_options(features: FeatureGates) -> dict[str, bool]:
    """The :class:`Allocator` keyword arguments the feature gates decide
    (DRAListTypeAttributes, DRADeviceCompatibilityGroups)."""
    return {"list_type_attributes": features.enabled("DRAListTypeAttributes"),
            "compatibility_groups": features.enabled("DRADeviceCompatibilityGroups")}


class AllocationTimeout(TimeoutError):
    """The ``deadline`` callback of :meth:`Allocator.allocate` asked to stop
    (upstream: the Filter timeout cancelled the context)."""


@contextlib.contextmanager
def within_deadline(deadline: Callable[[], bool] | None) -> Iterator[None]:
    """Inside the block, a selector evaluation stops once ``deadline()`` turns
    true and the block raises :class:`AllocationTimeout` (for the work around
    an allocation that evaluates selectors, such as the batch Filter's)."""
    try:
        with cel.abort_when(deadline):
            yield
    except cel.EvaluationAborted as err:
        raise AllocationTimeout(str(err)) from None


class _MaxSizeExceeded(Exception):
    """Internal: the current path cannot stay within 32 results per claim."""


def _uuid5(name: str) -> str:
    """``str(uuid.uuid5(SHARE_ID_NAMESPACE, name))`` (RFC 4122 version 5: SHA-1 of
    the namespace and the name, version and variant bits set), without the
    UUID object: a share ID is made for every shared device allocated."""
    digest = bytearray(hashlib.sha1(_SHARE_ID_NAMESPACE_BYTES + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50
    digest[8] = (digest[8] & 0x3F) | 0x80
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_SHARE_ID_NAMESPACE_BYTES = SHARE_ID_NAMESPACE.bytes


class _Request:
    """A request during one :meth:`Allocator.allocate` call."""

    __slots__ = ("spec", "num_devices", "all_devices", "matches")

    def __init__(self, spec: RequestSpec):
        self.spec = spec
        self.num_devices = spec.count
        self.all_devices: list[Candidate] = []
        self.matches: dict[Candidate, bool] = {}


class _Pick:
    __slots__ = ("spec", "candidate", "share_id", "consumed")

    def __init__(self, spec: RequestSpec, candidate: Candidate, share_id: str | None, consumed):
        self.spec = spec
        self.candidate = candidate
        self.share_id = share_id
        self.consumed = consumed


class Allocator:
    """Allocates devices for ResourceClaims, one node at a time.

    ``slices``: every ResourceSlice; ``classes``: DeviceClasses by name;
    ``allocated``: devices in use by allocated and in-flight claims (not
    modified); ``selectors``: the scheduler's long-lived selector memo;
    ``taint_rules``: DeviceTaintRules whose taints apply to the devices they
    select (:mod:`kubesched.core.dra.devicetaints`); ``now``: seconds, stamped as
    ``allocationTimestamp`` into results with binding conditions (None: left
    unset, as upstream's allocator does; its plugin stamps it in PreBind).
    ``list_type_attributes`` / ``compatibility_groups``: the DRAListTypeAttributes /
    DRADeviceCompatibilityGroups feature gates are on.

    Build one per scheduling cycle: it indexes the slices once and remembers
    per node and per claim what does not depend on the other.  :meth:`allocate`
    may be called from several threads.  ``search_steps`` counts the search
    steps of all calls (upstream's ``NumAllocateOneInvocations``).
    """

    def __init__(
        self,
        slices: Sequence[ResourceSlice],
        classes: Mapping[str, DeviceClass],
        allocated: AllocatedState,
        selectors: SelectorCache,
        taint_rules: Sequence[DeviceTaintRule] = (),
        now: float | None = None,
        list_type_attributes: bool = False,
        compatibility_groups: bool = False,
    ):
        self.classes = classes
        self.list_type_attributes = list_type_attributes
        self.compatibility_groups = compatibility_groups
        self.allocated = allocated
        self.selectors = selectors
        self.taint_rules = tuple(taint_rules)
        self.now = now
        self.search_steps = 0
        self._index = SliceIndex(slices)
        self._nodes: dict[str, NodeView] = {}
        self._claims: dict[int, ClaimSpec] = {}
        self._available_counters: dict[tuple[str, str], dict[tuple[str, str], Fraction]] = {}
        self._group_baselines: dict[tuple[str, str], dict[str, object]] = {}
        self._taints: dict[DeviceID, tuple] = {}
        #: (device, capacity requests) -> what allocating it for them consumes (see :meth:`consumption`)
        self._consumption: dict[tuple, dict[str, Fraction] | None] = {}
        #: searches by what decides them on an equivalent node (:mod:`.equivalence`)
        self._searches = SearchMemo()

    def with_allocated(self, allocated: AllocatedState, now: float | None = None) -> Allocator:
        """This allocator over another allocated state: the next scheduling
        cycle, or a preemption dry run that freed devices.  What depends only on
        the slices, classes and taint rules (the slice index, per-node views,
        device taints) is shared; ``now`` replaces the timestamp when given."""
        other = copy.copy(self)
        other.allocated = allocated
        other.now = self.now if now is None else now
        other.search_steps = 0
        other._claims = {}
        other._available_counters = {}
        other._group_baselines = {}
        other._searches = SearchMemo()
        return other

    def allocate(
        self, node: Node, claims: Sequence[ResourceClaim], deadline: Callable[[], bool] | None = None,
        order: Callable[[DeviceID], object] | None = None, only: Collection[DeviceID] | None = None,
    ) -> list[AllocationResult] | None:
        """One :class:`AllocationResult` per claim, in order, for ``node``; None
        when these claims cannot all get devices there (not enough matching free
        devices, incomplete or invalid pools, ...).  ``order``: a device
        preference, ``key(DeviceID)`` ascending (stable), replacing pool and
        slice order when candidates are tried; it changes which devices are
        chosen, never whether the claims fit.  ``only``: for one claim with a
        single request, the devices the caller found free, admitted by the
        request's selectors and with room for it, knowing that every other
        device of the node would be passed over (the DynamicResources batch
        Filter's usable devices); the first of them (in ``order``) are taken,
        without the search.

        Raises :class:`AllocationError` for problems that no node can fix
        (unknown DeviceClass, CEL errors, more than 32 devices for one claim,
        "All" devices of a pool that is being updated or invalid, a claim
        constraint that "All" devices violate) and :class:`AllocationTimeout`
        when ``deadline()`` returns True during the search.
        """
        view = self.node_view(node)
        if not claims:
            return []
        if order is not None:
            view = view.ordered(order)  # every device is ranked: a key may draw random numbers
        if only is not None:
            view = view.restricted(only)
        specs = [self._claim_spec(c) for c in claims]
        search = _Search(self, node, view, specs, deadline, preselected=only is not None)
        if only is not None and search.single_plain_request():
            return search.take_first()  # no selector is evaluated: no deadline to watch
        key = (equivalence_key(view, specs, self.allocated, self.taint_rules)
               if order is None and only is None else None)
        known = self._searches.known(key, claims)
        if known is not None:
            return None if known[0] is None else search.replay(known[0])
        try:
            with within_deadline(deadline):
                results = search.run()
        finally:
            self.search_steps += search.steps
        if key is not None:
            self._searches.remember(key, claims, None if results is None else search.positions())
        return results

    def known_fit(self, node: Node, claims: Sequence[ResourceClaim]) -> bool | None:
        """Whether :meth:`allocate` (no ``order``, no ``only``) finds devices for
        ``claims`` on ``node``, when a search on an equivalent node this cycle already
        told (:mod:`.equivalence`); None when it must search.  A Filter that only needs
        the verdict leaves the results to be made for the node the pod gets."""
        view = self.node_view(node)
        if not claims:
            return True
        key = equivalence_key(view, [self._claim_spec(c) for c in claims], self.allocated, self.taint_rules)
        known = self._searches.known(key, claims)
        return None if known is None else known[0] is not None

    def has_invalid_pools(self, node: Node) -> bool:
        """Whether an invalid pool (duplicate device names, unknown counter sets,
        ...) targets ``node``: a failed allocation there reports :data:`INVALID_POOLS`."""
        return any(pool.invalid for pool in self.node_view(node).pools)

    def node_view(self, node: Node) -> NodeView:
        """The pools of ``node`` and its candidate devices, in allocation order
        (built once per node and allocator lineage)."""
        view = self._nodes.get(node.metadata.name)
        if view is None:
            view = NodeView(self._index.pools_for(node))
            self._nodes[node.metadata.name] = view
        return view

    def request_specs(self, claim: ResourceClaim) -> list:
        """The claim's requests as the search sees them: a request spec, a list
        of them (``firstAvailable``) or the :class:`AllocationError` the request
        raises when it is reached."""
        return self._claim_spec(claim).requests

    def matches(self, spec: RequestSpec, candidate: Candidate) -> bool:
        """Whether the class and request selectors of ``spec`` (class first, the
        first false deciding) and, with per-device node selection, the device's
        node selection admit ``candidate`` (memoised in the selector cache).
        Raises :class:`AllocationError` for a CEL compile or runtime error."""
        cache = self.selectors
        for prefix, index, selector in spec.selectors:
            if isinstance(selector, CelCompileError):
                raise AllocationError(f"{prefix}: selector #{index}: CEL compile error: {selector.message}")
            try:
                if not cache.matches(selector, candidate.slice, candidate.device):
                    return False
            except CelRuntimeError as err:
                message = err.message
                if err.is_missing_key:
                    message = f"{message}. {CelRuntimeError.MISSING_KEY_HINT}"
                raise AllocationError(
                    f"{prefix}: selector #{index} on device {candidate.id}: CEL runtime error: {message}"
                ) from None
        return True

    def _claim_spec(self, claim: ResourceClaim) -> ClaimSpec:
        spec = self._claims.get(id(claim))
        if spec is None or spec.claim is not claim:
            spec = ClaimSpec(claim, self.classes)
            self._claims[id(claim)] = spec
        return spec

    def consumption(self, candidate: Candidate, requests: Mapping[str, Fraction] | None) -> dict[str, Fraction] | None:
        """:func:`capacity.consumption` of ``candidate``'s device for a request's
        capacity ``requests``, remembered per device and requests for the
        allocator's lineage (its slices do not change); the dict is shared,
        not to be modified."""
        # amounts as integer pairs: hashing a Fraction costs a modular inverse
        key = (candidate.id, tuple((name, amount.numerator, amount.denominator) for name, amount in requests.items())
               if requests else ())
        try:
            return self._consumption[key]
        except KeyError:
            pass
        if len(self._consumption) >= MAX_REMEMBERED_CONSUMPTIONS:
            self._consumption.clear()
        consumed = self._consumption[key] = capacity.consumption(candidate.device, candidate.id.driver, requests)
        return consumed

    def taints(self, candidate: Candidate) -> tuple:
        """The NoSchedule/NoExecute taints of a device: its own and those of the taint rules."""
        if not self.taint_rules:
            return candidate.taints
        taints = self._taints.get(candidate.id)
        if taints is None:
            device_id = candidate.id
            ruled = rule_taints(self.taint_rules, device_id.driver, device_id.pool, device_id.device)
            taints = candidate.taints + tuple(t for t in ruled if affects_scheduling(t))
            self._taints[device_id] = taints
        return taints

    def available_counters(self, pool: Pool) -> dict[tuple[str, str], Fraction]:
        """``(counter set, counter) -> amount`` still available in ``pool``: the
        counter sets minus what the allocated devices of the pool consume (may be
        negative when a pool is over-committed)."""
        available = self._available_counters.get(pool.id)
        if available is None:
            available = {
                (set_name, name): value for set_name, counters in pool.counter_sets.items()
                for name, value in counters.items()
            }
            for resource_slice in pool.slices + pool.other_slices:
                for device in resource_slice.spec.devices:
                    if device.consumes_counters and self.allocated.is_allocated(
                        DeviceID(pool.driver, pool.name, device.name)
                    ):
                        for consumption in device.consumes_counters:
                            for name, counter in consumption.counters.items():
                                available[(consumption.counter_set, name)] -= counter.value
            self._available_counters[pool.id] = available
        return available

    def group_baseline(self, pool: Pool) -> dict[str, object]:
        """Per counter set of ``pool``, the compatibility-group state its allocated
        devices leave (:func:`compatibility.baseline`, once per pool and cycle)."""
        states = self._group_baselines.get(pool.id)
        if states is None:
            states = compatibility.baseline(pool.driver, pool.name, pool.slices + pool.other_slices, self.allocated)
            self._group_baselines[pool.id] = states
        return states

    def skip_for_disabled_groups(self, pool: Pool, device) -> bool:
        """With DRADeviceCompatibilityGroups off: whether ``device`` names groups, or
        would join a counter set where an allocated device named some (such a device
        is passed over: this scheduler cannot check the groups)."""
        if compatibility.names_groups(device):
            return True
        if not self.allocated.compatibility_groups:
            return False
        states = self.group_baseline(pool)
        return compatibility.grouped({consumption.counter_set: states.get(consumption.counter_set)
                                      for consumption in device.consumes_counters})


class _Search:
    """One :meth:`Allocator.allocate` call: the depth-first search and its state."""

    def __init__(self, allocator: Allocator, node: Node, view: NodeView, claims: list[ClaimSpec],
                 deadline: Callable[[], bool] | None, preselected: bool = False):
        self.allocator = allocator
        #: the view holds only devices the request's selectors admit (Allocator.allocate's ``only``)
        self.preselected = preselected
        self.state = allocator.allocated
        self.node = node
        self.view = view
        self.claims = claims
        self.deadline = deadline
        self.steps = 0
        self.requests: list[list] = []
        self.constraints: list[list[AttributeConstraint]] = []
        self.picks: list[list[_Pick]] = [[] for _ in claims]
        self.selected: dict[tuple[int, int], int] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.shared_picks: dict[DeviceID, int] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.consumed_counters: dict[tuple[str, str], dict[tuple[str, str], Fraction]] = {}
        #: per pool, the compatibility-group state of each counter set the attempt touched
        self.group_states: dict[tuple[str, str], dict[str, object]] = {}

    # --- setup -----------------------------------------------------------------------

    def _prepare(self) -> None:
        for spec in self.claims:
            requests: list = []
            minimum = 0
            for entry in spec.requests:
                if isinstance(entry, AllocationError):
                    raise AllocationError(str(entry))
                if isinstance(entry, list):
                    subrequests = [self._request(sub) for sub in entry]
                    requests.append(subrequests)
                    minimum += min(r.num_devices for r in subrequests)
                else:
                    request = self._request(entry)
                    requests.append(request)
                    minimum += request.num_devices
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {spec.name}: number of requested devices {minimum} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            self.requests.append(requests)
            list_semantics = self.allocator.list_type_attributes
            self.constraints.append([AttributeConstraint(c, list_semantics) for c in spec.constraints])

    def _request(self, spec: RequestSpec) -> _Request:
        request = _Request(spec)
        if spec.all_mode:
            for pool in self.view.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"{spec.label}: asks for all devices, but resource pool {pool} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"{spec.label}: asks for all devices, but resource pool {pool} is currently invalid"
                    )
            for candidate in self.view.candidates:
                if self._selectable(request, candidate) and self._capacity(spec, candidate) is not None:
                    request.all_devices.append(candidate)
            request.num_devices = len(request.all_devices)
        return request

    # --- checks ----------------------------------------------------------------------

    def _selectable(self, request: _Request, candidate: Candidate) -> bool:
        if self.preselected:
            return True
        known = request.matches.get(candidate)
        if known is None:
            known = request.matches[candidate] = self._evaluate(request.spec, candidate)
        return known

    def _evaluate(self, spec: RequestSpec, candidate: Candidate) -> bool:
        if not self.allocator.matches(spec, candidate):
            return False
        if candidate.per_device:
            device = candidate.device
            return node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
        return True

    def _capacity(self, spec: RequestSpec, candidate: Candidate) -> dict[str, Fraction] | None:
        """What allocating ``candidate`` for ``spec`` consumes now, or None if it does not fit."""
        device = candidate.device
        if not spec.capacity and not candidate.multi and candidate.id not in self.state.consumed_capacity:
            return {} if candidate.fits_whole else None
        consumed = self.allocator.consumption(candidate, spec.capacity)
        if consumed is None:
            return None
        already = self.state.consumed_capacity.get(candidate.id), self.allocating_capacity.get(candidate.id)
        return consumed if capacity.fits(device, consumed, *already) else None

    def _in_use(self, spec: RequestSpec, candidate: Candidate, claim_index: int) -> bool:
        if spec.admin:
            return not candidate.multi and claim_index in self.allocating.get(candidate.id, ())
        return candidate.id in self.state.devices or bool(self.allocating.get(candidate.id))

    def _take_counters(self, candidate: Candidate) -> bool:
        pool = self.view.pool_of[candidate.id.driver, candidate.id.pool]
        available = self.allocator.available_counters(pool)
        used = self.consumed_counters.setdefault(pool.id, {})
        for consumption in candidate.device.consumes_counters:
            for name, counter in consumption.counters.items():
                key = (consumption.counter_set, name)
                used[key] = used.get(key, Fraction(0)) + counter.value
        if all(used.get(key, 0) <= amount for key, amount in available.items()):
            return True
        self._release_counters(candidate)
        return False

    def _release_counters(self, candidate: Candidate) -> None:
        used = self.consumed_counters[candidate.id.driver, candidate.id.pool]
        for consumption in candidate.device.consumes_counters:
            for name, counter in consumption.counters.items():
                used[(consumption.counter_set, name)] -= counter.value

    def _join_groups(self, candidate: Candidate) -> list[tuple[str, object]] | None:
        """Fold the device's compatibility groups into the state of each counter set it
        consumes from: the previous states (to restore in :meth:`_leave_groups`), or None
        (and nothing changed) when some counter set does not admit it."""
        pool = self.view.pool_of[candidate.id.driver, candidate.id.pool]
        states = self.group_states.get(pool.id)
        if states is None:
            states = self.group_states[pool.id] = dict(self.allocator.group_baseline(pool))
        saved: list[tuple[str, object]] = []
        for counter_set, groups in compatibility.declared(candidate.device).items():
            state = states.get(counter_set)
            if not compatibility.admits(state, groups):
                self._leave_groups(candidate, saved)
                return None
            saved.append((counter_set, state))
            states[counter_set] = compatibility.joined(state, groups)
        return saved

    def _leave_groups(self, candidate: Candidate, saved: list[tuple[str, object]]) -> None:
        states = self.group_states[candidate.id.driver, candidate.id.pool]
        for counter_set, state in reversed(saved):
            states[counter_set] = state

    # --- picking one device ----------------------------------------------------------

    def _allocate_device(self, claim_index: int, spec: RequestSpec, candidate: Candidate, must: bool):
        """Tentatively allocate ``candidate``, which is selectable and not in use:
        an undo function, or None when it cannot be used.  ``must`` ("All" mode):
        a violated constraint is an error."""
        device_id = candidate.id
        device = candidate.device
        # A shared device consumes its counters once, with its first allocation.
        counters = bool(device.consumes_counters) and not (
            candidate.multi and (self.state.is_allocated(device_id) or device_id in self.shared_picks)
        )
        groups_on = self.allocator.compatibility_groups
        if counters and not groups_on and self.allocator.skip_for_disabled_groups(
                self.view.pool_of[device_id.driver, device_id.pool], device):
            return None
        if counters and not self._take_counters(candidate):
            return None
        saved_groups = None
        if counters and groups_on:
            saved_groups = self._join_groups(candidate)
            if saved_groups is None:
                self._release_counters(candidate)
                return None

        def release() -> None:
            if saved_groups is not None:
                self._leave_groups(candidate, saved_groups)
            if counters:
                self._release_counters(candidate)

        taints = self.allocator.taints(candidate)
        if taints and untolerated(taints, spec.tolerations):
            release()
            return None
        constraints = self.constraints[claim_index]
        for position, constraint in enumerate(constraints):
            if not constraint.add(spec.base, spec.subrequest, device_id.driver, device):
                if must:
                    raise AllocationError(
                        f"claim {self.claims[claim_index].name}, request {spec.name}: cannot add device "
                        f"{device_id} because a claim constraint would not be satisfied"
                    )
                for added in reversed(constraints[:position]):
                    added.remove(spec.base, spec.subrequest)
                release()
                return None
        consumed = self._capacity(spec, candidate)
        if consumed is None:
            for added in reversed(constraints):
                added.remove(spec.base, spec.subrequest)
            release()
            return None

        share_id = None
        if candidate.multi:
            self.shared_picks[device_id] = self.shared_picks.get(device_id, 0) + 1
            capacity.add(self.allocating_capacity.setdefault(device_id, {}), consumed)
            share_id = self._share_id(claim_index, spec, device_id)
        else:
            self.allocating.setdefault(device_id, set()).add(claim_index)
        picks = self.picks[claim_index]
        picks.append(_Pick(spec, candidate, share_id, consumed if candidate.multi and consumed else None))

        def undo() -> None:
            picks.pop()
            if candidate.multi:
                capacity.subtract(self.allocating_capacity[device_id], consumed)
                self.shared_picks[device_id] -= 1
                if not self.shared_picks[device_id]:
                    del self.shared_picks[device_id]
                    del self.allocating_capacity[device_id]
            else:
                self.allocating[device_id].discard(claim_index)
            for added in reversed(constraints):
                added.remove(spec.base, spec.subrequest)
            release()

        return undo

    def _share_id(self, claim_index: int, spec: RequestSpec, device_id: DeviceID) -> str:
        claim = self.claims[claim_index].claim
        owner = claim.metadata.uid or self.claims[claim_index].name
        return _uuid5(f"{owner}/{spec.full_name}/{device_id}")

    # --- the search ------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        self._prepare()
        if not self._one(0, 0, 0, 0, False, 0):
            return None
        return [self._result(index) for index in range(len(self.claims))]

    def positions(self) -> list[list[tuple[RequestSpec, int]]]:
        """Per claim, each pick of the finished search as (request spec, position among
        the view's candidates): what :meth:`replay` takes on an equivalent node."""
        where = {id(candidate): index for index, candidate in enumerate(self.view.candidates)}
        return [[(pick.spec, where[id(pick.candidate)]) for pick in picks] for picks in self.picks]

    def replay(self, positions: list[list[tuple[RequestSpec, int]]]) -> list[AllocationResult]:
        """The results of a search on an equivalent node (:meth:`positions`), on this
        node's devices: nothing is searched, no selector evaluated."""
        self._prepare()
        candidates = self.view.candidates
        for claim, picks in enumerate(positions):
            self.picks[claim] = [_Pick(spec, candidates[index], None, None) for spec, index in picks]
        return [self._result(index) for index in range(len(self.claims))]

    def single_plain_request(self) -> bool:
        """One claim with one request for a count of devices (not "All", not
        admin access, no ``firstAvailable``) and no constraints."""
        if len(self.claims) != 1 or self.claims[0].constraints or len(self.claims[0].requests) != 1:
            return False
        spec = self.claims[0].requests[0]
        return isinstance(spec, RequestSpec) and not spec.all_mode and not spec.admin

    def take_first(self) -> list[AllocationResult] | None:
        """:meth:`run` for a :meth:`single_plain_request` over preselected
        devices that are free and have room for it (Allocator.allocate's
        ``only``): the search would take the first ``count`` of them, so they
        are taken without it; None when there are fewer."""
        self._prepare()
        request = self.requests[0][0]
        spec = request.spec
        chosen = self.view.candidates[:spec.count]
        if len(chosen) < spec.count:
            return None
        picks = self.picks[0]
        for candidate in chosen:
            self.steps += 1
            if not spec.capacity and not candidate.multi and candidate.id not in self.state.consumed_capacity:
                consumed: dict[str, Fraction] | None = {}  # the search's shortcut for a whole device
            else:
                consumed = self.allocator.consumption(candidate, spec.capacity)
            share_id = self._share_id(0, spec, candidate.id) if candidate.multi else None
            picks.append(_Pick(spec, candidate, share_id, consumed if candidate.multi and consumed else None))
        return [self._result(0)]

    def _one(self, claim: int, req: int, sub: int, device: int, in_sub: bool, start: int) -> bool:
        """Allocate the ``device``-th device of request ``req`` (subrequest ``sub``)
        of claim ``claim`` and everything after it.  ``start``: first candidate
        to try (devices of one request are picked in increasing position)."""
        self.steps += 1
        if self.deadline is not None and not self.steps & DEADLINE_CHECK_MASK and self.deadline():
            raise AllocationTimeout("filter operation aborted: deadline exceeded")
        if claim >= len(self.claims):
            return True
        requests = self.requests[claim]
        if req >= len(requests):
            try:
                return self._one(claim + 1, 0, 0, 0, False, 0)
            except _MaxSizeExceeded:
                # Another path to this claim (other subrequests before it) may still fit.
                return False
        entry = requests[req]
        if isinstance(entry, list):
            if not in_sub:
                return self._first_available(claim, req, device, entry)
            request = entry[sub]
        else:
            request = entry
        spec = request.spec
        if spec.all_mode and not request.all_devices:
            return False
        if device >= request.num_devices:
            return self._one(claim, req + 1, 0, 0, False, 0)
        if len(self.picks[claim]) + request.num_devices - device > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded

        if spec.all_mode:
            candidate = request.all_devices[device]
            undo = None if self._in_use(spec, candidate, claim) else self._allocate_device(claim, spec, candidate, True)
            if undo is None:
                return False  # every device is needed: no alternative
            return self._descend(undo, claim, req, sub, device + 1, in_sub, 0)

        candidates = self.view.candidates
        for position in range(start, len(candidates)):
            candidate = candidates[position]
            if self._in_use(spec, candidate, claim) or not self._selectable(request, candidate):
                continue
            undo = self._allocate_device(claim, spec, candidate, False)
            if undo is not None and self._descend(undo, claim, req, sub, device + 1, in_sub, position + 1):
                return True
        return False

    def _descend(self, undo, claim: int, req: int, sub: int, device: int, in_sub: bool, start: int) -> bool:
        try:
            done = self._one(claim, req, sub, device, in_sub, start)
        except _MaxSizeExceeded:
            undo()
            raise
        if not done:
            undo()
        return done

    def _first_available(self, claim: int, req: int, device: int, subrequests: list) -> bool:
        all_exceeded = True
        for sub in range(len(subrequests)):
            try:
                done = self._one(claim, req, sub, device, True, 0)
            except _MaxSizeExceeded:
                continue
            all_exceeded = False
            if done:
                self.selected[(claim, req)] = sub
                return True
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    # --- results ---------------------------------------------------------------------

    def _chosen(self, claim: int) -> list[RequestSpec]:
        """The spec used for each top-level request of ``claim`` (the selected subrequest)."""
        out = []
        for req, entry in enumerate(self.requests[claim]):
            out.append(entry[self.selected[(claim, req)]].spec if isinstance(entry, list) else entry.spec)
        return out

    def _result(self, claim: int) -> AllocationResult:
        picks = self.picks[claim]
        results = tuple(
            DeviceRequestAllocationResult(
                request=pick.spec.full_name,
                driver=pick.candidate.id.driver,
                pool=pick.candidate.id.pool,
                device=pick.candidate.id.device,
                admin_access=True if pick.spec.admin else None,
                tolerations=pick.spec.tolerations,
                binding_conditions=pick.candidate.device.binding_conditions,
                binding_failure_conditions=pick.candidate.device.binding_failure_conditions,
                share_id=pick.share_id,
                consumed_capacity=dict(pick.consumed) if pick.consumed else {},
                compatibility_groups=(compatibility.snapshot(pick.candidate.device)
                                      if self.allocator.compatibility_groups else {}),
            )
            for pick in picks
        )
        now = self.allocator.now
        stamp = now if now is not None and any(r.binding_conditions for r in results) else None
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=self._config(claim)),
            node_selector=self._node_selector(claim),
            allocation_timestamp=stamp,
        )

    def _config(self, claim: int) -> tuple[DeviceAllocationConfiguration, ...]:
        """Class configs (once per class, naming the requests that use it), then
        the claim's configs for requests that were allocated; configs covering
        every request name none (= all)."""
        chosen = self._chosen(claim)
        entries: list[tuple[str, list[str], OpaqueDeviceConfiguration | None]] = []
        by_class: dict[str, range] = {}
        for spec in chosen:
            class_name = spec.device_class.metadata.name
            if class_name in by_class:
                for position in by_class[class_name]:
                    entries[position][1].append(spec.full_name)
                continue
            first = len(entries)
            for config in spec.device_class.spec.config:
                entries.append((ALLOCATION_CONFIG_SOURCE_CLASS, [spec.full_name], config.opaque))
            by_class[class_name] = range(first, len(entries))
        for claim_config in self.claims[claim].claim.spec.devices.config:
            wanted = set(claim_config.requests)
            if not wanted or any(spec.base in wanted or spec.full_name in wanted for spec in chosen):
                entries.append((ALLOCATION_CONFIG_SOURCE_CLAIM, list(claim_config.requests), claim_config.opaque))
        out = []
        for source, requests, opaque in entries:
            names = set(requests)
            if names and all(spec.base in names or spec.full_name in names for spec in chosen):
                requests = []
            out.append(DeviceAllocationConfiguration(source=source, requests=tuple(requests), opaque=opaque))
        return tuple(out)

    def _node_selector(self, claim: int) -> NodeSelector | None:
        """Where the claim's devices can be used: the node itself if any device is
        node-local, else the union of the devices' one-term node selectors, else
        everywhere (None)."""
        expressions: list[NodeSelectorRequirement] = []
        fields: list[NodeSelectorRequirement] = []
        for pick in self.picks[claim]:
            source = pick.candidate.device if pick.candidate.per_device else pick.candidate.slice.spec
            if source.node_name or pick.candidate.device.binds_to_node:
                return node_local_selector(self.node.metadata.name)
            selector = source.node_selector
            if selector is None or not selector.node_selector_terms:
                continue
            if len(selector.node_selector_terms) > 1:
                raise AllocationError(
                    f"create NodeSelector for claim {self.claims[claim].claim.metadata.name}: "
                    f"unsupported ResourceSlice.NodeSelector with {len(selector.node_selector_terms)} terms"
                )
            term = selector.node_selector_terms[0]
            _merge(fields, term.match_fields)
            _merge(expressions, term.match_expressions)
        if not expressions and not fields:
            return None
        return NodeSelector(node_selector_terms=(
            NodeSelectorTerm(match_expressions=tuple(expressions), match_fields=tuple(fields)),
        ))


@functools.lru_cache(maxsize=100_000)
def node_local_selector(node_name: str) -> NodeSelector:
    """``matchFields metadata.name In [node_name]``: the node selector of an
    allocation with node-local devices (immutable, so shared)."""
    requirement = NodeSelectorRequirement(key=NAME_FIELD, operator="In", values=(node_name,))
    return NodeSelector(node_selector_terms=(NodeSelectorTerm(match_fields=(requirement,)),))


def _merge(into: list[NodeSelectorRequirement], requirements: Iterable[NodeSelectorRequirement]) -> None:
    """Append each requirement unless an equal one (same key, operator and set of values) is there."""
    for requirement in requirements:
        if not any(
            have.key == requirement.key and have.operator == requirement.operator
            and set(have.values) == set(requirement.values)
            for have in into
        ):
            into.append(requirement)
