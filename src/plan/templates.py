"""Node templates: Node manifests marked as shapes a cluster could add, as cluster-autoscaler's node groups.

A template is a Node manifest that carries the annotation
``kubesched.io/node-template: "true"``; it is never created in the cluster.
Its other annotations:

- ``kubesched.io/cost-per-hour``: what one node costs per hour, a decimal
  number in any currency (default 0);
- ``kubesched.io/max-count``: how many nodes of it may be added at most, an
  integer (default 100; cluster-autoscaler's node group ``maxSize`` less the
  nodes already there);
- ``kubesched.io/priority``: an integer for ``--expander priority``, higher
  first (cluster-autoscaler's priority expander; default 0).

A ResourceSlice whose ``spec.nodeName`` names a template is the template's
devices: each added node gets a copy (pool and node name its own).  Every
added node is a copy of the template named ``<template>-<i>`` with its labels
(``kubernetes.io/hostname`` set to the new name), taints and allocatable, as
cluster-autoscaler builds nodes from a node group's template.
"""

from __future__ import annotations

import decimal
from typing import Any, Iterable

import attrs

from kubesched.core.api.core_v1 import Node, ObjectMeta
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.api.resource_v1 import ResourceSlice

#: The annotation marking a Node manifest as a template ("true").
TEMPLATE_ANNOTATION = "kubesched.io/node-template"
#: A template's cost of one node per hour (decimal; default 0).
COST_ANNOTATION = "kubesched.io/cost-per-hour"
#: A template's largest number of nodes to add (integer; default :data:`DEFAULT_MAX_COUNT`).
MAX_COUNT_ANNOTATION = "kubesched.io/max-count"
#: A template's priority for ``--expander priority`` (integer, higher first; default 0).
PRIORITY_ANNOTATION = "kubesched.io/priority"
#: ``max-count`` when a template does not say.
DEFAULT_MAX_COUNT = 100
_HOSTNAME = "kubernetes.io/hostname"


@attrs.frozen
class NodeTemplate:
    """One node shape the plan may add: ``node`` (the Node manifest, annotations
    included), ``slices`` (its ResourceSlices), ``cost_per_hour`` (decimal, any
    currency), ``max_count`` (nodes), ``priority`` (higher first), ``file``
    (where it was read, for messages)."""

    node: Node
    slices: tuple[ResourceSlice, ...] = ()
    cost_per_hour: float = 0.0
    max_count: int = DEFAULT_MAX_COUNT
    priority: int = 0
    file: str = ""

    @property
    def name(self) -> str:
        """The template Node's name (added nodes are ``<name>-<i>``)."""
        return self.node.metadata.name

    def instance(self, index: int) -> list[Any]:
        """The objects of the ``index``-th node of this template (from 1): the Node
        ``<name>-<index>`` and a copy of each ResourceSlice on it."""
        name = f"{self.name}-{index}"
        annotations = {k: v for k, v in self.node.metadata.annotations.items() if not k.startswith("kubesched.io/")}
        meta = ObjectMeta(name=name, labels={**self.node.metadata.labels, _HOSTNAME: name}, annotations=annotations)
        objects: list[Any] = [attrs.evolve(self.node, metadata=meta)]
        for position, piece in enumerate(self.slices):
            pool = attrs.evolve(piece.spec.pool, name=name if len(self.slices) == 1 else f"{name}-{position}")
            objects.append(attrs.evolve(piece, metadata=ObjectMeta(name=f"{name}-{piece.metadata.name}"),
                                        spec=attrs.evolve(piece.spec, node_name=name, pool=pool)))
        return objects


def split_templates(sourced: Iterable[tuple[str, Any]]) -> tuple[list[NodeTemplate], list[tuple[str, Any]]]:
    """``(file, object)`` pairs -> the templates (in file order) and every other
    pair (to create in the cluster).  Raises :class:`InvalidManifest` naming the
    file, the object and the annotation for a bad value, a duplicate template or
    a ResourceSlice of a template that is not on one node."""
    pairs = list(sourced)
    templates: dict[str, NodeTemplate] = {}
    for file, obj in pairs:
        if isinstance(obj, Node) and TEMPLATE_ANNOTATION in obj.metadata.annotations:
            template = _template(file, obj)
            if template.name in templates:
                raise InvalidManifest(file, f"Node/{template.name}", "metadata.name",
                                      f"a second template of this name (the first in {templates[template.name].file})")
            templates[template.name] = template
    rest = []
    slices: dict[str, list[ResourceSlice]] = {}
    for file, obj in pairs:
        if isinstance(obj, Node) and obj.metadata.name in templates:
            continue
        if isinstance(obj, ResourceSlice) and obj.spec.node_name in templates:
            slices.setdefault(obj.spec.node_name, []).append(obj)
            continue
        rest.append((file, obj))
    found = [attrs.evolve(t, slices=tuple(slices.get(t.name, ()))) for t in templates.values()]
    return found, rest


def _template(file: str, node: Node) -> NodeTemplate:
    where = f"Node/{node.metadata.name}"
    annotations = node.metadata.annotations
    if annotations[TEMPLATE_ANNOTATION] != "true":
        raise InvalidManifest(file, where, f"metadata.annotations[{TEMPLATE_ANNOTATION}]",
                              f'must be "true", not {annotations[TEMPLATE_ANNOTATION]!r}')
    try:
        cost = decimal.Decimal(annotations.get(COST_ANNOTATION, "0"))
        if not cost.is_finite() or cost < 0:
            raise decimal.InvalidOperation
    except decimal.InvalidOperation:
        raise InvalidManifest(file, where, f"metadata.annotations[{COST_ANNOTATION}]",
                              f"must be a non-negative decimal number, not {annotations[COST_ANNOTATION]!r}") from None
    return NodeTemplate(node=node, cost_per_hour=float(cost), file=file,
                        max_count=_integer(file, where, annotations, MAX_COUNT_ANNOTATION, DEFAULT_MAX_COUNT, 0),
                        priority=_integer(file, where, annotations, PRIORITY_ANNOTATION, 0, None))


def _integer(file: str, where: str, annotations: dict[str, str], key: str, default: int, least: int | None) -> int:
    text = annotations.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip(), 10)
    except ValueError:
        value = None
    if value is None or (least is not None and value < least) or abs(value) > 2**31 - 1:
        kind = "a non-negative integer" if least == 0 else "an integer"
        raise InvalidManifest(file, where, f"metadata.annotations[{key}]", f"must be {kind}, not {text!r}")
    return value
