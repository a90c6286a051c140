"""The CEL value types Kubernetes adds: Quantity, Semver, and optional values."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy.celtypes as ct

from kubesched.core.quantity import format_exact_quantity, parse_quantity

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class Quantity:
    """An exact Kubernetes quantity in CEL (``kubernetes.Quantity``).

    ``value`` is a :class:`~fractions.Fraction` in base units.  ``==`` compares
    values (``quantity("1Gi") == quantity("1024Mi")``); there are no ``<``/``>``
    operators in CEL, use ``compareTo``/``isGreaterThan``/``isLessThan``.
    """

    __slots__ = ("value",)

    def __init__(self, value: Fraction | int | str):
        self.value = value if isinstance(value, Fraction) else Fraction(value) if isinstance(value, int) else parse_quantity(value)

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse quantity text; raises :class:`~kubesched.core.quantity.QuantityError`."""
        if not isinstance(text, str):
            raise TypeError("quantity() takes a string")
        return cls(parse_quantity(text))

    def compare_to(self, other: Quantity) -> int:
        """-1, 0 or 1."""
        return (self.value > other.value) - (self.value < other.value)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        if isinstance(other, Quantity):
            return self.value != other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Quantity", self.value))

    def __str__(self) -> str:
        return format_exact_quantity(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


# --- Semver --------------------------------------------------------------------------------

_ALNUM_HYPHEN = re.compile(r"^[0-9A-Za-z-]+$")


def _parse_number(part: str, what: str) -> int:
    if not part or not part.isdigit() or not part.isascii():
        raise ValueError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    return int(part)


@total_ordering
class Semver:
    """A semantic version 2.0.0 value in CEL (``kubernetes.Semver``).

    Ordering follows semver precedence (pre-releases before the release, numeric
    identifiers numerically, below alphanumeric ones); build metadata is kept but
    ignored by comparisons and ``==``, like upstream's blang/semver.
    """

    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major: int, minor: int, patch: int, prerelease: tuple = (), build: tuple = ()):
        self.major, self.minor, self.patch = major, minor, patch
        self.prerelease = tuple(prerelease)
        self.build = tuple(build)

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """Strict semver parsing; with ``normalize`` a leading ``v`` is dropped,
        missing minor/patch become 0 and leading zeroes are removed first
        (``semver("v1.0", true)``).  Raises ValueError with the reason."""
        if not isinstance(text, str):
            raise TypeError("semver() takes a string")
        if normalize:
            text = _normalize_semver(text)
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        major = _parse_number(parts[0], "major")
        minor = _parse_number(parts[1], "minor")
        rest = parts[2]
        build: tuple = ()
        prerelease: tuple = ()
        if "+" in rest:
            rest, _, meta = rest.partition("+")
            build = tuple(meta.split("."))
            for item in build:
                if not item:
                    raise ValueError("Build meta data is empty")
                if not _ALNUM_HYPHEN.match(item):
                    raise ValueError(f"Invalid character(s) found in build meta data {item!r}")
        if "-" in rest:
            rest, _, pre = rest.partition("-")
            items: list[int | str] = []
            for item in pre.split("."):
                if not item:
                    raise ValueError("Prerelease is empty")
                if item.isdigit() and item.isascii():
                    if len(item) > 1 and item[0] == "0":
                        raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {item!r}")
                    items.append(int(item))
                elif _ALNUM_HYPHEN.match(item):
                    items.append(item)
                else:
                    raise ValueError(f"Invalid character(s) found in prerelease {item!r}")
            prerelease = tuple(items)
        patch = _parse_number(rest, "patch")
        return cls(major, minor, patch, prerelease, build)

    def _key(self):
        return (self.major, self.minor, self.patch)

    def compare_to(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence."""
        a, b = self._key(), other._key()
        if a != b:
            return -1 if a < b else 1
        if not self.prerelease or not other.prerelease:
            return (not self.prerelease) - (not other.prerelease)
        for x, y in zip(self.prerelease, other.prerelease):
            if x == y:
                continue
            x_num, y_num = isinstance(x, int), isinstance(y, int)
            if x_num != y_num:
                return -1 if x_num else 1
            return -1 if x < y else 1
        return (len(self.prerelease) > len(other.prerelease)) - (len(self.prerelease) < len(other.prerelease))

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Semver):
            return self.compare_to(other) == 0
        return NotImplemented

    def __lt__(self, other: Any) -> bool:
        if isinstance(other, Semver):
            return self.compare_to(other) < 0
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Semver", self._key(), self.prerelease))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _normalize_semver(text: str) -> str:
    if text.startswith("v"):
        text = text[1:]
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            trimmed = part.lstrip("0")
            if not trimmed or not trimmed[0].isdigit():
                trimmed = "0" + trimmed
            parts[index] = trimmed
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# --- optional values -----------------------------------------------------------------------


class _Optional:
    """``optional_type``: a value that may be absent (``x.?f``, ``optional.of(v)``)."""

    __slots__ = ("value",)
    _NONE: _Optional

    def __init__(self, value: Any = None):
        self.value = value

    @property
    def present(self) -> bool:
        return self is not _Optional._NONE

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, _Optional):
            if self.present != other.present:
                return False
            return not self.present or self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("optional", self.value if self.present else None))

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.present else "optional.none()"


_Optional._NONE = _Optional()
_OPTIONAL_NONE = _Optional._NONE


class DomainMap(ct.MapType):
    """A map of domains (``device.attributes`` / ``device.capacity``): a missing domain reads as an
    empty map, while ``"domain" in device.attributes`` stays false (upstream rule)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return _EMPTY_MAP


_EMPTY_MAP = ct.MapType()
