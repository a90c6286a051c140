"""The ops of the workload-aware suites on their own: createPodGroups, waitForPodGroups,
createAny of PodGroups, countMultiplierParam, and the refusals around them."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kubesched.core.api.core_v1 import Pod
from kubesched.core.clock import FakeClock
from kubesched.perf import run
from kubesched.perf.config import Params, load_test_cases, resolve_op
from kubesched.perf.errors import PerfConfigError, Unsupported, WorkloadFailed
from kubesched.perf.executor import WorkloadExecutor
from kubesched.perf.ops.podgroups import WaitForPodGroups, cached_pod_groups
from kubesched.perf.ops.sources import ObjectSource

from .helpers import DATA, basic_case, executor_for, write_config

GANG_GROUP = str(DATA / "podgroup/gangscheduling/templates/podgroup.yaml")
TAS_GROUP = str(DATA / "podgroup/tas/templates/podgroup.yaml")
PREEMPTION_GROUP = str(DATA / "workload_preemption/templates/podgroup.yaml")
DISRUPTION_GROUP = str(DATA / "templates/podgroup.yaml")


def run_ops(tmp_path, ops: list[dict], params: dict | None = None, run_it: bool = True) -> WorkloadExecutor:
    """An executor (fake clock) for a tiny test case: 2 nodes, ``ops``, then 2 plain measured pods."""
    case = basic_case(workloadTemplate=[{"opcode": "createNodes", "count": 2}, *ops,
                                        {"opcode": "createPods", "count": 2, "collectMetrics": True}],
                      workloads=[{"name": "w", "params": params or {}}])
    loaded = load_test_cases(write_config(tmp_path, [case]))[0]
    executor = WorkloadExecutor(loaded, loaded.workloads[0], clock=FakeClock(1e9))
    executor.check()
    if run_it:
        executor.run()
    return executor


def groups(executor: WorkloadExecutor, namespace: str) -> dict:
    return {g.metadata.name: g for g in executor.cluster.list("PodGroup", namespace).items}


def test_create_pod_groups_names_counts_and_min_count_come_from_the_template(tmp_path):
    executor = run_ops(tmp_path, [
        {"opcode": "createPodGroups", "countParam": "$groups", "namespace": "gang-ns-0", "templatePath": GANG_GROUP,
         "templateParams": {"podsPerGroup": "$podsPerGroup"}},
        {"opcode": "barrier", "namespaces": ["gang-ns-0"]},
    ], params={"groups": 3, "podsPerGroup": 4})
    created = groups(executor, "gang-ns-0")
    assert sorted(created) == ["gang-0", "gang-1", "gang-2"]
    assert all(g.is_gang and g.min_count == 4 for g in created.values())
    # the namespace was created and registered for barriers (the barrier above knew it)
    assert "gang-ns-0" in {n.metadata.name for n in executor.cluster.list("Namespace").items}
    # and the groups reached the scheduler's informer cache before the op ended
    assert cached_pod_groups(executor, "gang-ns-0") == 3


@pytest.mark.parametrize("params, priority, disrupts_all, mode", [
    ({"minCount": 2}, 1000, False, "single"),                    # no disruptionMode: the API's default
    ({"minCount": 2, "priority": 5, "disruptionMode": "single"}, 5, False, "single"),
    ({"minCount": 2, "disruptionMode": "all"}, 1000, True, "all"),
])
def test_v1alpha3_templates_with_if_eq_and_defaults(tmp_path, params, priority, disrupts_all, mode):
    executor = run_ops(tmp_path, [
        {"opcode": "createPodGroups", "count": 2, "namespace": "gang-preempt-1", "templatePath": DISRUPTION_GROUP,
         "templateParams": params},
    ])
    created = groups(executor, "gang-preempt-1")
    assert sorted(created) == ["gang-0", "gang-1"]
    group = created["gang-1"]
    assert group.min_count == 2 and group.priority_value == priority and group.disrupts_all == disrupts_all
    assert (group.spec.disruption_mode.all if mode == "all" else group.spec.disruption_mode.single) is not None


def test_workload_preemption_group_priority_defaults_to_the_pods_default(tmp_path):
    executor = run_ops(tmp_path, [
        {"opcode": "createPodGroups", "count": 1, "namespace": "low", "templatePath": PREEMPTION_GROUP,
         "templateParams": {"podsPerGroup": 2, "priority": 1000}},
        {"opcode": "createPodGroups", "count": 1, "namespace": "high", "templatePath": PREEMPTION_GROUP,
         "templateParams": {"podsPerGroup": 2}},
    ])
    assert groups(executor, "low")["gang-0"].priority_value == 1000
    assert groups(executor, "high")["gang-0"].priority_value == 8888888


def test_wait_for_pod_groups_waits_for_the_schedulers_informer_cache(tmp_path):
    executor = run_ops(tmp_path, [], run_it=False)
    executor.harness.start()
    executor.ensure_namespace("tas-0")
    for index in range(2):
        executor.cluster.create(from_template(TAS_GROUP, index))
    assert cached_pod_groups(executor, "tas-0") == 0  # in the cluster, not yet delivered to the informers
    WaitForPodGroups(executor, 3, "waitForPodGroups", {"namespace": "tas-0", "count": 2}).run()
    assert cached_pod_groups(executor, "tas-0") == 2
    assert executor.informers.store("PodGroup")["tas-0/gang-1"].topology_key == "topology.kubernetes.io/rack"
    with pytest.raises(WorkloadFailed, match=r"3 PodGroups of namespace tas-0 in the scheduler's informer cache.*"
                                             r"\(2 there\)"):
        WaitForPodGroups(executor, 3, "waitForPodGroups", {"namespace": "tas-0", "count": 3}).run()
    executor.harness.controllers.stop()


def from_template(path: str, index: int):
    group = ObjectSource(Path(path), "PodGroup", {"podsPerGroup": 3}).object(index)
    return attrs.evolve(group, metadata=attrs.evolve(group.metadata, namespace="tas-0"))


def test_create_any_then_wait_for_pod_groups_as_the_tas_suite_does(tmp_path):
    executor = run_ops(tmp_path, [
        {"opcode": "createAny", "countParam": "$groups", "namespace": "tas-0", "templatePath": TAS_GROUP,
         "templateParams": {"podsPerGroup": 4}},
        {"opcode": "waitForPodGroups", "namespace": "tas-0", "countParam": "$groups"},
    ], params={"groups": 3})
    created = groups(executor, "tas-0")
    assert sorted(created) == ["gang-0", "gang-1", "gang-2"]
    assert {g.topology_key for g in created.values()} == {"topology.kubernetes.io/rack"}
    assert cached_pod_groups(executor, "tas-0") == 3


def run_one_group(tmp_path, template: str, pods_per_group: int):
    """The result of a test case creating one PodGroup from ``template`` in namespace ``ns``."""
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 1},
        {"opcode": "createPodGroups", "count": 1, "namespace": "ns", "templatePath": template,
         "templateParams": {"podsPerGroup": pods_per_group}},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    return result


def test_a_pod_group_the_api_server_refuses_fails_the_workload_naming_the_file(tmp_path):
    result = run_one_group(tmp_path, GANG_GROUP, 0)
    assert result.status == "failed"
    assert result.reason.startswith(f"op 1 (createPodGroups): {GANG_GROUP}: creating PodGroup ns/gang-0: ")
    assert "spec.schedulingPolicy.gang.minCount" in result.reason


def test_a_template_of_another_kind_is_refused_before_anything_runs(tmp_path):
    pod_template = str(DATA / "podgroup/gangscheduling/templates/gang-pod.yaml")
    result = run_one_group(tmp_path, pod_template, 1)
    assert result.status == "failed" and result.reason == f"{pod_template}: expected a PodGroup, got Pod"
    assert result.measured_pods == 0


@pytest.mark.parametrize("op, problem", [
    ({"opcode": "createPodGroups", "count": 1, "templatePath": GANG_GROUP}, "namespace must be set"),
    ({"opcode": "createPodGroups", "count": 1, "namespace": "ns"}, "templatePath must be set"),
    ({"opcode": "waitForPodGroups", "count": -1}, "count: expected a non-negative integer"),
    ({"opcode": "waitForPodGroups", "countParam": "groups"}, "countParam: expected a $parameter reference"),
])
def test_bad_pod_group_ops_are_refused_at_load(tmp_path, op, problem):
    case = basic_case()
    case["workloadTemplate"].insert(1, op)
    path = write_config(tmp_path, [case])
    with pytest.raises(PerfConfigError) as err:
        load_test_cases(path)
    assert str(err.value).startswith(f"{path}: Tiny: workloadTemplate[1] ({op['opcode']}): ")
    assert problem in str(err.value)


def test_count_multiplier_param_makes_groups_times_pods_per_group():
    case = next(c for c in load_test_cases(DATA / "podgroup/gangscheduling/performance-config.yaml"))
    params = Params(case.workload("100Nodes_10Gangs"))
    counts = {op.opcode: resolve_op(op, params)["count"] for op in case.ops}
    assert counts == {"createNodes": 100, "createNamespaces": 1, "createPodGroups": 10, "createPods": 30}
    assert params.unused() == []


def test_gang_pods_name_their_group_by_index():
    source = ObjectSource(DATA / "podgroup/gangscheduling/templates/gang-pod.yaml", "Pod", {"podsPerGroup": 3})
    pods: list[Pod] = [source.object(index, 9) for index in range(9)]
    assert [p.spec.scheduling_group.pod_group_name for p in pods] == ["gang-0"] * 3 + ["gang-1"] * 3 + ["gang-2"] * 3
    assert pods[4].metadata.name == "test-gang-scheduling-4"


def checked_without(tmp_path, plugin: str, suite: str) -> WorkloadExecutor:
    """The short workload of ``suite`` checked with ``plugin`` disabled in the default profile."""
    config = tmp_path / "sched.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n"
                      f"      disabled:\n      - name: {plugin}\n")
    [case] = load_test_cases(DATA / suite)
    executor = WorkloadExecutor(attrs.evolve(case, scheduler_config_path=config), case.workloads[0],
                                clock=FakeClock(1e9))
    executor.check()
    return executor


def test_group_members_without_gang_scheduling_are_unsupported_not_scheduled_one_by_one(tmp_path):
    with pytest.raises(Unsupported) as err:
        checked_without(tmp_path, "GangScheduling", "podgroup/gangscheduling/performance-config.yaml")
    assert str(err.value) == ("createPods of pods in PodGroup 'gang-0' (spec.schedulingGroup): the GangScheduling "
                              "plugin is not enabled, so kubesched would schedule them one at a time instead of as "
                              "a group in kube-scheduler's PodGroup cycle")


def test_topology_constrained_groups_without_topology_placement_are_unsupported(tmp_path):
    with pytest.raises(Unsupported, match="createAny of PodGroups constrained to one topology.kubernetes.io/rack "
                                          "domain .* TopologyPlacementGenerator plugin is not enabled"):
        checked_without(tmp_path, "TopologyPlacementGenerator", "podgroup/tas/performance-config.yaml")


@pytest.mark.parametrize("suite, test, workload, namespace", [
    ("podgroup/gangscheduling/performance-config.yaml", "GangScheduling", "10Nodes_3Gangs", "gang-ns-0"),
    ("podgroup/basicscheduling/performance-config.yaml", "BasicScheduling", "10Nodes_3Groups", "basic-ns-0"),
    ("podgroup/tas/performance-config.yaml", "TopologyAwareScheduling", "10Nodes_3Gangs", "tas-0"),
])
def test_the_short_workloads_of_the_podgroup_suites_schedule_every_group(suite, test, workload, namespace):
    executor = executor_for(DATA / suite, test, workload, fake_clock=True)
    pods = executor.cluster.list("Pod", namespace).items
    assert len(pods) == 9 and all(p.spec.node_name for p in pods)
    created = groups(executor, namespace)
    assert len(created) == 3
    assert all(g.condition("PodGroupInitiallyScheduled").status == "True" for g in created.values())
    assert executor.measured_pods == 9
