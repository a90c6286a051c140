"""A real cluster's scheduling-relevant state as manifests: ``kubesched snapshot``.

:func:`take_snapshot` lists every kind the scheduler and its controllers
read (nodes, pods, volumes and storage classes, CSI objects, namespaces,
priority classes, PodDisruptionBudgets, services and the workloads whose
selectors spread pods, every resource.k8s.io kind) through a
:class:`~kubesched.core.cluster.client.ClusterClient` - the API server of a
kubeconfig - and writes one YAML file per kind that ``kubesched simulate``
loads unchanged: bound pods stay on their nodes (``spec.nodeName``),
Pending pods stay Pending, UIDs are kept so that owner references, claim
reservations and PDB counts still point at the right objects.

Never copied: Secrets and ConfigMaps (not listed at all), Events and
Leases (not state), and what a container carries that the scheduler never
reads and may hold credentials - its ``env``, ``envFrom``, ``command`` and
``args``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kubesched.core.api import RESOURCES, resource_of
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.manifests import dump_yaml
from kubesched.core.cluster.client import ClusterClient

#: Kinds that are never listed: configuration data and secrets, history, coordination.
NOT_COPIED = frozenset({"ConfigMap", "Event", "Lease"})
#: Container fields left out of pods: the scheduler does not read them and they may carry secrets.
CONTAINER_FIELDS_DROPPED = ("env", "envFrom", "command", "args")


def snapshot_kinds() -> list[str]:
    """The kinds a snapshot holds, in the order their files are written."""
    return [kind for kind in RESOURCES if kind not in NOT_COPIED]


def take_snapshot(cluster: ClusterClient, directory: Path) -> dict[str, int]:
    """Write the objects of every :func:`snapshot_kinds` kind in ``cluster``
    to ``directory`` (created; one ``<plural>.yaml`` per kind that has
    objects).  Returns kind -> objects written.  Raises ``ApiError`` when the
    API server refuses a list, ``OSError`` when a file cannot be written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for kind in snapshot_kinds():
        items = sorted(cluster.list(kind).items, key=lambda obj: (obj.metadata.namespace, obj.metadata.name))
        if not items:
            continue
        objects = [without_secrets(obj) for obj in items]
        (directory / f"{resource_of(objects[0]).plural}.yaml").write_text(dump_yaml(objects))
        written[kind] = len(objects)
    return written


def without_secrets(obj: Any) -> Any:
    """``obj`` ready to be written: a pod without its containers'
    :data:`CONTAINER_FIELDS_DROPPED`; every object without its
    resourceVersion and managed fields (the simulation's API server assigns
    its own)."""
    meta = obj.metadata
    obj = attrs.evolve(obj, metadata=attrs.evolve(
        meta, resource_version="", extra={k: v for k, v in meta.extra.items() if k != "managedFields"}))
    if isinstance(obj, Pod):
        spec = obj.spec
        obj = attrs.evolve(obj, spec=attrs.evolve(
            spec, containers=tuple(_scrubbed(c) for c in spec.containers),
            init_containers=tuple(_scrubbed(c) for c in spec.init_containers)))
    return obj


def _scrubbed(container: Any) -> Any:
    return attrs.evolve(container, extra={k: v for k, v in container.extra.items()
                                          if k not in CONTAINER_FIELDS_DROPPED})

