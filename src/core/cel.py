"""CEL device selectors for Dynamic Resource Allocation.

The public API does not depend on the engine underneath (cel-python, module
``celpy``, evaluated with its tree-walking interpreter; see
``reference/dependencies.md`` §1 for why and for its known bugs)::

    selector = compile('device.driver == "gpu.example.com" && '
                       'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
    view = DeviceView.from_device(slice.spec.driver, device)      # or SelectorCache.view()
    selector.matches(view)          # -> bool; raises CelRuntimeError

    cache = SelectorCache()          # long-lived, one per scheduler
    cache.matches(selector_or_expression, slice, device)   # memoised per device

The environment mirrors the one Kubernetes builds for DRA selectors (upstream
``dynamic-resource-allocation/cel``, "stored expressions" flavour, i.e. every
field and library of the newest version regardless of feature gates):

- one variable, ``device``, with the fields ``driver`` (string),
  ``attributes`` (map domain -> map id -> value), ``capacity`` (map domain ->
  map id -> Quantity) and ``allowMultipleAllocations`` (bool).  Attribute and
  capacity names without a domain are put under the driver's name; values are
  int, bool, string, :class:`Semver` (version attributes) or lists of those
  (list-type attributes).  Looking up a domain the device does not have gives
  an **empty map** (so ``has(device.attributes["x.com"].model)`` is false), an
  unknown name inside a domain is the runtime error ``no such key: <name>``;
- the Kubernetes quantity library (``quantity``, ``isQuantity``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``mul``, ``asInteger``,
  ``isInteger``, ``asApproximateFloat``, ``sign``) and semver library
  (``semver(s[, normalize])``, ``isSemver``, ``major``, ``minor``, ``patch``
  and the comparisons);
- cel-go's string extension (``charAt``, ``indexOf``, ``lastIndexOf``,
  ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
  ``trim``, ``join``, ``reverse``, ``format``, ``strings.quote``), sets
  (``sets.contains``, ``sets.intersects``, ``sets.equivalent``), Kubernetes
  lists (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
  ``lastIndexOf``) and regex (``matches``, ``find``, ``findAll``, RE2 syntax),
  ``includes`` (list-type attributes);
- ``cel.bind(name, init, expr)`` and optional values (``x.?field``,
  ``m[?key]``, ``optional.of/none/ofNonZeroValue``, ``hasValue``, ``value``,
  ``orValue``, ``or``).  celpy has neither: ``cel.bind`` is evaluated as a
  macro by our evaluator, and the optional syntax is added to celpy's own Lark
  grammar (two extra ``member`` alternatives) when the parser is built.

Compile-time checks (celpy has no type checker): the 10 KiB length limit,
syntax, undeclared functions and variables, unknown ``device`` fields, macro
shapes, invalid regular-expression literals and an obviously non-bool result
type.  Everything else surfaces at evaluation as :class:`CelRuntimeError`,
including a non-bool result; an error is never turned into "no match".
Not implemented: the runtime cost limit (1,000,000 upstream), cel-go's
static overload resolution, the Kubernetes URL/IP/CIDR/authz/format-of-time
libraries and two-variable comprehensions.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections import OrderedDict
from fractions import Fraction
from functools import lru_cache, total_ordering
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import celpy.celparser
import celpy.celtypes as ct
import lark
import re2
from celpy.evaluation import Activation, CELEvalError, Evaluator, NameContainer, celstr

from .api import resource_v1
from .quantity import QuantityError, format_exact_quantity, parse_quantity

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CelError",
    "CelCompileError",
    "CelRuntimeError",
    "Quantity",
    "Semver",
    "DeviceView",
    "DeviceSelector",
    "SelectorCache",
    "compile",
    "compile_cache_info",
]

#: Upstream limit for a selector expression (``CELSelectorExpressionMaxLength``), in bytes of UTF-8.
MAX_EXPRESSION_LENGTH = resource_v1.CEL_SELECTOR_EXPRESSION_MAX_LENGTH

#: Entries kept by the compiled-expression cache (upstream's scheduler keeps only 10).
COMPILE_CACHE_SIZE = 1024

# celpy logs every evaluation problem itself; errors reach callers as CelError instead.
logging.getLogger("celpy").setLevel(logging.CRITICAL)


# --- errors --------------------------------------------------------------------------------


class CelError(Exception):
    """Base class: ``message`` is the upstream-like text, ``expression`` the source."""

    def __init__(self, message: str, expression: str = ""):
        super().__init__(message)
        self.message = message
        self.expression = expression


class CelCompileError(CelError):
    """The expression cannot be compiled: too long, a syntax error, an undeclared
    function or variable, an unknown ``device`` field, an invalid regex literal
    or a result that cannot be bool.  The allocator reports it as
    ``CEL compile error: <message>``; it is fatal for the allocation."""


class CelRuntimeError(CelError):
    """Evaluating the expression for one device failed (``no such key: model``,
    ``no such overload``, a non-bool result, ...).  Upstream treats it as fatal
    for the allocation (``CEL runtime error: <message>``), never as "no match"."""

    #: Advice the allocator appends to ``no such key`` errors (upstream's ``EnhanceRuntimeError``).
    MISSING_KEY_HINT = (
        "consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )

    @property
    def is_missing_key(self) -> bool:
        """True for ``no such key: ...``: the allocator then adds :attr:`MISSING_KEY_HINT`."""
        return self.message.startswith("no such key")


# --- Quantity ------------------------------------------------------------------------------

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
            items = []
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


# --- the device view -----------------------------------------------------------------------


class _DomainMap(ct.MapType):
    """``device.attributes`` / ``device.capacity``: a missing domain reads as an
    empty map, while ``"domain" in device.attributes`` stays false (upstream rule)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return _EMPTY_MAP


_EMPTY_MAP = ct.MapType()


