"""The DeviceTaintEviction controller: evicts pods whose devices carry an untolerated NoExecute taint.

Mirrors kube-controller-manager's ``device-taint-eviction-controller``
(``pkg/controller/devicetainteviction``):

- A device's NoExecute taints come from its ResourceSlice (only the newest
  generation of its pool counts) and from every DeviceTaintRule with effect
  NoExecute whose ``deviceSelector`` selects the allocated driver/pool/device
  (a rule without a selector selects nothing).
- A claim's eviction time is the earliest over its allocated devices and their
  NoExecute taints of ``timeAdded`` plus the smallest ``tolerationSeconds`` of
  the NoExecute tolerations copied into the allocation result that tolerate the
  taint (negative counts as 0); a matching toleration without seconds ignores
  that taint, no matching toleration means ``timeAdded``.  A pod (scheduled, not
  finished, its UID in the claim's ``reservedFor``) is evicted at the earliest
  time of its claims; when no taint applies any more first, the eviction is
  cancelled (event ``Cancelling deletion``).  A claim shared by a PodGroup
  (KEP-5729) is reserved for the PodGroup: every scheduled member of the group
  that uses it is evicted (the controller keeps an index of the pods naming
  each PodGroup, as the KEP describes).
- The informer handlers only compute and queue: pods to delete at a time,
  DeviceTaintRules whose status to refresh.  A fixed number of workers
  (upstream ``ConcurrentSyncs``, 10) take items from the rate-limited queue:
  evicting = GET the pod, stop if it is gone, replaced (other UID) or already
  being deleted, else event ``Marking for deletion``, the ``DisruptionTarget``
  condition, and DELETE with a UID precondition.  API errors are retried with
  per-item exponential backoff for ever.
- DeviceTaintRule status: one ``EvictionInProgress`` condition (reasons
  PodsPendingEviction, Completed, NotStarted, NoEffect for the ``None``
  dry run, OtherEffect) with upstream's messages, written when a rule is
  created or its spec changes and refreshed at most every 10 seconds.

Deviations from upstream (1.35/1.36): finished pods (phase Succeeded or Failed)
are skipped instead of deleted; a pod that is already being deleted does not
count as evicted; a rule replaced under the same name (new UID) gets its status
written like a new rule; the cache of already evicted UIDs is not kept (a
repeated item costs one GET).  Tolerations with an empty effect are ignored
here, as upstream does (they only count for allocation).
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

import attrs
from attrs import frozen
from prometheus_client import Counter, Histogram

from kubesched.core.api.core_v1 import Pod, PodCondition
from kubesched.core.api.resource_v1 import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NONE,
    Condition,
    Device,
    DeviceTaint,
    DeviceTaintRule,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.core.api.scheduling_v1beta1 import PodGroup, pod_group_key
from kubesched.core.cluster.client import NotFound, retry_on_conflict
from kubesched.core.cluster.informer import changed_object
from kubesched.core.cluster.patch import patch_status
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.dra.claims import (
    ClaimNameError,
    allocated_results,
    claim_name,
    is_for_pod,
    is_group_reference,
    is_pod_done,
    is_reserved_for_pod,
)
from kubesched.core.dra.devicetaints import rule_selects

#: Shortest time between two status updates of a DeviceTaintRule (seconds).
RULE_STATUS_PERIOD = 10.0
#: The DeviceTaintRule condition type this controller maintains.
EVICTION_IN_PROGRESS = "EvictionInProgress"
#: Reason of the controller's events about pods.
EVENT_REASON = "DeviceTaintManagerEviction"
DISRUPTION_TARGET = "DisruptionTarget"
DISRUPTION_REASON = "DeletionByDeviceTaintManager"
DISRUPTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"

# Upstream's metrics (subsystem device_taint_eviction_controller, ALPHA), process-wide in
# prometheus-client's default registry as upstream registers them in the legacy registry.
POD_DELETIONS = Counter(
    "device_taint_eviction_controller_pod_deletions_total",
    "Total number of Pods deleted by DeviceTaintEvictionController since its start.")
POD_DELETION_DURATION = Histogram(
    "device_taint_eviction_controller_pod_deletion_duration_seconds",
    "Latency, in seconds, between the time when a device taint effect has been activated and a Pod's "
    "deletion via DeviceTaintEvictionController.",
    buckets=(0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 120, 180, 240))

#: ``(namespace, name, uid)`` of a pod.
PodRef = tuple[str, str, str]


@frozen
class TaintSource:
    """One NoExecute taint that makes pods go, and where it comes from: a
    DeviceTaintRule (``rule``, ``rule_uid``) or taint number ``index`` of device
    ``driver/pool/device`` in ResourceSlice ``slice``."""

    taint: DeviceTaint
    rule: str = ""
    rule_uid: str = ""
    slice: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    index: int = 0

    def sort_key(self) -> tuple:
        """Upstream's order of reasons: rules by name first, then slice taints
        by driver, pool, device and index."""
        if self.rule:
            return (0, self.rule)
        return (1, self.driver, self.pool, self.device, self.index)

    def __str__(self) -> str:
        if self.rule:
            return f"DeviceTaintRule {self.rule}"
        return f"ResourceSlice {self.slice} {self.driver}/{self.pool}/{self.device} taint #{self.index}"


@frozen
class Eviction:
    """When pods must go (seconds since the epoch) and every taint that says so, sorted."""

    when: float
    reasons: tuple[TaintSource, ...]

    def merge(self, other: "Eviction") -> "Eviction":
        """The earlier time and the union of the reasons."""
        reasons = tuple(sorted(set(self.reasons) | set(other.reasons), key=TaintSource.sort_key))
        return Eviction(min(self.when, other.when), reasons)


def eviction_time(taint: DeviceTaint, tolerations: Iterable[DeviceToleration]) -> float | None:
    """When a device with NoExecute ``taint`` must be given up by a claim whose
    allocation result carries ``tolerations``: None when a matching NoExecute
    toleration has no ``tolerationSeconds``; else ``timeAdded`` plus the
    smallest matching ``tolerationSeconds`` (at least 0), or ``timeAdded``
    without a matching toleration.  A taint without ``timeAdded`` (the API
    server always sets it) counts as added at the epoch."""
    seconds: int | None = None
    for toleration in tolerations:
        if toleration.effect != TAINT_EFFECT_NO_EXECUTE or not toleration.tolerates(taint):
            continue
        if toleration.toleration_seconds is None:
            return None
        bounded = max(0, toleration.toleration_seconds)
        seconds = bounded if seconds is None else min(seconds, bounded)
    return (taint.time_added or 0.0) + (seconds or 0)


class _Pool:
    """The slices of one ``(driver, pool)``; only those of the highest generation count."""

    def __init__(self) -> None:
        self.slices: dict[str, ResourceSlice] = {}
        self.current: list[ResourceSlice] = []

    def replace(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        if old is not None:
            self.slices.pop(old.metadata.name, None)
        if new is not None:
            self.slices[new.metadata.name] = new
        newest = max((s.spec.pool.generation for s in self.slices.values()), default=0)
        self.current = sorted((s for s in self.slices.values() if s.spec.pool.generation == newest),
                              key=lambda s: s.metadata.name)

    def device(self, name: str) -> tuple[ResourceSlice | None, Device | None]:
        for slice_ in self.current:
            device = slice_.spec.device(name)
            if device is not None:
                return slice_, device
        return None, None

    def no_execute_taints(self) -> dict[str, tuple[DeviceTaint, ...]]:
        """Device name -> its NoExecute taints, for devices that have some."""
        found: dict[str, tuple[DeviceTaint, ...]] = {}
        for slice_ in self.current:
            for device in slice_.spec.devices:
                taints = tuple(t for t in device.taints if t.effect == TAINT_EFFECT_NO_EXECUTE)
                if taints:
                    found[device.name] = taints
        return found


@attrs.define
class _AllocatedClaim:
    claim: ResourceClaim
    eviction: Eviction | None


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else f"{count} {many}"


class DeviceTaintEvictionController(Controller):
    """Queue items: ``("pod", namespace, name, uid)`` (a pod that may have to be
    deleted; ``pending_evictions`` says if and when) and ``("rule", name, uid)``
    (a DeviceTaintRule whose status may need an update).

    ``workers`` (upstream ``ConcurrentSyncs``, default 10) can be set through
    ``ctx.options["device-taint-eviction-controller"]["workers"]``.  The ``handle_*_change``
    methods are the informer handlers (``old`` None: added; ``new`` None:
    deleted); they never block on the API.
    """

    name = "device-taint-eviction-controller"
    workers = 10

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.workers = int(ctx.options.get(self.name, {}).get("workers", self.workers))
        # handlers (the informer's thread) and workers share the state below
        self._lock = threading.Lock()
        self._pods: dict[str, Pod] = {}
        #: PodGroup key -> keys of the pods naming it
        self._members: dict[str, set[str]] = {}
        self._claims: dict[str, _AllocatedClaim] = {}
        self._pools: dict[tuple[str, str], _Pool] = {}
        self._rules: dict[str, DeviceTaintRule] = {}
        self._evicting_rules: dict[str, DeviceTaintRule] = {}
        self._delete_pod_at: dict[PodRef, Eviction] = {}
        self._evicted_by_rule: dict[str, int] = {}
        inf = self.informers
        inf.add_handlers("Pod", lambda pod: self.handle_pod_change(None, pod), self.handle_pod_change,
                         lambda pod: self.handle_pod_change(pod, None))
        inf.add_handlers("PodGroup", lambda group: self.handle_pod_group_change(None, group),
                         self.handle_pod_group_change, lambda group: self.handle_pod_group_change(group, None))
        inf.add_handlers("ResourceClaim", lambda claim: self.handle_claim_change(None, claim),
                         self.handle_claim_change, lambda claim: self.handle_claim_change(claim, None))
        inf.add_handlers("ResourceSlice", lambda slice_: self.handle_slice_change(None, slice_),
                         self.handle_slice_change, lambda slice_: self.handle_slice_change(slice_, None))
        inf.add_handlers("DeviceTaintRule", lambda rule: self.handle_rule_change(None, rule),
                         self.handle_rule_change, lambda rule: self.handle_rule_change(rule, None))

    def pending_evictions(self) -> dict[PodRef, Eviction]:
        """A copy of the evictions waiting for a worker: pod -> when and why."""
        with self._lock:
            return dict(self._delete_pod_at)

    def evicted_by_rule(self, rule_uid: str) -> int:
        """How many pods this controller deleted because of the DeviceTaintRule ``rule_uid``."""
        with self._lock:
            return self._evicted_by_rule.get(rule_uid, 0)

    # --- informer handlers -------------------------------------------------------------------

    def handle_pod_change(self, old: Pod | None, new: Pod | None) -> None:
        """A pod was added, updated or deleted.  Only a new pod, a change of
        ``nodeName`` or of ``resourceClaimStatuses`` can change its eviction."""
        if (old is not None and new is not None and old.spec is new.spec and old.metadata.uid == new.metadata.uid
                and old.status.resource_claim_statuses == new.status.resource_claim_statuses
                and old.status.extended_resource_claim_status == new.status.extended_resource_claim_status):
            with self._lock:  # a status write (same spec object: same node and PodGroup): only the latest pod kept
                self._pods[new.key] = new
            return
        with self._lock:
            if new is None:
                gone = changed_object(old, new)
                current = self._pods.get(gone.key)
                if current is not None and current.metadata.uid == gone.metadata.uid:
                    del self._pods[gone.key]
                    group_key = pod_group_key(gone)
                    members = self._members.get(group_key, set()) if group_key is not None else set()
                    members.discard(gone.key)
                    if group_key is not None and not members:
                        self._members.pop(group_key, None)
                self._cancel(_pod_ref(gone))  # gone: nothing to report
                return
            self._pods[new.key] = new
            group_key = pod_group_key(new)
            if group_key is not None:
                self._members.setdefault(group_key, set()).add(new.key)
            if old is not None and old.metadata.uid != new.metadata.uid:
                self._cancel(_pod_ref(old))
            elif (old is not None and old.spec.node_name == new.spec.node_name
                  and old.status.resource_claim_statuses == new.status.resource_claim_statuses
                  and old.status.extended_resource_claim_status == new.status.extended_resource_claim_status):
                return
            self._handle_pod(new)

    def handle_pod_group_change(self, old: PodGroup | None, new: PodGroup | None) -> None:
        """A PodGroup was added, updated or deleted: when the claims generated
        for it changed, its members' claims may resolve differently."""
        if old is not None and new is not None and (
                old.status.resource_claim_statuses == new.status.resource_claim_statuses
                and old.metadata.uid == new.metadata.uid):
            return
        with self._lock:
            for key in list(self._members.get(changed_object(old, new).key, ())):
                pod = self._pods.get(key)
                if pod is not None:
                    self._handle_pod(pod)

    def handle_claim_change(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        """A claim was added, updated or deleted: track its allocation and
        re-check the pods in its (old and new) ``reservedFor``."""
        with self._lock:
            self._claim_changed(old, new)

    def _claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        if old is not None and new is not None and old.metadata.uid != new.metadata.uid:
            self._claim_changed(old, None)
            self._claim_changed(None, new)
            return
        claim = changed_object(old, new)
        if new is None or new.status.allocation is None:
            if self._claims.pop(claim.key, None) is None and new is not None:
                return  # neither before nor now allocated
        else:
            entry = self._claims.get(claim.key)
            if entry is None or entry.claim.status.allocation != new.status.allocation:
                entry = _AllocatedClaim(new, self._claim_eviction(new, self._evicting_rules.values()))
            else:
                entry.claim = new
            self._claims[claim.key] = entry
        if old is not None and new is not None and old.status.reserved_for != new.status.reserved_for:
            self._handle_pods(old)
        self._handle_pods(claim)

    def handle_slice_change(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        """A ResourceSlice was added, updated or deleted: re-check the claims
        that use a device whose NoExecute taints changed."""
        with self._lock:
            if old is not None and new is not None and old.pool_id != new.pool_id:
                self._slice_changed(old, None)  # moved to another pool
                old = None
            self._slice_changed(old, new)

    def _slice_changed(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        pool_id = changed_object(old, new).pool_id
        pool = self._pools.setdefault(pool_id, _Pool())
        before = pool.no_execute_taints()
        pool.replace(old, new)
        if not pool.slices:
            del self._pools[pool_id]
        after = pool.no_execute_taints()
        modified = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
        if not modified:
            return
        for entry in list(self._claims.values()):
            if any(r.driver == pool_id[0] and r.pool == pool_id[1] and r.device in modified
                   for r in allocated_results(entry.claim)):
                self._refresh_claim(entry)

    def handle_rule_change(self, old: DeviceTaintRule | None, new: DeviceTaintRule | None) -> None:
        """A DeviceTaintRule was added, updated or deleted: queue its status
        (new rule or new spec) and re-evaluate every allocated claim."""
        with self._lock:
            replaced = old is not None and (new is None or old.metadata.uid != new.metadata.uid)
            if old is not None and replaced:
                self._evicted_by_rule.pop(old.metadata.uid, None)
            if new is None:
                self._rules.pop(changed_object(old, new).metadata.name, None)
            else:
                self._rules[new.metadata.name] = new
                if old is not None and not replaced and old.spec == new.spec:
                    return  # a status update
                self.queue.add(("rule", new.metadata.name, new.metadata.uid))  # status at once, before evicting
            if old is not None:
                self._evicting_rules.pop(old.metadata.name, None)
            if new is not None and new.spec.taint.effect == TAINT_EFFECT_NO_EXECUTE:
                self._evicting_rules[new.metadata.name] = new
            for entry in list(self._claims.values()):
                self._refresh_claim(entry)

    # --- computing evictions (the lock is held) -----------------------------------------------

    def _refresh_claim(self, entry: _AllocatedClaim) -> None:
        eviction = self._claim_eviction(entry.claim, self._evicting_rules.values())
        if eviction != entry.eviction:
            entry.eviction = eviction
            self._handle_pods(entry.claim)

    def _claim_eviction(self, claim: ResourceClaim, rules: Iterable[DeviceTaintRule]) -> Eviction | None:
        """The earliest eviction over the claim's allocated devices and their
        NoExecute taints (slice taints and ``rules``), or None."""
        rules = list(rules)
        when: float | None = None
        reasons: set[TaintSource] = set()
        for result in allocated_results(claim):
            sources: list[TaintSource] = []
            pool = self._pools.get((result.driver, result.pool))
            slice_, device = pool.device(result.device) if pool is not None else (None, None)
            if device is not None and slice_ is not None:
                sources.extend(TaintSource(taint, slice=slice_.metadata.name, driver=result.driver, pool=result.pool,
                                           device=result.device, index=index)
                               for index, taint in enumerate(device.taints) if taint.effect == TAINT_EFFECT_NO_EXECUTE)
            sources.extend(TaintSource(rule.spec.taint, rule=rule.metadata.name, rule_uid=rule.metadata.uid)
                           for rule in rules if rule_selects(rule, result.driver, result.pool, result.device))
            for source in sources:
                at = eviction_time(source.taint, result.tolerations)
                if at is None:
                    continue
                reasons.add(source)
                when = at if when is None else min(when, at)
        if when is None:
            return None
        return Eviction(when, tuple(sorted(reasons, key=TaintSource.sort_key)))

    def _pod_eviction(self, pod: Pod, claim_evictions: dict[str, Eviction | None] | None = None) -> Eviction | None:
        """The pod's earliest claim eviction (``claim_evictions`` overrides the
        claims' own, for the dry run), or None.  Only claims the pod may use
        count: owned by it when generated (the claim the scheduler made for its
        extended resources too), and its UID in ``reservedFor``."""
        if not self._claims or not pod.spec.node_name or is_pod_done(pod):
            return None  # no allocated claim known: none the pod uses can evict it
        eviction: Eviction | None = None
        group = self._group_of(pod)
        for name, must_check_owner in self._claim_names(pod, group):
            key = f"{pod.metadata.namespace}/{name}"
            entry = self._claims.get(key)
            if entry is None or (must_check_owner and not is_for_pod(pod, entry.claim, group)):
                continue
            if not is_reserved_for_pod(pod, entry.claim, group):
                continue  # e.g. a replacement of the pod under the same name
            claim_eviction = entry.eviction if claim_evictions is None else claim_evictions.get(key)
            if claim_eviction is not None:
                eviction = claim_eviction if eviction is None else eviction.merge(claim_eviction)
        return eviction

    def _group_of(self, pod: Pod) -> PodGroup | None:
        """The PodGroup ``pod`` names, as the informer last saw it (None: none, or gone)."""
        key = pod_group_key(pod)
        return self.informers.get("PodGroup", key) if key is not None else None

    @staticmethod
    def _claim_names(pod: Pod, group: PodGroup | None) -> list[tuple[str, bool]]:
        """(claim name, whether it must be owned by the pod or its PodGroup
        ``group``) of every claim the pod uses."""
        names = []
        for pod_claim in pod.spec.resource_claims:
            try:
                name, must_check_owner = claim_name(pod, pod_claim, group)
            except ClaimNameError:
                continue  # not created yet: not tainted either
            if name is not None:
                names.append((name, must_check_owner))
        extended = pod.status.extended_resource_claim_status
        if extended is not None and extended.resource_claim_name:
            names.append((extended.resource_claim_name, True))
        return names

    def _handle_pods(self, claim: ResourceClaim) -> None:
        """Re-check every pod in the claim's ``reservedFor`` (every member of a
        PodGroup there); a missing, replaced or finished pod is skipped, never the rest."""
        for ref in claim.status.reserved_for:
            if is_group_reference(ref):
                for key in list(self._members.get(f"{claim.metadata.namespace}/{ref.name}", ())):
                    pod = self._pods.get(key)
                    if pod is not None:
                        self._handle_pod(pod)
                continue
            if ref.api_group or ref.resource != "pods":
                continue
            pod = self._pods.get(f"{claim.metadata.namespace}/{ref.name}")
            if pod is None or pod.metadata.uid != ref.uid:
                continue
            self._handle_pod(pod)

    def _handle_pod(self, pod: Pod) -> None:
        eviction = self._pod_eviction(pod)
        ref = _pod_ref(pod)
        if eviction is None:
            if self._cancel(ref):
                self.recorder.event(pod, "Normal", EVENT_REASON, "", "Cancelling deletion")
            return
        if self._delete_pod_at.get(ref) != eviction:
            self._delete_pod_at[ref] = eviction
            self.queue.add_after(("pod",) + ref, eviction.when - self.clock.now())
        for reason in eviction.reasons:
            if reason.rule:
                self.queue.add_after(("rule", reason.rule, reason.rule_uid), RULE_STATUS_PERIOD)

    def _cancel(self, ref: PodRef) -> bool:
        """Forget a pending eviction (the queued item then finds nothing to do)."""
        return self._delete_pod_at.pop(ref, None) is not None

    # --- workers -----------------------------------------------------------------------------

    def sync(self, item: tuple) -> float | None:
        """Evict a pod that is due, or refresh a DeviceTaintRule's status;
        returns the seconds after which to look again, if not yet due."""
        if item[0] == "pod":
            return self._maybe_delete_pod(item[1:])
        return self._maybe_update_rule_status(item[1], item[2])

    def _maybe_delete_pod(self, ref: PodRef) -> float | None:
        with self._lock:
            eviction = self._delete_pod_at.get(ref)
        if eviction is None:
            return None  # cancelled or done
        remaining = eviction.when - self.clock.now()
        if remaining > 0:
            return remaining
        deleted = self._delete_pod(ref)  # an ApiError retries the item with backoff
        with self._lock:
            self._delete_pod_at.pop(ref, None)
            if not deleted:
                return None
            for reason in eviction.reasons:
                if reason.rule:
                    self._evicted_by_rule[reason.rule_uid] = self._evicted_by_rule.get(reason.rule_uid, 0) + 1
                    self.queue.add_after(("rule", reason.rule, reason.rule_uid), RULE_STATUS_PERIOD)
        POD_DELETIONS.inc()
        POD_DELETION_DURATION.observe(max(0.0, self.clock.now() - eviction.when))
        return None

    def _delete_pod(self, ref: PodRef) -> bool:
        """Add the DisruptionTarget condition and delete the pod (UID
        precondition); False when it is gone, replaced or already being deleted."""
        namespace, name, uid = ref
        try:
            pod = self.cluster.get("Pod", name, namespace)
        except NotFound:
            return False
        if pod.metadata.uid != uid or pod.metadata.deletion_timestamp is not None:
            return False
        self.recorder.event(pod, "Normal", EVENT_REASON, "", "Marking for deletion")
        condition = PodCondition(type=DISRUPTION_TARGET, status="True", reason=DISRUPTION_REASON,
                                 message=DISRUPTION_MESSAGE, last_transition_time=self.clock.now())
        existing = next((c for c in pod.status.conditions if c.type == DISRUPTION_TARGET), None)
        if existing is None or (existing.status, existing.reason, existing.message) != (
                condition.status, condition.reason, condition.message):
            conditions = tuple(c for c in pod.status.conditions if c.type != DISRUPTION_TARGET) + (condition,)
            patch_status(self.cluster, pod, attrs.evolve(pod.status, conditions=conditions))
        try:
            self.cluster.delete("Pod", name, namespace, uid=uid)
        except NotFound:
            return False
        return True

    def _maybe_update_rule_status(self, name: str, uid: str) -> float | None:
        with self._lock:
            rule = self._rules.get(name)
            if rule is None or rule.metadata.uid != uid:
                return None  # deleted or replaced
            existing = next((c for c in rule.status.conditions if c.type == EVICTION_IN_PROGRESS), None)
            now = self.clock.now()
            if (existing is not None and existing.observed_generation == rule.metadata.generation
                    and existing.last_transition_time is not None):
                since = now - existing.last_transition_time
                if since < RULE_STATUS_PERIOD:
                    return RULE_STATUS_PERIOD - since
            condition = self._rule_condition(rule)
        if existing is not None and attrs.evolve(existing, last_transition_time=None) == condition:
            return None
        condition = attrs.evolve(condition, last_transition_time=now)

        def write(current: DeviceTaintRule) -> None:
            if current.metadata.uid != uid:
                return
            others = tuple(c for c in current.status.conditions if c.type != EVICTION_IN_PROGRESS)
            self.cluster.update_status(attrs.evolve(current, status=attrs.evolve(
                current.status, conditions=others + (condition,))))

        try:
            retry_on_conflict(self.cluster, rule, write)
        except NotFound:
            pass
        return None

    def _rule_condition(self, rule: DeviceTaintRule) -> Condition:
        """The EvictionInProgress condition for ``rule`` (without a transition time)."""
        effect = rule.spec.taint.effect
        uid = rule.metadata.uid
        status, message = "False", ""
        if effect == TAINT_EFFECT_NO_EXECUTE:
            pods, namespaces = self._count_pending(uid)
            if pods:
                status, reason = "True", "PodsPendingEviction"
                message = (("1 pod needs" if pods == 1 else f"{pods} pods need") + " to be evicted in "
                           + ("1 namespace." if namespaces == 1 else f"{namespaces} different namespaces."))
            else:
                reason = "Completed" if self._evicted_by_rule.get(uid) else "NotStarted"
        elif effect == TAINT_EFFECT_NONE:
            reason = "NoEffect"
            # the dry run: the claims' evictions if this rule were NoExecute
            simulated = attrs.evolve(rule, spec=attrs.evolve(rule.spec, taint=attrs.evolve(
                rule.spec.taint, effect=TAINT_EFFECT_NO_EXECUTE)))
            rules = [r for r in self._evicting_rules.values() if r.metadata.name != rule.metadata.name]
            rules.append(simulated)
            evictions = {key: self._claim_eviction(entry.claim, rules) for key, entry in self._claims.items()}
            pods, namespaces = self._count_pending(uid, evictions)
            published, allocated = self._count_selected_devices(rule)
            message = (f"{_plural(published, '1 published device', 'published devices')} selected. "
                       f"{_plural(allocated, '1 allocated device', 'allocated devices')} selected. "
                       f"{_plural(pods, '1 pod', 'pods')} would be evicted in "
                       f"{_plural(namespaces, '1 namespace', 'different namespaces')} if the effect was NoExecute. "
                       "This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.")
        else:
            reason = "OtherEffect"
            message = "Eviction only happens for the NoExecute effect."
        evicted = self._evicted_by_rule.get(uid, 0)
        if evicted:
            message += (" " if message else "") + f"{_plural(evicted, '1 pod', 'pods')} evicted since starting the controller."
        return Condition(type=EVICTION_IN_PROGRESS, status=status, observed_generation=rule.metadata.generation,
                         reason=reason, message=message)

    def _count_pending(self, rule_uid: str,
                       claim_evictions: dict[str, Eviction | None] | None = None) -> tuple[int, int]:
        """How many pods (not being deleted) are to be evicted because of the
        rule ``rule_uid``, and in how many namespaces."""
        pods, namespaces = 0, set()
        for pod in self._pods.values():
            if pod.metadata.deletion_timestamp is not None:
                continue
            eviction = self._pod_eviction(pod, claim_evictions)
            if eviction is not None and any(r.rule_uid == rule_uid for r in eviction.reasons):
                pods += 1
                namespaces.add(pod.metadata.namespace)
        return pods, len(namespaces)

    def _count_selected_devices(self, rule: DeviceTaintRule) -> tuple[int, int]:
        """Published devices (newest pool generations) and allocated devices the rule selects."""
        published = sum(1 for (driver, pool_name), pool in self._pools.items() for slice_ in pool.current
                        for device in slice_.spec.devices if rule_selects(rule, driver, pool_name, device.name))
        allocated = sum(1 for entry in self._claims.values() for r in allocated_results(entry.claim)
                        if rule_selects(rule, r.driver, r.pool, r.device))
        return published, allocated


def _pod_ref(pod: Any) -> PodRef:
    return (pod.metadata.namespace, pod.metadata.name, pod.metadata.uid)
