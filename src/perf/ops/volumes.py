"""createPods with persistent volumes: each pod gets its own claim and PV, already bound."""

from __future__ import annotations

from typing import Any

import attrs

from ...core.api.core_v1 import (
    CLAIM_BOUND,
    VOLUME_BOUND,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    Pod,
    Volume,
)
from ...core.api.meta import ObjectReference
from ...core.cluster.memory import MemoryCluster
from ..errors import PerfConfigError
from .base import Executor
from .sources import ObjectSource


def volume_sources(executor: Executor, fields: dict[str, Any]) -> tuple[ObjectSource, ObjectSource] | None:
    """The (PV, claim) templates of a createPods op (``persistentVolumeTemplatePath``,
    ``persistentVolumeClaimTemplatePath``), or None without them."""
    pv_path = fields.get("persistentVolumeTemplatePath")
    claim_path = fields.get("persistentVolumeClaimTemplatePath")
    if claim_path is None:
        return None
    if pv_path is None:
        raise PerfConfigError("persistentVolumeClaimTemplatePath needs persistentVolumeTemplatePath")
    return (ObjectSource(executor.path(pv_path), "PersistentVolume"),
            ObjectSource(executor.path(claim_path), "PersistentVolumeClaim"))


def create_bound_volume(cluster: MemoryCluster, pod: Pod, volumes: tuple[ObjectSource, ObjectSource],
                        namespace: str, index: int) -> Pod:
    """Upstream ``CreatePodWithPersistentVolume`` (bindVolume): claim
    ``pvc-<index>`` and PV ``<namespace>-vol-<index>`` (CSI handle = its name,
    AWS volume ID ``vol-<index>``) bound to each other; returns ``pod`` using
    the claim as volume ``vol``.  Raises ``ApiError`` from the cluster."""
    pv_template, claim_template = volumes
    claim_name = f"pvc-{index}"
    pv: PersistentVolume = pv_template.object()
    pv_name = f"{namespace}-vol-{index}"
    spec = pv.spec
    if spec.csi is not None:
        spec = attrs.evolve(spec, csi=attrs.evolve(spec.csi, volume_handle=pv_name))
    elif spec.aws_elastic_block_store is not None:
        spec = attrs.evolve(spec, aws_elastic_block_store=attrs.evolve(spec.aws_elastic_block_store,
                                                                       volume_id=f"vol-{index}"))
    spec = attrs.evolve(spec, claim_ref=ObjectReference(api_version="v1", kind="PersistentVolumeClaim",
                                                        namespace=namespace, name=claim_name))
    claim: PersistentVolumeClaim = claim_template.object()
    claim = attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, name=claim_name, namespace=namespace),
                         spec=attrs.evolve(claim.spec, volume_name=pv_name),
                         status=attrs.evolve(claim.status, phase=CLAIM_BOUND))
    cluster.create(claim)
    cluster.create(attrs.evolve(pv, metadata=attrs.evolve(pv.metadata, name=pv_name), spec=spec,
                                status=attrs.evolve(pv.status, phase=VOLUME_BOUND)))
    volume = Volume(name="vol", persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim_name))
    return attrs.evolve(pod, spec=attrs.evolve(pod.spec, volumes=(volume,)))