def _attribute_to_cel(value: Any) -> Any:
    if isinstance(value, resource_v1.DeviceAttribute):
        kind = value.kind
        raw = value.value
        if kind in ("version", "versions"):
            if kind == "version":
                return Semver.parse(raw)
            return ct.ListType([Semver.parse(v) for v in raw])
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
                ct.StringType("attributes"): _DomainMap(attrs),
                ct.StringType("capacity"): _DomainMap(caps),
                ct.StringType("allowMultipleAllocations"): ct.BoolType(bool(allow_multiple_allocations)),
            }
        )

    @classmethod
    def from_device(cls, driver: str, device: resource_v1.Device) -> DeviceView:
        """The view of a slice's ``device``; ``driver`` is ``slice.spec.driver``."""
        return cls(driver, device.attributes, device.capacity, bool(device.allow_multiple_allocations))

    def __repr__(self) -> str:
        return f"DeviceView(driver={self.driver!r})"


# --- extension functions -------------------------------------------------------------------
#
# celpy calls a method ``x.f(a)`` as ``functions["f"](x, a)``: one function per name,
# dispatching on the receiver's type.  A TypeError means "no such overload"; a function
# returns a CELEvalError value for an ordinary runtime error.


def _fail(message: str) -> CELEvalError:
    return CELEvalError(message)


def _overload(name: str, *args: Any) -> TypeError:
    kinds = ", ".join(_type_name(a) for a in args)
    return TypeError(f"no such overload: {name}({kinds})")


def _type_name(value: Any) -> str:
    """cel-go style type name of a value."""
    if isinstance(value, ct.BoolType) or value is True or value is False:
        return "bool"
    if isinstance(value, ct.UintType):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if value is None:
        return "null_type"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    if isinstance(value, _Optional):
        return "optional_type"
    if isinstance(value, ct.TimestampType):
        return "google.protobuf.Timestamp"
    if isinstance(value, ct.DurationType):
        return "google.protobuf.Duration"
    if isinstance(value, type):
        return "type"
    return type(value).__name__


def _str(value: Any, name: str, *others: Any) -> str:
    if not isinstance(value, str):
        raise _overload(name, value, *others)
    return value


def _int(value: Any, name: str, *others: Any) -> int:
    if not isinstance(value, int) or isinstance(value, ct.BoolType):
        raise _overload(name, value, *others)
    return int(value)


# quantity library


