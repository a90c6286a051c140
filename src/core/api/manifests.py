"""Reading manifests: YAML or JSON files, multi-document, ``kind: List``, directories.

Every problem is an :class:`InvalidManifest` that names the file, the object and
the field, e.g. ``examples/cluster/pods.yaml: Pod/web-1: spec.priority: expected
an integer, got 'hi'``.
"""

from __future__ import annotations

import codecs
import io
import itertools
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

import numpy as np
import orjson
import yaml

from kubesched.core.api import ManifestError, from_manifest, to_manifest
from kubesched.core.api.convert import printable
from kubesched.core.api.fields import strict_decoding_error, unknown_fields
from kubesched.core.api.yaml_documents import (
    SAFE_LOADER,
    SMALL_DOCUMENT,
    documents,
    dump_documents,
    manifest_documents,
)

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: Deepest nesting of mappings and lists a manifest may have (Kubernetes objects need about 20).
MAX_DEPTH = 100
#: Most values a document may expand to through YAML aliases (a "billion laughs" stops here).
MAX_VALUES = 2_000_000
#: The largest manifest file read (bytes); each object in it is bounded by the API server's limits below.
MAX_FILE_BYTES = 1024 * 1024 * 1024
#: The largest configuration file read (bytes): a KubeSchedulerConfiguration, a ``kubesched ui`` bundle's
#: index (the size kube-apiserver allows a request body, :data:`MAX_REQUEST_BYTES`).
MAX_CONFIG_BYTES = 3 * 1024 * 1024


class InvalidManifest(ValueError):
    """A manifest kubesched refuses: ``file``, ``obj`` (``Kind/name``), ``field``, ``problem``."""

    def __init__(self, file: str, obj: str, field: str, problem: str):
        parts = [p for p in (file, obj, field) if p]
        super().__init__(": ".join(parts + [problem]))
        self.file, self.obj, self.field, self.problem = file, obj, field, problem


def manifest_files(path: str | Path) -> list[Path]:
    """The manifest files at ``path``: the file itself, or every ``*.yaml``,
    ``*.yml`` and ``*.json`` below a directory, sorted.  Raises
    :class:`InvalidManifest` when the path does not exist (a path that is not
    a regular file is refused when it is read, :func:`read_file_bytes`)."""
    path = Path(path)
    try:
        os.stat(path)
    except (OSError, ValueError):
        raise InvalidManifest(str(path), "", "", "no such file or directory") from None
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    return [path]


