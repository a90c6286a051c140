"""core/v1: Pod, Node, Namespace, PersistentVolume(Claim), Event and their parts (pod volumes included).

Only the fields the scheduler reads are typed; every other manifest key is kept
in ``extra`` and written back unchanged.  ResourceLists are integers in
scheduler units (milli-CPU for ``cpu``, bytes for memory and storage).
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from .convert import ManifestError
from .meta import LabelSelector, ObjectMeta, ObjectReference


def _quantities():
    return field(factory=dict, metadata={"kind": "quantity"})


def _time():
    return field(default=None, metadata={"kind": "time"})


def _extra():
    return field(factory=dict, eq=False)


# --- resource names ----------------------------------------------------------------------


def is_extended_resource(name: str) -> bool:
    """A resource outside the ``kubernetes.io/`` namespace with a domain prefix
    (upstream ``IsExtendedResourceName``)."""
    return (
        "/" in name
        and not name.startswith("requests.")
        and not name.split("/", 1)[0].endswith("kubernetes.io")
    )


# --- taints, tolerations, node selection ------------------------------------------------

TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


@frozen
class Taint:
    """A node taint; ``effect`` is NoSchedule, PreferNoSchedule or NoExecute."""

    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: float | None = _time()

    def __attrs_post_init__(self):
        if self.effect not in TAINT_EFFECTS:
            raise ManifestError("effect", f"unsupported taint effect {self.effect!r} (NoSchedule, PreferNoSchedule, NoExecute)")


@frozen
class Toleration:
    """A pod toleration.  ``operator`` Equal (default) or Exists; an empty
    ``effect`` matches every effect; ``toleration_seconds`` bounds NoExecute."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``Toleration.ToleratesTaint``: effect, key and value match."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False


@frozen
class NodeSelectorRequirement:
    """``key operator values``; operators In, NotIn, Exists, DoesNotExist, Gt, Lt."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


@frozen
class NodeSelectorTerm:
    """Requirements ANDed together; ``match_fields`` only supports metadata.name."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@frozen
class NodeSelector:
    """Terms ORed together."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


@frozen
class PreferredSchedulingTerm:
    """core/v1 PreferredSchedulingTerm: ``weight`` (1-100) added to a node's NodeAffinity score where ``preference``
    matches."""

    weight: int = 0
    preference: NodeSelectorTerm = NodeSelectorTerm()


@frozen
class NodeAffinity:
    """core/v1 NodeAffinity: required terms (ORed; a node must match one) and weighted preferred terms."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


@frozen
class PodAffinityTerm:
    """One pod (anti-)affinity term: the pods matching ``label_selector`` in the
    namespaces chosen by ``namespaces`` and ``namespace_selector`` (neither: the
    pod's own namespace; an empty ``namespace_selector``: every namespace), in
    the topology domain ``topology_key``.  ``match_label_keys`` /
    ``mismatch_label_keys`` name incoming-pod labels whose values the selector
    must (not) match; the embedded API server merges them into
    ``label_selector`` when the pod is created, as kube-apiserver does."""

    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()

    def __attrs_post_init__(self):
        if not self.topology_key:
            raise ManifestError("topologyKey", "Required value: can not be empty")
        overlap = set(self.match_label_keys) & set(self.mismatch_label_keys)
        if overlap:
            raise ManifestError("matchLabelKeys", f"Invalid value: {sorted(overlap)[0]!r}: exists in both "
                                                  "matchLabelKeys and mismatchLabelKeys")
        if (self.match_label_keys or self.mismatch_label_keys) and self.label_selector is None:
            raise ManifestError("labelSelector", "Required value: matchLabelKeys and mismatchLabelKeys need "
                                                 "a labelSelector")


@frozen
class WeightedPodAffinityTerm:
    """A preferred term: ``weight`` 1-100 added to a node's score where the term holds."""

    weight: int = 0
    pod_affinity_term: PodAffinityTerm | None = None

    def __attrs_post_init__(self):
        if self.pod_affinity_term is None:
            raise ManifestError("podAffinityTerm", "Required value")
        if not 1 <= self.weight <= 100:
            raise ManifestError("weight", f"Invalid value: {self.weight}: must be in the range 1-100")


@frozen
class PodAffinity:
    """Pod affinity (or, as :class:`PodAntiAffinity`, anti-affinity) terms."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


@frozen
class PodAntiAffinity:
    """core/v1 PodAntiAffinity: required terms (all must hold) and weighted preferred terms, as :class:`PodAffinity`."""

    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


@frozen
class Affinity:
    """A pod's node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None
    extra: dict[str, Any] = _extra()


