"""What a pod asks of a node, as the scheduler counts it.

The arithmetic is the API's (:mod:`kubesched.core.api.resource_helpers`,
upstream ``k8s.io/component-helpers/resource``), re-exported here for plugins;
this module adds the resource names the scheduler treats as native and the
non-zero defaults scoring counts for a container that requests no cpu or
memory.
"""

from __future__ import annotations

from ..api.core_v1 import Pod
from ..api.resource_helpers import (  # noqa: F401 - the plugin API reads them here
    CPU,
    HUGEPAGES_PREFIX,
    MEMORY,
    container_requests,
    is_pod_resize_deferred,
    is_pod_resize_infeasible,
    is_supported_pod_level_resource,
    pod_level_requests,
    pod_limits,
    pod_requests,
)

EPHEMERAL_STORAGE, PODS = "ephemeral-storage", "pods"
#: The resources that are neither extended nor scalar (upstream ``IsNativeResource`` for these names)
NATIVE_RESOURCES = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS})

#: Scoring counts a container with no cpu/memory request as asking for this much
#: (upstream DefaultMilliCPURequest = 100m, DefaultMemoryRequest = 200Mi).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


#: What scoring counts for a container that requests no cpu or memory (upstream's non-zero requests).
NON_ZERO_DEFAULTS = {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}


def non_zero_requests(pod: Pod) -> tuple[int, int]:
    """(milli-CPU, memory bytes) with upstream's defaults for containers that
    request none: what scoring plugins count a pod as."""
    requests = pod_requests(pod, NON_ZERO_DEFAULTS)
    return requests.get(CPU, 0), requests.get(MEMORY, 0)


def pod_scaled_down(old: Pod, new: Pod) -> bool:
    """``new`` counts less of some resource than ``old`` did, or none of one it
    counted (an in-place resize: its spec, or what its status says the kubelet
    allocated or applied): upstream ``extractPodScaleDown``, the
    ``UpdatePodScaleDown`` event."""
    before, after = pod_requests(old), pod_requests(new)
    return any(name not in after or after[name] < amount for name, amount in before.items())
