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
(Ready pods, as the simulated kubelet reports them).  Proportional scaling of
a rollout in progress, ``paused`` and revision history are not simulated: a
Deployment that sets ``paused: true`` gets a Warning event ``Unsupported``
saying so, and is run as if unpaused.
"""

from __future__ import annotations

import attrs

from kubesched.core.api.apps_v1 import Deployment, PodTemplateSpec, ReplicaSet, ReplicaSetSpec
from kubesched.core.api.meta import LabelSelector, ObjectMeta, evolve
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import controller_of, controller_ref, resolve, template_hash

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def surge_and_unavailable(deployment: Deployment) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods; both 0 makes maxUnavailable 1 (upstream ``ResolveFenceposts``)."""
    rolling, replicas = deployment.spec.rolling(), deployment.spec.replicas
    surge = resolve(rolling.max_surge, replicas, True)
    unavailable = resolve(rolling.max_unavailable, replicas, False)
    return surge, (1 if surge == 0 and unavailable == 0 else unavailable)


def _available(rs: ReplicaSet) -> int:
    return int(rs.status.get("availableReplicas", 0))


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
                          labels=labels, annotations={REVISION: str(revision)},
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
        if deployment.spec.paused:
            self.recorder.event(deployment, "Warning", "Unsupported", "Sync",
                                "kubesched does not simulate paused Deployments: spec.paused is ignored")
        owned = self._owned(deployment)
        hashed = template_hash(deployment.spec.template)
        new = next((rs for rs in owned if rs.metadata.labels.get(POD_TEMPLATE_HASH) == hashed), None)
        old = [rs for rs in owned if rs is not new]
        replicas = deployment.spec.replicas
        if new is None:
            revision = 1 + max((int(rs.metadata.annotations.get(REVISION, "0")) for rs in owned), default=0)
            start = 0 if old else replicas
            if old and deployment.spec.strategy.type == "RollingUpdate":
                start = self._grow(deployment, 0, old)
            new = self.cluster.create(self.new_replica_set(deployment, revision, start))
            owned.append(new)
        elif deployment.spec.strategy.type == "Recreate":
            if all(rs.spec.replicas == 0 and not rs.status.get("replicas") for rs in old):
                self._scale(new, replicas)
        else:
            self._scale(new, new.spec.replicas if new.spec.replicas > replicas and old
                        else self._grow(deployment, new.spec.replicas, old))
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
                self._scale(rs, 0)
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
                self._scale(rs, rs.spec.replicas - cut)
                budget -= cut

    def _scale(self, rs: ReplicaSet, replicas: int) -> None:
        if rs.spec.replicas != replicas:
            self.cluster.update(attrs.evolve(rs, spec=attrs.evolve(rs.spec, replicas=replicas)))

    def _write_status(self, deployment: Deployment, owned: list[ReplicaSet], new: ReplicaSet) -> None:
        counts = {"observedGeneration": deployment.metadata.generation,
                  "replicas": sum(int(rs.status.get("replicas", 0)) for rs in owned),
                  "updatedReplicas": int(new.status.get("replicas", 0)),
                  "readyReplicas": sum(int(rs.status.get("readyReplicas", 0)) for rs in owned),
                  "availableReplicas": sum(_available(rs) for rs in owned)}
        counts["unavailableReplicas"] = max(0, deployment.spec.replicas - counts["availableReplicas"])
        status = {key: value for key, value in counts.items() if value}
        if status != deployment.status:
            self.cluster.update_status(attrs.evolve(deployment, status=status))
