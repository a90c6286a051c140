"""What the structured allocator searches with: a claim's requests resolved once per
allocator (DeviceClass found, selectors compiled, ``firstAvailable`` alternatives in
order) and a node's candidate devices (every device of the node's usable pools, in
pool, slice and published order), with the errors found while resolving them.

Part of :mod:`kubesched.core.dra.allocator`; the search itself is
:class:`~kubesched.core.dra.allocator.Allocator`'s.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Mapping

from kubesched.core import cel
from kubesched.core.api.meta import namespaced_name
from kubesched.core.api.resource_v1 import ALLOCATION_MODE_ALL, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.core.cel import CelCompileError
from kubesched.core.dra.allocated_devices import DeviceID
from kubesched.core.dra.allocator import capacity
from kubesched.core.dra.allocator.pools import SLICE_MEMOS, Pool, SliceMemo
from kubesched.core.dra.devicetaints import affects_scheduling
from kubesched.core.dra.selectors import content_key


class AllocationError(Exception):
    """A problem that makes this scheduling attempt fail on every node (upstream:
    ``Allocate`` returned a plain error, the plugin returns an Error status):
    missing DeviceClass, CEL compile or runtime error, too many devices, a
    request for "All" devices of a pool that is being updated, ...  The message
    is upstream's, e.g. ``claim default/c: selector #0 on device drv/pool/dev:
    CEL runtime error: no such key: x. consider using ...``."""


class MissingDeviceClass(AllocationError):
    """A request names a DeviceClass that does not exist.  For a subrequest of
    ``firstAvailable`` it only rules that subrequest out."""


# --- preparation of requests (node independent, cached per claim) ------------------------


class RequestSpec:
    """One request, or one subrequest of a ``firstAvailable`` request, resolved:
    ``name`` is its own name, ``parent`` the top-level request of a subrequest,
    ``full_name`` what results and constraints call it (``req`` or ``req/sub``);
    ``selectors`` are ``(error prefix, index, compiled selector or
    CelCompileError)``, the class's first."""

    __slots__ = ("name", "parent", "full_name", "label", "device_class", "selectors", "all_mode", "count",
                 "admin", "tolerations", "capacity")

    def __init__(self, claim_name: str, name: str, parent: str | None, request, classes: Mapping[str, DeviceClass]):
        self.name = name
        self.parent = parent
        self.full_name = f"{parent}/{self.name}" if parent is not None else self.name
        self.label = f"claim {claim_name}, request {self.name}"
        for index, selector in enumerate(request.selectors):
            if selector.expression is None:
                raise AllocationError(
                    f"{self.label}, selector #{index}: CEL expression empty (unsupported selector type?)"
                )
        device_class = classes.get(request.device_class_name)
        if device_class is None:
            raise MissingDeviceClass(f"{self.label}: could not retrieve device class {request.device_class_name}")
        self.device_class: DeviceClass = device_class
        class_prefix = f"class {device_class.metadata.name}"
        self.selectors = [compiled_selector(class_prefix, i, s) for i, s in enumerate(device_class.spec.selectors)]
        self.selectors += [compiled_selector(f"claim {claim_name}", i, s) for i, s in enumerate(request.selectors)]
        self.all_mode = request.allocation_mode == ALLOCATION_MODE_ALL
        self.count = request.count
        self.admin = bool(getattr(request, "admin_access", None))
        self.tolerations = request.tolerations
        self.capacity = request.capacity.requests if request.capacity is not None else None

    @property
    def base(self) -> str:
        """The top-level request name."""
        return self.parent if self.parent is not None else self.name

    @property
    def subrequest(self) -> str | None:
        return self.name if self.parent is not None else None


def compiled_selector(prefix: str, index: int, selector) -> tuple[str, int, cel.CompiledSelector | CelCompileError]:
    try:
        return (prefix, index, cel.compile(selector.expression or ""))
    except CelCompileError as err:
        return (prefix, index, err)


class ClaimSpec:
    """A claim's requests, resolved once per allocator: each entry is a
    :class:`RequestSpec`, a list of them (``firstAvailable``), or the
    :class:`AllocationError` that the request raises when it is reached."""

    __slots__ = ("claim", "name", "requests", "constraints", "plain")

    def __init__(self, claim: ResourceClaim, classes: Mapping[str, DeviceClass]):
        self.claim = claim
        self.name = namespaced_name(claim.metadata)
        devices = claim.spec.devices
        self.requests: list = []
        for request in devices.requests:
            try:
                if request.exactly is not None:
                    self.requests.append(RequestSpec(self.name, request.name, None, request.exactly, classes))
                else:
                    self.requests.append(subrequests(self.name, request, classes))
            except AllocationError as err:
                self.requests.append(err)
        self.constraints = devices.constraints
        #: every request is a plain count of devices (not "All", no admin access, no ``firstAvailable``)
        self.plain = all(isinstance(entry, RequestSpec) and not entry.all_mode and not entry.admin
                         for entry in self.requests)


