"""NodeDeclaredFeatures (KEP-5328).

Ported from kubernetes/kubernetes
``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go`` at commit
1c8baf9c346a5a9a39706a9eab3528a0dfc15f64 (TestPreFilter, TestFilter, TestEnqueueExtensionsNodeUpdate,
TestEventsToRegister for the enabled plugin; the mock features are registries of NodeFeature), plus the
registry's own features and the whole path through a simulation (upstream's message); from the newest stored
version (index id 71269779950, no commit named) TestNodeDeclaredFeatures_DeferredResizeSkipped and
TestDryRunPreemptionCandidateFiltering.  TestIsSchedulableAfterTargetPodUpdate has no counterpart: a pending
pod's own update that changes what it needs moves it as any pod update does (the queue's update)."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api.core_v1 import PodCondition
from kubesched.core.api.node_features import FeatureRegistry, NodeFeature, default_registry, parse_version
from kubesched.core.features import FeatureGates
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.nodedeclaredfeatures import REASON, STATE_KEY, NodeDeclaredFeatures
from kubesched.testing import node, pod

from .helpers import filter_all, info, make


def mock(name: str, infer: bool, max_version: str = "") -> NodeFeature:
    return NodeFeature(name, lambda spec: infer, parse_version(max_version) if max_version else None)


def with_features(*names: str):
    n = node("node-1")
    return attrs.evolve(n, status=attrs.evolve(n.status, declared_features=tuple(names)))


def plugin(features=(), version="1.35.0") -> NodeDeclaredFeatures:
    made = make(NodeDeclaredFeatures)
    made.registry = FeatureRegistry(list(features))
    made.version = parse_version(version)
    return made


@pytest.mark.parametrize("name, features, version, skipped, needed", [
    ("Pod with feature requirements", [mock("TestFeature1", True), mock("TestFeature2", False)], "1.35.0", False,
     {"TestFeature1"}),
    ("Pod with multiple feature requirements", [mock("TestFeature1", True, "1.38.0"),
                                                mock("TestFeature2", True, "1.38.0")], "1.35.0", False,
     {"TestFeature1", "TestFeature2"}),
    ("Pod with no requirements", [mock("TestFeature1", False), mock("TestFeature2", False)], "1.35.0", True, None),
    ("Feature not required, version > MaxVersion", [mock("TestFeature1", True, "1.33.0"),
                                                    mock("TestFeature2", False)], "1.34.0", True, None),
])
def test_pre_filter(name, features, version, skipped, needed):
    state = CycleState()
    status = plugin(features, version).pre_filter(state, pod("test-pod"), [])
    assert (status is not None and status.code == Code.SKIP) == skipped
    assert state.get(STATE_KEY) == (frozenset(needed) if needed is not None else None)


@pytest.mark.parametrize("name, node_features, needed, passes", [
    ("Node matches requirements", ["FeatureA", "FeatureB"], ["FeatureA"], True),
    ("Node does not match requirements", ["FeatureB"], ["FeatureA"], False),
    ("Node with multiple features, pod requires subset", ["FeatureA", "FeatureB", "FeatureC"],
     ["FeatureA", "FeatureC"], True),
    ("Node has no declared features", [], ["FeatureA"], False),
    ("Node with some but not all required features", ["FeatureA"], ["FeatureA", "FeatureB"], False),
])
def test_filter(name, node_features, needed, passes):
    made = plugin()
    state = CycleState()
    state.write(STATE_KEY, frozenset(needed))
    [status] = filter_all(made, state, pod("test-pod"), [info(with_features(*node_features))])
    if passes:
        assert status is None
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.reasons == (REASON,)


def test_filter_without_pre_filter_state_infers_the_features_itself():
    """Upstream's "Error getting pre-filter state" case returns an Error; kubesched's Filter infers instead, as
    explain and what-if call Filter without PreFilter."""
    made = plugin([mock("FeatureA", True)])
    assert made.filter(CycleState(), pod("test-pod"), info(with_features("FeatureA"))) is None
    assert made.filter(CycleState(), pod("test-pod"), info(with_features())).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize("name, old, new, queue", [
    ("Node Add with feature", None, with_features("FeatureA"), True),
    ("Node Update (Features Added)", with_features(), with_features("FeatureA"), True),
    ("Node Update (Features Unchanged)", with_features("FeatureA"), with_features("FeatureA"), False),
])
def test_enqueue_extensions_node_update(name, old, new, queue):
    [registered] = plugin().events_to_register()
    assert bool(registered.hint(pod("test-pod"), old, new)) == queue


def test_the_registry_infers_what_upstream_features_infer():
    registry, version = default_registry(), parse_version("1.37")
    plain = pod("p")
    restart = pod("r", containers=[{"name": "c", "image": "i", "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}])
    userns = pod("u", hostNetwork=True, hostUsers=False)
    assert registry.infer_for_pod_scheduling(plain.spec, version) == frozenset()
    assert registry.infer_for_pod_scheduling(restart.spec, version) == {"RestartAllContainersOnContainerExits"}
    assert registry.infer_for_pod_scheduling(userns.spec, version) == {"UserNamespacesHostNetworkSupport"}


def test_a_pod_needing_a_feature_goes_to_the_node_that_declares_it():
    restart = pod("r", containers=[{"name": "c", "image": "i", "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}])
    old = node("old")
    new = attrs.evolve(node("new"), status=attrs.evolve(node("new").status,
                                                        declared_features=("RestartAllContainersOnContainerExits",)))
    sim = Simulation()
    sim.create([old, new, restart, pod("plain", cpu="100m")])
    sim.run()
    assert sim.pod("r").spec.node_name == "new"
    alone = Simulation()
    alone.create([old, restart])
    alone.run()
    condition = next(c for c in alone.pod("r").status.conditions if c.type == "PodScheduled")
    assert condition.message == f"0/1 nodes are available: 1 {REASON}. preemption: 0/1 nodes are available: " \
                                "1 Preemption is not helpful for scheduling."


def test_a_pod_queued_for_its_deferred_resize_skips_the_plugin():
    """Upstream's TestNodeDeclaredFeatures_DeferredResizeSkipped (the newest stored nodedeclaredfeatures_test.go,
    index id 71269779950): with InPlacePodVerticalScalingSchedulerPreemption, PreFilter skips a pod whose resize
    is Deferred and Filter passes it, whatever the node declares."""
    made = make(NodeDeclaredFeatures, features=FeatureGates("1.37", {"InPlacePodVerticalScalingSchedulerPreemption": True}))
    made.registry = FeatureRegistry([mock("TestFeature", True)])
    deferred = pod("p")
    deferred = attrs.evolve(deferred, status=attrs.evolve(deferred.status, conditions=(
        PodCondition(type="PodResizePending", status="True", reason="Deferred"),)))
    state = CycleState()
    assert made.pre_filter(state, deferred, []).code == Code.SKIP
    assert made.filter(state, deferred, info(node("node1"))) is None
    # without the gate the same pod needs the feature
    plain = make(NodeDeclaredFeatures)
    plain.registry = FeatureRegistry([mock("TestFeature", True)])
    assert plain.pre_filter(CycleState(), deferred, []) is None


def first_container_is(name: str):
    return lambda spec: bool(spec.containers) and spec.containers[0].name == name


DRY_RUN_FEATURES = [NodeFeature("intel.com/avx512", first_container_is("container-req-avx512"), None),
                    NodeFeature("arm.com/sve2", first_container_is("container-req-sve2"), None),
                    NodeFeature("other.com/unsatisfied", first_container_is("container-req-unsat"), None)]


@pytest.mark.parametrize("name, container, features, preempted", [
    ("preemptor requires AVX-512, only node-avx512 is preemption candidate", "container-req-avx512", None,
     {"victim-avx512"}),
    ("preemptor requires SVE2, only node-sve2 is preemption candidate", "container-req-sve2", None, {"victim-sve2"}),
    ("preemptor requires unsatisfied feature, no candidates returned", "container-req-unsat", None, set()),
    ("feature gate disabled, feature requirements are ignored and all nodes are candidates", "container-req-unsat",
     FeatureGates("1.35", {"NodeDeclaredFeatures": False}), "one"),
])
def test_dry_run_preemption_candidate_filtering(name, container, features, preempted):
    """Upstream's TestDryRunPreemptionCandidateFiltering (the same file): the preemption's candidates are the nodes
    that declare what the preemptor needs; here through a simulation, where DefaultPreemption evicts the chosen
    candidate's victim (upstream lists every candidate)."""
    def with_features(n, *declared):
        return attrs.evolve(n, status=attrs.evolve(n.status, declared_features=declared))

    sim = Simulation(features=features)
    sim.scheduler.profiles["default-scheduler"].plugins["NodeDeclaredFeatures"].registry = FeatureRegistry(
        DRY_RUN_FEATURES)
    nodes = [with_features(node("node-avx512", cpu="1", memory="1000Mi", pods=10), "intel.com/avx512"),
             with_features(node("node-sve2", cpu="1", memory="1000Mi", pods=10), "arm.com/sve2"),
             node("node-no-feature", cpu="1", memory="1000Mi", pods=10)]
    victims = [pod(f"victim-{n.metadata.name[5:]}", cpu="1", memory="1000Mi", priority=500, node_name=n.metadata.name)
               for n in nodes]
    sim.create([*nodes, *victims])
    sim.run()
    sim.create([pod("preemptor", priority=1000, containers=[{"name": container, "image": "pause", "resources": {
        "requests": {"cpu": "1", "memory": "1000Mi"}}}])])
    sim.run()
    gone = {e.involved_object.name for e in sim.events("Preempted")}
    assert len(gone) == 1 if preempted == "one" else gone == preempted
