"""PATCH bodies: JSON merge patch (RFC 7386) and Kubernetes' strategic merge patch.

Both work on an object's manifest form (camelCase dicts, as the API server
sees JSON).  A merge patch merges maps key by key, ``null`` deletes a key and
a list replaces the list; it is applied by the ``json-merge-patch`` package.

A strategic merge patch (apimachinery's ``strategicpatch``, what
``kubectl patch`` and kube-scheduler's ``util.PatchPodStatus`` send) is a
merge patch that knows the API's lists: a list whose Go field carries
``patchStrategy:"merge"`` is merged element by element on its
``patchMergeKey`` (pod conditions on ``type``, a claim's ``reservedFor`` on
``uid``) or, for a list of strings, as a set union; every other list is
replaced.  It also honours the directives ``$patch`` (``replace``,
``delete``, ``merge``) in a map or a list element, ``$retainKeys``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``.  No
Python package implements it (the merge keys are the API's struct tags), so
it is written here, after upstream's semantics; the merge keys are
:data:`MERGE_KEYS`, by the class of a list's elements, so that any
registered kind whose status holds ``meta`` :class:`Condition` s (a
PodGroup's, a PodDisruptionBudget's) merges them on ``type`` unannounced.
"""

from __future__ import annotations

import copy
import functools
import typing
from typing import Any, get_args, get_origin

import attrs
import json_merge_patch

from ..api import core_v1, resource_of, resource_v1
from ..api.convert import EXTRA, manifest_key, unstructure
from ..api.meta import Condition, ObjectMeta, OwnerReference
from .client import ApiError, BadRequest, ClusterClient

#: Content-Type of a strategic merge patch.
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
#: Content-Type of a JSON merge patch (RFC 7386).
MERGE_PATCH = "application/merge-patch+json"
PATCH_TYPES = (STRATEGIC_MERGE_PATCH, MERGE_PATCH)

#: The merge key of a list field with upstream's ``patchStrategy:"merge"``, by
#: the class of its elements (each of these classes is used only by such fields).
MERGE_KEYS: dict[type, str] = {
    core_v1.PodCondition: "type",
    core_v1.NodeCondition: "type",
    Condition: "type",
    OwnerReference: "uid",
    core_v1.Container: "name",
    core_v1.ContainerPort: "containerPort",
    core_v1.Volume: "name",
    core_v1.PodSchedulingGate: "name",
    core_v1.PodResourceClaim: "name",
    core_v1.PodResourceClaimStatus: "name",
    core_v1.TopologySpreadConstraint: "topologyKey",
    resource_v1.ResourceClaimConsumerReference: "uid",
}
#: Lists of strings that a strategic merge patch unites with the stored list
#: (``patchStrategy:"merge"`` without a key), as ``(class, manifest key)``.
MERGED_STRING_LISTS = {(ObjectMeta, "finalizers")}

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ELEMENT_ORDER = "$setElementOrder/"


def with_preconditions(patch: Any, uid: str | None, resource_version: str | None) -> Any:
    """``patch`` with ``metadata.uid`` and ``metadata.resourceVersion`` set where
    given: how a client states preconditions in a PATCH (upstream's
    ``util.PatchPodStatus`` puts the pod's UID in the patch).  The API server
    then refuses the patch when the stored object's UID differs (422: the UID
    is immutable) or its resourceVersion differs (409 Conflict)."""
    if not uid and not resource_version:
        return patch
    if not isinstance(patch, dict):
        raise BadRequest("a patch with preconditions must be a JSON object")
    meta = dict(patch.get("metadata") or {})
    if uid:
        meta["uid"] = uid
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {**patch, "metadata": meta}


def two_way_merge_patch(original: dict, modified: dict, cls: type | None = None) -> dict:
    """The strategic merge patch that turns ``original`` into ``modified``
    (manifests of class ``cls``), as upstream's ``CreateTwoWayMergePatch``:
    changed and added keys, ``null`` for removed ones; in a list merged on a
    key, only the changed or new elements (with their key) and a ``$patch:
    delete`` element per removed one; in a merged list of strings, the added
    strings and a ``$deleteFromPrimitiveList`` directive for removed ones;
    any other list whole.  Empty when nothing changed.  (Upstream also sends
    ``$setElementOrder``; the order of a merged list is not kept here.)"""
    patch: dict = {}
    fields = field_models(cls)
    for key in list(original) + [k for k in modified if k not in original]:
        if key not in modified:
            patch[key] = None
            continue
        old, new = original.get(key), modified[key]
        if key in original and old == new:
            continue
        element = fields.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            patch[key] = two_way_merge_patch(old, new, element)
        elif isinstance(old, list) and isinstance(new, list) and (cls, key) in MERGED_STRING_LISTS:
            added = [v for v in new if v not in old]
            if added:
                patch[key] = added
            removed = [v for v in old if v not in new]
            if removed:
                patch[f"{_DELETE_FROM}{key}"] = removed
        elif isinstance(old, list) and isinstance(new, list) and element in MERGE_KEYS:
            merge_key = MERGE_KEYS[element]
            before = {item.get(merge_key): item for item in old if isinstance(item, dict)}
            items = []
            for item in new:
                previous = before.get(item.get(merge_key))
                if previous is None:
                    items.append(item)
                elif previous != item:
                    items.append({merge_key: item[merge_key], **two_way_merge_patch(previous, item, element)})
            kept = {item.get(merge_key) for item in new}
            items += [{merge_key: value, _DIRECTIVE: "delete"} for value in before if value not in kept]
            patch[key] = items
        else:
            patch[key] = new
    return patch


