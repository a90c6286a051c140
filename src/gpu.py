"""GPUs as DRA devices, for GPU-aware plugins (``examples/kubesched-fgd``) and their tests.

The convention a converted trace follows: driver :data:`GPU_DRIVER`, shareable
capacity :data:`GPU_COMPUTE`, attribute :data:`GPU_MODEL`; 1 GPU = :data:`MILLI`
milli-GPU.  Every node's GPUs as arrays kept current from the DRA manager
(:class:`NodeGpus`) and the FGD paper's fragmentation (:class:`PodShape`,
:class:`TypicalPod`, :class:`Workload`, :func:`node_fragmentation`), with the
typical pods a converted trace carries in ConfigMap
``TRACE_NAMESPACE/TRACE_CONFIGMAP`` (:func:`parse_typical_pods`,
:func:`typical_pods_yaml`).  A public face over ``kubesched.core.gpu``, apart
from the plugin API (:mod:`kubesched`).
"""

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

__all__ = [
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
