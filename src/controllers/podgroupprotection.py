"""The PodGroup protection controller of the embedded cluster.

Stands in for kube-controller-manager's ``podgroup-protection-controller``
(``pkg/controller/podgroupprotection``): the API server puts the finalizer
``scheduling.k8s.io/podgroup-protection`` on every new PodGroup (the
PodGroupProtection admission plugin, in
:class:`~kubesched.core.cluster.memory.MemoryCluster`), so deleting a
PodGroup only marks it (``deletionTimestamp``); this controller removes the
finalizer, and with it the PodGroup, once no active pod names the group in
``spec.schedulingGroup.podGroupName`` (active: in the cluster and neither
Succeeded nor Failed; a pod still pending counts, so a gang being scheduled
keeps its PodGroup).
"""

from __future__ import annotations

import attrs

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_PROTECTION_FINALIZER, PodGroup, pod_group_key
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext


class PodGroupProtectionController(Controller):
    """Work items are PodGroup keys ``namespace/name``."""

    name = "podgroup-protection-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.informers.add_handlers("PodGroup", self._group_changed, lambda old, new: self._group_changed(new))
        self.informers.add_handlers("Pod", self._pod_done, self._pod_updated, self._pod_gone)

    @staticmethod
    def _deletion_candidate(group: PodGroup) -> bool:
        return group.metadata.deletion_timestamp is not None and POD_GROUP_PROTECTION_FINALIZER in group.metadata.finalizers

    def _group_changed(self, group: PodGroup) -> None:
        if self._deletion_candidate(group):
            self.queue.add(group.key)

    def _pod_done(self, pod: Pod) -> None:
        if pod.terminal:
            self._pod_gone(pod)

    def _pod_updated(self, old: Pod, new: Pod) -> None:
        self._pod_done(new)
        if old.metadata.uid != new.metadata.uid:  # the update hid a deletion and a new pod of the same name
            self._pod_gone(old)

    def _pod_gone(self, pod: Pod) -> None:
        key = pod_group_key(pod)
        if key is not None:
            self.queue.add(key)

    def sync(self, item: str) -> None:
        """Remove the protection finalizer from PodGroup ``item`` (``namespace/name``) when it is being deleted and
        no active pod names it (upstream ``processPodGroup``); a conflict is an ApiError: retried with backoff."""
        group = self.informers.get("PodGroup", item)
        if group is None or not self._deletion_candidate(group):
            return
        if any(pod_group_key(pod) == item and not pod.terminal for pod in self.informers.store("Pod").values()):
            return  # still in use: a pod's deletion or end brings the group back here
        finalizers = tuple(f for f in group.metadata.finalizers if f != POD_GROUP_PROTECTION_FINALIZER)
        try:
            self.cluster.update(attrs.evolve(group, metadata=attrs.evolve(group.metadata, finalizers=finalizers)))
        except NotFound:
            pass
