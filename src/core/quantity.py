"""Kubernetes resource quantities ("500m", "1Gi", "1e3", "0.5"), parsed exactly.

Mirrors k8s.io/apimachinery/pkg/api/resource: a quantity is
``<signedNumber><suffix>`` where the suffix is a binary SI suffix (Ki, Mi, Gi,
Ti, Pi, Ei), a decimal SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal
exponent (e3, E-2).  Values are kept as exact fractions; the scheduler uses
integers: CPU in milli-CPU, everything else (memory, storage, pods, extended
resources) in base units (bytes, counts), both rounded up as upstream's
``MilliValue()`` and ``Value()`` do.
"""

from __future__ import annotations

import functools
import json
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

#: a non-negative whole number with a suffix that keeps it whole in scheduler units (to_scheduler_units' fast path)
_WHOLE = re.compile(r"^(?P<num>[0-9]+)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE])?$")
_WHOLE_DECIMAL = {suffix: int(factor) for suffix, factor in _DECIMAL.items() if factor.denominator == 1}

_UPSTREAM_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

#: Resource names whose scheduler unit is milli (1/1000); all others use base units.
MILLI_RESOURCES = frozenset({"cpu"})
#: Upstream's integer resources besides extended ones (helper.IsIntegerResourceName): whole numbers only.
INTEGER_RESOURCES = frozenset({"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
                               "configmaps", "persistentvolumeclaims", "services.nodeports",
                               "services.loadbalancers"})
#: A quantity's magnitude in scheduler units saturates here, as upstream's int64 accessors (Value, MilliValue) do.
INT64_MAX = 2**63 - 1
#: Decimal exponents beyond these are not worked out: the value saturates (above) or rounds up to one nano
#: (below), as upstream's quantities do, without computing 10**exponent.
_EXPONENT_BOUND = 40
_INT32 = (-(2**31), 2**31 - 1)
NOT_INTEGER = "must be an integer"


class QuantityError(ValueError):
    """Raised for text that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity into an exact fraction of base units.

    ``parse_quantity("500m") == Fraction(1, 2)``, ``parse_quantity("1Gi") == 2**30``.
    Integers and floats (as YAML gives them for ``cpu: 2`` or ``cpu: 0.5``) are
    accepted as numbers.  Raises :class:`QuantityError` for anything else.
    Short strings are remembered (manifests repeat a few quantities many times).
    """
    if type(text) is str and len(text) <= _REMEMBERED_LENGTH:
        return _parse_string(text)
    return _parse(text)


