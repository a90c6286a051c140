"""The daemonset-controller (upstream pkg/controller/daemon/daemon_controller_test.go: one pod per node, node
selectors and taints decide the eligible nodes, pods follow nodes added; util/daemonset_util_test.go: the
node-affinity matchFields term and the daemon tolerations)."""

from __future__ import annotations

import attrs

from kubesched.core.api.core_v1 import Taint
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node

from .workloads import workload


def daemon(**template_spec):
    ds = workload("DaemonSet", "agent", replicas=None)
    spec = attrs.evolve(ds.spec.template.spec, **template_spec)
    return attrs.evolve(ds, spec=attrs.evolve(ds.spec, template=attrs.evolve(ds.spec.template, spec=spec)))


def placed(sim):
    return sorted(p.spec.node_name for p in sim.pods())


def test_one_pod_per_node_pinned_by_match_fields_and_placed_by_the_scheduler():
    sim = Simulation()
    sim.create([node("n1"), node("n2"), node("n3"), daemon()])
    sim.run()
    assert placed(sim) == ["n1", "n2", "n3"]
    for p in sim.pods():
        (term,) = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
        (field,) = term.match_fields
        assert (field.key, field.operator, field.values) == ("metadata.name", "In", (p.spec.node_name,))
        assert p.metadata.name.startswith("agent-") and p.metadata.owner_references[0].kind == "DaemonSet"
        assert {"controller-revision-hash", "pod-template-generation"} <= set(p.metadata.labels)
        tolerated = {(t.key, t.effect) for t in p.spec.tolerations if t.operator == "Exists"}
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in tolerated
        assert ("node.kubernetes.io/not-ready", "NoExecute") in tolerated
    assert sim.get("DaemonSet", "default/agent").status["desiredNumberScheduled"] == 3


def test_node_selector_and_untolerated_taints_exclude_nodes():
    tainted = node("n3")
    tainted = attrs.evolve(tainted, spec=attrs.evolve(tainted.spec, taints=(Taint("gpu", "true", "NoSchedule"),)))
    sim = Simulation()
    sim.create([node("n1", labels={"role": "edge"}), node("n2"), tainted,
                daemon(node_selector={"role": "edge"})])
    sim.run()
    assert placed(sim) == ["n1"]
    sim2 = Simulation()
    sim2.create([node("n1"), tainted, daemon()])
    sim2.run()
    assert placed(sim2) == ["n1"]


def test_an_unschedulable_node_still_runs_its_daemon_pod():
    cordoned = node("n2")
    cordoned = attrs.evolve(cordoned, spec=attrs.evolve(cordoned.spec, unschedulable=True))
    sim = Simulation()
    sim.create([node("n1"), cordoned, daemon()])
    sim.run()
    assert placed(sim) == ["n1", "n2"]


def test_a_new_node_gets_a_pod():
    sim = Simulation()
    sim.create([node("n1"), daemon()])
    sim.run()
    sim.create([node("n2")])
    sim.run()
    assert placed(sim) == ["n1", "n2"]