def _quantity(text: Any) -> Any:
    text = _str(text, "quantity")
    try:
        return Quantity.parse(text)
    except QuantityError:
        return _fail("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def _is_quantity(text: Any) -> ct.BoolType:
    text = _str(text, "isQuantity")
    try:
        Quantity.parse(text)
    except QuantityError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _as_quantity(value: Any, name: str, *others: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise _overload(name, value, *others)
    return value


def _sign(q: Any) -> ct.IntType:
    value = _as_quantity(q, "sign").value
    return ct.IntType((value > 0) - (value < 0))


def _is_integer(q: Any) -> ct.BoolType:
    value = _as_quantity(q, "isInteger").value
    return ct.BoolType(value.denominator == 1 and _INT64_MIN <= value.numerator <= _INT64_MAX)


def _as_integer(q: Any) -> Any:
    value = _as_quantity(q, "asInteger").value
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return _fail("cannot convert value to integer")
    return ct.IntType(value.numerator)


def _as_approximate_float(q: Any) -> ct.DoubleType:
    value = _as_quantity(q, "asApproximateFloat").value
    try:
        return ct.DoubleType(float(value))
    except OverflowError:
        return ct.DoubleType(float("inf") if value > 0 else float("-inf"))


def _quantity_operand(value: Any, name: str, receiver: Any) -> Fraction:
    if isinstance(value, Quantity):
        return value.value
    if isinstance(value, int) and not isinstance(value, (ct.BoolType, ct.UintType)):
        return Fraction(int(value))
    raise _overload(name, receiver, value)


def _add(q: Any, other: Any) -> Quantity:
    return Quantity(_as_quantity(q, "add", other).value + _quantity_operand(other, "add", q))


def _sub(q: Any, other: Any) -> Quantity:
    return Quantity(_as_quantity(q, "sub", other).value - _quantity_operand(other, "sub", q))


def _mul(q: Any, factor: Any) -> Quantity:
    return Quantity(_as_quantity(q, "mul", factor).value * _int(factor, "mul", q))


def _compare(name: str, a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.compare_to(b)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare_to(b)
    raise _overload(name, a, b)


def _compare_to(a: Any, b: Any) -> ct.IntType:
    return ct.IntType(_compare("compareTo", a, b))


def _is_greater_than(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(_compare("isGreaterThan", a, b) > 0)


def _is_less_than(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(_compare("isLessThan", a, b) < 0)


# semver library


def _semver(text: Any, normalize: Any = False) -> Any:
    text = _str(text, "semver")
    if not isinstance(normalize, (bool, ct.BoolType)):
        raise _overload("semver", text, normalize)
    try:
        return Semver.parse(text, bool(normalize))
    except ValueError as err:
        return _fail(str(err))


def _is_semver(text: Any, normalize: Any = False) -> ct.BoolType:
    text = _str(text, "isSemver")
    if not isinstance(normalize, (bool, ct.BoolType)):
        raise _overload("isSemver", text, normalize)
    try:
        Semver.parse(text, bool(normalize))
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _semver_part(part: str) -> Callable[[Any], ct.IntType]:
    def get(version: Any) -> ct.IntType:
        if not isinstance(version, Semver):
            raise _overload(part, version)
        return ct.IntType(getattr(version, part))

    get.__name__ = part
    return get


# strings extension (cel-go ext.Strings); indices count code points


def _index_error(index: int) -> CELEvalError:
    return _fail(f"index out of range: {index}")


def _char_at(s: Any, index: Any) -> Any:
    s = _str(s, "charAt", index)
    index = _int(index, "charAt", s)
    if index < 0 or index > len(s):
        return _index_error(index)
    return ct.StringType(s[index : index + 1])


def _index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise _overload("indexOf", target, item, offset)
        for index, element in enumerate(target):
            if _cel_equal(element, item):
                return ct.IntType(index)
        return ct.IntType(-1)
    target = _str(target, "indexOf", item)
    item = _str(item, "indexOf", target)
    start = 0 if offset is None else _int(offset, "indexOf", target, item)
    if start < 0 or start > len(target):
        return _index_error(start)
    return ct.IntType(target.find(item, start))


def _last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        if offset is not None:
            raise _overload("lastIndexOf", target, item, offset)
        for index in range(len(target) - 1, -1, -1):
            if _cel_equal(target[index], item):
                return ct.IntType(index)
        return ct.IntType(-1)
    target = _str(target, "lastIndexOf", item)
    item = _str(item, "lastIndexOf", target)
    if offset is None:
        return ct.IntType(target.rfind(item))
    end = _int(offset, "lastIndexOf", target, item)
    if end < 0 or end > len(target):
        return _index_error(end)
    return ct.IntType(target.rfind(item, 0, end + len(item)))


_UPPER_TO_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_LOWER_TO_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def _lower_ascii(s: Any) -> ct.StringType:
    return ct.StringType(_str(s, "lowerAscii").translate(_UPPER_TO_LOWER))


def _upper_ascii(s: Any) -> ct.StringType:
    return ct.StringType(_str(s, "upperAscii").translate(_LOWER_TO_UPPER))


def _replace(s: Any, old: Any, new: Any, count: Any = -1) -> ct.StringType:
    s, old, new = _str(s, "replace"), _str(old, "replace"), _str(new, "replace")
    count = _int(count, "replace")
    return ct.StringType(s.replace(old, new, count if count >= 0 else -1))


def _split(s: Any, sep: Any, limit: Any = -1) -> ct.ListType:
    s, sep = _str(s, "split", sep), _str(sep, "split", s)
    limit = _int(limit, "split", s, sep)
    if limit == 0:
        return ct.ListType()
    if sep == "":
        parts = list(s)
        if limit > 0 and len(parts) > limit:
            parts = parts[: limit - 1] + ["".join(parts[limit - 1 :])]
    else:
        parts = s.split(sep, limit - 1) if limit > 0 else s.split(sep)
    return ct.ListType([ct.StringType(p) for p in parts])


def _substring(s: Any, start: Any, end: Any = None) -> Any:
    s = _str(s, "substring")
    start = _int(start, "substring", s)
    stop = len(s) if end is None else _int(end, "substring", s, start)
    if start < 0 or start > len(s):
        return _index_error(start)
    if stop < 0 or stop > len(s):
        return _index_error(stop)
    if start > stop:
        return _fail(f"invalid substring range. start: {start}, end: {stop}")
    return ct.StringType(s[start:stop])


def _trim(s: Any) -> ct.StringType:
    return ct.StringType(_str(s, "trim").strip())


def _reverse(s: Any) -> ct.StringType:
    return ct.StringType(_str(s, "reverse")[::-1])


def _join(items: Any, sep: Any = "") -> Any:
    if not isinstance(items, list):
        raise _overload("join", items, sep)
    sep = _str(sep, "join", items)
    for item in items:
        if not isinstance(item, str):
            return _fail(f"join: list element of type {_type_name(item)} is not a string")
    return ct.StringType(sep.join(items))


def _quote(s: Any) -> ct.StringType:
    s = _str(s, "strings.quote")
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    return ct.StringType('"' + "".join(escapes.get(c, c) for c in s) + '"')


def _format_value(value: Any) -> str:
    if isinstance(value, ct.BoolType) or isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return _format_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_format_value(k)}: {_format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _format_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?([sdfeboxX%])")


def _format(template: Any, args: Any) -> Any:
    template = _str(template, "format", args)
    if not isinstance(args, list):
        raise _overload("format", template, args)
    out: list[str] = []
    position = 0
    next_arg = 0
    for match in _FORMAT_VERB.finditer(template):
        out.append(template[position : match.start()])
        position = match.end()
        precision, verb = match.group(1), match.group(2)
        if verb == "%":
            out.append("%")
            continue
        if next_arg >= len(args):
            return _fail(f"index {next_arg} out of range")
        arg = args[next_arg]
        next_arg += 1
        is_int = isinstance(arg, int) and not isinstance(arg, ct.BoolType)
        if verb == "s":
            out.append(_format_value(arg))
        elif verb == "d":
            if not is_int:
                return _fail(f"error during formatting: decimal clause can only be used on integers, was given {_type_name(arg)}")
            out.append(str(int(arg)))
        elif verb in "fe":
            if not isinstance(arg, (int, float)) or isinstance(arg, ct.BoolType):
                return _fail(f"error during formatting: fixed-point clause can only be used on doubles, was given {_type_name(arg)}")
            digits = 6 if precision is None else int(precision)
            out.append(f"{float(arg):.{digits}{verb}}")
        elif verb in "boxX":
            if is_int:
                out.append(format(int(arg), {"b": "b", "o": "o", "x": "x", "X": "X"}[verb]))
            elif verb in "xX" and isinstance(arg, (str, bytes)):
                data = arg.encode() if isinstance(arg, str) else bytes(arg)
                text = data.hex()
                out.append(text.upper() if verb == "X" else text)
            else:
                return _fail(f"error during formatting: only integers can be formatted with %{verb}, was given {_type_name(arg)}")
    out.append(template[position:])
    return ct.StringType("".join(out))


# lists (Kubernetes library), sets, includes


def _cel_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except TypeError:
        return False


def _is_sorted(items: Any) -> Any:
    if not isinstance(items, list):
        raise _overload("isSorted", items)
    try:
        return ct.BoolType(all(not (items[i + 1] < items[i]) for i in range(len(items) - 1)))
    except TypeError:
        raise _overload("isSorted", items) from None


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise _overload("sum", items)
    if not items:
        return ct.IntType(0)
    total = items[0]
    for item in items[1:]:
        total = total + item
    return total


def _max(items: Any) -> Any:
    if not isinstance(items, list):
        raise _overload("max", items)
    if not items:
        return _fail("max called on empty list")
    best = items[0]
    for item in items[1:]:
        if best < item:
            best = item
    return best


def _list_arg(value: Any, name: str) -> list:
    if not isinstance(value, list):
        raise _overload(name, value)
    return value


def _sets_contains(a: Any, b: Any) -> ct.BoolType:
    a, b = _list_arg(a, "sets.contains"), _list_arg(b, "sets.contains")
    return ct.BoolType(all(any(_cel_equal(x, y) for x in a) for y in b))


def _sets_intersects(a: Any, b: Any) -> ct.BoolType:
    a, b = _list_arg(a, "sets.intersects"), _list_arg(b, "sets.intersects")
    return ct.BoolType(any(any(_cel_equal(x, y) for x in a) for y in b))


def _sets_equivalent(a: Any, b: Any) -> ct.BoolType:
    return ct.BoolType(bool(_sets_contains(a, b)) and bool(_sets_contains(b, a)))


#: Upstream bound on the elements ``includes`` looks at in a list attribute.
_INCLUDES_MAX_VALUES = 48


def _includes(target: Any, item: Any) -> ct.BoolType:
    if isinstance(target, list):
        return ct.BoolType(any(_cel_equal(x, item) for x in target[:_INCLUDES_MAX_VALUES]))
    return ct.BoolType(_cel_equal(target, item))


# regex (RE2 syntax, as cel-go)

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=512)
def _regex(pattern: str) -> Any:
    """Compiled RE2 pattern; raises ValueError with RE2's reason."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as err:
        reason = err.args[0] if err.args else err
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(f"error parsing regexp: {reason}") from None


def _matches(s: Any, pattern: Any) -> Any:
    s, pattern = _str(s, "matches", pattern), _str(pattern, "matches", s)
    try:
        return ct.BoolType(_regex(pattern).search(s) is not None)
    except ValueError as err:
        return _fail(str(err))


def _find(s: Any, pattern: Any) -> Any:
    s, pattern = _str(s, "find", pattern), _str(pattern, "find", s)
    try:
        match = _regex(pattern).search(s)
    except ValueError as err:
        return _fail(str(err))
    return ct.StringType(match.group(0) if match else "")


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> Any:
    s, pattern = _str(s, "findAll", pattern), _str(pattern, "findAll", s)
    limit = _int(limit, "findAll", s, pattern)
    if limit == 0:
        return ct.ListType()
    try:
        found = [m.group(0) for m in _regex(pattern).finditer(s)]
    except ValueError as err:
        return _fail(str(err))
    if limit > 0:
        found = found[:limit]
    return ct.ListType([ct.StringType(f) for f in found])


# optional values


def _optional_of(value: Any) -> _Optional:
    return _Optional(value)


def _optional_none() -> _Optional:
    return _OPTIONAL_NONE


def _is_zero(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (ct.BoolType, bool)):
        return not value
    if isinstance(value, (int, float, str, bytes, list, dict)):
        return not value
    return False


def _optional_of_non_zero(value: Any) -> _Optional:
    return _OPTIONAL_NONE if _is_zero(value) else _Optional(value)


def _as_optional(value: Any, name: str, *others: Any) -> _Optional:
    if not isinstance(value, _Optional):
        raise _overload(name, value, *others)
    return value


def _has_value(opt: Any) -> ct.BoolType:
    return ct.BoolType(_as_optional(opt, "hasValue").present)


def _value(opt: Any) -> Any:
    opt = _as_optional(opt, "value")
    if not opt.present:
        return _fail("optional.none() dereference")
    return opt.value


def _or_value(opt: Any, default: Any) -> Any:
    opt = _as_optional(opt, "orValue", default)
    return opt.value if opt.present else default


def _or(opt: Any, other: Any) -> Any:
    opt = _as_optional(opt, "or", other)
    _as_optional(other, "or", opt)
    return opt if opt.present else other


#: Methods and functions added to celpy's base library (callable by bare name).
_FUNCTIONS: dict[str, Callable] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_approximate_float,
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "reverse": _reverse,
    "join": _join,
    "format": _format,
    "isSorted": _is_sorted,
    "sum": _sum,
    "max": _max,
    "includes": _includes,
    "matches": _matches,
    "find": _find,
    "findAll": _find_all,
    "hasValue": _has_value,
    "value": _value,
    "orValue": _or_value,
    "or": _or,
}

#: ``namespace.function(...)`` calls (the namespace is not a variable).
_NAMESPACED: dict[str, Callable] = {
    "sets.contains": _sets_contains,
    "sets.intersects": _sets_intersects,
    "sets.equivalent": _sets_equivalent,
    "strings.quote": _quote,
    "optional.of": _optional_of,
    "optional.none": _optional_none,
    "optional.ofNonZeroValue": _optional_of_non_zero,
}
_NAMESPACES = frozenset(name.split(".")[0] for name in _NAMESPACED) | {"cel"}

#: Comprehension macros celpy evaluates itself (``min`` is celpy's list minimum).
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})

#: Global functions (``f(x)``) of the environment.
_GLOBAL_FUNCTIONS = frozenset(
    {"has", "dyn", "size", "type", "int", "uint", "double", "string", "bool", "bytes", "duration", "timestamp",
     "matches", "quantity", "isQuantity", "semver", "isSemver", "sign"}
)
#: Receiver-style functions (``x.f(...)``).
_MEMBER_FUNCTIONS = (
    frozenset(_FUNCTIONS) - {"quantity", "isQuantity", "semver", "isSemver"}
) | {"size", "contains", "startsWith", "endsWith", "matches", "min", "getDate", "getDayOfMonth", "getDayOfWeek",
     "getDayOfYear", "getFullYear", "getMonth", "getHours", "getMilliseconds", "getMinutes", "getSeconds"} | _MACROS

#: Fields of the ``device`` variable.
DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
_DEVICE_VAR = "device"


# --- parser --------------------------------------------------------------------------------

_parser_lock = threading.Lock()
_parser: lark.Lark | None = None
_optional_syntax = False


def _grammar() -> tuple[str, bool]:
    """celpy's grammar plus two ``member`` alternatives for ``.?`` and ``[?``.
    If celpy's grammar no longer has the expected rule, the optional syntax is
    left out (and reported as a compile error by the checker)."""
    text = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text()
    rule = re.compile(r"^(member\s*:\s*member_dot\s*\|\s*member_dot_arg\s*\|)", re.M)
    if not rule.search(text) or "member_dot_opt" in text:
        return text, False
    text = rule.sub(r"\1 member_dot_opt | member_index_opt |", text, count=1)
    text += '\nmember_dot_opt : member ".?" IDENT\nmember_index_opt : member "[" "?" expr "]"\n'
    return text, True


def _get_parser() -> lark.Lark:
    """Build the Lark LALR parser once per process (~0.3 s)."""
    global _parser, _optional_syntax
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                text, optional = _grammar()
                try:
                    parser = _build_parser(text)
                except lark.exceptions.GrammarError:
                    text, optional = (Path(celpy.celparser.__file__).parent / "cel.lark").read_text(), False
                    parser = _build_parser(text)
                if sys.getrecursionlimit() < 2500:  # the interpreter recurses per tree level (celpy does the same)
                    sys.setrecursionlimit(2500)
                _optional_syntax = optional
                _parser = parser
    return _parser


def _build_parser(text: str) -> lark.Lark:
    return lark.Lark(
        text,
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": celpy.celparser.CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def _parse(expression: str) -> lark.Tree:
    parser = _get_parser()
    try:
        return parser.parse(expression)
    except lark.exceptions.UnexpectedInput as err:
        line, column = getattr(err, "line", "?"), getattr(err, "column", "?")
        if isinstance(err, lark.exceptions.UnexpectedCharacters):
            what = f"token recognition error at: {expression[err.pos_in_stream:err.pos_in_stream + 1]!r}"
        elif isinstance(err, lark.exceptions.UnexpectedToken):
            what = "unexpected end of input" if err.token.type == "$END" else f"Syntax error: mismatched input {str(err.token)!r}"
        else:
            what = "Syntax error"
        try:
            context = err.get_context(expression).rstrip("\n")
        except Exception:  # some lark errors carry no position
            context = ""
        raise CelCompileError(f"ERROR: <input>:{line}:{column}: {what}\n{context}", expression) from None
    except lark.exceptions.LarkError as err:
        raise CelCompileError(f"ERROR: <input>: Syntax error: {str(err).splitlines()[0]}", expression) from None


# --- compile-time checks -------------------------------------------------------------------


def _bare_ident(tree: Any) -> str | None:
    """The identifier if ``tree`` is just ``name`` (through member/primary wrappers)."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        if tree.data not in ("member", "primary", "expr", "conditionalor", "conditionaland", "relation",
                             "addition", "multiplication", "unary") or len(tree.children) != 1:
            return None
        tree = tree.children[0]
    return None


def _args(tree: lark.Tree, index: int) -> list:
    if len(tree.children) > index and isinstance(tree.children[index], lark.Tree) and tree.children[index].data == "exprlist":
        return list(tree.children[index].children)
    return []


def _position(tree: Any) -> str:
    meta = getattr(tree, "meta", None)
    line = getattr(meta, "line", None) if meta is not None and not getattr(meta, "empty", True) else None
    column = getattr(meta, "column", None) if line is not None else None
    return f"<input>:{line}:{column}" if line is not None else "<input>"


_LITERAL_TYPES = {"INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
                  "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null_type"}
_RETURN_TYPES = {
    **dict.fromkeys(("all", "exists", "exists_one", "startsWith", "endsWith", "matches", "contains", "isGreaterThan",
                     "isLessThan", "isInteger", "hasValue", "includes", "isSorted", "has", "isQuantity", "isSemver",
                     "bool"), "bool"),
    **dict.fromkeys(("compareTo", "size", "indexOf", "lastIndexOf", "major", "minor", "patch", "sign", "asInteger",
                     "int"), "int"),
    **dict.fromkeys(("lowerAscii", "upperAscii", "replace", "substring", "trim", "charAt", "join", "format", "find",
                     "reverse", "string"), "string"),
    **dict.fromkeys(("map", "filter", "split", "findAll"), "list"),
    "asApproximateFloat": "double", "double": "double", "uint": "uint", "bytes": "bytes",
    **dict.fromkeys(("quantity", "add", "sub", "mul"), "kubernetes.Quantity"),
    "semver": "kubernetes.Semver",
    "sets.contains": "bool", "sets.intersects": "bool", "sets.equivalent": "bool", "strings.quote": "string",
    "optional.of": "optional_type", "optional.none": "optional_type", "optional.ofNonZeroValue": "optional_type",
}
#: Type identifiers usable as values (``type(x) == int``).
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
_DEVICE_FIELD_TYPES = {"driver": "string", "attributes": "map", "capacity": "map", "allowMultipleAllocations": "bool"}


class _Checker:
    """Walks the parse tree once: declared names, macro shapes, regex literals,
    and a conservative result type ("dyn" whenever unsure)."""

    def __init__(self, expression: str):
        self.expression = expression
        self.uses_optional = False

    def error(self, tree: Any, message: str) -> CelCompileError:
        return CelCompileError(f"ERROR: {_position(tree)}: {message}", self.expression)

    def check(self, tree: lark.Tree) -> str:
        return self.visit(tree, frozenset())

    def visit(self, tree: Any, scope: frozenset) -> str:
        if not isinstance(tree, lark.Tree):
            return "dyn"
        method = getattr(self, "t_" + str(tree.data), None)
        if method is not None:
            return method(tree, scope)
        types = [self.visit(child, scope) for child in tree.children if isinstance(child, lark.Tree)]
        return types[0] if len(types) == 1 and len(tree.children) == 1 else "dyn"

    # operators
    def t_expr(self, tree, scope):
        types = [self.visit(child, scope) for child in tree.children]
        if len(types) == 3:
            if types[0] not in ("bool", "dyn"):
                raise self.error(tree, f"found no matching overload for '_?_:_' applied to '({types[0]}, ...)'")
            return types[1] if types[1] == types[2] else "dyn"
        return types[0]

    def _boolean(self, tree, scope):
        types = [self.visit(child, scope) for child in tree.children]
        return "bool" if len(types) > 1 else types[0]

    t_conditionalor = t_conditionaland = t_relation = _boolean

    def _arithmetic(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        left_op, right = tree.children
        left = self.visit(left_op.children[0], scope) if left_op.children else "dyn"
        right_type = self.visit(right, scope)
        if left == right_type and left in ("int", "uint", "double", "string", "bytes", "list"):
            if left in ("string", "bytes", "list") and left_op.data not in ("addition_add",):
                return "dyn"
            return left
        return "dyn"

    t_addition = t_multiplication = _arithmetic

    def t_unary(self, tree, scope):
        if len(tree.children) == 1:
            return self.visit(tree.children[0], scope)
        op, operand = tree.children
        inner = self.visit(operand, scope)
        if op.data == "unary_not":
            return "bool"
        return inner if inner in ("int", "double") else "dyn"

    # members
    def t_member_dot(self, tree, scope):
        member, name = tree.children
        if _bare_ident(member) == _DEVICE_VAR and _DEVICE_VAR not in scope:
            if str(name) not in DEVICE_FIELDS:
                raise self.error(tree, f"undefined field '{name}'")
            return _DEVICE_FIELD_TYPES[str(name)]
        self.visit(member, scope)
        return "dyn"

    def t_member_dot_opt(self, tree, scope):
        self.uses_optional = True
        self.visit(tree.children[0], scope)
        return "optional_type"

    def t_member_index(self, tree, scope):
        for child in tree.children:
            self.visit(child, scope)
        return "dyn"

    def t_member_index_opt(self, tree, scope):
        self.uses_optional = True
        for child in tree.children:
            self.visit(child, scope)
        return "optional_type"

    def t_member_object(self, tree, scope):
        raise self.error(tree, "message construction is not supported in device selectors")

    def t_member_dot_arg(self, tree, scope):
        member, name = tree.children[0], str(tree.children[1])
        args = _args(tree, 2)
        namespace = _bare_ident(member)
        if namespace in _NAMESPACES and namespace not in scope:
            qualified = f"{namespace}.{name}"
            if qualified == "cel.bind":
                if len(args) != 3 or _bare_ident(args[0]) is None:
                    raise self.error(tree, "cel.bind() requires a variable name, an initializer and an expression")
                self.visit(args[1], scope)
                return self.visit(args[2], scope | {_bare_ident(args[0])})
            if qualified not in _NAMESPACED:
                raise self.error(tree, f"undeclared reference to '{qualified}'")
            for arg in args:
                self.visit(arg, scope)
            return _RETURN_TYPES.get(qualified, "dyn")
        if name in _MACROS:
            arity = (2, 3) if name == "map" else (2,)
            if len(args) not in arity or _bare_ident(args[0]) is None:
                if len(args) == 3 and name in ("all", "exists", "exists_one"):
                    raise self.error(tree, f"two-variable comprehension {name}() is not supported")
                raise self.error(tree, f"{name}() requires a variable name and an expression")
            if len(args) == 3:
                raise self.error(tree, "three-argument map() is not supported; use filter() then map()")
            self.visit(member, scope)
            return self.visit_macro(name, args, scope)
        if name not in _MEMBER_FUNCTIONS:
            if name in _GLOBAL_FUNCTIONS:
                raise self.error(tree, f"found no matching overload for '{name}' applied as a method")
            raise self.error(tree, f"undeclared reference to '{name}'")
        self.visit(member, scope)
        for arg in args:
            self.visit(arg, scope)
        if name in ("matches", "find", "findAll") and args:
            self.check_regex(args[0])
        return _RETURN_TYPES.get(name, "dyn")

    def visit_macro(self, name, args, scope):
        self.visit(args[1], scope | {_bare_ident(args[0])})
        if name in ("all", "exists", "exists_one"):
            return "bool"
        return "list"

    def check_regex(self, tree):
        literal = self.string_literal(tree)
        if literal is None:
            return
        try:
            _regex(literal)
        except ValueError as err:
            raise self.error(tree, f"invalid regular expression {literal!r}: {err}") from None

    @staticmethod
    def string_literal(tree) -> str | None:
        while isinstance(tree, lark.Tree) and len(tree.children) == 1:
            if tree.data == "literal":
                token = tree.children[0]
                if token.type in ("STRING_LIT", "MLSTRING_LIT"):
                    return str(celstr(token))
                return None
            tree = tree.children[0]
        return None

    def t_primary(self, tree, scope):
        child = tree.children[0]
        kind = child.data
        if kind == "literal":
            return _LITERAL_TYPES.get(child.children[0].type, "dyn")
        if kind == "list_lit":
            for c in child.children:
                self.visit(c, scope)
            return "list"
        if kind == "map_lit":
            for c in child.children:
                self.visit(c, scope)
            return "map"
        if kind == "paren_expr":
            return self.visit(child.children[0], scope)
        if kind in ("dot_ident", "dot_ident_arg"):
            raise self.error(tree, f"undeclared reference to '.{child.children[0]}'")
        if kind == "ident":
            name = str(child.children[0])
            if name in scope:
                return "dyn"
            if name == _DEVICE_VAR:
                return "kubernetes.DRADevice"
            if name in _TYPE_NAMES:
                return "type"
            raise self.error(tree, f"undeclared reference to '{name}'")
        if kind == "ident_arg":
            name = str(child.children[0])
            args = _args(child, 1)
            if name == "has":
                if len(args) != 1 or not self.is_field_selection(args[0]):
                    raise self.error(tree, "invalid argument to has() macro")
            elif name not in _GLOBAL_FUNCTIONS:
                if name in _MEMBER_FUNCTIONS:
                    raise self.error(tree, f"found no matching overload for '{name}' applied as a global function")
                raise self.error(tree, f"undeclared reference to '{name}'")
            for arg in args:
                self.visit(arg, scope)
            if name == "matches" and len(args) == 2:
                self.check_regex(args[1])
            if name == "dyn":
                return "dyn"
            return _RETURN_TYPES.get(name, "dyn")
        return "dyn"

    @staticmethod
    def is_field_selection(tree) -> bool:
        while isinstance(tree, lark.Tree):
            if tree.data in ("member_dot", "member_dot_opt"):
                return True
            if len(tree.children) != 1:
                return False
            tree = tree.children[0]
        return False


# --- evaluation ----------------------------------------------------------------------------


def _error_text(err: CELEvalError) -> str:
    message = str(err.args[0]) if err.args else "evaluation error"
    if message.startswith("undeclared reference to"):
        message = message.split(" (in activation", 1)[0]
    elif message == "no such overload":
        cause = err.__cause__
        detail = str(cause.args[0]) if cause is not None and cause.args else ""
        if detail.startswith("no such overload"):
            message = detail
        elif err.token is not None:
            message = f"no such overload: {err.token}"
    return message


class _Evaluator(Evaluator):
    """celpy's interpreter plus the DRA rules: ``no such key: <name>`` errors,
    ``cel.bind``, namespaced functions and optional values."""

    def sub_evaluator(self, ast: lark.Tree) -> _Evaluator:
        return _Evaluator(ast, activation=self.activation)

    def _logical(self, tree: lark.Tree, absorbing: bool, operator: str) -> Any:
        """cel-go's commutative ``||``/``&&``: the absorbing value (true for ``||``)
        wins over an error on either side, otherwise the left error is reported;
        the right side is not evaluated when the left one decides."""
        if len(tree.children) == 1:
            return self.visit(tree.children[0])
        left = self.visit(tree.children[0])
        if isinstance(left, ct.BoolType) and bool(left) == absorbing:
            return left
        right = self.visit(tree.children[1])
        if isinstance(right, ct.BoolType):
            if bool(right) == absorbing or isinstance(left, ct.BoolType):
                return right
            if isinstance(left, CELEvalError):
                return left
        elif isinstance(left, CELEvalError):
            return left
        elif isinstance(right, CELEvalError) and isinstance(left, ct.BoolType):
            return right
        return CELEvalError(f"no such overload: {_type_name(left)} {operator} {_type_name(right)}", tree=tree)

    def conditionalor(self, tree: lark.Tree) -> Any:
        return self._logical(tree, True, "||")

    def conditionaland(self, tree: lark.Tree) -> Any:
        return self._logical(tree, False, "&&")

    def _select(self, member: Any, name: str, tree: lark.Tree) -> Any:
        if isinstance(member, ct.MapType):
            found, value = _lookup_key(member, name)
            return value if found else CELEvalError(f"no such key: {name}", tree=tree)
        return None

    def member_dot(self, tree: lark.Tree) -> Any:
        member_tree, name_token = tree.children
        member = self.visit(member_tree)
        if isinstance(member, CELEvalError):
            return member
        name = str(name_token)
        if isinstance(member, _Optional):
            if not member.present:
                return member
            inner = self._select(member.value, name, tree)
            if inner is None:
                return CELEvalError(f"no such overload: field selection on {_type_name(member.value)}", tree=tree)
            return inner if isinstance(inner, CELEvalError) else _Optional(inner)
        if isinstance(member, ct.MapType) and not isinstance(member, (ct.MessageType, ct.PackageType)):
            return self._select(member, name, tree)
        if isinstance(member, (NameContainer, ct.MessageType, ct.PackageType)):
            return super().member_dot(tree)
        return CELEvalError(f"no such overload: field selection on {_type_name(member)}", tree=tree)

    def member_dot_opt(self, tree: lark.Tree) -> Any:
        member_tree, name_token = tree.children
        member = self.visit(member_tree)
        if isinstance(member, CELEvalError):
            return member
        if isinstance(member, _Optional):
            if not member.present:
                return member
            member = member.value
        if not isinstance(member, ct.MapType):
            return CELEvalError(f"no such overload: optional field selection on {_type_name(member)}", tree=tree)
        found, value = _lookup_key(member, str(name_token))
        return _Optional(value) if found else _OPTIONAL_NONE

    def _index(self, member: Any, index: Any, tree: lark.Tree, optional: bool) -> Any:
        if isinstance(member, CELEvalError):
            return member
        if isinstance(index, CELEvalError):
            return index
        wrap = optional
        if isinstance(member, _Optional):
            if not member.present:
                return member
            member, wrap = member.value, True
        if isinstance(member, ct.MapType):
            if not ct.MapType.valid_key_type(index):
                return CELEvalError(f"no such overload: map index with {_type_name(index)}", tree=tree)
            found, value = _lookup_key(member, index)
            if not found:
                if optional:
                    return _OPTIONAL_NONE
                return CELEvalError(f"no such key: {index}", tree=tree)
        elif isinstance(member, list):
            if not isinstance(index, int) or isinstance(index, ct.BoolType):
                return CELEvalError(f"no such overload: list index with {_type_name(index)}", tree=tree)
            if not 0 <= index < len(member):
                if optional:
                    return _OPTIONAL_NONE
                return CELEvalError(f"index out of range: {index}", tree=tree)
            value = member[index]
        else:
            return CELEvalError(f"no such overload: index of {_type_name(member)}", tree=tree)
        return _Optional(value) if wrap else value

    def member_index(self, tree: lark.Tree) -> Any:
        member, index = self.visit_children(tree)
        return self._index(member, index, tree, optional=False)

    def member_index_opt(self, tree: lark.Tree) -> Any:
        member, index = self.visit_children(tree)
        return self._index(member, index, tree, optional=True)

    def _is_variable(self, name: str) -> bool:
        try:
            self.activation.identifiers.resolve_name(self.activation.package, name)
        except KeyError:
            return False
        return True

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        namespace = _bare_ident(tree.children[0])
        if namespace in _NAMESPACES and not self._is_variable(namespace):
            name = f"{namespace}.{tree.children[1]}"
            args = _args(tree, 2)
            if name == "cel.bind":
                variable = _bare_ident(args[0])
                init = self.visit(args[1])
                nested = self.sub_evaluator(args[2])
                try:
                    return nested.evaluate({variable: init})
                except CELEvalError as err:
                    return err
            function = _NAMESPACED.get(name)
            if function is None:
                return CELEvalError(f"undeclared reference to '{name}'", tree=tree)
            values = [self.visit(arg) for arg in args]
            for value in values:
                if isinstance(value, CELEvalError):
                    return value
            try:
                return function(*values)
            except (TypeError, AttributeError) as err:
                return CELEvalError(str(err) if str(err).startswith("no such overload") else f"no such overload: {name}", tree=tree)
        return super().member_dot_arg(tree)


def _lookup_key(mapping: ct.MapType, key: Any) -> tuple[bool, Any]:
    """``(found, value)``; a :class:`_DomainMap` finds every domain (missing ones are empty)."""
    if isinstance(mapping, _DomainMap):
        return True, mapping[key]
    if dict.__contains__(mapping, key):
        return True, dict.__getitem__(mapping, key)
    return False, None


# --- compiled selectors --------------------------------------------------------------------


class DeviceSelector:
    """A compiled selector expression (use :func:`compile`, which caches).

    :meth:`matches` evaluates it for one :class:`DeviceView`; it is safe to call
    from several threads (each call gets its own interpreter state).
    ``evaluations`` counts calls, for tests and metrics.
    """

    __slots__ = ("expression", "_ast", "_activation", "evaluations")

    def __init__(self, expression: str, ast: lark.Tree):
        self.expression = expression
        self._ast = ast
        self._activation = Activation(annotations={}, functions=_FUNCTIONS)
        self.evaluations = 0

    def matches(self, device: DeviceView) -> bool:
        """True when the device satisfies the expression.

        Raises :class:`CelRuntimeError` for an evaluation error (``no such key:
        model``, ``no such overload: ...``) and for a result that is not a bool
        (``CEL result of type string could not be converted to bool``).
        """
        self.evaluations += 1
        evaluator = _Evaluator(self._ast, self._activation)
        try:
            result = evaluator.evaluate({_DEVICE_VAR: device.cel_value})
        except CELEvalError as err:
            raise CelRuntimeError(_error_text(err), self.expression) from None
        except RecursionError:
            raise CelRuntimeError("expression nested too deeply", self.expression) from None
        except (ArithmeticError, TypeError, ValueError, KeyError, IndexError, AttributeError) as err:
            raise CelRuntimeError(f"{type(err).__name__}: {err}", self.expression) from None
        if isinstance(result, ct.BoolType) or result is True or result is False:
            return bool(result)
        raise CelRuntimeError(f"CEL result of type {_type_name(result)} could not be converted to bool", self.expression)

    def __repr__(self) -> str:
        return f"DeviceSelector({self.expression!r})"


_compile_lock = threading.Lock()
_compiled: OrderedDict[str, DeviceSelector | CelCompileError] = OrderedDict()
_compile_stats = {"hits": 0, "misses": 0}


def compile(expression: str) -> DeviceSelector:  # noqa: A001 - mirrors cel.Env.Compile
    """Compile a DRA selector expression (cached by its text, LRU of
    :data:`COMPILE_CACHE_SIZE`; compile errors are cached too).

    Raises :class:`CelCompileError` for an expression longer than 10 KiB, a
    syntax error, an undeclared function or variable (``undeclared reference
    to 'foo'``), an unknown ``device`` field, an invalid regex literal, a
    malformed macro, or a result type that can never be bool (``must evaluate
    to bool or the unknown type, not int``).
    """
    if not isinstance(expression, str):
        raise TypeError(f"expression must be a string, got {type(expression).__name__}")
    with _compile_lock:
        found = _compiled.get(expression)
        if found is not None:
            _compiled.move_to_end(expression)
            _compile_stats["hits"] += 1
    if found is None:
        _compile_stats["misses"] += 1
        try:
            found = _compile_uncached(expression)
        except CelCompileError as err:
            found = err
        with _compile_lock:
            _compiled[expression] = found
            while len(_compiled) > COMPILE_CACHE_SIZE:
                _compiled.popitem(last=False)
    if isinstance(found, CelCompileError):
        raise CelCompileError(found.message, expression)
    return found


def compile_cache_info() -> dict[str, int]:
    """``{"hits", "misses", "size"}`` of the compiled-expression cache."""
    with _compile_lock:
        return {**_compile_stats, "size": len(_compiled)}


def _compile_uncached(expression: str) -> DeviceSelector:
    size = len(expression.encode("utf-8"))
    if size > MAX_EXPRESSION_LENGTH:
        raise CelCompileError(
            f"expression too long: {size} bytes, must be at most {MAX_EXPRESSION_LENGTH} (10 KiB)", expression
        )
    if not expression.strip():
        raise CelCompileError("ERROR: <input>:1:1: Syntax error: empty expression", expression)
    ast = _parse(expression)
    checker = _Checker(expression)
    try:
        result_type = checker.check(ast)
    except RecursionError:
        raise CelCompileError("expression nested too deeply", expression) from None
    if checker.uses_optional and not _optional_syntax:
        raise CelCompileError("optional syntax (.? and [?]) is not supported by this CEL engine", expression)
    if result_type not in ("bool", "dyn"):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {result_type}", expression)
    return DeviceSelector(expression, ast)


# --- memo ----------------------------------------------------------------------------------


class _SliceMemo:
    __slots__ = ("version", "views", "results", "contents")

    def __init__(self, version: tuple):
        self.version = version
        self.views: dict[str, DeviceView | CelRuntimeError] = {}
        self.results: dict[tuple[str, str], bool | CelRuntimeError] = {}
        self.contents: dict[str, tuple] = {}


def _content_key(driver: str, device: resource_v1.Device) -> tuple:
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
        selector: DeviceSelector | str,
        resource_slice: resource_v1.ResourceSlice,
        device: resource_v1.Device,
    ) -> bool:
        """Memoised ``selector.matches(view of device)``.  ``selector`` may be an
        expression (compiled through :func:`compile`).  Raises
        :class:`CelCompileError` (not memoised here; :func:`compile` caches it)
        and :class:`CelRuntimeError` (memoised)."""
        if isinstance(selector, str):
            selector = compile(selector)
        memo = self._memo(resource_slice)
        key = (selector.expression, device.name)
        result = memo.results.get(key)
        if result is None:
            content = memo.contents.get(device.name)
            if content is None:
                content = memo.contents[device.name] = _content_key(resource_slice.spec.driver, device)
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
        selectors: Iterable[DeviceSelector | str],
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
