"""KubernetesCluster through the real `kubernetes` client against the fake API server."""

from __future__ import annotations

import types

import attrs
import pytest

from fake_apiserver import wait_until
from kubesched.core.api import from_manifest
from kubesched.core.api.convert import structure
from kubesched.core.api.resource_v1 import AllocationResult, ResourceClaimConsumerReference
from kubesched.core.clock import RealClock
from kubesched.core.cluster.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    Fenced,
    Invalid,
    NotFound,
    retry_on_conflict,
)
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.observability.events import EventRecorder
from kubesched.testing import node, pod


def test_objects_round_trip_with_kubernetes_semantics(kube, apiserver):
    kube.create(node("n1", cpu="8"))
    created = kube.create(pod("web", cpu="500m"))
    assert created.metadata.uid and created.metadata.resource_version
    assert kube.get("Node", "n1").allocatable["cpu"] == 8000
    assert [p.metadata.name for p in kube.list("Pod", "default").items] == ["web"]
    assert kube.list("Pod").resource_version == apiserver.cluster.resource_version()
    with pytest.raises(AlreadyExists):
        kube.create(pod("web"))
    labelled = kube.update(attrs.evolve(created, metadata=attrs.evolve(created.metadata, labels={"app": "web"})))
    with pytest.raises(Conflict):
        kube.update(created)  # stale resourceVersion
    assert kube.get("Pod", "web", "default").metadata.labels == {"app": "web"}
    assert labelled.metadata.resource_version != created.metadata.resource_version
    with pytest.raises(Conflict):
        kube.delete("Pod", "web", "default", uid="someone-else")
    kube.delete("Pod", "web", "default", uid=created.metadata.uid)
    with pytest.raises(NotFound):
        kube.get("Pod", "web", "default")
    assert ("DELETE", "/api/v1/namespaces/default/pods/web", {}) in apiserver.requests


def test_binding_despite_the_status_reply_and_a_conflict_for_another_node(kube, apiserver):
    kube.create(node("n1"))
    kube.create(node("n2"))
    created = kube.create(pod("web"))
    kube.bind("default", "web", created.metadata.uid, "n1")
    assert apiserver.cluster.get("Pod", "web", "default").spec.node_name == "n1"
    with pytest.raises(Conflict, match="already assigned"):
        kube.bind("default", "web", created.metadata.uid, "n2")
    with pytest.raises(NotFound):
        kube.bind("default", "gone", "", "n1")


def test_5xx_answers_are_retried_as_client_go_retries_them(kube, apiserver):
    kube.create(node("n1"))
    created = kube.create(pod("web"))
    apiserver.fail("GET", r"/pods/web$", code=503, times=2)  # idempotent: retried with backoff
    assert kube.get("Pod", "web", "default").metadata.uid == created.metadata.uid
    apiserver.fail("POST", r"/pods/web/binding$", code=429, times=2, retry_after=0)  # the server asks for it again
    kube.bind("default", "web", created.metadata.uid, "n1")
    assert apiserver.count("GET", r"/pods/web$") == 3 and apiserver.count("POST", r"/pods/web/binding$") == 3
    assert apiserver.cluster.get("Pod", "web", "default").spec.node_name == "n1"
    apiserver.fail("POST", r"/pods$", code=503, times=1)  # a POST answered 5xx without Retry-After: not again
    with pytest.raises(ApiError, match="injected failure"):
        kube.create(pod("other"))
    assert apiserver.count("POST", r"/pods$") == 2  # web, then other once


def test_a_timed_out_post_is_never_sent_twice(apiserver, tmp_path):
    kube = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kc"), qps=0, backoff_factor=0.01,
                                             request_timeout=0.3)
    # stored directly: only the stalled requests below go through the short timeout (a loaded machine
    # could take 0.3 s to answer an ordinary one)
    apiserver.cluster.create(node("n1"))
    created = apiserver.cluster.create(pod("web"))
    apiserver.stall("POST", r"/resourceclaims$")
    with pytest.raises(ApiError, match="timed out"):
        kube.create(from_manifest({  # with generateName: a second try would store a second claim
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"generateName": "web-extended-resources-", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}))
    apiserver.stall("PUT", r"/pods/web$")  # a PUT naming its resourceVersion may be retried: it conflicts if it got in
    with pytest.raises(Conflict):
        kube.update(attrs.evolve(created, metadata=attrs.evolve(created.metadata, labels={"a": "b"})))
    assert apiserver.cluster.get("Pod", "web", "default").metadata.labels == {"a": "b"}
    assert apiserver.count("POST", r"/resourceclaims$") == 1 and apiserver.count("PUT", r"/pods/web$") == 2


