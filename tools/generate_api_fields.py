#!/usr/bin/env python3
"""Write src/core/api/fields.json: the field names of every kind kubesched reads,
at every apiVersion it reads, as the Kubernetes API defines them.

    pip install kubernetes && python tools/generate_api_fields.py

The names come from the official Kubernetes Python client's models, which are
generated from kube-apiserver's OpenAPI document (the client's version is
written into the file).  kubesched uses the table to refuse unknown fields in
manifests as kube-apiserver's strict field validation does
(core/api/fields.py); re-run this after a Kubernetes release adds fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes
import kubernetes.client as client

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/core/api/fields.json"
#: the client names a few models apart from the pattern V<version><Kind>
RENAMED = {("v1", "Event"): "CoreV1Event", ("resource.k8s.io/v1", "ResourceClaim"): "ResourceV1ResourceClaim"}
#: fields the API has that the client's models do not carry yet (model -> json key -> child reference):
#: written by kubesched itself, so a snapshot of its objects must read back (upstream 1.37 alpha fields)
NEWER_THAN_CLIENT = {"V1DeviceRequestAllocationResult": {"compatibilityGroups": None}}
CONTAINER = re.compile(r"^(List|Dict)\[(?:str, )?(.+)\]$")


def model_name(api_version: str, kind: str) -> str:
    version = api_version.rpartition("/")[2]
    return RENAMED.get((api_version, kind), version[:1].upper() + version[1:] + kind)


def walk(name: str, models: dict[str, dict]) -> None:
    """Every model reachable from ``name``: json key -> child reference (None: a value; "M": a model;
    "[]M": a list of models; "{}M": a map of models)."""
    if name in models:
        return
    cls = getattr(client, name)
    fields: dict[str, str | None] = {}
    models[name] = fields
    for attr, type_name in cls.openapi_types.items():
        container = CONTAINER.match(type_name)
        inner = container[2] if container else type_name
        if not hasattr(client, inner):
            fields[cls.attribute_map[attr]] = None
            continue
        walk(inner, models)
        prefix = {"List": "[]", "Dict": "{}"}.get(container[1], "") if container else ""
        fields[cls.attribute_map[attr]] = prefix + inner


def main() -> None:
    from kubesched.core.api import RESOURCES

    models: dict[str, dict] = {}
    kinds: dict[str, str] = {}
    for kind, resource in sorted(RESOURCES.items()):
        for api_version in (resource.api_version, *resource.older_versions):
            name = model_name(api_version, kind)
            if hasattr(client, name):
                walk(name, models)
                kinds[f"{api_version}/{kind}"] = name
    for name, extra in NEWER_THAN_CLIENT.items():
        models[name] = dict(sorted({**models[name], **extra}.items()))
    OUT.write_text(json.dumps({"source": f"kubernetes Python client {kubernetes.__version__}", "kinds": kinds,
                               "models": dict(sorted(models.items()))}, separators=(",", ":"), sort_keys=False)
                   + "\n")
    print(f"{OUT}: {len(kinds)} kinds, {len(models)} models, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
