"""DynamicResources' writes after Reserve (upstream keeps binding apart from allocating):
PreBind records each claim's allocation and consumer (``bindClaim``), creates the claim
of device-backed extended resources, refuses a device allocated twice and waits for the
devices' binding conditions (KEP-5007); Unreserve drops a reservation (and the
allocation nobody uses any more).  Every write goes through the cluster client with
upstream's conflict retries; what the scheduling loop must learn of a write (the claim
version to assume, an allocation no longer in flight) is handed to it with
``handle.on_loop``.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import attrs

from kubesched import ActionType, ClusterEvent, Code, PreBindWait, Status
from kubesched.core.api.meta import evolve
from kubesched.core.api.resource_v1 import FINALIZER, ResourceClaim, ResourceClaimConsumerReference
from kubesched.core.cluster.assume_cache import AssumeError
from kubesched.core.cluster.client import retry_on_conflict
from kubesched.core.cluster.patch import patch_status
from kubesched.core.dra.allocated_devices import conflicting_claims
from kubesched.core.dra.claims import allocated_results, pod_reference

from .extended import ExtendedResourceClaim, claim_to_create, record_in_pod

#: How often PreBind looks at the devices' binding conditions (seconds) and what it says when they time out.
BINDING_POLL_INTERVAL = 5.0
BINDING_TIMED_OUT = "binding timeout: the binding conditions of the allocated devices were not met in time"


class ClaimBinder:
    """The ResourceClaim writes of one DynamicResources plugin, on its framework ``handle``
    (cluster client, recorder, the scheduler's DRA manager, the loop)."""

    def __init__(self, handle: Any):
        self.handle = handle
        self.dra = handle.dra

    def bind_claim(self, claim: ResourceClaim, allocation: Any, shared: bool, pod,
                   consumer: ResourceClaimConsumerReference) -> ResourceClaim:
        """Upstream ``bindClaim``: finalizer (a normal update), then allocation and
        ``consumer`` (the pod, or its PodGroup) in ``reservedFor`` (a status
        update), retried on conflict with a fresh claim.  A PodGroup's claim
        that another member recorded meanwhile (the same allocation, the group
        already reserved) is left as it is.  ``allocation``: what this cycle
        allocated (None: the claim was allocated already); ``shared``: a claim
        of the pod's PodGroup.  Raises :class:`BindError` or the client's
        ApiError."""
        cluster = self.handle.cluster
        where = f"{claim.metadata.namespace}/{claim.metadata.name}"

        def attempt(current: ResourceClaim) -> ResourceClaim:
            if current.metadata.deletion_timestamp is not None:
                raise BindError(f"claim {where} got deleted in the meantime")
            if any(ref.uid == consumer.uid for ref in current.status.reserved_for):
                return current  # a member of the pod's group reserved it for the group
            if allocation is not None:
                if current.status.allocation is not None:
                    if not shared or current.status.allocation != allocation:
                        raise BindError(f"claim {where} got allocated elsewhere in the meantime")
                else:
                    if FINALIZER not in current.metadata.finalizers:
                        current = cluster.update(evolve(current, metadata=evolve(
                            current.metadata, finalizers=current.metadata.finalizers + (FINALIZER,))))
                    current = evolve(current, status=evolve(current.status, allocation=allocation))
            return cluster.update_status(evolve(current, status=evolve(
                current.status, reserved_for=current.status.reserved_for + (consumer,))))

        uid = claim.metadata.uid
        try:
            updated = retry_on_conflict(cluster, claim, attempt)
        except Exception:
            if allocation is not None:
                self.handle.on_loop(lambda: self.dra.release_claim_pending_allocation(uid, pod.metadata.uid))
            raise
        if allocation is not None:
            self.handle.on_loop(functools.partial(self._allocation_written, uid, updated))
        return updated

    def create_extended_claim(self, extended: ExtendedResourceClaim, allocation: Any, pod) -> ResourceClaim | None:
        """Create the pod's extended-resource claim (owned by the pod, annotated
        ``resource.kubernetes.io/extended-resource-claim: "true"``), write its
        allocation and the pod in ``reservedFor``, and record it in the pod's
        ``status.extendedResourceClaimStatus``.  Nothing to do on a node that
        serves the resources the classic way (``allocation`` None): returns
        None.  Returns the claim as written."""
        if allocation is None or extended.chosen is None:
            return None
        claim, mappings = extended.chosen
        cluster = self.handle.cluster
        uid = claim.metadata.uid
        try:
            created = cluster.create(claim_to_create(pod, claim))
            extended.created = created
            updated = cluster.update_status(attrs.evolve(created, status=attrs.evolve(
                created.status, allocation=allocation, reserved_for=(pod_reference(pod),))))
        except Exception:
            self.handle.on_loop(lambda: self.dra.release_claim_pending_allocation(uid, pod.metadata.uid))
            raise
        extended.created = updated
        self.handle.on_loop(functools.partial(self._allocation_written, uid, updated))
        record_in_pod(cluster, pod, mappings, updated.metadata.name)
        return updated

    def device_conflict(self, pod, claims: Sequence[tuple[ResourceClaim, Any, str]]) -> tuple[int, Status] | None:
        """Never bind a pod whose claim, as PreBind left it, holds a device
        that another claim in use (reserved for another consumer) holds too:
        what a deposed leader's late allocation write leaves behind (it may
        have allocated and reserved the claim for this very pod meanwhile).
        The claim in use keeps the device; the pod fails its binding cycle
        (Unschedulable) and Unreserve drops its reservation and withdraws the
        allocation (on the resourceVersion read: a reservation made meanwhile
        is never lost; the ResourceClaim controller withdraws an allocation no
        running pod uses too), and the pod is allocated again.  Withdrawing it
        here, not only in the controller, matters: a pod retried at once would
        otherwise reserve the same claim again before the controller sees it
        unused, again and again.  A Warning Event names both claims and the
        device.  ``claims``: each claim as PreBind left it, the allocation this
        cycle planned for it (None: none) and the UID of its consumer.
        Returns the index of the refused claim and the Unschedulable status,
        or None."""
        for index, (claim, planned, consumer) in enumerate(claims):
            allocation = claim.status.allocation
            if allocation is None:
                continue
            if planned == allocation:
                continue  # this cycle's allocation, from devices known free (a later stray write is withdrawn)
            for other, device in conflicting_claims(claim, self.dra.allocated_claims()):
                if not any(ref.uid != consumer for ref in other.status.reserved_for):
                    continue  # not in use: the controller withdraws that one
                message = (f"device {device} of claim {claim.key} is also allocated to claim {other.key}, "
                           f"which is in use: not binding until claim {claim.key} is allocated again")
                self.handle.recorder.event(pod, "Warning", "DeviceAllocatedTwice", "Binding", message)
                return index, Status.unschedulable(message)
        return None

    def wait_for_binding_conditions(self, pod, node_name: str, claims: Sequence[ResourceClaim],
                                    timeout: float) -> PreBindWait | None:
        """None when no device of ``claims`` has binding conditions; else a
        Normal ``BindingConditionsPending`` Event on the pod and the
        :class:`PreBindWait` the binding cycle polls every
        :data:`BINDING_POLL_INTERVAL` seconds until the conditions are met, one
        fails or ``timeout`` seconds pass (:data:`BINDING_TIMED_OUT`)."""
        waiting = [claim.key for claim in claims if binding_conditions(claim)]
        if not waiting:
            return None
        self.handle.recorder.event(pod, "Normal", "BindingConditionsPending", "Scheduling",
                                   f"waiting for binding conditions of devices on node {node_name}")
        return PreBindWait(lambda: self.binding_state(waiting), timeout, BINDING_POLL_INTERVAL, BINDING_TIMED_OUT)

    def binding_state(self, claim_keys: list[str]) -> Status | None:
        """None once every binding condition of every device is True in the
        claims' ``status.devices``; an Error naming the device when one of its
        binding failure conditions is True; Wait otherwise."""
        pending = False
        for key in claim_keys:
            namespace, _, name = key.partition("/")
            claim = self.dra.get_claim(namespace, name)
            if claim is None or claim.status.allocation is None:
                return Status(Code.ERROR, (f"claim {key} lost its allocation while waiting for binding conditions",))
            conditions = device_conditions(claim)
            for result, wanted, failures in binding_conditions(claim):
                true = conditions.get((result.driver, result.pool, result.device), set())
                failed = sorted(true & set(failures))
                if failed:
                    return Status(Code.ERROR, (f"claim {key}: device {result.driver}/{result.pool}/{result.device}: "
                                               f"binding failure condition {failed[0]} is true",))
                pending = pending or not set(wanted) <= true
        return Status(Code.WAIT) if pending else None

    def drop_reservation(self, claim: ResourceClaim, uid: str, deallocate: bool = False) -> None:
        """Remove consumer ``uid`` (a pod, or a PodGroup) from ``reservedFor``
        with a strategic-merge patch of the claim's status and its UID as
        precondition (upstream's Unreserve: a ``$patch: delete`` of the entry).
        A claim nobody else uses is deallocated too (allocation and device
        status cleared, on the resourceVersion read, so no reservation made
        meanwhile is lost) when ``deallocate`` (a PodGroup's claim whose group
        failed) or when its devices have binding conditions (binding failed or
        timed out, so the devices go back)."""
        def attempt(current: ResourceClaim) -> ResourceClaim:
            kept = tuple(ref for ref in current.status.reserved_for if ref.uid != uid)
            status = attrs.evolve(current.status, reserved_for=kept)
            if not kept and (deallocate or binding_conditions(current)):
                status = attrs.evolve(status, allocation=None, devices=())
                return patch_status(self.handle.cluster, current, status, current.metadata.resource_version)
            return patch_status(self.handle.cluster, current, status)

        retry_on_conflict(self.handle.cluster, claim, attempt)


    def _allocation_written(self, uid: str, written: ResourceClaim) -> None:
        """On the scheduling loop, once PreBind wrote a claim's allocation: that
        version is assumed until the watch brings it back, and the allocation
        is no longer in flight (its devices stay taken throughout)."""
        try:
            self.dra.assume_claim_after_api_call(written)
        except AssumeError:
            pass  # the watch already brought a newer version
        released = self.dra.remove_claim_pending_allocation(uid)
        if released is not None:
            # a pod sharing the claim may have been refused meanwhile ("in the process of being
            # allocated") after the watch event had come: retry it as that event would
            self.handle.move_pods(ClusterEvent("ResourceClaim", ActionType.UPDATE), released, written)


def binding_conditions(claim: ResourceClaim) -> list[tuple[Any, tuple[str, ...], tuple[str, ...]]]:
    """(allocation result, binding conditions, binding failure conditions) of
    each allocated device of ``claim`` that has binding conditions (KEP-5007)."""
    return [(result, result.binding_conditions, result.binding_failure_conditions)
            for result in allocated_results(claim) if result.binding_conditions]


def device_conditions(claim: ResourceClaim) -> dict[tuple[str, str, str], set[str]]:
    """(driver, pool, device) -> the condition types that are True in the claim's ``status.devices``."""
    return {(entry.driver, entry.pool, entry.device): {c.type for c in entry.conditions if c.status == "True"}
            for entry in claim.status.devices}


class BindError(Exception):
    """PreBind cannot record the claim (deleted or allocated elsewhere meanwhile)."""

