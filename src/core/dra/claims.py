"""Which ResourceClaims a pod uses, and whether a claim is its own, its PodGroup's, or reserved for it.

Shared by the DynamicResources plugin, the ResourceClaim controller and the
DeviceTaintEviction controller; mirrors upstream's
``k8s.io/dynamic-resource-allocation/resourceclaim`` helpers (``Name``,
``NameFromPodGroup``, ``IsForPod``, ``IsReservedForPod``, ``BindTo``) with
their error messages.

Claims shared by a PodGroup (KEP-5729, ``DRAWorkloadResourceClaims``): a pod
claim equal in every field to one of its PodGroup's ``spec.resourceClaims``
(:func:`~kubesched.core.api.scheduling_v1beta1.shared_claim`) is the group's
claim.  Its name comes from the PodGroup (a template's claim is the one the
ResourceClaim controller generated for the group, owned by the PodGroup, in
its ``status.resourceClaimStatuses``) and it is reserved for the PodGroup
(:func:`group_reference`), not for each pod.  Functions taking ``group``
treat claims as the pod's own when it is None.
"""

from __future__ import annotations

from kubesched.core.api.core_v1 import Pod, PodResourceClaim
from kubesched.core.api.resource_v1 import DeviceRequestAllocationResult, ResourceClaim, ResourceClaimConsumerReference
from kubesched.core.api.scheduling_v1beta1 import PodGroup, PodGroupResourceClaim, shared_claim

#: ``reservedFor[].apiGroup`` and ``resource`` of a PodGroup consumer.
POD_GROUP_API_GROUP = "scheduling.k8s.io"
POD_GROUP_RESOURCE = "podgroups"


