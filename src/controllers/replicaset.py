"""The ReplicaSet controller of the embedded cluster.

Stands in for kube-controller-manager's ``replicaset-controller``
(``pkg/controller/replicaset``): it keeps ``spec.replicas`` active pods of a
ReplicaSet's template, each named ``<replicaset>-<5 characters>``
(``generateName``; the embedded API server draws the characters from its
seeded RNG, so names repeat from run to run) and controlled by the ReplicaSet;
a pod that is deleted or finishes is replaced (a finished pod stays, as
upstream's until the pod garbage collector's threshold).  Scaling down deletes the
pods upstream's ``getPodsToDelete`` ranks first: unscheduled before scheduled,
pending before running, not ready before ready, the newest first.  The status
counts ``replicas``, ``readyReplicas`` and ``availableReplicas``
(``minReadySeconds`` is read as 0).  When the ReplicaSet is deleted its pods
are deleted, as the garbage collector would.  Active pods without a
controller that the selector matches are adopted (a controller reference
patched in) and counted; a pod it controls whose labels no longer match is
released (upstream ``ClaimPods``).
"""

from __future__ import annotations

from typing import Any

from kubesched.core.api.apps_v1 import ReplicaSet
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.meta import evolve
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import OwnedPods, pod_from_template, pod_ready

#: upstream ``podPhaseToOrdinal``: Pending < Unknown < Running
_PHASE_RANK = {"Pending": 0, "": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: Pod) -> tuple:
    """Sort key of upstream ``ActivePods`` ordering: the pods to delete first sort first (unassigned, pending,
    not ready, newest)."""
    return (bool(pod.spec.node_name), _PHASE_RANK.get(pod.status.phase, 2), pod_ready(pod),
            -(pod.metadata.creation_timestamp or 0.0), pod.metadata.name)


def replica_status(pods: list[Pod], observed_generation: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The status a ReplicaSet-like controller writes: ``replicas`` (active pods), ``readyReplicas``,
    ``availableReplicas`` (ready, with minReadySeconds 0), ``observedGeneration``; zero counts left out as the
    API server writes them."""
    ready = sum(1 for pod in pods if pod_ready(pod))
    status = {"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready,
              "availableReplicas": ready, "observedGeneration": observed_generation, **(extra or {})}
    return {key: value for key, value in status.items() if value}


class ReplicaSetController(Controller):
    """Work items are ReplicaSet keys ``namespace/name``."""

    name = "replicaset-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.owned = OwnedPods(self.informers, "ReplicaSet", lambda ns, name: self.queue.add(f"{ns}/{name}"))
        self.informers.add_handlers("ReplicaSet", self._changed, lambda old, new: self._changed(new), self._deleted)

    def _changed(self, rs: ReplicaSet) -> None:
        self.queue.add(f"{rs.metadata.namespace}/{rs.metadata.name}")

    def _deleted(self, rs: ReplicaSet) -> None:
        for pod in self.owned.pods(rs):
            try:
                self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
            except NotFound:
                pass
        self.owned.forget(rs.metadata.uid)

    def sync(self, item: str) -> None:
        """Create or delete pods of ReplicaSet ``item`` until ``spec.replicas`` are active (upstream
        ``syncReplicaSet`` / ``manageReplicas``), then write its status; nothing while its last creations or
        deletions are not yet seen."""
        rs = self.informers.get("ReplicaSet", item)
        if rs is None or rs.metadata.deletion_timestamp is not None or not self.owned.satisfied(rs):
            return
        pods = self.owned.claim(self.cluster, rs, rs.spec.selector, active_only=True)
        diff = len(pods) - rs.spec.replicas
        if diff < 0:
            for _ in range(-diff):
                pod = pod_from_template(rs.spec.template, rs, generate_name=f"{rs.metadata.name}-")
                self.owned.expect_create(rs, self.cluster.create(pod))
        elif diff > 0:
            for pod in sorted(pods, key=deletion_rank)[:diff]:
                self.owned.expect_delete(rs, pod)
                try:
                    self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
                except NotFound:
                    pass
        status = replica_status(pods, rs.metadata.generation)  # as upstream: the pods seen before acting
        if status != rs.status:
            self.cluster.update_status(evolve(rs, status=status))
