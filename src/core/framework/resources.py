"""What a pod asks of a node: upstream's pod request arithmetic.

Requests are ``dict[str, int]`` in scheduler units (milli-CPU, bytes, counts).
The rules mirror ``k8s.io/component-helpers/resource.PodRequests``:
a container without a request for a resource it limits requests its limit
(API defaulting); app containers and sidecars (init containers with
``restartPolicy: Always``) add up; each regular init container needs its own
requests plus the sidecars started before it, and the pod needs the larger of
that and the running total; pod overhead is added last.
"""

from __future__ import annotations

from ..api.core_v1 import Container, Pod

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
#: The resources that are neither extended nor scalar (upstream ``IsNativeResource`` for these names)
NATIVE_RESOURCES = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS})

#: Scoring counts a container with no cpu/memory request as asking for this much
#: (upstream DefaultMilliCPURequest = 100m, DefaultMemoryRequest = 200Mi).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def container_requests(container: Container, non_missing: dict[str, int] | None = None) -> dict[str, int]:
    """One container's requests; limits stand in for missing requests; with
    ``non_missing`` those defaults fill resources still missing."""
    requests = container.resources.requests
    limits = container.resources.limits
    if limits:
        merged = dict(limits)
        merged.update(requests)
        requests = merged
    if non_missing:
        requests = {**non_missing, **requests}
    return requests


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def _max(total: dict[str, int], other: dict[str, int]) -> None:
    for name, amount in other.items():
        if amount > total.get(name, 0):
            total[name] = amount


def pod_requests(pod: Pod, non_missing: dict[str, int] | None = None) -> dict[str, int]:
    """Total requests of ``pod`` in scheduler units, overhead included.

    ``non_missing`` (e.g. ``{"cpu": 100, "memory": 200Mi}``) gives defaults for
    containers that request nothing of a resource, as scoring does upstream.
    """
    spec = pod.spec
    total: dict[str, int] = {}
    for container in spec.containers:
        _add(total, container_requests(container, non_missing))
    if spec.init_containers:
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for container in spec.init_containers:
            requests = container_requests(container, non_missing)
            if container.restart_policy == "Always":
                _add(total, requests)
                _add(sidecars, requests)
                needed = sidecars
            else:
                needed = dict(requests)
                _add(needed, sidecars)
            _max(init_peak, needed)
        _max(total, init_peak)
    if spec.overhead:
        _add(total, spec.overhead)
    return total


#: What scoring counts for a container that requests no cpu or memory (upstream's non-zero requests).
NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


def non_zero_requests(pod: Pod) -> tuple[int, int]:
    """(milli-CPU, memory bytes) with upstream's defaults for containers that
    request none: what scoring plugins count a pod as."""
    requests = pod_requests(pod, NON_ZERO_DEFAULTS)
    return requests.get(CPU, 0), requests.get(MEMORY, 0)
