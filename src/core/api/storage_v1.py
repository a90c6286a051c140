"""storage.k8s.io/v1: StorageClass, CSINode, CSIDriver, CSIStorageCapacity."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .convert import ManifestError
from .meta import LabelSelector, ObjectMeta

IMMEDIATE, WAIT_FOR_FIRST_CONSUMER = "Immediate", "WaitForFirstConsumer"
VOLUME_BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)


@frozen
class TopologySelectorLabelRequirement:
    """``key`` must have one of ``values`` (upstream ``TopologySelectorLabelRequirement``)."""

    key: str = ""
    values: tuple[str, ...] = ()


@frozen
class TopologySelectorTerm:
    """Requirements ANDed together; a class's terms are ORed."""

    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = ()


@frozen
class StorageClass:
    """``volume_binding_mode`` Immediate (the API default) or WaitForFirstConsumer;
    ``allowed_topologies``: where the provisioner may create volumes (empty: anywhere)."""

    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    parameters: dict[str, str] = field(factory=dict)
    reclaim_policy: str = ""
    volume_binding_mode: str = IMMEDIATE
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()
    allow_volume_expansion: bool | None = None

    def __attrs_post_init__(self):
        if self.volume_binding_mode not in VOLUME_BINDING_MODES:
            raise ManifestError("volumeBindingMode", f"Unsupported value: {self.volume_binding_mode!r}: "
                                f'supported values: "{IMMEDIATE}", "{WAIT_FOR_FIRST_CONSUMER}"')


@frozen
class VolumeNodeResources:
    """``count``: how many volumes of the driver the node can attach (None: unlimited)."""

    count: int | None = None


@frozen
class CSINodeDriver:
    """storage.k8s.io/v1 CSINodeDriver: one driver on the node, its ``topology_keys`` and attach limit
    (``allocatable.count``)."""

    name: str = ""
    node_id: str = field(default="", metadata={"key": "nodeID"})
    topology_keys: tuple[str, ...] = ()
    allocatable: VolumeNodeResources | None = None


@frozen
class CSINodeSpec:
    """storage.k8s.io/v1 CSINodeSpec: the CSI drivers installed on the node."""

    drivers: tuple[CSINodeDriver, ...] = ()


@frozen
class CSINode:
    """The CSI drivers installed on a node (same name as the node), their
    attach limits and topology keys; the annotation
    ``storage.alpha.kubernetes.io/migrated-plugins`` lists the in-tree
    plugins migrated to CSI there."""

    metadata: ObjectMeta = ObjectMeta()
    spec: CSINodeSpec = CSINodeSpec()


@frozen
class CSIDriverSpec:
    """``storage_capacity``: the scheduler checks CSIStorageCapacity before
    provisioning volumes of this driver; ``prevent_pod_scheduling_if_missing``
    (VolumeLimitScaling): a pod with its volumes goes only to nodes whose
    CSINode lists the driver."""

    attach_required: bool | None = None
    storage_capacity: bool | None = None
    prevent_pod_scheduling_if_missing: bool | None = None
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class CSIDriver:
    """storage.k8s.io/v1 CSIDriver (cluster-scoped): whether a driver's volumes attach and report storage capacity."""

    metadata: ObjectMeta = ObjectMeta()
    spec: CSIDriverSpec = CSIDriverSpec()


@frozen
class CSIStorageCapacity:
    """Capacity a driver reports for ``storage_class_name`` on the nodes that
    ``node_topology`` selects (None: no node).  ``capacity`` and
    ``maximum_volume_size`` are bytes (None: unknown)."""

    metadata: ObjectMeta = ObjectMeta()
    storage_class_name: str = ""
    node_topology: LabelSelector | None = None
    capacity: int | None = field(default=None, metadata={"kind": "bytes"})
    maximum_volume_size: int | None = field(default=None, metadata={"kind": "bytes"})
