"""Reading manifests: YAML or JSON files, multi-document, ``kind: List``, directories.

Every problem is an :class:`InvalidManifest` that names the file, the object and
the field, e.g. ``examples/cluster/pods.yaml: Pod/web-1: spec.priority: expected
an integer, got 'hi'``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from kubesched.core.api import ManifestError, from_manifest, to_manifest

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
    """The object documents of one file, with ``kind: List`` items flattened.
    In YAML, nesting deeper than :data:`MAX_DEPTH` and aliases that expand past
    :data:`MAX_VALUES` values are refused (:class:`InvalidManifest`); JSON
    nested beyond what the parser can take is refused too (large JSON files,
    such as converted traces, are not walked again)."""
    try:
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.load_all(text, Loader=SAFE_LOADER))
    except (OSError, yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as err:
        text = " ".join(str(err).split())  # PyYAML's messages span lines: one line, as every refusal
        if "maximum nesting depth" in text:  # newer PyYAML stops at 1000 levels itself
            text = f"nested deeper than {MAX_DEPTH} levels"
        raise InvalidManifest(str(path), "", "", f"cannot parse: {text}") from None
    except RecursionError:
        raise InvalidManifest(str(path), "", "", f"cannot parse: nested deeper than {MAX_DEPTH} levels") from None
    for doc in docs:
        # JSON has no aliases and json.loads stops deep nesting itself (RecursionError above); YAML is measured
        values, depth = measure(doc) if path.suffix != ".json" else (0, 0)
        if depth > MAX_DEPTH:
            raise InvalidManifest(str(path), "", "", f"nested deeper than {MAX_DEPTH} levels ({depth})")
        if values > MAX_VALUES:
            raise InvalidManifest(str(path), "", "", f"the document expands to {values} values through YAML "
                                                     f"aliases (at most {MAX_VALUES})")
        yield from _flatten(doc, str(path))


def measure(doc: Any) -> tuple[int, int]:
    """(values, depth) of a loaded document as if its shared parts (YAML
    aliases) were copied out, computed without copying: each mapping or list
    is measured once.  Iterative, so any depth is safe to measure."""
    sizes: dict[int, tuple[int, int]] = {}
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
        for child in children:
            if isinstance(child, (dict, list)):
                child_values, child_depth = sizes.get(id(child), (1, 1))  # a cycle is cut here
                values += child_values
                depth = max(depth, child_depth + 1)
            else:
                values += 1
        sizes[id(node)] = (values, depth)
    return sizes.get(id(doc), (1, 0))


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
    name = meta.get("name") or (meta.get("generateName", "") + "*" if meta.get("generateName") else "")
    return f"{doc.get('kind', '?')}/{name}"


def parse_document(doc: dict, file: str = "") -> Any:
    """One manifest dict -> typed object; raises :class:`InvalidManifest`."""
    try:
        obj = from_manifest(doc)
    except ManifestError as err:
        raise InvalidManifest(file, object_label(doc), err.field, err.problem) from None
    if not obj.metadata.name and not obj.metadata.generate_name:
        raise InvalidManifest(file, object_label(doc), "metadata.name", "name or generateName is required")
    return obj


def load_sourced_objects(paths: Iterable[str | Path]) -> list[tuple[str, Any]]:
    """``(file, object)`` for every object in the files and directories ``paths``,
    in file order.  Raises :class:`InvalidManifest` for the first bad file or object."""
    objects = []
    for path in paths:
        for file in manifest_files(path):
            for doc in read_documents(file):
                objects.append((str(file), parse_document(doc, str(file))))
    return objects


def load_objects(paths: Iterable[str | Path]) -> list[Any]:
    """Every object in the files and directories ``paths``, in file order."""
    return [obj for _, obj in load_sourced_objects(paths)]


def dump_yaml(objects: Iterable[Any]) -> str:
    """Objects -> one multi-document YAML stream in Kubernetes shape."""
    return yaml.safe_dump_all([to_manifest(o) for o in objects], sort_keys=False)
