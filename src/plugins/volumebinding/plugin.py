"""VolumeBinding: pods land where their persistent volumes can be (upstream plugins/volumebinding).

- PreFilter: every claim of the pod must exist (UnschedulableAndUnresolvable
  ``persistentvolumeclaim "x" not found``, or for a generic ephemeral volume
  ``waiting for ephemeral volume controller to create the persistentvolumeclaim "x"``);
  unbound claims of Immediate classes reject the pod ("pod has unbound
  immediate PersistentVolumeClaims") until the PV controller binds them.
  A pod without claims, or whose claims are all bound to PVs that accept
  every node, skips Filter.
- Filter: per node, bound PVs' node affinity, a matching PV for each
  WaitForFirstConsumer claim (smallest fit) or else provisioning there
  (provisioner, allowedTopologies, CSIStorageCapacity); reasons as upstream.
- PreScore/Score (upstream's StorageCapacityScoring gate, on in 1.37): the
  ``shape`` of the requested/capacity utilization per storage class,
  averaged; without a ``shape`` in the args, upstream's default prefers the
  node with the most free capacity (utilization 0 % scores 10, 100 % scores 0).
- Reserve: the chosen bindings are assumed in the PV and claim assume
  caches; Unreserve reverts them.
- PreBind: writes them to the API and waits (polling every second on the
  clock, up to ``bindTimeoutSeconds``) until the PV controller fully bound
  every claim.
"""

from __future__ import annotations

import math

import numpy as np
from attrs import define, field, frozen

from kubesched import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    PreBindWait,
    PreFilterResult,
    QueueingHint,
    Status,
    hookimpl,
    volumes_fragment,
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Pod
from kubesched.core.cluster.assume_cache import AssumeError
from kubesched.core.cluster.client import ApiError
from kubesched.core.plugin_helpers.shape import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    BrokenLinear,
    UtilizationShapePoint,
    validate_shape,
)
from kubesched.core.volume.claims import claim_class, is_pvc_of_pod, pod_pvcs, requested_storage
from kubesched.core.volume.csi_translation import MIGRATED_PLUGINS_ANNOTATION

from .binder import (
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    VolumeBindingError,
    capacity_limit,
)

STATE_KEY = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
#: What a PreBind wait that ran out of time reports (upstream's context deadline).
BIND_TIMEOUT_MESSAGE = "binding volumes: context deadline exceeded"
#: PreBind polls the binding every second, as upstream.
POLL_INTERVAL = 1.0


#: Upstream ``SetDefaults_VolumeBindingArgs`` with StorageCapacityScoring: the emptiest node scores highest.
DEFAULT_SHAPE = (UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
                 UtilizationShapePoint(utilization=MAX_UTILIZATION, score=0))


GATE = "StorageCapacityScoring"


@frozen
class VolumeBindingArgs:
    """Upstream ``VolumeBindingArgs``: ``bindTimeoutSeconds`` (default 600;
    how long PreBind waits for the PV controller), ``shape`` (utilization %
    -> score 0-10 points; none given: :data:`DEFAULT_SHAPE` while
    StorageCapacityScoring is on, as upstream's SetDefaults_VolumeBindingArgs).
    Raises ManifestError for a negative timeout or a malformed shape."""

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] = ()

    def __attrs_post_init__(self):
        if self.bind_timeout_seconds < 0:
            raise ManifestError("bindTimeoutSeconds", "invalid BindTimeoutSeconds, should not be a negative value")
        if self.shape:
            validate_shape(self.shape)


def scoring_shape(args: VolumeBindingArgs, features) -> tuple[UtilizationShapePoint, ...] | None:
    """The shape VolumeBinding scores with: the args' or :data:`DEFAULT_SHAPE` while StorageCapacityScoring
    is on; None (no Score) while it is off.  Raises ManifestError for a shape given with the gate off, as
    upstream's ValidateVolumeBindingArgs."""
    if features.enabled(GATE):
        return args.shape or DEFAULT_SHAPE
    if args.shape:
        raise ManifestError("shape", f"Invalid value: {list(args.shape)!r}: unsupported when {GATE} feature is "
                                     "disabled")
    return None


