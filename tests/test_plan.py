"""``kubesched plan``: the nodes to add for pending pods and gangs, and the nodes that can go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core.api.manifests import parse_document
from kubesched.plan.expanders import Option, least_waste, price, priority
from kubesched.plan.scale_down import plan_scale_down
from kubesched.plan.scale_up import plan_scale_up
from kubesched.plan.templates import NodeTemplate
from kubesched.sim import Simulator

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "plan")
runner = CliRunner()


def node(name: str, milli: int, mib: int, pods: int = 110, zone: str = "zone-mars", **annotations: str) -> dict:
    meta: dict = {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}}
    if annotations:
        meta["annotations"] = {f"kubesched.io/{k.replace('_', '-')}": v for k, v in annotations.items()}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "status": {"allocatable": {"cpu": f"{milli}m", "memory": f"{mib}Mi", "pods": str(pods)}}}


def pod(name: str, milli: int, memory: int | str, namespace: str = "universe", host_port: int = 0,
        spread: tuple[int, str, int] | None = None, **extra: object) -> dict:
    container: dict = {"name": "c", "image": "x", "resources": {"requests": {"cpu": f"{milli}m", "memory": str(memory)}}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict = {"containers": [container], **extra}
    if spread:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": spread[0], "topologyKey": spread[1], "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "estimatee"}}, "minDomains": spread[2]}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "estimatee"}}, "spec": spec}


# cluster-autoscaler's estimator/binpacking_estimator_test.go, TestBinpackingEstimate: a template node
# (millicores, MiB, 10 pods, zone-mars), groups of identical pods (milli-CPU, memory bytes, count, options),
# the node group's max size (0: none) -> nodes added, pods placed.  Upstream's old node (100m, 100 MiB,
# zone-jupiter) is one the estimator never places on: here it is cordoned, so kube-scheduler does not either,
# and it still counts as a topology domain for spreading, as upstream's.
BINPACKING = [
    ("simple resource-based binpacking", 350 * 3 - 50, 2 * 1000, [(350, 1000, 10, {})], 0, 5, 10),
    ("pods-per-node bound binpacking", 10000, 20000, [(10, 100, 20, {})], 0, 2, 20),
    ("hostport conflict forces pod-per-node", 1000, 5000, [(200, 1000, 8, {"host_port": 5555})], 0, 8, 8),
    ("limiter cuts binpacking", 1000, 5000, [(500, 1000, 20, {})], 5, 5, 10),
    # upstream orders pods largest first and places the 10 large ones; kube-scheduler's queue takes them in
    # creation order (priority first): the 10 small ones share the first node with a large one, 18 placed
    ("decreasing ordered pods are processed first", 1000, 5000, [(50, 1000, 10, {}), (500, 1000, 10, {})], 5, 5, 18),
    ("hostname topology spreading with maxSkew=2 forces 2 pods/node", 1000, 5000,
     [(200, 200, 8, {"spread": (2, "kubernetes.io/hostname", 1)})], 0, 4, 8),
    ("zonal topology spreading with maxSkew=2 only allows 2 pods to schedule", 1000, 5000,
     [(20, 100, 8, {"spread": (2, "topology.kubernetes.io/zone", 1)})], 0, 1, 2),
    # upstream expects 3 nodes; PodTopologySpread counts the old node as a domain with no pods (minDomains 3 is
    # met once two nodes are added), so kube-scheduler puts one pod per new node: 12
    ("hostname topology spreading with maxSkew=1 with a large scaleup", 1000, 5000,
     [(20, 100, 12, {"spread": (1, "kubernetes.io/hostname", 3)})], 0, 12, 12),
]


@pytest.mark.parametrize("name, millicores, mib, groups, max_nodes, nodes, placed", BINPACKING,
                         ids=[case[0] for case in BINPACKING])
def test_binpacking_estimate_as_cluster_autoscalers_table(name, millicores, mib, groups, max_nodes, nodes, placed):
    old = {**node("oldnode", 100, 100, 10, zone="zone-jupiter"), "spec": {"unschedulable": True}}
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "universe"}}, old]
    for milli, memory, count, options in groups:
        objects += [pod(f"estimatee-{len(objects) + i}", milli, memory, **options) for i in range(count)]
    sim = Simulator.from_manifests(objects)
    template = NodeTemplate(parse_document(node("template", millicores, mib, 10)), max_count=max_nodes or 100)
    result = plan_scale_up(sim, [template])
    assert result.added.get("template", 0) == nodes
    assert sum(1 for n in result.placements.values() if n) == placed


def test_the_example_adds_two_gpu_nodes_to_rack_a_and_three_small_cpu_nodes():
    result = runner.invoke(app, ["plan", "-f", EXAMPLE, "-o", "json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert {row["template"]: row["count"] for row in answer["add"]} == {"cpu-small": 3, "gpu-rack-a": 2}
    assert answer["costPerHour"] == pytest.approx(24.6)
    # the 16-GPU gang needs one rack: rack-a's two nodes and the two added there, never rack-b's
    gang = [answer["placements"][pod] for pod in answer["groups"]["ml/train"]]
    assert sorted(gang) == ["gpu-rack-a-1", "gpu-rack-a-2", "rack-a-0", "rack-a-1"]
    web = [node for pod, node in answer["placements"].items() if pod.startswith("shop/web-")]
    assert len(web) == 12 and all(node.startswith("cpu-small-") for node in web)


def test_a_pod_no_template_can_host_is_explained_in_kube_schedulers_words():
    result = runner.invoke(app, ["plan", "-f", EXAMPLE, "-o", "json"])
    (report,) = json.loads(result.stdout)["unplaced"]
    assert report["pod"] == "shop/report" and report["group"] == ""
    assert report["message"].startswith("0/11 nodes are available: 5 Insufficient cpu, 6 node(s) had untolerated taint")
    assert report["templates"] == {"gpu-rack-a": "node(s) had untolerated taint {nvidia.com/gpu: true}",
                                   "gpu-rack-c": "node(s) had untolerated taint {nvidia.com/gpu: true}",
                                   "cpu-small": "Insufficient cpu", "cpu-large": "Insufficient cpu"}
    table = runner.invoke(app, ["plan", "-f", EXAMPLE])
    assert "Still pending" in table.stdout and "a new cpu-large" in table.stdout
    assert "5 node(s) to add, 24.60/hour; 1 pod(s) still pending" in table.stdout


def test_a_gang_waits_for_the_nodes_of_a_whole_rack_within_max_count(tmp_path):
    (tmp_path / "all.yaml").write_text((Path(EXAMPLE) / "cluster.yaml").read_text() + "\n---\n"
                                       + (Path(EXAMPLE) / "workloads.yaml").read_text() + "\n---\n"
                                       + (Path(EXAMPLE) / "templates.yaml").read_text()
                                       .replace('kubesched.io/max-count: "2"', 'kubesched.io/max-count: "1"'))
    answer = json.loads(runner.invoke(app, ["plan", "-f", str(tmp_path), "-o", "json"]).stdout)
    # one more node in rack-a is not enough (12 GPUs): the gang goes to a new rack of four
    assert {row["template"]: row["count"] for row in answer["add"]}["gpu-rack-c"] == 4
    assert "gpu-rack-a" not in {row["template"] for row in answer["add"]}
    assert {answer["placements"][p] for p in answer["groups"]["ml/train"]} == {f"gpu-rack-c-{i}" for i in range(1, 5)}


def _options() -> list[Option]:
    small = NodeTemplate(parse_document(node("small", 4000, 16384, cost_per_hour="1.00", priority="1")),
                         cost_per_hour=1.0, priority=1)
    large = NodeTemplate(parse_document(node("large", 16000, 65536)), cost_per_hour=0.5)
    # 4 pods of 1 CPU / 4 GiB: one small node full, or a quarter of a large one
    return [Option(small, 1, ("a", "b", "c", "d"), cpu=4000, memory=4 * 4096 * 2**20),
            Option(large, 1, ("a", "b", "c", "d"), cpu=4000, memory=4 * 4096 * 2**20)]


def test_expanders_choose_as_cluster_autoscalers():
    options = _options()
    assert least_waste(options).template.name == "small"  # no CPU or memory left over
    assert price(options).template.name == "large"  # 0.50/hour for the same pods
    assert priority(options).template.name == "small"  # kubesched.io/priority 1 over 0


def test_search_finds_the_cheaper_plan_greedy_least_waste_misses():
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "universe"}}]
    objects += [pod(f"p-{i}", 1000, 4 * 2**30) for i in range(4)]
    templates = [NodeTemplate(parse_document(node("small", 4000, 16384)), cost_per_hour=1.0),
                 NodeTemplate(parse_document(node("large", 16000, 65536)), cost_per_hour=0.5)]
    greedy = plan_scale_up(Simulator.from_manifests(objects), templates, "least-waste")
    searched = plan_scale_up(Simulator.from_manifests(objects), templates, "least-waste", search=True)
    assert greedy.added == {"small": 1} and greedy.cost_per_hour == 1.0
    assert searched.added == {"large": 1} and searched.cost_per_hour == 0.5
    assert all(searched.placements.values())


def _replicated(name: str, replicas: int, **pdb: object) -> list[dict]:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "shop"},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                               {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "shop"},
              "spec": {"selector": {"matchLabels": {"app": name}}, **pdb}}
    return [deployment, budget] if pdb else [deployment]


@pytest.mark.parametrize("budget, removable", [({"maxUnavailable": 2}, True), ({"minAvailable": 2}, False)])
def test_scale_down_respects_pod_disruption_budgets(budget, removable):
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
               node("a", 8000, 32768), node("b", 8000, 32768), *_replicated("web", 2, **budget)]
    sim = Simulator.from_manifests(objects)
    with sim.transaction():
        result = plan_scale_down(sim)
    removed = [r.node for r in result.removed]
    if removable:
        assert len(removed) == 1  # both replicas fit on the node that stays
        (removal,) = result.removed
        assert len(removal.moved) == len(removal.destinations) and set(removal.destinations.values()) != {removal.node}
    else:
        # spread by LeastAllocated, each node holds one replica: moving either takes a disruption minAvailable 2 forbids
        assert removed == [] or all(not r.moved for r in result.removed)
        assert any("not enough pod disruption budget: shop/web allows 0 more" in why for why in result.kept.values())
    assert len(sim.nodes()) == 2 and all(sim.placements().values())  # the transaction put everything back


def test_scale_down_keeps_nodes_of_bare_pods_and_busy_nodes():
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
               node("a", 8000, 32768), node("b", 2000, 4096),
               pod("alone", 500, "1Gi", namespace="shop", nodeName="a"), pod("busy", 1500, "1Gi", namespace="shop",
                                                                              nodeName="b")]
    result = runner.invoke(app, ["plan", "--scale-down", "-o", "json", "-f", str(_write(objects))])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["remove"] == []
    assert answer["keep"] == {"a": "pod shop/alone is not replicated (no controller would recreate it)",
                              "b": "utilization 75% is not below the threshold 50%"}


def _write(objects: list[dict]) -> Path:
    import tempfile

    import yaml
    folder = Path(tempfile.mkdtemp(prefix="kubesched-plan-"))
    (folder / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return folder


@pytest.mark.parametrize("annotation, value, problem", [
    ("max-count", "-1", "must be a non-negative integer, not '-1'"),
    ("cost-per-hour", "cheap", "must be a non-negative decimal number, not 'cheap'"),
    ("priority", "high", "must be an integer, not 'high'"),
    ("node-template", "yes", "must be \"true\", not 'yes'"),
])
def test_a_bad_template_is_refused_in_one_line(tmp_path, annotation, value, problem):
    template = node("gpu", 4000, 4096, node_template="true")
    template["metadata"]["annotations"][f"kubesched.io/{annotation}"] = value
    import yaml
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(template))
    result = runner.invoke(app, ["plan", "-f", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip() == (f"{tmp_path / 't.yaml'}: Node/gpu: metadata.annotations[kubesched.io/{annotation}]: "
                                     f"{problem}")


def test_without_templates_plan_says_so(tmp_path):
    result = runner.invoke(app, ["plan", "-f", str(ROOT / "examples" / "cluster")])
    assert result.exit_code == 2 and "no Node annotated kubesched.io/node-template" in result.output
