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
before (``manifests._refuse_deep_nesting``).  A mapping that sets a key twice
is refused (:class:`DuplicateKey`), as kubectl and kube-apiserver refuse it
(PyYAML alone keeps the last value).

Manifest files (:func:`manifest_documents`) are read faster still: each
document whose text holds nothing that YAML 1.1 (PyYAML, Kubernetes' YAML)
and YAML 1.2 could read differently is built by yaml-rs, a parser in Rust that
builds the Python objects itself (about 6x faster); every other document goes
through the pass above (see :data:`_NOT_FOR_YAML_RS` for what sends it there).

Writing is the same in reverse (:func:`dump_documents`): dicts, lists,
strings, integers, booleans and None become the events PyYAML's serializer
would send its C emitter, sent directly; a document holding anything else (floats, dates, an
object twice, which PyYAML writes as an anchor) goes through PyYAML's
representer, so the text is PyYAML's.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, TextIO

import re2
import yaml
import yaml_rs
from yaml.constructor import ConstructorError
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode

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


class DuplicateKey(ConstructorError):
    """A mapping that sets ``key`` twice: ``line 4: mapping key "name" already defined at line 3`` (the words of
    kubectl's YAML decoder).  A PyYAML error (its marks give the lines)."""

    def __init__(self, key: str, first: Node, again: Node):
        super().__init__(None, first.start_mark, f"mapping key {key!r} already defined", again.start_mark)
        self.key = key

    def __str__(self) -> str:
        again, first = self.problem_mark, self.context_mark
        assert again is not None and first is not None
        return f'line {again.line + 1}: mapping key "{self.key}" already defined at line {first.line + 1}'


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
                _refuse_duplicate_keys_below(node)
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
        if len(result) != len(node.value):
            _refuse_duplicate_keys(node)
        return result
    if tag != _SEQ:
        raise _NotPlain
    return [_build(item, loader, constructors, seen) for item in node.value]


def _refuse_duplicate_keys(node: Node) -> None:
    """Raise :class:`DuplicateKey` for the first key ``node`` sets again (keys compared by tag and text; merge keys
    ``<<`` may repeat, as PyYAML merges each)."""
    first: dict[tuple[str, str], Node] = {}
    for key, _ in node.value:
        if key.__class__ is not ScalarNode or key.tag == "tag:yaml.org,2002:merge":
            continue
        seen = first.setdefault((key.tag, key.value), key)
        if seen is not key:
            raise DuplicateKey(key.value, seen, key)


def _refuse_duplicate_keys_below(root: Node) -> None:
    """:func:`_refuse_duplicate_keys` for every mapping in ``root``, each visited once (aliases share nodes)."""
    stack, visited = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in visited or node.__class__ is ScalarNode:
            continue
        visited.add(id(node))
        if node.__class__ is MappingNode:
            _refuse_duplicate_keys(node)
            stack.extend(part for pair in node.value for part in pair)
        else:
            stack.extend(node.value)


#: A line break as PyYAML counts lines.
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
#: A document (``---`` in the first column: no scalar of the document before may span it, as YAML forbids).
_DOCUMENT_MARKER = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)
#: Text yaml-rs is not given (the document goes to PyYAML), as RE2 finds it in one linear pass:
#:
#: - anchors, aliases, tags, directives, escapes, merge keys (``&*!%\<``); any character but printable ASCII,
#:   newlines and printable non-ASCII (tabs; YAML 1.1's line breaks U+0085, U+2028, U+2029, which 1.2 reads as
#:   text; a BOM inside);
#: - a flow collection as a key (``[a]: b``, ``{a: 1, [b]}``), a colon before a flow indicator (``[0:]``) or
#:   before anything but a space once a flow collection opened on the line (``[a:b]``: PyYAML refuses it), a
#:   line that opens a flow collection and does not end closing one (a flow collection over several lines);
#: - a plain scalar (after a space, a line break or ``[{,``) that YAML 1.1 may read otherwise than 1.2:
#:   yes/no/on/off (booleans to 1.1), ``=`` (PyYAML refuses it), anything starting with ``?``, ``:``, ``@``, a
#:   backquote, ``|`` or ``>`` (block scalars: an empty one is chomped otherwise), ``.`` or ``_`` (``.inf``,
#:   ``...``), a 0 and a digit or letter (octal ``0777``, ``0o17``, ``0x1F``), or digits and dots then ``_``,
#:   ``e``, ``-`` or ``:`` and a digit (``1_000``, ``1e3``, timestamps ``2026-01-01``, sexagesimal ``1:20``).
#:
#: A hit where no plain scalar is (inside quotes, in a comment) only costs the faster parser for that document.
_NOT_FOR_YAML_RS = re2.compile(
    r"[&*!%\\<]|[^\n\r\x20-\x7e\x{a0}-\x{2027}\x{202a}-\x{d7ff}\x{e000}-\x{fefe}\x{ff00}-\x{fffd}\x{10000}-\x{10ffff}]"
    r"|[\]}]\s*:|{[^\n]*[{,]\s*[\[{]|:[\[\]{},]|[\[{][^\n]*?[^\s]:[^\s\]},]|[\[{][^\n]*[^\]}\s][ \r]*(?m:$)"
    r"|(?:^|[\s\[{,])(?:(?:[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF|=)(?:[\s,\]}#:]|$)|[?:@`|>]"
    r"|[-+]?(?:0[0-9a-zA-Z_]|[._]|[0-9][0-9.]*(?:[_eE-]|:[0-9])))")
