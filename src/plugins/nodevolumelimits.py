"""NodeVolumeLimits: CSI attach limits per node (upstream plugins/nodevolumelimits, CSILimits).

A node can attach at most N volumes of a CSI driver: the CSINode's
``drivers[].allocatable.count``, else the node's allocatable
``attachable-volumes-csi-<driver>``.  The pod's volumes are counted per
driver: claims bound to CSI PVs, in-tree PVs and inline disks migrated to
CSI (on nodes with a CSINode), and unbound claims by their class's
provisioner.  A volume already attached to the node (used by a pod there)
does not count twice.  Too many: "node(s) exceed max volume count"
(Unschedulable).  VolumeLimitScaling (on in 1.37): a volume of a driver
whose CSIDriver sets ``preventPodSchedulingIfMissing`` keeps the pod off
nodes whose CSINode is missing or does not list the driver ("<driver> CSI
driver is not installed on the node", Unschedulable).

PreFilter resolves the pod's volumes once (and skips Filter for pods
without claims or migratable inline disks).  The batch Filter passes the
nodes whose limits hold even counting every volume of every pod there, and
runs the exact check only on the others.
"""

from __future__ import annotations

import numpy as np
from attrs import define, field

from kubesched import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    NodeInfo,
    QueueingHint,
    Status,
    hookimpl,
    volumes_fragment,
)
from kubesched.core.api.core_v1 import PersistentVolumeClaim, Pod
from kubesched.core.api.storage_v1 import CSINode
from kubesched.core.volume.claims import (
    claim_class,
    claim_key,
    is_pvc_of_pod,
    pvc_name,
    volume_is_for_pod,
)
from kubesched.core.volume.csi_translation import (
    ATTACHABLE_VOLUMES_PREFIX,
    attach_limit_key,
    csi_source,
    plugin_by_name,
    plugin_of,
)

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
STATE_KEY = "PreFilterNodeVolumeLimits"
#: Volume handle prefix for claims counted by their class (upstream uses a random string).
UNBOUND_HANDLE_PREFIX = "kubesched-unbound"


@define(frozen=True)
class AttachableVolume:
    """A volume to count: its CSI ``driver`` and ``handle``; ``migrated``: an
    in-tree volume, counted only on nodes where migration is on (a CSINode)."""

    driver: str
    handle: str
    migrated: bool = False


@define
class _PreFilterState:
    """The new pod's attachable volumes, or the status every node gets."""

    volumes: list[AttachableVolume] = field(factory=list)
    error: Status | None = None


def counts_toward_limits(pod: Pod) -> bool:
    """Upstream PreFilter: the pod has a claim, an ephemeral volume or a migratable inline disk."""
    return any(v.persistent_volume_claim is not None or v.ephemeral is not None or plugin_of(v) is not None
               for v in pod.spec.volumes)