def patch_status(cluster: ClusterClient, obj: Any, status: Any, resource_version: str | None = None) -> Any:
    """Write ``status`` as ``obj``'s new status with a strategic-merge PATCH of
    ``/status`` from ``obj.status`` (the informer's copy) to ``status``, with
    ``obj``'s UID as precondition: upstream's ``util.PatchPodStatus``, which
    kube-scheduler uses for pod conditions and ``nominatedNodeName`` so that
    a kubelet's write in between is merged, not a 409.  ``resource_version``
    adds that precondition too (for a change that must not race, such as a
    deallocation).  Returns the stored object, or ``obj`` when nothing
    changed (no request).  Raises what :meth:`ClusterClient.patch` raises."""
    diff = two_way_merge_patch(status_manifest(obj.status), unstructure(status), type(status))
    if not diff:
        return obj
    meta = obj.metadata
    return cluster.patch(resource_of(obj).kind, meta.name, {"status": diff}, meta.namespace, subresource="status",
                         uid=meta.uid, resource_version=resource_version)


#: the status :func:`status_manifest` turned into a manifest last, and that manifest
_last_status: tuple[Any, dict] = (None, {})


def status_manifest(status: Any) -> dict:
    """``unstructure(status)``, the last answer kept: :func:`patch_status` diffs from the informer's copy of an
    object's status, and the embedded API server then merges the patch into the stored status, usually that same
    (frozen) object, so a status write turns it into a manifest once.  The dict is shared: read it, never change
    it (:func:`two_way_merge_patch` and :func:`apply_patch` only read theirs)."""
    global _last_status
    last = _last_status
    if last[0] is status:
        return last[1]
    manifest = unstructure(status)
    _last_status = (status, manifest)
    return manifest


def apply_patch(doc: dict, patch: Any, patch_type: str, cls: type | None = None) -> Any:
    """``doc`` (a manifest, not changed) with ``patch`` applied.

    ``patch_type`` is :data:`STRATEGIC_MERGE_PATCH` or :data:`MERGE_PATCH`;
    ``cls`` is the attrs class of ``doc`` (its lists' merge keys), or None for
    an unmodelled document (every list is then replaced).  A strategic merge
    copies only the maps and lists the patch changes: the result shares the
    parts of ``doc`` it leaves alone (copy those before changing them in
    place).  Raises :class:`BadRequest` (400) for another patch type, a
    strategic patch that is not a JSON object or a malformed directive, as
    kube-apiserver does; a list element without its merge key is an
    :class:`ApiError` (500, as upstream's unclassified patch error)."""
    if patch_type == MERGE_PATCH:
        return json_merge_patch.merge(copy.deepcopy(doc), patch)
    if patch_type != STRATEGIC_MERGE_PATCH:
        raise BadRequest(f"the patch type {patch_type!r} is not supported (supported: {', '.join(PATCH_TYPES)})")
    if not isinstance(patch, dict):
        raise BadRequest(f"a strategic merge patch must be a JSON object, got {type(patch).__name__}")
    return _merge_map(doc, patch, cls)


