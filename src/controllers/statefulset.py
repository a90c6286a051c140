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
"""

from __future__ import annotations

import attrs

from kubesched.core.api.apps_v1 import StatefulSet
from kubesched.core.api.core_v1 import PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.cluster.client import AlreadyExists, NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import OwnedPods, pod_active, pod_from_template, pod_ready

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


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

    def new_pod(self, sts: StatefulSet, ordinal: int) -> Pod:
        """Pod ``<set>-<ordinal>`` of ``sts`` (upstream ``newVersionedStatefulSetPod``: identity and storage)."""
        name = f"{sts.metadata.name}-{ordinal}"
        spec = sts.spec.template.spec
        claims = {t.metadata.name: claim_name(t, name) for t in sts.spec.volume_claim_templates}
        volumes = tuple(v for v in spec.volumes if v.name not in claims) + tuple(
            Volume(name=volume, persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim))
            for volume, claim in claims.items())
        extra = {**spec.extra, "hostname": name}
        if sts.spec.service_name:
            extra["subdomain"] = sts.spec.service_name
        return pod_from_template(sts.spec.template, sts, name=name,
                                 labels={POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)},
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
        """Bring StatefulSet ``item`` to its replicas in ordinal order (upstream ``StatefulSetControl.UpdateStatefulSet``
        for creation and scale-down), then write its status."""
        sts = self.informers.get("StatefulSet", item)
        if sts is None or sts.metadata.deletion_timestamp is not None or not self.owned.satisfied(sts):
            return
        start, parallel = sts.spec.start_ordinal, sts.spec.pod_management_policy == "Parallel"
        wanted = range(start, start + sts.spec.replicas)
        claimed = self.owned.claim(self.cluster, sts, sts.spec.selector, member=lambda p: ordinal_of(sts, p) is not None)
        pods = {ordinal_of(sts, pod): pod for pod in claimed}
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is not None and pod.status.phase == "Failed" and pod.metadata.deletion_timestamp is None:
                self._delete(sts, pod)  # made again once its deletion is seen
                if not parallel:
                    break
                continue
            if pod is None:
                self._create_claims(sts, f"{sts.metadata.name}-{ordinal}")
                self.owned.expect_create(sts, self.cluster.create(self.new_pod(sts, ordinal)))
                if not parallel:
                    break
            elif not parallel and not (pod.status.phase == "Running" and pod_ready(pod) and pod_active(pod)):
                break  # OrderedReady: the next ordinal waits for this one
        else:
            excess = sorted((o for o in pods if o is None or o not in wanted), key=lambda o: -1 if o is None else o,
                            reverse=True)
            for extra in excess:
                if pods[extra].metadata.deletion_timestamp is None:
                    self._delete(sts, pods[extra])
                if not parallel:
                    break
        self._write_status(sts, [pod for pod in pods.values() if pod_active(pod)])

    def _delete(self, sts: StatefulSet, pod: Pod) -> None:
        self.owned.expect_delete(sts, pod)
        try:
            self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
        except NotFound:
            pass

    def _write_status(self, sts: StatefulSet, pods: list[Pod]) -> None:
        ready = sum(1 for pod in pods if pod_ready(pod))
        status = {key: value for key, value in {
            "observedGeneration": sts.metadata.generation, "replicas": len(pods), "readyReplicas": ready,
            "currentReplicas": len(pods), "updatedReplicas": len(pods), "availableReplicas": ready}.items() if value}
        if status != sts.status:
            self.cluster.update_status(attrs.evolve(sts, status=status))