_FILE_TYPES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def read_file_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: the one
    way kubesched reads a file it is given (manifests, configurations, bundles,
    the UI's).  A directory, a FIFO, a device (``/dev/zero``) or a socket is
    refused at once, before it is opened for reading (a FIFO would block); a
    larger file is refused without reading it past ``limit``.  Raises
    :class:`InvalidManifest` naming the file."""
    file = str(path)
    try:
        info = os.stat(path)
        kind = next((name for test, name in _FILE_TYPES if test(info.st_mode)), "")
        if kind or not stat.S_ISREG(info.st_mode):
            raise InvalidManifest(file, "", "", f"cannot read: not a regular file ({kind or 'a special file'})")
        if info.st_size > limit:
            raise InvalidManifest(file, "", "", f"cannot read: {info.st_size} bytes, more than the {limit} allowed")
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(descriptor, "rb") as handle:  # closes the descriptor
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise InvalidManifest(file, "", "", "cannot read: not a regular file (replaced while opened)")
            data = handle.read(limit + 1)
    except InvalidManifest:
        raise
    except OSError as err:
        raise InvalidManifest(file, "", "", f"cannot read: {err.strerror or err}") from None
    except ValueError:  # a NUL character in the path
        raise InvalidManifest(file, "", "", "cannot read: the path holds a NUL character") from None
    if len(data) > limit:
        raise InvalidManifest(file, "", "", f"cannot read: more than the {limit} bytes allowed (the file grew)")
    return data


def read_yaml(path: str | Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """The one YAML document of the file ``path`` (a configuration, an index),
    read by :func:`read_file_bytes` and parsed by :func:`load_yaml`.  Raises
    :class:`InvalidManifest` naming the file."""
    file = str(path)
    return load_yaml(decode(read_file_bytes(path, limit), file), file)


def load_yaml(text: str, file: str) -> Any:
    """The one YAML document of ``text`` (None when empty), within the bounds
    of manifests: nesting at most :data:`MAX_DEPTH` deep, aliases expanding to
    at most :data:`MAX_VALUES` values.  Raises :class:`InvalidManifest` naming
    ``file``, for a second document too."""
    documents = list(itertools.islice(load_yaml_documents(text, file), 2))
    if len(documents) > 1:
        raise InvalidManifest(file, "", "", "cannot parse: expected one YAML document, found more")
    return documents[0] if documents else None


def load_yaml_documents(text: str, file: str) -> Iterator[Any]:
    """The YAML documents of ``text`` one at a time, each within the bounds of
    :func:`load_yaml` (a document nested too deep is refused before it is
    built: PyYAML's C loader builds nested nodes by recursion and would crash).
    Raises :class:`InvalidManifest` naming ``file``."""
    return (doc for doc, _ in _bounded_documents(text, file))


def _bounded_documents(text: str, file: str, manifests: bool = False,
                       ) -> Iterator[tuple[Any, dict[int, tuple[int, int, int]]]]:
    """(document, its :func:`_sizes`) for each YAML document of ``text`` within the bounds (:func:`load_yaml`),
    parsed by :func:`~.yaml_documents.documents` or, for ``manifests``, its faster
    :func:`~.yaml_documents.manifest_documents` (whose small documents need no measuring: their sizes are
    left empty)."""
    parsed = manifest_documents(text) if manifests else ((doc, plain, 0) for doc, plain in documents(text))
    try:
        _refuse_deep_nesting(text, file)
        for doc, plain, characters in parsed:
            if 0 < characters <= SMALL_DOCUMENT:
                yield doc, {}
                continue
            sizes = _tree_sizes(doc) if plain else _sizes(doc)
            values, depth, _ = sizes.get(id(doc), (1, 0, 0))
            if depth > MAX_DEPTH:
                raise InvalidManifest(file, "", "", f"nested deeper than {MAX_DEPTH} levels ({depth})")
            if values > MAX_VALUES:
                raise InvalidManifest(file, "", "", f"the document expands to {values} values through YAML "
                                                    f"aliases (at most {MAX_VALUES})")
            yield doc, sizes
    except yaml.YAMLError as err:
        raise InvalidManifest(file, "", "", f"cannot parse: {parse_problem(err)}") from None
    except RecursionError:
        raise InvalidManifest(file, "", "", f"cannot parse: nested deeper than {MAX_DEPTH} levels") from None


#: How deep :func:`_refuse_deep_nesting` counts a document's nesting before it refuses without the number.
_COUNTED_DEPTH = 10 * MAX_DEPTH
#: Every byte but YAML's flow brackets (deleted to count nesting).
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"[]{}")


def _refuse_deep_nesting(text: str, file: str) -> None:
    """Refuse YAML nested deeper than :data:`MAX_DEPTH` before it is parsed.
    A cheap bound first - the most flow brackets open at once, plus two levels
    per character of a line's leading spaces and ``-``/``?`` indicators (block
    nesting needs one of them per level) - and only when that bound is over
    the limit, the parser's events counted for the true depth."""
    brackets = np.frombuffer(text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS), np.uint8)
    flow = int(np.cumsum(1 - 2 * np.isin(brackets, (ord("]"), ord("}")))).max()) if len(brackets) else 0
    widest = (MAX_DEPTH - 2 - flow) // 2  # the widest line prefix the bound allows
    wider = re.compile(r"[ ?-]{%d}" % (widest + 1)) if widest >= 0 else None
    if wider is not None and not wider.match(text) and not re.search(r"\n" + wider.pattern, text):
        return
    depth = deepest = 0
    for event in yaml.parse(text, Loader=SAFE_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > _COUNTED_DEPTH:  # the parser slows down with depth: stop counting
                raise InvalidManifest(file, "", "", f"nested deeper than {MAX_DEPTH} levels "
                                                    f"(more than {_COUNTED_DEPTH})")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.DocumentEndEvent) and deepest > MAX_DEPTH:
            break
    if deepest > MAX_DEPTH:
        raise InvalidManifest(file, "", "", f"nested deeper than {MAX_DEPTH} levels ({deepest})")


