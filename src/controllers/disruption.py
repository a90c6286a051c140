"""The disruption controller: keeps PodDisruptionBudget status current (embedded cluster only).

Mirrors kube-controller-manager's ``pkg/controller/disruption`` for what the
scheduler reads: for each PodDisruptionBudget it counts the pods its selector
matches in its namespace and writes ``status.expectedPods``,
``currentHealthy``, ``desiredHealthy``, ``disruptionsAllowed`` (healthy minus
desired, never below 0, and 0 while no pod is expected),
``observedGeneration``, ``disruptedPods`` and the ``DisruptionAllowed``
condition.  DefaultPreemption spares pods whose eviction would exceed
``disruptionsAllowed``.

- ``minAvailable: N``: N pods must stay healthy; the expected count is the
  number of matching pods.
- ``minAvailable: "P%"`` or ``maxUnavailable``: computed against the scale of
  the pods' controllers (percentages rounded up).  The embedded cluster runs
  no workload controllers, so a controller's scale is the largest number of
  pods seen naming it as their controller (a ReplicaSet would recreate the
  pods preemption deletes, so its scale does not shrink with them).  Pods
  without a controller do not count, as upstream, which warns with an
  ``UnmanagedPods`` event.
- A pod is healthy when it is not being deleted and is running: bound to a
  node, not finished, and not reported not Ready (the embedded cluster has no
  kubelet to report readiness).  Pods in ``disruptedPods`` are not healthy
  until their entry times out (2 minutes).
"""

from __future__ import annotations

from typing import Any

import attrs

from kubesched.core.api.convert import ManifestError, parse_time
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.meta import Condition, namespaced_name
from kubesched.core.api.policy_v1 import (
    DISRUPTION_ALLOWED_CONDITION,
    INSUFFICIENT_PODS_REASON,
    SUFFICIENT_PODS_REASON,
    PodDisruptionBudget,
    scaled_value,
)
from kubesched.core.controller.base import Controller, ControllerContext

#: How long an eviction recorded in ``status.disruptedPods`` keeps its pod out of
#: the healthy count (upstream ``DeletionTimeout``), seconds.
DELETION_TIMEOUT = 120.0

PDB = "PodDisruptionBudget"


