"""PATCH on the embedded cluster: strategic merge and JSON merge patches of an object and its status."""

from __future__ import annotations

import copy

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import MODIFIED, BadRequest, Conflict, Invalid, NotFound
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.cluster.patch import MERGE_PATCH, STRATEGIC_MERGE_PATCH, apply_patch
from kubesched.testing import pod, resource_claim


@pytest.fixture
def cluster():
    return MemoryCluster(FakeClock(1000.0))


def _with_conditions(cluster, *conditions):
    created = cluster.create(pod("web"))
    return cluster.patch("Pod", "web", {"status": {"conditions": list(conditions)}}, "default",
                         subresource="status", patch_type=MERGE_PATCH) if conditions else created


def test_a_strategic_status_patch_merges_pod_conditions_on_type(cluster):
    _with_conditions(cluster, {"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"})
    patched = cluster.patch("Pod", "web", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
        {"type": "DisruptionTarget", "status": "True"},
    ]}}, "default", subresource="status")
    assert [(c.type, c.status, c.reason) for c in patched.status.conditions] == [
        ("Ready", "False", ""), ("PodScheduled", "False", "Unschedulable"), ("DisruptionTarget", "True", "")]
    assert cluster.get("Pod", "web", "default") == patched


def test_a_merge_patch_replaces_the_list_and_null_deletes(cluster):
    _with_conditions(cluster, {"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"})
    cluster.patch("Pod", "web", {"status": {"nominatedNodeName": "n1"}}, "default", subresource="status")
    patched = cluster.patch("Pod", "web", {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}],
                                                      "nominatedNodeName": None}},
                            "default", subresource="status", patch_type=MERGE_PATCH)
    assert [(c.type, c.status) for c in patched.status.conditions] == [("PodScheduled", "False")]
    assert patched.status.nominated_node_name == ""


def test_strategic_directives_delete_replace_and_order(cluster):
    _with_conditions(cluster, {"type": "A", "status": "True"}, {"type": "B", "status": "True"},
                     {"type": "C", "status": "True"})
    deleted = cluster.patch("Pod", "web", {"status": {"conditions": [{"type": "B", "$patch": "delete"}]}},
                            "default", subresource="status")
    assert [c.type for c in deleted.status.conditions] == ["A", "C"]
    ordered = cluster.patch("Pod", "web", {"status": {"$setElementOrder/conditions": [{"type": "C"}, {"type": "A"}],
                                                      "conditions": [{"type": "A", "status": "False"}]}},
                            "default", subresource="status")
    assert [(c.type, c.status) for c in ordered.status.conditions] == [("C", "True"), ("A", "False")]
    replaced = cluster.patch("Pod", "web", {"status": {"conditions": [{"$patch": "replace"}, {"type": "D"}]}},
                             "default", subresource="status")
    assert [c.type for c in replaced.status.conditions] == ["D"]


def test_finalizers_are_united_and_labels_merged_on_the_main_resource(cluster):
    cluster.create(pod("web", labels={"app": "web"}))
    cluster.patch("Pod", "web", {"metadata": {"finalizers": ["a"], "labels": {"tier": "1"}}}, "default")
    patched = cluster.patch("Pod", "web", {"metadata": {"finalizers": ["b", "a"], "labels": {"app": None}}},
                            "default")
    assert patched.metadata.finalizers == ("a", "b")
    assert patched.metadata.labels == {"tier": "1"}
    removed = cluster.patch("Pod", "web", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, "default")
    assert removed.metadata.finalizers == ("b",)


def test_the_main_resource_patch_leaves_status_and_the_status_patch_leaves_the_rest(cluster):
    cluster.create(pod("web"))
    main = cluster.patch("Pod", "web", {"metadata": {"annotations": {"a": "1"}}, "status": {"phase": "Running"}},
                         "default")
    assert main.metadata.annotations == {"a": "1"} and main.status.phase == ""
    status = cluster.patch("Pod", "web", {"metadata": {"annotations": {"a": "2"}}, "status": {"phase": "Running"}},
                           "default", subresource="status")
    assert status.metadata.annotations == {"a": "1"} and status.status.phase == "Running"


def test_claim_reserved_for_merges_on_uid(cluster):
    cluster.create(resource_claim("gpu"))
    cluster.patch("ResourceClaim", "gpu", {"status": {"allocation": {"devices": {"results": [
        {"request": "req-0", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}}}},
        "default", subresource="status")
    for uid in ("u1", "u2"):
        claim = cluster.patch("ResourceClaim", "gpu", {"status": {"reservedFor": [
            {"resource": "pods", "name": uid, "uid": uid}]}}, "default", subresource="status")
    assert [r.uid for r in claim.status.reserved_for] == ["u1", "u2"]
    claim = cluster.patch("ResourceClaim", "gpu", {"status": {"reservedFor": [{"uid": "u1", "$patch": "delete"}]}},
                          "default", subresource="status")
    assert [r.uid for r in claim.status.reserved_for] == ["u2"]


def test_meta_conditions_of_any_kind_merge_on_type():
    """A kind whose status holds meta/v1 Conditions (a PodDisruptionBudget here, a PodGroup alike) needs no table entry."""
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "default"},
           "status": {"conditions": [{"type": "DisruptionAllowed", "status": "True"}]}}
    cls = type(from_manifest(pdb))
    patched = apply_patch(pdb, {"status": {"conditions": [{"type": "Other", "status": "False"}]}},
                          STRATEGIC_MERGE_PATCH, cls)
    assert [c["type"] for c in patched["status"]["conditions"]] == ["DisruptionAllowed", "Other"]
    assert pdb["status"]["conditions"] == [{"type": "DisruptionAllowed", "status": "True"}]  # not changed


