"""Builders for tests and plugin authors: nodes and pods in one line each.

    node("n1", cpu="4", memory="8Gi", labels={"zone": "a"}, taints=[("gpu", "true", "NoSchedule")])
    pod("web", cpu="500m", memory="1Gi", priority=10, node_selector={"zone": "a"})
    pod("db", volumes=[claim_volume("data", "data-db")]); claim("data-db", "10Gi", "fast")
    persistent_volume("pv1", "20Gi", "fast", node_affinity={"kubernetes.io/hostname": ["n1"]})

Quantities are Kubernetes strings; everything else is passed through the same
manifest conversion as files, so a builder object is exactly what a manifest
with those fields would give.
"""

from __future__ import annotations

from typing import Any, Iterable

from .core.api import from_manifest


def node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    labels: dict[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
    extra_resources: dict[str, str] | None = None,
    **status: Any,
):
    """A Ready core/v1 Node with the given allocatable.  ``taints`` are (key, value, effect)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return from_manifest({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": allocatable, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True"}], **status},
    })


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    priority: int | None = None,
    node_name: str = "",
    scheduler_name: str | None = None,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict] | None = None,
    affinity: dict | None = None,
    host_ports: Iterable[int] = (),
    extra_resources: dict[str, str] | None = None,
    scheduling_gates: Iterable[str] = (),
    **spec: Any,
):
    """A core/v1 Pod with one container requesting ``cpu``/``memory`` (and
    ``extra_resources``); other keyword arguments are raw camelCase spec fields."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra_resources or {})
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10.1"}
    if requests:
        container["resources"] = {"requests": requests}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    body: dict[str, Any] = {"containers": [container], **spec}
    for key, value in (
        ("priority", priority),
        ("nodeName", node_name or None),
        ("schedulerName", scheduler_name),
        ("nodeSelector", node_selector),
        ("tolerations", tolerations),
        ("affinity", affinity),
    ):
        if value is not None:
            body[key] = value
    if scheduling_gates:
        body["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    return from_manifest({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": body,
    })


def persistent_volume(
    name: str,
    storage: str = "10Gi",
    storage_class: str = "",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    node_affinity: dict[str, list[str]] | None = None,
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    claim: tuple[str, ...] | None = None,
    reclaim_policy: str = "Retain",
    **spec: Any,
):
    """A core/v1 PersistentVolume.  ``node_affinity`` maps label keys to
    allowed values (one required term); ``claim`` is a (namespace, name) or
    (namespace, name, uid) claimRef (pre-binding, or binding); other keyword arguments are raw camelCase spec
    fields (e.g. ``csi={"driver": "d", "volumeHandle": "h"}``)."""
    body: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(access_modes),
                            "persistentVolumeReclaimPolicy": reclaim_policy, **spec}
    if storage_class:
        body["storageClassName"] = storage_class
    if node_affinity:
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": list(v)} for k, v in node_affinity.items()]}]}}
    if claim is not None:
        body["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim[0], "name": claim[1],
                            **({"uid": claim[2]} if len(claim) > 2 else {})}
    return from_manifest({"apiVersion": "v1", "kind": "PersistentVolume",
                          "metadata": {"name": name, "labels": labels or {}},
                          "spec": body, "status": {"phase": phase} if phase else {}})


def claim(
    name: str,
    storage: str = "1Gi",
    storage_class: str | None = None,
    namespace: str = "default",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    volume_name: str = "",
    annotations: dict[str, str] | None = None,
    uid: str = "",
    **spec: Any,
):
    """A core/v1 PersistentVolumeClaim (``storage_class`` None: not set, the default class applies)."""
    body: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": storage}}, **spec}
    if storage_class is not None:
        body["storageClassName"] = storage_class
    if volume_name:
        body["volumeName"] = volume_name
    return from_manifest({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {},
                                       "uid": uid},
                          "spec": body})


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    binding_mode: str = "WaitForFirstConsumer",
    allowed_topologies: dict[str, list[str]] | None = None,
    default: bool = False,
    reclaim_policy: str = "",
):
    """A storage.k8s.io/v1 StorageClass; ``allowed_topologies`` maps label keys to values (one term)."""
    body: dict[str, Any] = {"provisioner": provisioner, "volumeBindingMode": binding_mode}
    if allowed_topologies:
        body["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": k, "values": list(v)} for k, v in allowed_topologies.items()]}]
    if reclaim_policy:
        body["reclaimPolicy"] = reclaim_policy
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": name, "annotations": annotations}, **body})


def csi_node(name: str, limits: dict[str, int | None] | None = None, migrated_plugins: Iterable[str] = (),
             topology_keys: dict[str, list[str]] | None = None):
    """A storage.k8s.io/v1 CSINode for node ``name``: ``limits`` maps drivers to
    attach counts (None: no limit), ``topology_keys`` drivers to their keys."""
    drivers = {}
    for driver, count in (limits or {}).items():
        drivers[driver] = {"name": driver, "nodeID": name}
        if count is not None:
            drivers[driver]["allocatable"] = {"count": count}
    for driver, keys in (topology_keys or {}).items():
        drivers.setdefault(driver, {"name": driver, "nodeID": name})["topologyKeys"] = list(keys)
    annotations = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(migrated_plugins)} if migrated_plugins else {}
    return from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                          "metadata": {"name": name, "annotations": annotations},
                          "spec": {"drivers": list(drivers.values())}})


def claim_volume(name: str, claim_name: str) -> dict[str, Any]:
    """A pod volume (raw, for ``pod(..., volumes=[...])``) using claim ``claim_name``."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral_volume(name: str, storage: str = "1Gi", storage_class: str | None = None,
                     access_modes: Iterable[str] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """A generic ephemeral pod volume (raw): its claim is ``<pod name>-<name>``."""
    spec: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}
