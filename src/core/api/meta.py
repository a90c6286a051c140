"""meta/v1: ObjectMeta, OwnerReference, LabelSelector and the label-selector logic."""

from __future__ import annotations

from typing import Any, Callable

import attrs
from attrs import field, frozen

from .convert import ManifestError


def _time():
    return field(default=None, metadata={"kind": "time"})


@frozen
class OwnerReference:
    """A reference from an object to its owner (``metadata.ownerReferences[]``)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


@frozen
class ObjectMeta:
    """``metadata``: identity, labels and bookkeeping.  Timestamps are float
    seconds since the epoch; ``resource_version`` is the store's version string."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: float | None = _time()
    deletion_timestamp: float | None = _time()
    labels: dict[str, str] = field(factory=dict)
    annotations: dict[str, str] = field(factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class Condition:
    """meta/v1 Condition; ``last_transition_time`` is float seconds."""

    type: str = ""
    status: str = ""
    observed_generation: int = 0
    last_transition_time: float | None = _time()
    reason: str = ""
    message: str = ""


@frozen
class ObjectReference:
    """``involvedObject`` / ``claimRef``: a pointer to another object."""

    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""
    field_path: str = ""


@frozen
class LabelSelectorRequirement:
    """One ``matchExpressions`` entry: operator In, NotIn, Exists, DoesNotExist."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@frozen
class LabelSelector:
    """meta/v1 LabelSelector.  An empty selector matches everything; a ``None``
    selector (where the API allows it) matches nothing, as upstream."""

    match_labels: dict[str, str] = field(factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def __attrs_post_init__(self):
        for index, req in enumerate(self.match_expressions):
            if req.operator not in SELECTOR_OPERATORS:
                raise ManifestError(f"matchExpressions[{index}].operator", f"unsupported operator {req.operator!r}")

    def matches(self, labels: dict[str, str]) -> bool:
        """True when ``labels`` satisfy every matchLabels and matchExpressions entry."""
        for key, value in self.match_labels.items():
            if labels.get(key) != value:
                return False
        for req in self.match_expressions:
            present = req.key in labels
            if req.operator == "In":
                if not present or labels[req.key] not in req.values:
                    return False
            elif req.operator == "NotIn":
                if present and labels[req.key] in req.values:
                    return False
            elif req.operator == "Exists":
                if not present:
                    return False
            elif present:  # DoesNotExist
                return False
        return True


def selector_key(selector: LabelSelector | None) -> str:
    """A canonical text of ``selector`` (equal selectors, equal keys; None is
    ``"nil"``), for caches keyed by selector."""
    if selector is None:
        return "nil"
    return repr((sorted(selector.match_labels.items()),
                 sorted((r.key, r.operator, tuple(sorted(r.values))) for r in selector.match_expressions)))


def namespaced_name(meta: ObjectMeta) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects."""
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


#: class -> its copier for :func:`evolve` (made on first use)
_COPIERS: dict[type, Callable[[type, Any, dict[str, Any]], Any]] = {}


def evolve(obj: Any, **changes: Any) -> Any:
    """``attrs.evolve(obj, **changes)``, about a third faster: each class gets a
    copier that passes every init field (by its alias) straight to the class,
    made once, instead of looking the fields up on every call.  The class's
    ``__init__`` runs as with attrs.evolve (validators, converters,
    ``__attrs_post_init__``).  Raises TypeError for a change that is not an
    init field.  For the API objects' hot paths (the embedded API server, the
    scheduling cycle)."""
    cls = obj.__class__
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier(cls)
    copied = copier(cls, obj, changes)
    if changes:
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {next(iter(changes))!r}")
    return copied


def _copier(cls: type) -> Callable[[type, Any, dict[str, Any]], Any]:
    """``copier(cls, obj, changes)``: ``cls(...)`` with each init field taken
    (popped) from ``changes`` or else from ``obj``."""
    arguments = ", ".join(f"{f.alias}=changes.pop({f.alias!r}) if {f.alias!r} in changes else obj.{f.name}"
                          for f in attrs.fields(cls) if f.init)
    namespace: dict[str, Any] = {}
    exec(f"def copier(cls, obj, changes):\n    return cls({arguments})\n", namespace)  # noqa: S102
    return namespace["copier"]


def replacer(cls: type, name: str) -> Callable[[Any, Any], Any]:
    """``replace(obj, value)``: a copy of ``obj`` (a ``cls``, a frozen attrs class with slots) with its field
    ``name`` set to ``value``, equal to ``evolve(obj, name=value)`` and about three times cheaper: the slots are
    copied without ``__init__``, which for such a class could only run validators, converters,
    ``__attrs_pre_init__``/``__attrs_post_init__`` and reset non-init fields or a cached hash.  Raises TypeError
    when made for a class where skipping it could matter: without slots, not frozen, an unknown field, a non-init
    field, a slot that is no field (a cached hash), a field with a validator or converter, an
    ``__attrs_pre_init__``, or an ``__attrs_post_init__`` that names ``name`` (one that reads other fields only
    sees them as the original, already built, had them).  For a hot path's one-field copies (a pod assumed on
    its node)."""
    fields = attrs.fields(cls)
    names = {f.name for f in fields}
    slots = {slot for klass in cls.__mro__ for slot in klass.__dict__.get("__slots__", ())} - {"__weakref__"}
    post_init = getattr(cls, "__attrs_post_init__", None)
    if "__slots__" not in cls.__dict__ or cls.__setattr__ is object.__setattr__:
        raise TypeError(f"replacer: {cls.__name__} is not a frozen attrs class with slots")
    if name not in names:
        raise TypeError(f"replacer: {cls.__name__} has no field {name!r}")
    odd = sorted([f.name for f in fields if not f.init or f.validator is not None or f.converter is not None]
                 + list(slots - names))
    if odd:
        raise TypeError(f"replacer: {cls.__name__}.{odd[0]} is set by __init__ otherwise than from its argument")
    if hasattr(cls, "__attrs_pre_init__"):
        raise TypeError(f"replacer: {cls.__name__} has an __attrs_pre_init__")
    if post_init is not None and name in post_init.__code__.co_names:
        raise TypeError(f"replacer: {cls.__name__}.__attrs_post_init__ reads {name!r}")
    setters = {f"set_{f.name}": getattr(cls, f.name).__set__ for f in fields}
    lines = "".join(f"    set_{f.name}(copy, {'value' if f.name == name else 'obj.' + f.name})\n" for f in fields)
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls, **setters}
    exec(f"def replace(obj, value):\n    copy = new(cls)\n{lines}    return copy\n", namespace)  # noqa: S102
    return namespace["replace"]


def evolve_meta(obj: Any, **changes: Any) -> Any:
    """Return ``obj`` with ``metadata`` fields replaced."""
    return attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, **changes))
