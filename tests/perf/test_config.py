"""Loading scheduler_perf config files: fields, params, refusals."""

from __future__ import annotations

import pytest

from kubesched.perf.config import Params, PerfConfigError, load_test_cases, resolve_op

from .helpers import DATA, MISC, basic_case, write_config


@pytest.mark.parametrize("relative", [
    "misc/performance-config.yaml",
    "volumes/performance-config.yaml",
    "default_preemption/performance-config.yaml",
    "dra/performance-config.yaml",
    "dra/devicetaints/performance-config.yaml",
    "stress/performance-config.yaml",
    "starvation/performance-config.yaml",
    "dra/listattributes/performance-config.yaml",
    "dra/compatibilitygroups/performance-config.yaml",
])
def test_every_shipped_config_loads(relative):
    cases = load_test_cases(DATA / relative)
    assert cases and all(case.workloads and case.ops for case in cases)


def test_scheduling_basic_model():
    case = next(c for c in load_test_cases(MISC) if c.name == "SchedulingBasic")
    assert [op.opcode for op in case.ops] == ["createNodes", "createPods", "createPods"]
    assert case.default_pod_template_path == (DATA / "templates/pod-default.yaml").resolve()
    workload = case.workload("5000Nodes_10000Pods")
    assert workload.threshold == 680 and workload.labels == ("performance",)
    assert workload.threshold_metric == "SchedulingThroughput"
    assert case.workload("5Nodes").feature_gates == {"SchedulerAsyncAPICalls": False}
    with pytest.raises(PerfConfigError, match="no workload named 'nope'"):
        case.workload("nope")


def test_count_params_resolve_from_the_workload():
    case = next(c for c in load_test_cases(MISC) if c.name == "SchedulingBasic")
    params = Params(case.workload("500Nodes"))
    counts = [resolve_op(op, params)["count"] for op in case.ops]
    assert counts == [500, 500, 1000]
    assert params.unused() == []


def test_duration_and_template_params(tmp_path):
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 1, "templateParams": {"size": "$size", "fixed": 3}},
        {"opcode": "sleep", "durationParam": "$pause"},
        {"opcode": "createPods", "count": 1, "collectMetrics": True, "steadyStateParam": "$steady",
         "durationParam": "$pause"},
    ], workloads=[{"name": "w", "params": {"size": 7, "pause": "1m30s", "steady": True}}])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    params = Params(loaded.workloads[0])
    nodes, sleep, pods = (resolve_op(op, params) for op in loaded.ops)
    assert nodes["templateParams"] == {"size": 7, "fixed": 3}
    assert sleep["duration"] == 90.0
    assert pods["steadyState"] is True and pods["duration"] == 90.0
    assert params.unused() == []


@pytest.mark.parametrize("params, problem", [
    ({}, "parameter measurePods is undefined"),
    ({"measurePods": "ten"}, "parameter measurePods has the wrong type"),
])
def test_bad_params_are_refused(tmp_path, params, problem):
    case = basic_case(workloads=[{"name": "w", "params": {"initNodes": 1, **params}}])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    with pytest.raises(PerfConfigError, match=problem):
        [resolve_op(op, Params(loaded.workloads[0])) for op in loaded.ops]


def test_keys_match_case_insensitively(tmp_path):
    case = basic_case(workloadTemplate=[
        {"Opcode": "createNodes", "CountParam": "$initNodes"},
        {"opcode": "createPods", "countparam": "$measurePods", "CollectMetrics": True},
    ])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    assert loaded.ops[1].fields == {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True}


@pytest.mark.parametrize("mutate, problem", [
    (lambda c: c["workloadTemplate"][1].update(podTemplate="x.yaml"), "unknown field 'podTemplate'"),
    (lambda c: c.update(workloadTemplates=[]), "unknown field 'workloadTemplates'"),
    (lambda c: c["workloads"][0].update(treshold=5), "unknown field 'treshold'"),
    (lambda c: c["workloads"][0].update(threshold="fast"), "threshold: expected a number"),
    (lambda c: c["workloadTemplate"][1].update(collectMetrics=False), "no op in the workload template collects"),
    (lambda c: c["workloadTemplate"][1].update(skipWaitToCompletion=True), "cannot be true at the same time"),
    (lambda c: c["workloadTemplate"][0].update(countParam="initNodes"), "expected a $parameter reference"),
    (lambda c: c["workloadTemplate"][0].update(count=-1), "expected a non-negative integer"),
    (lambda c: c["workloads"].append(dict(c["workloads"][0])), "workload name w is not unique"),
    (lambda c: c.update(workloads=[]), "no workloads defined"),
    (lambda c: c["workloadTemplate"].append({"opcode": "churn", "mode": "sometimes", "templatePaths": ["x"]}),
     "invalid mode"),
    (lambda c: c["workloadTemplate"].append({"opcode": "barrier", "stageRequirement": "Bound"}),
     "invalid 'Bound'"),
])
def test_bad_fields_are_refused_naming_the_place(tmp_path, mutate, problem):
    case = basic_case()
    mutate(case)
    path = write_config(tmp_path, [case])
    with pytest.raises(PerfConfigError) as err:
        load_test_cases(path)
    assert problem in str(err.value)
    assert str(err.value).startswith(str(path))


