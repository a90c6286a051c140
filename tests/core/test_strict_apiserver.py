"""The fake API server is as strict as kube-apiserver where the daemon meets it (issue 30), through the real client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import pytest

from fake_apiserver import SERVICE_ACCOUNT_TOKEN, FakeAPIServer
from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import Event
from kubesched.core.api.meta import ObjectMeta, ObjectReference
from kubesched.core.cluster.client import Forbidden, Invalid
from kubesched.core.cluster.kube import LIST_PAGE_SIZE, KubernetesCluster
from kubesched.testing import node, pod

RBAC = Path(__file__).resolve().parents[2] / "deploy" / "rbac.yaml"


def client(apiserver, tmp_path, token="fake-token"):
    return KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / token, token=token), qps=0,
                                             backoff_factor=0.01)


def test_a_running_pod_is_deleted_gracefully_and_one_that_never_ran_at_once(kube, apiserver):
    kube.create(node("n1"))
    running = kube.create(pod("running", node_name="n1", terminationGracePeriodSeconds=10))
    kube.create(pod("pending"))
    kube.delete("Pod", "running", "default", uid=running.metadata.uid)
    kube.delete("Pod", "pending", "default")
    (left,) = kube.list("Pod").items
    assert left.metadata.name == "running"
    assert left.metadata.deletion_timestamp == apiserver.cluster.clock.now() + 10
    assert apiserver.finish_terminating_pods() == ["default/running"]
    assert kube.list("Pod").items == []


def test_a_created_object_s_status_is_reset(kube):
    sent = pod("web", node_name="")
    sent = attrs.evolve(sent, status=attrs.evolve(sent.status, phase="Running", nominated_node_name="n9"))
    created = kube.create(sent)
    assert (created.status.phase, created.status.nominated_node_name) == ("Pending", "")


def test_an_event_s_fields_are_immutable_but_its_series(kube, apiserver):
    regarding = kube.create(pod("web"))
    event = Event(metadata=ObjectMeta(name="web.1", namespace="default"), reason="FailedScheduling",
                  message="0/1 nodes are available", type="Warning", first_timestamp=1.0, last_timestamp=1.0,
                  involved_object=ObjectReference(kind="Pod", name="web", namespace="default",
                                                  uid=regarding.metadata.uid),
                  reporting_component="kubesched", action="Scheduling")
    kube.create(event)
    kube.update(attrs.evolve(event, count=2, last_timestamp=5.0))  # a repeat: a PATCH of the series
    assert kube.flush() and kube.events_dropped == 0
    stored = apiserver.events["default/web.1"]
    assert stored["series"]["count"] == 2 and stored["note"] == "0/1 nodes are available"
    assert [(m, ctype) for m, path, ctype, _ in apiserver.writes if path.endswith("/events/web.1")] == [
        ("PATCH", "application/strategic-merge-patch+json")]
    changed = json.dumps({**stored, "note": "another message"}).encode()
    request = urllib.request.Request(f"{apiserver.url}/apis/events.k8s.io/v1/namespaces/default/events/web.1",
                                     data=changed, method="PUT", headers={"Authorization": "Bearer fake-token",
                                                                          "Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 422
    assert "note: Invalid value: 'another message': field is immutable" in json.load(refused.value)["message"]


def test_lists_page_with_limit_and_continue_and_the_watch_cache_answers_whole(kube, apiserver):
    for index in range(LIST_PAGE_SIZE + 5):
        apiserver.cluster.create(node(f"n{index:04}"))
    listed = kube.list("Node")  # resourceVersion=0: from the watch cache, whole
    assert len(listed.items) == LIST_PAGE_SIZE + 5
    relisted = kube.list("Node", resource_version="")  # a quorum read: in pages
    assert [n.metadata.name for n in relisted.items] == sorted(n.metadata.name for n in listed.items)
    queries = [q for m, p, q in apiserver.requests if m == "GET" and p == "/api/v1/nodes"]
    assert queries == [{"limit": str(LIST_PAGE_SIZE), "resourceVersion": "0"}, {"limit": str(LIST_PAGE_SIZE)},
                       {"limit": str(LIST_PAGE_SIZE), "continue": queries[2]["continue"]}]


def test_resource_kinds_are_used_at_the_newest_version_the_server_serves(tmp_path):
    rule = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
                          "spec": {"taint": {"key": "k", "effect": "NoExecute"}}})
    with FakeAPIServer(served={"DeviceTaintRule": ("resource.k8s.io/v1alpha3",)}) as apiserver:
        apiserver.cluster.create(rule)
        kube = client(apiserver, tmp_path)
        (listed,) = kube.list("DeviceTaintRule").items
        assert listed.metadata.name == "r"
        assert kube.list("ResourceClaim").items == []
        paths = [p for m, p, _ in apiserver.requests if m == "GET"]
        assert "/apis/resource.k8s.io/v1alpha3/devicetaintrules" in paths
        assert "/apis/resource.k8s.io/v1/devicetaintrules" not in paths
        assert "/apis/resource.k8s.io/v1/resourceclaims" in paths


def test_rbac_refuses_what_deploy_rbac_yaml_does_not_grant_with_upstream_s_message(tmp_path):
    with FakeAPIServer(rbac=RBAC) as apiserver:
        apiserver.cluster.create(node("n1"))
        admin = client(apiserver, tmp_path)
        scheduler = client(apiserver, tmp_path, SERVICE_ACCOUNT_TOKEN)
        created = admin.create(pod("web"))
        assert [n.metadata.name for n in scheduler.list("Node").items] == ["n1"]
        scheduler.bind("default", "web", created.metadata.uid, "n1")
        with pytest.raises(Forbidden) as refused:
            scheduler.delete("Node", "n1")
        assert refused.value.message == ('nodes "n1" is forbidden: User "system:serviceaccount:kube-system:kubesched" '
                                         'cannot delete resource "nodes" in API group "" at the cluster scope')
        with pytest.raises(Forbidden, match='cannot create resource "pods" in API group "" in the namespace "default"'):
            scheduler.create(pod("other"))
        assert admin.get("Node", "n1")  # an admin token may do anything


def test_claim_status_rules_reach_the_client_as_422(kube):
    claim = kube.create(from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}))
    with pytest.raises(Invalid, match="status.reservedFor: Forbidden: may not be specified when `allocated` is not set"):
        kube.patch("ResourceClaim", "gpu", {"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}},
                   "default", subresource="status", uid=claim.metadata.uid)
