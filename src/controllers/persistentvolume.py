"""The PersistentVolume controller of the embedded cluster (binding and provisioning).

Stands in for kube-controller-manager's ``persistentvolume-binder``
(``pkg/controller/volume/persistentvolume``) and for the external
provisioners of a real cluster, so that ``kubesched simulate`` shows the
whole life of a claim:

- a claim of an Immediate class is bound to the smallest matching Available
  PV (or one pre-bound to it); failing that, its class's provisioner
  provisions a PV for it;
- a claim of a WaitForFirstConsumer class waits ("waiting for first consumer
  to be created before binding") until the scheduler either pre-binds a PV
  to it (the PV's claimRef) or asks for provisioning on a node (the claim's
  ``volume.kubernetes.io/selected-node`` annotation);
- binding writes the PV's claimRef and phase Bound, then the claim's
  ``spec.volumeName``, the ``pv.kubernetes.io/bind-completed`` annotation
  and phase Bound (with the PV's capacity and access modes);
- provisioning creates ``pvc-<claim uid>`` with the claim's size, access
  modes and class, the class's reclaim policy, and node affinity for the
  selected node's topology (the CSINode's topology keys for the driver,
  else the keys of the class's allowedTopologies), or for the first allowed
  topology of an Immediate class;
- a PV whose claim is gone becomes Released; a provisioned one with the
  Delete policy is deleted; a claim whose PV is gone becomes Lost.

Options (``ControllerContext.options["persistentvolume-binder-controller"]``):
``provisioners``, the provisioner names this controller provisions for
(default: every provisioner except ``kubernetes.io/no-provisioner``; the
others get upstream's ExternalProvisioning event and wait).

Instead of upstream's periodic resync, a new or changed PV or StorageClass
requeues the unbound claims it may serve.
"""

from __future__ import annotations

import logging

import attrs

from kubesched.core.api.core_v1 import (
    CLAIM_BOUND,
    CLAIM_LOST,
    CLAIM_PENDING,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
    VOLUME_FAILED,
    VOLUME_RELEASED,
    CSIPersistentVolumeSource,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    VolumeNodeAffinity,
)
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.api.storage_v1 import StorageClass
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.volume.claims import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    STORAGE,
    access_modes_fit,
    bind_volume_to_claim,
    claim_class,
    claim_key,
    claim_reference,
    default_storage_class,
    find_matching_volume,
    is_delay_binding_mode,
    is_volume_bound_to_claim,
    requested_storage,
    volume_class,
)
from kubesched.core.volume.csi_translation import plugin_by_name

log = logging.getLogger(__name__)

CLAIM, VOLUME = "claim", "volume"


