"""The shared volume rules (claims of a pod, PV matching, binding), CSI
migration (translation, attach limit keys), the storage objects' manifests
and the default StorageClass admission of the embedded cluster."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest, to_manifest
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.meta import OwnerReference, evolve_meta
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.volume.claims import (
    ANN_BOUND_BY_CONTROLLER,
    bind_volume_to_claim,
    claim_class,
    find_matching_volume,
    pod_pvcs,
    topology_terms_match,
    volume_is_for_pod,
)
from kubesched.core.volume.csi_translation import (
    attach_limit_key,
    csi_source,
    ebs_volume_id,
    translate_pv,
)
from kubesched.testing import claim, ephemeral_volume, node, persistent_volume, pod, storage_class

ZONE = "topology.kubernetes.io/zone"


def test_a_pods_claims_include_its_ephemeral_volumes():
    p = pod("web", volumes=[{"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                            ephemeral_volume("scratch"), {"name": "s", "secret": {"secretName": "x"}}])
    assert list(pod_pvcs(p)) == [("data", False), ("web-scratch", True)]


def test_an_ephemeral_claim_must_be_controlled_by_the_pod():
    p = evolve_meta(pod("web"), uid="u1")
    owned = evolve_meta(claim("web-scratch"), owner_references=(
        OwnerReference(kind="Pod", name="web", uid="u1", controller=True),))
    assert volume_is_for_pod(p, owned) is None
    assert volume_is_for_pod(p, claim("web-scratch")) == ("PVC default/web-scratch was not created for pod "
                                                          "default/web (pod is not owner)")


def test_claim_class_prefers_the_beta_annotation():
    assert claim_class(claim("c", storage_class="fast")) == "fast"
    assert claim_class(claim("c")) == ""
    assert claim_class(claim("c", storage_class="fast",
                             annotations={"volume.beta.kubernetes.io/storage-class": "old"})) == "old"


class TestFindMatchingVolume:
    def test_smallest_available_fit_of_the_claims_class(self):
        volumes = [persistent_volume("20g", "20Gi", "c"), persistent_volume("10g", "10Gi", "c"),
                   persistent_volume("5g", "5Gi", "c"), persistent_volume("other", "10Gi", "d"),
                   persistent_volume("pending", "9Gi", "c", phase="Pending"),
                   persistent_volume("block", "9Gi", "c", volumeMode="Block")]
        assert find_matching_volume(claim("x", "8Gi", "c"), volumes, node("n1")).metadata.name == "10g"
        assert find_matching_volume(claim("x", "8Gi", "c"), volumes, node("n1"), excluded=["10g"]).metadata.name \
            == "20g"
        assert find_matching_volume(claim("x", "30Gi", "c"), volumes, node("n1")) is None

    def test_a_pre_bound_volume_wins_unless_its_node_affinity_rejects_the_node(self):
        pre_bound = persistent_volume("mine", "50Gi", "c", claim=("default", "x"), phase="Pending",
                                      node_affinity={"kubernetes.io/hostname": ["n1"]})
        volumes = [persistent_volume("small", "10Gi", "c"), pre_bound]
        assert find_matching_volume(claim("x", "1Gi", "c"), volumes, node("n1")).metadata.name == "mine"
        assert find_matching_volume(claim("x", "1Gi", "c"), volumes, node("n2")) is None
        # the controller path with delayed binding only takes pre-bound volumes
        assert find_matching_volume(claim("x", "1Gi", "c"), volumes, delay_binding=True).metadata.name == "mine"
        assert find_matching_volume(claim("y", "1Gi", "c"), volumes, delay_binding=True) is None

    def test_selector_access_modes_node_affinity(self):
        volumes = [persistent_volume("fast", "1Gi", "c", labels={"tier": "fast"}),
                   persistent_volume("rox", "1Gi", "c", access_modes=["ReadOnlyMany"], labels={"tier": "slow"}),
                   persistent_volume("pinned", "1Gi", "c", labels={"tier": "slow"},
                                     node_affinity={ZONE: ["a"]})]
        wants_slow = claim("x", "1Gi", "c", selector={"matchLabels": {"tier": "slow"}})
        assert find_matching_volume(wants_slow, volumes, node("n1", labels={ZONE: "a"})).metadata.name == "pinned"
        assert find_matching_volume(wants_slow, volumes, node("n1", labels={ZONE: "b"})) is None


def test_binding_a_volume_to_a_claim():
    c = evolve_meta(claim("x"), uid="u1")
    pv, dirty = bind_volume_to_claim(persistent_volume("pv"), c)
    assert dirty and pv.spec.claim_ref.uid == "u1" and pv.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    again, dirty = bind_volume_to_claim(pv, c)
    assert again is pv and not dirty
    user_bound, dirty = bind_volume_to_claim(persistent_volume("pv", claim=("default", "x")), c)
    assert dirty and ANN_BOUND_BY_CONTROLLER not in user_bound.metadata.annotations


def test_topology_terms():
    sc = storage_class("z", allowed_topologies={ZONE: ["a", "b"], "rack": ["r1"]})
    assert topology_terms_match(sc.allowed_topologies, {ZONE: "b", "rack": "r1"})
    assert not topology_terms_match(sc.allowed_topologies, {ZONE: "b"})
    assert topology_terms_match((), {})


def test_in_tree_pvs_translate_to_csi_with_zone_topology():
    pv = persistent_volume("pv", labels={ZONE: "us-1a__us-1b"},
                           awsElasticBlockStore={"volumeID": "aws://us-1a/vol-123"})
    translated = translate_pv(pv)
    assert (translated.spec.csi.driver, translated.spec.csi.volume_handle) == ("ebs.csi.aws.com", "vol-123")
    assert translated.spec.aws_elastic_block_store is None
    (term,) = translated.spec.node_affinity.required.node_selector_terms
    assert [(r.key, r.values) for r in term.match_expressions] == [
        ("topology.ebs.csi.aws.com/zone", ("us-1a", "us-1b"))]
    with_affinity = persistent_volume("pv", node_affinity={ZONE: ["z"], "rack": ["r"]},
                                      gcePersistentDisk={"pdName": "disk"})
    (term,) = translate_pv(with_affinity).spec.node_affinity.required.node_selector_terms
    assert [r.key for r in term.match_expressions] == ["topology.gke.io/zone", "rack"]
    plain = persistent_volume("pv", csi={"driver": "d", "volumeHandle": "h"})
    assert translate_pv(plain) is plain and csi_source(plain.spec) == ("d", "h")


def test_attach_limit_keys():
    assert ebs_volume_id("aws:///vol-1") == "vol-1" and ebs_volume_id("vol-2") == "vol-2"
    assert attach_limit_key("ebs.csi.aws.com") == "attachable-volumes-csi-ebs.csi.aws.com"
    long = attach_limit_key("a-very-long-driver-name.storage.example.com")
    assert len(long) < 63 and long.startswith("attachable-volumes-csi-a-very-long-driver-na")


def test_storage_manifests_round_trip_and_report_bad_fields():
    doc = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
           "spec": {"drivers": [{"name": "d", "nodeID": "n1", "topologyKeys": ["zone"], "allocatable": {"count": 3}}]}}
    assert to_manifest(from_manifest(doc)) == doc
    capacity = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": "c", "namespace": "kube-system"}, "storageClassName": "fast",
                "nodeTopology": {"matchLabels": {ZONE: "a"}}, "capacity": "10Gi", "maximumVolumeSize": "1Gi"}
    parsed = from_manifest(capacity)
    assert (parsed.capacity, parsed.maximum_volume_size) == (10 * 2**30, 2**30)
    assert to_manifest(parsed) == capacity
    with pytest.raises(ManifestError, match="^capacity: quantities must match"):
        from_manifest({**capacity, "capacity": "lots"})
    with pytest.raises(ManifestError, match="^volumeBindingMode: Unsupported value: 'Later'"):
        from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"},
                       "volumeBindingMode": "Later"})
    pv = to_manifest(persistent_volume("pv", awsElasticBlockStore={"volumeID": "vol-1"}, local={"path": "/x"}))
    assert pv["spec"]["awsElasticBlockStore"] == {"volumeID": "vol-1"} and pv["spec"]["local"] == {"path": "/x"}


def test_new_claims_get_the_default_storage_class():
    cluster = MemoryCluster()
    assert cluster.create(claim("before")).spec.storage_class_name is None
    cluster.create(storage_class("std", default=True))
    assert cluster.create(claim("after")).spec.storage_class_name == "std"
    assert cluster.create(claim("explicit", storage_class="")).spec.storage_class_name == ""
