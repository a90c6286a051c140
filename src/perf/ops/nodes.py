"""createNodes: the cluster's nodes, from a template or upstream's default node."""

from __future__ import annotations

import random
import uuid
from typing import Any, Callable

import attrs

from ...core.api.core_v1 import Node
from ...core.api.meta import ObjectMeta
from ...core.api.storage_v1 import CSINode, CSINodeDriver, CSINodeSpec, VolumeNodeResources
from ...core.cluster.client import ApiError
from ...core.quantity import QuantityError, parse_resource_list
from ...core.volume.csi_translation import MIGRATED_PLUGINS_ANNOTATION
from ..errors import PerfConfigError, WorkloadFailed
from .base import PerfOp
from .sources import ObjectSource, default_node_manifest


def node_allocatable_strategy(raw: Any) -> tuple[dict[str, int], CSINode] | None:
    """Upstream ``NodeAllocatableStrategy``: (allocatable to add, the CSINode
    template) from ``{nodeAllocatable, csiNodeAllocatable, migratedPlugins}``.
    Raises :class:`PerfConfigError` for a malformed strategy."""
    if raw is None:
        return None
    where = "nodeAllocatableStrategy"
    if not isinstance(raw, dict) or set(raw) - {"nodeAllocatable", "csiNodeAllocatable", "migratedPlugins"}:
        raise PerfConfigError(f"{where}: expected a mapping of nodeAllocatable, csiNodeAllocatable, migratedPlugins")
    try:
        allocatable = parse_resource_list(raw.get("nodeAllocatable") or {}, f"{where}.nodeAllocatable")
    except QuantityError as err:
        raise PerfConfigError(str(err)) from None
    drivers = []
    for driver, resources in (raw.get("csiNodeAllocatable") or {}).items():
        count = (resources or {}).get("count") if isinstance(resources, dict) else None
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise PerfConfigError(f"{where}.csiNodeAllocatable.{driver}.count: expected an integer, got {count!r}")
        drivers.append(CSINodeDriver(name=driver, allocatable=VolumeNodeResources(count=count)))
    plugins = raw.get("migratedPlugins") or []
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise PerfConfigError(f"{where}.migratedPlugins: expected a list of plugin names")
    csi_node = CSINode(metadata=ObjectMeta(annotations={MIGRATED_PLUGINS_ANNOTATION: ",".join(plugins)}),
                       spec=CSINodeSpec(drivers=tuple(drivers)))
    return allocatable, csi_node


def node_label_strategy(fields: dict[str, Any], rng: random.Random) -> Callable[[int], dict[str, str]] | None:
    """The labels createNodes adds to its ``index``-th node: upstream's
    ``labelNodePrepareStrategy`` ({labelKey, labelValues}: the values round
    robin over the op's nodes) or ``uniqueNodeLabelStrategy`` ({labelKey}: a
    fresh UUID per node, from the seeded ``rng``).  Raises
    :class:`PerfConfigError` for a malformed strategy or both at once."""
    given = [key for key in ("labelNodePrepareStrategy", "uniqueNodeLabelStrategy") if fields.get(key) is not None]
    if not given:
        return None
    if len(given) > 1:
        raise PerfConfigError("createNodes: labelNodePrepareStrategy and uniqueNodeLabelStrategy are exclusive")
    raw = fields[given[0]]
    where = given[0]
    if not isinstance(raw, dict) or not isinstance(raw.get("labelKey"), str) or not raw["labelKey"]:
        raise PerfConfigError(f"{where}.labelKey: expected a label key")
    key = raw["labelKey"]
    if where == "uniqueNodeLabelStrategy":
        if set(raw) - {"labelKey"}:
            raise PerfConfigError(f"{where}: unknown fields {sorted(set(raw) - {'labelKey'})}")
        return lambda index: {key: str(uuid.UUID(int=rng.getrandbits(128), version=4))}
    values = raw.get("labelValues")
    if set(raw) - {"labelKey", "labelValues"}:
        raise PerfConfigError(f"{where}: unknown fields {sorted(set(raw) - {'labelKey', 'labelValues'})}")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise PerfConfigError(f"{where}.labelValues: expected a non-empty list of strings")
    return lambda index: {key: values[index % len(values)]}


class CreateNodes(PerfOp):
    """``count`` nodes from ``nodeTemplatePath`` (expanded with ``.Index``
    0..count-1, ``.Count`` and ``templateParams``) or a 4 CPU / 32Gi / 110
    pods node named ``node-<opIndex>-<random>``; each gets the
    ``kubernetes.io/hostname`` label, and ``labelNodePrepareStrategy``'s
    (round robin over ``labelValues``) or ``uniqueNodeLabelStrategy``'s label.
    ``nodeAllocatableStrategy`` adds ``nodeAllocatable`` to each node's
    allocatable and creates its CSINode (``csiNodeAllocatable`` driver counts,
    ``migratedPlugins`` in the migrated-plugins annotation)."""

    FIELDS = ("count", "countParam", "nodeTemplatePath", "nodeAllocatableStrategy", "labelNodePrepareStrategy",
              "uniqueNodeLabelStrategy", "templateParams")
    DEFAULT_COUNT = 0

    def source(self) -> ObjectSource:
        """The node template: ``nodeTemplatePath`` (expanded with ``templateParams``) or upstream's default node."""
        path = self.fields.get("nodeTemplatePath")
        if path is None:
            return ObjectSource(None, "Node", manifest=default_node_manifest(f"node-{self.index}-"))
        return ObjectSource(self.executor.path(path), "Node", self.fields.get("templateParams"))

    def check(self) -> None:
        """Checks the label and allocatable strategies and expands the first node now (PerfConfigError,
        TemplateError)."""
        node_label_strategy(self.fields, self.executor.rng)
        node_allocatable_strategy(self.fields.get("nodeAllocatableStrategy"))
        self.source().document(0, max(self.fields["count"], 1))

    def run(self) -> None:
        executor = self.executor
        count = self.fields["count"]
        source = self.source()
        strategy = node_allocatable_strategy(self.fields.get("nodeAllocatableStrategy"))
        extra_labels = node_label_strategy(self.fields, executor.rng)
        create = executor.cluster.create
        for index in range(count):
            node: Node = source.object(index, count)
            meta = node.metadata
            name = meta.name or executor.generate_name(meta.generate_name)
            labels = dict(meta.labels)
            labels["kubernetes.io/hostname"] = name
            if extra_labels is not None:
                labels.update(extra_labels(index))
            node = attrs.evolve(node, metadata=attrs.evolve(meta, name=name, generate_name=meta.generate_name,
                                                            labels=labels))
            try:
                if strategy is not None:
                    allocatable, csi_node = strategy
                    node = attrs.evolve(node, status=attrs.evolve(node.status,
                                                                  allocatable={**node.allocatable, **allocatable}))
                    create(attrs.evolve(csi_node, metadata=attrs.evolve(csi_node.metadata, name=name)))
                create(node)
            except ApiError as err:
                raise WorkloadFailed(f"creating node {name}: {err}") from None
            if index & 255 == 255:
                executor.tick()
