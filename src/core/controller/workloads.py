"""What the workload controllers share: pods made from a template, controller references, the pods each owner
controls (an index kept from the Pod informer), claiming pods by selector and expectations.

Upstream ``pkg/controller/controller_utils.go``: ``GetPodFromTemplate`` (the
template's labels, annotations and spec, a controller reference with
``blockOwnerDeletion``), ``ControllerExpectations`` (a controller that has just
created or deleted pods waits until its informer has seen them before it counts
again, so that it never creates twice) and ``ComputeHash``
(``pod-template-hash``: FNV-32a of the template and the collision count, written
in the "safe" alphabet of ``rand.SafeEncodeString``; here the template's
canonical JSON is hashed, so the text differs from upstream's while keeping
its shape and stability); ``PodControllerRefManager.ClaimPods``
(:meth:`OwnedPods.claim`: an orphan pod the selector matches is adopted, an
owned pod it no longer matches is released, each by a patch of the pod's
``ownerReferences``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Callable
from weakref import WeakKeyDictionary

import attrs

from kubesched.core.api import resource_of
from kubesched.core.api.convert import unstructure
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.cluster.client import ClusterClient, Conflict, NotFound
from kubesched.core.cluster.informer import Informers

#: upstream ``rand.SafeEncodeString``'s alphabet: no vowels, no confusable characters
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def controller_ref(owner: Any) -> OwnerReference:
    """The ``ownerReferences`` entry a controller puts on what it creates: ``controller`` and
    ``blockOwnerDeletion`` true."""
    resource = resource_of(owner)
    return OwnerReference(api_version=resource.api_version, kind=resource.kind, name=owner.metadata.name,
                          uid=owner.metadata.uid, controller=True, block_owner_deletion=True)


def controller_of(obj: Any) -> OwnerReference | None:
    """``obj``'s controller reference (the owner reference with ``controller: true``), None when it has none."""
    return next((ref for ref in obj.metadata.owner_references if ref.controller), None)


def pod_from_template(template: Any, owner: Any, *, name: str = "", generate_name: str = "",
                      labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
                      spec_changes: dict[str, Any] | None = None) -> Pod:
    """A new pod of ``owner`` (a workload object) from its pod ``template``: the template's labels and
    annotations plus ``labels``/``annotations``, its spec with ``spec_changes`` (attrs field names), the owner's
    namespace and controller reference (upstream ``GetPodFromTemplate``)."""
    spec = attrs.evolve(template.spec, **(spec_changes or {}))
    meta = ObjectMeta(name=name, generate_name=generate_name, namespace=owner.metadata.namespace,
                      labels={**template.metadata.labels, **(labels or {})},
                      annotations={**template.metadata.annotations, **(annotations or {})},
                      owner_references=(controller_ref(owner),))
    return Pod(metadata=meta, spec=spec)


def template_hash(template: Any, collision_count: int = 0) -> str:
    """``pod-template-hash`` / ``controller-revision-hash`` of a pod template: FNV-32a of its canonical JSON
    (and ``collision_count`` when non-zero) as decimal text, each digit mapped into :data:`SAFE_ALPHABET`."""
    text = json.dumps(unstructure(template), sort_keys=True, separators=(",", ":"))
    if collision_count:
        text += str(collision_count)
    return safe_hash(text.encode())