def test_duplicate_test_case_names_are_refused(tmp_path):
    with pytest.raises(PerfConfigError, match="Tiny: name is not unique"):
        load_test_cases(write_config(tmp_path, [basic_case(), basic_case()]))


def test_missing_or_unparsable_file(tmp_path):
    with pytest.raises(PerfConfigError, match="cannot read"):
        load_test_cases(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: [unclosed\n")
    with pytest.raises(PerfConfigError, match="cannot parse"):
        load_test_cases(bad)
    bad.write_text("name: not-a-list\n")
    with pytest.raises(PerfConfigError, match="expected a non-empty list of test cases"):
        load_test_cases(bad)


def test_ops_kubesched_does_not_run_keep_their_fields(tmp_path):
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "createResourceClaims", "namespace": "d",
                                        "countParam": "$claims"})
    case["workloads"][0]["params"]["claims"] = 2
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    op = loaded.ops[1]
    assert not op.supported and op.fields["namespace"] == "d"


def test_an_opcode_missing_from_the_table_is_refused_at_load_naming_it_and_the_file(tmp_path):
    case = basic_case()
    case["workloadTemplate"].insert(1, {"opcode": "teleportPods", "count": 3})
    path = write_config(tmp_path, [case])
    with pytest.raises(PerfConfigError) as err:
        load_test_cases(path)
    message = str(err.value)
    assert message.startswith(f"{path}: Tiny: workloadTemplate[1]: unknown opcode 'teleportPods'")
    assert "createPodGroups" in message  # the opcodes kubesched knows


def test_every_op_of_the_table_is_known_to_config_loading(tmp_path):
    from kubesched.perf.ops import OPS

    for opcode, op_class in OPS.items():
        assert op_class.RUNS == (opcode not in ("createResourceClaims", "startCollectingProfile",
                                                "stopCollectingProfile"))
        case = basic_case()
        raw = {"opcode": opcode}
        if op_class.RUNS:  # fields no op has are refused, by its own name
            raw["noSuchField"] = 1
            with pytest.raises(PerfConfigError, match=f"\\({opcode}\\): unknown field 'noSuchField'"):
                load_test_cases(write_config(tmp_path, [{**case, "workloadTemplate": [raw, *case["workloadTemplate"]]}]))


def test_a_threshold_map_applies_the_value_of_the_configs_topic(tmp_path):
    folder = tmp_path / "dra"
    folder.mkdir()
    workloads = [{"name": "mapped", "params": {"initNodes": 1, "measurePods": 1}, "threshold": {"dra": 56, "misc": 9}},
                 {"name": "other", "params": {"initNodes": 1, "measurePods": 1}, "threshold": {"misc": 9}},
                 {"name": "plain", "params": {"initNodes": 1, "measurePods": 1}, "threshold": 40}]
    (case,) = load_test_cases(write_config(folder, [basic_case(workloads=workloads)]))
    assert [w.threshold for w in case.workloads] == [56.0, 0.0, 40.0]
    bad = basic_case(workloads=[{"name": "w", "params": {}, "threshold": {"dra": "fast"}}])
    with pytest.raises(PerfConfigError, match="threshold: expected a number"):
        load_test_cases(write_config(folder, [bad]))


def test_a_param_with_a_default_takes_it_when_the_workload_leaves_it_out():
    from kubesched.perf.config import Workload

    params = Params(Workload(name="w", params={"numDevices": 8}))
    assert params.any("$numDevices|64") == 8
    assert params.any("$numPCIRoots|2") == 2
    assert params.any("$constraints|") == ""
    with pytest.raises(PerfConfigError, match="parameter missing is undefined"):
        params.any("$missing")


def test_scheduler_api_client_limits_workload_over_test_case_over_default(tmp_path):
    case = basic_case(schedulerApiClientQPS=100, workloads=[
        {"name": "case", "params": {"initNodes": 1, "measurePods": 1}},
        {"name": "own", "schedulerApiClientBurst": 7, "params": {"initNodes": 1, "measurePods": 1}},
    ])
    loaded = load_test_cases(write_config(tmp_path, [case, basic_case(name="Unlimited")]))
    assert loaded[0].api_client_limits(loaded[0].workload("case")) == (100.0, 5000)
    assert loaded[0].api_client_limits(loaded[0].workload("own")) == (100.0, 7)
    assert loaded[1].api_client_limits(loaded[1].workload("w")) is None


@pytest.mark.parametrize("field, value, message", [
    ("schedulerApiClientQPS", 0, "schedulerApiClientQPS: expected a positive number, got 0"),
    ("schedulerApiClientBurst", 1.5, "schedulerApiClientBurst: expected a positive integer, got 1.5"),
])
def test_scheduler_api_client_limits_are_checked(tmp_path, field, value, message):
    with pytest.raises(PerfConfigError, match=message):
        load_test_cases(write_config(tmp_path, [basic_case(**{field: value})]))


def test_the_starvation_suite_sets_its_scheduler_client_limits():
    cases = {c.name: c for c in load_test_cases(DATA / "starvation/performance-config.yaml")}
    victims = cases["StarvationHighPriorityVictims"]
    assert victims.api_client_limits(victims.workload("10Nodes_100Cloggers")) == (100.0, 100)
    independent = cases["StarvationIndependent"]
    assert independent.api_client_limits(independent.workload("10Nodes_100Cloggers")) is None
