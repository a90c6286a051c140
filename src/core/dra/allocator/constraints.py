"""Claim constraints across the devices of one claim: ``matchAttribute`` and
``distinctAttribute`` (upstream ``matchAttributeConstraint`` and
``distinctAttributeConstraint``).

A constraint names requests (``req`` or ``req/sub``; none = every request).  A
device picked for a request it does not name is not affected.  The attribute is
looked up by its fully qualified name, or by the bare name when the domain is
the device's driver; a device without it never satisfies the constraint.

Two semantics, chosen by the DRAListTypeAttributes feature gate as upstream
chooses its allocator:

- gate off (upstream's stable and incubating allocators): values compare by
  type and value (a version equals only the same version string, ``1`` never
  equals ``"1"``); a list-typed attribute (``ints``, ``strings``, ...) is a
  type those allocators do not know, so it matches or differs from nothing: the
  first device with it is taken, a second one is refused.
- gate on (upstream's experimental allocator, KEP-5491): every value is a set,
  a scalar the set of itself.  ``matchAttribute`` keeps the running
  intersection of the chosen devices' sets and refuses a device that would make
  it empty; ``distinctAttribute`` refuses a device whose set shares an element
  with the set of any device already chosen (pairwise disjoint).  Elements
  compare by type and value, so ``string: "a"`` is in ``strings: ["a", "b"]``
  but ``int: 1`` is not in ``strings: ["1"]``.

Constraints are monotonic: once a device is refused, adding more devices cannot
help, so the search backtracks.  ``add`` and ``remove`` are called in LIFO
order by the search, which lets both keep a plain stack.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from kubesched.core.api.resource_v1 import Device, DeviceAttribute, DeviceConstraint, ResourceClaim, ResourceSlice

#: the element type of each attribute kind (a scalar kind and its list kind share one)
_ELEMENT_TYPE = {"int": "int", "ints": "int", "bool": "bool", "bools": "bool",
                 "string": "string", "strings": "string", "version": "version", "versions": "version"}


def _applies(requests: frozenset[str], request: str, subrequest: str | None) -> bool:
    if not requests:
        return True
    return request in requests or (subrequest is not None and f"{request}/{subrequest}" in requests)


@functools.lru_cache(maxsize=4096)
def value_set(attribute: DeviceAttribute) -> frozenset[tuple[str, object]]:
    """The attribute's values as a set of ``(element type, value)`` pairs: one
    pair for a scalar, one per distinct element for a list (versions as their
    text: semver 2.0.0 text is minimal, so equal versions are equal strings)."""
    element = _ELEMENT_TYPE[attribute.kind]
    value = attribute.value
    if attribute.is_list:
        return frozenset((element, item) for item in value)
    return frozenset(((element, value),))


class AttributeConstraint:
    """State of one constraint during one allocation attempt.  ``list_semantics``:
    DRAListTypeAttributes is on (set intersection / pairwise disjoint)."""

    __slots__ = ("requests", "attribute", "distinct", "list_semantics", "_values")

    def __init__(self, constraint: DeviceConstraint, list_semantics: bool = False):
        self.requests = frozenset(constraint.requests)
        self.distinct = constraint.match_attribute is None
        self.attribute = (constraint.distinct_attribute if self.distinct else constraint.match_attribute) or ""
        self.list_semantics = list_semantics
        #: per added device: its attribute (scalar semantics) or, with list semantics, the running
        #: intersection (match) or the device's own value set (distinct)
        self._values: list = []

    def add(self, request: str, subrequest: str | None, driver: str, device: Device) -> bool:
        """Record ``device`` picked for ``request`` (and ``subrequest``) if the
        constraint allows it; False (and nothing recorded) if not."""
        if not _applies(self.requests, request, subrequest):
            return True
        attribute = device.lookup_attribute(self.attribute, driver)
        if attribute is None:
            return False
        entry = self._admit_sets(attribute) if self.list_semantics else self._admit_scalar(attribute)
        if entry is None:
            return False
        self._values.append(entry)
        return True

    def _admit_scalar(self, attribute: DeviceAttribute) -> DeviceAttribute | None:
        values = self._values
        if not values:
            return attribute
        if attribute.is_list:
            return None  # a type the scalar allocators do not compare
        if self.distinct:
            # DeviceAttribute equality is "same type and same value".
            return None if attribute in values else attribute
        return attribute if attribute == values[0] else None

    def _admit_sets(self, attribute: DeviceAttribute) -> frozenset | None:
        values = value_set(attribute)
        if self.distinct:
            return None if any(not values.isdisjoint(other) for other in self._values) else values
        if not self._values:
            return values
        remaining = self._values[-1] & values
        return remaining or None

    def remove(self, request: str, subrequest: str | None) -> None:
        """Undo the latest successful :meth:`add` for this request."""
        if _applies(self.requests, request, subrequest):
            self._values.pop()


def unpublished_attributes(claim: ResourceClaim, slices: Iterable[ResourceSlice]) -> list[str]:
    """The ``matchAttribute`` / ``distinctAttribute`` constraints of ``claim`` whose attribute no device of
    ``slices`` publishes, as ``matchAttribute dra.example.com/slice``: such a constraint can never be met
    (a device without the attribute never satisfies it, upstream's allocators alike), so the claim's pods
    stay unschedulable with "cannot allocate all claims".  For a failure message; empty when every named
    attribute exists somewhere."""
    wanted = {(c.match_attribute or c.distinct_attribute or ""): "matchAttribute" if c.match_attribute else
              "distinctAttribute" for c in claim.spec.devices.constraints}
    for resource_slice in slices:
        driver = resource_slice.spec.driver
        for device in resource_slice.spec.devices:
            for name in [name for name in wanted if device.lookup_attribute(name, driver) is not None]:
                del wanted[name]
        if not wanted:
            return []
    return [f"{kind} {name}" for name, kind in wanted.items()]