# --- topology spread -----------------------------------------------------------------------

WHEN_UNSATISFIABLE = frozenset({"DoNotSchedule", "ScheduleAnyway"})
NODE_INCLUSION_POLICIES = frozenset({"Honor", "Ignore"})


@frozen
class TopologySpreadConstraint:
    """``spec.topologySpreadConstraints[]``: pods matching ``label_selector`` (in the
    pod's namespace) spread over the domains of ``topology_key`` with at most
    ``max_skew`` difference.  ``min_domains`` (DoNotSchedule only): fewer
    eligible domains than this count the global minimum as 0.
    ``node_affinity_policy`` (default Honor) / ``node_taints_policy`` (default
    Ignore): whether nodes the pod's node affinity / untolerated taints exclude
    count as domains.  ``match_label_keys``: incoming-pod label keys whose
    values are added to the selector.  Validated as the API server does."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()

    def __attrs_post_init__(self):
        if self.max_skew <= 0:
            raise ManifestError("maxSkew", f"Invalid value: {self.max_skew}: must be greater than zero")
        if not self.topology_key:
            raise ManifestError("topologyKey", "Required value: can not be empty")
        if self.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            raise ManifestError("whenUnsatisfiable", f"Unsupported value: {self.when_unsatisfiable!r}: supported "
                                                     "values: \"DoNotSchedule\", \"ScheduleAnyway\"")
        if self.min_domains is not None:
            if self.min_domains <= 0:
                raise ManifestError("minDomains", f"Invalid value: {self.min_domains}: must be greater than zero")
            if self.when_unsatisfiable != "DoNotSchedule":
                raise ManifestError("minDomains", f"Invalid value: {self.min_domains}: can only use minDomains "
                                                  "if whenUnsatisfiable=DoNotSchedule")
        for name, value in (("nodeAffinityPolicy", self.node_affinity_policy),
                            ("nodeTaintsPolicy", self.node_taints_policy)):
            if value is not None and value not in NODE_INCLUSION_POLICIES:
                raise ManifestError(name, f"Unsupported value: {value!r}: supported values: \"Honor\", \"Ignore\"")
        if self.match_label_keys and self.label_selector is not None:
            selected = set(self.label_selector.match_labels) | {r.key for r in self.label_selector.match_expressions}
            for key in self.match_label_keys:
                if key in selected:
                    raise ManifestError("matchLabelKeys", f"Invalid value: {key!r}: exists in both matchLabelKeys "
                                                          "and labelSelector")


# --- pods ----------------------------------------------------------------------------------


@frozen
class ResourceRequirements:
    """core/v1 ResourceRequirements: ``requests`` and ``limits`` as integers (milli-CPU for cpu, bytes for memory
    and storage, counts otherwise); ``claims`` and the rest in ``extra``."""

    requests: dict[str, int] = _quantities()
    limits: dict[str, int] = _quantities()
    extra: dict[str, Any] = _extra()


@frozen
class ContainerPort:
    """core/v1 ContainerPort: a non-zero ``host_port`` (with ``protocol`` and ``host_ip``) is what NodePorts checks."""

    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = field(default="", metadata={"key": "hostIP"})
    name: str = ""


@frozen
class Container:
    """A container; ``restart_policy: Always`` on an init container makes it a sidecar."""

    name: str = ""
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PodSchedulingGate:
    """core/v1 PodSchedulingGate: while a pod has any, it is not scheduled (SchedulingGates' PreEnqueue)."""

    name: str = ""


# --- volume sources (shared by pod volumes and PersistentVolumes) ---------------------------


@frozen
class AWSElasticBlockStoreVolumeSource:
    """core/v1 AWSElasticBlockStoreVolumeSource: an in-tree EBS volume by ``volume_id``."""

    volume_id: str = field(default="", metadata={"key": "volumeID"})
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@frozen
class GCEPersistentDiskVolumeSource:
    """core/v1 GCEPersistentDiskVolumeSource: an in-tree GCE PD by ``pd_name``."""

    pd_name: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


@frozen
class AzureDiskVolumeSource:
    """core/v1 AzureDiskVolumeSource: an in-tree Azure disk by ``disk_name`` / ``disk_uri``."""

    disk_name: str = ""
    disk_uri: str = field(default="", metadata={"key": "diskURI"})
    extra: dict[str, Any] = _extra()


@frozen
class CinderVolumeSource:
    """core/v1 CinderVolumeSource: an in-tree Cinder volume by ``volume_id``."""

    volume_id: str = field(default="", metadata={"key": "volumeID"})
    extra: dict[str, Any] = _extra()


@frozen
class ISCSIVolumeSource:
    """core/v1 ISCSIVolumeSource: an iSCSI disk, identified by ``iqn`` for VolumeRestrictions."""

    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False
    extra: dict[str, Any] = _extra()


@frozen
class RBDVolumeSource:
    """Ceph RBD image; ``pool`` defaults to "rbd" as the API server does."""

    monitors: tuple[str, ...] = ()
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False
    extra: dict[str, Any] = _extra()


@frozen
class PersistentVolumeClaimVolumeSource:
    """core/v1 PersistentVolumeClaimVolumeSource: the pod's claim ``claim_name`` in its own namespace."""

    claim_name: str = ""
    read_only: bool = False


@frozen
class PersistentVolumeClaimTemplate:
    """A generic ephemeral volume's claim: the PVC the ephemeral volume
    controller creates as ``<pod name>-<volume name>``, owned by the pod."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeClaimSpec = field(factory=lambda: PersistentVolumeClaimSpec())


@frozen
class EphemeralVolumeSource:
    """core/v1 EphemeralVolumeSource: a generic ephemeral volume, from ``volume_claim_template``."""

    volume_claim_template: PersistentVolumeClaimTemplate | None = None


@frozen
class Volume:
    """A pod volume.  The sources the scheduler reads are typed (claims,
    generic ephemeral volumes, the in-tree disks VolumeRestrictions and
    NodeVolumeLimits look at); every other source stays in ``extra``."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PodResourceClaim:
    """``spec.resourceClaims[]``: a claim the pod uses, by ``name`` in the pod;
    exactly one of ``resource_claim_name`` (an existing ResourceClaim) and
    ``resource_claim_template_name`` (a claim generated per pod) is set."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@frozen
class PodResourceClaimStatus:
    """``status.resourceClaimStatuses[]``: the ResourceClaim generated for the
    pod claim ``name`` (None: no claim was needed)."""

    name: str = ""
    resource_claim_name: str | None = None


@frozen
class PodSchedulingGroup:
    """``spec.schedulingGroup`` (GenericWorkload): the runtime group the pod
    belongs to.  A union with one member today: ``pod_group_name``, a PodGroup
    in the pod's namespace (which may not exist yet).  Immutable."""

    pod_group_name: str | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PodSpec:
    """core/v1 PodSpec: the fields the scheduler reads (resources in scheduler units), the rest in ``extra``.
    Raises ManifestError for two topology spread constraints with the same topologyKey and whenUnsatisfiable, as
    the API server's validation."""

    #: decoded once per distinct manifest, the object shared: a workload's pods repeat one spec (convert.py)
    SHARED: ClassVar[bool] = True

    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = field(factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: dict[str, int] = _quantities()
    scheduling_gates: tuple[PodSchedulingGate, ...] = ()
    volumes: tuple[Volume, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    scheduling_group: PodSchedulingGroup | None = None
    #: pod-level ``requests``/``limits`` (KEP-2837, PodLevelResources): cpu, memory and hugepages-* only
    resources: ResourceRequirements | None = None
    extra: dict[str, Any] = _extra()

    def __attrs_post_init__(self):
        if not self.topology_spread_constraints:  # every evolve of a spec runs this
            return
        seen = set()
        for index, constraint in enumerate(self.topology_spread_constraints):
            pair = (constraint.topology_key, constraint.when_unsatisfiable)
            if pair in seen:
                raise ManifestError(f"topologySpreadConstraints[{index}]",
                                    f"Duplicate value: {{topologyKey: {pair[0]}, whenUnsatisfiable: {pair[1]}}}")
            seen.add(pair)


@frozen
class PodCondition:
    """core/v1 PodCondition (``PodScheduled``, ``DisruptionTarget``, ...); times are seconds since the epoch."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_probe_time: float | None = _time()
    last_transition_time: float | None = _time()


@frozen
class ContainerExtendedResourceRequest:
    """Which request of the pod's extended-resource claim serves ``resource_name`` of container ``container_name``."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


@frozen
class PodExtendedResourceClaimStatus:
    """``status.extendedResourceClaimStatus`` (DRAExtendedResource): the claim the
    scheduler created for the pod's device-backed extended resources."""

    request_mappings: tuple[ContainerExtendedResourceRequest, ...] = ()
    resource_claim_name: str = ""


@frozen
class ContainerStatus:
    """core/v1 ContainerStatus, the parts in-place resize (KEP-1287) writes: ``allocated_resources`` (what the
    kubelet admitted, scheduler units) and ``resources`` (what the runtime applied); the rest in ``extra``."""

    name: str = ""
    allocated_resources: dict[str, int] = _quantities()
    resources: ResourceRequirements | None = None
    extra: dict[str, Any] = _extra()


#: Pod condition types of an in-place resize (upstream ``v1.PodResizePending`` / ``v1.PodResizeInProgress``).
POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS = "PodResizePending", "PodResizeInProgress"
#: ``PodResizePending`` reasons: the node can never hold the resize / cannot hold it now.
RESIZE_INFEASIBLE, RESIZE_DEFERRED = "Infeasible", "Deferred"


@frozen
class PodStatus:
    """core/v1 PodStatus: phase, conditions, ``nominatedNodeName``, the DRA claim statuses and what in-place
    resize reports (container statuses; pod-level ``allocatedResources`` and ``resources``, scheduler units);
    times are seconds since the epoch."""

    #: decoded once per distinct manifest, the object shared: the kubelet writes many pods the same status
    SHARED: ClassVar[bool] = True

    phase: str = ""
    conditions: tuple[PodCondition, ...] = ()
    nominated_node_name: str = ""
    start_time: float | None = _time()
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = ()
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None
    container_statuses: tuple[ContainerStatus, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    allocated_resources: dict[str, int] = _quantities()
    resources: ResourceRequirements | None = None
    extra: dict[str, Any] = _extra()


#: kubesched's annotation: how long the simulated kubelet runs the pod before it Succeeds (a Go duration, ``10m``)
RUN_DURATION_ANNOTATION = "kubesched.io/run-duration"


@frozen
class Pod:
    """core/v1 Pod."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def terminal(self) -> bool:
        """Phase Succeeded or Failed: its containers will not run again."""
        return self.status.phase in ("Succeeded", "Failed")


# --- nodes ---------------------------------------------------------------------------------


@frozen
class NodeSpec:
    """core/v1 NodeSpec: ``unschedulable`` and ``taints``; the rest in ``extra``."""

    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class NodeCondition:
    """core/v1 NodeCondition (``Ready``, ...); times are seconds since the epoch."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_heartbeat_time: float | None = _time()
    last_transition_time: float | None = _time()


@frozen
class ContainerImage:
    """core/v1 ContainerImage: an image a node holds, by its ``names`` and ``size_bytes`` (bytes)."""

    names: tuple[str, ...] = ()
    size_bytes: int = 0


@frozen
class NodeStatus:
    """core/v1 NodeStatus: ``capacity`` and ``allocatable`` in scheduler units (milli-CPU, bytes, counts),
    conditions and images."""

    capacity: dict[str, int] = _quantities()
    allocatable: dict[str, int] = _quantities()
    conditions: tuple[NodeCondition, ...] = ()
    images: tuple[ContainerImage, ...] = ()
    #: the features the kubelet declares (KEP-5328, NodeDeclaredFeatures), sorted names
    declared_features: tuple[str, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class Node:
    """core/v1 Node.  :attr:`allocatable` falls back to capacity, as the API server defaults it."""

    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()

    @property
    def key(self) -> str:
        return self.metadata.name

    @property
    def allocatable(self) -> dict[str, int]:
        return self.status.allocatable or self.status.capacity


#: The namespaces every cluster has from the start (kube-apiserver creates them).
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


@frozen
class Namespace:
    """core/v1 Namespace (cluster-scoped): its labels are what namespaceSelectors match."""

    metadata: ObjectMeta = ObjectMeta()
    extra: dict[str, Any] = _extra()


@frozen
class ConfigMap:
    """Configuration data for plugins and tools (``data``: key -> text)."""

    metadata: ObjectMeta = ObjectMeta()
    data: dict[str, str] = field(factory=dict)
    extra: dict[str, Any] = _extra()


# --- storage -------------------------------------------------------------------------------


@frozen
class VolumeNodeAffinity:
    """core/v1 VolumeNodeAffinity: the nodes a PersistentVolume can be used from (``required`` terms ORed)."""

    required: NodeSelector | None = None


@frozen
class CSIPersistentVolumeSource:
    """core/v1 CSIPersistentVolumeSource: a PersistentVolume of CSI ``driver``, identified by ``volume_handle``."""

    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = field(factory=dict)
    extra: dict[str, Any] = _extra()


#: PersistentVolume phases and PersistentVolumeClaim phases, as upstream.
VOLUME_AVAILABLE, VOLUME_BOUND, VOLUME_RELEASED, VOLUME_FAILED = "Available", "Bound", "Released", "Failed"
CLAIM_PENDING, CLAIM_BOUND, CLAIM_LOST = "Pending", "Bound", "Lost"


@frozen
class PersistentVolumeSpec:
    """``volume_mode`` "" means Filesystem (the API default); the volume source
    is one of ``csi`` or the typed in-tree disks (others stay in ``extra``)."""

    capacity: dict[str, int] = _quantities()
    access_modes: tuple[str, ...] = ()
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    volume_mode: str = ""
    csi: CSIPersistentVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    azure_disk: AzureDiskVolumeSource | None = None
    cinder: CinderVolumeSource | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PersistentVolumeStatus:
    """``phase``: Pending, Available, Bound, Released or Failed."""

    phase: str = ""
    message: str = ""
    extra: dict[str, Any] = _extra()


@frozen
class PersistentVolume:
    """core/v1 PersistentVolume (cluster-scoped)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()


@frozen
class VolumeResourceRequirements:
    """core/v1 VolumeResourceRequirements: a claim's ``requests``/``limits`` (``storage`` in bytes)."""

    requests: dict[str, int] = _quantities()
    limits: dict[str, int] = _quantities()


@frozen
class PersistentVolumeClaimSpec:
    """``storage_class_name`` None means "not set" (the default class applies);
    "" means explicitly no class.  ``resources.requests["storage"]`` in bytes."""

    access_modes: tuple[str, ...] = ()
    resources: VolumeResourceRequirements = VolumeResourceRequirements()
    storage_class_name: str | None = None
    selector: LabelSelector | None = None
    volume_name: str = ""
    volume_mode: str = ""
    extra: dict[str, Any] = _extra()


@frozen
class PersistentVolumeClaimStatus:
    """``phase``: Pending, Bound or Lost; ``capacity`` and ``access_modes``
    are the bound volume's."""

    phase: str = ""
    capacity: dict[str, int] = _quantities()
    access_modes: tuple[str, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class PersistentVolumeClaim:
    """core/v1 PersistentVolumeClaim."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeClaimSpec = PersistentVolumeClaimSpec()
    status: PersistentVolumeClaimStatus = PersistentVolumeClaimStatus()


# --- events --------------------------------------------------------------------------------


@frozen
class EventSource:
    """core/v1 EventSource: the ``component`` (and ``host``) that reported an Event."""

    component: str = ""
    host: str = ""


@frozen
class Event:
    """core/v1 Event (``Scheduled``, ``FailedScheduling``, ``Preempted`` ...)."""

    metadata: ObjectMeta = ObjectMeta()
    involved_object: ObjectReference = ObjectReference()
    reason: str = ""
    message: str = ""
    type: str = "Normal"
    count: int = 1
    first_timestamp: float | None = _time()
    last_timestamp: float | None = _time()
    source: EventSource = EventSource()
    reporting_component: str = ""
    action: str = ""


# --- workload selectors (Service, ReplicationController) ---------------------------------------


@frozen
class ServiceSpec:
    """Only ``selector`` (label map) is read: PodTopologySpread's system default
    constraints spread the pods a Service selects."""

    selector: dict[str, str] = field(factory=dict)
    extra: dict[str, Any] = _extra()


@frozen
class Service:
    """core/v1 Service: read for its ``spec.selector`` (PodTopologySpread's default constraints); the rest kept as
    given."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ServiceSpec = ServiceSpec()
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = _extra()


@frozen
class ReplicationControllerSpec:
    """``selector`` (label map; empty: the template's labels, as the API server defaults it)."""

    selector: dict[str, str] = field(factory=dict)
    replicas: int | None = None
    extra: dict[str, Any] = _extra()


@frozen
class ReplicationController:
    """core/v1 ReplicationController: read for its ``spec.selector`` (PodTopologySpread's default constraints); the
    rest kept as given."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicationControllerSpec = ReplicationControllerSpec()
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = _extra()