def _merge_map(original: dict, patch: dict, cls: type | None) -> dict:
    """A copy of ``original`` with ``patch`` merged in (``original`` is not changed; what the patch leaves
    alone is shared)."""
    directive = patch.get(_DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            return _strip({k: v for k, v in patch.items() if k != _DIRECTIVE}, cls)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise BadRequest(f"Unknown patch type: {directive} in map: {patch}")
    merged = dict(original)
    if _RETAIN_KEYS in patch:
        retain = patch[_RETAIN_KEYS]
        if not isinstance(retain, list):
            raise BadRequest("invalid patch: $retainKeys must be a list")
        for key in [k for k in merged if k not in retain]:
            del merged[key]
    fields = field_models(cls)
    ordered = False
    for key, value in patch.items():
        if key[:1] == "$":  # directives (the API's own keys never start with "$")
            if key in (_DIRECTIVE, _RETAIN_KEYS):
                continue
            if key.startswith(_ELEMENT_ORDER):
                ordered = True
                continue
            if key.startswith(_DELETE_FROM):
                name = key[len(_DELETE_FROM):]
                if not isinstance(value, list):
                    raise BadRequest(f"invalid patch: {key} must be a list")
                if isinstance(merged.get(name), list):
                    merged[name] = [v for v in merged[name] if v not in value]
                continue
        if value is None:
            merged.pop(key, None)
            continue
        element = fields.get(key)
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = _merge_map(current, value, element)
        elif isinstance(value, list) and isinstance(current, list) and _merges(cls, key, element):
            merged[key] = _merge_list(current, value, element)
        elif isinstance(value, (dict, list)):
            merged[key] = _strip(value, element)
        else:
            merged[key] = value  # a scalar: nothing to strip
    if ordered:
        for key, order in patch.items():
            if key.startswith(_ELEMENT_ORDER) and isinstance(merged.get(key[len(_ELEMENT_ORDER):]), list):
                name = key[len(_ELEMENT_ORDER):]
                merged[name] = _ordered(merged[name], order, MERGE_KEYS.get(fields.get(name)))  # type: ignore[arg-type]
    return merged


def _merges(cls: type | None, key: str, element: type | None) -> bool:
    return element in MERGE_KEYS or (cls, key) in MERGED_STRING_LISTS


def _merge_list(original: list, patch: list, element: type | None) -> list:
    """A list field with ``patchStrategy:"merge"``: strings united, objects merged on their key (a new list;
    ``original`` and its elements are not changed)."""
    merge_key = MERGE_KEYS.get(element)  # type: ignore[arg-type]
    if merge_key is None:
        return original + [v for i, v in enumerate(patch) if v not in original and v not in patch[:i]]
    result = list(original)
    keys = [_key_of(v, merge_key) for v in result]  # beside result: the first element with a key is found in C
    for item in patch:
        if not isinstance(item, dict):
            raise BadRequest(f"invalid patch: expected an object in a list merged on {merge_key!r}, got {item!r}")
        directive = item.get(_DIRECTIVE)
        if directive == "replace":
            return [_strip(v, element) for v in patch if v is not item]
        if merge_key not in item:
            if directive is None:
                raise ApiError(f"map: {item} does not contain declared merge key: {merge_key}")
            raise BadRequest(f"invalid patch: {item} has no merge key {merge_key!r}")
        index = keys.index(item[merge_key]) if item[merge_key] in keys else None
        if directive == "delete":
            if index is not None:
                del result[index]
                del keys[index]
            continue
        if index is None:
            result.append(_strip(item, element))
            keys.append(_key_of(result[-1], merge_key))
        else:
            result[index] = _merge_map(result[index], item, element)
            keys[index] = _key_of(result[index], merge_key)
    return result


#: the merge key of a list element that is not an object (no patch element matches it)
_NOT_AN_OBJECT = object()


def _key_of(element: Any, merge_key: str) -> Any:
    return element.get(merge_key) if isinstance(element, dict) else _NOT_AN_OBJECT


def _ordered(items: list, order: Any, merge_key: str | None) -> list:
    """``$setElementOrder``: the elements it names in its order, the others
    (only in the stored list) kept where they were relative to them."""
    if not isinstance(order, list):
        raise BadRequest("invalid patch: $setElementOrder must be a list")
    keys = [o.get(merge_key) if merge_key and isinstance(o, dict) else o for o in order]

    def key_of(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    named = sorted((i for i in items if key_of(i) in keys), key=lambda i: keys.index(key_of(i)))
    result, queue = [], iter(named)
    for item in items:
        result.append(next(queue) if key_of(item) in keys else item)
    return result


def _strip(value: Any, cls: type | None) -> Any:
    """A value the stored object did not have: its nulls and directives dropped
    (the API server merges it into nothing)."""
    if isinstance(value, dict):
        stripped = {}
        fields = None
        for key, item in value.items():
            if key[:1] == "$":
                return _merge_map({}, value, cls)  # directives, checked as a merge checks them
            if item is None:
                continue
            if isinstance(item, (dict, list)):
                if fields is None:
                    fields = field_models(cls)
                item = _strip(item, fields.get(key))
            stripped[key] = item
        return stripped
    if isinstance(value, list):
        return [_strip(v, cls) for v in value if not (isinstance(v, dict) and v.get(_DIRECTIVE) == "delete")]
    return value


@functools.cache
def field_models(cls: type | None) -> dict[str, type]:
    """Manifest key -> the attrs class of the field's value (of a list's
    elements, of a map's values), for the fields that hold one."""
    if cls is None or not attrs.has(cls):
        return {}
    hints = typing.get_type_hints(cls)
    found = {}
    for field in attrs.fields(cls):
        if field.name == EXTRA:
            continue
        inner = _model_in(hints.get(field.name))
        if inner is not None:
            found[manifest_key(field)] = inner
    return found


def _model_in(type_: Any) -> type | None:
    """The attrs class in ``X``, ``X | None``, ``tuple[X, ...]`` or ``dict[str, X]``."""
    if isinstance(type_, type) and attrs.has(type_):
        return type_
    if get_origin(type_) is dict:
        return _model_in(get_args(type_)[1])
    for arg in get_args(type_):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
