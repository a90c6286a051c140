"""Typed Kubernetes API objects and their manifest form.

One module per API group (core_v1, scheduling_v1, storage_v1, policy_v1,
coordination_v1, ...).  :data:`RESOURCES` lists every kind kubesched reads;
:func:`from_manifest` and :func:`to_manifest` convert at the edge.
"""

from __future__ import annotations

from typing import Any, Callable

from attrs import frozen

from . import (
    apps_v1,
    batch_v1,
    coordination_v1,
    core_v1,
    policy_v1,
    resource_v1,
    scheduling_v1,
    scheduling_v1beta1,
    storage_v1,
)
from .convert import ManifestError, structure, unstructure
from .meta import ObjectMeta, namespaced_name


@frozen
class ResourceType:
    """One API resource: its kind, the apiVersion written back, its class, whether
    it is namespaced, its REST plural, and older apiVersions it is also read from
    (each with a function converting that manifest to the written version)."""

    kind: str
    api_version: str
    cls: type
    namespaced: bool
    plural: str
    older_versions: dict[str, Callable[[dict], dict]] = {}

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


RESOURCES: dict[str, ResourceType] = {}
_BY_CLASS: dict[type, ResourceType] = {}


def register(resource: ResourceType) -> None:
    """Make a kind known to manifests and clusters.  Kind names are unique."""
    RESOURCES[resource.kind] = resource
    _BY_CLASS[resource.cls] = resource


for _resource in (
    ResourceType("Namespace", "v1", core_v1.Namespace, False, "namespaces"),
    ResourceType("ConfigMap", "v1", core_v1.ConfigMap, True, "configmaps"),
    ResourceType("Node", "v1", core_v1.Node, False, "nodes"),
    ResourceType("Pod", "v1", core_v1.Pod, True, "pods"),
    ResourceType("PersistentVolume", "v1", core_v1.PersistentVolume, False, "persistentvolumes"),
    ResourceType("PersistentVolumeClaim", "v1", core_v1.PersistentVolumeClaim, True, "persistentvolumeclaims"),
    ResourceType("Event", "v1", core_v1.Event, True, "events"),
    ResourceType("Service", "v1", core_v1.Service, True, "services"),
    ResourceType("ReplicationController", "v1", core_v1.ReplicationController, True, "replicationcontrollers"),
    ResourceType("ReplicaSet", "apps/v1", apps_v1.ReplicaSet, True, "replicasets"),
    ResourceType("StatefulSet", "apps/v1", apps_v1.StatefulSet, True, "statefulsets"),
    ResourceType("Deployment", "apps/v1", apps_v1.Deployment, True, "deployments"),
    ResourceType("DaemonSet", "apps/v1", apps_v1.DaemonSet, True, "daemonsets"),
    ResourceType("Job", "batch/v1", batch_v1.Job, True, "jobs"),
    ResourceType("CronJob", "batch/v1", batch_v1.CronJob, True, "cronjobs"),
    ResourceType("PriorityClass", "scheduling.k8s.io/v1", scheduling_v1.PriorityClass, False, "priorityclasses"),
    ResourceType("StorageClass", "storage.k8s.io/v1", storage_v1.StorageClass, False, "storageclasses"),
    ResourceType("CSINode", "storage.k8s.io/v1", storage_v1.CSINode, False, "csinodes"),
    ResourceType("CSIDriver", "storage.k8s.io/v1", storage_v1.CSIDriver, False, "csidrivers"),
    ResourceType("CSIStorageCapacity", "storage.k8s.io/v1", storage_v1.CSIStorageCapacity, True,
                 "csistoragecapacities"),
    ResourceType("PodDisruptionBudget", "policy/v1", policy_v1.PodDisruptionBudget, True, "poddisruptionbudgets"),
    ResourceType("Lease", "coordination.k8s.io/v1", coordination_v1.Lease, True, "leases"),
    *(ResourceType(kind, resource_v1.API_VERSION, cls, namespaced, plural, resource_v1.UPGRADES[kind])
      for kind, cls, namespaced, plural in resource_v1.KINDS),
    *(ResourceType(kind, api_version, cls, True, plural, scheduling_v1beta1.UPGRADES.get(kind, {}))
      for kind, api_version, cls, plural in scheduling_v1beta1.KINDS),
):
    register(_resource)


def resource_of(obj_or_cls: Any) -> ResourceType:
    """The :class:`ResourceType` of an object or class.  Raises KeyError."""
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    return _BY_CLASS[cls]


def from_manifest(doc: dict) -> Any:
    """A manifest dict (camelCase, with apiVersion and kind) -> typed object.

    Raises :class:`ManifestError` naming the field for an unknown kind, an
    unsupported apiVersion, or a value that does not fit the schema.
    """
    if not isinstance(doc, dict):
        raise ManifestError("", f"expected an object, got {doc!r}")
    kind = doc.get("kind")
    api_version = doc.get("apiVersion")
    if not isinstance(kind, str):
        raise ManifestError("kind", f"expected a string, got {kind!r}")
    if not isinstance(api_version, str):
        raise ManifestError("apiVersion", f"expected a string, got {api_version!r}")
    resource = RESOURCES.get(kind)
    if resource is None:
        raise ManifestError("kind", f"unknown kind {kind!r} (known: {', '.join(sorted(RESOURCES))})")
    body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
    if api_version != resource.api_version:
        upgrade = resource.older_versions.get(api_version)
        if upgrade is None:
            raise ManifestError("apiVersion", f"{kind} is not served as {api_version!r} (use {resource.api_version!r})")
        body = upgrade(body)
    return structure(body, resource.cls)


def to_manifest(obj: Any) -> dict:
    """Typed object -> manifest dict with apiVersion and kind first."""
    resource = resource_of(obj)
    return {"apiVersion": resource.api_version, "kind": resource.kind, **unstructure(obj)}


def object_key(obj: Any) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise."""
    return namespaced_name(obj.metadata)


__all__ = [
    "ManifestError",
    "ObjectMeta",
    "RESOURCES",
    "ResourceType",
    "from_manifest",
    "object_key",
    "register",
    "resource_of",
    "to_manifest",
]
