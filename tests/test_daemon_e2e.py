"""`kubesched run` as a real cluster sees it (issue 30): examples/dra, a preemption, a device taint
eviction, --record-decisions and delegated /metrics auth, with leader election, through the strict
fake API server with the service account of deploy/rbac.yaml; and deploy/rbac.yaml derived from it."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
import yaml

from extender_server import ExtenderServer
from fake_apiserver import METRICS_TOKEN, SERVICE_ACCOUNT_TOKEN, FakeAPIServer
from kubesched.core.api import from_manifest
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.framework.config import load_config
from kubesched.core.observability.decision_log import DECISION_ANNOTATION, DecisionPublisher
from kubesched.drivers.daemon import Daemon
from kubesched.drivers.simulation import load_paths
from kubesched.plugins import DEFAULT_PLUGINS
from kubesched.testing import node, pod, pod_group
from test_daemon import Running, bound_in, get, scheduler_config, stop_daemons_left_running  # noqa: F401 (autouse)

ROOT = Path(__file__).resolve().parents[1]
RBAC = ROOT / "deploy" / "rbac.yaml"
#: What deploy/rbac.yaml grants that this run does not use, and where each is used.
NOT_IN_THIS_RUN = {
    ("", "persistentvolumes", "update"): "VolumeBinding PreBind binds a PV to its claim (test_volumebinding)",
    ("", "persistentvolumeclaims", "update"): "VolumeBinding PreBind annotates a claim to provision",
    ("resource.k8s.io", "resourceclaims", "delete"): "an extended-resource claim of a failed PreBind, a done pod's claim",
    ("resource.k8s.io", "resourceclaims/status", "patch"): "DRA Unreserve after a failed binding cycle",
    ("", "events", "patch"): "a repeated controller event (count)",
    ("events.k8s.io", "events", "patch"): "a repeated scheduler event (series)",
    ("scheduling.k8s.io", "compositepodgroups/status", "patch"): "a CompositePodGroup tree (test_composite_cycle)",
}


def _in_pool(apiserver, kind: str) -> list:
    return apiserver.cluster.list(kind).items


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One daemon run; returns (apiserver, what the test saw)."""
    tmp = tmp_path_factory.mktemp("e2e")
    bound_by_extender: list[dict] = []

    def bind(args: dict) -> dict:  # a binder extender: it binds the pods it manages itself
        bound_by_extender.append(args)
        apiserver.cluster.bind(args["PodNamespace"], args["PodName"], args["PodUID"], args["Node"])
        return {"Error": ""}

    with FakeAPIServer(rbac=RBAC) as apiserver, ExtenderServer(bind=bind) as extender:
        load_paths(apiserver.cluster, [ROOT / "examples" / "dra"])
        apiserver.cluster.create(node("tiny", cpu="2", labels={"role": "tiny"}))
        for name in ("low-1", "low-2"):
            apiserver.cluster.create(pod(name, cpu="1", priority=1, node_selector={"role": "tiny"}))
        dra_pods = [p.metadata.name for p in _in_pool(apiserver, "Pod") if p.metadata.namespace == "ml"]
        cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp / "kc", SERVICE_ACCOUNT_TOKEN), qps=0,
                                                    backoff_factor=0.01, watch_backoff=(0.01, 0.1))
        config = load_config({**scheduler_config(scheduler_name="default-scheduler"), "extenders": [{
            "urlPrefix": extender.url, "bindVerb": "bind",
            "managedResources": [{"name": "example.com/gpu-share", "ignoredByScheduler": True}]}]}, DEFAULT_PLUGINS)
        daemon = Daemon(cluster, config, embedded=False, identity="e2e", port=0,
                        decisions=DecisionPublisher(cluster, tmp / "decisions.jsonl"))
        running = Running(daemon)
        seen: dict = {}
        apiserver.wait_until(lambda: bound_in(apiserver.cluster, "low-1") and bound_in(apiserver.cluster, "low-2"),
                             timeout=30)
        apiserver.wait_until(lambda: sum(bound_in(apiserver.cluster, n) for n in dra_pods) >= len(dra_pods) - 1,
                             timeout=30)
        # a gang: both members bound together, the PodGroup's condition patched
        apiserver.cluster.create(pod_group("train", 2))
        for name in ("train-0", "train-1"):
            apiserver.cluster.create(pod(name, cpu="1", pod_group="train"))
        apiserver.wait_until(lambda: bound_in(apiserver.cluster, "train-0") and bound_in(apiserver.cluster, "train-1"),
                             timeout=30)
        apiserver.wait_until(lambda: apiserver.cluster.get("PodGroup", "train", "default").status.conditions,
                             timeout=30)
        seen["metrics"] = get(f"http://127.0.0.1:{daemon.http.port}/metrics", token=METRICS_TOKEN)[0]
        # a pod requesting the binder extender's resource is bound by the extender, the others by DefaultBinder
        apiserver.cluster.create(pod("shared-gpu", cpu="100m", extra_resources={"example.com/gpu-share": "1"}))
        apiserver.wait_until(lambda: bound_in(apiserver.cluster, "shared-gpu"), timeout=30)
        seen["bound_by_extender"] = bound_by_extender
        # a preemption: urgent needs all of tiny; the victims terminate, then go
        apiserver.cluster.create(pod("urgent", cpu="2", priority=100, node_selector={"role": "tiny"}))
        apiserver.wait_until(lambda: all(apiserver.cluster.get("Pod", n, "default").metadata.deletion_timestamp
                                         for n in ("low-1", "low-2")), timeout=30)
        seen["victims"] = [apiserver.cluster.get("Pod", n, "default") for n in ("low-1", "low-2")]
        apiserver.finish_terminating_pods()
        apiserver.wait_until(lambda: bound_in(apiserver.cluster, "urgent"), timeout=30)
        # a device taint eviction: a NoExecute rule on the H100 pool evicts finetune-llm
        finetune = apiserver.cluster.get("Pod", "finetune-llm", "ml")
        apiserver.cluster.create(from_manifest({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "h100-broken"},
            "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": finetune.spec.node_name},
                     "taint": {"key": "gpu.example.com/unhealthy", "effect": "NoExecute"}}}))
        apiserver.wait_until(lambda: apiserver.cluster.get("Pod", "finetune-llm", "ml").metadata.deletion_timestamp,
                             timeout=30)
        seen["tainted"] = apiserver.cluster.get("Pod", "finetune-llm", "ml")
        apiserver.wait_until(lambda: apiserver.cluster.get("DeviceTaintRule", "h100-broken").status.conditions,
                             timeout=30)
        seen["code"] = running.stop()
        # the evicted pod goes once the daemon has stopped: gone while it ran, its claim's clean-up (unreserve,
        # delete) would race the stop, and a re-sync from a cache that has not seen the delete yet sends a
        # second DELETE (404) - what the run's requests hold would depend on the machine's speed
        apiserver.finish_terminating_pods()
        seen["dra_pods"] = dra_pods
        yield apiserver, seen


