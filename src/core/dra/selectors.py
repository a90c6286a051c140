"""What a DRA selector sees of a device, and the memo of selector results per device.

:class:`DeviceView` converts a ResourceSlice device (attributes, capacity,
allowMultipleAllocations) into the CEL ``device`` variable once;
:class:`SelectorCache` (one per scheduler) remembers each selector's result
per device and per distinct device content, as upstream's allocator caches
CEL results per device.  The CEL engine itself is :mod:`kubesched.core.cel`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from kubesched.core import cel
from kubesched.core.api import resource_v1
from kubesched.core.cel import CelRuntimeError
from kubesched.core.quantity import QuantityError

if TYPE_CHECKING:
    from kubesched.core.cel import CompiledSelector, Quantity

# The CEL engine (cel-python) is imported where a device is first converted for it, not with this module: a
# scheduler always holds a SelectorCache, a cluster without DRA devices never needs the engine.


def _attribute_to_cel(value: Any) -> Any:
    import celpy.celtypes as ct

    from kubesched.core.cel.values import Semver

    if isinstance(value, resource_v1.DeviceAttribute):
        kind = value.kind
        raw = value.value
        if kind in ("version", "versions"):
            if kind == "version":
                return Semver.parse(raw)
            versions: list[Any] = [Semver.parse(v) for v in raw]
            return ct.ListType(versions)
        return _attribute_to_cel(list(raw) if isinstance(raw, tuple) else raw)
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        return ct.IntType(value)
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, Semver):
        return value
    if isinstance(value, (list, tuple)):
        return ct.ListType([_attribute_to_cel(v) for v in value])
    raise ValueError(f"unsupported attribute value {value!r}")


def _capacity_to_cel(value: Any) -> Quantity:
    from kubesched.core.cel.values import Quantity

    if isinstance(value, resource_v1.DeviceCapacity):
        value = value.value
    if isinstance(value, Quantity):
        return value
    return Quantity(value if isinstance(value, (Fraction, int)) else str(value))


class DeviceView:
    """What a selector sees of one device, converted once.

    ``attributes``/``capacity`` are keyed by the names as a slice writes them
    (``"model"``, ``"dra.example.com/model"``); values are DeviceAttribute /
    DeviceCapacity objects or plain values (int, bool, str, :class:`Semver`,
    lists; Quantity, Fraction or quantity text for capacity).  Construction is
    the expensive part (~0.1-0.2 ms): reuse a view for every selector, which
    :class:`SelectorCache` does.  Raises :class:`CelRuntimeError` for a value
    that cannot be converted (e.g. an invalid version), as upstream does when it
    builds the CEL input.
    """

    __slots__ = ("driver", "cel_value")

    def __init__(
        self,
        driver: str,
        attributes: Mapping[str, Any] | None = None,
        capacity: Mapping[str, Any] | None = None,
        allow_multiple_allocations: bool = False,
    ):
        import celpy.celtypes as ct

        from kubesched.core.cel.values import DomainMap

        self.driver = driver
        attrs: dict = {}
        for name, value in (attributes or {}).items():
            domain, ident = resource_v1.split_qualified_name(name, driver)
            try:
                converted = _attribute_to_cel(value)
            except ValueError as err:
                is_version = isinstance(value, resource_v1.DeviceAttribute) and value.kind in ("version", "versions")
                raise CelRuntimeError(f"attribute {name}: {'parse semantic version: ' if is_version else ''}{err}") from None
            attrs.setdefault(ct.StringType(domain), ct.MapType())[ct.StringType(ident)] = converted
        caps: dict = {}
        for name, value in (capacity or {}).items():
            domain, ident = resource_v1.split_qualified_name(name, driver)
            try:
                converted = _capacity_to_cel(value)
            except (QuantityError, ValueError, TypeError) as err:
                raise CelRuntimeError(f"capacity {name}: {err}") from None
            caps.setdefault(ct.StringType(domain), ct.MapType())[ct.StringType(ident)] = converted
        #: The ``device`` variable as a celpy value (engine detail).
        self.cel_value = ct.MapType(
            {
                ct.StringType("driver"): ct.StringType(driver),
                ct.StringType("attributes"): DomainMap(attrs),
                ct.StringType("capacity"): DomainMap(caps),
                ct.StringType("allowMultipleAllocations"): ct.BoolType(bool(allow_multiple_allocations)),
            }
        )

    @classmethod
    def from_device(cls, driver: str, device: resource_v1.Device) -> DeviceView:
        """The view of a slice's ``device``; ``driver`` is ``slice.spec.driver``."""
        return cls(driver, device.attributes, device.capacity, bool(device.allow_multiple_allocations))

    def __repr__(self) -> str:
        return f"DeviceView(driver={self.driver!r})"




class _SliceMemo:
    __slots__ = ("version", "views", "results", "contents")

    def __init__(self, version: tuple):
        self.version = version
        self.views: dict[str, DeviceView | CelRuntimeError] = {}
        self.results: dict[tuple[str, str], bool | CelRuntimeError] = {}
        self.contents: dict[str, tuple] = {}