def read_documents(path: Path) -> Iterator[dict]:
    """The object documents of one file, with ``kind: List`` items flattened,
    read one document at a time (a large file is never held as Python
    objects all at once).  UTF-8, or UTF-16/32 with a byte order mark; any
    other bytes are refused naming the encoding.  In YAML, nesting deeper than
    :data:`MAX_DEPTH` and aliases that expand past :data:`MAX_VALUES` values
    are refused (:class:`InvalidManifest`); JSON nested beyond what the parser
    can take is refused too.  An object over :data:`MAX_REQUEST_BYTES` as JSON
    is refused as kube-apiserver refuses its request body, one over
    :data:`MAX_OBJECT_BYTES` as etcd refuses to store it (after the API
    server's validation, whose problems come first); a file over
    :data:`MAX_FILE_BYTES` or not a regular file is refused unread
    (:func:`read_file_bytes`)."""
    file = str(path)
    try:
        text = decode(read_file_bytes(path), file)
        if path.suffix == ".json":
            doc = json.loads(text)  # no aliases; json.loads stops deep nesting itself (RecursionError below)
            sizes = _tree_sizes(doc)
            depth = sizes.get(id(doc), (1, 0, 0))[1]
            if depth > MAX_DEPTH:
                raise InvalidManifest(file, "", "", f"nested deeper than {MAX_DEPTH} levels ({depth})")
            documents: Iterable[tuple[Any, dict[int, tuple[int, int, int]]]] = [(doc, sizes)]
        else:
            _refuse_oversized_documents(text, file)
            documents = _bounded_documents(text, file, manifests=True)
        for doc, sizes in documents:
            for item in _flatten(doc, file):
                _check_size(item, sizes.get(id(item), (0, 0, 0))[2], file)
                yield item
    except json.JSONDecodeError as err:
        raise InvalidManifest(file, "", "", f"cannot parse: {parse_problem(err)}") from None
    except RecursionError:
        raise InvalidManifest(file, "", "", f"cannot parse: nested deeper than {MAX_DEPTH} levels") from None


def parse_problem(err: Exception) -> str:
    """A YAML or JSON parser's complaint in one line: PyYAML's span three
    (with a caret under the place), and name the text as "<unicode string>"."""
    problem = " ".join(str(err).replace(' in "<unicode string>"', "").split()).replace(" ,", ",")
    if "maximum nesting depth" in problem:  # newer PyYAML stops at 1000 levels itself
        problem = f"nested deeper than {MAX_DEPTH} levels"
    return problem


