"""`kubesched explain` and the decision records the scheduler makes of every attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.analysis.explain import attempts_of
from kubesched.cli import app
from kubesched.core.clock import FakeClock
from kubesched.core.observability.decision_log import DecisionLog, read_decisions
from kubesched.drivers.simulation import Simulation
from kubesched.perf.config import load_test_cases
from kubesched.perf.executor import WorkloadExecutor

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "examples/cluster"
runner = CliRunner()


def _explain(*args: str) -> dict:
    result = runner.invoke(app, ["explain", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_pending_pod_names_the_plugin_and_reason_for_every_node_and_what_would_make_it_fit():
    answer = _explain("ml/train-llm", "-f", str(CLUSTER))
    assert answer["status"] == "Pending"
    groups = answer["last"]["filter"]["rejected"]
    by_node = {node: (g["plugin"], g["reason"]) for g in groups for node in g["nodes"]}
    nodes = {n.metadata.name for n in Simulation.from_paths([CLUSTER]).cluster.list("Node").items}
    assert set(by_node) == nodes
    assert by_node["big-b2"] == ("NodeUnschedulable", "node(s) were unschedulable")
    assert by_node["gpu-b3"] == ("NodeResourcesFit", "Insufficient memory, Insufficient nvidia.com/gpu")
    # gpu-b3 lacks 8 GPUs and 26 GiB of memory; nothing else rejects it
    assert answer["last"]["filter"]["shortfall"]["gpu-b3"] == {"nvidia.com/gpu": 8, "memory": 26 * 2**30}
    assert answer["suggestions"][0] == ("node gpu-b3 would fit with 8 more nvidia.com/gpu, 26Gi more memory free "
                                        "(no other Filter plugin rejects it)")
    assert "uncordon 1 node(s): big-b2 (then the other Filter plugins judge them)" in answer["suggestions"]


def test_a_scheduled_pods_score_table_adds_up_to_the_choice():
    answer = _explain("shop/web-1", "-f", str(CLUSTER))
    assert answer["status"] == "Scheduled"
    score = answer["last"]["score"]
    for i in range(len(score["nodes"])):
        plugins = score["plugins"]
        assert all(p["weighted"][i] == p["normalized"][i] * p["weight"] for p in plugins)
        assert score["total"][i] == sum(p["weighted"][i] for p in plugins)
    assert score["total"][score["nodes"].index(answer["node"])] == max(score["total"])
    rejected = {g["plugin"]: g["nodes"] for g in answer["last"]["filter"]["rejected"]}
    assert rejected["TaintToleration"] == ["gpu-a3", "gpu-b3"]


def test_explain_from_a_record_file_says_what_explain_on_the_manifests_says(tmp_path):
    record = tmp_path / "decisions.jsonl"
    result = runner.invoke(app, ["simulate", "-f", str(CLUSTER), "--record", str(record)])
    assert result.exit_code == 0, result.output
    lines = list(read_decisions(record))
    # the pod its scheduling gates hold has a preEnqueue line
    assert {line["phase"] for line in lines} == {"scheduling", "binding", "preEnqueue"}
    for pod in ("ml/train-llm", "shop/web-1"):
        recorded, live = _explain(pod, "--from", str(record)), _explain(pod, "-f", str(CLUSTER))
        assert recorded == live
        assert recorded["last"]["filter"]["rejected"]


def test_a_table_is_printed_by_default():
    result = runner.invoke(app, ["explain", "ml/train-llm", "-f", str(CLUSTER)])
    assert result.exit_code == 0, result.output
    assert "Filter: 6 node(s) evaluated, 0 feasible" in result.output
    assert "What would make it fit" in result.output


@pytest.mark.parametrize("content, problem", [
    ("{not json\n", "1: not a JSON object"),
    ('{"pod": "a/b"}\n[1, 2]\n', "2: not a scheduling decision"),
])
def test_a_bad_record_file_is_refused_naming_the_line(tmp_path, content, problem):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    result = runner.invoke(app, ["explain", "a/b", "--from", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:{problem}" in result.output


def test_explain_needs_exactly_one_source():
    result = runner.invoke(app, ["explain", "a/b"])
    assert result.exit_code == 2 and "either -f DIR" in result.output


def test_a_preemption_is_recorded_with_its_victims_and_the_nominated_node():
    log = DecisionLog()
    sim = Simulation.from_paths([ROOT / "examples/preemption"], decisions=log)
    sim.run()
    preempted = [r for r in log.records if r.get("postFilter", {}).get("victims")]
    assert preempted
    record = preempted[0]
    victims = set(record["postFilter"]["victims"])
    assert {e.involved_object.namespace + "/" + e.involved_object.name for e in sim.events("Preempted")} >= victims
    assert record["postFilter"]["nominatedNodeName"] == sim.pod(record["pod"]).spec.node_name
    # the pod's next attempt came after the victims' deletion moved it back
    later = attempts_of(log.records, record["pod"])
    assert later[-1]["binding"]["result"] == "Bound" and later[-1]["movedBy"]


def test_on_a_500_node_scheduler_perf_workload_every_pod_goes_to_its_best_scored_node():
    path = ROOT / "data/scheduler_perf/topology_spreading/performance-config.yaml"
    case = next(c for c in load_test_cases(path) if c.name == "TopologySpreading")
    executor = WorkloadExecutor(case, case.workload("500Nodes"), clock=FakeClock(1e9))
    executor.check()
    log = DecisionLog()
    executor.scheduler.decisions = log
    executor.run()
    scheduled = [r for r in log.records if r["phase"] == "scheduling" and r["result"] == "Scheduled"]
    assert len(scheduled) == 2000
    for record in scheduled:
        score = record["score"]
        assert score["scored"] > 1
        chosen = score["nodes"].index(record["node"])
        assert score["total"][chosen] == max(score["total"]), record["pod"]
        assert score["total"] == [sum(p["weighted"][i] for p in score["plugins"]) for i in range(len(score["nodes"]))]
    assert sum(r["result"] == "Bound" for r in log.records if r["phase"] == "binding") == 2000


def test_the_published_annotation_stays_within_its_bound():
    from kubesched.core.observability.decision_log import MAX_ANNOTATION_BYTES, compact

    groups = [{"plugin": "NodeAffinity", "code": "UNSCHEDULABLE_AND_UNRESOLVABLE", "reason": f"reason {i} " + "x" * 200,
               "count": 20, "nodes": [f"node-{i}-{j}" for j in range(20)]} for i in range(200)]
    record = {"pod": "a/b", "uid": "u", "attempt": 3, "time": 0.0, "profile": "p", "phase": "scheduling",
              "result": "Unschedulable", "filter": {"evaluated": 4000, "feasible": 0, "rejected": groups}}
    text = compact(record)
    out = json.loads(text)
    assert len(text.encode()) <= MAX_ANNOTATION_BYTES
    assert out["truncated"] == ["filter"] and out["result"] == "Unschedulable" and out["attempt"] == 3
    small = json.loads(compact({**record, "filter": {**record["filter"], "rejected": groups[:2]}}))
    assert "truncated" not in small and len(small["filter"]["rejected"][0]["nodes"]) == 5


def test_a_pending_pod_is_told_the_label_to_add_and_the_taint_to_tolerate():
    from kubesched.analysis.explain import explain
    from kubesched.testing import node, pod

    log = DecisionLog()
    sim = Simulation(decisions=log)
    sim.create([node("plain"), node("tainted", labels={"disk": "ssd"}, taints=[("dedicated", "gpu", "NoSchedule")]),
                pod("wants-ssd", node_selector={"disk": "ssd"})])
    sim.run()
    answer = explain(log.records, "default/wants-ssd", sim.pod("wants-ssd"), sim.cluster.list("Node").items)
    assert answer["status"] == "Pending"
    assert answer["suggestions"] == [
        "label node plain with disk=ssd",
        "tolerate the taint {dedicated: gpu} to pass TaintToleration on 1 node(s): tainted",
    ]


def test_a_node_without_the_resource_is_never_told_to_free_more_of_it(tmp_path):
    manifests = tmp_path / "cluster.yaml"
    manifests.write_text("""\
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: v1
kind: Node
metadata: {name: worker-b1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "4"}}
---
apiVersion: v1
kind: Pod
metadata: {name: train-llm, namespace: ml}
spec:
  containers:
  - name: main
    resources:
      requests: {cpu: "1", nvidia.com/gpu: "8"}
      limits: {nvidia.com/gpu: "8"}
