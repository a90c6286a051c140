"""A pod's default selector (upstream helper.DefaultSelector) from the workloads a WorkloadIndex finds for it."""

from __future__ import annotations

from kubesched.core.api import from_manifest
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.plugin_helpers.default_selector import WORKLOAD_KINDS, WorkloadIndex, default_selector
from kubesched.testing import pod


def service(name, selector, namespace="default"):
    return from_manifest({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
                          "spec": {"selector": selector}})


def replicaset(name, selector, labels=None, namespace="default"):
    return from_manifest({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "metadata": {"name": name, "namespace": namespace},
                          "spec": {"selector": selector, "replicas": 0,
                                   "template": {"metadata": {"labels": labels or {"app": "web", "tier": "a"}},
                                                "spec": {"containers": [{"name": "c", "image": "x"}]}}}})


def test_the_index_finds_what_matching_every_workload_finds_as_they_come_change_and_go():
    cluster = MemoryCluster(FakeClock(0))
    informers = Informers(cluster)
    index = WorkloadIndex(informers)
    informers.start()
    web = pod("w", labels={"app": "web", "tier": "a"})
    for obj in (service("web", {"app": "web"}), service("all", {}), service("other", {"app": "web"}, "shop"),
                replicaset("tiers", {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}),
                replicaset("not-db", {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}),
                replicaset("db", {"matchLabels": {"app": "db"}}, {"app": "db"})):
        cluster.create(obj)
    informers.pump()

    def every_workload():
        return [obj for kind in WORKLOAD_KINDS for obj in informers.store(kind).values()]

    found = index.selecting(web)
    assert [obj.metadata.name for obj in found] == ["web", "tiers", "not-db"]  # store order, kind by kind
    assert default_selector(web, found) == default_selector(web, every_workload())
    cluster.update(service("web", {"app": "db"}))
    cluster.delete("ReplicaSet", "tiers", "default")
    informers.pump()
    assert [obj.metadata.name for obj in index.selecting(web)] == ["not-db"]
    assert default_selector(web, index.selecting(web)) == default_selector(web, every_workload())
