"""scheduler_perf's affinity/, topology_spreading/ and event_handling/ folders: the ops
and strategies they use, run on a fake clock (backoffs and paced updates jump)."""

from __future__ import annotations

import collections

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.features import FeatureGates
from kubesched.perf import run
from kubesched.perf.config import load_test_cases
from kubesched.perf.ops.objects import POD_UPDATE_FORBIDDEN, updated_object

from .helpers import DATA, basic_case, executor_for, write_config

FOLDERS = ("affinity", "topology_spreading", "event_handling")
ALL_SMALL = [(folder, case.name, workload.name, {**case.feature_gates, **workload.feature_gates})
             for folder in FOLDERS
             for case in load_test_cases(DATA / folder / "performance-config.yaml")
             for workload in case.workloads if "integration-test" in workload.labels]
#: the small workloads no release kubesched emulates accepts the gates of (SchedulerQueueingHints: false)
REFUSED = [(f, t, w) for f, t, w, gates in ALL_SMALL if FeatureGates().settable_release(gates) is None]
SMALL = [(f, t, w) for f, t, w, gates in ALL_SMALL if (f, t, w) not in REFUSED]


def test_every_folder_has_small_workloads():
    assert collections.Counter(folder for folder, _, _ in SMALL) == {
        "affinity": 12, "topology_spreading": 4, "event_handling": 5}
    assert collections.Counter(folder for folder, _, _ in REFUSED) == {"affinity": 12}


@pytest.mark.parametrize("folder,test,workload", REFUSED[:2], ids=[f"{t}/{w}" for _, t, w in REFUSED[:2]])
def test_a_workload_turning_queueing_hints_off_is_refused_in_one_line(folder, test, workload):
    """SchedulerQueueingHints is GA and locked on since 1.34: component-base refuses it off, so upstream's runner
    fails such a workload; kubesched reports it unsupported with that message, never runs it with hints on."""
    [result] = run(DATA / folder / "performance-config.yaml", test=test, workload=workload)
    assert result.status == "unsupported" and result.reason == (
        "featureGates: cannot set feature gate SchedulerQueueingHints to false, feature is locked to true "
        "(in every release kubesched emulates, 1.34-1.37)")


@pytest.mark.parametrize("folder,test,workload", SMALL, ids=[f"{t}/{w}" for _, t, w in SMALL])
def test_small_workload_schedules_every_pod_without_a_gate(folder, test, workload):
    executor = executor_for(DATA / folder / "performance-config.yaml", test, workload, fake_clock=True)
    pods = [p for p in executor.cluster.list("Pod").items if not p.spec.scheduling_gates]
    assert pods and all(p.spec.node_name for p in pods), [p.key for p in pods if not p.spec.node_name][:3]
    assert executor.measured_pods > 0


def test_label_node_prepare_strategy_labels_round_robin_and_unique_labels_differ(tmp_path):
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 4,
         "labelNodePrepareStrategy": {"labelKey": "zone", "labelValues": ["a", "b", "c"]}},
        {"opcode": "createNodes", "count": 3, "uniqueNodeLabelStrategy": {"labelKey": "rack"}},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    executor = executor_for(write_config(tmp_path, [case]), "Tiny", "w", fake_clock=True)
    nodes = executor.cluster.list("Node").items
    zones = sorted(n.metadata.labels["zone"] for n in nodes if "zone" in n.metadata.labels)
    racks = {n.metadata.labels["rack"] for n in nodes if "rack" in n.metadata.labels}
    assert zones == ["a", "a", "b", "c"] and len(racks) == 3


def test_a_malformed_label_strategy_is_refused_naming_the_field(tmp_path):
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 1, "labelNodePrepareStrategy": {"labelKey": "zone", "labelValues": []}},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "failed" and "labelNodePrepareStrategy.labelValues" in result.reason


def test_create_pod_sets_creates_one_namespace_per_set():
    executor = executor_for(DATA / "affinity/performance-config.yaml",
                            "SchedulingRequiredPodAntiAffinityWithNSSelector", "10Nodes_QueueingHintsEnabled",
                            fake_clock=True)
    namespaces = collections.Counter(p.metadata.namespace for p in executor.cluster.list("Pod").items)
    assert namespaces == {"init-ns-0": 2, "init-ns-1": 2, "measure-ns-0": 6}


