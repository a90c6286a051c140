"""Which ResourceClaims a pod uses, and whether a claim is its own or reserved for it.

Shared by the DynamicResources plugin, the ResourceClaim controller and the
DeviceTaintEviction controller; mirrors upstream's
``k8s.io/dynamic-resource-allocation/resourceclaim`` helpers (``Name``,
``IsForPod``, ``IsReservedForPod``) with their error messages.
"""

from __future__ import annotations

from kubesched.core.api.core_v1 import Pod, PodResourceClaim
from kubesched.core.api.resource_v1 import DeviceRequestAllocationResult, ResourceClaim


class ClaimNameError(Exception):
    """The pod's claim cannot be resolved (not generated yet, or an unsupported reference)."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str | None, bool]:
    """The ResourceClaim name behind ``pod_claim`` and whether its owner must be
    checked (generated claims must be controlled by the pod).

    A name of None means the controller decided no claim is needed (skip it).
    Raises :class:`ClaimNameError` while a template's claim is not created yet
    (``pod "ns/name": ResourceClaim not created yet``) or when neither source is set.
    """
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise ClaimNameError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}": ResourceClaim not created yet')
    raise ClaimNameError(f'pod "{pod.metadata.namespace}/{pod.metadata.name}", spec.resourceClaim '
                         f'"{pod_claim.name}": resource claim reference not supported')


def is_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """True when ``pod`` is the claim's controlling owner (a claim generated for it)."""
    return any(ref.controller and ref.uid == pod.metadata.uid for ref in claim.metadata.owner_references)


def not_for_pod_message(pod: Pod, claim: ResourceClaim) -> str:
    return (f"ResourceClaim {claim.metadata.namespace}/{claim.metadata.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)")


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """True when ``claim.status.reservedFor`` names the pod's UID."""
    uid = pod.metadata.uid
    return any(ref.uid == uid for ref in claim.status.reserved_for)


def is_pod_done(pod: Pod) -> bool:
    """Upstream ``isPodDone``: finished, or deleted before it was scheduled;
    such a pod no longer uses its claims."""
    return pod.terminal or (pod.metadata.deletion_timestamp is not None and not pod.spec.node_name)


def pod_claims(pod: Pod, lookup) -> list[tuple[str, ResourceClaim]]:
    """``(pod claim name, ResourceClaim)`` for every claim the pod uses, in
    ``spec.resourceClaims`` order, looked up with ``lookup(namespace, name) ->
    ResourceClaim | None``.

    Raises :class:`ClaimNameError` with upstream's reason when a claim is not
    created yet, missing (``resourceclaim.resource.k8s.io "x" not found``),
    being deleted (``resourceclaim "x" is being deleted``) or generated for
    another pod.
    """
    found: list[tuple[str, ResourceClaim]] = []
    namespace = pod.metadata.namespace
    for pod_claim in pod.spec.resource_claims:
        name, must_check_owner = claim_name(pod, pod_claim)
        if name is None:
            continue
        claim = lookup(namespace, name)
        if claim is None:
            raise ClaimNameError(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimNameError(f'resourceclaim "{name}" is being deleted')
        if must_check_owner and not is_for_pod(pod, claim):
            raise ClaimNameError(not_for_pod_message(pod, claim))
        found.append((pod_claim.name, claim))
    return found


def allocated_results(claim: ResourceClaim) -> tuple[DeviceRequestAllocationResult, ...]:
    """The devices allocated to ``claim`` (``status.allocation.devices.results``; () when unallocated)."""
    allocation = claim.status.allocation
    return allocation.devices.results if allocation is not None else ()
