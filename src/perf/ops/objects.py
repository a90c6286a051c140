"""Objects of any kind kubesched models: createAny, updateAny."""

from __future__ import annotations

from typing import Any

import attrs

from ...core.api import resource_of
from ...core.api.convert import unstructure
from ...core.api.core_v1 import (
    POD_RESIZE_IN_PROGRESS,
    POD_RESIZE_PENDING,
    RESIZE_DEFERRED,
    RESIZE_INFEASIBLE,
    ContainerStatus,
    Node,
    Pod,
    PodCondition,
    ResourceRequirements,
)
from ...core.api.resource_helpers import pod_requests
from ...core.cluster.client import ApiError
from ..errors import PerfConfigError, Unsupported, WorkloadFailed
from .base import PerfOp
from .checks import check_kind, check_pod_group
from .sources import ObjectSource, require_template_path

#: The subresources kubesched honours in an ``updateAny`` op (others make the workload unsupported).
UPDATE_SUBRESOURCES = ("resize",)

#: What the API server lets a pod Update change (the resize subresource changes container resources).
POD_UPDATE_FORBIDDEN = ("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                        "`spec.initContainers[*].image`, `spec.tolerations` (only additions to existing "
                        "tolerations), `spec.schedulingGates` (only removals)")


def updated_object(current: Any, template: Any, subresources: tuple[str, ...] = ()) -> Any:
    """What the API server stores for an Update of ``current`` with ``template``
    (upstream's update strategies): labels and annotations are the template's,
    the spec is the template's, and the status stays (it changes only through
    the status subresource).  A Pod keeps its spec but for container images,
    added tolerations and removed scheduling gates; with the ``resize``
    subresource only its containers' resources change.  Raises ValueError
    with the API server's message for a pod change it forbids."""
    if "resize" in subresources and not isinstance(current, Pod):
        raise ValueError(f"the resize subresource is a Pod's, not a {type(current).__name__}'s")
    if not isinstance(current, Pod):
        meta = attrs.evolve(current.metadata, labels=dict(template.metadata.labels),
                            annotations=dict(template.metadata.annotations))
        if "spec" in attrs.fields_dict(type(current)):
            return attrs.evolve(current, metadata=meta, spec=template.spec)
        return attrs.evolve(template, metadata=meta)
    old, new = current.spec, template.spec
    if [c.name for c in new.containers] != [c.name for c in old.containers] \
            or [c.name for c in new.init_containers] != [c.name for c in old.init_containers]:
        raise ValueError(POD_UPDATE_FORBIDDEN)
    if "resize" in subresources:
        resized = tuple(attrs.evolve(c, resources=n.resources) for c, n in zip(old.containers, new.containers))
        return attrs.evolve(current, spec=attrs.evolve(old, containers=resized))
    same = (new.node_selector == old.node_selector and new.affinity == old.affinity
            and new.topology_spread_constraints == old.topology_spread_constraints and new.volumes == old.volumes
            and new.resource_claims == old.resource_claims
            and all(n.resources == c.resources for c, n in zip(old.containers + old.init_containers,
                                                                new.containers + new.init_containers))
            and new.node_name in ("", old.node_name)
            and set(old.tolerations) <= set(new.tolerations)
            and set(new.scheduling_gates) <= set(old.scheduling_gates))
    if not same:
        raise ValueError(POD_UPDATE_FORBIDDEN)
    spec = attrs.evolve(
        old,
        containers=tuple(attrs.evolve(c, image=n.image) for c, n in zip(old.containers, new.containers)),
        init_containers=tuple(attrs.evolve(c, image=n.image) for c, n in zip(old.init_containers,
                                                                             new.init_containers)),
        tolerations=new.tolerations, scheduling_gates=new.scheduling_gates)
    meta = attrs.evolve(current.metadata, labels=dict(template.metadata.labels),
                        annotations=dict(template.metadata.annotations))
    return attrs.evolve(current, metadata=meta, spec=spec)


class CreateAny(PerfOp):
    """``count`` (default 1) objects of any kind kubesched models from
    ``templatePath`` (expanded with ``.Index``, ``.Count`` and
    ``templateParams``), in ``namespace`` (created and registered when
    needed) for a namespaced kind; a namespace for a cluster-scoped kind, or
    none for a namespaced one, fails the workload as upstream's op does."""

    FIELDS = ("namespace", "templatePath", "count", "countParam", "templateParams")
    DEFAULT_COUNT = 1

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a missing ``templatePath``."""
        require_template_path(fields, where)

    def source(self) -> ObjectSource:
        """The template at ``templatePath``, of any kind, expanded with ``templateParams``."""
        return ObjectSource(self.executor.path(self.fields["templatePath"]), None, self.fields.get("templateParams"))

    def check(self) -> None:
        """Unsupported for a kind (or apiVersion) kubesched does not model, and for a PodGroup constrained to a
        topology domain without TopologyPlacement."""
        source = self.source()
        count = max(self.fields["count"], 1)
        doc = check_kind("createAny", source.document(0, count), source.where)
        if doc.get("kind") == "PodGroup":
            check_pod_group(self.executor, "createAny", source.object(0, count))

    def run(self) -> None:
        executor = self.executor
        count = self.fields["count"]
        source = self.source()
        namespace = self.fields.get("namespace") or ""
        for index in range(count):
            obj = source.object(index, count)
            resource = resource_of(obj)
            if namespace:
                if not resource.namespaced:
                    raise WorkloadFailed(f"namespace {namespace!r} set for {source.where}, but {resource.kind} "
                                         "is cluster-scoped")
                executor.ensure_namespace(namespace)
                obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=namespace))
            elif resource.namespaced:
                raise WorkloadFailed(f"namespace not set for {source.where}, but {resource.kind} is namespaced")
            try:
                executor.cluster.create(obj)
            except ApiError as err:
                raise WorkloadFailed(f"{source.where}: creating {resource.kind}: {err}") from None


def has_status(template: Any) -> bool:
    """Whether an object read from a template carries a status (one that differs from its kind's empty status)."""
    if not attrs.has(type(template)) or "status" not in attrs.fields_dict(type(template)):
        return False
    return template.status != type(template.status)()


def kubelet_resize_status(pod: Pod, node: Node | None, others: list[Pod]) -> Any:
    """The status a kubelet writes after ``pod`` (bound to ``node``) was
    resized through pods/resize, as upstream's allocation manager decides: a
    resize beyond the node's allocatable cpu or memory is ``Infeasible``; one
    the other pods' allocated requests (``others``) leave no room for is
    ``Deferred`` (condition ``PodResizePending`` with the kubelet's message,
    the allocated resources unchanged); otherwise the new requests are
    allocated and applied at once (container statuses' ``allocatedResources``
    and ``resources``; the resize conditions cleared).  An unbound pod (no
    kubelet yet) keeps its status."""
    if node is None:
        return pod.status
    allocatable = node.allocatable
    wanted = pod_requests(pod, use_status=False)
    reason = message = ""
    for name in ("memory", "cpu"):  # the kubelet reports memory first
        if wanted.get(name, 0) > allocatable.get(name, 0):
            reason = RESIZE_INFEASIBLE
            message = (f"Node didn't have enough capacity: {name}, requested: {wanted.get(name, 0)}, "
                       f"capacity: {allocatable.get(name, 0)}")
            break
    if not reason:
        used: dict[str, int] = {}
        for other in others:
            for name, amount in pod_requests(other).items():
                used[name] = used.get(name, 0) + amount
        for name in ("cpu", "memory"):
            if wanted.get(name, 0) + used.get(name, 0) > allocatable.get(name, 0):
                reason = RESIZE_DEFERRED
                message = (f"Node didn't have enough resource: {name}, requested: {wanted.get(name, 0)}, "
                           f"used: {used.get(name, 0)}, capacity: {allocatable.get(name, 0)}")
                break
    conditions = tuple(c for c in pod.status.conditions if c.type not in (POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS))
    if reason:
        pending = PodCondition(type=POD_RESIZE_PENDING, status="True", reason=reason, message=message)
        return attrs.evolve(pod.status, conditions=conditions + (pending,))
    previous = {s.name: s for s in pod.status.container_statuses}
    statuses = tuple(attrs.evolve(previous.get(c.name, ContainerStatus(name=c.name)),
                                  allocated_resources={**c.resources.limits, **c.resources.requests},
                                  resources=ResourceRequirements(requests={**c.resources.limits,
                                                                           **c.resources.requests},
                                                                 limits=dict(c.resources.limits)))
                     for c in pod.spec.containers)
    return attrs.evolve(pod.status, conditions=conditions, container_statuses=statuses)


class UpdateAny(PerfOp):
    """``count`` updates from ``templatePath`` (the object named in it, in
    ``namespace``), ``updatePerSecond`` at a time or all at once: the spec
    (a pod only where the API server allows, :func:`updated_object`), then the
    template's status through the status subresource; ``subresources:
    [resize]`` changes only a pod's container resources, and then writes the
    status its node's kubelet would (:func:`kubelet_resize_status`)."""

    FIELDS = ("namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources")
    DEFAULT_COUNT = 1

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a missing ``templatePath`` and ``subresources`` that is not a list of names."""
        require_template_path(fields, where)
        subresources = fields.get("subresources", [])
        if not isinstance(subresources, list) or not all(isinstance(s, str) for s in subresources):
            raise PerfConfigError(f"{where}: subresources: expected a list of names")

    def check(self) -> None:
        """Unsupported for a subresource other than ``resize`` and for a kind kubesched does not model."""
        unknown = [name for name in self.fields.get("subresources") or () if name not in UPDATE_SUBRESOURCES]
        if unknown:
            raise Unsupported(f"unsupported op: updateAny with subresources {unknown} (kubesched updates "
                              f"through {', '.join(UPDATE_SUBRESOURCES)} only)")
        source = ObjectSource(self.executor.path(self.fields["templatePath"]), None)
        check_kind("updateAny", source.document(0, max(self.fields["count"], 1)), source.where)

    def run(self) -> None:
        executor = self.executor
        count = self.fields["count"]
        source = ObjectSource(executor.path(self.fields["templatePath"]), None)
        namespace = self.fields.get("namespace") or ""
        subresources = tuple(self.fields.get("subresources") or ())
        cluster = executor.cluster

        def update(index: int) -> None:
            template = source.object(index, count)
            resource = resource_of(template)
            if bool(namespace) != resource.namespaced:
                raise WorkloadFailed(f"{source.where}: {resource.kind} is "
                                     f"{'namespaced' if resource.namespaced else 'cluster-scoped'}, "
                                     f"but the op's namespace is {namespace!r}")
            name = template.metadata.name
            try:
                current = cluster.get(resource.kind, name, namespace)
                spec_updated = updated_object(current, template, subresources)
                if "resize" in subresources:  # the pods/resize subresource: containers' resources only
                    containers = [{"name": c.name, "resources": unstructure(c.resources)}
                                  for c in spec_updated.spec.containers]
                    resized = cluster.patch("Pod", name, {"spec": {"containers": containers}}, namespace,
                                            subresource="resize")
                    node = resized.spec.node_name
                    if node:
                        others = [p for p in cluster.list("Pod").items if p.spec.node_name == node
                                  and p.metadata.uid != resized.metadata.uid and not p.terminal]
                        cluster.update_status(attrs.evolve(resized, status=kubelet_resize_status(
                            resized, cluster.get("Node", node), others)))
                else:
                    cluster.update(spec_updated)
                if has_status(template):  # a template without one leaves the status (the kubelet's) alone
                    cluster.update_status(attrs.evolve(cluster.get(resource.kind, name, namespace),
                                                       status=template.status))
            except (ApiError, ValueError) as err:
                raise WorkloadFailed(f"{source.where}: updating {resource.kind} {name}: {err}") from None

        task = executor.paced("updateAny", count, self.fields.get("updatePerSecond", 0), update)
        executor.wait_for(task, f"{count} updates from {source.where}")