class ClaimNameError(Exception):
    """The pod's claim cannot be resolved (not generated yet, or an unsupported reference)."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim, group: PodGroup | None = None) -> tuple[str | None, bool]:
    """The ResourceClaim name behind ``pod_claim`` and whether its owner must be
    checked (generated claims must be controlled by the pod, or by ``group``
    for the claims the pod shares with its PodGroup: see :func:`group_claim_name`).

    A name of None means the controller decided no claim is needed (skip it).
    Raises :class:`ClaimNameError` while a template's claim is not created yet
    (``pod "ns/name": ResourceClaim not created yet``) or when neither source is set.
    """
    shared = shared_claim(pod_claim, group) if group is not None else None
    if group is not None and shared is not None:
        return group_claim_name(group, shared)
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise ClaimNameError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}": ResourceClaim not created yet')
    raise ClaimNameError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}", spec.resourceClaim '
                         f'"{pod_claim.name}": resource claim reference not supported')


def group_claim_name(group: PodGroup, group_claim: PodGroupResourceClaim) -> tuple[str | None, bool]:
    """Upstream ``NameFromPodGroup``: the ResourceClaim behind one of ``group``'s
    ``spec.resourceClaims`` and whether it must be controlled by the group
    (a template's claim, read from ``status.resourceClaimStatuses``).  Raises
    :class:`ClaimNameError` (``PodGroup ns/name: ResourceClaim not created
    yet``) until the ResourceClaim controller recorded it."""
    where = f"PodGroup {group.metadata.namespace}/{group.metadata.name}"
    if group_claim.resource_claim_name is not None:
        return group_claim.resource_claim_name, False
    if group_claim.resource_claim_template_name is not None:
        for status in group.status.resource_claim_statuses:
            if status.name == group_claim.name:
                return status.resource_claim_name, True
        raise ClaimNameError(f"{where}: ResourceClaim not created yet")
    raise ClaimNameError(f"{where}, spec.resourceClaim {group_claim.name}: none of the supported fields are set")


def is_for_pod(pod: Pod, claim: ResourceClaim, group: PodGroup | None = None) -> bool:
    """True when ``pod`` (or, given, its PodGroup ``group``) is the claim's
    controlling owner: a claim generated for it."""
    owners = {pod.metadata.uid} if group is None else {pod.metadata.uid, group.metadata.uid}
    return any(ref.controller and ref.uid in owners for ref in claim.metadata.owner_references)


def not_for_pod_message(pod: Pod, claim: ResourceClaim, group: PodGroup | None = None) -> str:
    """Upstream's error when a claim generated from a template is not controlled by ``pod`` (or by its PodGroup
    ``group``, when given)."""
    where = f"{claim.metadata.namespace}/{claim.metadata.name}"
    if group is not None:
        return (f"ResourceClaim {where} was not created for Pod {pod.metadata.namespace}/{pod.metadata.name} or "
                f"PodGroup {group.metadata.namespace}/{group.metadata.name} (neither Pod nor PodGroup is the owner)")
    return f"ResourceClaim {where} was not created for pod {pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim, group: PodGroup | None = None) -> bool:
    """True when ``claim.status.reservedFor`` names the pod's UID (or, given,
    the UID of its PodGroup ``group``: upstream ``IsReservedForPod``)."""
    uids = {pod.metadata.uid} if group is None else {pod.metadata.uid, group.metadata.uid}
    return any(ref.uid in uids for ref in claim.status.reserved_for)


def pod_reference(pod: Pod) -> ResourceClaimConsumerReference:
    """``reservedFor`` entry of a pod (``resource: pods``)."""
    return ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)


def group_reference(group: PodGroup) -> ResourceClaimConsumerReference:
    """``reservedFor`` entry of a PodGroup (``apiGroup: scheduling.k8s.io, resource: podgroups``):
    one entry for all its pods, however many (the 256-entry limit counts consumers, not pods)."""
    return ResourceClaimConsumerReference(api_group=POD_GROUP_API_GROUP, resource=POD_GROUP_RESOURCE,
                                          name=group.metadata.name, uid=group.metadata.uid)


def is_group_reference(ref: ResourceClaimConsumerReference) -> bool:
    """True for a ``reservedFor`` entry naming a PodGroup."""
    return ref.api_group == POD_GROUP_API_GROUP and ref.resource == POD_GROUP_RESOURCE


def reserved_for_others(claim: ResourceClaim, uid: str) -> bool:
    """True when ``reservedFor`` holds a consumer other than ``uid``."""
    return any(ref.uid != uid for ref in claim.status.reserved_for)


def is_pod_done(pod: Pod) -> bool:
    """Upstream ``isPodDone``: finished, or deleted before it was scheduled;
    such a pod no longer uses its claims."""
    return pod.terminal or (pod.metadata.deletion_timestamp is not None and not pod.spec.node_name)


def pod_claims(pod: Pod, lookup, group: PodGroup | None = None) -> list[tuple[str, ResourceClaim]]:
    """``(pod claim name, ResourceClaim)`` for every claim the pod uses, in
    ``spec.resourceClaims`` order, looked up with ``lookup(namespace, name) ->
    ResourceClaim | None``; claims shared with the pod's PodGroup ``group``
    resolved through the group (see :func:`claim_name`).

    Raises :class:`ClaimNameError` with upstream's reason when a claim is not
    created yet, missing (``resourceclaim.resource.k8s.io "x" not found``),
    being deleted (``resourceclaim "x" is being deleted``) or generated for
    another pod (or PodGroup).
    """
    found: list[tuple[str, ResourceClaim]] = []
    namespace = pod.metadata.namespace
    for pod_claim in pod.spec.resource_claims:
        name, must_check_owner = claim_name(pod, pod_claim, group)
        if name is None:
            continue
        claim = lookup(namespace, name)
        if claim is None:
            raise ClaimNameError(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimNameError(f'resourceclaim "{name}" is being deleted')
        if must_check_owner and not is_for_pod(pod, claim, group):
            raise ClaimNameError(not_for_pod_message(pod, claim, group))
        found.append((pod_claim.name, claim))
    return found


def claim_keys(pod: Pod) -> list[str]:
    """``namespace/name`` of every ResourceClaim a pod of its own (no PodGroup) names, directly or through the
    claim generated from a template (recorded in ``status.resourceClaimStatuses``); a template's claim not
    created yet has none."""
    keys = []
    for pod_claim in pod.spec.resource_claims:
        try:
            name, _ = claim_name(pod, pod_claim)
        except ClaimNameError:
            continue
        if name is not None:
            keys.append(f"{pod.metadata.namespace}/{name}")
    return keys


def shared_claim_names(pod: Pod, group: PodGroup | None) -> set[str]:
    """The names (in the pod) of the pod's claims that are its PodGroup's (empty without ``group``)."""
    if group is None:
        return set()
    return {c.name for c in pod.spec.resource_claims if shared_claim(c, group) is not None}


def allocated_results(claim: ResourceClaim) -> tuple[DeviceRequestAllocationResult, ...]:
    """The devices allocated to ``claim`` (``status.allocation.devices.results``; () when unallocated)."""
    allocation = claim.status.allocation
    return allocation.devices.results if allocation is not None else ()
