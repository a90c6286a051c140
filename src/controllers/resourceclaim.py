"""The ResourceClaim controller: claims from templates, and claims given back when pods finish.

Mirrors kube-controller-manager's ``resourceclaim`` controller
(``pkg/controller/resourceclaim``):

- for every pod claim with ``resourceClaimTemplateName`` it creates a
  ResourceClaim from the template (``generateName: <pod>-<claim>-``, truncated
  as upstream when longer than 57 characters; the template's labels and
  annotations plus ``resource.kubernetes.io/pod-claim-name``; the pod as
  controlling owner) and records it in ``pod.status.resourceClaimStatuses``;
  a missing template is a ``FailedResourceClaimCreation`` event (the pod is
  synced again when the template appears, instead of upstream's retries);
- it drops pods that are gone, replaced (another UID) or done from
  ``status.reservedFor``; a claim nobody reserves any more is deallocated and
  its ``resource.kubernetes.io/delete-protection`` finalizer removed;
- it deletes generated claims whose pod is gone or done, the claim the
  scheduler made for a pod's device-backed extended resources
  (``status.extendedResourceClaimStatus``) included.
"""

from __future__ import annotations

from typing import Any

import attrs

from kubesched.core.api.core_v1 import Pod, PodResourceClaimStatus
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.api.resource_v1 import FINALIZER, POD_CLAIM_NAME_ANNOTATION, ResourceClaim
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.dra.claims import is_for_pod, is_pod_done

#: generateName longer than this is truncated (room for the 5 random characters within 63).
MAX_GENERATE_NAME = 57


