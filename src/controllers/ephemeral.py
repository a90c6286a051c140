"""The ephemeral volume controller of the embedded cluster.

Stands in for kube-controller-manager's ``ephemeral-volume`` controller
(``pkg/controller/volume/ephemeral``): for every generic ephemeral volume of
a pod it creates the claim ``<pod name>-<volume name>`` from the volume's
``volumeClaimTemplate`` (its labels, annotations and spec), controlled by
the pod (an ownerReference with ``controller: true``).  When the pod is
deleted it deletes the claims the pod controls, as the garbage collector
would.
"""

from __future__ import annotations

from kubesched.core.api.core_v1 import PersistentVolumeClaim, Pod
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.cluster.client import AlreadyExists, NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.volume.claims import claim_key, ephemeral_pvc_name, volume_is_for_pod


class EphemeralVolumeController(Controller):
    """Work items are pod keys ``namespace/name``."""

    name = "ephemeral-volume-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.pods = self.informers.store("Pod")
        self.claims = self.informers.store("PersistentVolumeClaim")
        self.informers.add_handlers("Pod", self._pod_changed, lambda old, new: self._pod_changed(new),
                                    self._pod_deleted)

    def _pod_changed(self, pod: Pod) -> None:
        volumes = pod.spec.volumes
        if volumes and any(v.ephemeral is not None for v in volumes):
            self.queue.add(pod.key)

    def _pod_deleted(self, pod: Pod) -> None:
        for volume in pod.spec.volumes:
            if volume.ephemeral is None:
                continue
            name = ephemeral_pvc_name(pod, volume)
            claim = self.claims.get(claim_key(pod.metadata.namespace, name))
            if claim is not None and volume_is_for_pod(pod, claim) is None:
                try:
                    self.cluster.delete("PersistentVolumeClaim", name, pod.metadata.namespace, uid=claim.metadata.uid)
                except NotFound:
                    pass

    def sync(self, item) -> None:
        """Create the missing claims of pod ``item`` (``namespace/name``)'s generic ephemeral volumes, controlled by
        the pod; a pod being deleted gets none (upstream ``ephemeralController.syncHandler``)."""
        pod = self.pods.get(item)
        if pod is None or pod.metadata.deletion_timestamp is not None:
            return
        for volume in pod.spec.volumes:
            template = volume.ephemeral.volume_claim_template if volume.ephemeral is not None else None
            if template is None:
                continue
            name = ephemeral_pvc_name(pod, volume)
            if claim_key(pod.metadata.namespace, name) in self.claims:
                continue  # ours, or a conflicting claim VolumeBinding reports
            owner = OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid,
                                   controller=True, block_owner_deletion=True)
            claim = PersistentVolumeClaim(
                metadata=ObjectMeta(name=name, namespace=pod.metadata.namespace,
                                    labels=dict(template.metadata.labels),
                                    annotations=dict(template.metadata.annotations), owner_references=(owner,)),
                spec=template.spec,
            )
            try:
                self.cluster.create(claim)
            except AlreadyExists:
                pass
