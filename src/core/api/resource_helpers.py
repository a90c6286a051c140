"""The API's pod resource arithmetic (upstream ``k8s.io/component-helpers/resource``).

Requests are ``dict[str, int]`` in scheduler units (milli-CPU, bytes, counts).
:func:`pod_requests` mirrors ``PodRequests``: a container without a request for
a resource it limits requests its limit (API defaulting); app containers and
sidecars (init containers with ``restartPolicy: Always``) add up; each regular
init container needs its own requests plus the sidecars started before it, and
the pod needs the larger of that and the running total; pod-level requests
(``spec.resources``, KEP-2837 PodLevelResources) replace that sum for the
resources they set; a pod resized in place (KEP-1287
InPlacePodVerticalScaling) counts what its status reports the kubelet
allocated or applied where that is more; pod overhead is added last.
The API server's validation and the scheduler both read it.
"""

from __future__ import annotations

from typing import Callable

from .core_v1 import (
    POD_RESIZE_PENDING,
    RESIZE_DEFERRED,
    RESIZE_INFEASIBLE,
    Container,
    ContainerStatus,
    Pod,
    PodStatus,
)

CPU, MEMORY = "cpu", "memory"

#: The pod-level resources PodLevelResources supports (upstream ``SupportedPodLevelResources``): cpu, memory and
#: every ``hugepages-<size>``.
POD_LEVEL_RESOURCES = frozenset({CPU, MEMORY})
HUGEPAGES_PREFIX = "hugepages-"


def is_supported_pod_level_resource(name: str) -> bool:
    """cpu, memory or a hugepages size (upstream ``IsSupportedPodLevelResource``)."""
    return name in POD_LEVEL_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


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


def _aggregate(pod: Pod, requests_of: Callable[[Container], dict[str, int] | None],
               non_missing: dict[str, int] | None) -> dict[str, int]:
    """The containers' requests summed as the sidecar KEP says: app containers and
    sidecars add up; a regular init container needs its own plus the sidecars
    started before it; the pod needs the larger of the two (upstream
    ``aggregateContainerResourcesByFn``).  ``requests_of`` gives one container's
    requests (None: nothing)."""
    spec = pod.spec
    total: dict[str, int] = {}
    for container in spec.containers:
        requests = requests_of(container) or {}
        _add(total, {**non_missing, **requests} if non_missing else requests)
    if spec.init_containers:
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for container in spec.init_containers:
            requests = requests_of(container) or {}
            if non_missing:
                requests = {**non_missing, **requests}
            if container.restart_policy == "Always":
                _add(total, requests)
                _add(sidecars, requests)
                needed = sidecars
            else:
                needed = dict(requests)
                _add(needed, sidecars)
            _max(init_peak, needed)
        _max(total, init_peak)
    return total


def pod_level_requests(pod: Pod) -> dict[str, int]:
    """The pod-level requests as the API server stores them (scheduler units):
    ``spec.resources.requests`` for the supported resources, defaulted from
    ``spec.resources.limits`` for a resource no container requests (hugepages
    always: they cannot be overcommitted); {} when the pod sets none (upstream
    ``defaultPodRequests`` + ``IsPodLevelRequestsSet``)."""
    resources = pod.spec.resources
    if resources is None:
        return {}
    requests = {name: amount for name, amount in resources.requests.items() if is_supported_pod_level_resource(name)}
    if resources.limits:
        from_containers = None
        for name, limit in resources.limits.items():
            if name in requests or not is_supported_pod_level_resource(name):
                continue
            if not name.startswith(HUGEPAGES_PREFIX):
                if from_containers is None:
                    from_containers = _aggregate(pod, container_requests, None)
                if name in from_containers:
                    requests[name] = from_containers[name]
                    continue
            requests[name] = limit
    return requests


def _statuses(pod: Pod) -> dict[str, ContainerStatus]:
    status = pod.status
    return {s.name: s for s in (*status.container_statuses, *status.init_container_statuses)}