def generate_name(pod_name: str, claim_name: str) -> str:
    """Upstream's ``generateName`` for a pod's claim: ``<pod>-<claim>-``, or both
    parts cut in proportion to their lengths (no trailing hyphen) when longer
    than 57 characters."""
    full = f"{pod_name}-{claim_name}-"
    if len(full) <= MAX_GENERATE_NAME:
        return full
    total = len(full)
    return (pod_name[:len(pod_name) * MAX_GENERATE_NAME // total] + "-"
            + claim_name[:len(claim_name) * MAX_GENERATE_NAME // total])


class ResourceClaimController(Controller):
    """Queue items: ``("pod", "ns/name")`` and ``("claim", "ns/name")``."""

    name = "resourceclaim-controller"

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        # generated claims not yet seen by the informer: (pod uid, pod claim name) -> claim name
        self._created: dict[tuple[str, str], str] = {}
        inf = self.informers
        inf.add_handlers("Pod", self._pod_changed, lambda old, new: self._pod_changed(new), self._pod_changed)
        inf.add_handlers("ResourceClaim", self._claim_changed, lambda old, new: self._claim_changed(new),
                         self._claim_changed)
        inf.add_handlers("ResourceClaimTemplate", self._template_changed,
                         lambda old, new: self._template_changed(new))

    # --- handlers ------------------------------------------------------------------------

    def _pod_changed(self, pod: Pod) -> None:
        extended = pod.status.extended_resource_claim_status
        if extended is not None and extended.resource_claim_name:
            # the claim the scheduler made for the pod's extended resources: released like the others
            self.queue.add(("claim", f"{pod.metadata.namespace}/{extended.resource_claim_name}"))
        if not pod.spec.resource_claims:
            return
        self.queue.add(("pod", pod.key))
        for status in pod.status.resource_claim_statuses:
            if status.resource_claim_name:
                self.queue.add(("claim", f"{pod.metadata.namespace}/{status.resource_claim_name}"))
        for pod_claim in pod.spec.resource_claims:
            if pod_claim.resource_claim_name:
                self.queue.add(("claim", f"{pod.metadata.namespace}/{pod_claim.resource_claim_name}"))

    def _claim_changed(self, claim: ResourceClaim) -> None:
        self.queue.add(("claim", claim.key))

    def _template_changed(self, template: Any) -> None:
        namespace, name = template.metadata.namespace, template.metadata.name
        for pod in self.informers.store("Pod").values():
            if pod.metadata.namespace == namespace and any(
                    c.resource_claim_template_name == name for c in pod.spec.resource_claims):
                self.queue.add(("pod", pod.key))

    # --- sync ----------------------------------------------------------------------------

    def sync(self, item: tuple[str, str]) -> None:
        kind, key = item
        if kind == "pod":
            self._sync_pod(key)
        else:
            self._sync_claim(key)

    def _sync_pod(self, key: str) -> None:
        pod = self.informers.get("Pod", key)
        if pod is None or is_pod_done(pod):
            return
        statuses = {s.name: s for s in pod.status.resource_claim_statuses}
        added = []
        for pod_claim in pod.spec.resource_claims:
            if pod_claim.resource_claim_template_name is None or pod_claim.name in statuses:
                continue
            claim_name = self._existing_claim(pod, pod_claim.name) or self._create_claim(pod, pod_claim)
            if claim_name is None:
                continue
            added.append(PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=claim_name))
        if added:
            current = self.cluster.get("Pod", pod.metadata.name, pod.metadata.namespace)
            if current.metadata.uid != pod.metadata.uid:
                return
            known = {s.name for s in current.status.resource_claim_statuses}
            statuses = current.status.resource_claim_statuses + tuple(s for s in added if s.name not in known)
            self.cluster.update_status(attrs.evolve(current, status=attrs.evolve(
                current.status, resource_claim_statuses=statuses)))

    def _existing_claim(self, pod: Pod, pod_claim_name: str) -> str | None:
        created = self._created.get((pod.metadata.uid, pod_claim_name))
        if created is not None:
            return created
        legacy = f"{pod.metadata.name}-{pod_claim_name}"
        for claim in self.informers.store("ResourceClaim").values():
            if claim.metadata.namespace != pod.metadata.namespace or not is_for_pod(pod, claim):
                continue
            annotation = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
            if annotation == pod_claim_name or (annotation is None and claim.metadata.name == legacy):
                return claim.metadata.name
        return None

    def _create_claim(self, pod: Pod, pod_claim: Any) -> str | None:
        """Create the pod's claim from its template; None (and a warning event)
        when the template does not exist: the pod is synced again when it appears."""
        namespace = pod.metadata.namespace
        template = self.informers.get("ResourceClaimTemplate", f"{namespace}/{pod_claim.resource_claim_template_name}")
        if template is None:
            message = (f"PodResourceClaim {pod_claim.name}: resource claim template "
                       f'"{pod_claim.resource_claim_template_name}": resourceclaimtemplate.resource.k8s.io '
                       f'"{pod_claim.resource_claim_template_name}" not found')
            self.recorder.event(pod, "Warning", "FailedResourceClaimCreation", "Create", message)
            return None
        meta = template.spec.metadata
        claim = ResourceClaim(
            metadata=ObjectMeta(
                generate_name=generate_name(pod.metadata.name, pod_claim.name),
                namespace=namespace,
                labels=dict(meta.labels),
                annotations={**meta.annotations, POD_CLAIM_NAME_ANNOTATION: pod_claim.name},
                owner_references=(OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name,
                                                 uid=pod.metadata.uid, controller=True,
                                                 block_owner_deletion=True),),
            ),
            spec=template.spec.spec,
        )
        created = self.cluster.create(claim)
        self._created[(pod.metadata.uid, pod_claim.name)] = created.metadata.name
        return created.metadata.name

    def _sync_claim(self, key: str) -> None:
        claim = self.informers.get("ResourceClaim", key)
        if claim is None:
            return
        kept = tuple(ref for ref in claim.status.reserved_for if self._still_uses(claim, ref))
        unreserved = kept != claim.status.reserved_for
        if unreserved:
            status = attrs.evolve(claim.status, reserved_for=kept)
            if not kept and claim.status.allocation is not None and FINALIZER in claim.metadata.finalizers:
                status = attrs.evolve(status, allocation=None, devices=())
            claim = self.cluster.update_status(attrs.evolve(claim, status=status))
        elif claim.metadata.deletion_timestamp is not None and not kept and claim.status.allocation is not None \
                and FINALIZER in claim.metadata.finalizers:
            claim = self.cluster.update_status(attrs.evolve(claim, status=attrs.evolve(
                claim.status, allocation=None, devices=())))
        # as upstream: the finalizer goes with the last reservation this controller dropped, or from a claim
        # being deleted - never from one that merely has none yet (the scheduler writes the finalizer
        # first, then the allocation: removing it in between would undo the scheduler's binding)
        if ((unreserved or claim.metadata.deletion_timestamp is not None)
                and claim.status.allocation is None and not claim.status.reserved_for
                and FINALIZER in claim.metadata.finalizers):
            finalizers = tuple(f for f in claim.metadata.finalizers if f != FINALIZER)
            claim = self.cluster.update(attrs.evolve(claim, metadata=attrs.evolve(claim.metadata,
                                                                                  finalizers=finalizers)))
            if claim.metadata.deletion_timestamp is not None and not claim.metadata.finalizers:
                return  # the update completed the deletion
        owner = self._owner_pod(claim)
        if owner is not None and claim.metadata.deletion_timestamp is None and not claim.status.reserved_for:
            pod = self.informers.get("Pod", f"{claim.metadata.namespace}/{owner.name}")
            if pod is None or pod.metadata.uid != owner.uid or is_pod_done(pod):
                try:
                    self.cluster.delete("ResourceClaim", claim.metadata.name, claim.metadata.namespace,
                                        uid=claim.metadata.uid)
                except NotFound:
                    pass

    def _still_uses(self, claim: ResourceClaim, ref: Any) -> bool:
        if ref.api_group or ref.resource != "pods":
            return True  # not ours to judge (e.g. a PodGroup)
        pod = self.informers.get("Pod", f"{claim.metadata.namespace}/{ref.name}")
        return pod is not None and pod.metadata.uid == ref.uid and not is_pod_done(pod)

    @staticmethod
    def _owner_pod(claim: ResourceClaim) -> OwnerReference | None:
        return next((ref for ref in claim.metadata.owner_references
                     if ref.controller and ref.kind == "Pod" and ref.api_version == "v1"), None)

