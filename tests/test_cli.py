"""The kubesched command as a user runs it (typer's CliRunner, in process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubesched.cli import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "cluster")
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_simulate_example_prints_placements_and_reasons():
    result = run("simulate", "-f", EXAMPLE)
    assert result.exit_code == 0, result.output
    assert "shop/api-1" in result.output and "worker-b1" in result.output
    assert "9 pod(s) scheduled, 2 pending, 6 node(s)" in result.output


def test_simulate_yaml_is_the_final_state_in_kubernetes_shape():
    result = run("simulate", "-f", EXAMPLE, "-o", "yaml")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    pods = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d for d in docs if d["kind"] == "Pod"}
    # api-1 requires zone-b; the only schedulable zone-b node is worker-b1
    assert pods["shop/api-1"]["spec"]["nodeName"] == "worker-b1"
    assert pods["shop/api-1"]["spec"]["priority"] == 1000
    llm = pods["ml/train-llm"]
    assert "nodeName" not in llm["spec"]
    (condition,) = [c for c in llm["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "0/6 nodes are available: 1 node(s) were unschedulable, 4 Insufficient cpu, "
        "5 Insufficient memory, 5 Insufficient nvidia.com/gpu. "
        "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
    )
    gated = pods["shop/canary-1"]["status"]["conditions"][0]
    assert gated["reason"] == "SchedulingGated"
    reasons = [d["reason"] for d in docs if d["kind"] == "Event"]
    assert reasons.count("Scheduled") == 9 and "FailedScheduling" in reasons
    # written as the API server writes them: non-zero defaults are kept
    assert {(d["type"], d["count"]) for d in docs if d["kind"] == "Event" and d["reason"] == "Scheduled"} == {
        ("Normal", 1)}
    # container fields kubesched does not model are written back unchanged
    assert pods["shop/web-1"]["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_simulate_json_lists_every_object():
    result = run("simulate", "-f", EXAMPLE, "-o", "json")
    assert result.exit_code == 0
    listed = json.loads(result.output)
    assert listed["kind"] == "List"
    assert sum(1 for item in listed["items"] if item["kind"] == "Node") == 6


def test_simulate_refuses_a_bad_manifest_with_file_object_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n"
    )
    result = run("simulate", "-f", str(bad))
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line
    assert line.startswith(f"{bad}: Pod/web: spec.containers[0].resources.requests.cpu: quantities must match")


def test_simulate_refuses_an_invalid_cel_selector_naming_the_object_and_expression(tmp_path):
    bad = tmp_path / "class.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\n"
                   "spec: {selectors: [{cel: {expression: \"device.attributes['x'].model = 'a'\"}}]}\n")
    result = run("simulate", "-f", str(bad))
    assert result.exit_code == 2
    assert result.output.startswith(
        f"{bad}: DeviceClass/gpu: spec.selectors[0].cel.expression: Invalid value: "
        "\"device.attributes['x'].model = 'a'\": compilation failed: ERROR: <input>:1:")


def test_simulate_refuses_a_selector_too_costly_at_worst_as_the_api_server_does(tmp_path):
    bad = tmp_path / "claim.yaml"
    loops = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: heavy}\n"
                   "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, selectors: "
                   f"[{{cel: {{expression: '{loops}'}}}}]}}}}]}}}}\n")
    result = run("simulate", "-f", str(bad))
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        f"{bad}: ResourceClaim/heavy: spec.devices.requests[0].exactly.selectors[0].cel.expression: "
        "Forbidden: too complex, exceeds cost limit (estimated worst case ")


def test_simulate_dra_example_allocates_gpus_and_explains_the_pod_that_waits():
    result = run("simulate", "-f", str(ROOT / "examples" / "dra"), "-o", "yaml")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    claims = [d for d in docs if d["kind"] == "ResourceClaim"]
    shared = next(c for c in claims if c["metadata"]["name"] == "shared-a100")
    assert sorted(r["name"] for r in shared["status"]["reservedFor"]) == ["notebook-1", "notebook-2"]
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    waiting = [name for name, p in pods.items() if not p["spec"].get("nodeName")]
    assert waiting == ["finetune-llm"]
    (scheduled,) = [c for c in pods["finetune-llm"]["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert "cannot allocate all claims" in scheduled["message"]


def test_simulate_refuses_a_pod_naming_a_missing_priority_class(tmp_path):
    bad = tmp_path / "pod.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n")
    result = run("simulate", "-f", str(bad))
    assert result.exit_code == 2
    assert result.output.strip() == f"{bad}: Pod/web: spec.priorityClassName: no PriorityClass with name gold was found"


def test_simulate_refuses_an_unknown_plugin_in_the_config(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n"
    )
    result = run("simulate", "-f", EXAMPLE, "--config", str(config))
    assert result.exit_code == 2
    assert "profile 'default-scheduler': plugin 'NoSuchPlugin' does not exist" in result.output


def test_until_runs_simulated_time():
    result = run("simulate", "-f", EXAMPLE, "--until", "10m")
    assert result.exit_code == 0
    assert "600s simulated" in result.output


def test_config_validate_shows_each_profile():
    result = run("config", "validate", str(ROOT / "configs" / "bin-packing.yaml"))
    assert result.exit_code == 0, result.output
    assert "profile bin-packing-scheduler:" in result.output
    assert result.output.strip().endswith("bin-packing.yaml: valid")


def test_default_config_file_is_the_built_in_default():
    from kubesched.core.framework.config import load_config
    from kubesched.plugins import DEFAULT_PLUGINS

    written = load_config(ROOT / "configs" / "default.yaml", DEFAULT_PLUGINS).profiles[0].plugins
    built_in = load_config(None, DEFAULT_PLUGINS).profiles[0].plugins
    # the file re-declares every default through multiPoint: the merged sets keep the same names and weights
    assert [(p.name, p.weight) for p in written.multi_point.enabled] == [
        (p.name, p.weight) for p in built_in.multi_point.enabled
    ]


def test_plugins_lists_the_built_ins_with_their_extension_points():
    result = run("plugins")
    assert result.exit_code == 0
    assert "NodeResourcesFit" in result.output and "DefaultBinder" in result.output


TAINTS = ROOT / "examples" / "device-taints"


def test_simulate_device_taint_example_evicts_and_reschedules_onto_untainted_gpus():
    # the command the README shows
    result = run("simulate", "-f", str(TAINTS / "cluster"), "--at", f"1m={TAINTS / 'taint-gpu-b.yaml'}",
                 "--at", f"2m={TAINTS / 'train-0.yaml'}", "--until", "5m", "-o", "yaml")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    events = [(d["lastTimestamp"], d["involvedObject"]["name"], d["reason"], d["message"])
              for d in docs if d["kind"] == "Event"]
    assert ("2026-01-01T00:00:00Z", "train-0", "Scheduled", "Successfully assigned default/train-0 to gpu-b") in events
    assert ("2026-01-01T00:01:00Z", "train-0", "DeviceTaintManagerEviction", "Marking for deletion") in events
    assert ("2026-01-01T00:02:00Z", "train-0", "Scheduled", "Successfully assigned default/train-0 to gpu-a") in events
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    assert pods["train-0"]["spec"]["nodeName"] == "gpu-a" and pods["infer-0"]["spec"]["nodeName"] == "gpu-c"
    claims = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaim"}
    pools = {name: {r["pool"] for r in c["status"]["allocation"]["devices"]["results"]} for name, c in claims.items()}
    assert sorted(pools.values(), key=sorted) == [{"gpu-a"}, {"gpu-c"}]  # the evicted pod's claim was deleted
    (rule,) = [d for d in docs if d["kind"] == "DeviceTaintRule"]
    assert rule["spec"]["taint"]["timeAdded"] == "2026-01-01T00:01:00Z"
    (condition,) = rule["status"]["conditions"]
    assert (condition["reason"], condition["message"]) == ("Completed", "1 pod evicted since starting the controller.")


def test_simulate_applies_and_deletes_objects_at_simulated_times(tmp_path):
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: late}\nspec:\n  containers: [{name: c, image: i}]\n")
    (tmp_path / "node.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n")
    relabelled = tmp_path / "node-labelled.yaml"
    relabelled.write_text((tmp_path / "node.yaml").read_text().replace("{name: n1}", "{name: n1, labels: {a: b}}"))
    result = run("simulate", "-f", str(tmp_path / "pod.yaml"), "--at", f"90s={tmp_path / 'node.yaml'}",
                 "--at", f"1h30m={relabelled}", "--delete-at", f"2h={tmp_path / 'pod.yaml'}",
                 "--delete-at", f"3h={tmp_path / 'pod.yaml'}", "-o", "yaml")
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [d for d in docs if d["kind"] == "Pod"] == []
    (node,) = [d for d in docs if d["kind"] == "Node"]
    assert node["metadata"]["labels"] == {"a": "b"} and node["metadata"]["creationTimestamp"] == "2026-01-01T00:01:30Z"
    scheduled = [d["lastTimestamp"] for d in docs if d["kind"] == "Event" and d["reason"] == "Scheduled"]
    assert len(scheduled) == 1 and "2026-01-01T00:01:30Z" <= scheduled[0] < "2026-01-01T00:02:00Z"  # after its backoff


@pytest.mark.parametrize("value, message", [
    ("90s", "--at: expected OFFSET=FILE, got '90s'"),
    ("soon=x.yaml", "--at: invalid duration 'soon'"),
    ("1m=missing.yaml", "missing.yaml"),
])
def test_simulate_refuses_a_bad_timed_change(value, message):
    result = run("simulate", "-f", EXAMPLE, "--at", value)
    assert result.exit_code == 2
    assert message in result.output


def test_simulate_names_the_file_and_object_the_cluster_refuses_at_its_time(tmp_path):
    bad = tmp_path / "pod.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                   "spec: {priorityClassName: missing, containers: [{name: c, image: i}]}\n")
    result = run("simulate", "-f", EXAMPLE, "--at", f"5m={bad}")
    assert result.exit_code == 2
    assert f"{bad}: Pod/p: spec.priorityClassName: no PriorityClass with name missing was found" in result.output


def test_simulate_help_documents_timed_changes():
    result = run("simulate", "--help")
    assert "--at" in result.output and "--delete-at" in result.output and "OFFSET=FILE" in result.output


def test_simulate_preemption_example_shows_the_preempted_events_and_placements():
    result = runner.invoke(app, ["simulate", "-f", str(ROOT / "examples" / "preemption")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    preemptions = [line for line in lines if "Preempted by pod" in line]
    assert [(line.split("│")[2].strip(), line.split("│")[3].strip()) for line in preemptions] == [
        ("jobs/batch-2", "shop/checkout-1"), ("jobs/batch-3", "shop/checkout-1"), ("jobs/batch-4", "shop/web-1")]
    assert all("on node node-a" in line for line in preemptions[:2]) and "on node node-c" in preemptions[2]
    placed = {line.split("│")[1].strip(): line.split("│")[3].strip() for line in lines if line.startswith("│ ")
              and "/" in line.split("│")[1] and len(line.split("│")) == 6}
    assert placed["shop/checkout-1"] == "node-a" and placed["shop/web-1"] == "node-c"
    assert placed["shop/report-1"] == "-" and placed["data/etl-1"] == "node-b"
    assert "preemption: not eligible due to preemptionPolicy=Never." in result.output
    assert "6 pod(s) scheduled, 2 pending, 3 node(s)" in result.output


@pytest.mark.parametrize("args, problem", [
    (["explain", "a/b", "--from", "x.jsonl", "--config", "c.yaml"], "--config, --seed, --at and --delete-at shape a simulation"),
    (["explain", "a/b", "--from", "x.jsonl", "--seed", "3"], "--config, --seed, --at and --delete-at shape a simulation"),
    (["compare", "--config", "a.yaml", "--config", "b.yaml", "--trace", "t", "--seed", "3"],
     "--seed does not apply to --trace"),
    (["sweep", "s.yaml", "--engine", "ray", "--workers", "2"], "--workers: the local engine's"),
    (["sweep", "s.yaml", "--address", "127.0.0.1:6379"], "--address: the Ray cluster's"),
    (["report", "results.json", "--published", "p"], "--published: a sweep's results only"),
    (["run", "--embedded", "--binding-workers", "4"], "--binding-workers: zero or more, against an API server"),
])
def test_options_a_mode_would_ignore_are_refused(args, problem):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and problem in result.output


def test_a_sweep_report_refuses_a_heatmap_it_would_not_draw(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path), "--heatmap", "r.json"])
    assert result.exit_code == 2 and "--heatmap: replay results only" in result.output


def test_simulate_takes_a_profile_of_a_file_as_compare_does():
    default = run("simulate", "-f", EXAMPLE, "-o", "json")
    packed = run("simulate", "-f", EXAMPLE, "--config", str(ROOT / "configs/bin-packing.yaml") + ":bin-packing-scheduler",
                 "-o", "json")
    assert default.exit_code == packed.exit_code == 0, packed.output

    def nodes(output: str) -> dict:
        return {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["spec"].get("nodeName")
                for o in json.loads(output)["items"] if o["kind"] == "Pod"}

    # MostAllocated packs the inference pod beside the training pod on gpu-a3
    assert nodes(default.output)["ml/infer-bert"] == "gpu-b3" and nodes(packed.output)["ml/infer-bert"] == "gpu-a3"
    missing = run("simulate", "-f", EXAMPLE, "--config", str(ROOT / "configs/bin-packing.yaml") + ":nope")
    assert missing.exit_code == 2
    assert missing.output.strip().endswith("bin-packing.yaml: profiles: no profile with schedulerName 'nope'")


def test_explain_simulates_timed_changes_and_says_when_a_pod_was_preempted():
    gangs, arrival = str(ROOT / "examples/gangs"), str(ROOT / "examples/gangs-arrivals/urgent-pretrain.yaml")
    result = run("explain", "llm-pretrain-worker-1", "-f", gangs, "--at", f"5m={arrival}")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ml/llm-pretrain-worker-1 is no longer in the cluster: preempted at +300s by "
                                    "podgroup/ml/urgent-pretrain; its last attempt:\n")
    group = run("explain", "podgroup/ml/urgent-pretrain", "-f", gangs, "--at", f"5m={arrival}")
    assert "Attempt 1 preempted (DefaultPreemption): 4 victim(s)" in group.output
    assert run("explain", "x", "--from", "d.jsonl", "--at", f"5m={arrival}").exit_code == 2


def test_pod_level_resources_example_fits_pods_on_their_pod_level_requests():
    """Two pods with spec.resources.requests.cpu: 3 (containers asking 100m) on one 4-CPU node: one is bound,
    the other Pending with kube-scheduler's message (issue 35)."""
    result = runner.invoke(app, ["simulate", "-f", str(ROOT / "examples" / "pod-level-resources")],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[4].strip() for line in result.output.splitlines()
            if line.startswith("│ default/")}
    assert len(rows) == 2 and "Scheduled" in rows.values()
    assert any(status.startswith("Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.")
               for status in rows.values()), rows


@pytest.mark.parametrize("width, encoding", [(80, "utf-8"), (30, "utf-8"), (80, "ascii")])
@pytest.mark.parametrize("rows", [
    [],
    [("default/web-1", "0", "node-1", "Scheduled"), ("ml/日本", "1000", "node-22", "Scheduled")],
    [("default/web-2", "0", "-", "Unschedulable: [bold]0/5[/bold] nodes :smile: are available.")],
    [("default/web-3", "0", "-", "two\nlines")],
])
def test_simulate_tables_print_the_text_rich_prints(rows, width, encoding):
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from kubesched.cli.tables import print_table

    out = type("Out", (io.StringIO,), {"encoding": encoding})  # the encoding rich picks its box characters for
    ours, richs = out(), out()
    print_table(Console(file=ours, width=width), "Placements", ("POD", "PRIORITY", "NODE", "STATUS"), rows)
    table = Table(title="Placements")
    for column in ("POD", "PRIORITY", "NODE", "STATUS"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    Console(file=richs, width=width).print(table)
    assert ours.getvalue() == richs.getvalue()
    assert ("[" in ours.getvalue()) == any("[" in cell for row in rows for cell in row)  # cells are text, not markup
