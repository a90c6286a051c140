"""The volume binder: a pod's claims against PVs, node by node, with assumed bindings.

Upstream's ``volumebinding/binder.go`` (``SchedulerVolumeBinder``), used by
the VolumeBinding plugin in this order for one pod:

1. :meth:`VolumeBinder.pod_volume_claims` (PreFilter): the pod's claims split
   into bound, unbound WaitForFirstConsumer (with the PVs of their classes)
   and unbound Immediate;
2. :meth:`VolumeBinder.find_pod_volumes` (Filter, per node): bound PVs must
   accept the node; each unbound claim gets the smallest matching PV
   (static binding) or, failing that, must be provisionable there
   (class provisioner, allowedTopologies, CSIStorageCapacity);
3. :meth:`VolumeBinder.assume_pod_volumes` (Reserve): the chosen PVs get
   the claim in their claimRef and the claims to provision get the
   ``volume.kubernetes.io/selected-node`` annotation, in the assume caches
   only; :meth:`VolumeBinder.revert_assumed_pod_volumes` (Unreserve) drops them;
4. :meth:`VolumeBinder.bind_api_update` then :meth:`VolumeBinder.check_bindings`
   (PreBind): write them to the API, then poll until the PV controller (and
   provisioners) fully bound every claim.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
from attrs import define, field

from kubesched.core.api.core_v1 import (
    CLAIM_LOST,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from kubesched.core.api.storage_v1 import CSIStorageCapacity
from kubesched.core.cluster.assume_cache import AssumeCache, AssumeError, resource_version
from kubesched.core.cluster.client import ApiError, ClusterClient
from kubesched.core.cluster.informer import Informers
from kubesched.core.volume.claims import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    ZONE_BETA,
    ZONE_GA,
    bind_volume_to_claim,
    claim_class,
    claim_key,
    find_matching_volume,
    is_claim_fully_bound,
    is_delay_binding_mode,
    node_affinity_matches,
    pod_pvcs,
    requested_storage,
    topology_terms_match,
    volume_class,
    volume_is_for_pod,
)
from kubesched.core.volume.csi_translation import migrated_on_node, plugin_of, translate_pv

#: Filter reasons, as upstream (all UnschedulableAndUnresolvable).
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class VolumeBindingError(Exception):
    """Something about the pod's claims that is not a node's fault (the message is upstream's)."""


@define
class Binding:
    """A static binding decision: ``pvc`` gets ``pv`` (after Reserve: the PV
    with the claimRef set; after the API update: the PV the API returned)."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume


@define
class Provision:
    """A claim to provision on the node; ``capacity`` is the CSIStorageCapacity
    that has room for it (None when capacity is not tracked)."""

    pvc: PersistentVolumeClaim
    capacity: CSIStorageCapacity | None = None


@define
class PodVolumes:
    """What a node needs for the pod: claims bound to existing PVs and claims to provision."""

    static_bindings: list[Binding] = field(factory=list)
    dynamic_provisions: list[Provision] = field(factory=list)


@define
class PodVolumeClaims:
    """The pod's claims by state; ``unbound_volumes_delay_binding`` maps each
    WaitForFirstConsumer class to its PVs (listed once, at PreFilter)."""

    bound: list[PersistentVolumeClaim] = field(factory=list)
    unbound_delay_binding: list[PersistentVolumeClaim] = field(factory=list)
    unbound_immediate: list[PersistentVolumeClaim] = field(factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(factory=dict)


class VolumeBinder:
    """PV and claim assume caches over ``informers``, plus the listers the
    decisions need (StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
    Node, Pod).  Build it before the informers start.  ``on_loop(call)``
    makes a call on the scheduling loop (the handle's): PreBind may run on a
    binding worker, and the assume caches are the loop's."""

    def __init__(self, cluster: ClusterClient, informers: Informers,
                 on_loop: Callable[[Callable[[], Any]], None] = lambda call: call()):
        self.cluster = cluster
        self.informers = informers
        self.on_loop = on_loop
        self.pv_cache = AssumeCache(informers, "PersistentVolume")
        self.pvc_cache = AssumeCache(informers, "PersistentVolumeClaim")
        self.classes = informers.store("StorageClass")
        self.csi_nodes = informers.store("CSINode")
        self.csi_drivers = informers.store("CSIDriver")
        self.capacities = informers.store("CSIStorageCapacity")
        self.nodes = informers.store("Node")
        self.pods = informers.store("Pod")

    # --- PreFilter ---------------------------------------------------------------------------

    def check_pod_claims(self, pod: Pod) -> bool:
        """Upstream ``podHasPVCs``: True when the pod uses claims.  Raises
        :class:`VolumeBindingError` with upstream's message when one is
        missing, lost, being deleted or (ephemeral) not the pod's."""
        has_claims = False
        for name, ephemeral in pod_pvcs(pod):
            has_claims = True
            claim = self.pvc_cache.get_api_obj(claim_key(pod.metadata.namespace, name))
            if claim is None:
                if ephemeral:
                    raise VolumeBindingError(f'waiting for ephemeral volume controller to create the '
                                       f'persistentvolumeclaim "{name}"')
                raise VolumeBindingError(f'persistentvolumeclaim "{name}" not found')
            if claim.status.phase == CLAIM_LOST:
                raise VolumeBindingError(f'persistentvolumeclaim "{name}" bound to non-existent '
                                         f'persistentvolume "{claim.spec.volume_name}"')
            if claim.metadata.deletion_timestamp is not None:
                raise VolumeBindingError(f'persistentvolumeclaim "{name}" is being deleted')
            _check_owner(pod, claim, ephemeral)
        return has_claims

    def _pod_claim(self, pod: Pod, name: str, ephemeral: bool) -> PersistentVolumeClaim:
        key = claim_key(pod.metadata.namespace, name)
        claim = self.pvc_cache.get(key)
        if claim is None:
            raise VolumeBindingError(f'error getting PVC "{key}": persistentvolumeclaim "{name}" not found')
        _check_owner(pod, claim, ephemeral)
        return claim

    def pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """Upstream ``GetPodVolumeClaims``.  A claim naming a volume but not yet
        bind-completed counts as unbound Immediate (pre-bound claims are the PV
        controller's).  Raises :class:`VolumeBindingError`."""
        claims = PodVolumeClaims()
        for name, ephemeral in pod_pvcs(pod):
            claim = self._pod_claim(pod, name, ephemeral)
            if is_claim_fully_bound(claim):
                claims.bound.append(claim)
            elif is_delay_binding_mode(claim, self.classes.get) and not claim.spec.volume_name:
                claims.unbound_delay_binding.append(claim)
            else:
                claims.unbound_immediate.append(claim)
        for claim in claims.unbound_delay_binding:
            name = claim_class(claim)
            if name not in claims.unbound_volumes_delay_binding:
                claims.unbound_volumes_delay_binding[name] = [
                    pv for pv in self.pv_cache.list() if volume_class(pv) == name]
        return claims

    def eligible_nodes(self, claims: PodVolumeClaims) -> frozenset[str] | None:
        """Upstream ``GetEligibleNodes``: the nodes the bound claims' PVs pin
        the pod to by hostname (the intersection over the PVs that name any,
        see :func:`local_volume_node_names`), or None when they do not narrow
        the nodes (no such PV, or a bound PV not found)."""
        eligible: frozenset[str] | None = None
        for claim in claims.bound:
            pv = self.pv_cache.get(claim.spec.volume_name)
            if pv is None:
                return None
            names = local_volume_node_names(pv)
            if names:
                eligible = names if eligible is None else eligible & names
        return eligible

    def all_pvs_topology_free(self, claims: PodVolumeClaims) -> bool:
        """True when every bound claim's PV exists and accepts every node
        (no node affinity, no zone labels a CSI translation would turn into
        one), so Filter cannot reject a node (lets PreFilter skip Filter)."""
        for claim in claims.bound:
            pv = self.pv_cache.get(claim.spec.volume_name)
            if pv is None or pv.spec.node_affinity is not None:
                return False
            if plugin_of(pv.spec) is not None and (ZONE_GA in pv.metadata.labels or ZONE_BETA in pv.metadata.labels):
                return False
        return True

    # --- Filter ------------------------------------------------------------------------------

    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """Upstream ``FindPodVolumes`` for one node: the node's PodVolumes and
        the reasons it cannot host the pod's volumes (empty: it can).  Raises
        :class:`VolumeBindingError` for a claim without class or an unknown class."""
        volumes = PodVolumes()
        bound_ok = unbound_ok = enough_space = pvs_found = True
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound, node)
        if claims.unbound_delay_binding:
            to_provision: list[PersistentVolumeClaim] = []
            to_match: list[PersistentVolumeClaim] = []
            for claim in claims.unbound_delay_binding:
                selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
                if selected is None:
                    to_match.append(claim)
                elif selected != node.metadata.name:
                    return volumes, [ERR_REASON_BIND_CONFLICT]
                else:
                    to_provision.append(claim)
            if to_match:
                unbound_ok, volumes.static_bindings, unmatched = self._find_matching_volumes(
                    to_match, claims.unbound_volumes_delay_binding, node)
                to_provision.extend(unmatched)
            if to_provision:
                unbound_ok, enough_space, volumes.dynamic_provisions = self._check_provisions(to_provision, node)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_space:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def _node_view(self, pv: PersistentVolume, node: Node) -> PersistentVolume:
        """Upstream ``tryTranslatePVToCSI``: a migrated in-tree PV as its CSI form."""
        plugin = plugin_of(pv.spec)
        if plugin is not None and migrated_on_node(self.csi_nodes.get(node.metadata.name), plugin):
            return translate_pv(pv)
        return pv

    def _check_bound_claims(self, claims: list[PersistentVolumeClaim], node: Node) -> tuple[bool, bool]:
        """(every bound PV accepts the node, every bound PV exists)."""
        labels = node.metadata.labels
        for claim in claims:
            pv = self.pv_cache.get(claim.spec.volume_name)
            if pv is None:
                return True, False
            if not node_affinity_matches(self._node_view(pv, node), labels):
                return False, True
        return True, True

    def _find_matching_volumes(self, claims: list[PersistentVolumeClaim], pvs_by_class: dict[str, list],
                               node: Node) -> tuple[bool, list[Binding], list[PersistentVolumeClaim]]:
        """Smallest claims first, each gets the smallest fitting PV not chosen
        yet; returns (all matched, bindings, the claims left to provision)."""
        chosen: set[str] = set()
        bindings: list[Binding] = []
        unmatched: list[PersistentVolumeClaim] = []
        for claim in sorted(claims, key=requested_storage):
            pv = find_matching_volume(claim, pvs_by_class.get(claim_class(claim), ()), node, chosen, True)
            if pv is None:
                unmatched.append(claim)
                continue
            chosen.add(pv.metadata.name)
            bindings.append(Binding(claim, pv))
        return not unmatched, bindings, unmatched

    def _check_provisions(self, claims: list[PersistentVolumeClaim], node: Node
                          ) -> tuple[bool, bool, list[Provision]]:
        """Upstream ``checkVolumeProvisions``: (provisionable here, enough
        capacity, the provisions)."""
        provisions = []
        for claim in claims:
            name = claim_class(claim)
            key = claim_key(claim.metadata.namespace, claim.metadata.name)
            if not name:
                raise VolumeBindingError(f'no class for claim "{key}"')
            storage_class = self.classes.get(name)
            if storage_class is None:
                raise VolumeBindingError(f'failed to find storage class "{name}"')
            provisioner = storage_class.provisioner
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not topology_terms_match(storage_class.allowed_topologies, node.metadata.labels):
                return False, True, []
            fits, capacity = self._capacity_for(provisioner, claim, name, node)
            if not fits:
                return True, False, []
            provisions.append(Provision(claim, capacity))
        return True, True, provisions

    def _capacity_for(self, provisioner: str, claim: PersistentVolumeClaim, class_name: str,
                      node: Node) -> tuple[bool, CSIStorageCapacity | None]:
        """Upstream ``hasEnoughCapacity``: only for CSI drivers with
        ``storageCapacity: true``; some CSIStorageCapacity of the class whose
        node topology selects the node must hold the requested size
        (maximumVolumeSize when set, else capacity)."""
        if "storage" not in claim.spec.resources.requests:
            return True, None
        driver = self.csi_drivers.get(provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = requested_storage(claim)
        for capacity in self.capacities.values():
            if capacity.storage_class_name != class_name or capacity.node_topology is None:
                continue
            limit = capacity_limit(capacity)
            if limit is not None and limit >= size and capacity.node_topology.matches(node.metadata.labels):
                return True, capacity
        return False, None

    # --- Reserve / Unreserve -----------------------------------------------------------------

    def all_claims_bound(self, pod: Pod) -> bool:
        """Upstream ``arePodVolumesBound``, against the assume cache."""
        for name, _ in pod_pvcs(pod):
            claim = self.pvc_cache.get(claim_key(pod.metadata.namespace, name))
            if claim is None or not is_claim_fully_bound(claim):
                return False
        return True

    def assume_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """Upstream ``AssumePodVolumes``: record the node's decisions in the
        assume caches (PV claimRefs, claims' selected-node annotation) and in
        ``volumes``; returns True when all claims were already fully bound.
        Raises :class:`AssumeError` (after undoing its own assumptions) when a
        cached object moved on meanwhile."""
        if self.all_claims_bound(pod):
            return True
        bindings: list[Binding] = []
        provisions: list[Provision] = []
        try:
            for binding in volumes.static_bindings:
                pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
                if dirty:
                    self.pv_cache.assume(pv)
                bindings.append(Binding(binding.pvc, pv))
            for provision in volumes.dynamic_provisions:
                claim = provision.pvc
                annotations = {**claim.metadata.annotations, ANN_SELECTED_NODE: node_name}
                claim = attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, annotations=annotations))
                self.pvc_cache.assume(claim)
                provisions.append(Provision(claim, provision.capacity))
        except AssumeError:
            self._revert(bindings, provisions)
            raise
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """Upstream ``RevertAssumedPodVolumes`` (idempotent)."""
        self._revert(volumes.static_bindings, volumes.dynamic_provisions)

    def _revert(self, bindings: list[Binding], provisions: list[Provision]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv.metadata.name)
        for provision in provisions:
            self.pvc_cache.restore(claim_key(provision.pvc.metadata.namespace, provision.pvc.metadata.name))

    # --- PreBind -----------------------------------------------------------------------------

    def bind_api_update(self, volumes: PodVolumes) -> None:
        """Upstream ``bindAPIUpdate``: write the assumed PVs, then the claims
        to provision; each written object replaces the assumed one in
        ``volumes``.  On an API error the objects not written yet are reverted
        in the caches and the :class:`ApiError` is raised (written ones stay:
        there is no API rollback, the PV controller sorts them out)."""
        written_pvs = written_claims = 0
        try:
            for binding in volumes.static_bindings:
                binding.pv = self.cluster.update(binding.pv)
                written_pvs += 1
            for provision in volumes.dynamic_provisions:
                provision.pvc = self.cluster.update(provision.pvc)
                written_claims += 1
        except ApiError:
            unwritten = volumes.static_bindings[written_pvs:], volumes.dynamic_provisions[written_claims:]
            self.on_loop(lambda: self._revert(*unwritten))
            raise

    def check_bindings(self, pod: Pod, volumes: PodVolumes) -> bool:
        """Upstream ``checkBindings``, on the API versions: True when every
        written claim is fully bound; False to wait (also while the watch
        has not brought back our own writes).  Raises
        :class:`VolumeBindingError` when binding must be retried: the pod or
        node is gone, a PV lost its claimRef or no longer fits the node, or a
        provisioner dropped the selected-node annotation."""
        node = self.nodes.get(pod.spec.node_name)
        if node is None:
            raise VolumeBindingError(f'failed to get node "{pod.spec.node_name}": node "{pod.spec.node_name}" '
                                     "not found")
        if self.pods.get(pod.key) is None:
            raise VolumeBindingError(f'pod does not exist any more: pod "{pod.metadata.name}" not found')
        for binding in volumes.static_bindings:
            pv = self.pv_cache.get_api_obj(binding.pv.metadata.name)
            claim_name = claim_key(binding.pvc.metadata.namespace, binding.pvc.metadata.name)
            claim = self.pvc_cache.get_api_obj(claim_name)
            if pv is None or claim is None:
                missing = f'persistentvolume "{binding.pv.metadata.name}"' if pv is None else \
                    f'persistentvolumeclaim "{claim_name}"'
                raise VolumeBindingError(f"failed to check binding: {missing} not found")
            if resource_version(binding.pv) > resource_version(pv):
                return False
            if not node_affinity_matches(self._node_view(pv, node), node.metadata.labels):
                raise VolumeBindingError(f'pv "{pv.metadata.name}" node affinity doesn\'t match node '
                                         f'"{node.metadata.name}"')
            if pv.spec.claim_ref is None or not pv.spec.claim_ref.uid:
                raise VolumeBindingError(f'ClaimRef got reset for pv "{pv.metadata.name}"')
            if not is_claim_fully_bound(claim):
                return False
        for provision in volumes.dynamic_provisions:
            name = claim_key(provision.pvc.metadata.namespace, provision.pvc.metadata.name)
            claim = self.pvc_cache.get_api_obj(name)
            if claim is None:
                raise VolumeBindingError(f'failed to check provisioning pvc: persistentvolumeclaim "{name}" '
                                         "not found")
            if resource_version(provision.pvc) > resource_version(claim):
                return False
            if claim.metadata.annotations.get(ANN_SELECTED_NODE) != pod.spec.node_name:
                raise VolumeBindingError(f'provisioning failed for PVC "{claim.metadata.name}"')
            if claim.spec.volume_name:
                pv = self.pv_cache.get_api_obj(claim.spec.volume_name)
                if pv is None:
                    return False
                if not node_affinity_matches(self._node_view(pv, node), node.metadata.labels):
                    raise VolumeBindingError(f'pv "{pv.metadata.name}" node affinity doesn\'t match node '
                                             f'"{node.metadata.name}"')
            if not is_claim_fully_bound(claim):
                return False
        return True