class DisruptionController(Controller):
    """Computes PodDisruptionBudget status; items are PDB keys ``namespace/name``."""

    name = "disruption-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        #: controller UID -> the most pods seen naming it as their controller
        self._scale: dict[str, int] = {}
        self._pdbs = self.informers.store(PDB)
        self.informers.add_handlers(PDB, self._enqueue, lambda old, new: self._enqueue(new))
        self.informers.add_handlers("Pod", self._on_pod, self._on_pod_update, self._on_pod)

    def _enqueue(self, pdb: PodDisruptionBudget) -> None:
        self.queue.add(namespaced_name(pdb.metadata))

    def _on_pod(self, pod: Pod) -> None:
        if not self._pdbs:
            return
        labels = pod.metadata.labels
        for key, pdb in self._pdbs.items():
            selector = pdb.spec.selector
            if pdb.metadata.namespace == pod.metadata.namespace and selector is not None and selector.matches(labels):
                self.queue.add(key)

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        before, after = old.metadata, new.metadata
        if before.namespace != after.namespace or (before.labels is not after.labels and before.labels != after.labels):
            self._on_pod(old)  # the budgets that selected it before (a status write keeps its labels: the same ones)
        self._on_pod(new)

    def sync(self, item: Any) -> None:
        """Recompute PodDisruptionBudget ``item`` (``namespace/name``)'s status from its pods and write it, with
        upstream's NoPods, CalculateExpectedPodCountFailed and UnmanagedPods events; queued again when a
        ``disruptedPods`` entry times out (upstream ``DisruptionController.trySync``)."""
        pdb: PodDisruptionBudget | None = self.informers.get(PDB, item)
        if pdb is None:
            return
        pods = self._pods_for(pdb)
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "Sync", "No matching pods found")
        try:
            expected, desired, unmanaged = self._expected_pod_count(pdb, pods)
        except ManifestError as err:
            self.recorder.event(pdb, "Warning", "CalculateExpectedPodCountFailed", "Sync",
                                f"Failed to calculate the number of expected pods: {err}")
            self._write(pdb, attrs.evolve(pdb.status, disruptions_allowed=0), sync_failed=str(err))
            return
        if unmanaged:
            self.recorder.event(pdb, "Warning", "UnmanagedPods", "Sync",
                                "Pods selected by this PodDisruptionBudget were found to be unmanaged. As a result, "
                                "the status of the PDB cannot be calculated correctly, which may result in undefined "
                                "behavior. To account for these pods please set \".spec.minAvailable\" field of the "
                                "PDB to an integer value.")
        now = self.clock.now()
        disrupted, recheck = self._disrupted_pods(pdb, pods, now)
        healthy = sum(1 for pod in pods if pod.metadata.name not in disrupted and _healthy(pod))
        allowed = healthy - desired if expected > 0 else 0
        status = attrs.evolve(
            pdb.status, observed_generation=pdb.metadata.generation, disrupted_pods=disrupted,
            disruptions_allowed=max(allowed, 0), current_healthy=healthy, desired_healthy=desired,
            expected_pods=expected,
        )
        self._write(pdb, status)
        if recheck is not None:
            self.queue.add_after(item, recheck - now)

    def _pods_for(self, pdb: PodDisruptionBudget) -> list[Pod]:
        selector = pdb.spec.selector
        if selector is None:
            return []
        namespace = pdb.metadata.namespace
        return [pod for pod in self.informers.store("Pod").values()
                if pod.metadata.namespace == namespace and selector.matches(pod.metadata.labels)]

    def _expected_pod_count(self, pdb: PodDisruptionBudget, pods: list[Pod]) -> tuple[int, int, list[str]]:
        """(expected pods, desired healthy, names of pods without a controller).
        Raises :class:`ManifestError` for an unusable minAvailable/maxUnavailable."""
        spec = pdb.spec
        if spec.max_unavailable is not None:
            expected, unmanaged = self._expected_scale(pods)
            desired = expected - scaled_value(spec.max_unavailable, expected, "maxUnavailable")
            return expected, max(desired, 0), unmanaged
        if spec.min_available is not None:
            if isinstance(spec.min_available, int):
                return len(pods), spec.min_available, []
            expected, unmanaged = self._expected_scale(pods)
            return expected, scaled_value(spec.min_available, expected, "minAvailable"), unmanaged
        return 0, 0, []

    def _expected_scale(self, pods: list[Pod]) -> tuple[int, list[str]]:
        """The summed scale of the pods' controllers, and the unmanaged pods."""
        owners: dict[str, int] = {}
        unmanaged = []
        for pod in self.informers.store("Pod").values():
            ref = _controller_of(pod)
            if ref is not None:
                owners[ref.uid] = owners.get(ref.uid, 0) + 1
        counted: set[str] = set()
        for pod in pods:
            ref = _controller_of(pod)
            if ref is None:
                unmanaged.append(pod.metadata.name)
            else:
                counted.add(ref.uid)
        for uid in counted:
            self._scale[uid] = max(self._scale.get(uid, 0), owners.get(uid, 0))
        return sum(self._scale[uid] for uid in counted), unmanaged

    def _disrupted_pods(self, pdb: PodDisruptionBudget, pods: list[Pod],
                        now: float) -> tuple[dict[str, Any], float | None]:
        """The ``disruptedPods`` entries still pending (pod present, not being
        deleted, younger than the timeout) and when the next one expires."""
        recorded = pdb.status.disrupted_pods
        kept: dict[str, Any] = {}
        recheck: float | None = None
        if not recorded:
            return kept, recheck
        for pod in pods:
            name = pod.metadata.name
            if pod.metadata.deletion_timestamp is not None or name not in recorded:
                continue
            expires = (parse_time(recorded[name]) or 0.0) + DELETION_TIMEOUT
            if expires <= now:
                self.recorder.event(pod, "Warning", "NotDeleted", "Sync",
                                    f"Pod was expected by PDB {pdb.metadata.namespace}/{pdb.metadata.name} to be "
                                    "deleted but it wasn't")
                continue
            kept[name] = recorded[name]
            recheck = expires if recheck is None else min(recheck, expires)
        return kept, recheck

    def _write(self, pdb: PodDisruptionBudget, status: Any, sync_failed: str = "") -> None:
        status = attrs.evolve(status, conditions=_with_condition(status, self.clock.now(), sync_failed))
        if status != pdb.status:
            self.cluster.update_status(attrs.evolve(pdb, status=status))


def _controller_of(pod: Pod):
    return next((ref for ref in pod.metadata.owner_references if ref.controller), None)


def _healthy(pod: Pod) -> bool:
    if pod.metadata.deletion_timestamp is not None or not pod.spec.node_name:
        return False
    if pod.terminal:
        return False
    ready = next((c for c in pod.status.conditions if c.type == "Ready"), None)
    return ready is None or ready.status == "True"


def _with_condition(status: Any, now: float, sync_failed: str) -> tuple[Condition, ...]:
    """``status.conditions`` with DisruptionAllowed set from ``disruptions_allowed``
    (or False/SyncFailed when the sync failed); the transition time moves only
    when the condition's status changes."""
    if sync_failed:
        wanted = Condition(DISRUPTION_ALLOWED_CONDITION, "False", status.observed_generation, now, "SyncFailed",
                           sync_failed)
    elif status.disruptions_allowed > 0:
        wanted = Condition(DISRUPTION_ALLOWED_CONDITION, "True", status.observed_generation, now,
                           SUFFICIENT_PODS_REASON)
    else:
        wanted = Condition(DISRUPTION_ALLOWED_CONDITION, "False", status.observed_generation, now,
                           INSUFFICIENT_PODS_REASON)
    existing = next((c for c in status.conditions if c.type == DISRUPTION_ALLOWED_CONDITION), None)
    if existing is not None and existing.status == wanted.status:
        wanted = attrs.evolve(wanted, last_transition_time=existing.last_transition_time)
    return tuple(c for c in status.conditions if c.type != DISRUPTION_ALLOWED_CONDITION) + (wanted,)
