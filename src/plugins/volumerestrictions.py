"""VolumeRestrictions: volumes that cannot be shared (upstream plugins/volumerestrictions).

- In-tree disks mounted directly by pods: the same GCE PD (unless every
  mount is read-only), AWS EBS volume, iSCSI IQN (unless read-only) or Ceph
  RBD image (same pool and image, an overlapping monitor, unless read-only)
  cannot be used by two pods on one node: "node(s) had no available disk".
- Claims with the ReadWriteOncePod access mode: if any scheduled (or
  assumed) pod already uses the claim, no node fits: "node has pod using
  PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
  (Unschedulable: preempting that pod would help).

PreFilter skips Filter for pods with neither.
"""

from __future__ import annotations

from typing import Iterable

from attrs import define

from kubesched import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueueingHint,
    Status,
    hookimpl,
    volumes_fragment,
)
from kubesched.core.api.core_v1 import Pod, Volume
from kubesched.core.volume.claims import READ_WRITE_ONCE_POD, claim_key, is_pvc_of_pod

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and "
                                           "ReadWriteOncePod access mode")
STATE_KEY = "PreFilterVolumeRestrictions"


def _claim_names(pod: Pod) -> set[str]:
    """The names of the pod's ``persistentVolumeClaim`` volumes (upstream counts only those)."""
    return {v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim is not None}


def needs_restrictions_check(volume: Volume) -> bool:
    """Whether ``volume`` is a GCE PD, AWS EBS, RBD or iSCSI volume, the kinds one node cannot share between pods
    (upstream ``needsRestrictionsCheck``)."""
    return any(src is not None for src in (volume.gce_persistent_disk, volume.aws_elastic_block_store,
                                           volume.rbd, volume.iscsi))


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """Upstream ``isVolumeConflict``: ``volume`` cannot share a node with ``pod``'s volumes."""
    for existing in pod.spec.volumes:
        disk, other = volume.gce_persistent_disk, existing.gce_persistent_disk
        if disk is not None and other is not None and disk.pd_name == other.pd_name \
                and not (disk.read_only and other.read_only):
            return True
        ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
            return True
        iscsi, other_iscsi = volume.iscsi, existing.iscsi
        if iscsi is not None and other_iscsi is not None and iscsi.iqn == other_iscsi.iqn \
                and not (iscsi.read_only and other_iscsi.read_only):
            return True
        rbd, other_rbd = volume.rbd, existing.rbd
        if rbd is not None and other_rbd is not None and set(rbd.monitors) & set(other_rbd.monitors) \
                and rbd.pool == other_rbd.pool and rbd.image == other_rbd.image \
                and not (rbd.read_only and other_rbd.read_only):
            return True
    return False


def satisfies_volume_conflicts(pod: Pod, pods: Iterable[Pod]) -> bool:
    """False when one of ``pod``'s restricted volumes conflicts with a volume of any of ``pods`` (upstream
    ``satisfyVolumeConflicts``)."""
    checked = [v for v in pod.spec.volumes if needs_restrictions_check(v)]
    return not any(is_volume_conflict(volume, other) for volume in checked for other in pods)


@define
class _PreFilterState:
    """The pod's ReadWriteOncePod claim names and how many scheduled pods use them."""

    read_write_once_pod_claims: frozenset[str]
    conflicting_refs: int = 0

    def update_with_pod(self, info: PodInfo, multiplier: int) -> None:
        used = _claim_names(info.pod) & self.read_write_once_pod_claims
        self.conflicting_refs += multiplier * len(used)

    def clone(self) -> "_PreFilterState":
        return _PreFilterState(self.read_write_once_pod_claims, self.conflicting_refs)


class VolumeRestrictions:
    """Upstream ``VolumeRestrictions``: PreFilter, its AddPod/RemovePod (for
    nominated pods and preemption dry runs), Filter, queueing hints."""

    name = "VolumeRestrictions"

    def __init__(self, args, handle):
        self.claims = handle.informers.store("PersistentVolumeClaim")

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the pod's volumes (not its ConfigMaps and Secrets)."""
        return [volumes_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        namespace = pod.metadata.namespace
        rwop = set()
        for name in _claim_names(pod):
            claim = self.claims.get(claim_key(namespace, name))
            if claim is None:
                return Status.unresolvable(f'persistentvolumeclaim "{name}" not found')
            if READ_WRITE_ONCE_POD in claim.spec.access_modes:
                rwop.add(name)
        conflicts = 0
        if rwop:
            used = {claim_key(info.pod.metadata.namespace, name)
                    for node_info in nodes for info in node_info.pods for name in _claim_names(info.pod)}
            conflicts = sum(1 for name in rwop if claim_key(namespace, name) in used)
        if conflicts == 0 and not any(needs_restrictions_check(v) for v in pod.spec.volumes):
            return Status.skip()
        state.write(STATE_KEY, _PreFilterState(frozenset(rwop), conflicts))
        return None

    @hookimpl
    def pre_filter_add_pod(self, state, pod, pod_info_to_add, node_info):
        state.read(STATE_KEY).update_with_pod(pod_info_to_add, 1)

    @hookimpl
    def pre_filter_remove_pod(self, state, pod, pod_info_to_remove, node_info):
        state.read(STATE_KEY).update_with_pod(pod_info_to_remove, -1)

    @hookimpl
    def filter(self, state, pod, node_info):
        if not satisfies_volume_conflicts(pod, (info.pod for info in node_info.pods)):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        data = state.get(STATE_KEY)  # None: Filter run without PreFilter, no claim state to check
        if data is not None and data.conflicting_refs > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._after_claim_added),
        ]

    @staticmethod
    def _after_pod_deleted(pod, old, new):
        """The deleted pod held a conflicting disk, or used one of the pod's claims."""
        if old is None or old.metadata.namespace != pod.metadata.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_volume_conflicts(pod, [old]) or _claim_names(pod) & _claim_names(old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_claim_added(pod, old, new):
        """One of the pod's claims (its access modes are needed) was created."""
        return QueueingHint.QUEUE if is_pvc_of_pod(pod, new, ephemeral=False) else QueueingHint.QUEUE_SKIP