class PersistentVolumeController(Controller):
    """Binds claims and PVs and provisions PVs on the embedded cluster.
    Work items are ``("claim", "namespace/name")`` and ``("volume", name)``."""

    name = "persistentvolume-binder-controller"
    #: upstream's PV controller records its Events as this component
    event_component = "persistentvolume-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        options = ctx.options.get(self.name, {})
        provisioners = options.get("provisioners")
        self.provisioners = None if provisioners is None else frozenset(provisioners)
        inf = self.informers
        self.claims = inf.store("PersistentVolumeClaim")
        self.volumes = inf.store("PersistentVolume")
        self.classes = inf.store("StorageClass")
        self.nodes = inf.store("Node")
        self.csi_nodes = inf.store("CSINode")
        inf.add_handlers("PersistentVolumeClaim", self._claim_changed, lambda old, new: self._claim_changed(new),
                         self._claim_deleted)
        inf.add_handlers("PersistentVolume", self._volume_changed, lambda old, new: self._volume_changed(new),
                         self._volume_deleted)
        inf.add_handlers("StorageClass", self._class_changed, lambda old, new: self._class_changed(new))

    # --- event handlers ----------------------------------------------------------------------

    def _claim_changed(self, claim: PersistentVolumeClaim) -> None:
        self.queue.add((CLAIM, claim_key(claim.metadata.namespace, claim.metadata.name)))

    def _claim_deleted(self, claim: PersistentVolumeClaim) -> None:
        if claim.spec.volume_name:
            self.queue.add((VOLUME, claim.spec.volume_name))

    def _volume_changed(self, volume: PersistentVolume) -> None:
        self.queue.add((VOLUME, volume.metadata.name))
        self._requeue_unbound_claims(volume_class(volume))

    def _volume_deleted(self, volume: PersistentVolume) -> None:
        ref = volume.spec.claim_ref
        if ref is not None:
            self.queue.add((CLAIM, claim_key(ref.namespace, ref.name)))

    def _class_changed(self, storage_class: StorageClass) -> None:
        self._requeue_unbound_claims(storage_class.metadata.name)
        for key, claim in self.claims.items():
            if claim.spec.storage_class_name is None and not claim.spec.volume_name:
                self.queue.add((CLAIM, key))

    def _requeue_unbound_claims(self, class_name: str) -> None:
        for key, claim in self.claims.items():
            if ANN_BIND_COMPLETED not in claim.metadata.annotations and claim_class(claim) == class_name:
                self.queue.add((CLAIM, key))

    # --- sync --------------------------------------------------------------------------------

    def sync(self, item) -> None:
        """``item`` is ``(CLAIM, "namespace/name")`` or ``(VOLUME, name)``: sync that claim or PV if it still exists
        (upstream's ``syncClaim`` / ``syncVolume``)."""
        kind, key = item
        if kind == CLAIM:
            claim = self.claims.get(key)
            if claim is not None:
                self.sync_claim(claim)
        else:
            volume = self.volumes.get(key)
            if volume is not None:
                self.sync_volume(volume)

    def sync_claim(self, claim: PersistentVolumeClaim) -> None:
        """Upstream ``syncClaim``."""
        if ANN_BIND_COMPLETED in claim.metadata.annotations:
            self._sync_bound_claim(claim)
        else:
            self._sync_unbound_claim(claim)

    def _sync_unbound_claim(self, claim: PersistentVolumeClaim) -> None:
        if claim.spec.volume_name:
            volume = self.volumes.get(claim.spec.volume_name)
            if volume is None:
                self._update_claim_status(claim, CLAIM_PENDING, None)  # the asked-for PV may appear later
            elif volume.spec.claim_ref is None or is_volume_bound_to_claim(volume, claim):
                self._bind(volume, claim)
            elif ANN_BOUND_BY_CONTROLLER not in claim.metadata.annotations:
                self._update_claim_status(claim, CLAIM_PENDING, None)  # claimed by another: retry later
            else:
                log.warning("claim %s: volume %s already claimed by %s/%s", claim.metadata.name,
                            volume.metadata.name, volume.spec.claim_ref.namespace, volume.spec.claim_ref.name)
            return
        delay_binding = is_delay_binding_mode(claim, self.classes.get)
        candidates = [v for v in self.volumes.values() if access_modes_fit(claim, v)]
        volume = find_matching_volume(claim, candidates, delay_binding=delay_binding)
        if volume is not None:
            self._bind(volume, claim)
            return
        if claim.spec.storage_class_name is None:
            default = default_storage_class(self.classes.values())
            if default is not None:
                spec = attrs.evolve(claim.spec, storage_class_name=default.metadata.name)
                self.cluster.update(attrs.evolve(claim, spec=spec))
                return
        if delay_binding and ANN_SELECTED_NODE not in claim.metadata.annotations:
            self.recorder.event(claim, "Normal", "WaitForFirstConsumer", "Binding",
                                "waiting for first consumer to be created before binding")
        elif claim_class(claim):
            self._provision(claim)
            return
        else:
            self.recorder.event(claim, "Normal", "FailedBinding", "Binding",
                                "no persistent volumes available for this claim and no storage class is set")
        self._update_claim_status(claim, CLAIM_PENDING, None)

    def _sync_bound_claim(self, claim: PersistentVolumeClaim) -> None:
        if not claim.spec.volume_name:
            self._claim_lost(claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. "
                                                "Data on the volume is lost!")
            return
        volume = self.volumes.get(claim.spec.volume_name)
        if volume is None:
            self._claim_lost(claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
        elif volume.spec.claim_ref is None or volume.spec.claim_ref.uid == claim.metadata.uid:
            self._bind(volume, claim)
        else:
            self._claim_lost(claim, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound "
                                                     "incorrectly")

    def sync_volume(self, volume: PersistentVolume) -> None:
        """Upstream ``syncVolume``."""
        ref = volume.spec.claim_ref
        if ref is None or not ref.uid:
            self._update_volume_phase(volume, VOLUME_AVAILABLE)
            return
        claim = self.claims.get(claim_key(ref.namespace, ref.name))
        if claim is not None and claim.metadata.uid != ref.uid:
            claim = None  # deleted and created again: the volume's claim is gone
        if claim is None:
            if volume.status.phase not in (VOLUME_RELEASED, VOLUME_FAILED):
                volume = self._update_volume_phase(volume, VOLUME_RELEASED)
            self._reclaim(volume)
        elif not claim.spec.volume_name:
            self.queue.add((CLAIM, claim_key(ref.namespace, ref.name)))  # the claim sync finishes the binding
        elif claim.spec.volume_name == volume.metadata.name:
            self._update_volume_phase(volume, VOLUME_BOUND)
        elif ANN_DYNAMICALLY_PROVISIONED in volume.metadata.annotations \
                and volume.spec.persistent_volume_reclaim_policy == "Delete":
            if volume.status.phase not in (VOLUME_RELEASED, VOLUME_FAILED):
                volume = self._update_volume_phase(volume, VOLUME_RELEASED)
            self._reclaim(volume)
        else:
            self._unbind(volume)

    # --- binding -----------------------------------------------------------------------------

    def _bind(self, volume: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        """Upstream ``bind``: the volume first (claimRef, phase), then the claim."""
        bound, dirty = bind_volume_to_claim(volume, claim)
        if dirty:
            volume = self.cluster.update(bound)
        volume = self._update_volume_phase(volume, VOLUME_BOUND)
        annotations = dict(claim.metadata.annotations)
        if claim.spec.volume_name != volume.metadata.name:
            annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        annotations.setdefault(ANN_BIND_COMPLETED, "yes")
        if claim.spec.volume_name != volume.metadata.name or annotations != claim.metadata.annotations:
            claim = self.cluster.update(attrs.evolve(
                claim, metadata=attrs.evolve(claim.metadata, annotations=annotations),
                spec=attrs.evolve(claim.spec, volume_name=volume.metadata.name)))
        self._update_claim_status(claim, CLAIM_BOUND, volume)

    def _unbind(self, volume: PersistentVolume) -> None:
        """Upstream ``unbindVolume``: drop a binding this controller made (or
        only the claim UID of a user's pre-binding) and make the volume Available."""
        if ANN_BOUND_BY_CONTROLLER in volume.metadata.annotations:
            annotations = {k: v for k, v in volume.metadata.annotations.items() if k != ANN_BOUND_BY_CONTROLLER}
            volume = attrs.evolve(volume, metadata=attrs.evolve(volume.metadata, annotations=annotations),
                                  spec=attrs.evolve(volume.spec, claim_ref=None))
        else:
            claim_ref = volume.spec.claim_ref
            volume = attrs.evolve(volume, spec=attrs.evolve(
                volume.spec, claim_ref=attrs.evolve(claim_ref, uid="") if claim_ref is not None else None))
        self._update_volume_phase(self.cluster.update(volume), VOLUME_AVAILABLE)

    def _reclaim(self, volume: PersistentVolume) -> None:
        """Upstream ``reclaimVolume``: Delete removes the PV (the provisioner's
        deleter); Retain (and the deprecated Recycle) keep it Released."""
        if volume.spec.persistent_volume_reclaim_policy == "Delete":
            try:
                self.cluster.delete("PersistentVolume", volume.metadata.name, uid=volume.metadata.uid)
            except NotFound:
                pass

    def _update_volume_phase(self, volume: PersistentVolume, phase: str) -> PersistentVolume:
        if volume.status.phase == phase:
            return volume
        return self.cluster.update_status(attrs.evolve(volume, status=attrs.evolve(volume.status, phase=phase)))

    def _update_claim_status(self, claim: PersistentVolumeClaim, phase: str,
                             volume: PersistentVolume | None) -> PersistentVolumeClaim:
        """Phase, and the bound volume's access modes and capacity (reset without one)."""
        modes = volume.spec.access_modes if volume is not None else ()
        capacity = dict(volume.spec.capacity) if volume is not None else {}
        status = claim.status
        if (status.phase, status.access_modes, status.capacity) == (phase, modes, capacity):
            return claim
        status = attrs.evolve(status, phase=phase, access_modes=modes, capacity=capacity)
        return self.cluster.update_status(attrs.evolve(claim, status=status))

    def _claim_lost(self, claim: PersistentVolumeClaim, reason: str, message: str) -> None:
        if claim.status.phase == CLAIM_LOST:
            return
        claim = self._update_claim_status(claim, CLAIM_LOST, None)
        self.recorder.event(claim, "Warning", reason, "Binding", message)

    # --- provisioning ------------------------------------------------------------------------

    def serves(self, provisioner: str) -> bool:
        """Whether this controller provisions for ``provisioner``."""
        if self.provisioners is None:
            return bool(provisioner) and provisioner != NOT_SUPPORTED_PROVISIONER
        return provisioner in self.provisioners

    def _provision(self, claim: PersistentVolumeClaim) -> None:
        """Upstream ``provisionClaim`` plus the external provisioner's work."""
        class_name = claim_class(claim)
        storage_class = self.classes.get(class_name)
        if storage_class is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed", "Provisioning",
                                f'storageclass.storage.k8s.io "{class_name}" not found')
            self._update_claim_status(claim, CLAIM_PENDING, None)
            return
        provisioner = storage_class.provisioner
        if claim.metadata.annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            annotations = {**claim.metadata.annotations, ANN_STORAGE_PROVISIONER: provisioner,
                           ANN_BETA_STORAGE_PROVISIONER: provisioner}
            claim = self.cluster.update(attrs.evolve(claim, metadata=attrs.evolve(claim.metadata,
                                                                                  annotations=annotations)))
        if not self.serves(provisioner):
            self.recorder.event(claim, "Normal", "ExternalProvisioning", "Provisioning",
                                f'waiting for a volume to be created, either by external provisioner "{provisioner}" '
                                "or manually created by system administrator")
            self._update_claim_status(claim, CLAIM_PENDING, None)
            return
        name = f"pvc-{claim.metadata.uid}"
        if name in self.volumes:
            return  # provisioned already; the volume's sync binds it
        key = claim_key(claim.metadata.namespace, claim.metadata.name)
        affinity = None
        selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected is not None:
            node = self.nodes.get(selected)
            if node is None:
                self.recorder.event(claim, "Warning", "ProvisioningFailed", "Provisioning",
                                    f'failed to get target node: node "{selected}" not found')
                # give the claim back to the scheduler
                annotations = {k: v for k, v in claim.metadata.annotations.items() if k != ANN_SELECTED_NODE}
                self.cluster.update(attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, annotations=annotations)))
                return
            affinity = self._node_topology(storage_class, node)
        else:
            affinity = allowed_topology(storage_class)
        self.recorder.event(claim, "Normal", "Provisioning", "Provisioning",
                            f'External provisioner is provisioning volume for claim "{key}"')
        plugin = plugin_by_name(provisioner)
        volume = PersistentVolume(
            metadata=ObjectMeta(name=name, annotations={ANN_DYNAMICALLY_PROVISIONED: provisioner}),
            spec=PersistentVolumeSpec(
                capacity={STORAGE: requested_storage(claim)},
                access_modes=claim.spec.access_modes,
                storage_class_name=class_name,
                node_affinity=affinity,
                claim_ref=claim_reference(claim),
                persistent_volume_reclaim_policy=storage_class.reclaim_policy or "Delete",
                volume_mode=claim.spec.volume_mode,
                csi=CSIPersistentVolumeSource(driver=plugin.driver if plugin else provisioner, volume_handle=name),
            ),
        )
        self.cluster.create(volume)
        self.recorder.event(claim, "Normal", "ProvisioningSucceeded", "Provisioning",
                            f"Successfully provisioned volume {name}")

    def _node_topology(self, storage_class: StorageClass, node: Node) -> VolumeNodeAffinity | None:
        """The selected node's segment of the driver's topology: the CSINode's
        topology keys for the provisioner, else the allowedTopologies keys."""
        keys: list[str] = []
        csi_node = self.csi_nodes.get(node.metadata.name)
        if csi_node is not None:
            for driver in csi_node.spec.drivers:
                if driver.name == storage_class.provisioner:
                    keys = list(driver.topology_keys)
        if not keys:
            keys = sorted({req.key for term in storage_class.allowed_topologies
                           for req in term.match_label_expressions})
        labels = node.metadata.labels
        requirements = tuple(NodeSelectorRequirement(key=k, operator="In", values=(labels[k],))
                             for k in keys if k in labels)
        return _affinity(requirements)


def allowed_topology(storage_class: StorageClass) -> VolumeNodeAffinity | None:
    """Where an Immediate claim's volume goes: the first value of each
    requirement of the class's first allowed topology (None: anywhere)."""
    if not storage_class.allowed_topologies:
        return None
    term = storage_class.allowed_topologies[0]
    return _affinity(tuple(NodeSelectorRequirement(key=req.key, operator="In", values=req.values[:1])
                           for req in term.match_label_expressions if req.values))


def _affinity(requirements: tuple[NodeSelectorRequirement, ...]) -> VolumeNodeAffinity | None:
    if not requirements:
        return None
    return VolumeNodeAffinity(required=NodeSelector(node_selector_terms=(
        NodeSelectorTerm(match_expressions=requirements),)))