def test_a_barrier_on_attempted_pods_counts_only_the_selected_unschedulable_ones():
    executor = executor_for(DATA / "event_handling/performance-config.yaml", "EventHandlingPodAdd", "10Pods",
                            fake_clock=True)
    unsched = [p for p in executor.cluster.list("Pod").items if p.metadata.labels.get("type") == "unsched"]
    assert len(unsched) == 20 and all(p.spec.node_name for p in unsched)


def without_plugin(directory, plugin: str):
    """A KubeSchedulerConfiguration file whose default profile disables ``plugin``."""
    path = directory / "scheduler-config.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n"
                    f"      disabled:\n      - name: {plugin}\n")
    return path


def labelled_pod_template(directory, spec_yaml: str):
    """A pod template (label app: a) whose spec starts with ``spec_yaml``."""
    path = directory / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: p-\n  labels: {app: a}\nspec:\n"
                    + spec_yaml + "  containers:\n  - name: c\n    image: pause\n")
    return path


def pod(name: str, **spec) -> object:
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                          "spec": {"containers": [{"name": "c", "image": "pause:1",
                                                   "resources": {"requests": {"memory": "100Mi"}}}], **spec}})


def test_a_pod_update_keeps_the_spec_but_images_tolerations_and_gates():
    current = pod("p", nodeName="n1", schedulingGates=[{"name": "g"}])
    template = pod("p", tolerations=[{"key": "k", "operator": "Exists"}])
    updated = updated_object(current, template)
    assert updated.spec.node_name == "n1" and not updated.spec.scheduling_gates
    assert [t.key for t in updated.spec.tolerations] == ["k"]


def test_a_pod_update_that_changes_resources_needs_the_resize_subresource():
    current = pod("p")
    template = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                              "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Mi"}}}]}})
    with pytest.raises(ValueError) as err:
        updated_object(current, template)
    assert str(err.value) == POD_UPDATE_FORBIDDEN
    resized = updated_object(current, template, ("resize",))
    assert resized.spec.containers[0].resources.requests["memory"] == 1024 * 1024


def test_pods_whose_constraints_no_enabled_plugin_enforces_are_unsupported(tmp_path):
    config = without_plugin(tmp_path, "InterPodAffinity")
    pod_template = labelled_pod_template(
        tmp_path, "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                  "      - labelSelector: {matchLabels: {app: a}}\n        topologyKey: kubernetes.io/hostname\n")
    case = basic_case(schedulerConfigPath=str(config), defaultPodTemplatePath=str(pod_template))
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "unsupported"
    assert "the InterPodAffinity plugin that enforces it is not enabled" in result.reason


def test_update_any_with_a_subresource_kubesched_does_not_honour_is_unsupported(tmp_path):
    node_template = tmp_path / "node.yaml"
    node_template.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n-{{ .Index }}\n")
    case = basic_case(workloadTemplate=[
        {"opcode": "createNodes", "count": 1, "nodeTemplatePath": str(node_template)},
        {"opcode": "updateAny", "templatePath": str(node_template), "subresources": ["status"]},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "unsupported" and "updateAny with subresources ['status']" in result.reason


def test_pod_sets_whose_constraints_no_enabled_plugin_enforces_are_unsupported(tmp_path):
    config = without_plugin(tmp_path, "PodTopologySpread")
    pod_template = labelled_pod_template(
        tmp_path, "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: kubernetes.io/hostname\n"
                  "    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: a}}\n")
    case = basic_case(schedulerConfigPath=str(config), workloadTemplate=[
        {"opcode": "createNodes", "count": 1},
        {"opcode": "createPodSets", "count": 2, "namespacePrefix": "ns",
         "createPodsOp": {"opcode": "createPods", "count": 1, "podTemplatePath": str(pod_template)}},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], workloads=[{"name": "w", "params": {}}])
    [result] = run(write_config(tmp_path, [case]))
    assert result.status == "unsupported"
    assert "the PodTopologySpread plugin that enforces it is not enabled" in result.reason
