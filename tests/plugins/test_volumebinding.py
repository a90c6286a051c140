"""VolumeBinding on the embedded cluster with the PV controller: bound PVs'
node affinity, WaitForFirstConsumer matching (smallest fit), dynamic
provisioning with allowedTopologies, Immediate claims, missing claims, the
assume cache under races, PreBind failures (API conflict, bind timeout) and
their revert, ephemeral volumes, CSIStorageCapacity, Score with a shape."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import Conflict
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.types import QueueingHint
from kubesched.core.volume.claims import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.testing import (
    claim,
    claim_volume,
    ephemeral_volume,
    node,
    persistent_volume,
    pod,
    storage_class,
)

from .helpers import condition, config, fit_reason, make, run_pre_filter, simulate

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NO_PV = "node(s) didn't find available persistent volumes to bind"


def claim_pod(name: str, *claims: str, **kwargs):
    return pod(name, cpu="100m", volumes=[claim_volume(f"v{i}", c) for i, c in enumerate(claims)], **kwargs)


def bound_pair(pv_name: str, claim_name: str, **pv_args):
    """A PV and a claim already fully bound to each other."""
    uid = f"uid-{claim_name}"
    return [persistent_volume(pv_name, claim=("default", claim_name, uid), phase="Bound", **pv_args),
            claim(claim_name, volume_name=pv_name, annotations={ANN_BIND_COMPLETED: "yes"}, uid=uid)]


def local_class():
    return storage_class("local")  # no provisioner, WaitForFirstConsumer


def binder(sim: Simulation):
    return sim.scheduler.profiles["default-scheduler"].plugins["VolumeBinding"].binder


def stop_controllers(sim: Simulation) -> Simulation:
    """Nothing completes bindings (no PV controller)."""
    sim.controllers.controllers.clear()
    return sim


# --- bound claims ------------------------------------------------------------------------------


def test_a_pod_goes_where_its_bound_pv_is():
    sim = simulate([node("n1"), node("n2"), node("n3"),
                    *bound_pair("pv1", "c1", node_affinity={HOST: ["n2"]}), claim_pod("p", "c1")])
    assert sim.pod("p").spec.node_name == "n2"


def test_bound_pv_node_affinity_conflict():
    sim = simulate([node("n1"), node("n2"), *bound_pair("pv1", "c1", node_affinity={"rack": ["elsewhere"]}),
                    claim_pod("p", "c1")])
    assert sim.pod("p").spec.node_name == ""
    assert fit_reason(sim) == "0/2 nodes are available: 2 node(s) had volume node affinity conflict."


def test_a_bound_pv_pinned_by_hostname_narrows_the_nodes_at_pre_filter():
    """Upstream's GetEligibleNodes: PreFilter names the PV's hostnames; no node of that name, no node to filter."""
    sim = simulate([node("n1"), node("n2"), *bound_pair("pv1", "c1", node_affinity={HOST: ["elsewhere"]}),
                    claim_pod("p", "c1")])
    assert sim.pod("p").spec.node_name == ""
    assert fit_reason(sim) == "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [VolumeBinding]."


def test_a_claim_bound_to_a_missing_pv():
    _, bound_claim = bound_pair("pv1", "c1")
    sim = stop_controllers(Simulation())
    sim.create([node("n1"), bound_claim, claim_pod("p", "c1")])
    sim.run()
    assert fit_reason(sim) == '0/1 nodes are available: persistentvolume "pv1" not found.'  # VolumeZone's PreFilter
    sim = stop_controllers(Simulation(config(plugins={"multiPoint": {"disabled": [{"name": "VolumeZone"}]}})))
    sim.create([node("n1"), bound_claim, claim_pod("p", "c1")])
    sim.run()
    assert fit_reason(sim) == ("0/1 nodes are available: 1 node(s) unavailable due to one or more pvc(s) bound to "
                            "non-existent pv(s).")
    # the PV controller marks such a claim Lost, which PreFilter reports
    sim = simulate([node("n1"), bound_claim, claim_pod("p", "c1")])
    assert sim.get("PersistentVolumeClaim", "default/c1").status.phase == "Lost"
    assert fit_reason(sim) == ('0/1 nodes are available: persistentvolumeclaim "c1" bound to non-existent '
                            'persistentvolume "pv1".')


# --- WaitForFirstConsumer ------------------------------------------------------------------------


def test_wait_for_first_consumer_binds_the_smallest_pv_that_fits():
    sim = simulate([node("n1"), local_class(),
                    persistent_volume("pv-5g", "5Gi", "local"), persistent_volume("pv-20g", "20Gi", "local"),
                    persistent_volume("pv-10g", "10Gi", "local"), persistent_volume("pv-9g-rox", "9Gi", "local",
                                                                                    access_modes=["ReadOnlyMany"]),
                    claim("c1", "8Gi", "local"), claim_pod("p", "c1")])
    assert sim.pod("p").spec.node_name == "n1"
    bound = sim.get("PersistentVolumeClaim", "default/c1")
    assert bound.spec.volume_name == "pv-10g" and bound.status.phase == "Bound"
    assert ANN_BIND_COMPLETED in bound.metadata.annotations
    pv = sim.get("PersistentVolume", "pv-10g")
    assert pv.status.phase == "Bound" and pv.spec.claim_ref.uid == bound.metadata.uid
    assert sim.get("PersistentVolume", "pv-5g").status.phase == "Available"


def test_several_claims_of_a_pod_take_the_smallest_fits_smallest_claim_first():
    sim = simulate([node("n1"), local_class(),
                    persistent_volume("pv-5g", "5Gi", "local"), persistent_volume("pv-10g", "10Gi", "local"),
                    claim("big", "8Gi", "local"), claim("small", "4Gi", "local"), claim_pod("p", "big", "small")])
    assert sim.get("PersistentVolumeClaim", "default/small").spec.volume_name == "pv-5g"
    assert sim.get("PersistentVolumeClaim", "default/big").spec.volume_name == "pv-10g"


def test_local_pvs_pin_the_pod_to_their_node_and_pending_claims_say_why():
    sim = simulate([node("n1"), node("n2"), local_class(),
                    persistent_volume("pv-n2", "10Gi", "local", node_affinity={HOST: ["n2"]}),
                    claim("c1", "1Gi", "local"), claim("c2", "1Gi", "local"),
                    claim_pod("p1", "c1"), claim_pod("p2", "c2")])
    assert sim.pod("p1").spec.node_name == "n2"
    assert sim.pod("p2").spec.node_name == ""
    assert fit_reason(sim, "p2") == f"0/2 nodes are available: 2 {NO_PV}."
    events = sim.events("WaitForFirstConsumer")
    assert events and events[0].message == "waiting for first consumer to be created before binding"


def test_two_pods_racing_for_one_pv_only_one_wins():
    """The first pod's binding is assumed at Reserve: while its PreBind waits
    for the PV controller, the second pod already sees the PV as taken."""
    sim = simulate([node("n1"), node("n2"), local_class(), persistent_volume("pv1", "10Gi", "local"),
                    claim("c1", "1Gi", "local"), claim("c2", "1Gi", "local"),
                    claim_pod("p1", "c1"), claim_pod("p2", "c2")])
    placements = sim.placements()
    assert sorted(bool(n) for n in placements.values()) == [False, True]
    winner = "default/p1" if placements["default/p1"] else "default/p2"
    loser = "p2" if winner == "default/p1" else "p1"
    winner_claim = "default/c1" if winner == "default/p1" else "default/c2"
    assert sim.get("PersistentVolumeClaim", winner_claim).spec.volume_name == "pv1"
    rejected = [e for e in sim.events("FailedScheduling") if e.involved_object.name == loser]
    scheduled = sim.events("Scheduled")[0]
    assert rejected[0].message == (f"0/2 nodes are available: 2 {NO_PV}. "
                                   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert rejected[0].first_timestamp < scheduled.first_timestamp  # decided while the winner was binding


# --- provisioning --------------------------------------------------------------------------------


def test_dynamic_provisioning_with_allowed_topologies():
    zonal = storage_class("zonal", provisioner="disk.example.com", allowed_topologies={ZONE: ["a"]})
    sim = simulate([node("b1", labels={ZONE: "b"}), node("a1", labels={ZONE: "a"}), node("b2", labels={ZONE: "b"}),
                    zonal, claim("c1", "5Gi", "zonal"), claim_pod("p", "c1"),
                    claim("c2", "5Gi", "zonal"), claim_pod("in-b", "c2", node_selector={ZONE: "b"})])
    assert sim.pod("p").spec.node_name == "a1"
    provisioned = sim.get("PersistentVolumeClaim", "default/c1")
    assert provisioned.metadata.annotations[ANN_SELECTED_NODE] == "a1"
    assert provisioned.status.phase == "Bound"
    pv = sim.get("PersistentVolume", provisioned.spec.volume_name)
    assert pv.spec.capacity["storage"] == 5 * 2**30 and pv.spec.storage_class_name == "zonal"
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [(ZONE, ("a",))]
    assert sim.pod("in-b").spec.node_name == ""
    assert fit_reason(sim, "in-b") == ("0/3 nodes are available: 1 node(s) didn't match Pod's node "
                                              f"affinity/selector, 2 {NO_PV}.")


def test_no_provisioner_and_no_pv():
    sim = simulate([node("n1"), local_class(), claim("c1", "1Gi", "local"), claim_pod("p", "c1")])
    assert fit_reason(sim) == f"0/1 nodes are available: 1 {NO_PV}."


def test_storage_capacity_limits_where_volumes_are_provisioned():
    driver = from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.x"},
                            "spec": {"storageCapacity": True}})
    capacities = [from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                                 "metadata": {"name": f"cap-{zone}", "namespace": "kube-system"},
                                 "storageClassName": "fast", "capacity": size,
                                 "nodeTopology": {"matchLabels": {ZONE: zone}}})
                  for zone, size in (("a", "5Gi"), ("b", "50Gi"))]
    sim = simulate([node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}), node("c1", labels={ZONE: "c"}),
                    driver, *capacities, storage_class("fast", provisioner="csi.x"),
                    claim("small", "1Gi", "fast"), claim_pod("p-small", "small", node_selector={ZONE: "a"}),
                    claim("big", "10Gi", "fast"), claim_pod("p-big", "big")])
    assert sim.pod("p-small").spec.node_name == "a1"
    assert sim.pod("p-big").spec.node_name == "b1"

    sim = simulate([node("a1", labels={ZONE: "a"}), driver, capacities[0], storage_class("fast", provisioner="csi.x"),
                    claim("big", "10Gi", "fast"), claim_pod("p", "big")])
    assert fit_reason(sim) == "0/1 nodes are available: 1 node(s) did not have enough free storage."


# --- claims that stop the pod at PreFilter ----------------------------------------------------------


def test_unbound_immediate_claim_waits_for_the_pv_controller():
    sim = simulate([node("n1"), storage_class("manual", binding_mode="Immediate"),
                    claim("c1", "1Gi", "manual"), claim_pod("p", "c1")])
    assert fit_reason(sim) == "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert condition(sim, "p").reason == "Unschedulable"
    sim.create([persistent_volume("pv1", "2Gi", "manual")])
    sim.run()
    assert sim.get("PersistentVolumeClaim", "default/c1").spec.volume_name == "pv1"
    assert sim.pod("p").spec.node_name == "n1"


def test_missing_claim_then_created():
    sim = simulate([node("n1"), claim_pod("p", "data")])
    assert fit_reason(sim) == '0/1 nodes are available: persistentvolumeclaim "data" not found.'
    sim.create([storage_class("std", provisioner="disk.example.com", binding_mode="Immediate", default=True),
                claim("data")])
    sim.run()
    assert sim.pod("p").spec.node_name == "n1"
    assert sim.get("PersistentVolumeClaim", "default/data").spec.storage_class_name == "std"  # default class


def test_ephemeral_volume_claim_is_created_provisioned_and_deleted_with_the_pod():
    sim = simulate([node("n1"), storage_class("std", provisioner="disk.example.com", binding_mode="Immediate",
                                              default=True),
                    pod("web", cpu="100m", volumes=[ephemeral_volume("scratch", "2Gi")])])
    assert sim.pod("web").spec.node_name == "n1"
    created = sim.get("PersistentVolumeClaim", "default/web-scratch")
    (owner,) = created.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Pod", "web", sim.pod("web").metadata.uid, True)
    assert created.status.phase == "Bound"
    sim.cluster.delete("Pod", "web", "default")
    sim.run()
    assert [c.metadata.name for c in sim.cluster.list("PersistentVolumeClaim").items] == []
    assert sim.cluster.list("PersistentVolume").items == []  # provisioned with the Delete policy


def test_ephemeral_volume_whose_claim_belongs_to_someone_else():
    sim = Simulation()
    sim.create([node("n1"), claim("web-scratch")])
    sim.create([pod("web", cpu="100m", volumes=[ephemeral_volume("scratch")])])
    sim.run()
    assert fit_reason(sim) == ("0/1 nodes are available: PVC default/web-scratch was not created for pod "
                            "default/web (pod is not owner).")


# --- PreBind failures ------------------------------------------------------------------------------


def test_api_conflict_at_prebind_reverts_the_assumed_binding():
    objects = [node("n1"), local_class(), persistent_volume("pv1", "10Gi", "local"),
               claim("c1", "1Gi", "local"), claim("c2", "1Gi", "local"), claim_pod("p1", "c1"), claim_pod("p2", "c2")]
    sim = Simulation()
    sim.create(objects)
    refused = []

    def refuse_first_pv_write(verb, kind, target):
        if verb == "update" and kind == "PersistentVolume" and not refused:
            refused.append(target.metadata.name)
            raise Conflict('Operation cannot be fulfilled on persistentvolumes "pv1": the object has been modified; '
                           "please apply your changes to the latest version and try again")

    sim.cluster.fail_hook = refuse_first_pv_write
    sim.run()
    assert refused == ["pv1"]
    first = [e for e in sim.events("FailedScheduling") if e.involved_object.name == "p1"][0]
    assert first.message.startswith('running PreBind plugin "VolumeBinding": Operation cannot be fulfilled')
    # the next pod saw pv1 free again and got it; p1 then finds nothing left
    assert sim.pod("p2").spec.node_name == "n1"
    assert sim.get("PersistentVolumeClaim", "default/c2").spec.volume_name == "pv1"
    assert sim.pod("p1").spec.node_name == ""
    assert fit_reason(sim, "p1") == f"0/1 nodes are available: 1 {NO_PV}."


def test_bind_timeout_on_the_fake_clock_reverts_the_assumed_binding():
    cfg = config({"VolumeBinding": {"bindTimeoutSeconds": 5}})
    sim = stop_controllers(Simulation(cfg))
    sim.create([node("n1"), local_class(), persistent_volume("pv1", "10Gi", "local"),
                claim("c1", "1Gi", "local"), claim_pod("p1", "c1")])
    started = sim.clock.now()
    sim.run(until=started + 6)
    (event,) = sim.events("FailedScheduling")
    assert event.message == 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
    assert event.first_timestamp == started + 5
    assert condition(sim, "p1").reason == "SchedulerError"
    cache = binder(sim).pv_cache
    assert not cache.is_assumed("pv1")
    # the PV write went through (no API rollback), so the claim's retry finds its PV pre-bound
    assert cache.get("pv1").spec.claim_ref.name == "c1"
    assert sim.pod("p1").spec.node_name == ""


def test_a_pod_deleted_while_its_volumes_bind_fails_the_binding():
    sim = stop_controllers(Simulation())
    sim.create([node("n1"), local_class(), persistent_volume("pv1", "10Gi", "local"),
                claim("c1", "1Gi", "local"), claim_pod("p1", "c1")])
    sim.run(until=sim.clock.now() + 0.5)
    assert sim.scheduler.binding.waits
    sim.cluster.delete("Pod", "p1", "default")
    sim.run(until=sim.clock.now() + 2)
    assert not sim.scheduler.binding.waits
    assert not binder(sim).pv_cache.is_assumed("pv1")


# --- Score, args, hints ------------------------------------------------------------------------------


def test_score_with_a_shape_prefers_the_fullest_pv():
    cfg = config({"VolumeBinding": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}})
    sim = simulate([node("n1"), node("n2"), local_class(),
                    persistent_volume("roomy", "100Gi", "local", node_affinity={HOST: ["n1"]}),
                    persistent_volume("snug", "10Gi", "local", node_affinity={HOST: ["n2"]}),
                    claim("c1", "8Gi", "local"), claim_pod("p", "c1")], cfg)
    assert sim.pod("p").spec.node_name == "n2"
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["VolumeBinding"]
    sim.create([claim("c2", "8Gi", "local"), persistent_volume("roomy2", "100Gi", "local",
                                                               node_affinity={HOST: ["n1"]})])
    sim.scheduler.informers.pump()
    infos = list(sim.scheduler.snapshot.nodes)
    state, _, status = run_pre_filter(plugin, claim_pod("q", "c2"), infos)
    assert status is None
    for info in infos:
        assert plugin.filter(state, claim_pod("q", "c2"), info) is None or info.name == "n2"
    assert plugin.pre_score(state, claim_pod("q", "c2"), infos) is None
    n1 = next(i for i in infos if i.name == "n1")
    assert plugin.score(state, claim_pod("q", "c2"), n1) == 8  # 8Gi of 100Gi -> 8 %


def test_without_a_shape_the_default_prefers_the_roomiest_pv():
    """StorageCapacityScoring on (1.37): SetDefaults_VolumeBindingArgs' shape {0 %: 10, 100 %: 0} scores the
    emptiest volume highest, so with every other plugin tied the pod goes where its claim leaves most room."""
    sim = simulate([node("n1"), node("n2"), local_class(),
                    persistent_volume("roomy", "100Gi", "local", node_affinity={HOST: ["n1"]}),
                    persistent_volume("snug", "10Gi", "local", node_affinity={HOST: ["n2"]}),
                    claim("c1", "8Gi", "local"), claim_pod("p", "c1")])
    assert sim.pod("p").spec.node_name == "n1"
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["VolumeBinding"]
    assert plugin.pre_score(CycleState(), pod("p"), []).code.name == "SKIP"  # no claims: nothing to score
    gi = 1024**3
    assert plugin._class_score({"local": [8 * gi, 100 * gi]}) == 92  # 8 % used
    assert plugin._class_score({"local": [8 * gi, 10 * gi]}) == 20  # 80 % used


@pytest.mark.parametrize("args, message", [
    ({"bindTimeoutSeconds": -1}, "bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be a negative value"),
    ({"shape": [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 2}]},
     "shape[1].utilization: values must be sorted in increasing order"),
    ({"bindTimeout": 3}, "bindTimeout: unknown field"),
])
def test_args_are_validated(args, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Simulation(config({"VolumeBinding": args}))


def test_queueing_hints():
    plugin = make(VolumeBinding, objects=[claim("c1", storage_class="z")])
    hints = {str(e.event.resource): e.hint for e in plugin.events_to_register()}
    p = claim_pod("p", "c1")
    claim_hint = hints["PersistentVolumeClaim"]
    assert claim_hint(p, None, claim("c1")) == QueueingHint.QUEUE
    assert claim_hint(p, None, claim("other")) == QueueingHint.QUEUE_SKIP
    assert claim_hint(p, None, claim("c1", namespace="elsewhere")) == QueueingHint.QUEUE_SKIP
    sc_hint = hints["StorageClass"]
    zonal = storage_class("z", allowed_topologies={ZONE: ["a"]})
    assert sc_hint(p, None, zonal) == QueueingHint.QUEUE
    assert sc_hint(p, zonal, storage_class("z", allowed_topologies={ZONE: ["a", "b"]})) == QueueingHint.QUEUE
    assert sc_hint(p, zonal, zonal) == QueueingHint.QUEUE_SKIP
    assert sc_hint(p, None, storage_class("other")) == QueueingHint.QUEUE_SKIP  # no claim of the pod names it
