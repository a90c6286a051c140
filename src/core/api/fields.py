"""Unknown fields in a manifest, as kube-apiserver's strict field validation finds them.

kube-apiserver decodes a request with ``fieldValidation``: ``Strict`` refuses
an object with a field its kind does not define (``strict decoding error:
unknown field "spec.nodeSelectr"``), ``Warn`` (the server's default for a
client that names none) stores it and answers with a warning, ``Ignore`` drops
it.  kubectl asks for ``Strict`` by default (``--validate=strict``), so a
manifest applied with kubectl is refused; kubesched reads manifests as kubectl
applies them and refuses them too (:func:`unknown_fields` is called by
:func:`~kubesched.core.api.manifests.parse_document`).  Objects read back from
an API server are never checked: a newer server may have newer fields.

The field names of each kind and apiVersion come from ``fields.json``,
generated from the official Kubernetes client's models (the API server's
OpenAPI document) by ``tools/generate_api_fields.py``.  Kinds at versions that
client no longer carries (``resource.k8s.io/v1alpha3``) are not checked.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

#: the unknown fields named in one message at most (upstream names them all)
SHOWN = 5


@functools.cache
def _table() -> dict[str, Any]:
    return json.loads((Path(__file__).parent / "fields.json").read_text())


def unknown_fields(doc: dict) -> list[str]:
    """The paths of the fields ``doc`` (a manifest with apiVersion and kind)
    has that its kind does not define at its apiVersion, in document order:
    ``["spec.nodeSelectr", "spec.containers[0].imag"]``.  Empty for a kind or
    version without field names (see the module docstring)."""
    table = _table()
    root = table["kinds"].get(f"{doc.get('apiVersion')}/{doc.get('kind')}")
    if root is None:
        return []
    models = table["models"]
    found: list[str] = []
    stack: list[tuple[Any, str, str]] = [(doc, root, "")]
    while stack:
        value, model, path = stack.pop()
        if not isinstance(value, dict):
            continue  # a type error is the decoder's to report
        fields = models[model]
        children = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in fields:
                found.append(where)
                continue
            ref = fields[key]
            if ref is None:
                continue
            if ref.startswith("[]") and isinstance(item, list):
                children += [(element, ref[2:], f"{where}[{i}]") for i, element in enumerate(item)]
            elif ref.startswith("{}") and isinstance(item, dict):
                children += [(element, ref[2:], f"{where}[{name}]") for name, element in item.items()]
            elif not ref.startswith(("[]", "{}")):
                children.append((item, ref, where))
        stack.extend(reversed(children))
    return found


def strict_decoding_error(paths: list[str]) -> str:
    """kube-apiserver's message for ``paths`` (at most :data:`SHOWN` named)."""
    named = ", ".join(f'unknown field "{path}"' for path in paths[:SHOWN])
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return f"strict decoding error: {named}{more}"
