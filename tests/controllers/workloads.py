"""Manifests of workload objects for the workload controllers' tests."""

from __future__ import annotations

from typing import Any

from kubesched.core.api import from_manifest


def template(labels: dict[str, str], cpu: str = "100m", annotations: dict[str, str] | None = None,
             **spec: Any) -> dict:
    return {"metadata": {"labels": labels, "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def workload(kind: str, name: str, replicas: int | None = 3, cpu: str = "100m", **spec: Any) -> Any:
    labels = {"app": name}
    body: dict[str, Any] = {"selector": {"matchLabels": labels}, "template": template(labels, cpu), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return from_manifest({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"},
                          "spec": body})