def subrequests(claim_name: str, request, classes: Mapping[str, DeviceClass]) -> list[RequestSpec]:
    """The ``firstAvailable`` alternatives that can be tried, in order: one whose
    DeviceClass does not exist cannot be satisfied and is passed over.  Raises
    :class:`MissingDeviceClass` (the first one's) when no alternative has its
    class, :class:`AllocationError` for any other problem of an alternative."""
    specs: list[RequestSpec] = []
    missing: MissingDeviceClass | None = None
    for sub in request.first_available:
        try:
            specs.append(RequestSpec(claim_name, sub.name, request.name, sub, classes))
        except MissingDeviceClass as err:
            missing = missing or err
    if not specs and missing is not None:
        raise missing
    return specs


# --- per-node candidates ---------------------------------------------------------------


class Candidate:
    """One device of a slice, with what the search needs of it (shared by all
    allocators through :data:`slice_candidates`)."""

    __slots__ = ("id", "device", "slice", "taints", "multi", "per_device", "fits_whole", "_plain")

    def __init__(self, resource_slice: ResourceSlice, device):
        self.id = DeviceID(resource_slice.spec.driver, resource_slice.spec.pool.name, device.name)
        self.device = device
        self.slice = resource_slice
        self.taints = tuple(t for t in device.taints if affects_scheduling(t))
        self.multi = bool(device.allow_multiple_allocations)
        self.per_device = bool(resource_slice.spec.per_device_node_selection)
        # Whether a request without capacity requests passes the capacity check
        # when nothing of the device is consumed yet.
        consumed = capacity.consumption(device, self.id.driver, None)
        self.fits_whole = consumed is not None and capacity.fits(device, consumed)
        self._plain: tuple | None | bool = False  # not computed yet

    @property
    def plain_content(self) -> tuple | None:
        """What the search can see of the device when it is a plain one - its
        driver, attributes and capacity (:func:`~kubesched.core.dra.selectors.content_key`)
        - or None when more decides: taints, shared counters, several allocations, its own
        node selection.  Two plain devices with equal content are interchangeable for the
        search (the allocator's memo of equivalent nodes)."""
        if self._plain is False:
            device = self.device
            self._plain = None if (self.taints or device.consumes_counters or self.multi or self.per_device
                                   or not self.fits_whole) else content_key(self.id.driver, device)
        return self._plain  # type: ignore[return-value]


slice_candidates = SliceMemo(lambda s: tuple(Candidate(s, d) for d in s.spec.devices))
SLICE_MEMOS.append(slice_candidates)


class NodeView:
    """The pools of one node and the devices that may be allocated there, in order."""

    __slots__ = ("pools", "pool_of", "candidates", "_signature", "_ids")

    def __init__(self, pools: list[Pool], candidates: list[Candidate] | None = None):
        self.pools = pools
        self.pool_of = {pool.id: pool for pool in pools}
        self._signature: tuple | None | bool = False  # not computed yet
        self._ids: tuple[DeviceID, ...] | None = None
        if candidates is not None:
            self.candidates = candidates
            return
        self.candidates = []
        for pool in pools:
            if pool.usable:
                for resource_slice in pool.slices:
                    self.candidates.extend(slice_candidates(resource_slice))

    @property
    def plain_signature(self) -> tuple | None:
        """The :attr:`Candidate.plain_content` of every candidate, in order, when all are
        plain and every pool is usable; None otherwise (computed once)."""
        if self._signature is False:
            contents = tuple(candidate.plain_content for candidate in self.candidates)
            plain = None not in contents and all(pool.usable for pool in self.pools)
            self._signature = contents if plain else None
        return self._signature  # type: ignore[return-value]

    @property
    def ids(self) -> tuple[DeviceID, ...]:
        """The candidates' device IDs, in order (computed once)."""
        if self._ids is None:
            self._ids = tuple(candidate.id for candidate in self.candidates)
        return self._ids

    def restricted(self, devices: Collection[DeviceID]) -> NodeView:
        """This view with only the candidates in ``devices`` (order kept)."""
        return NodeView(self.pools, [candidate for candidate in self.candidates if candidate.id in devices])

    def ordered(self, key: Callable[[DeviceID], Any]) -> NodeView:
        """This view with its candidates sorted by ``key(device ID)`` (stable)."""
        return NodeView(self.pools, sorted(self.candidates, key=lambda candidate: key(candidate.id)))