class NodeVolumeLimits:
    """Upstream ``NodeVolumeLimits`` (``CSILimits``): PreFilter resolves the
    pod's :class:`AttachableVolume` list, Filter (and its batch form) counts
    them against each node's limits."""

    name = "NodeVolumeLimits"

    def __init__(self, args, handle):
        informers = handle.informers
        self.volumes = informers.store("PersistentVolume")
        self.claims = informers.store("PersistentVolumeClaim")
        self.classes = informers.store("StorageClass")
        self.csi_nodes = informers.store("CSINode")
        self.csi_drivers = informers.store("CSIDriver")
        self.volume_limit_scaling = handle.features.enabled("VolumeLimitScaling")
        informers.add_handlers("CSINode", lambda obj: self._csi_node_changed(),
                               lambda old, new: self._csi_node_changed(), lambda obj: self._csi_node_changed())
        # per NodeTable row, the CSINode limit of each limit key (-1: none); rebuilt when
        # the table or a CSINode changes
        self._limit_columns: dict[str, np.ndarray] = {}
        self._limit_table = None
        self._limit_rows = 0

    # --- resolving volumes -------------------------------------------------------------------

    def attachable_volumes(self, pod: Pod, new_pod: bool) -> list[AttachableVolume]:
        """Upstream ``filterAttachableVolumes``.  For the pod being scheduled
        (``new_pod``) a missing claim raises :class:`LookupError`; for pods
        already on a node it is not counted.  An ephemeral claim the pod does
        not own raises :class:`ValueError`."""
        out = []
        namespace = pod.metadata.namespace
        for volume in pod.spec.volumes:
            name = pvc_name(pod, volume)
            if name is None:
                source = csi_source(volume)
                if source is not None:
                    out.append(AttachableVolume(*source, migrated=True))
                continue
            claim = self.claims.get(claim_key(namespace, name))
            if claim is None:
                if new_pod:
                    raise LookupError(f'looking up PVC {namespace}/{name}: persistentvolumeclaim "{name}" not found')
                continue
            if volume.ephemeral is not None:
                problem = volume_is_for_pod(pod, claim)
                if problem:
                    raise ValueError(problem)
            found = self._claim_volume(claim)
            if found is not None:
                out.append(found)
        return out

    def _claim_volume(self, claim: PersistentVolumeClaim) -> AttachableVolume | None:
        """Upstream ``getCSIDriverInfo``: from the bound PV, else from the class."""
        pv = self.volumes.get(claim.spec.volume_name) if claim.spec.volume_name else None
        if pv is not None:
            source = csi_source(pv.spec)
            if source is None:
                return None
            return AttachableVolume(*source, migrated=pv.spec.csi is None)
        class_name = claim_class(claim)
        storage_class = self.classes.get(class_name) if class_name else None
        if storage_class is None:
            return None  # Immediate binding: it must be bound before scheduling
        handle = f"{UNBOUND_HANDLE_PREFIX}-{claim.metadata.namespace}/{claim.metadata.name}"
        plugin = plugin_by_name(storage_class.provisioner)
        if plugin is not None:
            return AttachableVolume(plugin.driver, handle, migrated=True)
        return AttachableVolume(storage_class.provisioner, handle)

    # --- limits ------------------------------------------------------------------------------

    @staticmethod
    def node_limits(node_info: NodeInfo, csi_node: CSINode | None) -> dict[str, int]:
        """Upstream ``getVolumeLimits``: the node's allocatable attach limits,
        overridden by the CSINode's driver counts."""
        limits = {k: v for k, v in node_info.allocatable.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}
        limits.update(csi_node_limits(csi_node))
        return limits

    @staticmethod
    def _counted(volumes: list[AttachableVolume], csi_node: CSINode | None) -> dict[str, str]:
        """unique volume name -> limit key, for the volumes that count on a node with ``csi_node``."""
        return {f"{v.driver}/{v.handle}": attach_limit_key(v.driver)
                for v in volumes if csi_node is not None or not v.migrated}

    def node_status(self, volumes: list[AttachableVolume], node_info: NodeInfo) -> Status | None:
        """The exact Filter for one node (upstream ``CSILimits.Filter``)."""
        csi_node = self.csi_nodes.get(node_info.name)
        new = self._counted(volumes, csi_node)
        if not new:
            return None
        missing = self._missing_driver(volumes, csi_node)
        if missing is not None:
            return Status.unschedulable(f"{missing} CSI driver is not installed on the node")
        limits = self.node_limits(node_info, csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for info in node_info.pods:
            try:
                attached.update(self._counted(self.attachable_volumes(info.pod, new_pod=False), csi_node))
            except ValueError as err:
                return Status.as_error(err)
        attached_count: dict[str, int] = {}
        for unique, key in attached.items():
            new.pop(unique, None)
            attached_count[key] = attached_count.get(key, 0) + 1
        new_count: dict[str, int] = {}
        for key in new.values():
            new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count.get(key, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _required_drivers(self, volumes: list[AttachableVolume]) -> list[str]:
        """The drivers of ``volumes`` whose CSIDriver sets preventPodSchedulingIfMissing, in order (none
        while VolumeLimitScaling is off)."""
        out: list[str] = []
        if not self.volume_limit_scaling:
            return out
        for volume in volumes:
            driver = self.csi_drivers.get(volume.driver)
            if driver is not None and driver.spec.prevent_pod_scheduling_if_missing and volume.driver not in out:
                out.append(volume.driver)
        return out

    def _missing_driver(self, volumes: list[AttachableVolume], csi_node: CSINode | None) -> str | None:
        """The first driver of the volumes counted on a node with ``csi_node`` that must be installed there
        (its CSIDriver sets preventPodSchedulingIfMissing) and that the CSINode does not list."""
        installed = {d.name for d in csi_node.spec.drivers} if csi_node is not None else set()
        counted = [v for v in volumes if csi_node is not None or not v.migrated]
        return next((driver for driver in self._required_drivers(counted) if driver not in installed), None)

    def _csi_node_changed(self) -> None:
        self._limit_columns.clear()

    def _limit_column(self, table, key: str) -> np.ndarray:
        """Per table row: the attach limit for ``key`` (-1: none), CSINode first."""
        if self._limit_table is not table or len(table) != self._limit_rows:
            self._limit_columns.clear()
            self._limit_table, self._limit_rows = table, len(table)
        column = self._limit_columns.get(key)
        if column is None:
            driver_limits = {}
            for csi_node in self.csi_nodes.values():
                limit = csi_node_limits(csi_node).get(key)
                if limit is not None:
                    driver_limits[csi_node.metadata.name] = limit
            column = np.fromiter((driver_limits.get(info.name, -1) for info in table.infos),
                                 dtype=np.int64, count=len(table))
            self._limit_columns[key] = column
        allocatable = table.column(f"attach-limit/{key}", lambda info: info.allocatable.get(key, -1))
        return np.where(column >= 0, column, allocatable)

    # --- extension points --------------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the pod's volumes (not its ConfigMaps and Secrets)."""
        return [volumes_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        if not counts_toward_limits(pod):
            return Status.skip()
        try:
            state.write(STATE_KEY, _PreFilterState(self.attachable_volumes(pod, new_pod=True)))
        except LookupError as err:
            state.write(STATE_KEY, _PreFilterState(error=Status.unresolvable(str(err))))
        except ValueError as err:
            state.write(STATE_KEY, _PreFilterState(error=Status.as_error(err)))
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        data = state.get(STATE_KEY)
        if data is None:
            return None
        if data.error is not None:
            return data.error
        return self.node_status(data.volumes, node_info)

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        data = state.get(STATE_KEY)
        passes = np.ones(len(rows), dtype=bool)
        if data is None or (data.error is None and not data.volumes):
            return passes
        if data.error is None and self._required_drivers(data.volumes):
            passes[:] = False  # a driver must be installed: each node judged exactly below
        elif data.error is None:
            # at most this many volumes are attached to each node (every volume of every pod there)
            upper = table.column("attachable-pod-volumes", _pod_volume_count)[rows]
            per_key: dict[str, int] = {}
            for volume in data.volumes:
                key = attach_limit_key(volume.driver)
                per_key[key] = per_key.get(key, 0) + 1
            for key, count in per_key.items():
                limit = self._limit_column(table, key)[rows]
                passes &= (limit < 0) | (upper + count <= limit)
        for position in np.flatnonzero(~passes):
            passes[position] = self.filter(state, pod, table.infos[int(rows[position])]) is None
        return passes

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), self._after_csi_node_updated),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._after_claim_added),
        ]

    @staticmethod
    def _after_pod_deleted(pod, old, new):
        """A pod that was on a node and had countable volumes went away."""
        if old is None or not old.spec.node_name or not counts_toward_limits(old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def _after_csi_node_updated(pod, old, new):
        """A driver newly listed, or a larger attach limit, may help (upstream
        ``isSchedulableAfterCSINodeUpdated``, with VolumeLimitScaling's installed drivers)."""
        before, after = csi_node_limits(old), csi_node_limits(new)
        if {d.name for d in new.spec.drivers} - {d.name for d in old.spec.drivers}:
            return QueueingHint.QUEUE
        if any(limit > before.get(key, limit) for key, limit in after.items()):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_claim_added(pod, old, new):
        return QueueingHint.QUEUE if is_pvc_of_pod(pod, new) else QueueingHint.QUEUE_SKIP


def csi_node_limits(csi_node: CSINode | None) -> dict[str, int]:
    """Limit key -> count, for the CSINode's drivers that report one."""
    if csi_node is None:
        return {}
    return {attach_limit_key(d.name): d.allocatable.count for d in csi_node.spec.drivers
            if d.allocatable is not None and d.allocatable.count is not None}


def _pod_volume_count(info: NodeInfo) -> int:
    return sum(1 for pod_info in info.pods for v in pod_info.pod.spec.volumes
               if v.persistent_volume_claim is not None or v.ephemeral is not None or plugin_of(v) is not None)
