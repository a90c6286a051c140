"""scheduler_perf's nodedeclaredfeatures suite runs unchanged: its test package's hooks (mock features needed by
pods with pod-level resources, declared on every node) are perf/suites.py's."""

from __future__ import annotations

import attrs

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.status import Code

from .helpers import DATA, executor_for

CONFIG = DATA / "nodedeclaredfeatures/performance-config.yaml"


def test_enabled_workload_declares_the_mock_features_and_schedules_every_pod():
    executor = executor_for(CONFIG, "NodeDeclaredFeaturesEnabled", "5Nodes5DeclaredFeatures", fake_clock=True)
    nodes = executor.cluster.list("Node").items
    assert len(nodes) == 5
    assert {n.status.declared_features for n in nodes} == {("Feature1", "Feature2", "Feature3", "Feature4",
                                                            "Feature5")}
    pods = executor.cluster.list("Pod").items
    assert len(pods) == 10 and all(p.spec.node_name for p in pods)
    plugin = executor.scheduler.profiles["default-scheduler"].plugins["NodeDeclaredFeatures"]
    assert plugin.required(pods[0]) == {f"Feature{i}" for i in range(1, 6)}
    # a node that declares one feature fewer is refused for such a pod
    stripped = attrs.evolve(nodes[0], status=attrs.evolve(nodes[0].status,
                                                          declared_features=nodes[0].status.declared_features[1:]))
    state = CycleState()
    assert plugin.pre_filter(state, pods[0], []) is None
    assert plugin.filter(state, pods[0], NodeInfo(nodes[0])) is None
    assert plugin.filter(state, pods[0], NodeInfo(stripped)).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_disabled_workload_declares_nothing():
    executor = executor_for(CONFIG, "NodeDeclaredFeaturesDisabled", "5Nodes", fake_clock=True)
    assert all(not n.status.declared_features for n in executor.cluster.list("Node").items)
    assert all(p.spec.node_name for p in executor.cluster.list("Pod").items)
