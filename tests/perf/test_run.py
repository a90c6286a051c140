"""Running workloads end to end on the real clock (tiny ones: well under a second each)."""

from __future__ import annotations

import io
import json

import pytest

from kubesched.cli.perf import perf_command, render
from kubesched.perf import run
from kubesched.perf.config import load_test_cases
from kubesched.perf.executor import WorkloadExecutor

from .helpers import DATA, MISC, basic_case, executor_for, write_config


def test_scheduling_basic_5nodes_binds_every_pod():
    executor = executor_for(MISC, "SchedulingBasic", "5Nodes")
    nodes = executor.cluster.list("Node").items
    pods = executor.cluster.list("Pod").items
    assert len(nodes) == 5
    assert all(n.metadata.name.startswith("node-0-") for n in nodes)
    assert all(n.metadata.labels["kubernetes.io/hostname"] == n.metadata.name for n in nodes)
    assert len(pods) == 15 and all(p.spec.node_name for p in pods)
    assert {p.metadata.namespace for p in pods} == {"namespace-1", "namespace-2"}
    assert executor.measured_pods == 10
    assert executor.scheduler.stats.bound == 15


def test_json_output_is_upstreams_data_items():
    results = run(MISC, test="SchedulingBasic", workload="5Nodes")
    assert [r.status for r in results] == ["ok"]
    out = io.StringIO()
    render(results, "json", out=out)
    document = json.loads(out.getvalue())
    assert document["version"] == "v1"
    item, *histograms = document["dataItems"]
    assert item["unit"] == "pods/s"
    assert item["labels"] == {"Metric": "SchedulingThroughput", "Name": "SchedulingBasic/5Nodes"}
    assert set(item["data"]) == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}
    assert item["data"]["Average"] > 0
    assert results[0].feature_gates == {"SchedulerAsyncAPICalls": False}
    # upstream's default metricsCollectorConfig: the scheduler's histograms over the measured pods, in ms
    by_metric = {(h["labels"]["Metric"], h["labels"].get("extension_point", h["labels"].get("result", ""))): h
                 for h in histograms}
    bind = by_metric[("scheduler_framework_extension_point_duration_seconds", "Bind")]
    assert bind["unit"] == "ms" and bind["labels"]["Name"] == "SchedulingBasic/5Nodes"
    assert set(bind["data"]) == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}
    assert 0 < bind["data"]["Perc50"] <= bind["data"]["Perc99"]
    assert ("scheduler_scheduling_attempt_duration_seconds", "scheduled") in by_metric
    assert ("scheduler_pod_scheduling_sli_duration_seconds", "") in by_metric
    assert ("scheduler_scheduling_attempt_duration_seconds", "error") not in by_metric  # no observation: no item


def test_histogram_quantiles_interpolate_within_a_bucket_as_prometheus_does():
    from kubesched.perf.histograms import quantile

    buckets = [(0.001, 10.0), (0.002, 30.0), (0.004, 40.0), (float("inf"), 40.0)]
    assert quantile(0.5, buckets) == pytest.approx(0.0015)  # rank 20: halfway through (1ms, 2ms]
    assert quantile(0.25, buckets) == pytest.approx(0.001)
    assert quantile(0.99, buckets) == pytest.approx(0.002 + 0.002 * 9.6 / 10)
    assert quantile(0.5, [(0.001, 0.0), (float("inf"), 4.0)]) == 0.001  # in +Inf: the highest finite bound


def test_table_shows_throughput_threshold_and_unsupported_reasons(tmp_path):
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "startCollectingProfile"})
    results = run(write_config(tmp_path, [case])) + run(MISC, test="SchedulingBasic", workload="5Nodes")
    out = io.StringIO()
    render(results, "table", out=out)
    text = out.getvalue()
    assert "SchedulingBasic/5Nodes" in text and "Average" in text and "Perc99" in text
    assert "Tiny/" in text and "unsupported op: startCollectingProfile" in text
    assert "SchedulerAsyncAPICalls=false" in text


PREEMPTION = DATA / "default_preemption/performance-config.yaml"


def test_preemption_basic_evicts_low_priority_pods_for_every_preemptor():
    executor = executor_for(PREEMPTION, "PreemptionBasic", "5Nodes")
    high = executor.cluster.list("Pod", "namespace-2").items
    low = executor.cluster.list("Pod", "namespace-1").items
    # 5 nodes (4 CPU) x 4 low-priority pods of 900m; each 3970m preemptor
    # (default_preemption/templates/pod-high-priority.yaml) needs all 4 of its node's gone
    assert len(high) == 5 and all(p.spec.node_name for p in high)
    assert len({p.spec.node_name for p in high}) == 5
    assert low == []
    preempted = [e for e in executor.cluster.list("Event").items if e.reason == "Preempted"]
    assert len(preempted) == 20
    assert executor.measured_pods == 5 and executor.data_items


