"""resource.k8s.io/v1: DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice and DeviceTaintRule (Dynamic Resource Allocation, structured
parameters).

Conventions the allocator relies on:

- **Quantities are exact.**  Every quantity in this group (device capacity,
  counters, capacity requests, request policies, consumed capacity) is a
  :class:`fractions.Fraction` in *base units* (bytes for memory, a plain count
  for everything else; never milli-units, unlike the core ResourceLists).
  ``"80Gi" -> Fraction(85899345920)``, ``"500m" -> Fraction(1, 2)``.  They are
  written back by :func:`format_exact_quantity` in canonical form.
- **Attribute and capacity names** are kept exactly as the manifest spells them
  (``"model"`` or ``"dra.example.com/model"``).  An unqualified name belongs to
  the slice's driver domain: use :func:`split_qualified_name`,
  :meth:`Device.lookup_attribute` and :meth:`Device.lookup_capacity` rather
  than indexing the dicts yourself.
- **Older apiVersions** (v1beta2, v1beta1, v1alpha3) are converted to the v1
  shape when read (:data:`UPGRADES`); objects are always written as
  ``resource.k8s.io/v1``.
- Validation that needs only the object itself happens at load time and raises
  :class:`~kubesched.core.api.convert.ManifestError` naming the field.
"""

from __future__ import annotations

import copy
import re
from fractions import Fraction
from typing import Any, Callable

from attrs import field, frozen

from kubesched.core import cel
from kubesched.core.cel import CelCompileError, CelCostError
from kubesched.core.quantity import QuantityError, format_exact_quantity, parse_quantity

from .convert import ManifestError, converter, excerpt, printable
from .core_v1 import NodeSelector
from .meta import Condition, ObjectMeta

# --- limits (upstream constants, resource.k8s.io/v1) ----------------------------------------

#: Maximum number of requests in a claim and of results in an allocation.
ALLOCATION_RESULTS_MAX_SIZE = 32
DEVICE_REQUESTS_MAX_SIZE = ALLOCATION_RESULTS_MAX_SIZE
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
FIRST_AVAILABLE_MAX_SIZE = 8
DEVICE_TOLERATIONS_MAX_LENGTH = 16
DEVICE_TAINTS_MAX_LENGTH = 16
RESERVED_FOR_MAX_SIZE = 256
RESOURCE_SLICE_MAX_DEVICES = 128
#: compatibilityGroups of one consumesCounters entry (DRADeviceCompatibilityGroups)
COMPATIBILITY_GROUPS_MAX_SIZE = 8
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: Upper bound for the estimated/actual cost of one CEL selector evaluation upstream.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
ALLOCATION_MODES = frozenset({ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL})

TAINT_EFFECT_NONE = "None"
TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
#: Known taint effects.  Consumers must treat any other effect like ``None``.
TAINT_EFFECTS = frozenset({TAINT_EFFECT_NONE, TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE})

TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"

ALLOCATION_CONFIG_SOURCE_CLASS = "FromClass"
ALLOCATION_CONFIG_SOURCE_CLAIM = "FromClaim"

#: Finalizer the ResourceClaim controller puts on allocated claims.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: Annotation on template-generated claims: the pod's ``spec.resourceClaims[].name``.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
#: Marks the claim the scheduler creates for a pod's device-backed extended resources (DRAExtendedResource).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
#: Every DeviceClass also stands for the extended resource named this prefix + the class name.
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
#: Namespace label that allows ``adminAccess: true`` requests.
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
#: Condition type on DeviceTaintRule status.
DEVICE_TAINT_CONDITION_EVICTION_IN_PROGRESS = "EvictionInProgress"

API_VERSION = "resource.k8s.io/v1"


# --- exact quantities ----------------------------------------------------------------------


def _structure_fraction(value: Any, _type: Any) -> Fraction:
    if isinstance(value, Fraction):
        return value
    if isinstance(value, (dict, list)):
        raise ManifestError("", f"expected a quantity, got {value!r}")
    try:
        return parse_quantity(value)
    except QuantityError as err:
        raise ManifestError("", str(err)) from None


converter.register_structure_hook(Fraction, _structure_fraction)
converter.register_unstructure_hook(Fraction, format_exact_quantity)


def _is_keyed_map(type_: Any) -> bool:
    args: tuple[Any, ...] = getattr(type_, "__args__", None) or ()
    return getattr(type_, "__origin__", None) is dict and len(args) == 2 and args[1] in _KEYED_MAP_VALUES