def test_every_pod_ends_where_it_belongs(run):
    apiserver, seen = run
    assert seen["code"] == 0 and seen["metrics"] == 200
    placed = {p.metadata.name: p.spec.node_name for p in _in_pool(apiserver, "Pod")}
    assert "low-1" not in placed and "low-2" not in placed and "finetune-llm" not in placed
    assert placed["urgent"] == "tiny"
    unplaced = [n for n in seen["dra_pods"] if n != "finetune-llm" and not placed.get(n)]
    assert len(unplaced) <= 1
    for victim in seen["victims"]:
        (target,) = [c for c in victim.status.conditions if c.type == "DisruptionTarget"]
        assert target.reason == "PreemptionByScheduler"
    assert any(c.type == "DisruptionTarget" and c.reason == "DeletionByDeviceTaintManager"
               for c in seen["tainted"].status.conditions)
    assert DECISION_ANNOTATION in apiserver.cluster.get("Pod", "urgent", "default").metadata.annotations
    (scheduled,) = apiserver.cluster.get("PodGroup", "train", "default").status.conditions
    assert (scheduled.type, scheduled.status, scheduled.observed_generation) == ("PodGroupInitiallyScheduled", "True", 1)


def test_the_binder_extender_binds_the_pods_it_manages(run):
    apiserver, seen = run
    shared = apiserver.cluster.get("Pod", "shared-gpu", "default")
    assert [(b["PodNamespace"], b["PodName"], b["PodUID"], b["Node"]) for b in seen["bound_by_extender"]] == [
        ("default", "shared-gpu", shared.metadata.uid, shared.spec.node_name)]
    # the daemon did not bind it itself (it binds the others through pods/binding)
    bindings = {p for m, p, _, _ in apiserver.writes if m == "POST" and p.endswith("/binding")}
    assert "/api/v1/namespaces/default/pods/urgent/binding" in bindings
    assert "/api/v1/namespaces/default/pods/shared-gpu/binding" not in bindings


def test_no_refusal_but_conflicts_patch_where_upstream_patches_and_no_post_twice(run):
    apiserver, _ = run
    assert apiserver.forbidden == []
    refused = collections.Counter(code for _, _, code in apiserver.answers if code >= 400)
    assert set(refused) <= {404, 409}, refused  # 404: the Lease before it exists
    assert not [(m, p) for m, p, code in apiserver.answers if code == 404 and "/leases/" not in p]
    writes = [(method, path) for method, path, _, _ in apiserver.writes]
    assert ("PATCH", "/api/v1/namespaces/default/pods/low-1/status") in writes  # DisruptionTarget
    assert ("PATCH", "/api/v1/namespaces/ml/pods/finetune-llm/status") in writes
    assert ("PATCH", "/api/v1/namespaces/default/pods/urgent/status") in writes  # nominatedNodeName
    assert ("PATCH", "/api/v1/namespaces/default/pods/urgent") in writes  # the decision annotation
    assert ("PATCH", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/train/status") in writes
    assert not [p for m, p in writes if m == "PUT" and p.startswith("/api/v1/") and "/pods/" in p]
    posts = collections.Counter((path, json.dumps(body, sort_keys=True)) for method, path, _, body in apiserver.writes
                                if method == "POST" and not path.endswith("reviews"))
    assert posts and max(posts.values()) == 1


def test_deploy_rbac_grants_exactly_what_the_daemon_uses(run):
    apiserver, _ = run
    used = {(request.group, request.resource, request.verb) for _, request in apiserver.authorized}
    granted = set()
    for doc in yaml.safe_load_all(RBAC.read_text()):
        for rule in (doc or {}).get("rules") or ():
            granted |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert used <= granted
    assert granted - used == set(NOT_IN_THIS_RUN), sorted(granted - used)
