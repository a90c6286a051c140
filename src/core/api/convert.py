"""Manifest <-> object conversion at the edge, on cattrs.

API objects are frozen attrs classes with snake_case fields; manifests are
camelCase dicts.  One converter handles every model class:

- each field's manifest key is its camelCase name, or ``metadata={"key": ...}``;
- a field with ``metadata={"kind": "quantity"}`` is a ResourceList parsed into
  scheduler units (milli-CPU, bytes) and written back as quantities;
  ``metadata={"kind": "bytes"}`` is one quantity held as an integer of base units;
- an int field takes a JSON integer within int64, or int32 with ``metadata={"kind": "int32"}``
  (never a string: the API server's decoding refuses ``minCount: "4"``);
- ``metadata={"kind": "time"}`` is an RFC 3339 timestamp held as float seconds;
  ``"microtime"`` the same written with microseconds (upstream ``MicroTime``:
  Lease times, events.k8s.io ``eventTime``);
- a field named ``extra`` keeps every manifest key the class does not model, so
  an object is written back with nothing lost;
- fields equal to their default are left out when writing;
- a class with ``SHARED = True`` (a pod's spec and status: a workload's pods repeat them) is decoded once per
  distinct manifest and that frozen object shared, the maps inside it included (:func:`_shared_decoding`);
- a class with ``STRICT = True`` (configuration types) refuses unknown keys;
  :func:`structure_args` (plugin args) refuses them in every class that does
  not set ``STRICT = False`` or keep them in ``extra``.

Errors raised while structuring are :class:`ManifestError` naming the field path
in manifest terms (``spec.containers[0].resources.requests.cpu``).
"""

from __future__ import annotations

import datetime as _dt
import functools
from types import UnionType
from typing import Any, Callable, Union, get_args, get_origin

import attrs
import cattrs
import orjson

from kubesched.core.quantity import (
    QuantityError,
    format_quantity,
    format_resource_list,
    parse_resource_list,
    to_scheduler_units,
)

EXTRA = "extra"


class ManifestError(ValueError):
    """A manifest that does not match the object's schema.

    ``field`` is the manifest path (``spec.priority``), ``problem`` the reason.
    """

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_GO_QUOTED = {**_GO_ESCAPES, "\\": "\\\\", '"': '\\"'}


def printable(text: str, quoted: bool = False) -> str:
    """``text`` with control and other unprintable characters escaped as Go's
    %q escapes them (``\\n``, ``\\x1b``, ``\\u200b``), so that a name from a
    file cannot drive the terminal a message is printed on; ``quoted``: in
    double quotes with quotes and backslashes escaped too, exactly %q."""
    if text.isprintable() and not quoted:
        return text
    table = _GO_QUOTED if quoted else _GO_ESCAPES
    body = "".join(table.get(c) or (c if c.isprintable() else _escaped(c)) for c in text)
    return f'"{body}"' if quoted else body


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def excerpt(text: str, limit: int = 100) -> str:
    """``text`` as a one-line message shows it: cut after ``limit`` characters
    with its length stated (``device.driver == ... (9776 characters)``)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def camel(name: str) -> str:
    """``node_name`` -> ``nodeName``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def manifest_key(field: attrs.Attribute) -> str:
    """The manifest key of attrs ``field``: its ``key`` metadata when set (``hostIP``, ``volumeID``), else its name
    in camelCase."""
    return field.metadata.get("key") or camel(field.name)


def parse_time(text: Any) -> float | None:
    """RFC 3339 text (``2026-01-02T03:04:05Z``) -> seconds since the epoch.  Raises ValueError."""
    if text is None or isinstance(text, (int, float)):
        return text
    return _parse_time_text(str(text))


@functools.lru_cache(maxsize=4096)
def _parse_time_text(text: str) -> float:
    """:func:`parse_time` of a text (an LRU: a run's objects share few distinct times)."""
    stamp = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.timestamp()


