"""VolumeZone: a bound PV's zone and region labels must match the node's (upstream plugins/volumezone).

PreFilter collects the topology labels (zone and region, GA and beta) of the
PVs bound to the pod's ``persistentVolumeClaim`` volumes; claims of a
WaitForFirstConsumer class that are not bound yet are left to
VolumeBinding.  Filter: a node carrying any topology label must have, for
each PV label, one of its values (``zone-a__zone-b`` lists several); a beta
PV label also matches the node's GA label.  Mismatch:
"node(s) had no available volume zone" (UnschedulableAndUnresolvable).
A node without topology labels (single-zone cluster) always fits.
"""

from __future__ import annotations

from attrs import frozen

from kubesched import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    hookimpl,
    volumes_fragment,
)
from kubesched.core.api.storage_v1 import WAIT_FOR_FIRST_CONSUMER
from kubesched.core.volume.claims import (
    REGION_BETA,
    REGION_GA,
    ZONE_BETA,
    ZONE_GA,
    claim_class,
    claim_key,
    is_pvc_of_pod,
    zones_of_label,
)

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
STATE_KEY = "PreFilterVolumeZone"
TOPOLOGY_LABELS = (ZONE_BETA, REGION_BETA, ZONE_GA, REGION_GA)
_GA_LABEL = {ZONE_BETA: ZONE_GA, REGION_BETA: REGION_GA}


@frozen
class PVTopology:
    """One topology label of a PV the pod uses: the label and its allowed values."""

    pv_name: str
    key: str
    values: frozenset[str]


class VolumeZone:
    """Upstream ``VolumeZone``: PreFilter collects :class:`PVTopology` entries,
    Filter compares them with the node's labels."""

    name = "VolumeZone"

    def __init__(self, args, handle):
        self.volumes = handle.informers.store("PersistentVolume")
        self.claims = handle.informers.store("PersistentVolumeClaim")
        self.classes = handle.informers.store("StorageClass")

    def pv_topologies(self, pod) -> tuple[list[PVTopology], Status | None]:
        """Upstream ``getPVbyPod``: the topologies, or the status that rejects the pod."""
        topologies: list[PVTopology] = []
        for volume in pod.spec.volumes:
            if volume.persistent_volume_claim is None:
                continue
            name = volume.persistent_volume_claim.claim_name
            if not name:
                return [], Status.unresolvable("PersistentVolumeClaim had no name")
            claim = self.claims.get(claim_key(pod.metadata.namespace, name))
            if claim is None:
                return [], Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            pv_name = claim.spec.volume_name
            if not pv_name:
                class_name = claim_class(claim)
                if not class_name:
                    return [], Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = self.classes.get(class_name)
                if storage_class is None:
                    return [], Status.unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                if storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], Status.unresolvable("PersistentVolume had no name")
            pv = self.volumes.get(pv_name)
            if pv is None:
                return [], Status.unresolvable(f'persistentvolume "{pv_name}" not found')
            for key in TOPOLOGY_LABELS:
                value = pv.metadata.labels.get(key)
                if value is not None:
                    topologies.append(PVTopology(pv_name, key, frozenset(zones_of_label(value))))
        return topologies, None

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the pod's volumes (not its ConfigMaps and Secrets)."""
        return [volumes_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        topologies, status = self.pv_topologies(pod)
        if status is not None:
            return status
        if not topologies:
            return Status.skip()
        state.write(STATE_KEY, topologies)
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        if not pod.spec.volumes:
            return None
        topologies = state.get(STATE_KEY)
        if topologies is None:
            topologies, status = self.pv_topologies(pod)
            if status is not None:
                return status
        labels = node_info.node.metadata.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                                              | ActionType.UPDATE_NODE_TAINT)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                                 self._after_claim_change),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE)),
        ]

    @staticmethod
    def _after_claim_change(pod, old, new):
        """One of the pod's claim volumes was created or changed (e.g. got bound)."""
        return QueueingHint.QUEUE if is_pvc_of_pod(pod, new, ephemeral=False) else QueueingHint.QUEUE_SKIP