def is_pod_resize_infeasible(pod: Pod) -> bool:
    """The pod's ``PodResizePending`` condition says ``Infeasible`` (upstream ``IsPodResizeInfeasible``)."""
    return _resize_pending_reason(pod) == RESIZE_INFEASIBLE


def is_pod_resize_deferred(pod: Pod) -> bool:
    """The pod's ``PodResizePending`` condition says ``Deferred`` (upstream ``IsPodResizeDeferred``)."""
    return _resize_pending_reason(pod) == RESIZE_DEFERRED


#: the pod condition by which a kubelet (the node's ``podPreemptionPolicy``) turns preemption for a resize off
POD_RESIZE_PREEMPTION_DISABLED = "PodResizePreemptionDisabled"


def wants_resize_preemption(pod: Pod) -> bool:
    """Whether bound ``pod`` waits for room for a deferred resize that the
    scheduler may preempt for (InPlacePodVerticalScalingSchedulerPreemption,
    KEP-5836): its resize is Deferred and no ``PodResizePreemptionDisabled=True``
    condition says otherwise; a member of a PodGroup is left out (its group is
    queued as one)."""
    if not pod.spec.node_name or pod.terminal or pod.spec.scheduling_group is not None:
        return False
    if not is_pod_resize_deferred(pod):
        return False
    return not any(c.type == POD_RESIZE_PREEMPTION_DISABLED and c.status == "True" for c in pod.status.conditions)


def _resize_pending_reason(pod: Pod) -> str | None:
    for condition in pod.status.conditions:
        if condition.type == POD_RESIZE_PENDING:
            return condition.reason
    return None


def status_counts(status: PodStatus) -> bool:
    """Whether :func:`pod_requests` may read ``status``: it reports resources (an in-place resize's container
    statuses, pod-level allocated or applied resources), so its conditions too (a resize found infeasible) count.
    Otherwise what the pod requests is its spec's alone, whatever its status says (a kubelet's Running and Ready)."""
    return bool(status.container_statuses or status.init_container_statuses or status.allocated_resources
                or status.resources is not None)


def _with_status(pod: Pod, non_missing: dict[str, int] | None, pod_level_status: bool) -> dict[str, int]:
    """The containers' requests of a pod that may have been resized in place: per
    resource the largest of what the spec asks, what the kubelet allocated and
    what the runtime applied; only the last two while the resize is infeasible
    (upstream ``AggregateContainerRequests`` with ``UseStatusResources``)."""
    infeasible = is_pod_resize_infeasible(pod)
    specified = _aggregate(pod, container_requests, non_missing)
    status = pod.status
    if pod_level_status and status.allocated_resources and status.resources is not None \
            and status.resources.requests:
        allocated, actuated = dict(status.allocated_resources), dict(status.resources.requests)
    else:
        statuses = _statuses(pod)

        def allocated_of(container: Container) -> dict[str, int] | None:
            found = statuses.get(container.name)
            if found is not None and found.allocated_resources:
                return found.allocated_resources
            return None if infeasible else container_requests(container)

        def actuated_of(container: Container) -> dict[str, int] | None:
            found = statuses.get(container.name)
            if found is not None and found.resources is not None and found.resources.requests:
                return found.resources.requests
            return allocated_of(container)

        allocated = _aggregate(pod, allocated_of, non_missing)
        actuated = _aggregate(pod, actuated_of, non_missing)
    total = {} if infeasible else specified
    _max(total, actuated)
    _max(total, allocated)
    return total


def _minus(amounts: dict[str, int], overhead: dict[str, int]) -> dict[str, int]:
    return {name: amount - overhead.get(name, 0) for name, amount in amounts.items()}


