"""CSI migration: in-tree volume plugins seen as the CSI drivers that replaced them.

Upstream's ``k8s.io/csi-translation-lib``, reduced to what the scheduler
uses: which in-tree plugin a PersistentVolume or pod volume belongs to, the
CSI driver and volume handle it translates to, the translated PV's topology
(zone labels and zone node affinity become the driver's topology key), and
whether migration is on for a node (its CSINode).

Known plugins (all migrated by default upstream): ``kubernetes.io/aws-ebs``
-> ``ebs.csi.aws.com``, ``kubernetes.io/gce-pd`` -> ``pd.csi.storage.gke.io``,
``kubernetes.io/azure-disk`` -> ``disk.csi.azure.com``,
``kubernetes.io/cinder`` -> ``cinder.csi.openstack.org``.  The volume handle
is the in-tree volume ID (an ``aws://zone/vol-x`` ID gives ``vol-x``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
from attrs import frozen

from kubesched.core.api.core_v1 import (
    CSIPersistentVolumeSource,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeSpec,
    Volume,
    VolumeNodeAffinity,
)
from kubesched.core.api.storage_v1 import CSINode
from kubesched.core.volume.claims import ZONE_BETA, ZONE_GA, zones_of_label

#: CSINode annotation: the in-tree plugins migrated to CSI on that node (comma-separated).
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

#: Node allocatable resources with this prefix are attach limits.
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX = ATTACHABLE_VOLUMES_PREFIX + "csi-"
_RESOURCE_NAME_LIMIT = 63


@frozen
class InTreePlugin:
    """An in-tree plugin: its name, the CSI driver it migrated to, the driver's
    zone topology key, the volume-source field it reads, and that source's ID."""

    name: str
    driver: str
    topology_key: str
    source: str

    def handle(self, source: Any) -> str:
        """The CSI volume handle of in-tree ``source``: the EBS volume ID (the ``aws://zone/`` prefix dropped), the
        GCE PD name, the Azure disk URI (else name) or the Cinder volume ID."""
        if self.source == "aws_elastic_block_store":
            return ebs_volume_id(source.volume_id)
        if self.source == "gce_persistent_disk":
            return source.pd_name
        if self.source == "azure_disk":
            return source.disk_uri or source.disk_name
        return source.volume_id


IN_TREE_PLUGINS = (
    InTreePlugin("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone",
                 "aws_elastic_block_store"),
    InTreePlugin("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "topology.gke.io/zone", "gce_persistent_disk"),
    InTreePlugin("kubernetes.io/azure-disk", "disk.csi.azure.com", "topology.disk.csi.azure.com/zone",
                 "azure_disk"),
    InTreePlugin("kubernetes.io/cinder", "cinder.csi.openstack.org", "topology.cinder.csi.openstack.org/zone",
                 "cinder"),
)
_BY_NAME = {plugin.name: plugin for plugin in IN_TREE_PLUGINS}


def ebs_volume_id(kubernetes_id: str) -> str:
    """``aws://<zone>/<vol-id>`` or ``aws:///<vol-id>`` -> ``<vol-id>``; a bare ID is kept."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    return kubernetes_id[len("aws://"):].partition("/")[2].strip("/")


def plugin_by_name(name: str) -> InTreePlugin | None:
    """The in-tree plugin called ``name`` (a provisioner name), if migratable."""
    return _BY_NAME.get(name)


def plugin_of(spec: Any) -> InTreePlugin | None:
    """The in-tree plugin of a PV spec or pod volume (None: not a migratable in-tree volume)."""
    for plugin in IN_TREE_PLUGINS:
        if getattr(spec, plugin.source, None) is not None:
            return plugin
    return None


def migrated_on_node(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """VolumeBinding's ``isPluginMigratedToCSIOnNode``: the CSINode lists the
    plugin in its migrated-plugins annotation."""
    if csi_node is None:
        return False
    listed = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin.name in listed.split(",")


def csi_source(spec: PersistentVolumeSpec | Volume) -> tuple[str, str] | None:
    """``(driver, volume handle)`` of a CSI PV spec, or of a migratable in-tree
    PV spec or pod volume once translated; None otherwise."""
    csi = getattr(spec, "csi", None)
    if csi is not None:
        return csi.driver, csi.volume_handle
    plugin = plugin_of(spec)
    if plugin is None:
        return None
    return plugin.driver, plugin.handle(getattr(spec, plugin.source))


def translate_pv(pv: PersistentVolume) -> PersistentVolume:
    """Upstream ``TranslateInTreePVToCSI``: the in-tree source replaced by a CSI
    source, and zone topology (node affinity on a zone label, else the PV's
    zone label) expressed with the driver's topology key.  A PV that is not
    a migratable in-tree volume is returned unchanged."""
    plugin = plugin_of(pv.spec)
    if plugin is None:
        return pv
    source = getattr(pv.spec, plugin.source)
    in_tree_source_cleared: dict[str, Any] = {plugin.source: None}
    spec = attrs.evolve(pv.spec, csi=CSIPersistentVolumeSource(driver=plugin.driver,
                                                                volume_handle=plugin.handle(source)),
                        **in_tree_source_cleared)
    spec = attrs.evolve(spec, node_affinity=_translated_affinity(pv, plugin.topology_key))
    return attrs.evolve(pv, spec=spec)


def _translated_affinity(pv: PersistentVolume, topology_key: str) -> VolumeNodeAffinity | None:
    affinity = pv.spec.node_affinity
    terms = affinity.required.node_selector_terms if affinity and affinity.required else ()
    keys = {req.key for term in terms for req in term.match_expressions}
    if topology_key in keys:
        return affinity
    zone_key = ZONE_BETA if ZONE_BETA in keys or (ZONE_GA not in keys and ZONE_BETA in pv.metadata.labels) else ZONE_GA
    if zone_key in keys:
        terms = tuple(attrs.evolve(term, match_expressions=tuple(
            attrs.evolve(req, key=topology_key) if req.key == zone_key else req for req in term.match_expressions))
            for term in terms)
    elif zone_key in pv.metadata.labels:
        zones = tuple(sorted(zones_of_label(pv.metadata.labels[zone_key])))
        requirement = NodeSelectorRequirement(key=topology_key, operator="In", values=zones)
        terms = tuple(attrs.evolve(term, match_expressions=term.match_expressions + (requirement,))
                      for term in terms) or (NodeSelectorTerm(match_expressions=(requirement,)),)
    else:
        return affinity
    return VolumeNodeAffinity(required=NodeSelector(node_selector_terms=terms))


def attach_limit_key(driver: str) -> str:
    """Upstream ``GetCSIAttachLimitKey``: ``attachable-volumes-csi-<driver>``,
    shortened with a SHA-1 suffix when longer than a resource name may be."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= _RESOURCE_NAME_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver
