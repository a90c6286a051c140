"""Workloads, PodGroups and CompositePodGroups in the embedded API server (defaulting, priority admission,
generation, the status subresource), through the real-cluster client, and loaded by `kubesched simulate`."""

from __future__ import annotations

import attrs
import pytest
import yaml
from typer.testing import CliRunner

from fake_apiserver import wait_until
from kubesched.cli import app
from kubesched.core.api import from_manifest
from kubesched.core.api.meta import Condition
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED, REASON_SCHEDULED
from kubesched.core.cluster.client import Invalid
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.features import FeatureGates

#: the gate under which a group's spec.preemptionPolicy exists (alpha, off by default in 1.37)
WITH_GROUP_POLICY = FeatureGates(overrides={"GenericWorkload": True, "PodGroupPreemptionPolicy": True})


def priority_class(name: str, value: int, default: bool = False, policy: str | None = None):
    doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
           "globalDefault": default}
    if policy:
        doc["preemptionPolicy"] = policy
    return from_manifest(doc)


def group(name: str = "g", version: str = "v1beta1", **spec):
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 2}})
    return from_manifest({"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": "ml"}, "spec": spec})


def composite(name: str = "c", **spec):
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                          "metadata": {"name": name, "namespace": "ml"},
                          "spec": {"workloadRef": {"workloadName": "w", "templateName": "job"},
                                   "schedulingPolicy": {"basic": {}}, **spec}})


def scheduled(at: float) -> Condition:
    return Condition(type=POD_GROUP_INITIALLY_SCHEDULED, status="True", reason=REASON_SCHEDULED,
                     observed_generation=1, last_transition_time=at)


def test_a_new_group_defaults_to_single_disruption_and_generation_one():
    stored = MemoryCluster().create(group())
    assert stored.spec.disruption_mode.single is not None and not stored.disrupts_all
    assert stored.metadata.generation == 1
    assert stored.spec.priority == 0 and stored.spec.preemption_policy is None  # no such field without its gate
    assert MemoryCluster(features=WITH_GROUP_POLICY).create(group()).spec.preemption_policy == "PreemptLowerPriority"
    given = MemoryCluster().create(group(disruptionMode={"all": {}}))
    assert given.disrupts_all


def test_a_group_priority_is_resolved_as_a_pods():
    cluster = MemoryCluster(features=WITH_GROUP_POLICY)
    cluster.create(priority_class("batch", 100, default=True))
    cluster.create(priority_class("training", 5000, policy="Never"))
    named = cluster.create(group("named", priorityClassName="training"))
    assert (named.spec.priority, named.spec.preemption_policy) == (5000, "Never")
    defaulted = cluster.create(group("defaulted"))
    assert (defaulted.spec.priority_class_name, defaulted.priority_value) == ("batch", 100)
    system = cluster.create(composite(priorityClassName="system-cluster-critical"))
    assert system.spec.priority == 2_000_000_000
    # scheduler_perf's templates set a bare priority (v1alpha3): kept, as for pods
    bare = cluster.create(group("bare", version="v1alpha3", priority=8888888))
    assert bare.priority_value == 8888888
    with pytest.raises(Invalid, match="spec.priorityClassName: no PriorityClass with name gold was found"):
        cluster.create(group("unknown", priorityClassName="gold"))


def test_without_its_gate_a_groups_preemption_policy_is_not_filled_in_and_switches_nothing_on():
    cluster = MemoryCluster()
    cluster.create(priority_class("training", 5000, policy="Never"))
    named = cluster.create(group("named", priorityClassName="training"))
    assert (named.spec.priority, named.spec.preemption_policy) == (5000, None)
    cluster.update_status(attrs.evolve(named, status=attrs.evolve(named.status, conditions=(scheduled(1.0),))))
    assert not cluster.features.enabled("PodGroupPreemptionPolicy")
    with pytest.raises(Invalid, match=r"spec.priority: the integer value of priority \(7\) must not be provided in "
                                      r"pod group spec; priority admission controller computed 5000"):
        cluster.create(group("mismatch", priorityClassName="training", priority=7))


