"""The StatefulSet controller of the embedded cluster.

Stands in for kube-controller-manager's ``statefulset-controller``
(``pkg/controller/statefulset``): a StatefulSet's pods are
``<set>-<ordinal>`` for the ordinals ``ordinals.start`` ..
``start + replicas - 1``, each with the labels ``statefulset.kubernetes.io/pod-name``
and ``apps.kubernetes.io/pod-index``, its ``hostname`` (and ``subdomain``: the
``serviceName``) and, for every ``volumeClaimTemplates`` entry, the claim
``<template>-<pod>`` created before the pod (so VolumeBinding binds or
provisions it) and mounted in place of the template's volume of that name.
With ``podManagementPolicy: OrderedReady`` (the default) a pod is created only
once every pod before it is Running and Ready (what the simulated kubelet
reports), and scaling down deletes from the highest ordinal one at a time;
``Parallel`` creates and deletes them all at once.  A failed pod is deleted
and made again.  Claims are kept when pods go (the default ``Retain``
policy); the set's deletion deletes its pods, as the garbage collector would.
A pod without a controller that the selector matches and whose name is one
of the set's (``<set>-<ordinal>``, upstream ``isMemberOf``) is adopted; one it
controls that no longer matches is released.

Revisions: each pod carries ``controller-revision-hash: <set>-<hash of its
template>``; the status names ``currentRevision`` and ``updateRevision``.
A template change rolls out with ``updateStrategy: RollingUpdate`` (the
default) once every pod exists and is healthy: the pod with the highest
ordinal not at the update revision is deleted and made again from the new
template, and the next waits until it is Running and Ready, down to
``rollingUpdate.partition`` (pods below it keep, and are made again from,
the current revision; ``maxUnavailable`` pods may be down at once, default
1); when every pod is updated and Ready the update revision becomes the
current one.  ``OnDelete`` replaces nothing: a pod deleted by hand is made
from the new template.  The revisions' templates are kept in the controller
(no ControllerRevision objects are written).
"""

from __future__ import annotations

import attrs

from kubesched.core.api.apps_v1 import PodTemplateSpec, StatefulSet
from kubesched.core.api.core_v1 import PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.cluster.client import AlreadyExists, NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import (
    OwnedPods,
    pod_active,
    pod_from_template,
    pod_ready,
    resolve,
    template_hash,
)

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
#: the label naming a pod's revision (upstream ``apps.ControllerRevisionHashLabelKey``)
REVISION_LABEL = "controller-revision-hash"


def revision_name(sts: StatefulSet, template: PodTemplateSpec) -> str:
    """The revision of ``template`` for ``sts``: ``<set>-<hash>`` (upstream ``ControllerRevisionName``)."""
    return f"{sts.metadata.name}-{template_hash(template)}"


def healthy(pod: Pod) -> bool:
    """Running, Ready and not being deleted (upstream ``isHealthy``)."""
    return pod.status.phase == "Running" and pod_ready(pod) and pod_active(pod)


def claim_name(template: PersistentVolumeClaim, pod_name: str) -> str:
    """The claim of ``volumeClaimTemplates`` entry ``template`` for pod ``pod_name``: ``<template>-<pod>``."""
    return f"{template.metadata.name}-{pod_name}"


def ordinal_of(sts: StatefulSet, pod: Pod) -> int | None:
    """The ordinal in ``pod``'s name ``<set>-<ordinal>``, None when the name is not of that shape."""
    prefix, _, number = pod.metadata.name.rpartition("-")
    return int(number) if prefix == sts.metadata.name and number.isdigit() else None


