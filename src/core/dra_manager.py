"""DRAManager: the scheduler's shared view of the resource.k8s.io objects.

Upstream's ``SharedDRAManager`` (``handle.SharedDRAManager()``): one per
scheduler, shared by every profile, so that two profiles never hand out the
same device.  It holds

- ResourceClaims in an :class:`AssumeCache` (PreBind's writes are visible at
  once, before the watch brings them back);
- the *in-flight* claims: allocated in Reserve, written only in PreBind.  Their
  devices count as allocated for every other scheduling cycle, and a pod that
  shares such a claim waits ("resource claim ... is in the process of being
  allocated");
- DeviceClasses, ResourceSlices and DeviceTaintRules from the informers.

Listeners registered with :meth:`DRAManager.add_listener` hear every change of
a claim's *effective* version (the in-flight copy if there is one, else the
cached one), which is all an incremental allocated-devices tracker needs.
"""

from __future__ import annotations

from typing import Any, Callable

from .api.resource_v1 import AllocationResult, DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from .assume_cache import AssumeCache
from .cluster.informer import Informers

#: ``listener(old, new)``: a claim's effective version changed (None: absent).
ClaimListener = Callable[[ResourceClaim | None, ResourceClaim | None], None]

#: CycleState key of the :class:`PlannedAllocations` the DynamicResources Filter publishes.
PLANNED_ALLOCATIONS_KEY = "kubesched.io/dra-planned-allocations"


class PlannedAllocations:
    """Per feasible node, the allocation DynamicResources' Filter found for each
    of the pod's unallocated claims: ``{node name: {"ns/claim": AllocationResult}}``.

    Score, Reserve and Permit plugins read it to see which devices the pod
    would get on a node (e.g. to prefer nodes whose GPUs fragment least)::

        planned = planned_allocations(state, node_info.name)   # None: no DRA claims
    """

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, AllocationResult]] = {}

    def set(self, node_name: str, allocations: dict[str, AllocationResult]) -> None:
        self._by_node[node_name] = allocations

    def get(self, node_name: str) -> dict[str, AllocationResult] | None:
        return self._by_node.get(node_name)


def planned_allocations(state: Any, node_name: str) -> dict[str, AllocationResult] | None:
    """The allocations DynamicResources planned on ``node_name`` this cycle
    (``{"ns/claim": AllocationResult}``), or None when the pod allocates no
    claim or the node was not feasible."""
    planned = state.get(PLANNED_ALLOCATIONS_KEY)
    return planned.get(node_name) if planned is not None else None


class DRAManager:
    """Claims (assumed and in flight), classes, slices and taint rules.

    Build it before the informers start (it registers the kinds it watches).
    All methods run on the scheduler's thread.
    """

    def __init__(self, informers: Informers):
        self._informers = informers
        self.claims = AssumeCache(informers, "ResourceClaim")
        self._in_flight: dict[str, ResourceClaim] = {}
        self._listeners: list[ClaimListener] = []
        for kind in ("DeviceClass", "ResourceSlice", "DeviceTaintRule"):
            informers.store(kind)
        self.claims.add_handler(self._cached_claim_changed)

    # --- listeners -----------------------------------------------------------------------

    def add_listener(self, listener: ClaimListener) -> None:
        """Call ``listener(old, new)`` on every change of a claim's effective
        version; it first hears every current claim as an add."""
        self._listeners.append(listener)
        for claim in self.claims.list():
            listener(None, self._in_flight.get(claim.metadata.uid, claim))

    def _notify(self, old: Any, new: Any) -> None:
        if old is new:
            return
        for listener in self._listeners:
            listener(old, new)

    def _cached_claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        uid = (new or old).metadata.uid
        if uid in self._in_flight:
            if new is None:  # deleted while in flight: the allocation goes with it
                self._notify(self._in_flight.pop(uid), None)
            return
        self._notify(old, new)

    # --- claims --------------------------------------------------------------------------

    def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The newest known version of a claim (assumed or from the API)."""
        return self.claims.get(f"{namespace}/{name}")

    def allocated_claims(self) -> list[ResourceClaim]:
        """Every claim whose devices are taken: allocated in the cache or in flight."""
        out = [c for c in self.claims.list()
               if c.status.allocation is not None and c.metadata.uid not in self._in_flight]
        out.extend(self._in_flight.values())
        return out

    def signal_claim_pending_allocation(self, claim: ResourceClaim) -> None:
        """Reserve allocated ``claim`` (with ``status.allocation`` set) for a pod;
        its devices are taken until :meth:`remove_claim_pending_allocation`."""
        uid = claim.metadata.uid
        old = self._in_flight.get(uid) or self.claims.get(claim.key)
        self._in_flight[uid] = claim
        self._notify(old, claim)

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        """End an in-flight allocation (PreBind wrote it, or Unreserve); returns
        whether there was one.  The cached version becomes effective again."""
        claim = self._in_flight.pop(uid, None)
        if claim is None:
            return False
        self._notify(claim, self.claims.get(claim.key))
        return True

    def assume_claim_after_api_call(self, claim: ResourceClaim) -> None:
        """Keep the version PreBind just wrote until the watch brings it back."""
        self.claims.assume(claim)

    def restore_claim(self, key: str) -> None:
        """Drop an assumed claim version (the API's version is effective again)."""
        self.claims.restore(key)

    # --- classes, slices, rules ----------------------------------------------------------

    def device_class(self, name: str) -> DeviceClass | None:
        return self._informers.get("DeviceClass", name)

    def device_classes(self) -> dict[str, DeviceClass]:
        return self._informers.store("DeviceClass")

    def slices(self) -> list[ResourceSlice]:
        return list(self._informers.store("ResourceSlice").values())

    def taint_rules(self) -> list[DeviceTaintRule]:
        return list(self._informers.store("DeviceTaintRule").values())
