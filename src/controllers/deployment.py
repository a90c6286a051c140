"""The Deployment controller of the embedded cluster.

Stands in for kube-controller-manager's ``deployment-controller``
(``pkg/controller/deployment``): a Deployment's pods come from a ReplicaSet
per pod template, ``<deployment>-<pod-template-hash>``, whose selector, template
labels and own labels carry ``pod-template-hash`` and which the Deployment
controls (annotation ``deployment.kubernetes.io/revision``).  Scaling sets the
current ReplicaSet's replicas.  A template change makes a new ReplicaSet and
rolls over: with ``RollingUpdate`` the new one grows while all of them together
stay within ``replicas + maxSurge`` and the old ones shrink while at least
``replicas - maxUnavailable`` pods are available (upstream
``reconcileNewReplicaSet`` / ``reconcileOldReplicaSets``; percentages of
replicas, surge rounded up, unavailability down); with ``Recreate`` the old
ones go to zero first.  Availability is the ReplicaSets' ``availableReplicas``
(Ready pods, as the simulated kubelet reports them).

Every ReplicaSet it scales carries the annotations
``deployment.kubernetes.io/desired-replicas`` (the Deployment's replicas) and
``max-replicas`` (plus maxSurge).  A change of ``replicas`` while several
ReplicaSets have pods is a scaling event, handled as upstream's
proportional scaling (``scale``): the replicas to add or remove (up to
``replicas + maxSurge`` in all) are shared among the active ReplicaSets in
proportion to their size over the ``max-replicas`` they were scaled for,
largest first (newer first when adding, older first when removing), the
rounding leftover going to the largest.  ``paused: true`` stops the rollout:
a template change makes no ReplicaSet and nothing is rolled, while scaling
still applies; the status carries ``Progressing`` Unknown
``DeploymentPaused`` (``DeploymentResumed`` once unpaused).  Revision
history (rollback, ``revisionHistoryLimit`` cleanup) is not simulated.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from kubesched.core.api.apps_v1 import Deployment, PodTemplateSpec, ReplicaSet, ReplicaSetSpec
from kubesched.core.api.convert import format_time
from kubesched.core.api.meta import LabelSelector, ObjectMeta, evolve
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import controller_of, controller_ref, resolve, template_hash

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
#: upstream ``DesiredReplicasAnnotation`` and ``MaxReplicasAnnotation``
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def surge_and_unavailable(deployment: Deployment) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods; both 0 makes maxUnavailable 1 (upstream ``ResolveFenceposts``)."""
    rolling, replicas = deployment.spec.rolling(), deployment.spec.replicas
    surge = resolve(rolling.max_surge, replicas, True)
    unavailable = resolve(rolling.max_unavailable, replicas, False)
    return surge, (1 if surge == 0 and unavailable == 0 else unavailable)


def _available(rs: ReplicaSet) -> int:
    return int(rs.status.get("availableReplicas", 0))


def max_surge(deployment: Deployment) -> int:
    """maxSurge in pods; 0 unless RollingUpdate (upstream ``MaxSurge``)."""
    return surge_and_unavailable(deployment)[0] if deployment.spec.strategy.type == "RollingUpdate" else 0


def replica_annotations(deployment: Deployment) -> dict[str, str]:
    """The desired- and max-replicas annotations a ReplicaSet scaled for ``deployment`` now carries."""
    replicas = deployment.spec.replicas
    return {DESIRED_REPLICAS: str(replicas), MAX_REPLICAS: str(replicas + max_surge(deployment))}


def proportions(deployment: Deployment, active: list[ReplicaSet]) -> dict[str, int]:
    """Upstream proportional scaling (``DeploymentController.scale`` with ``GetReplicaSetProportion``): the
    new size of each active ReplicaSet (``active``: those with replicas) when ``deployment``'s replicas
    changed during a rollout."""
    replicas = deployment.spec.replicas
    allowed = replicas + max_surge(deployment) if replicas > 0 else 0
    to_add = allowed - sum(rs.spec.replicas for rs in active)
    newest_first = sorted(active, key=lambda rs: (rs.metadata.creation_timestamp or 0.0, rs.metadata.name),
                          reverse=to_add > 0)  # ties: newer first when adding, older first when removing
    ordered = sorted(newest_first, key=lambda rs: -rs.spec.replicas)
    sizes, added = {}, 0
    for rs in ordered:
        share = 0
        if to_add and rs.spec.replicas and to_add != added:
            share = _fraction(deployment, rs)
            share = min(share, to_add - added) if to_add > 0 else max(share, to_add - added)
        sizes[rs.metadata.name] = rs.spec.replicas + share
        added += share
    if ordered and to_add:
        largest = ordered[0].metadata.name
        sizes[largest] = max(0, sizes[largest] + to_add - added)
    return sizes


