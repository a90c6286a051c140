"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that tolerate
node.kubernetes.io/unschedulable:NoSchedule."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import NODE, ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.testing import node, pod

from .helpers import (
    code,
    condition,
    default_framework,
    failure,
    filter_all,
    info,
    make,
    reasons,
    simulate,
    snapshot_info,
)

KEY = "node.kubernetes.io/unschedulable"
REASON = "node(s) were unschedulable"


def cordon(n, unschedulable: bool = True):
    return attrs.evolve(n, spec=attrs.evolve(n.spec, unschedulable=unschedulable))


@pytest.mark.parametrize("tolerations, fits", [
    (None, False),
    ([{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}], True),
    ([{"key": KEY, "operator": "Exists"}], True),                     # empty effect matches all effects
    ([{"operator": "Exists"}], True),                                 # tolerates everything
    ([{"key": KEY, "operator": "Equal", "value": "", "effect": "NoSchedule"}], True),
    ([{"key": KEY, "operator": "Exists", "effect": "NoExecute"}], False),
    ([{"key": KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}], False),  # the taint has no value
    ([{"key": "other", "operator": "Exists"}], False),
])
def test_filter_on_a_cordoned_node(tolerations, fits):
    plugin = make(NodeUnschedulable)
    p = pod("p", tolerations=tolerations)
    infos = [info(node("open")), info(node("cordoned", unschedulable=True))]
    open_status, cordoned_status = filter_all(plugin, CycleState(), p, infos)
    assert open_status is None
    if fits:
        assert cordoned_status is None
    else:
        assert code(cordoned_status) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert reasons(cordoned_status) == (REASON,)


def test_a_taint_with_the_same_key_on_the_node_is_not_what_this_plugin_checks():
    # the TaintToleration plugin handles real taints; NodeUnschedulable only looks at spec.unschedulable
    plugin = make(NodeUnschedulable)
    n = node("n", taints=[(KEY, "", "NoSchedule")])
    assert filter_all(plugin, CycleState(), pod("p"), [info(n)]) == [None]


def test_hint_queues_when_a_node_becomes_schedulable():
    plugin = make(NodeUnschedulable)
    (registered,) = plugin.events_to_register()
    assert registered.event == ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    hint = registered.hint
    p = pod("p")
    open_, cordoned = node("n"), node("n", unschedulable=True)
    assert hint(p, None, open_) == QueueingHint.QUEUE           # added, schedulable
    assert hint(p, None, cordoned) == QueueingHint.QUEUE_SKIP   # added, cordoned
    assert hint(p, cordoned, open_) == QueueingHint.QUEUE       # uncordoned
    assert hint(p, open_, cordoned) == QueueingHint.QUEUE_SKIP  # cordoned
    assert hint(p, open_, open_) == QueueingHint.QUEUE_SKIP     # some other change


# --- end to end ----------------------------------------------------------------------------


def test_pod_avoids_the_cordoned_node():
    sim = simulate([node("a", unschedulable=True), node("b"), pod("p", cpu="100m")])
    assert sim.placements() == {"default/p": "b"}


def test_all_nodes_cordoned_then_uncordon_one():
    sim = simulate([node("a", unschedulable=True), node("b", unschedulable=True), pod("p", cpu="100m")])
    assert sim.placements() == {"default/p": ""}
    assert failure(sim) == "0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    cond = condition(sim, "p")
    assert (cond.status, cond.reason, cond.message) == (
        "False", "Unschedulable", "0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")

    sim.cluster.update(cordon(sim.get("Node", "b"), False))
    sim.run()
    assert sim.placements() == {"default/p": "b"}


def test_tolerating_pod_lands_on_a_cordoned_node():
    tol = [{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}]
    sim = simulate([node("a", unschedulable=True), pod("p", cpu="100m", tolerations=tol)])
    assert sim.placements() == {"default/p": "a"}


def test_framework_names_the_plugin_that_rejected():
    sim = simulate([node("a", unschedulable=True)])
    status = default_framework(sim).run_filter(CycleState(), pod("p"), snapshot_info(sim, "a"))
    assert (status.code, status.plugin, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "NodeUnschedulable", (REASON,))