def test_a_strategic_patch_copies_what_it_changes_and_leaves_the_stored_document():
    """Every directive changes the result only: the stored manifest (shared with the result where untouched) stays."""
    stored = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "b"],
                                                               "labels": {"x": "1", "y": "2"}},
              "status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"},
                                        {"type": "C", "status": "True"}], "phase": "Pending"}}
    before = copy.deepcopy(stored)
    patched = apply_patch(stored, {
        "metadata": {"labels": {"x": None, "z": "3"}, "$deleteFromPrimitiveList/finalizers": ["a"]},
        "status": {"$setElementOrder/conditions": [{"type": "C"}, {"type": "A"}],
                   "conditions": [{"type": "A", "status": "False"}, {"type": "B", "$patch": "delete"}],
                   "$retainKeys": ["conditions"]}}, STRATEGIC_MERGE_PATCH, type(from_manifest(stored)))
    assert stored == before
    assert patched["metadata"] == {"name": "p", "finalizers": ["b"], "labels": {"y": "2", "z": "3"}}
    assert patched["status"] == {"conditions": [{"type": "C", "status": "True"}, {"type": "A", "status": "False"}]}


def test_preconditions_uid_and_resource_version(cluster):
    created = cluster.create(pod("web"))
    with pytest.raises(Invalid, match='metadata.uid: Invalid value: "other": field is immutable'):
        cluster.patch("Pod", "web", {"status": {"phase": "Running"}}, "default", subresource="status", uid="other")
    with pytest.raises(Conflict, match="the object has been modified"):
        cluster.patch("Pod", "web", {"status": {"phase": "Running"}}, "default", subresource="status",
                      resource_version="1" + created.metadata.resource_version)
    patched = cluster.patch("Pod", "web", {"status": {"phase": "Running"}}, "default", subresource="status",
                            uid=created.metadata.uid, resource_version=created.metadata.resource_version)
    assert patched.status.phase == "Running"
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)


def test_bad_patches_are_refused(cluster):
    cluster.create(pod("web"))
    with pytest.raises(NotFound):
        cluster.patch("Pod", "gone", {}, "default")
    with pytest.raises(BadRequest, match="not supported"):
        cluster.patch("Pod", "web", {}, "default", patch_type="application/json-patch+json")
    with pytest.raises(BadRequest, match="does not match the name on the URL"):
        cluster.patch("Pod", "web", {"metadata": {"name": "other"}}, "default")
    with pytest.raises(Invalid, match="spec.priority"):
        cluster.patch("Pod", "web", {"spec": {"priority": "high"}}, "default")
    with pytest.raises(BadRequest, match="Unknown patch type"):
        cluster.patch("Pod", "web", {"status": {"$patch": "sideways"}}, "default", subresource="status")
    # a status patch decodes the status and the metadata it carries alone: errors name the field from the top
    with pytest.raises(Invalid, match=r'Pod "web" is invalid: status\.conditions\[0\]\.status: '):
        cluster.patch("Pod", "web", {"status": {"conditions": [{"type": "Ready", "status": 5}]}}, "default",
                      subresource="status")
    with pytest.raises(Invalid, match=r'Pod "web" is invalid: metadata\.labels'):
        cluster.patch("Pod", "web", {"metadata": {"labels": 5}, "status": {"phase": "Running"}}, "default",
                      subresource="status")
    with pytest.raises(BadRequest, match="does not match the name on the URL"):
        cluster.patch("Pod", "web", {"metadata": {"name": "other"}, "status": {}}, "default", subresource="status")
    with pytest.raises(Invalid, match=r'Pod "web" is invalid: metadata\.uid: expected a string, got number 5'):
        cluster.patch("Pod", "web", {"metadata": {"uid": 5}, "status": {}}, "default", subresource="status")


def test_a_patch_is_one_watch_event(cluster):
    cluster.create(pod("web"))
    seen = []
    cluster.watch("Pod", cluster.resource_version(), seen.append)
    cluster.patch("Pod", "web", {"status": {"nominatedNodeName": "n1"}}, "default", subresource="status")
    assert [(e.type, e.obj.status.nominated_node_name) for e in seen] == [(MODIFIED, "n1")]
