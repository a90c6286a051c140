"""The claim kube-scheduler makes for a pod's extended resources that devices serve (KEP-5004,
DRAExtendedResource; upstream keeps it apart too, in extendeddynamicresources.go).

A container that asks for an extended resource (``example.com/gpu: 2``) which a
DeviceClass names in ``spec.extendedResourceName`` (or its implicit
``deviceclass.resource.kubernetes.io/<class>``) gets it from DRA on nodes that do
not advertise the resource in allocatable: DynamicResources allocates one claim
for all such requests of the pod (:class:`ExtendedResourceClaim`, laid out by
:func:`extended_resource_requests`) and PreBind creates it (:func:`claim_to_create`)
and records it in the pod's ``status.extendedResourceClaimStatus``
(:func:`record_in_pod`).
"""

from __future__ import annotations

from typing import Any

import attrs
from attrs import field

from kubesched import NATIVE_RESOURCES, container_requests
from kubesched.core.api.core_v1 import ContainerExtendedResourceRequest, PodExtendedResourceClaimStatus
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.api.resource_v1 import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    FINALIZER,
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubesched.core.cluster.patch import patch_status


@attrs.define
class ExtendedResourceClaim:
    """The claim kube-scheduler makes for a pod's extended resources that devices
    serve (KEP-5004): one request ``container-<c>-request-<r>`` per container and
    resource, ``backed`` the resource names and their DeviceClasses.  A node
    that advertises some of the resources in allocatable serves those the
    classic way, so the claim differs per node: :meth:`on` gives the node's
    variant and what the pod's ``status.extendedResourceClaimStatus`` will
    say.  It exists only in the cycle until PreBind creates it (``created``)."""

    pod: Any
    backed: dict[str, str]
    index: int = 0
    chosen: tuple[ResourceClaim, tuple[ContainerExtendedResourceRequest, ...]] | None = None
    created: ResourceClaim | None = None
    _variants: dict[frozenset[str], tuple[ResourceClaim, tuple[ContainerExtendedResourceRequest, ...]]] = \
        field(factory=dict)

    @property
    def claim(self) -> ResourceClaim:
        """The claim when devices serve every resource (no node advertises any)."""
        return self._variant(frozenset(self.backed))[0]

    @property
    def resources(self) -> frozenset[str]:
        return frozenset(self.backed)

    def on(self, node) -> tuple[ResourceClaim, tuple[ContainerExtendedResourceRequest, ...]] | None:
        """The claim and container mappings for ``node``: requests only for the
        resources it does not advertise; None when it advertises them all."""
        missing = frozenset(name for name in self.backed if node.allocatable.get(name, 0) <= 0)
        return self._variant(missing) if missing else None

    def _variant(self, missing: frozenset[str]) -> tuple[ResourceClaim, tuple[ContainerExtendedResourceRequest, ...]]:
        variant = self._variants.get(missing)
        if variant is None:
            pod = self.pod
            requests, mappings = extended_resource_requests(pod, {name: self.backed[name] for name in missing})
            claim = ResourceClaim(
                metadata=ObjectMeta(name=f"{pod.metadata.name}-extended-resources",
                                    namespace=pod.metadata.namespace, uid=f"{pod.metadata.uid}/extended-resources"),
                spec=ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests))))
            variant = self._variants[missing] = (claim, tuple(mappings))
        return variant


def extended_resource_claim(pod, dra) -> ExtendedResourceClaim | None:
    """The claim for the pod's requests of extended resources that a
    DeviceClass serves (``dra.device_backed``), or None.  Nodes that advertise
    a resource in allocatable serve it the classic way (Filter drops the
    claim there).  Laid out as upstream's ``createRequestsAndMappings``:
    see :func:`extended_resource_requests`."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    if not any(name not in NATIVE_RESOURCES for c in containers
               for name in (*c.resources.requests, *c.resources.limits)):
        return None  # the common case, at the cost of a glance
    backed = dra.device_backed({name for c in containers for name in container_requests(c)})
    return ExtendedResourceClaim(pod, backed) if backed else None


def claim_to_create(pod, claim: ResourceClaim) -> ResourceClaim:
    """``claim`` as PreBind creates it: named ``<pod>-extended-resources-<random>``,
    owned by the pod (controller, blocking its deletion), annotated
    ``resource.kubernetes.io/extended-resource-claim: "true"``, with the DRA finalizer."""
    meta = ObjectMeta(
        generate_name=f"{pod.metadata.name}-extended-resources-", namespace=pod.metadata.namespace,
        annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}, finalizers=(FINALIZER,),
        owner_references=(OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name,
                                         uid=pod.metadata.uid, controller=True, block_owner_deletion=True),))
    return attrs.evolve(claim, metadata=meta)


def record_in_pod(cluster, pod, mappings: tuple[ContainerExtendedResourceRequest, ...], claim_name: str) -> None:
    """Write the pod's ``status.extendedResourceClaimStatus``: the claim's name and
    which container's resource each request serves (a strategic-merge patch of
    the pod's status, as upstream's ``PatchPodStatus``).  Raises the cluster
    client's ApiError."""
    recorded = PodExtendedResourceClaimStatus(request_mappings=mappings, resource_claim_name=claim_name)
    patch_status(cluster, pod, attrs.evolve(pod.status, extended_resource_claim_status=recorded))


def extended_resource_requests(
    pod, backed: dict[str, str]
) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """The device requests and container mappings of a pod's extended-resource
    claim (``backed``: resource -> DeviceClass), as upstream lays them out: one
    request ``container-<c>-request-<r>`` per container and resource, ``c``
    counting init containers first and ``r`` the resource's place among the
    container's sorted requests; a non-sidecar init container (it runs before
    the others and ends) first reuses the devices of the long-lived containers
    after it, asks only for the rest, and such init containers share the
    largest of their requests.  Requests sorted by name."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    first_regular = len(pod.spec.init_containers)
    short_lived = [i for i in range(first_regular) if containers[i].restart_policy != "Always"]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(backed):
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            long_requests[i], found = _container_request(i, containers[i], resource, backed[resource], [])
            long_mappings += found
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            request, found = _container_request(i, containers[i], resource, backed[resource], long_requests[i:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or _count(largest) < _count(request):
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            short_mappings = [attrs.evolve(m, request_name=largest.name) if m.request_name in short_names else m
                              for m in short_mappings]
        if largest is not None:
            requests.append(largest)
        requests += [request for request in long_requests if request is not None]
        mappings += long_mappings + short_mappings
    return sorted(requests, key=lambda request: request.name), mappings


def _container_request(index: int, container, resource: str, class_name: str,
                       reusable: list[DeviceRequest | None]) -> tuple[DeviceRequest | None,
                                                                       list[ContainerExtendedResourceRequest]]:
    """The request for ``resource`` of one container (None when it asks for none,
    or when the ``reusable`` requests of later long-lived containers cover it).
    Limits stand in for missing requests, as the API server defaults them."""
    effective = container_requests(container)
    wanted = effective.get(resource, 0)
    if not wanted:
        return None, []
    mappings = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += _count(request)
        mappings.append(ContainerExtendedResourceRequest(container.name, resource, request.name))
        if covered >= wanted:
            return None, mappings
    name = f"container-{index}-request-{sorted(effective).index(resource)}"
    mappings.append(ContainerExtendedResourceRequest(container.name, resource, name))
    return DeviceRequest(name=name, exactly=ExactDeviceRequest(device_class_name=class_name,
                                                                count=wanted - covered)), mappings


def _count(request: DeviceRequest) -> int:
    return request.exactly.count if request.exactly is not None else 0