@functools.lru_cache(maxsize=4096)
def format_time(seconds: float | None) -> str | None:
    """Seconds since the epoch -> RFC 3339 text in UTC, second precision as upstream (an LRU: a run's
    objects share few distinct times)."""
    if seconds is None:
        return None
    stamp = _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(seconds: float | None) -> str | None:
    """Seconds since the epoch -> upstream's MicroTime text (``2026-01-02T03:04:05.123456Z``),
    which the API server requires for Lease and events.k8s.io times."""
    if seconds is None:
        return None
    stamp = _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.lru_cache(maxsize=1024)
def _remembered_resource_list(items: tuple[tuple[str, str | int], ...]) -> dict[str, int]:
    """:func:`parse_resource_list` of a ResourceList's items, remembered: a cluster's manifests repeat a few
    shapes (every node of a pool, every pod of a workload).  Errors are raised again each time, not remembered."""
    return parse_resource_list(dict(items))


def _quantity_hook(value: Any, _type: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ManifestError("", f"expected a map of quantities, got {value!r}")
    try:
        items = tuple(value.items())
        if all(type(text) is str or type(text) is int for _, text in items):  # not 1.0 or true, equal to 1
            return dict(_remembered_resource_list(items))  # a copy: the caller owns its dict
        return parse_resource_list(value)
    except QuantityError as err:
        name, _, problem = str(err).partition(": ")
        raise ManifestError(name, problem) from None


def _bytes_hook(value: Any) -> int:
    if isinstance(value, (dict, list, bool)):
        raise ManifestError("", f"expected a quantity, got {value!r}")
    try:
        return to_scheduler_units("storage", value)
    except QuantityError as err:
        raise ManifestError("", str(err)) from None


def _format_bytes(value: int | None) -> str | None:
    return None if value is None else format_quantity("storage", value)


def _time_hook(value: Any, _type: Any) -> float | None:
    try:
        return parse_time(value)
    except ValueError as err:
        raise ManifestError("", f"invalid RFC 3339 time {value!r}: {err}") from None


converter = cattrs.Converter(omit_if_default=True, forbid_extra_keys=False, detailed_validation=False)


def _is_model(cls: type) -> bool:
    return attrs.has(cls)


def _field_hook(f: attrs.Attribute, conv: cattrs.Converter) -> tuple[Callable[[Any, Any], Any], Any]:
    """``(hook, type)``: a field's value structures as ``hook(value, type)`` (hooks from ``conv``)."""
    kind = f.metadata.get("kind")
    if kind == "quantity":
        return _quantity_hook, None
    if kind in ("time", "microtime"):
        return _time_hook, None
    if kind == "bytes":
        return lambda value, _type: _bytes_hook(value), None
    if kind == "int32":
        return _structure_int32, None
    inner = _optional_of(f.type)
    if inner is not None:  # a None value never reaches a field hook (structure skips it)
        return conv.get_structure_hook(inner), inner
    return conv.get_structure_hook(f.type), f.type


def _optional_of(type_: Any) -> Any:
    """X for ``X | None`` (``Optional[X]``), else None."""
    args = get_args(type_)
    if get_origin(type_) in (Union, UnionType) and len(args) == 2 and type(None) in args:
        return args[0] if args[1] is type(None) else args[1]
    return None


def _structure_factory(cls: type, conv: cattrs.Converter):
    attrs.resolve_types(cls)
    fields = [(manifest_key(f), f.name, _field_hook(f, conv)) for f in attrs.fields(cls) if f.name != EXTRA]
    has_extra = any(f.name == EXTRA for f in attrs.fields(cls))
    # key -> (field name, the class of a value taken as it is, its bounds, the field's hook and type)
    by_key: dict[str, tuple[str, Any, int, int, Callable[[Any, Any], Any], Any]] = {
        key: (name, *_taken_as_is(hook), *hook) for key, name, hook in fields}
    strict = getattr(cls, "STRICT", conv is _args_converter)

    def structure(data: Any, _type: Any = cls):
        if data.__class__ is not dict:
            if data is None:
                data = {}
            elif not isinstance(data, dict):
                raise ManifestError("", f"expected an object, got {data!r}")
        kwargs = {}
        unknown: dict[str, Any] = {}
        for key, value in data.items():  # manifests set few of a kind's fields: walk the keys given
            entry = by_key.get(key)
            if entry is None:
                unknown[key] = value
                continue
            if value is None:
                continue
            name, scalar, low, high, hook, type_ = entry
            if value.__class__ is scalar and (scalar is not int or low <= value <= high):
                kwargs[name] = value  # what the field's hook returns as it is (a string, a boolean, an int64)
                continue
            try:
                kwargs[name] = hook(value, type_)
            except ManifestError as err:
                raise ManifestError(_join(key, err.field), err.problem) from None
            except (QuantityError, TypeError, ValueError) as err:
                raise ManifestError(key, str(err)) from None
        if has_extra:
            kwargs[EXTRA] = unknown
        elif strict and unknown:
            raise ManifestError(min(unknown), "unknown field")
        try:
            return cls(**kwargs)
        except ManifestError:
            raise
        except (TypeError, ValueError) as err:
            raise ManifestError("", str(err)) from None

    return _shared_decoding(structure) if getattr(cls, "SHARED", False) else structure


#: Distinct manifests a ``SHARED`` class remembers the object of (beyond that it forgets them all and starts again).
_MAX_SHARED = 4096


def _shared_decoding(structure: Callable[..., Any]) -> Callable[..., Any]:
    """``structure`` remembering its object per distinct manifest, keyed by the manifest's compact JSON (orjson:
    keys in their order, ``1`` apart from ``1.0``, ``true`` and ``"1"``), so equal manifests share one frozen
    object.  Errors are raised again each time, never remembered; a manifest JSON cannot tell apart exactly (a
    null, where NaN and infinities write null too; a key that is not a string; an integer beyond 64 bits) is
    decoded each time."""
    remembered: dict[bytes, Any] = {}

    def structure_shared(data: Any, _type: Any = None) -> Any:
        try:
            key = orjson.dumps(data)
        except TypeError:  # orjson.JSONEncodeError too
            return structure(data)
        if b"null" in key:
            return structure(data)
        obj = remembered.get(key)
        if obj is None:
            obj = structure(data)
            if len(remembered) >= _MAX_SHARED:
                remembered.clear()
            remembered[key] = obj
        return obj

    return structure_shared


def _taken_as_is(hook: tuple[Callable[[Any, Any], Any], Any]) -> tuple[type | None, int, int]:
    """(class, low, high): a value of exactly that class (an int within low..high) is what the field's ``hook``
    would return for it, so :func:`_structure_factory` takes it without calling the hook; (None, 0, 0) for a
    hook that must always run."""
    function = hook[0]
    if function is _structure_str:
        return str, 0, 0
    if function is _structure_bool:
        return bool, 0, 0
    if function is _structure_int:
        return int, *_INT64
    if function is _structure_int32:
        return int, *_INT32
    return None, 0, 0


def _join(head: str, tail: str) -> str:
    if not tail:
        return head
    if tail.startswith("["):
        return head + tail
    return f"{head}.{tail}" if head else tail


def _always_written(field: attrs.Attribute) -> bool:
    """Whether the API server writes the field whatever its value: a default
    that Go's ``omitempty`` would keep (``type: Normal``, ``count: 1``,
    ``allocationMode: ExactCount``), or a field Go declares without omitempty
    (``metadata={"always": True}``, e.g. a pool's ``generation``).  Other
    fields are left out when they equal their zero default."""
    default = field.default
    return field.metadata.get("always", False) or (isinstance(default, (str, int, float, tuple)) and bool(default))


def _is_struct_default(field: attrs.Attribute) -> bool:
    """A sub-object field whose default is an empty instance: written unless
    it comes out empty (its equality ignores the unmodelled fields it keeps)."""
    return attrs.has(type(field.default))


#: How a field of a model class is written: its value's hook, by the field's ``kind`` metadata.
_KIND_UNSTRUCTURE: dict[str, Callable[[Any], Any]] = {"quantity": format_resource_list, "time": format_time,
                                                      "microtime": format_micro_time, "bytes": _format_bytes}


def _unstructure_factory(cls: type) -> Callable[[Any], dict]:
    """``cls``'s unstructure hook, generated as straight-line code in one pass: the fields always written first
    (a sub-object field only when it comes out non-empty), then the others unless equal to their default, each
    in field order and under its manifest key, through its kind's or its type's hook (none for a string, a
    number, a boolean); then the keys of ``extra`` the fields did not write."""
    attrs.resolve_types(cls)
    namespace: dict[str, Any] = {}
    first: list[str] = []
    rest: list[str] = []
    extra = None
    for index, f in enumerate(attrs.fields(cls)):
        if not f.init:
            continue  # state of the object, not of its manifest
        key, read = manifest_key(f), f"o.{f.name}"
        hook = _KIND_UNSTRUCTURE.get(f.metadata.get("kind", "")) or _unstructure_hook(f.type)
        if hook is not cattrs.fns.identity:
            namespace[f"h{index}"] = hook
            read = f"h{index}(o.{f.name})"
        if f.name == EXTRA:
            extra = read
            continue
        if _is_struct_default(f):
            first += [f"    v = {read}", "    if v != {}:", f"        res[{key!r}] = v"]
        elif _always_written(f) or f.default is attrs.NOTHING:
            first.append(f"    res[{key!r}] = {read}")
        else:
            default = f.default.factory() if isinstance(f.default, attrs.Factory) else f.default  # type: ignore
            namespace[f"d{index}"] = f.converter(default) if f.converter is not None else default  # as set
            rest += [f"    if o.{f.name} != d{index}:", f"        res[{key!r}] = {read}"]
    lines = [f"def unstructure_{cls.__name__}(o):", "    res = {}", *first, *rest]
    if extra is not None:
        lines += [f"    if o.{EXTRA}:", f"        for key, value in {extra}.items():",
                  "            if key not in res:", "                res[key] = value"]
    lines.append("    return res")
    exec(compile("\n".join(lines), f"<kubesched unstructure {cls.__qualname__}>", "exec"), namespace)
    return namespace[f"unstructure_{cls.__name__}"]


def _unstructure_hook(type_: Any) -> Callable[[Any], Any]:
    """The converter's unstructure hook of a field's type (its generic one for a class that holds itself)."""
    try:
        return converter.get_unstructure_hook(type_, cache_result=False)
    except RecursionError:
        return converter.unstructure


def _structure_list_factory(type_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], tuple]:
    """``tuple[X, ...]`` hook: the item hook is looked up once per type, on first
    use (so that a class may hold a tuple of itself: a template tree)."""
    item_type = getattr(type_, "__args__", (Any,))[0]
    item_hook: Callable[[Any, Any], Any] | None = None

    def structure_list(value: Any, _type: Any) -> tuple:
        nonlocal item_hook
        if value is None:
            return ()
        if item_hook is None:
            item_hook = conv.get_structure_hook(item_type)
        if not isinstance(value, (list, tuple)):
            raise ManifestError("", f"expected a list, got {value!r}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(item_hook(item, item_type))
            except ManifestError as err:
                raise ManifestError(_join(f"[{index}]", err.field), err.problem) from None
        return tuple(out)

    return structure_list


def _structure_str(value: Any, _type: Any) -> str:
    """A string field takes only a string, as the API server's JSON decoding
    does (``name: 5`` or ``app: 1.10`` in YAML is a number: refused, never
    turned into "5" or "1.1")."""
    if type(value) is str:
        return value
    raise ManifestError("", f"expected a string, got {_shown(value)}")


def _shown(value: Any) -> str:
    """A refused value as a message shows it: its kind, and its text cut at 40 characters."""
    kind = {bool: "boolean", int: "number", float: "number", str: "string", dict: "object", list: "list"}.get(
        type(value), "value")
    text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


#: Go's int64 and int32: the API server's JSON decoding refuses a number outside the field's type.
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _structure_int(value: Any, _type: Any, bits: int = 64) -> int:
    """An integer field takes only a JSON number that is an integer within the
    field's Go type (int64, or int32 for fields marked ``kind: int32``), as the
    API server decodes it: ``minCount: "4"`` (a string) or
    9223372036854775808 for an int32 are refused ("cannot unmarshal ..."),
    never converted."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)  # 4.0: JSON has one number type, an integral value decodes into an integer
        else:
            raise ManifestError("", f"expected an integer, got {_shown(value)}")
    low, high = _INT32 if bits == 32 else _INT64
    if not low <= value <= high:
        raise ManifestError("", f"cannot unmarshal number {_shown(value).partition(' ')[2]} into an int{bits} "
                                f"field (from {low} to {high})")
    return value


def _structure_int32(value: Any, _type: Any) -> int:
    """``kind: int32`` fields: :func:`_structure_int` within int32."""
    return _structure_int(value, _type, bits=32)


def _structure_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise ManifestError("", f"expected true or false, got {value!r}")
    return value


def _structure_dict_factory(type_: Any, conv: cattrs.Converter) -> Callable[[Any, Any], dict]:
    """``dict[str, X]`` hook: each value structured as X (a ``dict[str, Any]`` taken as it is)."""

    def structure_dict(value: Any, type_: Any) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ManifestError("", f"expected a map, got {value!r}")
        args = getattr(type_, "__args__", None)
        if not args or args[1] is Any:
            return dict(value)
        out = {}
        for key, item in value.items():
            try:
                out[str(key)] = conv.structure(item, args[1])
            except ManifestError as err:
                raise ManifestError(_join(str(key), err.field), err.problem) from None
        return out

    return structure_dict


converter.register_structure_hook_factory(_is_model, _structure_factory)
converter.register_unstructure_hook_factory(_is_model, _unstructure_factory)
converter.register_structure_hook_factory(lambda t: getattr(t, "__origin__", None) is tuple, _structure_list_factory)
converter.register_structure_hook_factory(lambda t: getattr(t, "__origin__", None) is dict, _structure_dict_factory)
converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(bool, _structure_bool)


def _unstructure_list_factory(type_: Any) -> Callable[[Any], list]:
    """``tuple[X, ...]`` -> a list: X's hook looked up once (on first use), each item whose class is exactly X
    written by it, any other item (a subclass, an untyped tuple's) dispatched on its own class."""
    item_type = getattr(type_, "__args__", (Any,))[0]
    if not isinstance(item_type, type) or not attrs.has(item_type):
        return lambda value: [converter.unstructure(item) for item in value]
    item_hook: Callable[[Any], Any] | None = None

    def unstructure_list(value: Any) -> list:
        nonlocal item_hook
        if item_hook is None:
            item_hook = converter.get_unstructure_hook(item_type)
        hook = item_hook
        return [hook(item) if item.__class__ is item_type else converter.unstructure(item) for item in value]

    return unstructure_list


converter.register_unstructure_hook_factory(lambda t: getattr(t, "__origin__", None) is tuple, _unstructure_list_factory)


def structure(data: Any, cls: type):
    """Manifest dict -> ``cls``.  Raises :class:`ManifestError`."""
    return converter.structure(data, cls)


#: The converter of plugin args: :data:`converter`'s hooks, classes strict unless they say otherwise.
_args_converter: cattrs.Converter | None = None


def structure_args(data: dict, cls: type):
    """A plugin's ``pluginConfig`` args -> ``cls``, decoded strictly as kube-scheduler
    decodes its configuration: the args class and every class it nests refuse a key
    they do not model, unless the class sets ``STRICT = False`` (a plugin asking for
    lenient args) or keeps unknown keys in an ``extra`` field (API objects).  Raises
    :class:`ManifestError` naming the field path (``scoringStrategy.type``)."""
    global _args_converter
    if _args_converter is None:  # copied once every API group has registered its hooks
        _args_converter = converter.copy()
    return _args_converter.structure(data, cls)


def unstructure(obj: Any) -> dict:
    """Object -> manifest dict (camelCase, defaults left out)."""
    return converter.unstructure(obj)