def _structure_keyed_map(value: Any, type_: Any) -> dict:
    """Maps of this group's value types: the error names the map key
    (``capacity.memory.value``), which the generic dict hook does not."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ManifestError("", f"expected a map, got {value!r}")
    item_type = type_.__args__[1]
    hook = converter.get_structure_hook(item_type)
    out = {}
    for key, item in value.items():
        try:
            out[str(key)] = hook(item, item_type)
        except ManifestError as err:
            raise ManifestError(f"{key}.{err.field}" if err.field else str(key), err.problem) from None
    return out


def _time():
    return field(default=None, metadata={"kind": "time"})


def _extra():
    return field(factory=dict, eq=False)


# --- qualified names -----------------------------------------------------------------------


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """``"dra.example.com/model" -> ("dra.example.com", "model")``; an unqualified
    name belongs to the driver's domain: ``"model" -> (driver, "model")``."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return driver, name
    return domain, ident


# --- selectors, configuration --------------------------------------------------------------


@frozen
class CELDeviceSelector:
    """``cel.expression``: a CEL expression over the variable ``device`` that must
    evaluate to true for a matching device (see :mod:`kubesched.core.cel`).  At most
    10 KiB (:data:`kubesched.core.cel.MAX_EXPRESSION_LENGTH`); that limit is enforced when
    the expression is compiled, as a compile error.

    The expression is compiled when the object is built (loaded from a manifest
    or received from the API), so a syntax or type error is refused at load
    time with :class:`ManifestError` on ``expression``, as the API server's
    validation refuses it.
    """

    expression: str = ""

    def __attrs_post_init__(self):
        try:
            cel.compile(self.expression)
        except CelCostError as err:
            raise ManifestError("expression", f"Forbidden: {err.message}") from None
        except CelCompileError as err:
            first_line = str(err).splitlines()[0]
            shown = printable(excerpt(self.expression), quoted=True)
            raise ManifestError("expression", f"Invalid value: {shown}: compilation failed: {first_line}") from None


@frozen
class DeviceSelector:
    """One selector; ``cel`` is the only kind upstream defines (unknown kinds stay in ``extra``)."""

    cel: CELDeviceSelector | None = None
    extra: dict[str, Any] = _extra()

    @property
    def expression(self) -> str | None:
        """The CEL expression, or None when this is not a CEL selector."""
        return self.cel.expression if self.cel is not None else None


def _check_max(items: tuple, limit: int, what: str = "") -> None:
    if len(items) > limit:
        raise ManifestError(what, f"Too many: {len(items)}: must have at most {limit} items")


@frozen
class OpaqueDeviceConfiguration:
    """Driver-specific configuration.  ``parameters`` is the raw JSON object the
    driver defines (kept verbatim, never interpreted by the scheduler)."""

    driver: str = ""
    parameters: Any = None


@frozen
class DeviceClassConfiguration:
    """``DeviceClass.spec.config[]``: ``{opaque}``."""

    opaque: OpaqueDeviceConfiguration | None = None
    extra: dict[str, Any] = _extra()


