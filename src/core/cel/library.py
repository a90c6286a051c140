"""The function library of DRA selectors: Kubernetes quantity, semver, lists, regex and sets, cel-go's
string and optional extensions, as the functions celpy calls, and the names the checker knows."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable

import celpy.celtypes as ct
import re2
from celpy.evaluation import CELEvalError

from kubesched.core.quantity import QuantityError

from .values import _INT64_MAX, _INT64_MIN, _OPTIONAL_NONE, Quantity, Semver, _Optional

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