#: A document's text up to this many characters, built by yaml-rs, is within every bound of
#: ``manifests.read_documents`` without measuring it (no aliases; as JSON at most ~5 bytes per character).
SMALL_DOCUMENT = 64 * 1024


def manifest_documents(text: str) -> Iterator[tuple[Any, bool, int]]:
    """(document, plain, characters) for each YAML document of ``text``: the documents and errors of
    :func:`documents`; a document that yaml-rs reads as PyYAML would (:data:`_NOT_FOR_YAML_RS` finds nothing in
    its text) is built by yaml-rs, about 6x faster, with ``plain`` (it shares no part; its keys are strings
    unless PyYAML's are not either) and ``characters`` the length of its text (0 for a document PyYAML built).
    Raises PyYAML's errors (:class:`DuplicateKey` for a key set twice)."""
    if re.search(r"^%", text, re.M):  # a directive belongs to the next document: read it whole
        yield from ((doc, plain, 0) for doc, plain in documents(text))
        return
    starts = [m.start() for m in _DOCUMENT_MARKER.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    unsafe = iter([m.end() - 1 for m in _NOT_FOR_YAML_RS.finditer(text)] + [len(text) + 1])
    next_unsafe = next(unsafe)
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        while next_unsafe < begin:
            next_unsafe = next(unsafe)
        chunk = text[begin:end]
        doc = None
        if next_unsafe >= end:
            try:
                doc = yaml_rs.loads(chunk, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error)
            except yaml_rs.YAMLDecodeError:
                doc = None
        if doc is not None:
            yield doc, True, len(chunk)
            continue
        try:  # None too: an empty text has no document, ``---`` alone or ``~`` has one
            yield from ((doc, plain, 0) for doc, plain in documents(chunk))
        except yaml.MarkedYAMLError as err:
            for _ in documents(text):  # PyYAML's own error for the whole text, as it stops there
                pass
            lines = len(_LINE_BREAK.findall(text, 0, begin))
            for mark in (err.context_mark, err.problem_mark):
                if mark is not None:
                    mark.line += lines
            raise


#: The events of a plain document but its scalars: the C emitter only reads them, so one of each serves all.
_DOCUMENT_START, _DOCUMENT_END = DocumentStartEvent(explicit=False), DocumentEndEvent(explicit=False)
_MAP_START, _MAP_END = MappingStartEvent(None, _MAP, True, flow_style=False), MappingEndEvent()
_SEQ_START, _SEQ_END = SequenceStartEvent(None, _SEQ, True, flow_style=False), SequenceEndEvent()
#: The scalar events of booleans and None (each text resolves to its own tag: written plain).
_CONSTANTS = {True: ScalarEvent(None, _BOOL, (True, False), "true"),
              False: ScalarEvent(None, _BOOL, (True, False), "false"),
              None: ScalarEvent(None, _NULL, (True, False), "null")}


def dump_documents(docs: Iterable[Any], stream: TextIO) -> None:
    """Write ``docs`` to ``stream`` as ``yaml.dump_all(docs, stream, Dumper=SAFE_DUMPER, sort_keys=False)`` does, one
    document at a time: a plain document (dicts, lists, strings, integers, booleans, None, no part twice) as the
    events PyYAML's serializer would send its C emitter, sent directly (each distinct scalar's event made once),
    anything else through PyYAML's representer.  Raises PyYAML's errors (an object it cannot represent)."""
    dumper = ManifestDumper(stream, default_flow_style=False, sort_keys=False)
    scalars: dict[Any, ScalarEvent] = {}
    try:
        dumper.open()
        emit = dumper.emit
        for doc in docs:
            events: list[Event] = [_DOCUMENT_START]
            try:
                _events(doc, events, scalars, dumper, set())
            except _NotPlain:
                dumper.represent(doc)
                continue
            events.append(_DOCUMENT_END)
            for event in events:
                emit(event)
        dumper.close()
    finally:
        dumper.dispose()


def _events(data: Any, events: list[Event], scalars: dict[Any, ScalarEvent], dumper: Any, seen: set[int]) -> None:
    """Append to ``events`` those PyYAML's serializer emits for ``data`` (a scalar's implicit flags as its resolver
    decides them: a string that would read back as another type is quoted); raises :class:`_NotPlain` for what
    its representer must make."""
    kind = type(data)
    if kind is str or kind is int:
        event = scalars.get(data) if kind is str else scalars.get((data,))
        if event is None:
            if len(scalars) >= _MAX_RESOLVED:
                scalars.clear()
            if kind is str:
                plain = dumper.resolve(ScalarNode, data, (True, False)) == _STR
                event = scalars[data] = ScalarEvent(None, _STR, (plain, True), data)
            else:
                event = scalars[(data,)] = ScalarEvent(None, _INT, (True, False), str(data))
        events.append(event)
    elif kind is dict:
        if id(data) in seen:
            raise _NotPlain  # written as an anchor and its aliases
        seen.add(id(data))
        events.append(_MAP_START)
        for key, value in data.items():
            if type(key) is not str:
                raise _NotPlain
            _events(key, events, scalars, dumper, seen)
            _events(value, events, scalars, dumper, seen)
        events.append(_MAP_END)
    elif kind is list:
        if id(data) in seen:
            raise _NotPlain
        seen.add(id(data))
        events.append(_SEQ_START)
        for item in data:
            _events(item, events, scalars, dumper, seen)
        events.append(_SEQ_END)
    elif kind is bool or data is None:
        events.append(_CONSTANTS[data])
    else:
        raise _NotPlain
