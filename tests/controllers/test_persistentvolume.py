"""The embedded PersistentVolume and ephemeral volume controllers: binding,
provisioning, release and reclaim, lost claims, the provisioners option."""

from __future__ import annotations

from kubesched.controllers import CONTROLLERS
from kubesched.core.api.meta import evolve_meta
from kubesched.core.volume.claims import ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER
from kubesched.drivers.simulation import Simulation
from kubesched.testing import claim, csi_node, node, persistent_volume, pod, storage_class

ZONE = "topology.kubernetes.io/zone"


def run(*objects, options=None) -> Simulation:
    sim = Simulation(controller_options=options)
    sim.create(objects)
    sim.run()
    return sim


def get_claim(sim, name):
    return sim.get("PersistentVolumeClaim", f"default/{name}")


def test_registered_as_embedded_only():
    for name in ("persistentvolume-binder-controller", "ephemeral-volume-controller"):
        assert CONTROLLERS[name].embedded_only


def test_immediate_claim_binds_the_smallest_available_pv_of_its_class():
    sim = run(storage_class("manual", binding_mode="Immediate"),
              persistent_volume("big", "50Gi", "manual"), persistent_volume("small", "5Gi", "manual"),
              persistent_volume("other-class", "3Gi", "other"), claim("c", "3Gi", "manual"))
    bound = get_claim(sim, "c")
    assert bound.spec.volume_name == "small" and bound.status.phase == "Bound"
    assert bound.status.capacity == {"storage": 5 * 2**30} and bound.status.access_modes == ("ReadWriteOnce",)
    assert bound.metadata.annotations[ANN_BIND_COMPLETED] == "yes"
    assert bound.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    pv = sim.get("PersistentVolume", "small")
    assert (pv.status.phase, pv.spec.claim_ref.name, pv.spec.claim_ref.uid) == ("Bound", "c", bound.metadata.uid)
    assert sim.get("PersistentVolume", "big").status.phase == "Available"


def test_a_claim_asking_for_a_pv_by_name():
    sim = run(persistent_volume("wanted", "1Gi"), claim("c", "1Gi", storage_class="", volume_name="wanted"))
    assert get_claim(sim, "c").status.phase == "Bound"
    assert ANN_BOUND_BY_CONTROLLER not in get_claim(sim, "c").metadata.annotations  # the user bound it


def test_no_pv_and_no_class():
    sim = run(claim("c", "1Gi", storage_class=""))
    assert get_claim(sim, "c").status.phase == "Pending"
    (event,) = sim.events("FailedBinding")
    assert event.message == "no persistent volumes available for this claim and no storage class is set"
    assert event.source.component == "persistentvolume-controller"  # upstream's, not the controller's name


def test_a_pv_appearing_later_binds_a_pending_claim():
    sim = run(storage_class("manual", binding_mode="Immediate"), claim("c", "1Gi", "manual"))
    assert get_claim(sim, "c").status.phase == "Pending"
    sim.create([persistent_volume("late", "1Gi", "manual")])
    sim.run()
    assert get_claim(sim, "c").spec.volume_name == "late"


def test_immediate_provisioning_uses_the_first_allowed_topology():
    sim = run(storage_class("zonal", provisioner="disk.example.com", binding_mode="Immediate",
                            allowed_topologies={ZONE: ["b", "c"]}, reclaim_policy="Retain"),
              claim("c", "3Gi", "zonal", access_modes=["ReadWriteOnce", "ReadOnlyMany"]))
    bound = get_claim(sim, "c")
    pv = sim.get("PersistentVolume", bound.spec.volume_name)
    assert bound.spec.volume_name == f"pvc-{bound.metadata.uid}"
    assert pv.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "disk.example.com"
    assert pv.spec.persistent_volume_reclaim_policy == "Retain"
    assert pv.spec.access_modes == ("ReadWriteOnce", "ReadOnlyMany")
    assert pv.spec.csi.driver == "disk.example.com"
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [(ZONE, ("b",))]
    assert [e.reason for e in sim.events() if e.involved_object.name == "c"] == ["Provisioning",
                                                                               "ProvisioningSucceeded"]