ALLOCATION = structure({"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1",
                                                  "device": "gpu-0"}]}}, AllocationResult)


def test_a_conflicting_claim_status_update_is_retried_on_a_fresh_read(kube, apiserver):
    claim = kube.create(from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }))
    writes = []

    def reserve(current):
        if not writes:  # someone else writes between our read and our write
            kube.update(attrs.evolve(current, metadata=attrs.evolve(current.metadata, labels={"touched": "yes"})))
        writes.append(current.metadata.resource_version)
        consumer = ResourceClaimConsumerReference(resource="pods", name="p", uid="p-uid")
        return attrs.evolve(current, status=attrs.evolve(current.status, allocation=ALLOCATION, reserved_for=(consumer,)))

    stored = retry_on_conflict(kube, claim, lambda current: kube.update_status(reserve(current)))
    assert len(writes) == 2 and writes[0] == claim.metadata.resource_version
    assert stored.metadata.labels == {"touched": "yes"}
    assert [c.name for c in apiserver.cluster.get("ResourceClaim", "gpu", "default").status.reserved_for] == ["p"]
    assert apiserver.count("PUT", r"/resourceclaims/gpu/status$") == 2


def test_events_are_written_as_events_k8s_io_v1_and_repeats_become_a_series(kube, apiserver):
    target = kube.create(pod("web"))
    recorder = EventRecorder(kube, RealClock(), "kubesched")
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available: 3 Insufficient cpu.")
    assert kube.flush()  # events are written by their own thread
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available: 3 Insufficient cpu.")
    assert kube.flush()
    assert recorder.dropped == 0 and kube.events_dropped == 0
    [event] = apiserver.events.values()
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["regarding"]["uid"] == target.metadata.uid
    assert event["note"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert event["reportingController"] == "kubesched" and event["action"] == "Scheduling"
    assert event["series"]["count"] == 2
    read = kube.get("Event", event["metadata"]["name"], "default")
    assert (read.reason, read.count, read.involved_object.name) == ("FailedScheduling", 2, "web")


class Recorder:
    """Informer handlers that log what they see."""

    def __init__(self, informers: Informers, kind: str = "Pod"):
        self.seen: list[tuple[str, str]] = []
        informers.add_handlers(kind, lambda o: self.seen.append(("add", o.metadata.name)),
                               lambda old, new: self.seen.append(("update", new.metadata.name)),
                               lambda o: self.seen.append(("delete", o.metadata.name)))


def pumped(informers: Informers, predicate):
    def check():
        informers.pump()
        return predicate()
    return check


def test_watch_delivers_changes_and_resumes_from_a_bookmark(kube, apiserver):
    informers = Informers(kube)
    seen = Recorder(informers)
    kube.create(pod("a"))
    informers.start()
    wait_until(lambda: apiserver.watch_count() == 1, apiserver.changed)
    kube.create(node("n1"))  # another kind moves the resourceVersion on
    apiserver.bookmark()
    mark = apiserver.cluster.resource_version()
    apiserver.break_watches()
    wait_until(lambda: apiserver.count("GET", r"^/api/v1/pods$") >= 3, apiserver.changed)
    resumed = [q for m, p, q in apiserver.requests if p == "/api/v1/pods" and q.get("watch")][-1]
    assert resumed["resourceVersion"] == mark and resumed["allowWatchBookmarks"] == "true"
    kube.create(pod("b"))
    wait_until(pumped(informers, lambda: ("add", "b") in seen.seen), informers.wakeup)
    assert seen.seen == [("add", "a"), ("add", "b")]
    informers.stop()


def test_a_watch_started_while_shutting_down_still_delivers_within_the_grace(kube, apiserver):
    """A watch asks for (connect, read) timeouts; the shutdown grace cuts both (it used to fail to compare them)."""
    informers = Informers(kube)
    seen = Recorder(informers)
    kube.close(grace=30.0)
    informers.start()
    kube.create(pod("late"))
    wait_until(pumped(informers, lambda: ("add", "late") in seen.seen), informers.wakeup)
    informers.stop()


def test_a_broken_watch_and_a_410_lose_no_delete_and_duplicate_nothing(kube, apiserver):
    informers = Informers(kube)
    seen = Recorder(informers)
    keep = kube.create(pod("keep"))
    doomed = kube.create(pod("doomed"))
    informers.start()
    wait_until(lambda: apiserver.watch_count() == 1, apiserver.changed)
    wait_until(pumped(informers, lambda: len(seen.seen) == 2), informers.wakeup)
    with apiserver.hold_watches():
        apiserver.break_watches()
        wait_until(lambda: apiserver.watch_count() == 0, apiserver.changed)
        kube.delete("Pod", "doomed", "default", uid=doomed.metadata.uid)
        kube.create(pod("new"))
        apiserver.compact()  # the resumed watch gets 410 Gone: the informer must relist
    wait_until(pumped(informers, lambda: ("add", "new") in seen.seen and ("delete", "doomed") in seen.seen),
               informers.wakeup)
    kube.create(pod("after"))
    wait_until(pumped(informers, lambda: ("add", "after") in seen.seen), informers.wakeup)
    assert sorted(seen.seen) == sorted([("add", "keep"), ("add", "doomed"), ("delete", "doomed"), ("add", "new"),
                                        ("add", "after")])
    assert sorted(informers.store("Pod")) == ["default/after", "default/keep", "default/new"]
    assert informers.get("Pod", "default/keep").metadata.uid == keep.metadata.uid
    informers.stop()


def test_requests_are_throttled_to_qps_once_the_burst_is_spent(monkeypatch):
    from kubesched.core.cluster import kube as kube_module

    now, slept = [0.0], []

    def sleep(seconds):
        slept.append(round(seconds, 6))
        now[0] += seconds

    monkeypatch.setattr(kube_module, "time", types.SimpleNamespace(monotonic=lambda: now[0], sleep=sleep))
    limiter = kube_module.TokenBucketRateLimiter(qps=10, burst=3)
    for _ in range(5):
        limiter.take()
    assert slept == [0.1, 0.1]
    now[0] += 1.0  # a quiet second refills the bucket up to the burst
    for _ in range(3):
        limiter.take()
    assert slept == [0.1, 0.1]
    unlimited = kube_module.TokenBucketRateLimiter(qps=0, burst=0)
    for _ in range(100):
        unlimited.take()
    assert slept == [0.1, 0.1]


def test_strategic_and_merge_patches_of_status_and_object_through_the_client(kube, apiserver):
    created = kube.create(pod("web"))
    kube.patch("Pod", "web", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "default",
               subresource="status", patch_type="application/merge-patch+json")
    patched = kube.patch("Pod", "web", {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}},
                         "default", subresource="status", uid=created.metadata.uid)
    assert [c.type for c in patched.status.conditions] == ["Ready", "PodScheduled"]
    assert apiserver.cluster.get("Pod", "web", "default") == patched
    labelled = kube.patch("Pod", "web", {"metadata": {"labels": {"app": "web"}}}, "default",
                          resource_version=patched.metadata.resource_version)
    assert labelled.metadata.labels == {"app": "web"}
    with pytest.raises(Conflict):
        kube.patch("Pod", "web", {"metadata": {"labels": {"app": "x"}}}, "default",
                   resource_version=patched.metadata.resource_version)
    with pytest.raises(Invalid, match="field is immutable"):
        kube.patch("Pod", "web", {"status": {"phase": "Running"}}, "default", subresource="status", uid="other")
    assert [m for m, p, _ in apiserver.requests if p.startswith("/api/v1/namespaces/default/pods/web")].count("PATCH") == 5


def test_the_leader_election_client_has_its_own_rate_limiter_and_bounds_its_requests(kube, apiserver):
    kube.limiter = type(kube.limiter)(qps=1, burst=1)
    kube.limiter.take()  # the scheduler's client has spent its tokens: its next request would wait a second
    lease_client = kube.leader_election_client(renew_deadline=1.5)
    assert lease_client.limiter is not kube.limiter and lease_client.request_timeout == 1.0
    assert lease_client.api is not kube.api  # its own connections too
    kube.create(node("n1"))
    lease_client.bound(0.0)  # the renew deadline has passed: nothing is sent, nothing retried
    with pytest.raises(Fenced, match="deadline passed"):
        lease_client.get("Node", "n1")
    lease_client.bound(None)
    assert lease_client.get("Node", "n1").metadata.name == "n1"