class StatefulSetController(Controller):
    """Work items are StatefulSet keys ``namespace/name``."""

    name = "statefulset-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.owned = OwnedPods(self.informers, "StatefulSet", lambda ns, name: self.queue.add(f"{ns}/{name}"))
        self.claims = self.informers.store("PersistentVolumeClaim")
        #: set uid -> revision name -> its pod template (what upstream keeps in ControllerRevisions)
        self._revisions: dict[str, dict[str, PodTemplateSpec]] = {}
        self.informers.add_handlers("StatefulSet", self._changed, lambda old, new: self._changed(new), self._deleted)

    def _changed(self, sts: StatefulSet) -> None:
        self.queue.add(f"{sts.metadata.namespace}/{sts.metadata.name}")

    def _deleted(self, sts: StatefulSet) -> None:
        for pod in self.owned.pods(sts):
            try:
                self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
            except NotFound:
                pass
        self.owned.forget(sts.metadata.uid)
        self._revisions.pop(sts.metadata.uid, None)

    def new_pod(self, sts: StatefulSet, ordinal: int, template: PodTemplateSpec | None = None,
                revision: str = "") -> Pod:
        """Pod ``<set>-<ordinal>`` of ``sts`` from ``template`` (default: the set's) at ``revision`` (upstream
        ``newVersionedStatefulSetPod``: identity, storage, revision label)."""
        name = f"{sts.metadata.name}-{ordinal}"
        template = template or sts.spec.template
        spec = template.spec
        claims = {t.metadata.name: claim_name(t, name) for t in sts.spec.volume_claim_templates}
        volumes = tuple(v for v in spec.volumes if v.name not in claims) + tuple(
            Volume(name=volume, persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim))
            for volume, claim in claims.items())
        extra = {**spec.extra, "hostname": name}
        if sts.spec.service_name:
            extra["subdomain"] = sts.spec.service_name
        labels = {POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)}
        if revision:
            labels[REVISION_LABEL] = revision
        return pod_from_template(template, sts, name=name, labels=labels,
                                 spec_changes={"volumes": volumes, "extra": extra})

    def _create_claims(self, sts: StatefulSet, pod_name: str) -> None:
        namespace = sts.metadata.namespace
        selector_labels = sts.spec.selector.match_labels if sts.spec.selector is not None else {}
        for template in sts.spec.volume_claim_templates:
            name = claim_name(template, pod_name)
            if f"{namespace}/{name}" in self.claims:
                continue
            meta = ObjectMeta(name=name, namespace=namespace,
                              labels={**template.metadata.labels, **selector_labels},
                              annotations=dict(template.metadata.annotations))
            try:
                self.cluster.create(PersistentVolumeClaim(metadata=meta, spec=template.spec))
            except AlreadyExists:
                pass

    def sync(self, item: str) -> None:
        """Bring StatefulSet ``item`` to its replicas in ordinal order, then roll its pods to the update revision
        (upstream ``StatefulSetControl.UpdateStatefulSet``), then write its status."""
        sts = self.informers.get("StatefulSet", item)
        if sts is None or sts.metadata.deletion_timestamp is not None or not self.owned.satisfied(sts):
            return
        update = revision_name(sts, sts.spec.template)
        revisions = self._revisions.setdefault(sts.metadata.uid, {})
        revisions[update] = sts.spec.template
        current = sts.status.get("currentRevision") or update
        if current not in revisions:  # a revision this controller never saw (a snapshot): the pods keep theirs
            current = update
        start, parallel = sts.spec.start_ordinal, sts.spec.pod_management_policy == "Parallel"
        wanted = range(start, start + sts.spec.replicas)
        claimed = self.owned.claim(self.cluster, sts, sts.spec.selector,
                                   member=lambda p: ordinal_of(sts, p) is not None)
        pods = {ordinal_of(sts, pod): pod for pod in claimed}
        if self._scale(sts, pods, wanted, parallel, current, update):
            self._roll(sts, pods, wanted, update)
        self._write_status(sts, [pod for pod in pods.values() if pod_active(pod)], current, update)

    def _scale(self, sts: StatefulSet, pods: dict, wanted: range, parallel: bool, current: str, update: str) -> bool:
        """Create missing ordinals and replace failed pods (OrderedReady: one at a time, each waiting for the one
        before to be healthy), then delete ordinals past the replicas; True when all that is done."""
        rolling = sts.spec.update_strategy.rolling_update
        partition = sts.spec.start_ordinal + (rolling.partition if rolling is not None else 0)
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is not None and pod.status.phase == "Failed" and pod.metadata.deletion_timestamp is None:
                self._delete(sts, pod)  # made again once its deletion is seen
                if not parallel:
                    return False
                continue
            if pod is None:
                revision = current if sts.spec.update_strategy.type == "RollingUpdate" and ordinal < partition \
                    else update
                self._create_claims(sts, f"{sts.metadata.name}-{ordinal}")
                template = self._revisions[sts.metadata.uid][revision]
                self.owned.expect_create(sts, self.cluster.create(self.new_pod(sts, ordinal, template, revision)))
                if not parallel:
                    return False
            elif not parallel and not healthy(pod):
                return False  # OrderedReady: the next ordinal waits for this one
        excess = sorted((o for o in pods if o is None or o not in wanted), key=lambda o: -1 if o is None else o,
                        reverse=True)
        for extra in excess:
            if pods[extra].metadata.deletion_timestamp is None:
                self._delete(sts, pods[extra])
            if not parallel:
                return False
        return not excess and all(ordinal in pods for ordinal in wanted)

    def _roll(self, sts: StatefulSet, pods: dict, wanted: range, update: str) -> None:
        """RollingUpdate from the highest ordinal down to the partition (upstream's update loop): by default the
        first pod not at ``update`` is deleted unless one above it is still unhealthy; with ``maxUnavailable``,
        as many as keep the set's unhealthy pods within it."""
        strategy = sts.spec.update_strategy
        if strategy.type != "RollingUpdate" or strategy.rolling_update is None:
            return
        rolling = strategy.rolling_update
        targets = [pods[o] for o in reversed(wanted) if o >= wanted.start + rolling.partition]
        outdated = [pod for pod in targets
                    if pod.metadata.labels.get(REVISION_LABEL) != update and pod.metadata.deletion_timestamp is None]
        if rolling.max_unavailable is None:
            for pod in targets:
                if pod in outdated:
                    self._delete(sts, pod)
                    return
                if not healthy(pod):
                    return  # the one made last must be Running and Ready first
            return
        allowed = max(1, resolve(rolling.max_unavailable, sts.spec.replicas, round_up=True))
        unavailable = sum(1 for ordinal in wanted if not healthy(pods[ordinal]))
        for pod in outdated[:max(0, allowed - unavailable)]:
            self._delete(sts, pod)

    def _delete(self, sts: StatefulSet, pod: Pod) -> None:
        self.owned.expect_delete(sts, pod)
        try:
            self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
        except NotFound:
            pass

    def _write_status(self, sts: StatefulSet, pods: list[Pod], current: str, update: str) -> None:
        ready = sum(1 for pod in pods if pod_ready(pod))
        updated = sum(1 for pod in pods if pod.metadata.labels.get(REVISION_LABEL) == update)
        at_current = sum(1 for pod in pods if pod.metadata.labels.get(REVISION_LABEL) == current)
        if (sts.spec.update_strategy.type == "RollingUpdate" and updated == len(pods) == sts.spec.replicas
                and ready == len(pods)):
            current, at_current = update, updated  # upstream completeRollingUpdate
        status = {key: value for key, value in {
            "observedGeneration": sts.metadata.generation, "replicas": len(pods), "readyReplicas": ready,
            "currentReplicas": at_current, "updatedReplicas": updated, "availableReplicas": ready,
            "currentRevision": current, "updateRevision": update}.items() if value}
        if status != sts.status:
            self.cluster.update_status(attrs.evolve(sts, status=status))
