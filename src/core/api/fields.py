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


#: a field's type in ``fields.json``: None (a scalar), a model name, ``[]model`` (a list of it) or ``{}model`` (a map)
_SCALAR, _OBJECT, _LIST, _MAP = range(4)


@functools.cache
def _checks() -> dict[str, tuple[frozenset[str], dict[str, tuple[int, str]]]]:
    """model -> (its field names, its fields that hold models: name -> (how, that model)), for :func:`_any_unknown`."""
    _, models = _table()
    return {name: (frozenset(fields), {key: entry for key, entry in fields.items() if entry[0] != _SCALAR})
            for name, fields in models.items()}


@functools.cache
def _table() -> tuple[dict[str, str], dict[str, dict[str, tuple[int, str]]]]:
    """(kind -> its model, model -> field -> (how the value holds the field's model, that model))."""
    table = json.loads((Path(__file__).parent / "fields.json").read_text())

    def field(ref: str | None) -> tuple[int, str]:
        if ref is None:
            return _SCALAR, ""
        if ref.startswith("[]"):
            return _LIST, ref[2:]
        if ref.startswith("{}"):
            return _MAP, ref[2:]
        return _OBJECT, ref

    models = {name: {key: field(ref) for key, ref in fields.items()} for name, fields in table["models"].items()}
    return table["kinds"], models


def unknown_fields(doc: dict) -> list[str]:
    """The paths of the fields ``doc`` (a manifest with apiVersion and kind)
    has that its kind does not define at its apiVersion: those of each mapping
    before those below it, in document order, e.g. ``["spec.nodeSelectr",
    "spec.containers[0].imag"]``.  Empty for a kind or version without field
    names (see the module docstring)."""
    kinds, models = _table()
    root = kinds.get(f"{doc.get('apiVersion')}/{doc.get('kind')}")
    if root is None or not _any_unknown(doc, root, _checks()):
        return []
    return _unknown(doc, root, models)


def _any_unknown(value: dict, model: str, checks: dict[str, tuple[frozenset[str], dict[str, tuple[int, str]]]],
                 ) -> bool:
    """Whether :func:`_unknown` finds anything below ``value`` (of ``model``): each mapping's keys compared with
    its model's as sets, and only the fields holding models walked (most manifests have no unknown field)."""
    names, nested = checks[model]
    if not value.keys() <= names:
        return True
    for key in value.keys() & nested.keys():
        holds, ref = nested[key]
        item = value[key]
        if holds == _OBJECT:
            items: Any = (item,)
        elif holds == _LIST and isinstance(item, list):
            items = item
        elif holds == _MAP and isinstance(item, dict):
            items = item.values()
        else:
            continue
        for element in items:
            if isinstance(element, dict) and _any_unknown(element, ref, checks):
                return True
    return False


def _unknown(value: dict, model: str, models: dict[str, dict[str, tuple[int, str]]]) -> list[str]:
    """:func:`unknown_fields` below ``value`` (of ``model``), paths relative to it."""
    fields = models[model]
    found: list[str] = []
    below: list[tuple[Any, str, str]] = []  # (value, its model, its path)
    for key, item in value.items():
        entry = fields.get(key) if type(key) is str else None
        if entry is None:
            found.append(str(key))
            continue
        holds, ref = entry
        if holds == _OBJECT:
            below.append((item, ref, key))
        elif holds == _LIST and isinstance(item, list):
            below += [(element, ref, f"{key}[{i}]") for i, element in enumerate(item)]
        elif holds == _MAP and isinstance(item, dict):
            below += [(element, ref, f"{key}[{name}]") for name, element in item.items()]
    for item, ref, path in below:
        if isinstance(item, dict):  # anything else is a type error, the decoder's to report
            found += [f"{path}.{inner}" for inner in _unknown(item, ref, models)]
    return found


def strict_decoding_error(paths: list[str]) -> str:
    """kube-apiserver's message for ``paths`` (at most :data:`SHOWN` named)."""
    named = ", ".join(f'unknown field "{path}"' for path in paths[:SHOWN])
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return f"strict decoding error: {named}{more}"
