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
import zipfile
from pathlib import Path

import yaml

from kubesched.core.api.manifests import dump_yaml

from .outcome import Outcome
from .scenario import Scenario, TimedChange

#: The file that makes a directory a bundle.
MARKER = "kubesched-ui.yaml"
#: The directory inside the zip.
ROOT = "kubesched-bundle"


def bundle_zip(scenario: Scenario, outcome: Outcome | None) -> bytes:
    """The zip of a bundle of ``scenario`` (and ``outcome``'s decisions)."""
    changes = []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{ROOT}/manifests/objects.yaml", dump_yaml(obj for _, obj in scenario.objects))
        if scenario.config_text.strip():
            archive.writestr(f"{ROOT}/config.yaml", scenario.config_text)
        for i, change in enumerate(scenario.changes):
            name = f"at/{i:02d}-{change.path.name}"
            archive.writestr(f"{ROOT}/{name}", change.path.read_text())
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
    None when ``directory`` is not one.  Raises ValueError naming the marker
    file when it cannot be read."""
    marker = directory / MARKER
    if not marker.is_file():
        return None
    try:
        data = yaml.safe_load(marker.read_text())
        config = directory / data["config"] if data.get("config") else None
        changes = [TimedChange(float(c["offset"]), directory / c["file"], bool(c.get("delete")))
                   for c in data.get("changes") or []]
        return [directory / data.get("manifests", "manifests")], config, changes
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(f"{marker}: not a kubesched ui bundle: {err}") from None
