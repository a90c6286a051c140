"""The Simulation driver: manifests in, a cluster run to quiescence on a fake clock, results out."""

from __future__ import annotations

import pytest

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.framework.config import ConfigError
from kubesched.drivers.simulation import DEFAULT_START, Simulation, parse_start_time
from kubesched.testing import node, pod

CLUSTER = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  priorityClassName: high
  containers: [{name: main, resources: {requests: {cpu: "1"}}}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
"""


def test_from_paths_creates_pods_after_the_objects_they_refer_to(tmp_path):
    (tmp_path / "all.yaml").write_text(CLUSTER)
    sim = Simulation.from_paths([tmp_path])
    sim.run()
    web = sim.pod("web")
    assert web.spec.priority == 1000  # the PriorityClass existed when the pod was created
    assert sim.placements() == {"default/web": "n1"}


def test_from_paths_needs_the_namespace_of_an_object_as_the_api_server_does(tmp_path):
    (tmp_path / "pods.yaml").write_text(CLUSTER.replace("namespace: default", "namespace: shop"))
    with pytest.raises(InvalidManifest) as err:
        Simulation.from_paths([tmp_path / "pods.yaml"])
    assert str(err.value) == f'{tmp_path / "pods.yaml"}: Pod/web: metadata.namespace: namespaces "shop" not found'
    # a Namespace among the manifests, wherever it is, is created first (kubectl apply needs it first)
    (tmp_path / "pods.yaml").write_text(CLUSTER.replace("namespace: default", "namespace: shop")
                                        + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    sim = Simulation.from_paths([tmp_path / "pods.yaml"])
    sim.run()
    assert sim.placements() == {"shop/web": "n1"}


def test_from_paths_names_the_object_the_cluster_refuses(tmp_path):
    (tmp_path / "pods.yaml").write_text(CLUSTER.split("---")[0])
    with pytest.raises(InvalidManifest) as err:
        Simulation.from_paths([tmp_path / "pods.yaml"])
    assert str(err.value) == f"{tmp_path / 'pods.yaml'}: Pod/web: spec.priorityClassName: no PriorityClass with name high was found"


def test_a_bad_configuration_is_refused_at_construction():
    with pytest.raises(ConfigError):
        Simulation(config={"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]})


def test_time_starts_at_the_default_or_the_given_start():
    assert Simulation().clock.now() == DEFAULT_START == parse_start_time("2026-01-01T00:00:00Z")
    sim = Simulation(start=parse_start_time("2030-06-01T12:00:00Z"))
    sim.create([node("n1"), pod("p")])
    sim.run()
    (event,) = sim.events("Scheduled")
    assert event.first_timestamp == parse_start_time("2030-06-01T12:00:00Z")
    assert sim.pod("p").metadata.creation_timestamp == sim.start_time


def test_run_until_moves_the_clock_to_the_end():
    sim = Simulation()
    sim.create([node("n1", cpu="1"), pod("p", cpu="2")])
    sim.run_for(3600)
    assert sim.clock.now() == DEFAULT_START + 3600
    assert sim.pod("p").spec.node_name == ""


def test_run_without_an_end_stops_when_only_housekeeping_is_left():
    sim = Simulation()
    sim.create([node("n1", cpu="1"), pod("p", cpu="2")])
    sim.run()
    assert sim.clock.now() == DEFAULT_START  # nothing was worth waiting for


def test_same_seed_same_result():
    def placements(seed):
        sim = Simulation(seed=seed)
        sim.create([node(f"n{i}") for i in range(6)] + [pod(f"p{i}", cpu="100m") for i in range(12)])
        sim.run()
        return sim.placements()

    assert placements(3) == placements(3)
