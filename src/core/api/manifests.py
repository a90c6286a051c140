"""Reading manifests: YAML or JSON files, multi-document, ``kind: List``, directories.

Every problem is an :class:`InvalidManifest` that names the file, the object and
the field, e.g. ``examples/cluster/pods.yaml: Pod/web-1: spec.priority: expected
an integer, got 'hi'``.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

import yaml

from kubesched.core.api import ManifestError, from_manifest, to_manifest
from kubesched.core.api.convert import printable
from kubesched.core.api.fields import strict_decoding_error, unknown_fields

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: PyYAML's C loader when it is built (about 8x faster on large files), else the Python one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Deepest nesting of mappings and lists a manifest may have (Kubernetes objects need about 20).
MAX_DEPTH = 100
#: Most values a document may expand to through YAML aliases (a "billion laughs" stops here).
MAX_VALUES = 2_000_000


class InvalidManifest(ValueError):
    """A manifest kubesched refuses: ``file``, ``obj`` (``Kind/name``), ``field``, ``problem``."""

    def __init__(self, file: str, obj: str, field: str, problem: str):
        parts = [p for p in (file, obj, field) if p]
        super().__init__(": ".join(parts + [problem]))
        self.file, self.obj, self.field, self.problem = file, obj, field, problem


def manifest_files(path: str | Path) -> list[Path]:
    """The manifest files at ``path``: the file itself, or every ``*.yaml``,
    ``*.yml`` and ``*.json`` below a directory, sorted.  Raises
    :class:`InvalidManifest` when the path does not exist."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    if path.is_file():
        return [path]
    raise InvalidManifest(str(path), "", "", "no such file or directory")


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
    server's validation, whose problems come first)."""
    file = str(path)
    try:
        text = decode(path.read_bytes(), file)
        if path.suffix == ".json":
            docs: Iterable[Any] = [json.loads(text)]
        else:
            _refuse_oversized_documents(text, file)
            docs = yaml.load_all(text, Loader=SAFE_LOADER)
        for doc in docs:
            # JSON has no aliases and json.loads stops deep nesting itself (RecursionError below)
            sizes = _tree_sizes(doc) if path.suffix == ".json" else _sizes(doc)
            values, depth, _ = sizes.get(id(doc), (1, 0, 0))
            if depth > MAX_DEPTH:
                raise InvalidManifest(file, "", "", f"nested deeper than {MAX_DEPTH} levels ({depth})")
            if values > MAX_VALUES and path.suffix != ".json":
                raise InvalidManifest(file, "", "", f"the document expands to {values} values through YAML "
                                                    f"aliases (at most {MAX_VALUES})")
            for item in _flatten(doc, file):
                _check_size(item, sizes.get(id(item), (0, 0, 0))[2], file)
                yield item
    except (yaml.YAMLError, json.JSONDecodeError) as err:
        raise InvalidManifest(file, "", "", f"cannot parse: {parse_problem(err)}") from None
    except OSError as err:
        raise InvalidManifest(file, "", "", f"cannot read: {err.strerror or err}") from None
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
    except _TooDeep:
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


#: PyYAML's C emitter when it is built, else the Python one.
SAFE_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(objects: Iterable[Any]) -> str:
    """Objects -> one multi-document YAML stream in Kubernetes shape."""
    out = io.StringIO()
    write_yaml(objects, out)
    return out.getvalue()


def write_yaml(objects: Iterable[Any], stream: TextIO) -> None:
    """Write objects to ``stream`` as one multi-document YAML stream in
    Kubernetes shape, one object at a time (never all in memory at once)."""
    yaml.dump_all((to_manifest(o) for o in objects), stream, Dumper=SAFE_DUMPER, sort_keys=False)


def write_json_list(objects: Iterable[Any], stream: TextIO) -> None:
    """Write objects to ``stream`` as a ``kind: List`` JSON document, one item at a time."""
    stream.write('{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [')
    for index, obj in enumerate(objects):
        item = json.dumps(to_manifest(obj), indent=2).replace("\n", "\n    ")
        stream.write(("," if index else "") + "\n    " + item)
    stream.write("\n  ]\n}\n")
