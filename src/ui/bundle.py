"""Export: the current state as a bundle that ``kubesched ui -f BUNDLE/`` opens again.

A bundle is a directory (downloaded as a zip holding it)::

    kubesched-bundle/
      kubesched-ui.yaml      what the rest is: the configuration file, the timed changes
      manifests/objects.yaml every object of the scenario, edits applied (the input, not the final state)
      config.yaml            the KubeSchedulerConfiguration, when there is one
      at/NN-<file>           each --at / --delete-at file
      decisions.jsonl        the decision record of the run (``kubesched explain --from``, ``kubesched report``)
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path, PurePosixPath, PureWindowsPath

import yaml

from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, dump_yaml, read_file_bytes, read_yaml

from .outcome import Outcome
from .scenario import Scenario, TimedChange

#: The file that makes a directory a bundle.
MARKER = "kubesched-ui.yaml"
#: The directory inside the zip.
ROOT = "kubesched-bundle"


def bundle_zip(scenario: Scenario, outcome: Outcome | None) -> bytes:
    """The zip of a bundle of ``scenario`` (and ``outcome``'s decisions).  Raises
    :class:`InvalidManifest` when a timed change's file can no longer be read."""
    changes = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{ROOT}/manifests/objects.yaml", dump_yaml(obj for _, obj in scenario.objects))
        if scenario.config_text.strip():
            archive.writestr(f"{ROOT}/config.yaml", scenario.config_text)
        for i, change in enumerate(scenario.changes):
            name = f"at/{i:02d}-{change.path.name}"
            archive.writestr(f"{ROOT}/{name}", read_file_bytes(change.path))
            changes.append({"offset": change.offset, "file": name, "delete": change.delete})
        if outcome is not None:
            archive.writestr(f"{ROOT}/decisions.jsonl",
                             "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in outcome.records))
        marker = {"manifests": "manifests", "config": "config.yaml" if scenario.config_text.strip() else None,
                  "changes": changes}
        archive.writestr(f"{ROOT}/{MARKER}", yaml.safe_dump(marker, sort_keys=False))
    return buffer.getvalue()


def read_bundle(directory: Path) -> tuple[list[Path], Path | None, list[TimedChange]] | None:
    """(manifest paths, configuration, timed changes) of a bundle directory;
    None when ``directory`` is not one.  Every file it names must be inside
    the bundle: an absolute path, ``..`` or a link leading out is refused.
    Raises ValueError naming the marker file and the entry, in one line."""
    marker = directory / MARKER
    if not os.path.lexists(marker):
        return None
    _inside(directory, marker, "(the bundle's index)", MARKER)
    try:
        data = read_yaml(marker, MAX_CONFIG_BYTES)
    except InvalidManifest as err:
        raise ValueError(f"{marker}: not a kubesched ui bundle: {err.problem}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{marker}: not a kubesched ui bundle: expected a mapping")
    changes = data.get("changes") or []
    if not isinstance(changes, list):
        raise ValueError(f"{marker}: changes: expected a list")
    try:
        config = _inside(directory, marker, "config", data["config"]) if data.get("config") else None
        timed = [TimedChange(float(c["offset"]), _inside(directory, marker, f"changes[{i}].file", c["file"]),
                             bool(c.get("delete"))) for i, c in enumerate(changes)]
        return [_inside(directory, marker, "manifests", data.get("manifests", "manifests"))], config, timed
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{marker}: not a kubesched ui bundle: {type(err).__name__}: {err}") from None


def _inside(directory: Path, marker: Path, field: str, entry: object) -> Path:
    """The bundle's file ``entry`` (a relative path) when it stays inside ``directory``; ValueError otherwise."""
    if not isinstance(entry, str) or not entry:
        raise ValueError(f"{marker}: {field}: expected a path inside the bundle, got {entry!r}")
    relative = PurePosixPath(entry)
    root = directory.resolve()
    path = directory / entry
    if relative.is_absolute() or PureWindowsPath(entry).is_absolute() or ".." in relative.parts or "\\" in entry \
            or "\x00" in entry or not path.resolve().is_relative_to(root):
        raise ValueError(f"{marker}: {field}: {entry!r} is outside the bundle (absolute paths, '..' and links "
                         f"leading out are refused)")
    return path
