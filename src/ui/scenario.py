"""What the UI simulates: the objects of ``-f`` DIR and the configuration, with the browser's edits on top.

A :class:`Scenario` is one complete input - every object in creation order,
the KubeSchedulerConfiguration's text and the ``--at``/``--delete-at``
changes - parsed once: re-simulating after an edit creates the already
parsed (immutable) objects again instead of reading the files.  The
:class:`History` keeps the scenario read from the files (its ``base``) and
the list of :class:`Edit` made since, with a cursor for undo and redo; a
file saved in DIR replaces the base and the edits apply on top of the new
one.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Iterable

import attrs

from kubesched.core.api import resource_of, to_manifest
from kubesched.core.api.manifests import (
    MAX_CONFIG_BYTES,
    InvalidManifest,
    decode,
    load_sourced_objects,
    load_yaml,
    load_yaml_documents,
    manifest_files,
    parse_document,
    read_file_bytes,
)
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import Registry
from kubesched.drivers.harness import check_configuration
from kubesched.plan.templates import NodeTemplate, split_templates

#: The kind an :class:`Edit` names to replace the configuration.
CONFIG_KIND = "KubeSchedulerConfiguration"

_serials = itertools.count(1)


@attrs.frozen
class TimedChange:
    """``--at OFFSET=FILE`` (``delete``: ``--delete-at``): ``offset`` seconds after the start."""

    offset: float
    path: Path
    delete: bool = False


def object_id(obj: Any) -> tuple[str, str]:
    """(kind, ``namespace/name`` or ``name``) of an API object; a namespaced
    object without a namespace is in ``default``, as the API server puts it."""
    resource = resource_of(obj)
    meta = obj.metadata
    if resource.namespaced:
        return resource.kind, f"{meta.namespace or 'default'}/{meta.name}"
    return resource.kind, meta.name


@attrs.frozen
class Scenario:
    """One input to simulate.  ``objects``: (source file, object) in creation
    order (pods are created after the rest by the run); ``config_text``: the
    KubeSchedulerConfiguration YAML ("" for the default profile);
    ``changes``: the timed changes; ``templates``: the node templates of ``kubesched plan``."""

    objects: tuple[tuple[str, Any], ...]
    config_text: str = ""
    changes: tuple[TimedChange, ...] = ()
    #: the Node manifests marked ``kubesched.io/node-template`` (never created; the Plan page adds copies)
    templates: tuple[NodeTemplate, ...] = ()

    def find(self, kind: str, key: str) -> Any | None:
        """The object of ``kind`` named ``key`` (``namespace/name`` or ``name``), or None."""
        for _, obj in self.objects:
            if object_id(obj) == (kind, key):
                return obj
        return None

    def config_dict(self) -> dict | None:
        """The configuration as a dict (None: the default profile)."""
        return load_yaml(self.config_text, "configuration") if self.config_text.strip() else None


def read_scenario(paths: Iterable[Path], config: Path | None, changes: Iterable[TimedChange],
                  registry: Registry | None = None) -> Scenario:
    """The scenario of the files: every object of ``paths`` (node templates apart), the ``config``
    file's text (its profiles' plugins built from ``registry`` as a run would), the ``changes`` (their files are
    read when a run applies them).  Raises :class:`InvalidManifest`, :class:`ConfigError` or ``PluginError``
    (naming the file) for bad input and :class:`ConfigError` for a missing file."""
    paths = list(paths)
    for path in paths:
        if not Path(path).exists():
            raise ConfigError(f"{path}: no such file or directory")
    templates, objects = split_templates(load_sourced_objects(paths))
    text = ""
    if config is not None:
        try:
            text = decode(read_file_bytes(config, MAX_CONFIG_BYTES), str(config))
        except InvalidManifest as err:
            raise ConfigError(str(err)) from None
        check_configuration(config, registry)  # refuses a bad file here, naming it
    changes = tuple(changes)
    for change in changes:
        load_sourced_objects([change.path])
    return Scenario(tuple(objects), text, changes, tuple(templates))


def watched_files(paths: Iterable[Path], config: Path | None, changes: Iterable[TimedChange]) -> dict[str, tuple]:
    """file -> (mtime_ns, size) of every input file (the manifests found in
    directories now, the configuration, the timed changes' files)."""
    files: list[Path] = []
    for path in [*paths, *(c.path for c in changes)]:
        try:
            files.extend(manifest_files(path))
        except (OSError, InvalidManifest):
            files.append(Path(path))
    if config is not None:
        files.append(Path(config))
    out: dict[str, tuple] = {}
    for file in files:
        try:
            stat = file.stat()
            out[str(file)] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            out[str(file)] = ()
    return out


@attrs.frozen
class Edit:
    """One change made in the browser: the object ``kind``/``key`` replaced by
    ``manifest`` (a manifest dict), created when it did not exist, or deleted
    (``manifest`` None); for :data:`CONFIG_KIND`, ``manifest`` is
    ``{"text": YAML}``.  ``label`` says what was done, for the history."""

    label: str
    kind: str
    key: str
    manifest: dict | None
    serial: int = attrs.field(factory=lambda: next(_serials))

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` with this edit made."""
        if self.kind == CONFIG_KIND:
            return attrs.evolve(scenario, config_text=(self.manifest or {}).get("text", ""))
        new = parse_document(self.manifest, "(edit)") if self.manifest is not None else None
        objects, replaced = [], False
        for file, obj in scenario.objects:
            if object_id(obj) != (self.kind, self.key):
                objects.append((file, obj))
            elif new is not None:
                objects.append((file, new))
                replaced = True
        if new is not None and not replaced:
            objects.append(("(edit)", new))
        return attrs.evolve(scenario, objects=tuple(objects))


def object_edit(label: str, kind: str, key: str, text: str) -> Edit:
    """The edit replacing object ``kind``/``key`` by the YAML ``text`` (one
    manifest; its kind and name must stay those of the object, or it is a new
    object when ``key`` is "").  Raises :class:`InvalidManifest` naming the
    object and field of a bad manifest."""
    where = f"{kind}/{key}" if key else "(new object)"
    try:
        doc = load_yaml(text, "(edit)")
    except InvalidManifest as err:
        raise InvalidManifest("(edit)", where, "", err.problem) from None
    if not isinstance(doc, dict):
        raise InvalidManifest("(edit)", where, "", "expected one manifest (a mapping with apiVersion and kind)")
    obj = parse_document(doc, "(edit)")
    new_id = object_id(obj)
    if key and new_id != (kind, key):
        raise InvalidManifest("(edit)", where, "metadata.name",
                              f"an edit keeps the object's kind and name (got {new_id[0]}/{new_id[1]})")
    return Edit(label or f"edit {new_id[0]}/{new_id[1]}", new_id[0], new_id[1], to_manifest(obj))


def import_edits(name: str, text: str) -> list[Edit]:
    """One edit per object of the manifests ``text`` (YAML or JSON, multi-document, ``kind: List``) read from the
    browser's file ``name``: each adds its object, or replaces the one of the same kind and name.  Raises
    :class:`InvalidManifest` naming the file, the object and the field of the first bad one (nothing is edited
    then)."""
    source = f"(import {name or 'file'})"
    documents = [doc for doc in load_yaml_documents(text, source) if doc is not None]  # bounded as any manifest
    flat = []
    for doc in documents:
        items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else None
        flat.extend(items if isinstance(items, list) else [doc])
    if not flat:
        raise InvalidManifest(source, "", "", "no object in the file")
    edits = []
    for doc in flat:
        if not isinstance(doc, dict):
            raise InvalidManifest(source, "", "", "expected manifests (mappings with apiVersion and kind)")
        obj = parse_document(doc, source)
        kind, key = object_id(obj)
        edits.append(Edit(f"import {name or 'file'}: {kind}/{key}", kind, key, to_manifest(obj)))
    return edits


def config_edit(text: str, registry: Registry | None = None) -> Edit:
    """The edit replacing the configuration by the YAML ``text`` ("" for the
    default profile).  Raises :class:`ConfigError` or ``PluginError`` for a bad configuration (its profiles'
    plugins are built from ``registry``, as a run would build them: an unknown plugin or argument is refused
    here, not recorded as an edit)."""
    if text.strip():
        try:
            data = load_yaml(text, "configuration")
        except InvalidManifest as err:
            raise ConfigError(str(err)) from None
        check_configuration(data, registry)
    return Edit("edit the configuration", CONFIG_KIND, "", {"text": text})


#: Edits kept for undo.  An older edit stays made (folded into the history's floor) but can no longer be undone.
MAX_EDITS = 100


class History:
    """The base scenario and the edits made since, with undo and redo.

    The scenario after each kept edit is kept too (they share their
    unchanged objects), so :meth:`current`, :meth:`key`, :meth:`undo` and
    :meth:`redo` cost the same after a thousand edits as after one, and
    :meth:`add` applies one edit.  At most :data:`MAX_EDITS` edits can be
    undone: beyond them the oldest is folded into the *floor* (the base
    with every folded edit made), where undo stops; the base itself (the
    files, with no edit) stays the baseline.  :attr:`base_version` grows
    when the files are read again (:meth:`replace_base`).  Not thread-safe:
    the server calls it from one thread at a time (under the
    :class:`~kubesched.ui.runs.Runs` lock).
    """

    def __init__(self, base: Scenario):
        self.base = base
        self.base_version = 1
        self.edits: list[Edit] = []
        self.cursor = 0
        #: edits folded into the floor, the last one per object (what they add up to), and how many there were
        self.folded: dict[tuple[str, str], Edit] = {}
        self.folded_count = 0
        self._floor_serial = 0
        #: the floor with the first i edits made, for i in 0..len(edits)
        self._scenarios: list[Scenario] = [base]

    def current(self) -> Scenario:
        """The scenario at the cursor: the floor with the edits not undone."""
        return self._scenarios[self.cursor]

    def key(self, upto: int | None = None) -> tuple[int, int]:
        """Identifies the scenario of the first ``upto`` kept edits (default:
        the cursor) over this base: (base version, serial of its last edit)."""
        upto = self.cursor if upto is None else upto
        return self.base_version, self.edits[upto - 1].serial if upto else self._floor_serial

    def baseline_key(self) -> tuple[int, int]:
        """Identifies the base scenario (the files, no edit)."""
        return self.base_version, 0

    def scenario_for(self, key: tuple) -> Scenario | None:
        """The scenario :meth:`key` or :meth:`baseline_key` named (None: no longer in the history)."""
        if key == self.baseline_key():
            return self.base
        return next((scenario for upto, scenario in enumerate(self._scenarios) if self.key(upto) == key), None)

    def add(self, edit: Edit) -> None:
        """Make ``edit`` on the current scenario, dropping the edits undone
        before it (raises :class:`InvalidManifest` when it does not apply)."""
        scenario = edit.apply(self.current())
        del self.edits[self.cursor:]
        del self._scenarios[self.cursor + 1:]
        self.edits.append(edit)
        self._scenarios.append(scenario)
        self.cursor += 1
        while len(self.edits) > MAX_EDITS:
            oldest = self.edits.pop(0)
            self._scenarios.pop(0)
            self.folded.pop((oldest.kind, oldest.key), None)  # the object's last edit goes last
            self.folded[(oldest.kind, oldest.key)] = oldest
            self.folded_count += 1
            self._floor_serial = oldest.serial
            self.cursor -= 1

    def deleting_edit(self, kind: str, key: str) -> Edit | None:
        """The latest edit before the cursor that deleted object ``kind``/``key`` and that no later one brought
        back; None when the edits did not delete it."""
        for edit in reversed(self.edits[:self.cursor]):
            if (edit.kind, edit.key) == (kind, key):
                return edit if edit.manifest is None else None
        return None

    def undo(self) -> bool:
        """Move the cursor back one edit; False at the floor."""
        if self.cursor == 0:
            return False
        self.cursor -= 1
        return True

    def redo(self) -> bool:
        """Move the cursor forward one edit; False when no undone edit is left."""
        if self.cursor == len(self.edits):
            return False
        self.cursor += 1
        return True

    def replace_base(self, base: Scenario) -> None:
        """The files changed: ``base`` is what they hold now; the edits (folded or not) are made again on it."""
        self.base = base
        self.base_version += 1
        scenario = base
        for edit in self.folded.values():
            scenario = edit.apply(scenario)
        self._scenarios = [scenario]
        for edit in self.edits:
            scenario = edit.apply(scenario)
            self._scenarios.append(scenario)
