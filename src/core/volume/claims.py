"""Persistent volumes and claims: which claims a pod uses, and how PVs match claims.

The shared rules of the volume plugins (VolumeBinding, VolumeRestrictions,
VolumeZone, NodeVolumeLimits) and the embedded PersistentVolume controller,
as upstream keeps them in ``k8s.io/component-helpers/storage/volume`` and
``.../storage/ephemeral``:

- a pod's claims are its ``persistentVolumeClaim`` volumes plus one claim
  ``<pod name>-<volume name>`` per generic ephemeral volume, which must be
  controlled by the pod;
- a claim is fully bound when it names a volume and carries the
  ``pv.kubernetes.io/bind-completed`` annotation;
- :func:`find_matching_volume` is ``FindMatchingVolume``: a volume pre-bound to
  the claim wins, otherwise the smallest Available volume of the claim's class
  whose capacity, access modes, volume mode, label selector and (for the
  scheduler) node affinity fit.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import attrs

from kubesched.core.api.core_v1 import (
    VOLUME_AVAILABLE,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Volume,
)
from kubesched.core.api.meta import ObjectReference
from kubesched.core.api.nodeaffinity import term_matches
from kubesched.core.api.storage_v1 import (
    WAIT_FOR_FIRST_CONSUMER,
    StorageClass,
    TopologySelectorTerm,
)

#: Claim annotation: the claim's binding went through the initial setup.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: PV/claim annotation: the binding was made by the controller (not pre-bound by a user).
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: Claim annotation set by the scheduler: provision the volume for this node.
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: PV annotation: the provisioner that created the volume.
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
#: Claim annotations: the provisioner expected to provision the claim.
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
#: The deprecated way to name a claim's or volume's class (takes precedence over the field).
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
#: StorageClass annotation: the class claims without one get.
ANN_DEFAULT_STORAGE_CLASS = "storageclass.kubernetes.io/is-default-class"
#: A provisioner name meaning "no dynamic provisioning".
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

#: Well-known topology labels (GA and the deprecated beta names).
ZONE_GA, ZONE_BETA = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
REGION_GA, REGION_BETA = "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
STORAGE = "storage"
FILESYSTEM = "Filesystem"


# --- a pod's PersistentVolumeClaims (core/dra has its ResourceClaims) ----------------------------


def ephemeral_pvc_name(pod: Pod, volume: Volume) -> str:
    """The claim of a generic ephemeral volume: ``<pod name>-<volume name>``."""
    return f"{pod.metadata.name}-{volume.name}"


def pvc_name(pod: Pod, volume: Volume) -> str | None:
    """The PersistentVolumeClaim a pod volume uses, or None for a volume without one."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name
    if volume.ephemeral is not None:
        return ephemeral_pvc_name(pod, volume)
    return None


def pod_pvcs(pod: Pod) -> Iterator[tuple[str, bool]]:
    """``(PVC name, is ephemeral)`` for each volume of ``pod`` that uses a PersistentVolumeClaim."""
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            yield volume.persistent_volume_claim.claim_name, False
        elif volume.ephemeral is not None:
            yield ephemeral_pvc_name(pod, volume), True


def is_pvc_of_pod(pod: Pod, claim: PersistentVolumeClaim | None, ephemeral: bool = True) -> bool:
    """True when ``claim`` is one the pod uses (by namespace and name); generic
    ephemeral volumes' claims count unless ``ephemeral`` is False."""
    if claim is None or claim.metadata.namespace != pod.metadata.namespace:
        return False
    return any(name == claim.metadata.name and (ephemeral or not is_ephemeral)
               for name, is_ephemeral in pod_pvcs(pod))