def test_update_writes_spec_and_metadata_and_update_status_only_status():
    cluster = MemoryCluster()
    stored = cluster.create(group())
    written = cluster.update_status(attrs.evolve(
        stored, status=attrs.evolve(stored.status, conditions=(scheduled(10.0),)),
        spec=attrs.evolve(stored.spec, scheduling_policy=group(schedulingPolicy={"basic": {}}).spec.scheduling_policy),
        metadata=attrs.evolve(stored.metadata, labels={"ignored": "yes"})))
    assert written.condition(POD_GROUP_INITIALLY_SCHEDULED).status == "True"
    assert written.spec == stored.spec and written.metadata.labels == {}
    assert written.metadata.generation == 1
    grown = cluster.update(attrs.evolve(
        written, status=attrs.evolve(written.status, conditions=()),
        metadata=attrs.evolve(written.metadata, labels={"job": "train"}),
        spec=attrs.evolve(written.spec, scheduling_policy=group(
            schedulingPolicy={"gang": {"minCount": 4}}).spec.scheduling_policy)))
    assert grown.min_count == 4 and grown.metadata.labels == {"job": "train"}
    assert grown.status == written.status  # the condition stays: update does not write status
    assert grown.metadata.generation == 2
    relabelled = cluster.update(attrs.evolve(grown, metadata=attrs.evolve(grown.metadata, labels={})))
    assert relabelled.metadata.generation == 2  # metadata alone is not a new generation
    with pytest.raises(Invalid, match=r'status.conditions\[0\].reason: Required value: must be set'):
        cluster.update_status(attrs.evolve(relabelled, status=attrs.evolve(
            relabelled.status, conditions=(attrs.evolve(scheduled(11.0), reason=""),))))


def test_the_real_cluster_client_lists_watches_and_writes_group_status(kube, apiserver):
    informers = Informers(kube)
    seen: list[tuple[str, str]] = []
    informers.add_handlers("PodGroup", lambda o: seen.append(("add", o.metadata.name)),
                           lambda old, new: seen.append(("update", new.metadata.name)))
    informers.add_handlers("CompositePodGroup", lambda o: seen.append(("add", o.metadata.name)))
    informers.add_handlers("Workload", lambda o: seen.append(("add", o.metadata.name)))
    kube.create(group("early"))
    informers.start()
    created = kube.create(group("late", version="v1alpha3"))
    kube.create(composite())
    kube.create(from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                               "metadata": {"name": "w", "namespace": "ml"},
                               "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}}))
    written = kube.update_status(attrs.evolve(created, status=attrs.evolve(created.status,
                                                                           conditions=(scheduled(10.0),))))
    assert written.condition(POD_GROUP_INITIALLY_SCHEDULED).reason == "Scheduled"

    def pumped():  # each kind has its own watch: their events arrive in any order
        informers.pump()
        return ("update", "late") in seen and len(seen) >= 5

    wait_until(pumped, informers.wakeup)
    assert sorted(seen) == [("add", "c"), ("add", "early"), ("add", "late"), ("add", "w"), ("update", "late")]
    paths = {p for m, p, _ in apiserver.requests}
    assert "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups/late/status" in paths
    assert "/apis/scheduling.k8s.io/v1alpha3/namespaces/ml/compositepodgroups" in paths
    assert informers.get("PodGroup", "ml/late").condition(POD_GROUP_INITIALLY_SCHEDULED).status == "True"
    informers.stop()


runner = CliRunner()


def test_simulate_loads_groups_after_their_priority_class_and_writes_them_back(tmp_path):
    (tmp_path / "a-groups.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup", "metadata": {"name": "train"},
         "spec": {"priorityClassName": "training", "schedulingPolicy": {"gang": {"minCount": 2}}}},
        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "train"},
         "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}},
    ]))
    (tmp_path / "b-classes.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: training}\nvalue: 500\n")
    result = runner.invoke(app, ["simulate", "-f", str(tmp_path), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    docs = {d["kind"]: d for d in yaml.safe_load_all(result.stdout)}
    assert docs["PodGroup"]["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert docs["PodGroup"]["spec"]["priority"] == 500
    assert docs["PodGroup"]["spec"]["disruptionMode"] == {"single": {}}
    assert docs["Workload"]["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 2}}


def test_simulate_refuses_a_group_with_a_bad_field_in_one_line(tmp_path):
    bad = tmp_path / "groups.yaml"
    bad.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: train}\n"
                   "spec:\n  schedulingPolicy:\n    gang: {minCount: 0}\n")
    result = runner.invoke(app, ["simulate", "-f", str(bad)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line
    assert line == (f'{bad}: PodGroup/train: PodGroup "train" is invalid: '
                    "spec.schedulingPolicy.gang.minCount: Required value")