def safe_hash(data: bytes) -> str:
    """FNV-32a of ``data`` as decimal text, each digit mapped into :data:`SAFE_ALPHABET` (upstream's
    ``rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))``, the suffix of generated names)."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(digit) % len(SAFE_ALPHABET)] for digit in str(value))


def resolve(value: Any, total: int, round_up: bool) -> int:
    """An IntOrString of ``total`` (``25%``), rounded as upstream's ``GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int):
        return value
    share = int(str(value).rstrip("%")) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def pod_ready(pod: Pod) -> bool:
    """The pod's ``Ready`` condition is True (what the kubelet reports)."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def pod_active(pod: Pod) -> bool:
    """Neither finished (Succeeded, Failed) nor being deleted: upstream ``IsPodActive``."""
    return not pod.terminal and pod.metadata.deletion_timestamp is None


class OrphanPods:
    """The pods without a controller, by namespace (what a workload's selector may adopt), kept from the Pod
    informer: one index per :class:`Informers`, shared by every controller (:meth:`of`).  A pod update that
    keeps its ``ownerReferences`` object (a status write) costs one identity check."""

    _shared: "WeakKeyDictionary[Informers, OrphanPods]" = WeakKeyDictionary()

    @classmethod
    def of(cls, informers: Informers) -> "OrphanPods":
        """The index of ``informers``' pods (made and registered on first use)."""
        index = cls._shared.get(informers)
        if index is None:
            index = cls._shared[informers] = cls(informers)
        return index

    def __init__(self, informers: Informers):
        #: namespace -> keys of its pods without a controller
        self.by_namespace: dict[str, set[str]] = defaultdict(set)
        informers.add_handlers("Pod", self._added, self._updated, self._deleted)

    def _added(self, pod: Pod) -> None:
        if not any(ref.controller for ref in pod.metadata.owner_references):
            self.by_namespace[pod.metadata.namespace].add(pod.key)

    def _updated(self, old: Pod, new: Pod) -> None:
        if old.metadata.owner_references is not new.metadata.owner_references or old.metadata.uid != new.metadata.uid:
            self._deleted(old)
            self._added(new)

    def _deleted(self, pod: Pod) -> None:
        keys = self.by_namespace.get(pod.metadata.namespace)
        if keys:
            keys.discard(pod.key)


class OwnedPods:
    """The pods each controller owns, by the owner's uid, kept from the Pod informer; and the creations and
    deletions a controller has made that its informer has not shown yet (upstream ``ControllerExpectations``).

    ``kind``: the owner kind whose pods are tracked; ``enqueue(namespace, owner name)`` is called whenever one
    of its pods is added, changed or deleted."""

    def __init__(self, informers: Informers, kind: str, enqueue: Callable[[str, str], None]):
        self.kind = kind
        self._enqueue = enqueue
        self._pods = informers.store("Pod")
        self._owned: dict[str, set[str]] = defaultdict(set)
        self._orphans = OrphanPods.of(informers)
        self._expected_adds: dict[str, set[str]] = defaultdict(set)
        self._expected_deletes: dict[str, set[str]] = defaultdict(set)
        informers.add_handlers("Pod", self._added, self._updated, self._deleted)

    def _ref(self, pod: Pod) -> OwnerReference | None:
        if not pod.metadata.owner_references:
            return None
        ref = controller_of(pod)
        return ref if ref is not None and ref.kind == self.kind else None

    def _added(self, pod: Pod) -> None:
        ref = self._ref(pod)
        if ref is not None:
            self._owned[ref.uid].add(pod.key)
            self._expected_adds[ref.uid].discard(pod.key)
            if pod.metadata.deletion_timestamp is not None:  # a graceful deletion is observed when it starts
                self._expected_deletes[ref.uid].discard(pod.key)
            self._enqueue(pod.metadata.namespace, ref.name)

    def _updated(self, old: Pod, new: Pod) -> None:
        refs_changed = old.metadata.owner_references is not new.metadata.owner_references  # a status write keeps them
        if old.metadata.uid != new.metadata.uid or (
                refs_changed and (before := self._ref(old)) is not None and before != self._ref(new)):
            self._deleted(old)  # replaced, or released (its controller reference went or changed)
        self._added(new)

    def _deleted(self, pod: Pod) -> None:
        ref = self._ref(pod)
        if ref is not None:
            self._owned[ref.uid].discard(pod.key)
            self._expected_deletes[ref.uid].discard(pod.key)
            self._enqueue(pod.metadata.namespace, ref.name)

    def pods(self, owner: Any) -> list[Pod]:
        """The pods ``owner`` controls (its uid in their controller reference), by name."""
        found = (self._pods.get(key) for key in self._owned.get(owner.metadata.uid, ()))
        return sorted((pod for pod in found if pod is not None), key=lambda pod: pod.metadata.name)

    def claim(self, cluster: ClusterClient, owner: Any, selector: Any,
              member: Callable[[Pod], bool] | None = None, active_only: bool = False) -> list[Pod]:
        """The pods ``owner`` controls after claiming (upstream ``PodControllerRefManager.ClaimPods``), by name:
        a pod of its namespace without a controller that ``selector`` (a LabelSelector) matches - and ``member``
        accepts, when given - is adopted (a controller reference patched in) unless it or the owner is being
        deleted; a pod it controls that no longer matches is released (the reference patched out) unless the
        owner is being deleted.  ``active_only``: pods that finished or are being deleted are neither adopted
        nor returned (a ReplicaSet's ``FilterActivePods`` before claiming)."""
        uid, namespace = owner.metadata.uid, owner.metadata.namespace
        deleting = owner.metadata.deletion_timestamp is not None
        claimed = []
        for key in sorted(self._owned.get(uid, set()) | self._orphans.by_namespace.get(namespace, set())):
            pod = self._pods.get(key)
            if pod is None or (active_only and not pod_active(pod)):
                continue
            matches = selector is not None and selector.matches(pod.metadata.labels) and (
                member is None or member(pod))
            ref = controller_of(pod)
            if ref is not None:
                if ref.uid != uid:
                    continue
                if matches or deleting:
                    claimed.append(pod)
                else:
                    self._patch_refs(cluster, pod, [{"$patch": "delete", "uid": uid}])
            elif matches and not deleting and pod.metadata.deletion_timestamp is None:
                ours = controller_ref(owner)
                adopted = self._patch_refs(cluster, pod, [{
                    "apiVersion": ours.api_version, "kind": ours.kind, "name": ours.name, "uid": ours.uid,
                    "controller": True, "blockOwnerDeletion": True}])
                if adopted is not None:
                    claimed.append(adopted)
        return claimed

    @staticmethod
    def _patch_refs(cluster: ClusterClient, pod: Pod, refs: list[dict[str, Any]]) -> Pod | None:
        """Strategic-merge ``refs`` into ``pod``'s ``ownerReferences`` (with its uid as precondition, as
        upstream's adopt and release patches); None when the pod is gone or was replaced."""
        try:
            return cluster.patch("Pod", pod.metadata.name, {"metadata": {"ownerReferences": refs}},
                                 pod.metadata.namespace, uid=pod.metadata.uid)
        except (NotFound, Conflict):
            return None

    def expect_create(self, owner: Any, pod: Pod) -> None:
        """``owner`` created ``pod`` (as stored): wait for the informer to show it."""
        if pod.key not in self._owned.get(owner.metadata.uid, ()):
            self._expected_adds[owner.metadata.uid].add(pod.key)

    def expect_delete(self, owner: Any, pod: Pod) -> None:
        """``owner`` deleted ``pod``: wait for the informer to show it gone."""
        if pod.key in self._owned.get(owner.metadata.uid, ()):
            self._expected_deletes[owner.metadata.uid].add(pod.key)

    def satisfied(self, owner: Any) -> bool:
        """Every creation and deletion ``owner``'s controller made has been observed (upstream
        ``SatisfiedExpectations``): only then may it count its pods and act again."""
        uid = owner.metadata.uid
        return not self._expected_adds.get(uid) and not self._expected_deletes.get(uid)

    def forget(self, uid: str) -> None:
        """The owner is gone: drop what was kept for it."""
        for table in (self._owned, self._expected_adds, self._expected_deletes):
            table.pop(uid, None)


def job_finished(job: Any) -> str:
    """``Complete`` or ``Failed`` when the batch/v1 Job has that condition True, else ""
    (upstream's IsJobFinished, which the job and cronjob controllers share)."""
    for condition in job.status.get("conditions", ()):
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return ""