def _check_owner(pod: Pod, claim: PersistentVolumeClaim, ephemeral: bool) -> None:
    """An ephemeral volume's claim must be the pod's (raises :class:`VolumeBindingError`)."""
    problem = volume_is_for_pod(pod, claim) if ephemeral else None
    if problem:
        raise VolumeBindingError(problem)


def capacity_limit(capacity: CSIStorageCapacity) -> int | None:
    """Upstream ``volumeLimit``: maximumVolumeSize when set (more precise), else capacity."""
    return capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity


#: upstream's ``v1.LabelHostname``
HOSTNAME_LABEL = "kubernetes.io/hostname"


def local_volume_node_names(pv: PersistentVolume) -> frozenset[str]:
    """Upstream ``GetLocalPersistentVolumeNodeNames``: the node names a PV's
    required node affinity lists under ``kubernetes.io/hostname In`` (within a
    term the lists intersect, across terms they add up); empty when it names none."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return frozenset()
    names: set[str] = set()
    for term in affinity.required.node_selector_terms:
        term_names: set[str] | None = None
        for requirement in term.match_expressions:
            if requirement.key == HOSTNAME_LABEL and requirement.operator == "In":
                values = set(requirement.values)
                term_names = values if term_names is None else term_names & values
        names |= term_names or set()
    return frozenset(names)