def pod_requests(pod: Pod, non_missing: dict[str, int] | None = None, *, use_status: bool = True,
                 pod_level: bool = True, pod_level_status: bool = True,
                 exclude_overhead: bool = False) -> dict[str, int]:
    """Total requests of ``pod`` in scheduler units (milli-CPU, bytes, counts),
    overhead included, as upstream's ``PodRequests``.

    ``non_missing`` (e.g. ``{"cpu": 100, "memory": 200Mi}``) gives defaults for
    containers that request nothing of a resource, as scoring does upstream.
    ``pod_level`` (PodLevelResources): a pod-level request replaces the
    containers' sum for the resources it sets.  ``use_status``
    (InPlacePodVerticalScaling): a pod resized in place counts what its
    container statuses report as allocated or applied where that is larger;
    ``pod_level_status`` (InPlacePodLevelResourcesVerticalScaling, on from
    1.36) reads the pod-level status resources where the kubelet wrote both
    (``status.allocatedResources`` and ``status.resources.requests``, overhead
    included), and for the pod-level requests too.
    """
    spec = pod.spec
    status = pod.status
    if use_status and (status.container_statuses or status.init_container_statuses
                       or (pod_level_status and (status.allocated_resources or status.resources is not None))):
        total = _with_status(pod, non_missing, pod_level_status)
    elif not spec.init_containers:  # the common pod: its containers' requests added up
        total = {}
        for container in spec.containers:
            resources = container.resources
            requests = resources.requests
            if resources.limits:
                requests = {**resources.limits, **requests}
            if non_missing:
                requests = {**non_missing, **requests}
            for name, amount in requests.items():
                total[name] = total.get(name, 0) + amount
    else:
        total = _aggregate(pod, container_requests, non_missing)
    if pod_level and spec.resources is not None:
        effective = pod_level_requests(pod)
        if effective:
            if pod_level_status and use_status and (status.allocated_resources or status.resources is not None):
                overhead = spec.overhead
                applied = _minus(status.resources.requests, overhead) if status.resources is not None else {}
                allocated = _minus(status.allocated_resources, overhead)
                effective = {} if is_pod_resize_infeasible(pod) else dict(effective)
                _max(effective, applied)
                _max(effective, allocated)
            for name, amount in effective.items():
                if is_supported_pod_level_resource(name):
                    total[name] = amount
    if spec.overhead and not exclude_overhead:
        _add(total, spec.overhead)
    return total


def pod_limits(pod: Pod, *, pod_level: bool = True, use_status: bool = False, pod_level_status: bool = True,
               exclude_overhead: bool = False) -> dict[str, int]:
    """The pod's limits in scheduler units, aggregated as requests are (app
    containers and sidecars add up, an init container's peak counts), the
    pod-level limits replacing the sum for the resources they set, and overhead
    added to every non-zero limit unless ``exclude_overhead`` (upstream
    ``PodLimits``).  ``use_status`` (upstream's ``UseStatusResources``): per
    resource the larger of the spec and what the statuses say the runtime
    applied - the pod-level status (``pod_level_status``, where the kubelet
    wrote ``status.allocatedResources`` and ``status.resources``) or else each
    container's, a container without one counting its spec - and only the
    applied limits while the resize is infeasible, as :func:`pod_requests`."""
    status = pod.status
    infeasible = use_status and is_pod_resize_infeasible(pod)
    total = _aggregate(pod, lambda container: container.resources.limits, None)
    if use_status:
        applied: dict[str, int] | None = None
        if pod_level_status and status.allocated_resources and status.resources is not None \
                and status.resources.limits:
            applied = dict(status.resources.limits)
        elif status.container_statuses or status.init_container_statuses:
            statuses = _statuses(pod)

            def applied_of(container: Container) -> dict[str, int] | None:
                found = statuses.get(container.name)
                if found is not None and found.resources is not None and found.resources.limits:
                    return found.resources.limits
                return None if infeasible else container.resources.limits

            applied = _aggregate(pod, applied_of, None)
        if applied is not None:
            total = applied if infeasible else total
            _max(total, applied)
    resources = pod.spec.resources
    if pod_level and resources is not None:
        effective = {name: amount for name, amount in resources.limits.items() if is_supported_pod_level_resource(name)}
        if effective and use_status and pod_level_status and status.resources is not None:
            effective = {} if infeasible else effective
            _max(effective, _minus(status.resources.limits, pod.spec.overhead))
        total.update(effective)
    if not exclude_overhead:
        for name, amount in pod.spec.overhead.items():
            if total.get(name):
                total[name] += amount
    return total
