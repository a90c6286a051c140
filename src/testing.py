"""Builders for tests and plugin authors: nodes and pods in one line each.

    node("n1", cpu="4", memory="8Gi", labels={"zone": "a"}, taints=[("gpu", "true", "NoSchedule")])
    pod("web", cpu="500m", memory="1Gi", priority=10, node_selector={"zone": "a"})

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
