"""kubesched: the Kubernetes scheduling framework in Python.

This package's top level is the plugin API: every type an extension point's
signature names and everything a plugin, in-tree or out-of-tree, needs of the
framework - kubesched's own plugins (``src/plugins/``) import the framework
from here alone, so a name missing from it is noticed.  Beside it:
:mod:`kubesched.preemption` (victims, PDB checks and eviction for a PostFilter
or PodGroupPostFilter plugin, as upstream's ``framework/preemption``),
:mod:`kubesched.gpu` (GPUs as DRA devices, the FGD paper's fragmentation) and,
for a plugin's tests, :mod:`kubesched.testing` (object builders, a test
configuration, the ``simulate`` fixture, GPU traces).  Anything imported from
deeper modules may move without notice::

    from kubesched import MAX_NODE_SCORE, CycleState, NodeInfo, Pod, hookimpl

    class MyScore:
        name = "MyScore"
        def __init__(self, args, handle): ...
        @hookimpl
        def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
            return MAX_NODE_SCORE

announced in the entry-point group ``kubesched.plugins`` of its package
(``examples/kubesched-fgd`` is a complete one).  The hooks' exact signatures
are ``kubesched.core.framework.hookspecs``'s.

- extension points and what they exchange: :func:`hookimpl`, :class:`Handle`,
  :class:`CycleState` (and the keys the framework writes into it:
  :data:`FEASIBLE_ROWS_KEY`, :data:`REMOVED_PODS_KEY`), :class:`Pod`,
  :class:`NodeInfo`/:class:`PodInfo`, the cycle's :class:`Snapshot`
  (``handle.snapshot``: NodeInfos by name, rows of its columnar :class:`NodeTable`, whose
  ``matching_pods`` keeps a :class:`PodCount` per selector or term, tagged by :func:`selector_tag` /
  :func:`term_tag`; :class:`TermIndex` finds the terms that may select a pod), a queued pod (:class:`QueuedPodInfo`, QueueSort),
  :class:`Status` and :class:`Code`, MIN/MAX_NODE_SCORE (0/100),
  PreFilter/PostFilter results, :class:`PreBindWait`;
- cluster events and queueing hints (:class:`ClusterEvent` of a resource -
  :data:`POD`, :data:`ASSIGNED_POD`, :data:`UNSCHEDULED_POD`, :data:`NODE`,
  :data:`WILDCARD` or a kind's name - and an :class:`ActionType`);
- PodGroups (workload-aware scheduling): :class:`PodGroupInfo`,
  :class:`Placement`, :class:`PlacementProgress`,
  :class:`PodGroupAssignments`, the :class:`PodGroup` object;
- what a pod asks of a node: :func:`pod_requests`, :func:`container_requests`
  and :func:`non_zero_requests` (milli-CPU, bytes), the native resources'
  names (:data:`CPU`, :data:`MEMORY`, :data:`EPHEMERAL_STORAGE`,
  :data:`PODS`, :data:`NATIVE_RESOURCES`, :data:`NON_ZERO_DEFAULTS`), its
  host ports (:func:`host_ports`, :func:`ports_conflict`) and its (anti-)affinity
  terms (:class:`AffinityTerm`, :class:`WeightedAffinityTerm`,
  :class:`AffinityTerms`);
- plugin args: an ``args_class`` is decoded strictly (an unknown field is
  refused, naming the plugin and the field) unless it sets ``STRICT = False``;
  Go durations (:func:`parse_duration`, raising :class:`ConfigError`);
- Dynamic Resource Allocation: a pod's claims (:func:`pod_claims`,
  :class:`ClaimNameError`), the device order a plugin prefers
  (:func:`prefer_devices`, keyed by :class:`DeviceID`) and the allocation
  DynamicResources planned for a node (:func:`planned_allocations`);
- API errors (:class:`ApiError`, :class:`NotFound`, :class:`Conflict`) and
  manifests (:func:`from_manifest`, :func:`to_manifest`, :class:`ManifestError`);
  :class:`Node` (``NodeInfo.node``).
"""