def content_key(driver: str, device: resource_v1.Device) -> tuple:
    """Everything a selector can see of a device (not its name, pool or node)."""
    return (driver, bool(device.allow_multiple_allocations), repr(sorted(device.attributes.items())),
            repr(sorted(device.capacity.items())))


class SelectorCache:
    """Memo of selector results and device views, one per scheduler.

    Selector results depend only on what a selector sees of a device (driver,
    attributes, capacity, allowMultipleAllocations), so each expression is
    evaluated once per distinct device content - a thousand nodes with the same
    GPU cost one evaluation - and remembered per (slice, device); runtime
    errors are memoised too and raised again.
    A slice is identified by ``metadata.uid`` (its name when it has none) and its
    version by ``(metadata.generation, metadata.resourceVersion)``: when a slice
    with the same uid shows up with another version, everything remembered for it
    is dropped.  Call :meth:`forget` when a slice is deleted.  Holds at most
    ``max_slices`` slices (then it starts afresh).  Safe to share between threads
    (at worst a device is evaluated twice).

    ``evaluations`` counts real CEL evaluations, ``hits`` memo hits and
    ``conversions`` DeviceView constructions.
    """

    def __init__(self, max_slices: int = 100_000):
        self.max_slices = max_slices
        self._slices: dict[str, _SliceMemo] = {}
        self._by_content: dict[tuple[str, tuple], bool | CelRuntimeError] = {}
        self.evaluations = 0
        self.hits = 0
        self.conversions = 0

    @staticmethod
    def slice_identity(resource_slice: resource_v1.ResourceSlice) -> tuple[str, tuple]:
        """``(uid or name, (generation, resourceVersion))``."""
        meta = resource_slice.metadata
        return meta.uid or meta.name, (meta.generation, meta.resource_version)

    def _memo(self, resource_slice: resource_v1.ResourceSlice) -> _SliceMemo:
        key, version = self.slice_identity(resource_slice)
        memo = self._slices.get(key)
        if memo is None or memo.version != version:
            if memo is None and len(self._slices) >= self.max_slices:
                self._slices.clear()
            memo = _SliceMemo(version)
            self._slices[key] = memo
        return memo

    def view(self, resource_slice: resource_v1.ResourceSlice, device: resource_v1.Device) -> DeviceView:
        """The cached :class:`DeviceView` of ``device`` in ``resource_slice``.
        Raises :class:`CelRuntimeError` when the device cannot be converted."""
        return self._view(self._memo(resource_slice), resource_slice, device)

    def _view(self, memo: _SliceMemo, resource_slice, device) -> DeviceView:
        view = memo.views.get(device.name)
        if view is None:
            self.conversions += 1
            try:
                view = DeviceView.from_device(resource_slice.spec.driver, device)
            except CelRuntimeError as err:
                view = err
            memo.views[device.name] = view
        if isinstance(view, CelRuntimeError):
            raise view
        return view

    def matches(
        self,
        selector: CompiledSelector | str,
        resource_slice: resource_v1.ResourceSlice,
        device: resource_v1.Device,
    ) -> bool:
        """Memoised ``selector.matches(view of device)``.  ``selector`` may be an
        expression (compiled through :func:`compile`).  Raises
        :class:`CelCompileError` (not memoised here; :func:`compile` caches it)
        and :class:`CelRuntimeError` (memoised)."""
        if isinstance(selector, str):
            selector = cel.compile(selector)
        memo = self._memo(resource_slice)
        key = (selector.expression, device.name)
        result = memo.results.get(key)
        if result is None:
            content = memo.contents.get(device.name)
            if content is None:
                content = memo.contents[device.name] = content_key(resource_slice.spec.driver, device)
            result = self._by_content.get((selector.expression, content))
            if result is None:
                try:
                    view = self._view(memo, resource_slice, device)
                    self.evaluations += 1
                    result = selector.matches(view)
                except CelRuntimeError as err:
                    result = err
                if len(self._by_content) >= self.max_slices:
                    self._by_content.clear()
                self._by_content[(selector.expression, content)] = result
            else:
                self.hits += 1
            memo.results[key] = result
        else:
            self.hits += 1
        if isinstance(result, CelRuntimeError):
            raise result
        return result

    def matches_all(
        self,
        selectors: Iterable[CompiledSelector | str],
        resource_slice: resource_v1.ResourceSlice,
        device: resource_v1.Device,
    ) -> bool:
        """True when every selector matches, evaluated in order; the first false
        result stops (like upstream, class selectors before request selectors)."""
        return all(self.matches(selector, resource_slice, device) for selector in selectors)

    def forget(self, resource_slice: resource_v1.ResourceSlice | str) -> None:
        """Drop everything remembered for a slice (object, uid or name)."""
        key = resource_slice if isinstance(resource_slice, str) else self.slice_identity(resource_slice)[0]
        self._slices.pop(key, None)

    def clear(self) -> None:
        """Drop everything."""
        self._slices.clear()
        self._by_content.clear()