@pytest.mark.parametrize("test, workload", [
    ("PreemptionAsync", "5Nodes"),
    ("Unschedulable", "5Nodes/1Init/10Pods"),
])
def test_workloads_with_preemption_churn_run(test, workload):
    # a 3970m preemptor every 200 ms fills the 5 nodes within 5 churn rounds: the measured pods must be
    # scheduled before that, so the churn runs on a clock a scheduling step moves 10 ms (a slow machine's
    # wall clock let the churn win: at 100 ms a step the measured pods never fit, upstream's too)
    executor = executor_for(PREEMPTION, test, workload, step_seconds=0.01)
    assert executor.data_items and executor.measured_pods == (5 if test == "PreemptionAsync" else 10)


def test_dra_workloads_run_with_the_test_driver_and_the_claim_controller():
    [result] = run(DATA / "dra/performance-config.yaml", test="SchedulingWithResourceClaimTemplate",
                   workload="fast_QueueingHintsEnabled")
    assert result.status == "ok" and result.measured_pods == 10
    # steady state for 2 s: on a clock each scheduling step moves 50 ms, so how many pods come and go does not
    # depend on the machine's speed (on the wall clock a slow enough machine would measure only the first 10)
    steady = executor_for(DATA / "dra/performance-config.yaml", "SteadyStateClusterResourceClaimTemplate",
                          "fast_QueueingHintsEnabled", step_seconds=0.05)
    assert steady.measured_pods > 10


def test_a_claim_constraint_no_device_can_meet_fails_naming_the_constraint():
    """Upstream's compatibilitygroups/ claim template asks matchAttribute dra.example.com/slice of devices that
    publish no attributes: its pods can never be scheduled, upstream's included (see benchmarks/README)."""
    [result] = run(DATA / "dra/compatibilitygroups/performance-config.yaml", workload="fast")
    assert result.status == "failed"
    assert "cannot allocate all claims" in result.reason
    assert "constraint matchAttribute dra.example.com/slice: no device publishes that attribute" in result.reason


@pytest.mark.parametrize("test,workload,scheduled", [
    ("DRABindingConditionsTest", "fast_AttachmentSuccess", 1),
    ("DRABindingConditionsTest", "fast_AttachmentFailed", 0),
    ("DRABindingConditionsTest", "multiple_pods_AttachmentSuccess", 5),
    ("DRABindingConditionsTest", "multiple_pods_AttachmentFailed", 0),
    ("DRABindingConditionsWithSharedResourceClaimTest", "multiple_pods_AttachmentSuccess", 5),
    ("DRABindingConditionsWithSharedResourceClaimTest", "multiple_pods_AttachmentFailed", 0),
])
def test_binding_conditions_workloads_bind_only_attached_devices(test, workload, scheduled):
    executor = executor_for(DATA / "dra/performance-config.yaml", test, workload, fake_clock=True)
    pods = executor.cluster.list("Pod", "test").items
    assert sum(1 for p in pods if p.spec.node_name) == scheduled
    events = {e.reason for e in executor.cluster.list("Event", "test").items}
    assert "BindingConditionsPending" in events
    assert ("FailedScheduling" in events) == (scheduled == 0)  # the failure condition failed PreBind


def test_an_upstream_op_kubesched_does_not_run_is_reported_not_skipped(tmp_path):
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "startCollectingProfile"})
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "unsupported" and result.reason == "unsupported op: startCollectingProfile"


def test_an_unknown_opcode_stops_the_file_before_anything_runs(tmp_path, capsys):
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "teleportPods"})
    path = write_config(tmp_path, [case])
    assert perf_command(path, None, None, "table") == 2
    assert f"{path}: Tiny: workloadTemplate[1]: unknown opcode 'teleportPods'" in capsys.readouterr().err


@pytest.mark.parametrize("test, workload", [
    ("SchedulingDaemonset", "5Nodes"),
    ("SchedulingWhileGated", "1Node_10GatedPods"),
    ("SchedulingDeletedPodsWithFinalizers", "10Node_100DeletingPods"),
    ("SchedulingWithExtendedResource", "fast"),
])
def test_other_misc_workloads_run(test, workload):
    executor = executor_for(MISC, test, workload)
    assert executor.data_items and executor.measured_pods == 10
    if test == "SchedulingDaemonset":
        bound = {p.spec.node_name for p in executor.cluster.list("Pod").items}
        assert bound == {"scheduler-perf-node"}
    if test == "SchedulingWhileGated":
        gated = executor.cluster.list("Pod", "namespace-1").items
        assert len(gated) == 10 and not any(p.spec.node_name for p in gated)
    if test == "SchedulingWithExtendedResource":
        for pod in executor.cluster.list("Pod", "test").items:
            wanted = next(iter(pod.spec.containers[0].resources.requests))
            node = executor.cluster.get("Node", pod.spec.node_name)
            assert wanted in node.status.capacity


