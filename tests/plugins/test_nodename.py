"""NodeName: a pod naming a node in spec.nodeName fits only that node."""

from __future__ import annotations

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.plugins.nodename import NodeName
from kubesched.testing import node, pod

from .helpers import code, default_framework, filter_all, info, make, on, reasons, simulate, snapshot_info

REASON = "node(s) didn't match the requested node name"


def test_pod_without_node_name_fits_everywhere():
    infos = [info(node("a")), info(node("b"))]
    assert filter_all(make(NodeName), CycleState(), pod("p"), infos) == [None, None]


def test_pod_with_node_name_fits_only_that_node():
    infos = [info(node("a")), info(node("b")), info(node("c"))]
    statuses = filter_all(make(NodeName), CycleState(), on(pod("p"), "b"), infos)
    assert [code(s) for s in statuses] == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS,
                                           Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    assert reasons(statuses[0]) == (REASON,)


def test_node_name_of_a_missing_node_fits_nowhere():
    infos = [info(node("a")), info(node("b"))]
    statuses = filter_all(make(NodeName), CycleState(), on(pod("p"), "zzz"), infos)
    assert [reasons(s) for s in statuses] == [(REASON,), (REASON,)]


def test_name_match_is_exact():
    infos = [info(node("web")), info(node("web-1"))]
    statuses = filter_all(make(NodeName), CycleState(), on(pod("p"), "web"), infos)
    assert [code(s) for s in statuses] == [Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]


# --- end to end ----------------------------------------------------------------------------


def test_default_profile_filter_rejects_other_nodes_through_node_name():
    # what a dry run (cluster autoscaler style) of the default profile says for a pinned pod
    sim = simulate([node("a"), node("b")])
    fw = default_framework(sim)
    pinned = on(pod("p", cpu="100m"), "b")
    status = fw.run_filter(CycleState(), pinned, snapshot_info(sim, "a"))
    assert (status.code, status.plugin, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "NodeName", (REASON,))
    assert fw.run_filter(CycleState(), pinned, snapshot_info(sim, "b")) is None
    # a state whose PreFilter said Skip for NodeName, then one that did not: each as its own skips say
    skipping = CycleState()
    skipping.skip_filter_plugins.add("NodeName")
    assert fw.run_filter(skipping, pinned, snapshot_info(sim, "a")) is None
    assert fw.run_filter(CycleState(), pinned, snapshot_info(sim, "a")).plugin == "NodeName"


def test_pod_created_with_node_name_bypasses_the_scheduler_but_uses_the_node():
    # a pod that names its node is not the scheduler's; its requests still count on that node
    sim = simulate([node("a", cpu="2"), node("b", cpu="2"), on(pod("pinned", cpu="2"), "a"), pod("p", cpu="1")])
    assert sim.placements() == {"default/p": "b", "default/pinned": "a"}
    assert [e.involved_object.name for e in sim.events("Scheduled")] == ["p"]