def _fraction(deployment: Deployment, rs: ReplicaSet) -> int:
    """Upstream ``getReplicaSetFraction``: the ReplicaSet's size scaled by the new over the old maximum."""
    replicas = deployment.spec.replicas
    if replicas == 0:
        return -rs.spec.replicas
    text = rs.metadata.annotations.get(MAX_REPLICAS, "")
    before = int(text) if text.isdigit() and int(text) else int(deployment.status.get("replicas", 0))
    if not before:
        return 0
    scaled = rs.spec.replicas * (replicas + max_surge(deployment)) / before
    return math.floor(scaled + 0.5) - rs.spec.replicas  # Go's integer.RoundToInt32: half away from zero


class DeploymentController(Controller):
    """Work items are Deployment keys ``namespace/name``."""

    name = "deployment-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.replica_sets = self.informers.store("ReplicaSet")
        self.informers.add_handlers("Deployment", self._changed, lambda old, new: self._changed(new), self._deleted)
        self.informers.add_handlers("ReplicaSet", self._rs_changed, lambda old, new: self._rs_changed(new),
                                    self._rs_changed)

    def _changed(self, deployment: Deployment) -> None:
        self.queue.add(f"{deployment.metadata.namespace}/{deployment.metadata.name}")

    def _rs_changed(self, rs: ReplicaSet) -> None:
        ref = controller_of(rs)
        if ref is not None and ref.kind == "Deployment":
            self.queue.add(f"{rs.metadata.namespace}/{ref.name}")

    def _deleted(self, deployment: Deployment) -> None:
        for rs in self._owned(deployment):
            try:
                self.cluster.delete("ReplicaSet", rs.metadata.name, rs.metadata.namespace, uid=rs.metadata.uid)
            except NotFound:
                pass

    def _owned(self, deployment: Deployment) -> list[ReplicaSet]:
        uid = deployment.metadata.uid
        owned = [rs for rs in self.replica_sets.values()
                 if rs.metadata.namespace == deployment.metadata.namespace
                 and (ref := controller_of(rs)) is not None and ref.uid == uid]
        return sorted(owned, key=lambda rs: (rs.metadata.creation_timestamp or 0.0, rs.metadata.name))

    def new_replica_set(self, deployment: Deployment, revision: int, replicas: int) -> ReplicaSet:
        """The ReplicaSet of ``deployment``'s current template (upstream ``getNewReplicaSet``)."""
        template = deployment.spec.template
        hashed = template_hash(template)
        labels = {**template.metadata.labels, POD_TEMPLATE_HASH: hashed}
        selector = deployment.spec.selector or LabelSelector()
        meta = ObjectMeta(name=f"{deployment.metadata.name}-{hashed}", namespace=deployment.metadata.namespace,
                          labels=labels, annotations={REVISION: str(revision), **replica_annotations(deployment)},
                          owner_references=(controller_ref(deployment),))
        spec = ReplicaSetSpec(
            selector=attrs.evolve(selector, match_labels={**selector.match_labels, POD_TEMPLATE_HASH: hashed}),
            template=PodTemplateSpec(metadata=evolve(template.metadata, labels=labels), spec=template.spec),
            replicas=replicas, min_ready_seconds=deployment.spec.min_ready_seconds)
        return ReplicaSet(metadata=meta, spec=spec)

    def sync(self, item: str) -> None:
        """Create the current ReplicaSet, scale it and the old ones one step of the strategy, write the status
        (upstream ``syncDeployment``)."""
        deployment = self.informers.get("Deployment", item)
        if deployment is None or deployment.metadata.deletion_timestamp is not None:
            return
        owned = self._owned(deployment)
        hashed = template_hash(deployment.spec.template)
        new = next((rs for rs in owned if rs.metadata.labels.get(POD_TEMPLATE_HASH) == hashed), None)
        old = [rs for rs in owned if rs is not new]
        replicas = deployment.spec.replicas
        if deployment.spec.paused or self._scaling_event(deployment, owned):
            self._scale_all(deployment, new, old)  # upstream sync(): scale only, no rollout step
            self._write_status(deployment, owned, new)
            return
        if new is None:
            revision = 1 + max((int(rs.metadata.annotations.get(REVISION, "0")) for rs in owned), default=0)
            start = 0 if old else replicas
            if old and deployment.spec.strategy.type == "RollingUpdate":
                start = self._grow(deployment, 0, old)
            new = self.cluster.create(self.new_replica_set(deployment, revision, start))
            owned.append(new)
        elif deployment.spec.strategy.type == "Recreate":
            if all(rs.spec.replicas == 0 and not rs.status.get("replicas") for rs in old):
                self._scale(new, replicas, deployment)
        else:
            self._scale(new, new.spec.replicas if new.spec.replicas > replicas and old
                        else self._grow(deployment, new.spec.replicas, old), deployment)
        self._shrink_old(deployment, new, old)
        self._write_status(deployment, owned, new)

    def _grow(self, deployment: Deployment, current: int, old: list[ReplicaSet]) -> int:
        """The new ReplicaSet's replicas one step on: within ``replicas + maxSurge`` pods in all."""
        replicas = deployment.spec.replicas
        if not old:
            return replicas
        surge, _ = surge_and_unavailable(deployment)
        total = current + sum(rs.spec.replicas for rs in old)
        room = replicas + surge - total
        return current + max(0, min(room, replicas - current))

    def _shrink_old(self, deployment: Deployment, new: ReplicaSet, old: list[ReplicaSet]) -> None:
        if not old:
            return
        if deployment.spec.strategy.type == "Recreate":
            for rs in old:
                self._scale(rs, 0, deployment)
            return
        _, unavailable = surge_and_unavailable(deployment)
        minimum = deployment.spec.replicas - unavailable
        # counted on replicas (what may already be on its way down) and on available pods, as upstream
        all_pods = new.spec.replicas + sum(rs.spec.replicas for rs in old)
        new_unavailable = max(0, new.spec.replicas - _available(new))
        available = _available(new) + sum(_available(rs) for rs in old)
        budget = max(0, min(all_pods - minimum - new_unavailable, available - minimum))
        for rs in old:  # oldest first
            cut = min(rs.spec.replicas, budget)
            if cut:
                self._scale(rs, rs.spec.replicas - cut, deployment)
                budget -= cut

    @staticmethod
    def _scaling_event(deployment: Deployment, owned: list[ReplicaSet]) -> bool:
        """An active ReplicaSet was scaled for other replicas than the Deployment's (upstream ``isScalingEvent``)."""
        wanted = str(deployment.spec.replicas)
        return any(rs.spec.replicas and rs.metadata.annotations.get(DESIRED_REPLICAS, wanted) != wanted
                   for rs in owned)

    def _scale_all(self, deployment: Deployment, new: ReplicaSet | None, old: list[ReplicaSet]) -> None:
        """Upstream ``scale``: one active ReplicaSet (or none: the newest) takes all the replicas; a saturated new
        one leaves the old ones at zero; otherwise, rolling, every active one is scaled in proportion."""
        newest_old = sorted(old, key=lambda rs: (rs.metadata.creation_timestamp or 0.0, rs.metadata.name),
                            reverse=True)
        everything = newest_old + ([new] if new is not None else [])
        active = [rs for rs in everything if rs.spec.replicas > 0]
        if len(active) <= 1:
            target = active[0] if active else (new if new is not None else (newest_old[0] if old else None))
            if target is not None:
                self._scale(target, deployment.spec.replicas, deployment)
            return
        replicas = deployment.spec.replicas
        if (new is not None and new.spec.replicas == replicas and _available(new) == replicas
                and new.metadata.annotations.get(DESIRED_REPLICAS) == str(replicas)):
            for rs in old:
                self._scale(rs, 0, deployment)
            return
        if deployment.spec.strategy.type == "RollingUpdate":
            sizes = proportions(deployment, active)
            for rs in active:
                self._scale(rs, sizes[rs.metadata.name], deployment)

    def _scale(self, rs: ReplicaSet, replicas: int, deployment: Deployment | None = None) -> None:
        """Set ``rs``'s replicas and (for ``deployment``) its desired/max-replicas annotations (upstream
        ``scaleReplicaSet``: one update when either changes)."""
        annotations = rs.metadata.annotations
        if deployment is not None:
            annotations = {**annotations, **replica_annotations(deployment)}
        if rs.spec.replicas != replicas or annotations != rs.metadata.annotations:
            self.cluster.update(attrs.evolve(rs, metadata=attrs.evolve(rs.metadata, annotations=annotations),
                                             spec=attrs.evolve(rs.spec, replicas=replicas)))

    def _write_status(self, deployment: Deployment, owned: list[ReplicaSet], new: ReplicaSet | None) -> None:
        counts = {"observedGeneration": deployment.metadata.generation,
                  "replicas": sum(int(rs.status.get("replicas", 0)) for rs in owned),
                  "updatedReplicas": int(new.status.get("replicas", 0)) if new is not None else 0,
                  "readyReplicas": sum(int(rs.status.get("readyReplicas", 0)) for rs in owned),
                  "availableReplicas": sum(_available(rs) for rs in owned)}
        counts["unavailableReplicas"] = max(0, deployment.spec.replicas - counts["availableReplicas"])
        status: dict[str, Any] = {key: value for key, value in counts.items() if value}
        conditions = self._paused_condition(deployment)
        if conditions:
            status["conditions"] = conditions
        if status != deployment.status:
            self.cluster.update_status(attrs.evolve(deployment, status=status))

    def _paused_condition(self, deployment: Deployment) -> list[dict[str, Any]]:
        """``Progressing`` Unknown ``DeploymentPaused`` while paused, ``DeploymentResumed`` once unpaused (upstream
        ``checkPausedConditions``); kept as it was when nothing changed."""
        kept = [c for c in deployment.status.get("conditions", ()) if c.get("type") == "Progressing"]
        reason = kept[0].get("reason") if kept else None
        if deployment.spec.paused and reason != "DeploymentPaused":
            reason, message = "DeploymentPaused", "Deployment is paused"
        elif not deployment.spec.paused and reason == "DeploymentPaused":
            reason, message = "DeploymentResumed", "Deployment is resumed"
        else:
            return kept
        stamp = format_time(self.clock.now())
        return [{"type": "Progressing", "status": "Unknown", "lastUpdateTime": stamp, "lastTransitionTime": stamp,
                 "reason": reason, "message": message}]