@frozen
class DeviceClassSpec:
    """All ``selectors`` must match a device for it to belong to the class;
    ``config`` is copied into allocation results (source FromClass);
    ``extended_resource_name`` (DRAExtendedResource) maps a node extended resource
    to this class (None: only the implicit ``deviceclass.resource.kubernetes.io/<name>``)."""

    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        _check_max(self.selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
        _check_max(self.config, DEVICE_CONFIG_MAX_SIZE, "config")


@frozen
class DeviceClass:
    """resource.k8s.io/v1 DeviceClass (cluster-scoped)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceClassSpec = DeviceClassSpec()

    @property
    def key(self) -> str:
        return self.metadata.name


# --- taints and tolerations ----------------------------------------------------------------


@frozen
class DeviceTaint:
    """A taint on a device (in a ResourceSlice or applied by a DeviceTaintRule).

    ``effect`` is None, NoSchedule or NoExecute; an unknown effect is kept and must
    be treated like None.  ``time_added`` is float seconds since the epoch (None
    until the API server defaults it).
    """

    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: float | None = _time()

    def __attrs_post_init__(self):
        if not self.key:
            raise ManifestError("key", "Required value")
        if not self.effect:
            raise ManifestError("effect", "Required value")


@frozen
class DeviceToleration:
    """A toleration in a request (copied into allocation results).

    ``operator`` Equal (default) or Exists; an empty ``key`` with Exists matches
    every taint; an empty ``effect`` matches every effect.  ``toleration_seconds``
    (NoExecute only) bounds how long an allocated device may stay tainted; None is
    forever, values <= 0 mean evict at once.
    """

    key: str = ""
    operator: str = TOLERATION_OP_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def __attrs_post_init__(self):
        if self.operator not in (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS):
            raise ManifestError("operator", f"Unsupported value: {self.operator!r}: supported values: \"Equal\", \"Exists\"")
        if self.operator == TOLERATION_OP_EXISTS and self.value:
            raise ManifestError("value", "must be empty when `operator` is 'Exists'")
        if not self.key and self.operator != TOLERATION_OP_EXISTS:
            raise ManifestError("operator", "must be 'Exists' when `key` is empty")

    def tolerates(self, taint: DeviceTaint) -> bool:
        """Upstream ``ToleratesTaint``: the effect matches unless empty, the key
        matches unless empty, Equal compares values and Exists matches any value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == TOLERATION_OP_EXISTS:
            return True
        return self.value == taint.value


# --- ResourceClaim -------------------------------------------------------------------------


@frozen
class CapacityRequirements:
    """``capacity.requests``: capacity name -> exact amount in base units
    (DRAConsumableCapacity).  Names may be qualified (``domain/id``)."""

    requests: dict[str, Fraction] = field(factory=dict)


def _check_request_common(selectors, allocation_mode, count, tolerations) -> None:
    _check_max(selectors, DEVICE_SELECTORS_MAX_SIZE, "selectors")
    _check_max(tolerations, DEVICE_TOLERATIONS_MAX_LENGTH, "tolerations")
    if allocation_mode not in ALLOCATION_MODES:
        raise ManifestError("allocationMode", f"Unsupported value: {allocation_mode!r}: supported values: \"All\", \"ExactCount\"")
    # the API server sets no upper bound: a count above ALLOCATION_RESULTS_MAX_SIZE is stored, and the
    # allocator refuses the claim (or passes over that firstAvailable subrequest) when it allocates
    if allocation_mode == ALLOCATION_MODE_EXACT_COUNT and count < 1:
        raise ManifestError("count", f"Invalid value: {count}: must be greater than zero")


@frozen
class ExactDeviceRequest:
    """``requests[].exactly``: devices of one class.

    ``allocation_mode`` ExactCount (default: exactly ``count`` devices, count >= 1,
    default 1; above 32, a claim's limit of results, the API server still accepts
    it and the allocator cannot satisfy it) or All (every matching device;
    ``count`` is then ignored).
    ``admin_access`` None/False/True; ``capacity`` (optional) asks for a share of
    a device that allows multiple allocations.
    """

    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.device_class_name:
            raise ManifestError("deviceClassName", "Required value")
        _check_request_common(self.selectors, self.allocation_mode, self.count, self.tolerations)


@frozen
class DeviceSubRequest:
    """One alternative of ``requests[].firstAvailable`` (tried in order; the result
    names it ``<request>/<subrequest>``).  Same fields as :class:`ExactDeviceRequest`
    except admin access."""

    name: str = ""
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.name:
            raise ManifestError("name", "Required value")
        if not self.device_class_name:
            raise ManifestError("deviceClassName", "Required value")
        _check_request_common(self.selectors, self.allocation_mode, self.count, self.tolerations)


@frozen
class DeviceRequest:
    """``spec.devices.requests[]``: exactly one of ``exactly`` or ``first_available``."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.name:
            raise ManifestError("name", "Required value")
        if (self.exactly is None) == (not self.first_available):
            raise ManifestError("", "exactly one of `exactly` or `firstAvailable` is required")
        _check_max(self.first_available, FIRST_AVAILABLE_MAX_SIZE, "firstAvailable")
        seen = set()
        for index, sub in enumerate(self.first_available):
            if sub.name in seen:
                raise ManifestError(f"firstAvailable[{index}].name", f"Duplicate value: {sub.name!r}")
            seen.add(sub.name)

    @property
    def reference_names(self) -> tuple[str, ...]:
        """Names a constraint or config may use: ``req`` and ``req/sub`` for each subrequest."""
        return (self.name,) + tuple(f"{self.name}/{sub.name}" for sub in self.first_available)


@frozen
class DeviceConstraint:
    """``spec.devices.constraints[]``: over ``requests`` (empty: all requests; entries
    ``req`` or ``req/sub``), exactly one of ``match_attribute`` (all chosen devices
    have the same value of that fully qualified attribute) or ``distinct_attribute``
    (pairwise different values)."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if (self.match_attribute is None) == (self.distinct_attribute is None):
            raise ManifestError("", "exactly one of `matchAttribute` or `distinctAttribute` is required")


@frozen
class DeviceClaimConfiguration:
    """``spec.devices.config[]``: ``opaque`` configuration for ``requests`` (empty: all)."""

    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None
    extra: dict[str, Any] = _extra()


@frozen
class DeviceClaim:
    """``spec.devices``: requests (<= 32, unique names), constraints, config."""

    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        _check_max(self.requests, DEVICE_REQUESTS_MAX_SIZE, "requests")
        _check_max(self.constraints, DEVICE_CONSTRAINTS_MAX_SIZE, "constraints")
        _check_max(self.config, DEVICE_CONFIG_MAX_SIZE, "config")
        names: set[str] = set()
        for index, request in enumerate(self.requests):
            if request.name in names:
                raise ManifestError(f"requests[{index}].name", f"Duplicate value: {request.name!r}")
            names.update(request.reference_names)
        for kind, entries in (("constraints", self.constraints), ("config", self.config)):
            for index, entry in enumerate(entries):
                for position, ref in enumerate(entry.requests):
                    if ref not in names:
                        raise ManifestError(f"{kind}[{index}].requests[{position}]", f"Invalid value: {ref!r}: must be the name of a request in the claim or the name of a request and a subrequest separated by '/'")

    def request(self, name: str) -> DeviceRequest | None:
        """The request called ``name`` (not ``req/sub``), or None."""
        for request in self.requests:
            if request.name == name:
                return request
        return None


@frozen
class ResourceClaimSpec:
    """``spec`` (immutable upstream)."""

    devices: DeviceClaim = DeviceClaim()
    extra: dict[str, Any] = _extra()


@frozen
class DeviceRequestAllocationResult:
    """One allocated device: ``request`` is ``req`` or ``req/sub``; ``driver``,
    ``pool``, ``device`` identify the device; ``tolerations`` are the request's
    tolerations at allocation time; ``share_id`` is set when the device allows
    multiple allocations; ``consumed_capacity`` is exact base units per capacity name;
    ``compatibility_groups`` (DRADeviceCompatibilityGroups) is the scheduler's snapshot,
    per counter set, of the groups the device declared there when it was allocated
    (only counter sets with groups; empty when none)."""

    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = field(default=None, metadata={"key": "shareID"})
    consumed_capacity: dict[str, Fraction] = field(factory=dict)
    compatibility_groups: dict[str, tuple[str, ...]] = field(factory=dict)
    extra: dict[str, Any] = _extra()

    @property
    def device_id(self) -> tuple[str, str, str]:
        """``(driver, pool, device)``."""
        return (self.driver, self.pool, self.device)


@frozen
class DeviceAllocationConfiguration:
    """``allocation.devices.config[]``: ``source`` FromClass or FromClaim."""

    source: str = ""
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None
    extra: dict[str, Any] = _extra()


@frozen
class DeviceAllocationResult:
    """``allocation.devices``: at most 32 results."""

    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()

    def __attrs_post_init__(self):
        _check_max(self.results, ALLOCATION_RESULTS_MAX_SIZE, "results")


@frozen
class AllocationResult:
    """``status.allocation``.  ``node_selector`` None means the devices are usable
    on every node; ``allocation_timestamp`` is float seconds."""

    devices: DeviceAllocationResult = DeviceAllocationResult()
    node_selector: NodeSelector | None = None
    allocation_timestamp: float | None = _time()
    extra: dict[str, Any] = _extra()


@frozen
class ResourceClaimConsumerReference:
    """``status.reservedFor[]``; the scheduler writes ``{resource: pods, name, uid}``."""

    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


@frozen
class AllocatedDeviceStatus:
    """``status.devices[]``: driver-reported state of one allocated device
    (``data`` and ``network_data`` kept raw)."""

    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = field(default=None, metadata={"key": "shareID"})
    conditions: tuple[Condition, ...] = ()
    data: Any = None
    network_data: Any = None
    extra: dict[str, Any] = _extra()


@frozen
class ResourceClaimStatus:
    """``status``: ``allocation`` (None: not allocated), ``reserved_for`` (<= 256
    consumers), ``devices`` (driver status)."""

    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()
    devices: tuple[AllocatedDeviceStatus, ...] = ()
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        _check_max(self.reserved_for, RESERVED_FOR_MAX_SIZE, "reservedFor")


@frozen
class ResourceClaim:
    """resource.k8s.io/v1 ResourceClaim (namespaced)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


@frozen
class ResourceClaimTemplateSpec:
    """``spec``: ``metadata`` (labels/annotations copied to each claim) and the claim ``spec``."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimSpec = ResourceClaimSpec()


@frozen
class ResourceClaimTemplate:
    """resource.k8s.io/v1 ResourceClaimTemplate (namespaced)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceClaimTemplateSpec = ResourceClaimTemplateSpec()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# --- ResourceSlice -------------------------------------------------------------------------


@frozen
class ResourcePool:
    """``spec.pool``: ``name`` (may contain slashes), ``generation`` (only slices of
    the highest generation of a pool count), ``resource_slice_count`` (slices in the
    pool at that generation)."""

    name: str = ""
    generation: int = field(default=0, metadata={"always": True})
    resource_slice_count: int = field(default=0, metadata={"always": True})

    def __attrs_post_init__(self):
        if not self.name:
            raise ManifestError("name", "Required value")
        if self.resource_slice_count < 1:
            raise ManifestError("resourceSliceCount", f"Invalid value: {self.resource_slice_count}: must be greater than zero")


@frozen
class Counter:
    """``{value}``: exact base units."""

    value: Fraction = Fraction(0)


@frozen
class CounterSet:
    """``spec.sharedCounters[]``: ``name`` (unique in the pool) -> counters."""

    name: str = ""
    counters: dict[str, Counter] = field(factory=dict)


@frozen
class DeviceCounterConsumption:
    """``devices[].consumesCounters[]``: amounts taken from ``counter_set`` when the device is allocated.

    ``compatibility_groups`` (DRADeviceCompatibilityGroups, 1.37 alpha): the groups
    of devices this one may share ``counter_set`` with - two devices on one counter
    set are allocated together only if they name a common group or both name none.
    At most 8 distinct names, each a DNS label (lower case, at most 63 characters)."""

    counter_set: str = ""
    counters: dict[str, Counter] = field(factory=dict)
    compatibility_groups: tuple[str, ...] = ()

    def __attrs_post_init__(self):
        _check_max(self.compatibility_groups, COMPATIBILITY_GROUPS_MAX_SIZE, "compatibilityGroups")
        seen: set[str] = set()
        for index, name in enumerate(self.compatibility_groups):
            where = f"compatibilityGroups[{index}]"
            if name in seen:
                raise ManifestError(where, f"Duplicate value: {name!r}")
            seen.add(name)
            if len(name) > 63 or not _DNS_LABEL.match(name):
                raise ManifestError(where, f"Invalid value: {name!r}: a lowercase RFC 1123 label must consist of "
                                           "lower case alphanumeric characters or '-', start and end with an "
                                           "alphanumeric character, and be at most 63 characters")


@frozen
class CapacityRequestPolicyRange:
    """``validRange``: ``min`` (required upstream), optional ``max`` and ``step``, exact base units."""

    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None


@frozen
class CapacityRequestPolicy:
    """How requests for a shareable capacity are rounded: ``default`` (used when a
    request does not ask for this capacity), and either ``valid_values`` (sorted
    allowed amounts) or ``valid_range``."""

    default: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None


@frozen
class DeviceCapacity:
    """``capacity.<name>``: ``value`` exact base units (bytes for memory, counts
    otherwise); ``request_policy`` only matters for devices that allow multiple
    allocations."""

    value: Fraction = None  # type: ignore[assignment]  # required: None is rejected
    request_policy: CapacityRequestPolicy | None = None

    def __attrs_post_init__(self):
        if self.value is None:
            raise ManifestError("value", "Required value")


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def is_semver(text: str) -> bool:
    """True for a strict semver 2.0.0 version (``1.2.3``, ``2.0.0-rc.1+build``)."""
    return isinstance(text, str) and _SEMVER.match(text) is not None


_ATTRIBUTE_KINDS = (
    ("int_value", "int"),
    ("bool_value", "bool"),
    ("string_value", "string"),
    ("version_value", "version"),
    ("int_values", "ints"),
    ("bool_values", "bools"),
    ("string_values", "strings"),
    ("version_values", "versions"),
)


@frozen
class DeviceAttribute:
    """A typed attribute value: exactly one of ``int`` (Python int), ``bool``,
    ``string``, ``version`` (semver text) or, with DRAListTypeAttributes, the list
    kinds ``ints``/``bools``/``strings``/``versions`` (tuples).  Equality compares
    kind and value, which is what matchAttribute/distinctAttribute constraints need."""

    int_value: int | None = field(default=None, metadata={"key": "int"})
    bool_value: bool | None = field(default=None, metadata={"key": "bool"})
    string_value: str | None = field(default=None, metadata={"key": "string"})
    version_value: str | None = field(default=None, metadata={"key": "version"})
    int_values: tuple[int, ...] | None = field(default=None, metadata={"key": "ints"})
    bool_values: tuple[bool, ...] | None = field(default=None, metadata={"key": "bools"})
    string_values: tuple[str, ...] | None = field(default=None, metadata={"key": "strings"})
    version_values: tuple[str, ...] | None = field(default=None, metadata={"key": "versions"})

    def __attrs_post_init__(self):
        set_kinds = [key for name, key in _ATTRIBUTE_KINDS if getattr(self, name) is not None]
        if len(set_kinds) != 1:
            raise ManifestError(
                "", "exactly one value must be specified" if not set_kinds else f"exactly one value must be specified, got {', '.join(set_kinds)}"
            )
        if self.version_value is not None and not is_semver(self.version_value):
            raise ManifestError("version", f"Invalid value: {self.version_value!r}: must be a string compatible with semver.org spec 2.0.0")
        for index, text in enumerate(self.version_values or ()):
            if not is_semver(text):
                raise ManifestError(f"versions[{index}]", f"Invalid value: {text!r}: must be a string compatible with semver.org spec 2.0.0")

    @property
    def kind(self) -> str:
        """The manifest key of the value: ``int``, ``bool``, ``string``, ``version``, ``ints``, ..."""
        for name, key in _ATTRIBUTE_KINDS:
            if getattr(self, name) is not None:
                return key
        return ""

    @property
    def is_list(self) -> bool:
        """Whether the value is list-typed (``ints``, ``bools``, ``strings``, ``versions``: DRAListTypeAttributes)."""
        return (self.int_values is not None or self.bool_values is not None or self.string_values is not None
                or self.version_values is not None)

    @property
    def value(self) -> Any:
        """The plain value (int, bool, str, version text, or a tuple of those)."""
        for name, _ in _ATTRIBUTE_KINDS:
            value = getattr(self, name)
            if value is not None:
                return value
        return None


@frozen
class Device:
    """``spec.devices[]``: one device.

    ``attributes``/``capacity`` are keyed by the names as written (qualified or
    not; see :meth:`lookup_attribute`).  ``node_name``/``node_selector``/
    ``all_nodes`` are only set with the slice's ``perDeviceNodeSelection``.
    ``allow_multiple_allocations`` (None = false) lets several claims share the
    device through capacity requests.
    """

    name: str = ""
    attributes: dict[str, DeviceAttribute] = field(factory=dict)
    capacity: dict[str, DeviceCapacity] = field(factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.name:
            raise ManifestError("name", "Required value")
        _check_max(self.taints, DEVICE_TAINTS_MAX_LENGTH, "taints")

    def lookup_attribute(self, name: str, driver: str) -> DeviceAttribute | None:
        """The attribute with the fully qualified ``name`` (``domain/id``), as
        constraints look it up: the exact key first, then, when ``domain`` is the
        driver, the unqualified ``id``.  None when the device lacks it."""
        return _lookup(self.attributes, name, driver)

    def lookup_capacity(self, name: str, driver: str) -> DeviceCapacity | None:
        """Like :meth:`lookup_attribute` for ``capacity`` (a request's capacity
        names may be unqualified: then they are in the driver's domain)."""
        return _lookup(self.capacity, name, driver)

    @property
    def allows_multiple_allocations(self) -> bool:
        return bool(self.allow_multiple_allocations)


def _lookup(values: dict, name: str, driver: str):
    found = values.get(name)
    if found is not None:
        return found
    domain, ident = split_qualified_name(name, driver)
    if domain != driver:
        return None
    if ident != name:
        return values.get(ident)
    return values.get(f"{driver}/{name}")


@frozen
class ResourceSliceSpec:
    """``spec``: ``driver``, ``pool`` and exactly one of ``node_name``,
    ``node_selector``, ``all_nodes`` or ``per_device_node_selection``; then
    ``devices`` (unique names) and/or ``shared_counters``."""

    driver: str = ""
    pool: ResourcePool = None  # type: ignore[assignment]  # required: None is rejected
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.driver:
            raise ManifestError("driver", "Required value")
        if self.pool is None:
            raise ManifestError("pool", "Required value")
        chosen = [
            key
            for key, value in (
                ("nodeName", self.node_name),
                ("nodeSelector", self.node_selector),
                ("allNodes", self.all_nodes or None),
                ("perDeviceNodeSelection", self.per_device_node_selection or None),
            )
            if value is not None and value != ""
        ]
        if len(chosen) != 1:
            problem = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
            raise ManifestError("", problem if not chosen else f"{problem}, got {', '.join(chosen)}")
        _check_max(self.devices, RESOURCE_SLICE_MAX_DEVICES, "devices")
        names: set[str] = set()
        per_device = bool(self.per_device_node_selection)
        for index, device in enumerate(self.devices):
            if device.name in names:
                raise ManifestError(f"devices[{index}].name", f"Duplicate value: {device.name!r}")
            names.add(device.name)
            selected = sum(1 for v in (device.node_name, device.node_selector, device.all_nodes or None) if v not in (None, ""))
            if per_device and selected != 1:
                raise ManifestError(f"devices[{index}]", "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required when `perDeviceNodeSelection` is set")
            if not per_device and selected:
                raise ManifestError(f"devices[{index}]", "`nodeName`, `nodeSelector` and `allNodes` are only allowed when `perDeviceNodeSelection` is set")
        sets: set[str] = set()
        for index, counter_set in enumerate(self.shared_counters):
            if counter_set.name in sets:
                raise ManifestError(f"sharedCounters[{index}].name", f"Duplicate value: {counter_set.name!r}")
            sets.add(counter_set.name)

    def device(self, name: str) -> Device | None:
        """The device called ``name`` or None."""
        for device in self.devices:
            if device.name == name:
                return device
        return None


@frozen
class ResourceSlice:
    """resource.k8s.io/v1 ResourceSlice (cluster-scoped)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceSliceSpec = None  # type: ignore[assignment]  # required: None is rejected

    def __attrs_post_init__(self):
        if self.spec is None:
            raise ManifestError("spec", "Required value")

    @property
    def key(self) -> str:
        return self.metadata.name

    @property
    def pool_id(self) -> tuple[str, str]:
        """``(driver, pool name)``: slices with the same pool id form one pool."""
        return (self.spec.driver, self.spec.pool.name)


# --- DeviceTaintRule -----------------------------------------------------------------------


@frozen
class DeviceTaintSelector:
    """``spec.deviceSelector``: every set field must match.  An empty selector
    matches all devices.  ``device_class_name`` (and CEL ``selectors``, kept in
    ``extra``) existed in v1alpha3 until 1.35 and are no longer applied upstream;
    they are kept only so such manifests round-trip."""

    device_class_name: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    extra: dict[str, Any] = _extra()

    def matches(self, driver: str, pool: str, device: str) -> bool:
        """True when driver, pool and device satisfy every set field."""
        return (
            (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


@frozen
class DeviceTaintRuleSpec:
    """``spec``: ``device_selector`` and one ``taint``.

    A None selector (``deviceSelector:`` absent or null) matches *no* device
    according to the API documentation, while upstream's scheduler-side slice
    tracker applies such a rule to *all* devices (see dra.md §7); the consumer
    decides, this model keeps None distinct from an empty selector.
    """

    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = None  # type: ignore[assignment]  # required: None is rejected
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if self.taint is None:
            raise ManifestError("taint", "Required value")


@frozen
class DeviceTaintRuleStatus:
    """``status.conditions`` (<= 8; upstream sets type EvictionInProgress)."""

    conditions: tuple[Condition, ...] = ()


@frozen
class DeviceTaintRule:
    """resource.k8s.io/v1 DeviceTaintRule (cluster-scoped, with status)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: DeviceTaintRuleSpec = None  # type: ignore[assignment]  # required: None is rejected
    status: DeviceTaintRuleStatus = DeviceTaintRuleStatus()

    def __attrs_post_init__(self):
        if self.spec is None:
            raise ManifestError("spec", "Required value")

    @property
    def key(self) -> str:
        return self.metadata.name


_KEYED_MAP_VALUES = (Fraction, DeviceAttribute, DeviceCapacity, Counter)
converter.register_structure_hook_func(_is_keyed_map, _structure_keyed_map)


# --- older apiVersions -----------------------------------------------------------------------

_REQUEST_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


def _flat_request_to_v1(request: Any) -> Any:
    """v1beta1/v1alpha3 request (class, selectors, count... on the request itself)
    -> v1 request with ``exactly``; a ``firstAvailable`` request keeps its shape
    (its subrequests look the same in every version)."""
    if not isinstance(request, dict) or "exactly" in request:
        return request
    flat = {k: request[k] for k in _REQUEST_FIELDS if k in request}
    out = {k: v for k, v in request.items() if k not in _REQUEST_FIELDS}
    if flat or not request.get("firstAvailable"):
        out["exactly"] = flat  # both kinds given: validation rejects the request
    return out


def _claim_spec_to_v1(spec: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    devices = dict(spec["devices"])
    if isinstance(devices.get("requests"), list):
        devices["requests"] = [_flat_request_to_v1(r) for r in devices["requests"]]
    return {**spec, "devices": devices}


def _claim_from_flat(body: dict) -> dict:
    body = copy.deepcopy(body)
    body["spec"] = _claim_spec_to_v1(body.get("spec"))
    return body


def _template_from_flat(body: dict) -> dict:
    body = copy.deepcopy(body)
    spec = body.get("spec")
    if isinstance(spec, dict):
        body["spec"] = {**spec, "spec": _claim_spec_to_v1(spec.get("spec"))}
    return body


def _device_from_basic(device: Any, plain_capacity: bool) -> Any:
    if not isinstance(device, dict):
        return device
    basic = device.get("basic")
    out = {k: v for k, v in device.items() if k != "basic"}
    if isinstance(basic, dict):
        out.update(basic)
    if plain_capacity and isinstance(out.get("capacity"), dict):
        out["capacity"] = {
            name: value if isinstance(value, dict) else {"value": value} for name, value in out["capacity"].items()
        }
    return out


def _slice_from_basic(plain_capacity: bool) -> Callable[[dict], dict]:
    def upgrade(body: dict) -> dict:
        body = copy.deepcopy(body)
        spec = body.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("devices"), list):
            spec["devices"] = [_device_from_basic(d, plain_capacity) for d in spec["devices"]]
        return body

    return upgrade


def _same(body: dict) -> dict:
    return body


#: kind -> {older apiVersion -> function converting a manifest body (without
#: apiVersion/kind) to the v1 shape}.  v1beta2 has the v1 shape; v1beta1 and
#: v1alpha3 put request fields on the request itself and device fields under
#: ``basic``; v1alpha3 capacity values are plain quantities.
UPGRADES: dict[str, dict[str, Callable[[dict], dict]]] = {
    "DeviceClass": {
        "resource.k8s.io/v1beta2": _same,
        "resource.k8s.io/v1beta1": _same,
        "resource.k8s.io/v1alpha3": _same,
    },
    "ResourceClaim": {
        "resource.k8s.io/v1beta2": _same,
        "resource.k8s.io/v1beta1": _claim_from_flat,
        "resource.k8s.io/v1alpha3": _claim_from_flat,
    },
    "ResourceClaimTemplate": {
        "resource.k8s.io/v1beta2": _same,
        "resource.k8s.io/v1beta1": _template_from_flat,
        "resource.k8s.io/v1alpha3": _template_from_flat,
    },
    "ResourceSlice": {
        "resource.k8s.io/v1beta2": _same,
        "resource.k8s.io/v1beta1": _slice_from_basic(plain_capacity=False),
        "resource.k8s.io/v1alpha3": _slice_from_basic(plain_capacity=True),
    },
    "DeviceTaintRule": {
        "resource.k8s.io/v1beta2": _same,
        "resource.k8s.io/v1alpha3": _same,
    },
}

#: ``(kind, class, namespaced, plural)`` of every kind in this group, for registration.
KINDS = (
    ("DeviceClass", DeviceClass, False, "deviceclasses"),
    ("ResourceClaim", ResourceClaim, True, "resourceclaims"),
    ("ResourceClaimTemplate", ResourceClaimTemplate, True, "resourceclaimtemplates"),
    ("ResourceSlice", ResourceSlice, False, "resourceslices"),
    ("DeviceTaintRule", DeviceTaintRule, False, "devicetaintrules"),
)
