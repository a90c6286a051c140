"""--emulated-version 1.34 and 1.37 decide differently, a gate at a time (issue 35, item 7): examples/upgrade
(device taints, partitionable devices, binding conditions), the nominated node published before PreBind
work, the workload API; each gate isolated by turning it off in 1.37, and `kubesched compare` of the two
releases printing what the upgrade moves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import BadRequest
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.features import FeatureGates
from kubesched.drivers.simulation import Simulation

UPGRADE = Path(__file__).resolve().parents[1] / "examples" / "upgrade"


def placements(release: str, **overrides: bool) -> dict[str, str]:
    sim = Simulation.from_paths([UPGRADE], features=FeatureGates(release, overrides))
    sim.run()
    return {p.metadata.name: p.spec.node_name for p in sim.pods()}


@pytest.fixture(scope="module")
def newest() -> dict[str, str]:
    return placements("1.37")


@pytest.fixture(scope="module")
def oldest() -> dict[str, str]:
    return placements("1.34")


def test_dra_device_taints(oldest, newest):
    """1.34 drops the device's NoSchedule taint: the pod takes the GPU; 1.37 keeps it: Pending."""
    assert oldest["on-tainted"] == "node-tainted"
    assert newest["on-tainted"] == ""
    isolated = placements("1.37", DRADeviceTaints=False, DRADeviceTaintRules=False)
    assert isolated["on-tainted"] == "node-tainted"


def test_dra_partitionable_devices(oldest, newest):
    """Two partitions drawing on one counter of 1: 1.37 gives one of them, 1.34 (counters dropped) both."""
    partitioned = ("on-partitioned-a", "on-partitioned-b")
    assert [oldest[p] for p in partitioned] == ["node-partitioned"] * 2
    assert sorted(newest[p] for p in partitioned) == ["", "node-partitioned"]
    isolated = placements("1.37", DRAPartitionableDevices=False, DRADeviceCompatibilityGroups=False)
    assert [isolated[p] for p in partitioned] == ["node-partitioned"] * 2


def test_dra_device_binding_conditions(oldest, newest):
    """A device that must be attached first: 1.37 waits at PreBind (nothing attaches it), 1.34 binds."""
    assert oldest["on-attached"] == "node-attached"
    assert newest["on-attached"] == ""
    assert placements("1.37", DRADeviceBindingConditions=False)["on-attached"] == "node-attached"


def test_topology_aware_workload_scheduling_is_not_in_1_35():
    cluster = MemoryCluster(features=FeatureGates("1.35"))
    group = from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": "g", "namespace": "default"},
                           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                                    "schedulingConstraints": {"topology": [{"key": "rack"}]}}})
    with pytest.raises(BadRequest, match="spec.schedulingConstraints.*TopologyAwareWorkloadScheduling does not exist"):
        cluster.create(group)


def test_compare_prints_what_the_upgrade_moves():
    done = CliRunner().invoke(app, ["compare", "--emulated-version", "1.34", "--emulated-version", "1.37",
                                    "-f", str(UPGRADE), "-o", "json"])
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    moved = {row["pod"]: (row["a"], row["b"]) for row in answer["moved"]}
    assert moved["default/on-tainted"] == ("node-tainted", "")
    assert moved["default/on-attached"] == ("node-attached", "")
    turned = {row["gate"] for row in answer["gates"]}
    assert {"DRADeviceTaints", "DRAPartitionableDevices", "DRADeviceBindingConditions",
            "NominatedNodeNameForExpectation", "StorageCapacityScoring"} <= turned