@define
class _State:
    """The pod's claims (PreFilter), each feasible node's PodVolumes (Filter),
    whether any node offered static bindings, and Reserve's all-bound answer.
    Shared, not copied, by clones (as upstream)."""

    claims: PodVolumeClaims | None = None
    pod_volumes_by_node: dict[str, PodVolumes] = field(factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False

    def clone(self) -> "_State":
        return self


class VolumeBinding:
    """Upstream ``VolumeBinding`` (see the module docstring).  Built from
    :class:`VolumeBindingArgs` and the handle (cluster client for PreBind
    writes, informers for the PV/claim assume caches and the listers)."""

    name = "VolumeBinding"
    args_class = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs, handle):
        self.binder = VolumeBinder(handle.cluster, handle.informers, on_loop=handle.on_loop)
        self.informers = handle.informers
        self.bind_timeout = float(args.bind_timeout_seconds)
        shape = scoring_shape(args, handle.features)
        self.shape = BrokenLinear(shape) if shape else None

    # --- PreFilter / Filter ----------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod):
        """Filter and Score read the pod's volumes (not its ConfigMaps and Secrets)."""
        return [volumes_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        binder = self.binder
        try:
            has_claims = binder.check_pod_claims(pod)
        except VolumeBindingError as err:
            return Status.unresolvable(str(err))
        if not has_claims:
            state.write(STATE_KEY, _State())
            return Status.skip()
        try:
            claims = binder.pod_volume_claims(pod)
        except VolumeBindingError as err:
            return Status.as_error(str(err))
        if claims.unbound_immediate:
            return Status.unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims))
        if not claims.unbound_delay_binding and binder.all_pvs_topology_free(claims):
            return Status.skip()  # Filter could not reject any node; Reserve finds everything bound
        eligible = binder.eligible_nodes(claims)  # bound PVs pinned to nodes by hostname narrow the nodes
        return (PreFilterResult(eligible), None) if eligible is not None else None

    @hookimpl
    def filter(self, state, pod, node_info):
        data = state.get(STATE_KEY)
        if data is None or data.claims is None:
            if not any(True for _ in pod_pvcs(pod)):
                return None  # Filter run without PreFilter on a pod without claims
            return Status.as_error(f"{STATE_KEY!r} not found in cycle state")
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod, data.claims, node_info.node)
        except VolumeBindingError as err:
            return Status.as_error(str(err))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))
        data.pod_volumes_by_node[node_info.name] = volumes
        data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return None

    # --- PreScore / Score ------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        """Skip unless some feasible node has a volume to bind or provision for the pod: every other node's
        Score is 0 (upstream scores them 0 one by one)."""
        data = state.get(STATE_KEY)
        if self.shape is None or data is None or not any(
                volumes.static_bindings or volumes.dynamic_provisions for volumes in data.pod_volumes_by_node.values()):
            return Status.skip()
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        volumes = state.get(STATE_KEY).pod_volumes_by_node.get(node_info.name)
        if volumes is None:
            return 0
        by_class: dict[str, list[int]] = {}  # class -> [requested, capacity] bytes
        if volumes.static_bindings:
            for binding in volumes.static_bindings:
                entry = by_class.setdefault(binding.pv.spec.storage_class_name, [0, 0])
                entry[0] += requested_storage(binding.pvc)
                entry[1] += binding.pv.spec.capacity.get("storage", 0)
        else:
            for provision in volumes.dynamic_provisions:
                if provision.capacity is None:
                    continue
                entry = by_class.setdefault(claim_class(provision.pvc), [0, 0])
                entry[1] = provision.capacity.capacity or 0
                entry[0] += requested_storage(provision.pvc)
        return self._class_score(by_class)

    def _class_score(self, by_class: dict[str, list[int]]) -> int:
        """Upstream's volume capacity scorer: each class's utilization through
        the shape (over-full or capacity 0 counts as 100 %), averaged, rounded."""
        if not by_class or self.shape is None:
            return 0
        utilizations = [MAX_UTILIZATION if capacity == 0 or requested > capacity
                        else requested * MAX_UTILIZATION // capacity
                        for requested, capacity in by_class.values()]
        total = int(self.shape(np.array(utilizations, dtype=np.int64)).sum())
        return math.floor(total / len(by_class) + 0.5)

    # --- Reserve / Unreserve / PreBind -----------------------------------------------------

    @hookimpl
    def reserve(self, state, pod, node_name):
        data = state.get(STATE_KEY)
        if data is None:
            return Status.as_error(f"{STATE_KEY!r} not found in cycle state")
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            data.all_bound = True  # no claims, or all bound
            return None
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except AssumeError as err:
            return Status.as_error(str(err))
        return None

    @hookimpl
    def unreserve(self, state, pod, node_name):
        data = state.get(STATE_KEY)
        volumes = data.pod_volumes_by_node.get(node_name) if data is not None else None
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    @hookimpl
    def pre_bind_pre_flight(self, state, pod, node_name):
        """Skip when the pod has no volume to bind (none, or every one bound already: upstream's allBound),
        else it will act."""
        data = state.get(STATE_KEY)
        return Status(Code.SKIP) if data is None or data.all_bound else None

    @hookimpl
    def pre_bind(self, state, pod, node_name):
        data = state.get(STATE_KEY)
        if data is None:
            return Status.as_error(f"{STATE_KEY!r} not found in cycle state")
        if data.all_bound:
            return None
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volumes found for node "{node_name}"')
        try:
            self.binder.bind_api_update(volumes)
        except ApiError as err:
            return Status.as_error(err)
        return PreBindWait(lambda: self._check(pod, volumes), self.bind_timeout, POLL_INTERVAL, BIND_TIMEOUT_MESSAGE)

    def _check(self, pod: Pod, volumes: PodVolumes) -> Status | None:
        try:
            done = self.binder.check_bindings(pod, volumes)
        except VolumeBindingError as err:
            return Status.as_error(f"binding volumes: {err}")
        return None if done else Status(Code.WAIT)

    # --- queueing hints --------------------------------------------------------------------

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD | ActionType.UPDATE),
                                 self._after_storage_class_change),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                                 self._after_claim_change),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE),
                                 self._after_volume_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD | ActionType.UPDATE), self._after_csi_node_change),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.UPDATE), self._after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE),
                                 self._after_capacity_change),
        ]

    def _claim_classes(self, pod) -> set[str] | None:
        """The storage classes of the pod's claims (claim volumes and generic
        ephemeral ones), None when one of its claims does not exist (upstream
        then queues the pod: it cannot tell)."""
        classes = set()
        for name, _ in pod_pvcs(pod):
            claim = self.informers.get("PersistentVolumeClaim", f"{pod.metadata.namespace}/{name}")
            if claim is None:
                return None
            classes.add(claim_class(claim))
        return classes

    def _after_storage_class_change(self, pod, old, new):
        """A class one of the pod's claims names, new or with new
        allowedTopologies (its binding mode is immutable) - upstream
        ``isSchedulableAfterStorageClassChange``."""
        if not any(True for _ in pod_pvcs(pod)):
            return QueueingHint.QUEUE_SKIP
        classes = self._claim_classes(pod)
        if classes is None:
            return QueueingHint.QUEUE
        if new.metadata.name in classes and (old is None or old.allowed_topologies != new.allowed_topologies):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_claim_change(pod, old, new):
        """A claim of the pod (a claim volume's or a generic ephemeral
        volume's), new or with a changed spec, phase or annotations (upstream
        ``isSchedulableAfterPersistentVolumeClaimChange``)."""
        if not is_pvc_of_pod(pod, new):
            return QueueingHint.QUEUE_SKIP
        if old is None or (old.spec, old.status.phase, old.metadata.annotations) != (
                new.spec, new.status.phase, new.metadata.annotations):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_volume_change(pod, old, new):
        """Any PersistentVolume may bind a claim of a pod with volumes; a pod
        without volumes never needs one (upstream ``isSchedulableAfterPersistentVolumeChange``)."""
        return QueueingHint.QUEUE if pod.spec.volumes else QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_csi_node_change(pod, old, new):
        """A new CSINode, or a change of its migrated plugins."""
        if old is None or (old.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
                           != new.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    @staticmethod
    def _after_csi_driver_change(pod, old, new):
        """Storage capacity tracking turned off for a driver of the pod's inline CSI volumes."""
        for volume in pod.spec.volumes:
            inline = volume.extra.get("csi")
            if not isinstance(inline, dict) or inline.get("driver") != new.metadata.name:
                continue
            if old is not None and old.spec.storage_capacity and not new.spec.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_capacity_change(self, pod, old, new):
        """A CSIStorageCapacity for a class one of the pod's claims names, new
        or whose volume limit grew (upstream ``isSchedulableAfterCSIStorageCapacityChange``)."""
        if not any(True for _ in pod_pvcs(pod)):
            return QueueingHint.QUEUE_SKIP
        classes = self._claim_classes(pod)
        if classes is None:
            return QueueingHint.QUEUE
        if new.storage_class_name not in classes:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        new_limit, old_limit = capacity_limit(new), capacity_limit(old)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
