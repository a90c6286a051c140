"""barrier's stageRequirement: Attempted waits for one scheduling cycle per pod, Scheduled for bindings."""

from __future__ import annotations

import pytest

from kubesched.core.clock import FakeClock
from kubesched.perf.config import load_test_cases
from kubesched.perf.errors import WorkloadFailed
from kubesched.perf.executor import WorkloadExecutor

from .helpers import basic_case, write_config

HUGE_POD = ("apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: huge-\nspec:\n  containers:\n"
            "  - name: c\n    resources:\n      requests:\n        cpu: \"100\"\n")


def run_case(tmp_path, ops: list[dict]) -> WorkloadExecutor:
    (tmp_path / "huge.yaml").write_text(HUGE_POD)
    case = basic_case(workloadTemplate=[{"opcode": "createNodes", "count": 2},
                                        {"opcode": "createPods", "count": 2, "collectMetrics": True}, *ops],
                      workloads=[{"name": "w", "params": {}}])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    executor = WorkloadExecutor(loaded, loaded.workloads[0], clock=FakeClock(1e9))
    executor.check()
    executor.run()
    return executor


def test_attempted_passes_once_every_pod_went_through_a_cycle_and_keeps_the_namespace(tmp_path):
    executor = run_case(tmp_path, [
        {"opcode": "createPods", "count": 3, "namespace": "waiting", "podTemplatePath": "huge.yaml",
         "skipWaitToCompletion": True},
        {"opcode": "barrier", "namespaces": ["waiting"], "stageRequirement": "Attempted"},
    ])
    pods = executor.cluster.list("Pod", "waiting").items
    assert len(pods) == 3 and not any(p.spec.node_name for p in pods)
    assert all(any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in p.status.conditions)
               for p in pods)
    assert executor.namespaces["waiting"] == 3  # still awaited by a later Scheduled barrier


def test_scheduled_fails_on_pods_that_never_fit_saying_why(tmp_path):
    with pytest.raises(WorkloadFailed) as err:
        run_case(tmp_path, [
            {"opcode": "createPods", "count": 3, "namespace": "waiting", "podTemplatePath": "huge.yaml",
             "skipWaitToCompletion": True},
            {"opcode": "barrier", "namespaces": ["waiting"], "stageRequirement": "Attempted"},
            {"opcode": "barrier", "namespaces": ["waiting"]},
        ])
    message = str(err.value)
    assert message.startswith("op 4 (barrier): ")
    assert "3 pods in namespace waiting to be scheduled" in message and "Insufficient cpu" in message


def test_scheduled_forgets_the_namespaces_it_waited_for(tmp_path):
    with pytest.raises(WorkloadFailed) as err:
        run_case(tmp_path, [
            {"opcode": "createPods", "count": 2, "namespace": "fits", "skipWaitToCompletion": True},
            {"opcode": "barrier", "stageRequirement": "Scheduled"},
            {"opcode": "barrier", "namespaces": ["fits"]},
        ])
    assert str(err.value) == "op 4 (barrier): unknown namespace fits"