""")
    suggestions = _explain("ml/train-llm", "-f", str(manifests))["suggestions"]
    assert "node worker-b1 does not have nvidia.com/gpu" in suggestions
    assert "node gpu-1 would fit with 4 more nvidia.com/gpu free (no other Filter plugin rejects it)" in suggestions
    assert not any("worker-b1 would fit" in line for line in suggestions)


@pytest.mark.parametrize("given, answer", [
    ("ml/train-lm", "explain: no pod ml/train-lm in {CLUSTER}; did you mean ml/train-llm?"),
    ("train-lm", "explain: no pod train-lm in {CLUSTER}; did you mean ml/train-llm?"),
    ("zzz", "explain: no pod zzz in {CLUSTER} (there are 11, none of a similar name)"),
])
def test_a_mistyped_pod_is_refused_in_one_line_with_the_nearest_names(given, answer):
    result = runner.invoke(app, ["explain", given, "-f", str(CLUSTER)])
    assert result.exit_code == 2
    assert result.output == answer.format(CLUSTER=CLUSTER) + "\n"


def test_an_unqualified_pod_name_is_the_one_namespace_holding_it(tmp_path):
    assert _explain("train-llm", "-f", str(CLUSTER))["pod"] == "ml/train-llm"
    record = tmp_path / "d.jsonl"
    assert runner.invoke(app, ["simulate", "-f", str(CLUSTER), "--record", str(record)]).exit_code == 0
    assert _explain("train-llm", "--from", str(record))["pod"] == "ml/train-llm"
    result = runner.invoke(app, ["explain", "ml/train-lm", "--from", str(record)])
    assert result.exit_code == 2
    assert result.output == f"explain: no pod ml/train-lm attempted in {record}; did you mean ml/train-llm?\n"


def test_a_name_in_two_namespaces_must_be_qualified(tmp_path):
    (tmp_path / "pods.yaml").write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Namespace
metadata: {name: b}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: a}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: b}
spec: {containers: [{name: c, image: x}]}
""")
    result = runner.invoke(app, ["explain", "web", "-f", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == "explain: pod web is in 2 namespaces: a/web, b/web; give NAMESPACE/NAME\n"
    assert _explain("b/web", "-f", str(tmp_path))["status"] == "Scheduled"


def test_a_mistyped_or_unqualified_podgroup_is_answered_like_a_pod():
    gangs = str(ROOT / "examples/gangs")
    result = runner.invoke(app, ["explain", "podgroup/ml/llm-finetun", "-f", gangs])
    assert result.exit_code == 2
    assert result.output == f"explain: no PodGroup ml/llm-finetun in {gangs}; did you mean ml/llm-finetune?\n"
    assert _explain("podgroup/llm-finetune", "-f", gangs)["podGroup"] == "ml/llm-finetune"


def test_the_event_that_moved_a_pod_reads_as_upstreams_label_not_a_python_repr(tmp_path):
    preemption = str(ROOT / "examples/preemption")
    result = runner.invoke(app, ["explain", "shop/checkout-1", "-f", preemption])
    assert result.exit_code == 0, result.output
    assert "moved to the active queue by AssignedPodDelete" in result.output
    record = tmp_path / "d.jsonl"
    assert runner.invoke(app, ["simulate", "-f", preemption, "--record", str(record)]).exit_code == 0
    moved = {line["movedBy"] for line in read_decisions(record) if line.get("movedBy")}
    assert moved == {"AssignedPodDelete"}


def test_a_live_pod_is_found_by_its_name_alone_and_a_mistyped_one_gets_the_nearest_names(apiserver, tmp_path):
    from kubesched.drivers.simulation import load_paths

    load_paths(apiserver.cluster, [CLUSTER])
    kubeconfig = apiserver.kubeconfig(tmp_path / "kubeconfig")
    found = runner.invoke(app, ["explain", "train-llm", "--kubeconfig", kubeconfig])
    assert found.exit_code == 0, found.output
    assert found.output.startswith("ml/train-llm: no scheduling attempt of this pod was recorded")
    missed = runner.invoke(app, ["explain", "ml/train-lm", "--kubeconfig", kubeconfig])
    assert missed.exit_code == 2
    assert missed.output == "explain: no pod ml/train-lm on the cluster; did you mean ml/train-llm?\n"
