"""DRAManager: the scheduler's shared view of the resource.k8s.io objects.

Upstream's ``SharedDRAManager`` (``handle.SharedDRAManager()``): one per
scheduler, shared by every profile, so that two profiles never hand out the
same device.  It holds

- ResourceClaims in an :class:`AssumeCache` (PreBind's writes are visible at
  once, before the watch brings them back);
- the *in-flight* claims: allocated in Reserve, written only in PreBind.  Their
  devices count as allocated for every other scheduling cycle, and a pod that
  shares such a claim waits ("resource claim ... is in the process of being
  allocated") - unless the allocation was made for a PodGroup's claim by a
  member of its group in the group's cycle: later members then *share* it
  (:meth:`DRAManager.share_claim_pending_allocation`), and it ends when the
  last of them lets go (:meth:`DRAManager.release_claim_pending_allocation`),
  which the group cycle's revert, last member first, makes the first member;
- DeviceClasses, ResourceSlices and DeviceTaintRules from the informers;
- :attr:`DRAManager.allocated`: the devices those claims use (upstream's
  ``GatherAllocatedState``), kept current as claims change.

Listeners registered with :meth:`DRAManager.add_listener` hear every change of
a claim's *effective* version (the in-flight copy if there is one, else the
cached one), which is all an incremental allocated-devices tracker needs;
those registered with :meth:`DRAManager.add_device_listener` hear only the
devices whose use may have changed (columns over devices re-read them).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np

from kubesched.core.api.core_v1 import Node, is_extended_resource
from kubesched.core.api.resource_v1 import (
    IMPLICIT_EXTENDED_RESOURCE_PREFIX,
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.core.cel import CelCompileError, CelRuntimeError
from kubesched.core.cluster.assume_cache import AssumeCache
from kubesched.core.cluster.informer import Informers, changed_object
from kubesched.core.dra.allocated_devices import AllocatedState, DeviceID
from kubesched.core.dra.allocator.pools import node_matches, slice_targets
from kubesched.core.dra.selectors import SelectorCache

#: ``listener(old, new)``: a claim's effective version changed (None: absent).
ClaimListener = Callable[[ResourceClaim | None, ResourceClaim | None], None]
#: ``listener(devices)``: the use of these devices may have changed.
DeviceListener = Callable[[set[DeviceID]], None]

#: CycleState key of the :class:`PlannedAllocations` the DynamicResources Filter publishes.
PLANNED_ALLOCATIONS_KEY = "kubesched.io/dra-planned-allocations"
#: CycleState key of the device preferences plugins registered (:func:`prefer_devices`).
DEVICE_PREFERENCES_KEY = "kubesched.io/dra-device-preferences"

#: ``key(device) -> sortable``: a plugin's device preference (lower sorts first).
DeviceKey = Callable[[DeviceID], Any]

#: ``planner(node name, device order or None) -> {"ns/claim": AllocationResult} | None``.
Planner = Callable[[str, "DeviceKey | None"], "dict[str, AllocationResult] | None"]


def prefer_devices(state: Any, key: DeviceKey) -> None:
    """Ask DynamicResources to try devices in ascending ``key(DeviceID)`` order
    (stable: ties keep ResourceSlice order) when it allocates this pod's
    claims.  Upstream's allocator takes the first devices that fit; a plugin
    that cares *which* ones (the GPU that fragments least, the fullest
    shareable GPU) registers a preference at any extension point up to
    Reserve - PreFilter if it must hold even when only one node is feasible
    and Score is skipped.  ``key`` is called when a plan is made (for the
    chosen node in Reserve, or when a plugin reads a plan), with the cluster
    as it is then.  With several preferences the first registered decides
    and later ones break its ties.  Feasibility never changes: the
    allocator's search is complete, only the choice among valid allocations does.
    """
    preferences = state.get(DEVICE_PREFERENCES_KEY)
    if preferences is None:
        preferences = []
        state.write(DEVICE_PREFERENCES_KEY, preferences)
    preferences.append(key)


def device_order(state: Any) -> DeviceKey | None:
    """The combined device preference of this cycle (None: upstream's order)."""
    keys = tuple(state.get(DEVICE_PREFERENCES_KEY) or ())
    if not keys:
        return None
    if len(keys) == 1:
        return keys[0]
    return lambda device: tuple(key(device) for key in keys)


class PlannedAllocations:
    """Per feasible node, the allocation DynamicResources found for each of the
    pod's unallocated claims: ``{node name: {"ns/claim": AllocationResult}}``.

    Score, Reserve and Permit plugins read it to see which devices the pod
    would get on a node (e.g. to prefer nodes whose GPUs fragment least)::

        planned = planned_allocations(state, node_info.name)   # None: no DRA claims

    Plans are made on demand (``planner``, set by DynamicResources): a node's
    plan is computed the first time someone asks for it, in the device order
    the cycle's preferences give (:func:`prefer_devices`), and made again when
    a preference was added since.
    """

    def __init__(self, planner: Planner | None = None, state: Any = None) -> None:
        self._by_node: dict[str, tuple[int, dict[str, AllocationResult] | None]] = {}
        self._planner = planner
        self._state = state

    def _preferences(self) -> int:
        return len(self._state.get(DEVICE_PREFERENCES_KEY) or ()) if self._state is not None else 0

    def set(self, node_name: str, allocations: dict[str, AllocationResult]) -> None:
        """Record the plan found for ``node_name`` in upstream's device order."""
        self._by_node[node_name] = (0, allocations)

    def get(self, node_name: str) -> dict[str, AllocationResult] | None:
        """The plan for ``node_name``, made now if needed; None when the pod's
        claims cannot be allocated there (or it has none to allocate)."""
        preferences = self._preferences()
        known = self._by_node.get(node_name)
        if known is not None and known[0] == preferences:
            return known[1]
        if self._planner is None:
            return None
        plan = self._planner(node_name, device_order(self._state) if preferences else None)
        self._by_node[node_name] = (preferences, plan)
        return plan


def planned_allocations(state: Any, node_name: str) -> dict[str, AllocationResult] | None:
    """The allocations DynamicResources plans on ``node_name`` this cycle
    (``{"ns/claim": AllocationResult}``), or None when the pod allocates no
    claim or the node is not feasible."""
    planned = state.get(PLANNED_ALLOCATIONS_KEY)
    return planned.get(node_name) if planned is not None else None


#: How many (DeviceClass, node) device lists DRAManager.class_devices remembers before starting over
MAX_REMEMBERED_CLASS_DEVICES = 65536
#: How many (DeviceClass, NodeTable) device counts DRAManager.class_device_counts keeps current (the
#: least recently used goes first)
MAX_CLASS_DEVICE_COUNTS = 8


class _ClassDeviceCounts:
    """The devices of one DeviceClass on the nodes of one NodeTable, as columns:
    ``row`` per device, ``total`` per row; ``in_use`` per device (some claim
    uses it) and ``used`` per row, brought up to date from the devices whose
    claims changed (``changed``) when asked."""

    def __init__(self, table: Any, generation: int, devices: list[list[DeviceID]]):
        self.table = table
        self.generation = generation
        self.index = {device: d for d, device in enumerate(device for ids in devices for device in ids)}
        self.row = np.repeat(np.arange(len(devices), dtype=np.int64), [len(ids) for ids in devices])
        self.total = np.array([len(ids) for ids in devices], dtype=np.int64)
        self.in_use = np.zeros(len(self.index), dtype=bool)
        self.used = np.zeros(len(devices), dtype=np.int64)
        self.changed: set[DeviceID] | None = None  # None: every device




class DRAManager:
    """Claims (assumed and in flight), classes, slices and taint rules.

    Build it before the informers start (it registers the kinds it watches).
    All methods run on the scheduler's thread (PreBind on a binding worker reaches
    them through ``Handle.on_loop``).
    """

    def __init__(self, informers: Informers):
        self._informers = informers
        self.claims = AssumeCache(informers, "ResourceClaim")
        self._in_flight: dict[str, ResourceClaim] = {}
        #: claim UID -> (the PodGroup key its in-flight allocation was made for, or None; holder pod UIDs)
        self._holders: dict[str, tuple[str | None, set[str]]] = {}
        #: devices used by allocated and in-flight claims
        self.allocated = AllocatedState.from_claims(self.claims.list())
        self._listeners: list[ClaimListener] = [self._track_allocated]
        self._slices_by_node: dict[str, list[ResourceSlice]] | None = None
        #: grows whenever a ResourceSlice is added, changed or deleted
        self.slice_generation = 0
        for kind in ("DeviceClass", "ResourceSlice", "DeviceTaintRule"):
            informers.store(kind)
        informers.add_handlers("ResourceSlice", self._slices_changed, lambda old, new: self._slices_changed(new),
                               self._slices_changed)
        #: spec.extendedResourceName -> DeviceClass (the first by name), rebuilt after a class changes
        self._extended_names: dict[str, str] | None = None
        #: node -> the devices it can use (see _node_devices), for slice_generation _node_devices_generation
        self._node_devices_cache: dict[str, list[tuple[DeviceID, ResourceSlice, Any]]] = {}
        self._node_devices_generation = -1
        #: (class, node) -> class_devices' answer, dropped when a slice or class changes (at most
        #: MAX_REMEMBERED_CLASS_DEVICES entries)
        self._class_devices: dict[tuple[str, str], frozenset[DeviceID]] = {}
        self._selectors = SelectorCache()
        #: (class, NodeTable) -> its device counts (class_device_counts), at most MAX_CLASS_DEVICE_COUNTS
        self._class_counts: dict[tuple[str, Any], _ClassDeviceCounts] = {}
        self._device_listeners: list[DeviceListener] = [self._note_device_use]
        informers.add_handlers("DeviceClass", self._classes_changed, lambda old, new: self._classes_changed(new),
                               self._classes_changed)
        self.claims.add_handler(self._cached_claim_changed)

    def _track_allocated(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        before = old.status.allocation if old is not None else None
        after = new.status.allocation if new is not None else None
        if before is after or (before is not None and after is not None and before == after):
            return  # the same devices (an in-flight allocation written, a reservation added)
        if before is not None:
            self.allocated.remove(before)
        if after is not None:
            self.allocated.add(after)

    def _note_device_use(self, devices: set[DeviceID]) -> None:
        """The class device counts re-read these devices."""
        for counts in self._class_counts.values():
            if counts.changed is not None:
                counts.changed.update(devices)

    def _classes_changed(self, _class) -> None:
        self._extended_names = None
        self._class_devices.clear()
        self._class_counts.clear()

    def _slices_changed(self, _slice) -> None:
        self._slices_by_node = None
        self.slice_generation += 1

    # --- listeners -----------------------------------------------------------------------

    def add_listener(self, listener: ClaimListener) -> None:
        """Call ``listener(old, new)`` on every change of a claim's effective
        version; it first hears every current claim as an add."""
        self._listeners.append(listener)
        for claim in self.claims.list():
            listener(None, self._in_flight.get(claim.metadata.uid, claim))

    def add_device_listener(self, listener: DeviceListener) -> None:
        """Call ``listener(devices)`` with the devices of a claim whose
        effective version allocates other devices than before (the old and the
        new allocation's); a change that keeps the allocation (it is written,
        a reservation is added) is not reported.  It first hears every device
        in use."""
        self._device_listeners.append(listener)
        listener(self.allocated.allocated_ids())

    def _notify(self, old: Any, new: Any) -> None:
        if old is new:
            return
        for listener in self._listeners:
            listener(old, new)
        before = old.status.allocation if old is not None else None
        after = new.status.allocation if new is not None else None
        if before is after or (before is not None and after is not None and before == after):
            return
        devices = {DeviceID.of(r) for allocation in (before, after) if allocation is not None
                   for r in allocation.devices.results}
        for device_listener in self._device_listeners:
            device_listener(devices)

    def _cached_claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        uid = changed_object(old, new).metadata.uid
        if uid in self._in_flight:
            if new is None:  # deleted while in flight: the allocation goes with it
                self._holders.pop(uid, None)
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

    def signal_claim_pending_allocation(self, claim: ResourceClaim, holder: str = "",
                                        group: str | None = None) -> None:
        """Reserve allocated ``claim`` (with ``status.allocation`` set) for pod
        ``holder`` (its UID); its devices are taken until
        :meth:`remove_claim_pending_allocation`, or until every holder released it
        (:meth:`release_claim_pending_allocation`).  ``group``: the key of the
        PodGroup whose shared claim this is (its members may share the allocation)."""
        uid = claim.metadata.uid
        old = self._in_flight.get(uid) or self.claims.get(claim.key)
        self._in_flight[uid] = claim
        self._holders[uid] = (group, {holder})
        self._notify(old, claim)

    def claim_has_pending_allocation(self, uid: str) -> bool:
        """Whether claim ``uid`` has an allocation made by the scheduler that the API has not confirmed yet
        (upstream ``ClaimHasPendingAllocation``)."""
        return uid in self._in_flight

    def group_pending_allocation(self, uid: str, group: str) -> ResourceClaim | None:
        """The in-flight version of claim ``uid`` when its allocation was made
        for PodGroup ``group`` (``namespace/name``), else None."""
        holders = self._holders.get(uid)
        if holders is None or holders[0] != group:
            return None
        return self._in_flight.get(uid)

    def share_claim_pending_allocation(self, uid: str, holder: str) -> bool:
        """Pod ``holder`` uses the in-flight allocation of claim ``uid`` too (a
        member of the PodGroup it was made for); False when it is no longer in flight."""
        holders = self._holders.get(uid)
        if holders is None:
            return False
        holders[1].add(holder)
        return True

    def release_claim_pending_allocation(self, uid: str, holder: str) -> ResourceClaim | None:
        """Pod ``holder`` no longer uses the in-flight allocation of claim ``uid``
        (Unreserve); the allocation ends (and is returned, as
        :meth:`remove_claim_pending_allocation` does) when no holder is left."""
        holders = self._holders.get(uid)
        if holders is None:
            return None
        holders[1].discard(holder)
        return None if holders[1] else self.remove_claim_pending_allocation(uid)

    def remove_claim_pending_allocation(self, uid: str) -> ResourceClaim | None:
        """End an in-flight allocation, whoever holds it (PreBind wrote it);
        returns the in-flight version, None when there was none.  The cached
        version becomes effective again."""
        self._holders.pop(uid, None)
        claim = self._in_flight.pop(uid, None)
        if claim is None:
            return None
        self._notify(claim, self.claims.get(claim.key))
        return claim

    def assume_claim_after_api_call(self, claim: ResourceClaim) -> None:
        """Keep the version PreBind just wrote until the watch brings it back."""
        self.claims.assume(claim)

    def restore_claim(self, key: str) -> None:
        """Drop an assumed claim version (the API's version is effective again)."""
        self.claims.restore(key)

    # --- classes, slices, rules ----------------------------------------------------------

    def device_class(self, name: str) -> DeviceClass | None:
        """DeviceClass ``name`` from the informer, or None."""
        return self._informers.get("DeviceClass", name)

    def device_classes(self) -> Mapping[str, DeviceClass]:
        """DeviceClasses by name (the informer's thread-safe view)."""
        return self._informers.store("DeviceClass")

    def extended_resource_class(self, resource: str) -> str | None:
        """The DeviceClass whose devices can serve extended resource ``resource``
        (KEP-5004): the class naming it in ``spec.extendedResourceName`` (the first
        by name), or the class ``<c>`` of ``deviceclass.resource.kubernetes.io/<c>``;
        None when no class does."""
        if resource.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX):
            name = resource[len(IMPLICIT_EXTENDED_RESOURCE_PREFIX):]
            return name if self.device_class(name) is not None else None
        if self._extended_names is None:
            self._extended_names = {}
            for name, device_class in sorted(self.device_classes().items()):
                if device_class.spec.extended_resource_name:
                    self._extended_names.setdefault(device_class.spec.extended_resource_name, name)
        return self._extended_names.get(resource)

    def class_devices(self, class_name: str, node: Node) -> frozenset[DeviceID]:
        """The devices of DeviceClass ``class_name`` that ``node`` can use (the
        newest generation of each pool: its slices, and devices of per-device
        node selection that target it) whose class selectors match (memoised
        per device content)."""
        devices = self._node_devices(node)  # first: a slice change drops the remembered answers
        key = (class_name, node.metadata.name)
        remembered = self._class_devices.get(key)
        if remembered is not None:
            return remembered
        device_class = self.device_class(class_name)
        if device_class is None:
            return frozenset()
        selectors = [s.expression or "" for s in device_class.spec.selectors]
        found = []
        for device_id, resource_slice, device in devices:
            try:
                matched = self._selectors.matches_all(selectors, resource_slice, device)
            except (CelCompileError, CelRuntimeError):
                continue  # such a device is never allocated for the class either
            if matched:
                found.append(device_id)
        if len(self._class_devices) >= MAX_REMEMBERED_CLASS_DEVICES:
            self._class_devices.clear()
        self._class_devices[key] = answer = frozenset(found)
        return answer

    def class_device_counts(self, class_name: str, table: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``table`` (a NodeTable): how many devices of DeviceClass
        ``class_name`` the node can use (:meth:`class_devices`) and how many of
        them some claim uses (upstream's ``calculateResourceAllocatableRequest``
        for an extended resource that devices serve).  Kept as columns,
        rebuilt when a slice or class changes and re-read for the devices
        whose claims changed; int64 arrays, not to be modified."""
        key = (class_name, table)
        counts = self._class_counts.pop(key, None)  # put back last: the least recently used goes first
        if counts is None or counts.generation != self.slice_generation:
            if len(self._class_counts) >= MAX_CLASS_DEVICE_COUNTS:
                del self._class_counts[next(iter(self._class_counts))]
            devices = [sorted(self.class_devices(class_name, info.node)) if info.node is not None else []
                       for info in table.infos]
            counts = _ClassDeviceCounts(table, self.slice_generation, devices)
        self._class_counts[key] = counts
        changed, counts.changed = counts.changed, set()
        allocated = self.allocated
        if changed is None:
            positions = list(counts.index.values())
            counts.in_use[positions] = [allocated.is_allocated(device) for device in counts.index]
            counts.used = np.bincount(counts.row[counts.in_use], minlength=len(counts.total))
        else:
            for device in changed:
                d = counts.index.get(device)
                if d is not None and counts.in_use[d] != (now := allocated.is_allocated(device)):
                    counts.in_use[d] = now
                    counts.used[counts.row[d]] += 1 if now else -1
        return counts.total, counts.used

    def _node_devices(self, node: Node) -> list[tuple[DeviceID, ResourceSlice, Any]]:
        """(id, slice, device) of every device ``node`` can use, kept per node until a slice changes."""
        if self._node_devices_generation != self.slice_generation:
            self._node_devices_cache.clear()
            self._class_devices.clear()
            self._node_devices_generation = self.slice_generation
        cached = self._node_devices_cache.get(node.metadata.name)
        if cached is not None:
            return cached
        newest: dict[tuple[str, str], int] = {}
        candidates = self.node_slices(node.metadata.name) + [
            s for s in self.slices() if not s.spec.node_name and slice_targets(s, node)]
        for resource_slice in candidates:
            pool = (resource_slice.spec.driver, resource_slice.spec.pool.name)
            newest[pool] = max(newest.get(pool, resource_slice.spec.pool.generation), resource_slice.spec.pool.generation)
        devices = []
        for resource_slice in candidates:
            spec = resource_slice.spec
            if spec.pool.generation != newest[(spec.driver, spec.pool.name)]:
                continue
            for device in spec.devices:
                if spec.per_device_node_selection and not node_matches(
                        node, device.node_name, device.all_nodes, device.node_selector):
                    continue
                devices.append((DeviceID(spec.driver, spec.pool.name, device.name), resource_slice, device))
        self._node_devices_cache[node.metadata.name] = devices
        return devices

    def device_backed(self, resources: Iterable[str]) -> dict[str, str]:
        """{resource: DeviceClass} for the extended resources among ``resources``
        that devices can serve (see :meth:`extended_resource_class`)."""
        out = {}
        for resource in resources:
            if is_extended_resource(resource) or resource.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX):
                class_name = self.extended_resource_class(resource)
                if class_name is not None:
                    out[resource] = class_name
        return out

    def slices(self) -> list[ResourceSlice]:
        """Every ResourceSlice, as a snapshot list."""
        return self._informers.store("ResourceSlice").values()  # a snapshot list

    def taint_rules(self) -> list[DeviceTaintRule]:
        """Every DeviceTaintRule, as a snapshot list."""
        return self._informers.store("DeviceTaintRule").values()

    def node_slices(self, node_name: str) -> list[ResourceSlice]:
        """The ResourceSlices published for ``node_name`` alone (``spec.nodeName``),
        sorted by name: the node-local devices a plugin may inspect, e.g.
        ``[(DeviceID(s.spec.driver, s.spec.pool.name, d.name), d) for s in
        dra.node_slices(name) for d in s.spec.devices]`` with
        ``dra.allocated`` telling which of them are in use.  Slices for many
        nodes (``allNodes``, ``nodeSelector``) are not included."""
        if self._slices_by_node is None:
            by_node: dict[str, list[ResourceSlice]] = {}
            for resource_slice in sorted(self.slices(), key=lambda s: s.metadata.name):
                if resource_slice.spec.node_name:
                    by_node.setdefault(resource_slice.spec.node_name, []).append(resource_slice)
            self._slices_by_node = by_node
        return self._slices_by_node.get(node_name, [])