def test_namespaces_barrier_create_any_delete_and_explicit_collection(tmp_path):
    priority_class = tmp_path / "pc.yaml"
    priority_class.write_text("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                              "metadata:\n  name: pc-{{.Index}}\nvalue: {{MultiplyInt .Index 10}}\n")
    light = str(DATA / "templates/light-pod.yaml")
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 2},
        {"opcode": "createNamespaces", "prefix": "team", "count": 2},
        {"opcode": "createAny", "templatePath": str(priority_class), "count": 3},
        {"opcode": "churn", "mode": "create", "number": 2, "intervalMilliseconds": 1,
         "templatePaths": [light]},
        {"opcode": "startCollectingMetrics", "namespaces": ["team-0", "team-1"]},
        {"opcode": "createPods", "count": 3, "namespace": "team-0", "skipWaitToCompletion": True},
        {"opcode": "createPods", "count": 2, "namespace": "team-1", "skipWaitToCompletion": True},
        {"opcode": "barrier"},
        {"opcode": "stopCollectingMetrics"},
        {"opcode": "deletePods", "namespace": "team-0"},
        {"opcode": "deletePods", "namespace": "team-1", "deletePodsPerSecond": 1000},
    ], workloads=[{"name": "w", "params": {}}])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    executor = WorkloadExecutor(loaded, loaded.workloads[0])
    executor.check()
    executor.run()
    cluster = executor.cluster
    assert {n.metadata.name for n in cluster.list("Namespace").items} >= {"team-0", "team-1", "namespace-3"}
    assert [pc.value for pc in sorted(cluster.list("PriorityClass").items, key=lambda p: p.metadata.name)] == \
        [0, 10, 20]
    assert cluster.list("Pod", "team-0").items == [] and cluster.list("Pod", "team-1").items == []
    assert executor.measured_pods == 5 and executor.data_items
    assert executor.data_items[0].labels == {"Metric": "SchedulingThroughput", "Name": "Tiny/w"}


def test_scheduler_config_path_is_honoured(tmp_path):
    scoring = DATA / "dra/extendedresource/scoring/scheduler-config.yaml"
    [result] = run(write_config(tmp_path, [basic_case(schedulerConfigPath=str(scoring))]))
    assert result.status == "ok"

    bad = tmp_path / "sched.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n"
                   "      enabled:\n      - name: NoSuchPlugin\n")
    [result] = run(write_config(tmp_path, [basic_case(schedulerConfigPath="sched.yaml")]))
    assert result.status == "failed" and "NoSuchPlugin" in result.reason


def test_unused_params_fail_the_workload(tmp_path):
    case = basic_case(workloads=[{"name": "w", "params": {"initNodes": 1, "measurePods": 1, "typo": 3}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "failed" and "['typo']" in result.reason and "unused" in result.reason


def test_pods_that_can_never_fit_fail_quickly_saying_why(tmp_path):
    huge = tmp_path / "huge.yaml"
    huge.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: huge-\nspec:\n  containers:\n"
                    "  - name: c\n    resources:\n      requests:\n        cpu: \"100\"\n")
    [result] = run(write_config(tmp_path, [basic_case(defaultPodTemplatePath="huge.yaml")]))
    assert result.status == "failed"
    assert "stuck waiting for 4 pods in namespace namespace-1 to be scheduled" in result.reason
    assert "Insufficient cpu" in result.reason


def test_pods_with_priority_need_default_preemption(tmp_path):
    no_preemption = tmp_path / "sched.yaml"
    no_preemption.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                             "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n"
                             "      disabled:\n      - name: DefaultPreemption\n")
    case = basic_case(schedulerConfigPath=str(no_preemption),
                      defaultPodTemplatePath=str(DATA / "templates/pod-high-priority.yaml"))
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "unsupported"
    assert "unsupported op: createPods of pods with priority 10" in result.reason


def test_perf_command_exit_codes(tmp_path, capsys):
    assert perf_command(MISC, "SchedulingBasic", "5Nodes", "json") == 0
    assert json.loads(capsys.readouterr().out)["dataItems"]
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "startCollectingProfile"})
    assert perf_command(write_config(tmp_path, [case]), "Tiny", "w", "json") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"version": "v1", "dataItems": []}
    assert "Tiny/w: unsupported: unsupported op: startCollectingProfile" in captured.err
    assert perf_command(tmp_path / "nope.yaml", None, None, "table") == 2
    assert "cannot read" in capsys.readouterr().err
    assert perf_command(MISC, "NoSuchTest", None, "table") == 2
    assert "no test case named 'NoSuchTest'" in capsys.readouterr().err
    assert perf_command(MISC, "SchedulingBasic", "NoSuchWorkload", "table") == 2
    assert perf_command(MISC, None, None, "yaml") == 2


def test_a_gate_locked_in_the_release_runs_as_the_newest_release_that_sets_it():
    """misc/'s SchedulingWithExtendedResource/fast turns DRAExtendedResource off, GA and locked on in 1.37: the
    workload runs as 1.36 with the gate off (said in one note), never at 1.37 with the gate left on."""
    executor = executor_for(MISC, "SchedulingWithExtendedResource", "fast")
    assert executor.features.emulated_version == "1.36" and not executor.features.enabled("DRAExtendedResource")
    assert ("featureGates: DRAExtendedResource=false is locked in 1.37: this workload runs as 1.36, the newest "
            "release where it can be set") in executor.notes