def _parse(text: str | int | float) -> Fraction:
    if isinstance(text, bool):
        raise QuantityError(f"{_UPSTREAM_MESSAGE}: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _PATTERN.match(str(text).strip())
    if not match:
        raise QuantityError(f"{_UPSTREAM_MESSAGE}: {text!r}")
    value = Fraction(match["num"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if not _INT32[0] <= exponent <= _INT32[1]:
        raise QuantityError(f"unable to parse quantity's suffix: {text!r}")  # upstream keeps exponents in int32
    if value and exponent > _EXPONENT_BOUND:
        return Fraction(INT64_MAX if value > 0 else -INT64_MAX)
    if value and exponent < -_EXPONENT_BOUND:
        return Fraction(1 if value > 0 else -1, 10**9)  # rounded up to the smallest amount, one nano
    return value * Fraction(10) ** exponent


#: parse_quantity remembers strings up to this long, the last 4,096 of them
_REMEMBERED_LENGTH = 64
_parse_string = functools.lru_cache(maxsize=4096)(_parse)


def is_integer_resource(name: str) -> bool:
    """Whether upstream takes only whole amounts of ``name`` (IsIntegerResourceName):
    the object-count resources and every extended resource (a name with a domain
    other than kubernetes.io, not a ``requests.`` quota name), e.g. ``nvidia.com/gpu``."""
    if name in INTEGER_RESOURCES:
        return True
    domain, slash, _ = name.partition("/")
    return bool(slash) and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io")) \
        and not name.startswith("requests.")


def to_scheduler_units(resource: str, text: str | int | float) -> int:
    """Parse the quantity of ``resource`` into the scheduler's integer unit.

    ``cpu`` gives milli-CPU (``"1.5" -> 1500``), every other resource gives base
    units (bytes for memory, a count for pods), rounded up like upstream's
    ``MilliValue()``/``Value()``.  Raises :class:`QuantityError`.
    """
    scale = 1000 if resource in MILLI_RESOURCES else 1
    if type(text) is int:
        return _saturated(text * scale)
    whole = _WHOLE.match(text) if isinstance(text, str) else None
    if whole:  # the common case in integers only: "4", "500m", "16Gi", "2k"
        number, suffix = int(whole["num"]), whole["suffix"] or ""
        if suffix in _BINARY:
            return _saturated(number * _BINARY[suffix] * scale)
        if suffix == "m":
            return _saturated(-(-number * scale // 1000))
        return _saturated(number * _WHOLE_DECIMAL[suffix] * scale)
    return _saturated(math.ceil(parse_quantity(text) * scale))


def _saturated(amount: int) -> int:
    return amount if -INT64_MAX <= amount <= INT64_MAX else (INT64_MAX if amount > 0 else -INT64_MAX)


def format_quantity(resource: str, amount: int) -> str:
    """Write a scheduler-unit integer back as canonical Kubernetes text.

    milli-CPU becomes ``"2"`` or ``"1500m"``; byte counts use the largest exact
    binary suffix (``"500Mi"``), or a plain integer.
    """
    if resource in MILLI_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if amount:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            if amount % _BINARY[suffix] == 0:
                return f"{amount // _BINARY[suffix]}{suffix}"
    return str(amount)


def format_exact_quantity(value: Fraction | int) -> str:
    """Write an exact base-unit value (resource.k8s.io quantities) back as canonical text.

    Integers use the largest exact binary suffix (``85899345920 -> "80Gi"``),
    else the largest exact decimal suffix (``1000 -> "1k"``), else plain digits;
    fractions use ``m``/``u``/``n`` (``1/2 -> "500m"``) and, like upstream, are
    rounded up to nano precision when finer than that.  ``0 -> "0"``.
    """
    value = Fraction(value)
    if value.denominator == 1:
        number = value.numerator
        if number == 0:
            return "0"
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki", "E", "P", "T", "G", "M", "k"):
            factor = _BINARY.get(suffix) or _DECIMAL[suffix]
            if number % factor == 0:
                return f"{number // int(factor)}{suffix}"
        return str(number)
    for suffix in ("m", "u", "n"):
        scaled = value / _DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{math.ceil(value * 10**9)}n"


def parse_resource_list(resources: dict | None, where: str = "") -> dict[str, int]:
    """Parse a manifest ResourceList (``{"cpu": "500m", "memory": "1Gi"}``) into
    scheduler units.  ``where`` prefixes the error: raises :class:`QuantityError`
    naming the field, e.g. ``spec.containers[0].resources.requests.cpu``, for
    text that is not a quantity, a fraction of an integer resource, and an
    amount that upstream's int64 accessors (``Value``, ``MilliValue`` for
    cpu) cannot hold (``cpu: 1e1000``, 2^63 bytes): refused rather than
    saturated, so that no object silently means less than it says.
    """
    out: dict[str, int] = {}
    for name, text in (resources or {}).items():
        try:
            out[name] = to_scheduler_units(name, text)
            if abs(out[name]) >= INT64_MAX:
                unit = "milli-units (MilliValue)" if name in MILLI_RESOURCES else "units (Value)"
                raise QuantityError(f"Invalid value: {json.dumps(str(text))}: beyond upstream's int64 bound of a "
                                    f"quantity: must be less than {INT64_MAX} {unit}")
            if is_integer_resource(name) and not _whole(text):
                raise QuantityError(f"Invalid value: {json.dumps(str(text))}: {NOT_INTEGER}")
        except QuantityError as err:
            raise QuantityError(f"{where}.{name}: {err}" if where else f"{name}: {err}") from None
    return out


def _whole(text: str | int | float) -> bool:
    """Whether a quantity is a whole number (upstream: MilliValue() % 1000 == 0)."""
    if type(text) is int:
        return True
    whole = _WHOLE.match(text) if isinstance(text, str) else None
    if whole:
        return whole["suffix"] != "m" or int(whole["num"]) % 1000 == 0
    return parse_quantity(text).denominator == 1


def format_resource_list(resources: dict[str, int]) -> dict[str, str]:
    """Inverse of :func:`parse_resource_list`."""
    return {name: format_quantity(name, amount) for name, amount in resources.items()}
