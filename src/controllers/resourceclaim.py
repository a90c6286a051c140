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

PodGroups (KEP-5729, ``DRAWorkloadResourceClaims``):

- for every ``spec.resourceClaims`` entry of a PodGroup with
  ``resourceClaimTemplateName`` it creates one claim for the whole group
  (``generateName: <podgroup>-<claim>-``, the PodGroup as controlling owner,
  the same annotation) and records it in the PodGroup's
  ``status.resourceClaimStatuses``; a member pod's claim equal to that group
  claim is recorded in the pod's ``status.resourceClaimStatuses`` under the
  group's claim (never a claim of its own); a pod naming a PodGroup that does
  not exist yet gets nothing until it appears (upstream's
  ``podgroup.scheduling.k8s.io "g" not found``);
- a ``reservedFor`` entry naming a PodGroup stays while some pod of the group
  is not done (scheduled or still waiting to be); with none left the
  reservation goes and the claim is deallocated (KEP-5729: all pods of the
  group deleted -> deallocated, not deleted);
- it deletes a claim generated for a PodGroup once the PodGroup is gone and
  nothing reserves the claim (what the garbage collector does upstream; the
  embedded cluster has none).
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

from kubesched.core.api.core_v1 import Pod, PodResourceClaimStatus
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.api.resource_v1 import FINALIZER, POD_CLAIM_NAME_ANNOTATION, ResourceClaim
from kubesched.core.api.scheduling_v1beta1 import API_VERSION as SCHEDULING_API_VERSION
from kubesched.core.api.scheduling_v1beta1 import PodGroup, PodGroupResourceClaimStatus, pod_group_key, shared_claim
from kubesched.core.cluster.client import Invalid, NotFound
from kubesched.core.cluster.patch import patch_status
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.dra.allocated_devices import AllocatedState, conflicting_claims
from kubesched.core.dra.claims import is_group_reference, is_pod_done

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
    """Queue items: ``("pod", "ns/name")``, ``("podgroup", "ns/name")`` and ``("claim", "ns/name")``."""

    name = "resourceclaim-controller"

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        # generated claims not yet seen by the informer: (owner uid, claim name in the owner) -> claim name
        self._created: dict[tuple[str, str], str] = {}
        # PodGroup key -> keys of the pods naming it (handlers write, workers read)
        self._members: dict[str, set[str]] = {}
        self._members_lock = threading.Lock()
        inf = self.informers
        inf.add_handlers("Pod", self._pod_changed, lambda old, new: self._pod_changed(new), self._pod_deleted)
        inf.add_handlers("PodGroup", self._pod_group_changed, lambda old, new: self._pod_group_changed(new),
                         self._pod_group_deleted)
        # the devices the informer's claims hold (a claim registered twice only costs a scan), so that a claim
        # none of whose devices is held twice is never compared with every other claim; kept before a changed
        # claim is queued, so that its sync sees it
        self._held = AllocatedState.from_claims(inf.store("ResourceClaim").values())
        self._held_lock = threading.Lock()
        inf.add_handlers("ResourceClaim", lambda claim: self._hold(None, claim), self._hold,
                         lambda claim: self._hold(claim, None))
        inf.add_handlers("ResourceClaim", self._claim_changed, lambda old, new: self._claim_changed(new),
                         self._claim_changed)
        inf.add_handlers("ResourceClaimTemplate", self._template_changed,
                         lambda old, new: self._template_changed(new))

    # --- handlers ------------------------------------------------------------------------

    def _pod_deleted(self, pod: Pod) -> None:
        key = pod_group_key(pod)
        if key is not None:
            with self._members_lock:
                members = self._members.get(key)
                if members is not None:
                    members.discard(pod.key)
                    if not members:
                        del self._members[key]
        self._pod_changed(pod)

    def _pod_changed(self, pod: Pod) -> None:
        group_key = pod_group_key(pod)
        if group_key is not None:
            with self._members_lock:
                self._members.setdefault(group_key, set()).add(pod.key)
            group = self.informers.get("PodGroup", group_key)
            if group is not None:
                self._queue_group_claims(group)  # a member finishing may end the group's reservation
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

    def _pod_group_changed(self, group: PodGroup) -> None:
        if group.spec.resource_claims:
            self.queue.add(("podgroup", group.key))
        for key in self._member_keys(group.key):  # members waiting for the group or for its claims
            pod = self.informers.get("Pod", key)
            if pod is not None and pod.spec.resource_claims:
                self.queue.add(("pod", key))

    def _pod_group_deleted(self, group: PodGroup) -> None:
        self._queue_group_claims(group)
        for claim in self.informers.store("ResourceClaim").values():
            if claim.metadata.namespace == group.metadata.namespace and self._controlled_by(claim, group):
                self.queue.add(("claim", claim.key))

    def _queue_group_claims(self, group: PodGroup) -> None:
        """Queue the claims ``group`` shares with its pods (those it knows the names of)."""
        namespace = group.metadata.namespace
        for group_claim in group.spec.resource_claims:
            if group_claim.resource_claim_name:
                self.queue.add(("claim", f"{namespace}/{group_claim.resource_claim_name}"))
        for status in group.status.resource_claim_statuses:
            if status.resource_claim_name:
                self.queue.add(("claim", f"{namespace}/{status.resource_claim_name}"))

    def _member_keys(self, group_key: str) -> list[str]:
        with self._members_lock:
            return list(self._members.get(group_key, ()))

    def _claim_changed(self, claim: ResourceClaim) -> None:
        self.queue.add(("claim", claim.key))

    def _hold(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        with self._held_lock:
            if old is not None and old.status.allocation is not None:
                self._held.remove(old.status.allocation)
            if new is not None and new.status.allocation is not None:
                self._held.add(new.status.allocation)

    def _conflicting(self, claim: ResourceClaim) -> list[tuple[ResourceClaim, Any]]:
        """:func:`conflicting_claims` of ``claim`` among the informer's claims, read
        only when some device of ``claim`` is held by more than one claim."""
        if claim.status.allocation is None:
            return []
        with self._held_lock:
            contended = self._held.contended(claim.status.allocation)
        if not contended:
            return []
        return conflicting_claims(claim, self.informers.store("ResourceClaim").values())

    def _template_changed(self, template: Any) -> None:
        namespace, name = template.metadata.namespace, template.metadata.name
        for pod in self.informers.store("Pod").values():
            if pod.metadata.namespace == namespace and any(
                    c.resource_claim_template_name == name for c in pod.spec.resource_claims):
                self.queue.add(("pod", pod.key))
        for group in self.informers.store("PodGroup").values():
            if group.metadata.namespace == namespace and any(
                    c.resource_claim_template_name == name for c in group.spec.resource_claims):
                self.queue.add(("podgroup", group.key))

    # --- sync ----------------------------------------------------------------------------

    def sync(self, item: tuple[str, str]) -> None:
        """``item`` is ``("pod" | "podgroup" | "claim", "namespace/name")``: create a pod's or PodGroup's claims
        from templates, or clean up a claim's ``reservedFor`` and delete it when its owner is done (upstream
        ``Controller.syncHandler``)."""
        kind, key = item
        if kind == "pod":
            self._sync_pod(key)
        elif kind == "podgroup":
            self._sync_pod_group(key)
        else:
            self._sync_claim(key)

    def _sync_pod(self, key: str) -> None:
        pod = self.informers.get("Pod", key)
        if pod is None or is_pod_done(pod):
            return
        group: PodGroup | None = None
        group_key = pod_group_key(pod)
        if group_key is not None:
            group = self.informers.get("PodGroup", group_key)
            if group is None:
                return  # as upstream: nothing until the PodGroup exists (synced again when it appears)
        statuses = {s.name: s for s in pod.status.resource_claim_statuses}
        added = []
        for pod_claim in pod.spec.resource_claims:
            if pod_claim.resource_claim_template_name is None or pod_claim.name in statuses:
                continue
            group_claim = shared_claim(pod_claim, group) if group is not None else None
            if group is not None and group_claim is not None:
                # the group's claim, created by the PodGroup's sync (this pod is synced again then)
                claim_name = self._recorded(group, group_claim.name) or self._existing_claim(group, group_claim.name)
            else:
                claim_name = (self._existing_claim(pod, pod_claim.name, legacy=True)
                              or self._create_claim(pod, pod_claim.name, pod_claim.resource_claim_template_name))
            if claim_name is None:
                continue
            added.append(PodResourceClaimStatus(name=pod_claim.name, resource_claim_name=claim_name))
        if added:  # a strategic-merge patch (merged on name) of the informer's copy, on the pod's UID
            statuses = pod.status.resource_claim_statuses + tuple(added)
            try:
                patch_status(self.cluster, pod, attrs.evolve(pod.status, resource_claim_statuses=statuses))
            except Invalid:
                return  # replaced by another pod of that name meanwhile

    def _sync_pod_group(self, key: str) -> None:
        """Create the claims of the PodGroup's templates that it does not have
        yet and record them in its ``status.resourceClaimStatuses``."""
        group = self.informers.get("PodGroup", key)
        if group is None or group.metadata.deletion_timestamp is not None:
            return
        added = []
        for group_claim in group.spec.resource_claims:
            template_name = group_claim.resource_claim_template_name
            if template_name is None or self._recorded(group, group_claim.name) is not None:
                continue
            claim_name = (self._existing_claim(group, group_claim.name)
                          or self._create_claim(group, group_claim.name, template_name))
            if claim_name is not None:
                added.append(PodGroupResourceClaimStatus(name=group_claim.name, resource_claim_name=claim_name))
        if added:
            known = {s.name for s in group.status.resource_claim_statuses}
            statuses = group.status.resource_claim_statuses + tuple(s for s in added if s.name not in known)
            patch_status(self.cluster, group, attrs.evolve(group.status, resource_claim_statuses=statuses))

    @staticmethod
    def _recorded(group: PodGroup, group_claim_name: str) -> str | None:
        """The claim ``group.status.resourceClaimStatuses`` names for its claim ``group_claim_name``."""
        return next((s.resource_claim_name for s in group.status.resource_claim_statuses
                     if s.name == group_claim_name and s.resource_claim_name), None)

    def _existing_claim(self, owner: Any, claim_name: str, legacy: bool = False) -> str | None:
        """The claim generated for ``owner`` (a pod or a PodGroup) and its claim
        ``claim_name``: just created, or a claim it controls with the
        annotation (for a pod, also one of Kubernetes < 1.28's name ``<pod>-<claim>``)."""
        created = self._created.get((owner.metadata.uid, claim_name))
        if created is not None:
            return created
        old_name = f"{owner.metadata.name}-{claim_name}" if legacy else None
        for claim in self.informers.store("ResourceClaim").values():
            if claim.metadata.namespace != owner.metadata.namespace or not self._controlled_by(claim, owner):
                continue
            annotation = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
            if annotation == claim_name or (annotation is None and claim.metadata.name == old_name):
                return claim.metadata.name
        return None

    @staticmethod
    def _controlled_by(claim: ResourceClaim, owner: Any) -> bool:
        return any(ref.controller and ref.uid == owner.metadata.uid for ref in claim.metadata.owner_references)

    def _create_claim(self, owner: Any, claim_name: str, template_name: str) -> str | None:
        """Create the claim ``claim_name`` of ``owner`` (a pod or a PodGroup,
        its controlling owner) from its template; None (and a warning event)
        when the template does not exist: the owner is synced again when it appears."""
        namespace = owner.metadata.namespace
        is_pod = isinstance(owner, Pod)
        template = self.informers.get("ResourceClaimTemplate", f"{namespace}/{template_name}")
        if template is None:
            message = (f"{'PodResourceClaim' if is_pod else 'PodGroupResourceClaim'} {claim_name}: resource claim "
                       f'template "{template_name}": resourceclaimtemplate.resource.k8s.io "{template_name}" not found')
            self.recorder.event(owner, "Warning", "FailedResourceClaimCreation", "Create", message)
            return None
        meta = template.spec.metadata
        api_version, kind = ("v1", "Pod") if is_pod else (SCHEDULING_API_VERSION, "PodGroup")
        claim = ResourceClaim(
            metadata=ObjectMeta(
                generate_name=generate_name(owner.metadata.name, claim_name),
                namespace=namespace,
                labels=dict(meta.labels),
                annotations={**meta.annotations, POD_CLAIM_NAME_ANNOTATION: claim_name},
                owner_references=(OwnerReference(api_version=api_version, kind=kind, name=owner.metadata.name,
                                                 uid=owner.metadata.uid, controller=True,
                                                 block_owner_deletion=True),),
            ),
            spec=template.spec.spec,
        )
        created = self.cluster.create(claim)
        self._created[(owner.metadata.uid, claim_name)] = created.metadata.name
        return created.metadata.name

    def _sync_claim(self, key: str) -> None:
        claim = self.informers.get("ResourceClaim", key)
        if claim is None:
            return
        kept = tuple(ref for ref in claim.status.reserved_for if self._still_uses(claim, ref))
        unreserved = kept != claim.status.reserved_for
        withdrawn = None
        if not kept and claim.status.allocation is not None and claim.metadata.deletion_timestamp is None:
            withdrawn = self._withdraw_if_device_in_use(claim)
        elif kept:  # in use: an unused claim holding one of its devices is looked at again
            for other, _ in self._conflicting(claim):
                if not other.status.reserved_for:
                    self.queue.add(("claim", other.key))
        if withdrawn is not None:
            claim, unreserved = withdrawn, True
        elif unreserved:
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
        if claim.metadata.deletion_timestamp is None and not claim.status.reserved_for and self._owner_gone(claim):
            try:
                self.cluster.delete("ResourceClaim", claim.metadata.name, claim.metadata.namespace,
                                    uid=claim.metadata.uid)
            except NotFound:
                pass

    def _withdraw_if_device_in_use(self, claim: ResourceClaim) -> ResourceClaim | None:
        """A claim that no pod uses, allocated a device that a claim in use
        (reserved for a pod) also holds - a deposed leader's late write, which
        the API server accepts - gives its allocation up (and its reservations
        of pods that no longer use it), so that its pod is allocated again; a
        Warning Event on the claim names both claims and the device.  Returns
        the updated claim, or None when it keeps its allocation."""
        in_use = [(other, device) for other, device in self._conflicting(claim) if other.status.reserved_for]
        if not in_use:
            return None
        other, device = in_use[0]
        self.recorder.event(claim, "Warning", "DeviceAllocatedTwice", "Deallocate",
                            f"device {device} is also allocated to claim {other.key}, which is in use: "
                            f"the allocation of claim {claim.key} is withdrawn and made again")
        return self.cluster.update_status(attrs.evolve(claim, status=attrs.evolve(
            claim.status, allocation=None, devices=(), reserved_for=())))

    def _owner_gone(self, claim: ResourceClaim) -> bool:
        """Is the claim generated for a pod that is gone, replaced or done, or
        for a PodGroup that is gone or replaced?"""
        owner = next((ref for ref in claim.metadata.owner_references if ref.controller), None)
        if owner is None:
            return False
        key = f"{claim.metadata.namespace}/{owner.name}"
        if owner.kind == "Pod" and owner.api_version == "v1":
            pod = self.informers.get("Pod", key)
            return pod is None or pod.metadata.uid != owner.uid or is_pod_done(pod)
        if owner.kind == "PodGroup" and owner.api_version.partition("/")[0] == "scheduling.k8s.io":
            group = self.informers.get("PodGroup", key)
            return group is None or group.metadata.uid != owner.uid
        return False

    def _still_uses(self, claim: ResourceClaim, ref: Any) -> bool:
        if is_group_reference(ref):
            # a PodGroup uses the claim while one of its pods is not done (running, or still to be scheduled)
            members = (self.informers.get("Pod", key) for key in
                       self._member_keys(f"{claim.metadata.namespace}/{ref.name}"))
            return any(pod is not None and not is_pod_done(pod) for pod in members)
        if ref.api_group or ref.resource != "pods":
            return True  # not ours to judge
        pod = self.informers.get("Pod", f"{claim.metadata.namespace}/{ref.name}")
        return pod is not None and pod.metadata.uid == ref.uid and not is_pod_done(pod)

