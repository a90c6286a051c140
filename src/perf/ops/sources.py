"""Typed objects from scheduler_perf templates, and upstream's default node and pod.

:class:`ObjectSource` expands a template file (Go ``text/template`` with
``.Index``, ``.Count`` and the op's ``templateParams``), parses the YAML and
builds the typed object, refusing a wrong kind or a field the API would
refuse with the file named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.api import RESOURCES, ManifestError, from_manifest
from ...core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, decode, load_yaml, read_file_bytes
from ..errors import PerfConfigError
from ..template import load_template


def require_template_path(fields: dict[str, Any], where: str) -> None:
    """Refuses (:class:`PerfConfigError`) an op that takes its objects from a template but names none."""
    if not fields.get("templatePath"):
        raise PerfConfigError(f"{where}: templatePath must be set")


def default_node_manifest(prefix: str) -> dict[str, Any]:
    """Upstream's base node: 4 CPU, 32Gi, 110 pods, Ready, named ``<prefix><random>``."""
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {"capacity": capacity, "allocatable": dict(capacity), "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def default_pod_manifest() -> dict[str, Any]:
    """Upstream's base pod: one pause container requesting (and limited to) 100m CPU, 500Mi."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                 "ports": [{"containerPort": 80}],
                                 "resources": {"requests": dict(resources), "limits": dict(resources)}}]},
    }


def read_text(path: Path) -> str:
    """The file's text; :class:`PerfConfigError` naming it when it cannot be read."""
    try:
        return decode(read_file_bytes(path, MAX_CONFIG_BYTES), str(path))
    except InvalidManifest as err:
        raise PerfConfigError(str(err)) from None


class ObjectSource:
    """Typed objects from a template file (or a fixed manifest), one per index.

    ``kind`` is the kind expected (its apiVersion is assumed when the file
    does not say; a file of another kind is refused) or None for any
    modelled kind.  ``expand`` False reads the file as plain YAML (churn's
    templates are not expanded upstream).  A file without ``{{`` is parsed
    once.  Raises :class:`~kubesched.perf.template.TemplateError` /
    :class:`PerfConfigError` naming the file."""

    def __init__(self, path: Path | None, kind: str | None, params: dict[str, Any] | None = None,
                 manifest: dict[str, Any] | None = None, expand: bool = True):
        self.path = path
        self.kind = kind
        self.params = dict(params or {})
        self._manifest = manifest
        self._template = load_template(path) if path is not None and expand else None
        self._raw_text = None if path is None or expand else read_text(path)
        self._static: Any = None

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else f"default {self.kind}"

    def document(self, index: int = 0, count: int = 1) -> dict[str, Any]:
        """The manifest dict for object ``index`` of ``count``."""
        if self._manifest is not None:
            return self._manifest
        if self._template is not None:
            text = self._template.expand({**self.params, "Index": index, "Count": count})
        else:
            text = self._raw_text or ""
        try:
            doc = load_yaml(text, self.where)
        except InvalidManifest as err:
            raise PerfConfigError(f"{err} (the expanded template)") from None
        if not isinstance(doc, dict):
            raise PerfConfigError(f"{self.where}: expected one object, got {type(doc).__name__}")
        if self.kind is not None:
            doc.setdefault("apiVersion", RESOURCES[self.kind].api_version)
            doc.setdefault("kind", self.kind)
            if doc["kind"] != self.kind:
                raise PerfConfigError(f"{self.where}: expected a {self.kind}, got {doc['kind']}")
        return doc

    @property
    def static(self) -> bool:
        return self._manifest is not None or self._template is None or self._template.static

    def object(self, index: int = 0, count: int = 1) -> Any:
        """The typed object for ``index`` (the same object every time for a static source)."""
        if self._static is not None:
            return self._static
        doc = self.document(index, count)
        try:
            obj = from_manifest(doc)
        except ManifestError as err:
            field = f"{err.field}: " if err.field else ""
            raise PerfConfigError(f"{self.where}: {doc.get('kind')}: {field}{err.problem}") from None
        if self.static:
            self._static = obj
        return obj
