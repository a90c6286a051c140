"""Claim constraints across the devices of one claim: ``matchAttribute`` and
``distinctAttribute`` (upstream ``matchAttributeConstraint`` and
``distinctAttributeConstraint``).

A constraint names requests (``req`` or ``req/sub``; none = every request).  A
device picked for a request it does not name is not affected.  The attribute is
looked up by its fully qualified name, or by the bare name when the domain is
the device's driver; a device without it never satisfies the constraint.
Values compare by type and value (a version equals only the same version
string, ``1`` never equals ``"1"``).  List-typed attributes compare as whole
lists (upstream's experimental list semantics, set intersection, are not
implemented).

Constraints are monotonic: once a device is refused, adding more devices cannot
help, so the search backtracks.  ``add`` and ``remove`` are called in LIFO
order by the search, which lets both keep a plain stack.
"""

from __future__ import annotations

from kubesched.core.api.resource_v1 import Device, DeviceAttribute, DeviceConstraint


def _applies(requests: frozenset[str], request: str, subrequest: str | None) -> bool:
    if not requests:
        return True
    return request in requests or (subrequest is not None and f"{request}/{subrequest}" in requests)


class AttributeConstraint:
    """State of one constraint during one allocation attempt."""

    __slots__ = ("requests", "attribute", "distinct", "_values")

    def __init__(self, constraint: DeviceConstraint):
        self.requests = frozenset(constraint.requests)
        self.distinct = constraint.match_attribute is None
        self.attribute = (constraint.distinct_attribute if self.distinct else constraint.match_attribute) or ""
        self._values: list[DeviceAttribute] = []

    def add(self, request: str, subrequest: str | None, driver: str, device: Device) -> bool:
        """Record ``device`` picked for ``request`` (and ``subrequest``) if the
        constraint allows it; False (and nothing recorded) if not."""
        if not _applies(self.requests, request, subrequest):
            return True
        # DeviceAttribute equality is "same type and same value".
        attribute = device.lookup_attribute(self.attribute, driver)
        if attribute is None:
            return False
        if self._values:
            if self.distinct:
                if attribute in self._values:
                    return False
            elif attribute != self._values[0]:
                return False
        self._values.append(attribute)
        return True

    def remove(self, request: str, subrequest: str | None) -> None:
        """Undo the latest successful :meth:`add` for this request."""
        if _applies(self.requests, request, subrequest):
            self._values.pop()
