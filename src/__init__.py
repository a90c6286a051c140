"""kubesched: the Kubernetes scheduling framework in Python.

This package's top level is the plugin API: everything an out-of-tree plugin
needs, and nothing it should not lean on.  Its tests use :mod:`kubesched.testing`
(object builders, a test configuration, the ``simulate`` fixture, GPU traces).
Anything imported from deeper modules may move without notice::

    from kubesched import MAX_NODE_SCORE, Code, Status, hookimpl

    class MyScore:
        name = "MyScore"
        def __init__(self, args, handle): ...
        @hookimpl
        def score(self, state, pod, node_info): return MAX_NODE_SCORE

announced in the entry-point group ``kubesched.plugins`` of its package
(``examples/kubesched-fgd`` is a complete one).

- extension points and what they exchange: :func:`hookimpl`, :class:`Handle`,
  :class:`CycleState`, :class:`NodeInfo`/:class:`PodInfo`, :class:`Status` and
  :class:`Code`, MIN/MAX_NODE_SCORE (0/100), PreFilter/PostFilter results,
  :class:`PreBindWait`, cluster events and queueing hints;
- what a pod asks of a node: :func:`pod_requests` and :func:`non_zero_requests`
  (milli-CPU, bytes);
- Dynamic Resource Allocation: a pod's claims (:func:`pod_claims`,
  :class:`ClaimNameError`), the device order a plugin prefers
  (:func:`prefer_devices`, keyed by :class:`DeviceID`) and the allocation
  DynamicResources planned for a node (:func:`planned_allocations`);
- API errors (:class:`ApiError`, :class:`NotFound`, :class:`Conflict`) and
  manifests (:func:`from_manifest`, :func:`to_manifest`, :class:`ManifestError`);
- GPUs as DRA devices (the trace's convention: driver :data:`GPU_DRIVER`,
  capacity :data:`GPU_COMPUTE`, attribute :data:`GPU_MODEL`; 1 GPU =
  :data:`MILLI` milli-GPU): every node's GPUs as arrays (:class:`NodeGpus`) and
  the FGD paper's fragmentation (:class:`PodShape`, :class:`TypicalPod`,
  :class:`Workload`, :func:`node_fragmentation`), with the typical pods a
  converted trace carries in ConfigMap ``TRACE_NAMESPACE/TRACE_CONFIGMAP``
  (:func:`parse_typical_pods`, :func:`typical_pods_yaml`).
"""

from .core.api import from_manifest, to_manifest
from .core.api.convert import ManifestError
from .core.cluster.client import ApiError, Conflict, NotFound
from .core.dra.allocated_devices import DeviceID
from .core.dra.claims import ClaimNameError, pod_claims
from .core.dra.manager import planned_allocations, prefer_devices
from .core.framework.cycle_state import CycleState
from .core.framework.handle import Handle
from .core.framework.hookspecs import hookimpl
from .core.framework.nodeinfo import NodeInfo, PodInfo
from .core.framework.resources import non_zero_requests, pod_requests
from .core.framework.status import Code, Status
from .core.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PostFilterResult,
    PreBindWait,
    PreFilterResult,
    QueueingHint,
)
from .core.gpu.fragmentation import NAMESPACE as TRACE_NAMESPACE
from .core.gpu.fragmentation import (
    TRACE_CONFIGMAP,
    PodShape,
    TypicalPod,
    Workload,
    node_fragmentation,
    parse_typical_pods,
    typical_pods_yaml,
)
from .core.gpu.gpus import COMPUTE as GPU_COMPUTE
from .core.gpu.gpus import DRIVER as GPU_DRIVER
from .core.gpu.gpus import MILLI, NodeGpus
from .core.gpu.gpus import MODEL as GPU_MODEL

__version__ = "0.1.0"

__all__ = [
    # extension points
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "Handle",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NodeInfo",
    "PodInfo",
    "PostFilterResult",
    "PreBindWait",
    "PreFilterResult",
    "QueueingHint",
    "Status",
    "hookimpl",
    # resources
    "non_zero_requests",
    "pod_requests",
    # Dynamic Resource Allocation
    "ClaimNameError",
    "DeviceID",
    "planned_allocations",
    "pod_claims",
    "prefer_devices",
    # API errors and manifests
    "ApiError",
    "Conflict",
    "ManifestError",
    "NotFound",
    "from_manifest",
    "to_manifest",
    # GPUs
    "GPU_COMPUTE",
    "GPU_DRIVER",
    "GPU_MODEL",
    "MILLI",
    "NodeGpus",
    "PodShape",
    "TRACE_CONFIGMAP",
    "TRACE_NAMESPACE",
    "TypicalPod",
    "Workload",
    "node_fragmentation",
    "parse_typical_pods",
    "typical_pods_yaml",
]