def test_provisioning_for_a_selected_node_uses_the_csi_node_topology_keys():
    sim = run(node("n1", labels={ZONE: "a", "rack": "r7"}), csi_node("n1", topology_keys={"disk.example.com": ["rack"]}),
              storage_class("local", provisioner="disk.example.com"),
              claim("c", "1Gi", "local"), pod("p", cpu="100m", volumes=[{"name": "v", "persistentVolumeClaim":
                                                                         {"claimName": "c"}}]))
    pv = sim.get("PersistentVolume", get_claim(sim, "c").spec.volume_name)
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [("rack", ("r7",))]
    assert sim.pod("p").spec.node_name == "n1"


def test_provisioners_not_served_wait_for_an_external_provisioner():
    sim = run(storage_class("ext", provisioner="external.example.com", binding_mode="Immediate"),
              claim("c", "1Gi", "ext"),
              options={"persistentvolume-binder-controller": {"provisioners": ["mine.example.com"]}})
    assert get_claim(sim, "c").status.phase == "Pending"
    assert get_claim(sim, "c").metadata.annotations["volume.kubernetes.io/storage-provisioner"] == "external.example.com"
    (event,) = sim.events("ExternalProvisioning")
    assert event.message == ('waiting for a volume to be created, either by external provisioner '
                             '"external.example.com" or manually created by system administrator')
    sim = run(claim("c", "1Gi", "missing-class"))
    assert sim.events("ProvisioningFailed")[0].message == 'storageclass.storage.k8s.io "missing-class" not found'


def test_deleting_the_claim_releases_or_deletes_its_pv():
    sim = run(storage_class("manual", binding_mode="Immediate"), persistent_volume("kept", "1Gi", "manual"),
              storage_class("dyn", provisioner="disk.example.com", binding_mode="Immediate"),
              claim("c1", "1Gi", "manual"), claim("c2", "1Gi", "dyn"))
    provisioned = get_claim(sim, "c2").spec.volume_name
    sim.cluster.delete("PersistentVolumeClaim", "c1", "default")
    sim.cluster.delete("PersistentVolumeClaim", "c2", "default")
    sim.run()
    assert sim.get("PersistentVolume", "kept").status.phase == "Released"  # Retain
    assert provisioned not in {pv.metadata.name for pv in sim.cluster.list("PersistentVolume").items}  # Delete


def test_a_bound_claim_whose_pv_disappears_is_lost():
    sim = run(storage_class("manual", binding_mode="Immediate"), persistent_volume("pv", "1Gi", "manual"),
              claim("c", "1Gi", "manual"))
    sim.cluster.delete("PersistentVolume", "pv")
    sim.run()
    assert get_claim(sim, "c").status.phase == "Lost"
    (event,) = sim.events("ClaimLost")
    assert event.message == "Bound claim has lost its PersistentVolume. Data on the volume is lost!"


def test_a_pv_bound_by_the_controller_to_a_claim_bound_elsewhere_is_unbound():
    sim = run(storage_class("manual", binding_mode="Immediate"), persistent_volume("pv-a", "1Gi", "manual"),
              claim("c", "1Gi", "manual"))
    bound = get_claim(sim, "c")
    stray = persistent_volume("pv-b", "1Gi", "manual", claim=("default", "c", bound.metadata.uid), phase="Bound")
    sim.create([evolve_meta(stray, annotations={ANN_BOUND_BY_CONTROLLER: "yes"})])
    sim.run()
    pv = sim.get("PersistentVolume", "pv-b")
    assert pv.spec.claim_ref is None and pv.status.phase == "Available"
    assert get_claim(sim, "c").spec.volume_name == "pv-a"


def test_the_default_class_is_given_to_claims_created_before_it():
    sim = run(claim("c", "1Gi"))
    assert get_claim(sim, "c").spec.storage_class_name is None
    sim.create([storage_class("std", provisioner="disk.example.com", binding_mode="Immediate", default=True)])
    sim.run()
    assert get_claim(sim, "c").spec.storage_class_name == "std"
    assert get_claim(sim, "c").status.phase == "Bound"