#: byte order marks -> the encoding they announce (UTF-32 before UTF-16: FF FE 00 00 starts with FF FE)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode(data: bytes, file: str) -> str:
    """The text of a manifest or configuration file: UTF-8, or UTF-16/UTF-32
    announced by a byte order mark (as YAML allows).  Raises
    :class:`InvalidManifest` naming the encoding the bytes are not, and UTF-16
    written without a byte order mark, which reads as text with NUL characters."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    label = {"utf-8-sig": "UTF-8"}.get(encoding, encoding.upper())
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise InvalidManifest(file, "", "", f"cannot read: not {label} text: byte 0x{data[err.start]:02x} at offset "
                                            f"{err.start} is invalid in {label} (save the file as UTF-8)") from None
    if "\x00" in text:
        raise InvalidManifest(file, "", "", "cannot read: the text holds NUL characters: UTF-16 or UTF-32 without a "
                                            "byte order mark? (save the file as UTF-8)")
    return text


#: kube-apiserver refuses a request body (one object as JSON) larger than this: 413 (MaxRequestBodyBytes, 3 MiB)
MAX_REQUEST_BYTES = 3 * 1024 * 1024
#: etcd refuses to store an object larger than this (its default --max-request-bytes, 1.5 MiB)
MAX_OBJECT_BYTES = 1536 * 1024


_DOCUMENT_START = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.M)
_LIST_KIND = re.compile(r"^kind:[ \t]*[\"']?\w*List[\"']?[ \t]*$", re.M)
_KIND = re.compile(r"^kind:[ \t]*[\"']?([\w.-]+)", re.M)
_NAME = re.compile(r"^metadata:[ \t]*(?:\{[ \t]*|\n(?:[ \t]+.*\n)*?[ \t]+)name:[ \t]*[\"']?([^\"',}\s#]+)", re.M)


def _refuse_oversized_documents(text: str, file: str) -> None:
    """Refuse a YAML document (not a ``kind: List``) whose text alone is over
    :data:`MAX_REQUEST_BYTES` before it is parsed: PyYAML holds a document's
    whole node graph, dozens of times its text, and no such object can be sent
    to an API server.  Documents start at ``---`` in the first column."""
    if len(text) <= MAX_REQUEST_BYTES:
        return
    starts = [0, *(m.start() for m in _DOCUMENT_START.finditer(text)), len(text)]
    for begin, end in zip(starts, starts[1:]):
        if end - begin <= MAX_REQUEST_BYTES:
            continue
        document = text[begin:end]
        if _LIST_KIND.search(document):
            continue  # a List's items are sent one by one, and measured once parsed
        kind, name = _KIND.search(document), _NAME.search(document)
        label = f"{kind[1] if kind else '?'}/{name[1] if name else ''}"
        raise InvalidManifest(file, label, "", f"Request entity too large: limit is {MAX_REQUEST_BYTES} "
                                               f"(the document is {len(document.encode())} bytes of YAML)")


def _check_size(doc: dict, size: int, file: str) -> None:
    """Refuse an object as large as the API server or etcd would (sizes as JSON, estimated by :func:`_sizes`)."""
    if size <= MAX_OBJECT_BYTES:
        return
    if size > MAX_REQUEST_BYTES:
        raise InvalidManifest(file, object_label(doc), "", f"Request entity too large: limit is {MAX_REQUEST_BYTES} "
                                                           f"(the object is about {size} bytes as JSON)")
    from .validation import problems  # the API server validates before it stores

    found = problems(parse_document(doc, file))
    if found:
        raise InvalidManifest(file, object_label(doc), "", "; ".join(found))
    raise InvalidManifest(file, object_label(doc), "", f"etcdserver: request is too large (the object is about "
                                                       f"{size} bytes as JSON, etcd stores at most {MAX_OBJECT_BYTES})")


def measure(doc: Any) -> tuple[int, int]:
    """(values, depth) of a loaded document as if its shared parts (YAML
    aliases) were copied out, computed without copying (:func:`_sizes`)."""
    values, depth, _ = _sizes(doc).get(id(doc), (1, 0, 0))
    return values, depth


def _sizes(doc: Any) -> dict[int, tuple[int, int, int]]:
    """id -> (values, depth, bytes) of every mapping and list in a loaded
    document, as if its shared parts (YAML aliases) were copied out: bytes is
    about its length as compact JSON.  Each mapping or list is measured once,
    iteratively, so any depth and any alias bomb is safe to measure."""
    sizes: dict[int, tuple[int, int, int]] = {}
    visiting: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in sizes:
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if not children_done:
            if id(node) in visiting:
                continue  # a cycle (an alias inside its own anchor), or measured on another path already
            visiting.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if isinstance(child, (dict, list)))
            continue
        values, depth = 1, 1
        size = 2 + len(children) + (sum(len(str(key)) + 3 for key in node) if isinstance(node, dict) else 0)
        for child in children:
            if isinstance(child, (dict, list)):
                child_values, child_depth, child_size = sizes.get(id(child), (1, 1, 2))  # a cycle is cut here
                values += child_values
                depth = max(depth, child_depth + 1)
                size += child_size
            else:
                values += 1
                size += len(child) + 2 if isinstance(child, str) else 5
        sizes[id(node)] = (values, depth, size)
    return sizes


#: How deep :func:`_tree_sizes` recurses before handing a document to :func:`_sizes`.
_TREE_DEPTH = 2 * MAX_DEPTH


class _TooDeep(Exception):
    pass


def _tree_sizes(doc: Any) -> dict[int, tuple[int, int, int]]:
    """:func:`_sizes` of a document ``json.loads`` made (no shared parts, string
    keys, exactly dicts, lists, strings, numbers, booleans and None), measured
    recursively, about three times as fast; a document nested deeper than
    :data:`_TREE_DEPTH` is measured by :func:`_sizes`."""
    sizes: dict[int, tuple[int, int, int]] = {}

    def walk(node: Any, level: int) -> tuple[int, int, int]:
        if level > _TREE_DEPTH:
            raise _TooDeep
        if type(node) is dict:
            children: Any = node.values()
            size = 2 + 4 * len(node) + sum(map(len, node))  # per key: its text, quotes, colon, comma
        else:
            children = node
            size = 2 + len(node)
        values, depth = 1 + len(node), 1  # a nested mapping or list adds its own values below
        for child in children:
            kind = type(child)
            if kind is str:
                size += len(child) + 2
            elif kind is dict or kind is list:
                child_values, child_depth, child_size = walk(child, level + 1)
                values += child_values - 1
                if child_depth >= depth:
                    depth = child_depth + 1
                size += child_size
            else:
                size += 5
        sizes[id(node)] = (values, depth, size)
        return values, depth, size

    if not isinstance(doc, (dict, list)):
        return sizes
    try:
        walk(doc, 0)
    except (_TooDeep, TypeError):  # TypeError: a key that is not a string (``1: a``)
        return _sizes(doc)
    return sizes


def _flatten(doc: Any, file: str) -> Iterator[dict]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise InvalidManifest(file, "", "", f"expected an object, got {type(doc).__name__}")
    if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InvalidManifest(file, f"{doc.get('kind')}/", "items", f"expected a list, got {type(items).__name__}")
        for item in items:
            yield from _flatten(item, file)
    else:
        yield doc


def object_label(doc: dict) -> str:
    """``Kind/name`` (or ``Kind/generateName*``) for messages."""
    metadata = doc.get("metadata")
    meta = metadata if isinstance(metadata, dict) else {}
    name = meta.get("name") or (f"{meta.get('generateName')}*" if meta.get("generateName") else "")
    return printable(f"{doc.get('kind', '?')}/{name}")


def parse_document(doc: dict, file: str = "") -> Any:
    """One manifest dict -> typed object, decoded as kubectl's default
    ``--validate=strict`` makes kube-apiserver decode it: a field the kind does
    not define is refused (:mod:`.fields`).  Raises :class:`InvalidManifest`."""
    try:
        obj = from_manifest(doc)
    except ManifestError as err:
        raise InvalidManifest(file, object_label(doc), err.field, err.problem) from None
    unknown = unknown_fields(doc)
    if unknown:
        raise InvalidManifest(file, object_label(doc), "", strict_decoding_error(unknown))
    if not obj.metadata.name and not obj.metadata.generate_name:
        raise InvalidManifest(file, object_label(doc), "metadata.name", "name or generateName is required")
    return obj


def load_sourced_objects(paths: Iterable[str | Path],
                         progress: Callable[[int], None] | None = None) -> list[tuple[str, Any]]:
    """``(file, object)`` for every object in the files and directories ``paths``,
    in file order; ``progress(objects read so far)`` every 500 objects.  Raises
    :class:`InvalidManifest` for the first bad file or object."""
    objects = []
    for path in paths:
        for file in manifest_files(path):
            for doc in read_documents(file):
                objects.append((str(file), parse_document(doc, str(file))))
                if progress is not None and len(objects) % 500 == 0:
                    progress(len(objects))
    return objects


def load_objects(paths: Iterable[str | Path]) -> list[Any]:
    """Every object in the files and directories ``paths``, in file order."""
    return [obj for _, obj in load_sourced_objects(paths)]


def dump_yaml(objects: Iterable[Any]) -> str:
    """Objects -> one multi-document YAML stream in Kubernetes shape."""
    out = io.StringIO()
    write_yaml(objects, out)
    return out.getvalue()


def write_yaml(objects: Iterable[Any], stream: TextIO) -> None:
    """Write objects to ``stream`` as one multi-document YAML stream in
    Kubernetes shape, one object at a time (never all in memory at once)."""
    dump_documents((to_manifest(o) for o in objects), stream)


def _indented_json(doc: Any) -> str:
    """``doc`` as JSON indented by two spaces, by orjson (about 25x faster than the json module, which indents in
    Python; non-ASCII characters written as UTF-8, as kubectl does); what orjson cannot write (an integer beyond 64
    bits) by the json module."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(doc, indent=2, ensure_ascii=False)


def write_json_list(objects: Iterable[Any], stream: TextIO) -> None:
    """Write objects to ``stream`` as a ``kind: List`` JSON document, one item at a time."""
    stream.write('{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [')
    for index, obj in enumerate(objects):
        item = _indented_json(to_manifest(obj)).replace("\n", "\n    ")
        stream.write(("," if index else "") + "\n    " + item)
    stream.write("\n  ]\n}\n")