def volume_is_for_pod(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """Upstream ``ephemeral.VolumeIsForPod``: None when ``pod`` controls the
    ephemeral claim, else the error message."""
    if claim.metadata.namespace == pod.metadata.namespace:
        for ref in claim.metadata.owner_references:
            if ref.controller and ref.uid == pod.metadata.uid:
                return None
    return (f"PVC {claim.metadata.namespace}/{claim.metadata.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)")


def claim_key(namespace: str, name: str) -> str:
    """``namespace/name``: a claim's key in the informer's store."""
    return f"{namespace}/{name}"


# --- classes and binding state -------------------------------------------------------------------


def claim_class(claim: PersistentVolumeClaim) -> str:
    """The claim's storage class name ("" for none), the beta annotation first."""
    annotated = claim.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if annotated is not None:
        return annotated
    return claim.spec.storage_class_name or ""


def volume_class(volume: PersistentVolume) -> str:
    """The volume's storage class name ("" for none), the beta annotation first."""
    annotated = volume.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if annotated is not None:
        return annotated
    return volume.spec.storage_class_name


def is_delay_binding_mode(claim: PersistentVolumeClaim, get_class: Callable[[str], StorageClass | None]) -> bool:
    """True when the claim's class binds WaitForFirstConsumer (an unknown or no class: False)."""
    name = claim_class(claim)
    if not name:
        return False
    storage_class = get_class(name)
    return storage_class is not None and storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def is_claim_fully_bound(claim: PersistentVolumeClaim) -> bool:
    """Whether the claim names its volume and carries ``pv.kubernetes.io/bind-completed`` (upstream
    ``isPVCFullyBound``)."""
    return bool(claim.spec.volume_name) and ANN_BIND_COMPLETED in claim.metadata.annotations


def is_volume_bound_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The volume is pre-bound or bound to this claim (same namespace and name,
    and the same UID when the claimRef has one)."""
    ref = volume.spec.claim_ref
    if ref is None or ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def claim_reference(claim: PersistentVolumeClaim) -> ObjectReference:
    """The ``claimRef`` pointing at ``claim``."""
    meta = claim.metadata
    return ObjectReference(api_version="v1", kind="PersistentVolumeClaim", namespace=meta.namespace,
                           name=meta.name, uid=meta.uid, resource_version=meta.resource_version)


def bind_volume_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """Upstream ``GetBindVolumeToClaim``: ``volume`` with its claimRef set to
    ``claim`` and the bound-by-controller annotation when the volume was not
    pre-bound to it; and whether anything changed."""
    new = volume
    ref = volume.spec.claim_ref
    if ref is None or (ref.name, ref.namespace, ref.uid) != (claim.metadata.name, claim.metadata.namespace,
                                                             claim.metadata.uid):
        new = attrs.evolve(new, spec=attrs.evolve(new.spec, claim_ref=claim_reference(claim)))
    if not is_volume_bound_to_claim(volume, claim) and ANN_BOUND_BY_CONTROLLER not in new.metadata.annotations:
        annotations = {**new.metadata.annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        new = attrs.evolve(new, metadata=attrs.evolve(new.metadata, annotations=annotations))
    return new, new is not volume


# --- matching --------------------------------------------------------------------------------


def node_affinity_matches(volume: PersistentVolume, labels: dict[str, str]) -> bool:
    """Upstream ``CheckNodeAffinity``: the volume's required node affinity
    (terms ORed) against the node's labels; no affinity matches every node."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    return any(term_matches(term, labels, "") for term in affinity.required.node_selector_terms)


def access_modes_fit(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """Every access mode the claim asks for is one the volume offers."""
    return set(claim.spec.access_modes) <= set(volume.spec.access_modes)


def volume_mode_mismatch(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """Whether claim and volume differ in ``volumeMode`` (unset is Filesystem) (upstream
    ``CheckVolumeModeMismatches``)."""
    return (claim.spec.volume_mode or FILESYSTEM) != (volume.spec.volume_mode or FILESYSTEM)


def requested_storage(claim: PersistentVolumeClaim) -> int:
    """Bytes the claim requests (0 when it does not say)."""
    return claim.spec.resources.requests.get(STORAGE, 0)


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node: Node | None = None,
    excluded: Iterable[str] = (),
    delay_binding: bool = False,
) -> PersistentVolume | None:
    """Upstream ``FindMatchingVolume``.

    A volume pre-bound to ``claim`` is returned at once (None if ``node`` is
    given and the volume's node affinity rejects it).  Otherwise the smallest
    volume that is Available, unclaimed, of the claim's class, large enough,
    of the same volume mode, not being deleted, matching the claim's label
    selector and, in the scheduler's path (``node`` given), the node and the
    access modes.  ``excluded``: volume names already chosen for the pod's
    other claims.  ``delay_binding`` (controller path, no node): only
    pre-bound volumes may match."""
    excluded = set(excluded)
    requested = requested_storage(claim)
    wanted_class = claim_class(claim)
    selector = claim.spec.selector
    labels = node.metadata.labels if node is not None else None
    smallest: PersistentVolume | None = None
    smallest_size = 0
    for volume in volumes:
        if volume.metadata.name in excluded:
            continue
        bound_here = is_volume_bound_to_claim(volume, claim)
        if volume.spec.claim_ref is not None and not bound_here:
            continue
        size = volume.spec.capacity.get(STORAGE, 0)
        if size < requested or volume_mode_mismatch(claim, volume):
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        affinity_ok = labels is None or node_affinity_matches(volume, labels)
        if bound_here:
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if volume.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(volume.metadata.labels):
            continue
        if volume_class(volume) != wanted_class or not affinity_ok:
            continue
        if node is not None and not access_modes_fit(claim, volume):
            continue
        if smallest is None or size < smallest_size:
            smallest, smallest_size = volume, size
    return smallest


def topology_terms_match(terms: Iterable[TopologySelectorTerm], labels: dict[str, str]) -> bool:
    """Upstream ``MatchTopologySelectorTerms``: no terms match everything;
    otherwise some term whose every requirement's key has one of its values."""
    terms = tuple(terms)
    if not terms:
        return True
    return any(
        all(labels.get(req.key) in req.values for req in term.match_label_expressions)
        for term in terms
    )


def zones_of_label(value: str) -> set[str]:
    """Upstream ``LabelZonesToSet``: a zone label may list zones separated by ``__``."""
    return {zone.strip() for zone in value.split("__") if zone.strip()}


def default_storage_class(classes: Iterable[StorageClass]) -> StorageClass | None:
    """The default class (annotation is-default-class "true"); with several,
    the newest, then the first by name, as upstream's admission plugin."""
    defaults = [c for c in classes if c.metadata.annotations.get(ANN_DEFAULT_STORAGE_CLASS) == "true"]
    if not defaults:
        return None
    return sorted(defaults, key=lambda c: (-(c.metadata.creation_timestamp or 0), c.metadata.name))[0]