from .core.api import from_manifest, to_manifest
from .core.api.convert import ManifestError
from .core.api.core_v1 import Node, Pod
from .core.api.scheduling_v1beta1 import PodGroup
from .core.cluster.client import ApiError, Conflict, NotFound
from .core.dra.allocated_devices import DeviceID
from .core.dra.claims import ClaimNameError, pod_claims
from .core.dra.manager import planned_allocations, prefer_devices
from .core.framework.affinity import AffinityTerm, AffinityTerms, WeightedAffinityTerm
from .core.framework.config import ConfigError, parse_duration
from .core.framework.cycle_state import FEASIBLE_ROWS_KEY, REMOVED_PODS_KEY, CycleState, StateNotFound
from .core.framework.handle import Handle
from .core.framework.hookspecs import hookimpl, normalizes_scores_alone
from .core.framework.nodeinfo import NodeInfo, PodInfo, host_ports, ports_conflict
from .core.framework.pod_counts import PodCount, TermIndex, selector_tag, term_tag
from .core.framework.podgroups import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
from .core.framework.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NATIVE_RESOURCES,
    NON_ZERO_DEFAULTS,
    PODS,
    container_requests,
    non_zero_requests,
    pod_requests,
)
from .core.framework.signature import (
    FEATURES_SIGNER,
    IMAGE_NAMES_SIGNER,
    NODE_NAME_SIGNER,
    host_ports_fragment,
    labels_fragment,
    node_affinity_fragments,
    resources_fragment,
    tolerations_fragment,
    volumes_fragment,
)
from .core.framework.snapshot import NodeTable, Snapshot
from .core.framework.status import Code, Status
from .core.framework.types import (
    ASSIGNED_POD,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NODE,
    POD,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    PostFilterResult,
    PreBindWait,
    PreFilterResult,
    QueueingHint,
)
from .core.scheduler.queue import QueuedPodInfo

__version__ = "0.1.0"

__all__ = [
    # extension points and what they exchange
    "Code",
    "CycleState",
    "FEASIBLE_ROWS_KEY",
    "Handle",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NodeInfo",
    "NodeTable",
    "Pod",
    "PodCount",
    "PodInfo",
    "PostFilterResult",
    "PreBindWait",
    "PreFilterResult",
    "QueuedPodInfo",
    "REMOVED_PODS_KEY",
    "Snapshot",
    "StateNotFound",
    "Status",
    "TermIndex",
    "hookimpl",
    "normalizes_scores_alone",
    "selector_tag",
    "term_tag",
    # pod signatures (SignPlugin, opportunistic batching)
    "FEATURES_SIGNER",
    "IMAGE_NAMES_SIGNER",
    "NODE_NAME_SIGNER",
    "host_ports_fragment",
    "labels_fragment",
    "node_affinity_fragments",
    "resources_fragment",
    "tolerations_fragment",
    "volumes_fragment",
    # cluster events and queueing hints
    "ASSIGNED_POD",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "HintIndex",
    "NODE",
    "POD",
    "QueueingHint",
    "UNSCHEDULED_POD",
    "WILDCARD",
    # PodGroups
    "Placement",
    "PlacementProgress",
    "PodGroup",
    "PodGroupAssignments",
    "PodGroupInfo",
    # what a pod asks of a node
    "AffinityTerm",
    "AffinityTerms",
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "NATIVE_RESOURCES",
    "NON_ZERO_DEFAULTS",
    "PODS",
    "WeightedAffinityTerm",
    "container_requests",
    "host_ports",
    "non_zero_requests",
    "pod_requests",
    "ports_conflict",
    # plugin args
    "ConfigError",
    "parse_duration",
    # Dynamic Resource Allocation
    "ClaimNameError",
    "DeviceID",
    "planned_allocations",
    "pod_claims",
    "prefer_devices",
    # API errors, manifests and objects
    "ApiError",
    "Conflict",
    "ManifestError",
    "Node",
    "NotFound",
    "from_manifest",
    "to_manifest",
]
