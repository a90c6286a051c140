"""Feature gates and the emulated version: defaults per release, upstream's refusals, gates that objects
switch on, and each scheduler's own set (component-base's featuregate, kube_features.go's versioned specs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import BadRequest, NotFound
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.features import GATES, RELEASES, FeatureGateError, FeatureGates, default_table, parse_feature_gates
from kubesched.drivers.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]
GANGS = ROOT / "examples" / "gangs"


def test_every_gate_at_its_default_in_the_emulated_release():
    assert FeatureGates().emulated_version == RELEASES[-1] == "1.37"
    # beta and on since 1.35
    assert not FeatureGates("1.34").enabled("NominatedNodeNameForExpectation")
    assert FeatureGates("1.35").enabled("NominatedNodeNameForExpectation")
    # beta on from 1.37
    assert not FeatureGates("1.36").enabled("StorageCapacityScoring")
    assert FeatureGates("1.37").enabled("StorageCapacityScoring")
    # alpha in 1.35, beta but still off in 1.37
    assert not FeatureGates("1.37").enabled("GenericWorkload")
    # merged into GenericWorkload in 1.37: the 1.37 binary no longer knows it
    assert FeatureGates("1.36").exists("WorkloadAwarePreemption")
    assert not FeatureGates("1.37").exists("WorkloadAwarePreemption")
    assert FeatureGates("1.34").enabled("SchedulerPopFromBackoffQ")


@pytest.mark.parametrize("version, overrides, message", [
    ("1.33", {}, "emulation version 1.33 is not between [1.34, 1.37]"),
    ("1.37", {"NoSuchGate": True}, "unrecognized feature gate: NoSuchGate"),
    ("1.37", {"WorkloadAwarePreemption": True}, "unrecognized feature gate: WorkloadAwarePreemption"),
    ("1.37", {"NodeDeclaredFeatures": False},
     "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"),
    ("1.34", {"SchedulerQueueingHints": False},
     "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true"),
    ("1.36", {"CompositePodGroup": True},
     "cannot set feature gate CompositePodGroup to true, feature is PreAlpha at emulated version 1.36, "
     "min compatibility version 1.35"),
    ("1.37", {"GenericWorkload": False, "TopologyAwareWorkloadScheduling": True},
     "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"),
])
def test_refused_in_upstreams_words(version, overrides, message):
    with pytest.raises(FeatureGateError) as err:
        FeatureGates(version, overrides)
    assert str(err.value) == message


def test_parse_as_component_base_does():
    assert parse_feature_gates(["A=true,B=false", "C=1"]) == {"A": True, "B": False, "C": True}
    with pytest.raises(FeatureGateError, match="^missing bool value for A$"):
        parse_feature_gates("A")
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates("A=yes")
    assert str(err.value) == 'invalid value of A=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'


def test_a_dependency_off_only_by_default_is_switched_on_with_a_note():
    gates = FeatureGates("1.37", {"TopologyAwareWorkloadScheduling": True})
    assert gates.enabled("GenericWorkload")
    assert gates.notes == ["feature gate GenericWorkload turned on: TopologyAwareWorkloadScheduling depends on it "
                           "(off by default in 1.37)"]


def _pod_group(name: str = "train") -> object:
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": "ml"},
                          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})


def _member(group: str = "train") -> object:
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0", "namespace": "ml"},
                          "spec": {"schedulingGroup": {"podGroupName": group},
                                   "containers": [{"name": "c", "image": "x"}]}})


def test_a_podgroup_switches_generic_workload_on_unless_the_user_turned_it_off():
    cluster = MemoryCluster()
    cluster.create(_pod_group())
    assert cluster.features.enabled("GenericWorkload")
    assert cluster.features.notes == ["feature gate GenericWorkload turned on: PodGroup ml/train needs it "
                                      "(off by default in 1.37)"]

    off = MemoryCluster(features=FeatureGates("1.37", {"GenericWorkload": False}))
    with pytest.raises(NotFound, match="the server could not find the requested resource .*GenericWorkload is "
                                       "turned off"):
        off.create(_pod_group())
    # the API server drops a disabled field: the pod is scheduled on its own
    stored = off.create(_member())
    assert stored.spec.scheduling_group is None
    assert off.features.notes == ["Pod ml/w-0: spec.schedulingGroup dropped by the API server: feature gate "
                                  "GenericWorkload is turned off"]


def test_a_release_without_the_api_refuses_its_objects_and_fields():
    cluster = MemoryCluster(features=FeatureGates("1.34"))
    with pytest.raises(NotFound, match="GenericWorkload does not exist in 1.34"):
        cluster.create(_pod_group())
    with pytest.raises(BadRequest, match='unknown field "spec.schedulingGroup"'):
        cluster.create(_member())


def test_each_simulation_has_its_own_gates_reachable_by_plugins():
    newest, older = Simulation(), Simulation(features=FeatureGates("1.34"))
    assert newest.harness.features is newest.cluster.features is newest.scheduler.features
    handle = next(iter(older.scheduler.profiles.values())).handle
    assert handle.features is older.features
    assert not handle.features.enabled("NominatedNodeNameForExpectation")
    assert newest.scheduler.profiles["default-scheduler"].handle.features.enabled("NominatedNodeNameForExpectation")


def test_the_gang_example_runs_unchanged_at_the_default_release():
    sim = Simulation.from_paths([GANGS])
    sim.run()
    assert sim.features.enabled("GenericWorkload")
    assert any("GenericWorkload turned on" in note for note in sim.features.notes)
    assert any(pod.spec.node_name for pod in sim.pods())


def test_the_docs_table_lists_every_gate():
    docs = (ROOT / "docs" / "feature-gates.md").read_text()
    rows = default_table()
    assert [row["name"] for row in rows] == sorted(GATES)
    for row in rows:
        assert f"| {row['name']} |" in docs, row["name"]


runner = CliRunner()


@pytest.mark.parametrize("args, message", [
    (["--feature-gates", "Nope=true"], "--feature-gates: unrecognized feature gate: Nope"),
    (["--emulated-version", "1.30"], "--emulated-version: emulation version 1.30 is not between [1.34, 1.37]"),
    (["--feature-gates", "GenericWorkload=false"],
     "PodGroup/llm-pretrain: the server could not find the requested resource"),
])
def test_simulate_refuses_in_one_line(args, message):
    result = runner.invoke(app, ["simulate", "-f", str(GANGS), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_compare_two_releases_lists_the_gates_an_upgrade_turns():
    result = runner.invoke(app, ["compare", "--emulated-version", "1.36", "--emulated-version", "1.37",
                                 "-f", str(ROOT / "examples" / "cluster"), "-o", "json"])
    assert result.exit_code == 0, result.output
    import json

    answer = json.loads(result.output[result.output.index("{"):])
    turned = {row["gate"]: (row["a"], row["b"]) for row in answer["gates"]}
    assert turned["StorageCapacityScoring"] == (False, True)
    assert turned["VolumeLimitScaling"] == (False, True)
    assert answer["sides"]["a"]["config"] == "default profile @ 1.36"


def test_a_copy_answers_for_the_gates_switched_on_before_it():
    gates = FeatureGates("1.37")
    assert not gates.enabled("GenericWorkload")
    assert gates.require("GenericWorkload", "PodGroup default/train") is None
    twin = gates.copy()
    assert twin.enabled("GenericWorkload") and gates.enabled("GenericWorkload")
