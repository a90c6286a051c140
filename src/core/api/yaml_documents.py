"""YAML documents read and written in one tight pass, exactly as PyYAML's safe loader and dumper do.

PyYAML's C loader parses in C but builds the Python objects in Python, a
method call or two per node, and resolves every plain scalar's tag with
regular expressions: for large manifests that is most of the reading.  Here
the C parser's nodes are turned into dicts, lists and strings by one
recursive function, and a plain scalar's tag is resolved once per distinct
text.  A document this pass does not build exactly as the safe constructor
would - an alias (a node used twice), a key that is not a string (merge
keys ``<<`` included), a tag other than the standard map, seq and scalars -
is handed to PyYAML's own constructor, so the objects, and the errors, are
PyYAML's.  Nodes are built recursively: documents must be bounded in depth
before (``manifests._refuse_deep_nesting``).

Writing is the same in reverse (:func:`dump_documents`): dicts, lists,
strings, integers, booleans and None become PyYAML's nodes directly and its
C emitter writes them; a document holding anything else (floats, dates, an
object twice, which PyYAML writes as an anchor) goes through PyYAML's
representer, so the text is PyYAML's.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, TextIO

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

#: PyYAML's C loader when it is built (about 8x faster on large files), else the Python one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: PyYAML's C emitter when it is built, else the Python one.
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_INT, _BOOL, _NULL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
#: Distinct plain scalars whose tags a loader remembers (beyond that it forgets them all and starts again).
_MAX_RESOLVED = 65536


class _NotPlain(Exception):
    """A document this pass leaves to PyYAML's constructor."""


class _ResolvedOnce:
    """A safe loader's or dumper's resolver that resolves each distinct plain scalar's tag once."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._resolved: dict[str, str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """The tag of a node, as PyYAML's safe resolver gives it (it has no path resolvers): a plain scalar's from a
        cache by its text, a quoted scalar's the string tag."""
        if kind is ScalarNode:
            if not implicit[0]:
                return self.DEFAULT_SCALAR_TAG  # type: ignore[attr-defined]
            tag = self._resolved.get(value)
            if tag is None:
                if len(self._resolved) >= _MAX_RESOLVED:
                    self._resolved.clear()
                tag = self._resolved[value] = super().resolve(kind, value, implicit)  # type: ignore[misc]
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[misc]


class ManifestLoader(_ResolvedOnce, SAFE_LOADER):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader (the C one when built), each distinct plain scalar's tag resolved once."""


class ManifestDumper(_ResolvedOnce, SAFE_DUMPER):  # type: ignore[misc,valid-type]
    """PyYAML's safe dumper (the C emitter when built), each distinct plain scalar's tag resolved once."""


def documents(text: str) -> Iterator[tuple[Any, bool]]:
    """(document, plain) for each YAML document of ``text``, as ``yaml.load_all(text, Loader=SAFE_LOADER)``
    gives them; ``plain``: built by the fast pass, so it shares no part (no alias) and every mapping key is a
    string.  Raises PyYAML's errors."""
    loader = ManifestLoader(text)
    constructors = loader.yaml_constructors
    try:
        while loader.check_node():
            node = loader.get_node()
            try:
                yield _build(node, loader, constructors, set()), True
            except _NotPlain:
                yield loader.construct_document(node), False
    finally:
        loader.dispose()


def _build(node: Node, loader: Any, constructors: dict, seen: set[int]) -> Any:
    """``node`` as Python objects; raises :class:`_NotPlain` for what PyYAML's constructor must build."""
    kind = node.__class__
    tag = node.tag
    if kind is ScalarNode:
        if tag == _STR:
            return node.value
        construct = constructors.get(tag)
        if construct is None:
            raise _NotPlain
        return construct(loader, node)
    if id(node) in seen:
        raise _NotPlain  # an alias: the same object twice
    seen.add(id(node))
    if kind is MappingNode:
        if tag != _MAP:
            raise _NotPlain
        result = {}
        for key, value in node.value:
            if key.__class__ is not ScalarNode or key.tag != _STR:
                raise _NotPlain
            result[key.value] = _build(value, loader, constructors, seen)
        return result
    if tag != _SEQ:
        raise _NotPlain
    return [_build(item, loader, constructors, seen) for item in node.value]


def dump_documents(docs: Iterable[Any], stream: TextIO) -> None:
    """Write ``docs`` to ``stream`` as ``yaml.dump_all(docs, stream, Dumper=SAFE_DUMPER, sort_keys=False)`` does, one
    document at a time.  Raises PyYAML's errors (an object it cannot represent)."""
    dumper = ManifestDumper(stream, default_flow_style=False, sort_keys=False)
    try:
        dumper.open()
        for doc in docs:
            try:
                node = _node(doc, set())
            except _NotPlain:
                dumper.represent(doc)
                continue
            dumper.serialize(node)
        dumper.close()
    finally:
        dumper.dispose()


def _node(data: Any, seen: set[int]) -> Node:
    """The node PyYAML's safe representer makes of ``data``; raises :class:`_NotPlain` for what it must make."""
    kind = type(data)
    if kind is str:
        return ScalarNode(_STR, data)
    if kind is bool:
        return ScalarNode(_BOOL, "true" if data else "false")
    if kind is int:
        return ScalarNode(_INT, str(data))
    if data is None:
        return ScalarNode(_NULL, "null")
    if kind is not dict and kind is not list:
        raise _NotPlain
    if id(data) in seen:
        raise _NotPlain  # written as an anchor and its aliases
    seen.add(id(data))
    if kind is list:
        return SequenceNode(_SEQ, [_node(item, seen) for item in data], flow_style=False)
    pairs = []
    for key, value in data.items():
        if type(key) is not str:
            raise _NotPlain
        pairs.append((ScalarNode(_STR, key), _node(value, seen)))
    return MappingNode(_MAP, pairs, flow_style=False)
