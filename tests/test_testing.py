"""The plugin author's kit: builders, the test configuration, node_scores, the
``simulate`` fixture (from kubesched's pytest11 entry point), and the HTML summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched import hookimpl
from kubesched.cli import app
from kubesched.core.cluster.client import NotFound
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.registry import PluginError
from kubesched.core.framework.types import ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.testing import (
    PluginBench,
    config,
    device,
    device_class,
    node,
    node_scores,
    pod,
    pod_group,
    resource_claim,
    resource_slice,
)

ROOT = Path(__file__).resolve().parent.parent


class MostPods:
    """Scores nodes by how many pods they already run (x 10)."""

    name = "MostPods"

    def __init__(self, args, handle):
        self.factor = args.get("factor", 10)

    @hookimpl
    def score(self, state, pod, node_info):
        return min(100, self.factor * len(node_info.pods))


class FewestPods:
    """Scores a node by the share of the snapshot's pods it does not run."""

    name = "FewestPods"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def score(self, state, pod, node_info):
        total = sum(len(info.pods) for info in self.handle.snapshot.nodes)
        return 100 - 100 * len(node_info.pods) // total if total else 100

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.ADD))]


def test_plugin_bench_builds_a_plugin_on_a_real_handle():
    bench = PluginBench(FewestPods, objects=[device_class(), pod_group("train", 2), pod("w0", pod_group="train"),
                                             pod("w1", pod_group="train"), pod("w2", pod_group="train")])
    handle = bench.handle
    bench.cluster.patch("Pod", "w2", {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    bench.informers.pump()
    nodes = bench.use_nodes([NodeInfo(node("a"), [pod("x", node_name="a")]), NodeInfo(node("b")), NodeInfo(node("c"))])
    assert [bench.plugin.score(CycleState(), pod("p"), info) for info in nodes] == [0, 100, 100]
    assert handle.snapshot.get("b") is nodes[1] and list(handle.snapshot.table.names) == ["a", "b", "c"]
    # informers synced (PodGroups too: the plugin registers events for them), the PodGroup manager follows
    # the members (not w2, finished), the DRA manager is there
    assert list(handle.informers.store("DeviceClass")) == ["gpu.example.com"]
    assert handle.pod_groups.pod_group("default/train").spec.scheduling_policy.gang.min_count == 2
    assert sorted(p.metadata.name for p in handle.pod_groups.state("default/train").unscheduled_pods()) == ["w0", "w1"]
    assert handle.dra is handle.dra
    # events are written to the cluster by the profile's recorder
    handle.recorder.event(bench.cluster.get("Pod", "w0", "default"), "Normal", "Checked", "Check", "looked at w0")
    (event,) = bench.cluster.list("Event").items
    assert (event.reason, event.message, event.source.component) == ("Checked", "looked at w0", "default-scheduler")


def test_plugin_bench_refuses_args_as_a_profile_does():
    with pytest.raises(PluginError, match="hardPodAffinityWeight"):
        PluginBench(InterPodAffinity, {"hardPodAffinityWeight": 101})


def test_the_simulate_fixture_runs_objects_with_extra_plugins(simulate):
    sim = simulate(node("a", cpu="4"), node("b", cpu="4"), pod("first", cpu="1", node_name="b"),
                   pod("second", cpu="1"), plugins=[MostPods], config=config(score={"MostPods": 1}))
    assert sim.placements() == {"default/first": "b", "default/second": "b"}


def test_config_scores_with_the_given_plugins_only(simulate):
    sim = simulate(node("a"), plugins=[MostPods], config=config(score={"MostPods": 3}, args={"MostPods": {"factor": 50}}))
    framework = sim.scheduler.profiles["default-scheduler"]
    assert framework.points["score"] == ["MostPods"] and framework.score_weights["MostPods"] == 3
    assert framework.plugins["MostPods"].factor == 50
    assert sim.config.percentage_of_nodes_to_score == 100


def test_node_scores_show_every_plugins_weighted_scores(simulate):
    sim = simulate(node("a"), node("b"), pod("there", cpu="1", node_name="b"),
                   plugins=[MostPods], config=config(score={"MostPods": 2}))
    (waiting,) = sim.create([pod("new", cpu="1")])
    assert node_scores(sim, waiting) == {"a": {"MostPods": 0}, "b": {"MostPods": 20}}
    (too_big,) = sim.create([pod("huge", cpu="100")])
    assert node_scores(sim, too_big) == {}


def test_node_scores_take_a_name_or_a_pod_not_yet_created_and_refuse_a_bound_pod(simulate):
    sim = simulate(node("a"), node("b"), pod("there", cpu="1", node_name="b"),
                   plugins=[MostPods], config=config(score={"MostPods": 2}))
    sim.create([pod("new", cpu="1")])
    expected = {"a": {"MostPods": 0}, "b": {"MostPods": 20}}
    assert node_scores(sim, "new") == node_scores(sim, "default/new") == expected
    assert node_scores(sim, pod("arriving", cpu="1")) == expected
    assert "default/arriving" not in sim.placements()
    with pytest.raises(NotFound, match=r"^no pod nwe in the simulation; did you mean default/new\?$"):
        node_scores(sim, "nwe")
    with pytest.raises(ValueError, match=r"^node_scores: pod default/there is bound to node b; only a pending pod"):
        node_scores(sim, "there")
    with pytest.raises(ValueError, match="bound to node b"):
        node_scores(sim, pod("there", cpu="1"))


def test_dra_builders_make_a_schedulable_gpu_pod(simulate):
    sim = simulate(
        node("gpu-node"), device_class(),
        resource_slice("gpu-node", [device("gpu-0", attributes={"model": "A100", "index": 0, "fast": True},
                                           capacity={"memory": "40Gi"})]),
        resource_claim("big", selectors=["device.attributes['gpu.example.com'].model == 'A100'"]),
        pod("train", claims=["big"]),
    )
    assert sim.placements() == {"default/train": "gpu-node"}
    claim = sim.get("ResourceClaim", "default/big")
    assert claim.status.allocation.devices.results[0].device == "gpu-0"


def test_simulate_can_write_an_html_summary(tmp_path):
    page = tmp_path / "summary.html"
    done = CliRunner().invoke(app, ["simulate", "-f", str(ROOT / "examples/cluster"), "--html", str(page)])
    assert done.exit_code == 0, done.output
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script src" not in text and "http" not in text
    assert "9 pod(s) scheduled, 2 pending, 6 node(s)" in text and "shop/api-1" in text
    assert "Insufficient" in text  # a pending pod's reason


def test_the_pod_builder_refuses_a_misspelled_parameter_instead_of_keeping_it_unused():
    with pytest.raises(TypeError, match="resource_claims"):
        pod("p", cpu="1", resource_claims=[{"name": "gpu"}])
    # camelCase keywords are spec fields, kept as given
    assert pod("q", hostNetwork=True).spec.extra == {"hostNetwork": True}
