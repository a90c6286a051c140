"""TaintToleration: hard taints filter, PreferNoSchedule taints lower the score (reverse-normalised)."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from kubesched.core.api.core_v1 import Taint
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import NODE, ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.testing import node, pod

from .helpers import code, condition, failure, filter_all, info, make, reasons, score_all, simulate, use_nodes


def tainted(name: str, *taints: tuple[str, str, str]):
    return info(node(name, taints=taints))


# --- Filter --------------------------------------------------------------------------------


@pytest.mark.parametrize("taint, tolerations, message", [
    (("dedicated", "gpu", "NoSchedule"), None, "node(s) had untolerated taint {dedicated: gpu}"),
    (("dedicated", "gpu", "NoExecute"), None, "node(s) had untolerated taint {dedicated: gpu}"),
    (("dedicated", "gpu", "PreferNoSchedule"), None, None),  # soft taints never filter
    (("dedicated", "", "NoSchedule"), None, "node(s) had untolerated taint {dedicated: }"),
    (("dedicated", "gpu", "NoSchedule"), [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], None),
    (("dedicated", "gpu", "NoSchedule"), [{"key": "dedicated", "value": "gpu"}], None),  # default operator Equal, any effect
    (("dedicated", "gpu", "NoSchedule"), [{"key": "dedicated", "operator": "Exists"}], None),
    (("dedicated", "gpu", "NoSchedule"), [{"operator": "Exists"}], None),  # empty key + Exists: everything
    (("dedicated", "gpu", "NoSchedule"), [{"key": "dedicated", "operator": "Equal", "value": "cpu"}],
     "node(s) had untolerated taint {dedicated: gpu}"),
    (("dedicated", "gpu", "NoExecute"), [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
     "node(s) had untolerated taint {dedicated: gpu}"),
    (("dedicated", "gpu", "NoSchedule"), [{"key": "other", "operator": "Exists"}],
     "node(s) had untolerated taint {dedicated: gpu}"),
])
def test_filter_single_taint(taint, tolerations, message):
    plugin = make(TaintToleration)
    infos = [tainted("clean"), tainted("t", taint)]
    clean, status = filter_all(plugin, CycleState(), pod("p", tolerations=tolerations), infos)
    assert clean is None
    if message is None:
        assert status is None
    else:
        assert code(status) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert reasons(status) == (message,)


def test_filter_reports_the_first_untolerated_hard_taint():
    plugin = make(TaintToleration)
    n = tainted("n", ("soft", "1", "PreferNoSchedule"), ("a", "1", "NoSchedule"), ("b", "2", "NoExecute"))
    tol_a = [{"key": "a", "operator": "Exists"}]
    (status,) = filter_all(plugin, CycleState(), pod("p", tolerations=tol_a), [n])
    assert reasons(status) == ("node(s) had untolerated taint {b: 2}",)
    (status,) = filter_all(plugin, CycleState(), pod("p"), [n])
    assert reasons(status) == ("node(s) had untolerated taint {a: 1}",)
    both = tol_a + [{"key": "b", "operator": "Exists", "effect": "NoExecute"}]
    assert filter_all(plugin, CycleState(), pod("p", tolerations=both), [n]) == [None]


def test_filter_batch_on_a_mixed_cluster():
    # batch and per-node agree (filter_all checks it) on a mix of clean, soft and hard nodes
    plugin = make(TaintToleration)
    infos = [
        tainted("clean"),
        tainted("soft", ("x", "1", "PreferNoSchedule")),
        tainted("gpu", ("gpu", "true", "NoSchedule")),
        tainted("infra", ("infra", "", "NoExecute")),
        tainted("both", ("gpu", "true", "NoSchedule"), ("infra", "", "NoExecute")),
    ]
    tol = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    statuses = filter_all(plugin, CycleState(), pod("p", tolerations=tol), infos)
    assert [s is None for s in statuses] == [True, True, True, False, False]
    assert reasons(statuses[4]) == ("node(s) had untolerated taint {infra: }",)


# --- Score ---------------------------------------------------------------------------------


def scored(p, infos):
    plugin = make(TaintToleration)
    state = CycleState()
    assert plugin.pre_score(state, p, infos) is None
    return score_all(plugin, state, p, infos, normalize=False), score_all(plugin, state, p, infos)


def test_score_counts_intolerable_soft_taints_and_reverses():
    infos = [
        tainted("none"),
        tainted("one", ("x", "1", "PreferNoSchedule")),
        tainted("two", ("x", "1", "PreferNoSchedule"), ("y", "2", "PreferNoSchedule")),
        tainted("hard-only", ("h", "1", "NoSchedule")),  # hard taints do not count in scoring
    ]
    raw, normalized = scored(pod("p"), infos)
    assert raw == [0, 1, 2, 0]
    # max 2: 100 - 100*count//2
    assert normalized == [100, 50, 0, 100]


def test_score_thirds_truncate():
    infos = [
        tainted("zero"),
        tainted("one", ("a", "", "PreferNoSchedule")),
        tainted("two", ("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")),
        tainted("three", ("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule"), ("c", "", "PreferNoSchedule")),
    ]
    raw, normalized = scored(pod("p"), infos)
    assert raw == [0, 1, 2, 3]
    assert normalized == [100, 67, 34, 0]  # 100 - 100*1//3 = 100 - 33; 100 - 200//3 = 100 - 66


def test_score_counts_only_what_the_tolerations_do_not_cover():
    infos = [
        tainted("xy", ("x", "1", "PreferNoSchedule"), ("y", "2", "PreferNoSchedule")),
        tainted("x", ("x", "1", "PreferNoSchedule")),
        tainted("y", ("y", "2", "PreferNoSchedule")),
    ]
    tolerations = [
        {"key": "y", "operator": "Exists"},                              # empty effect: counts for scoring
        {"key": "x", "operator": "Exists", "effect": "NoSchedule"},      # wrong effect: ignored
    ]
    raw, normalized = scored(pod("p", tolerations=tolerations), infos)
    assert raw == [1, 1, 0]
    assert normalized == [0, 0, 100]  # max 1


def test_score_prefer_no_schedule_toleration():
    infos = [tainted("x", ("x", "1", "PreferNoSchedule")), tainted("clean")]
    tol = [{"key": "x", "operator": "Equal", "value": "1", "effect": "PreferNoSchedule"}]
    raw, normalized = scored(pod("p", tolerations=tol), infos)
    assert raw == [0, 0]
    assert normalized == [100, 100]  # all zero reversed: everyone gets the maximum


def test_batch_score_follows_a_retainted_node():
    # the batch form keeps a column per distinct tolerations; a node whose taints change is rescored
    plugin = make(TaintToleration)
    snapshot = use_nodes(plugin, [tainted("x", ("x", "1", "PreferNoSchedule")), tainted("y")])
    p = pod("p", tolerations=[{"key": "x", "operator": "Exists"}])
    state = CycleState()
    assert plugin.pre_score(state, p, snapshot.nodes) is None
    assert list(plugin.score_batch(state, p, snapshot.table, np.arange(2))) == [0, 0]
    snapshot.nodes[1].set_node(node("y", taints=[("y", "1", "PreferNoSchedule"), ("x", "2", "PreferNoSchedule")]))
    snapshot.refresh(["y"])
    assert list(plugin.score_batch(state, p, snapshot.table, np.arange(2))) == [0, 1]
    assert [plugin.score(state, p, ni) for ni in snapshot.nodes] == [0, 1]


def test_hint_queues_when_the_node_becomes_tolerable():
    plugin = make(TaintToleration)
    (registered,) = plugin.events_to_register()
    assert registered.event == ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    hint = registered.hint
    p = pod("p", tolerations=[{"key": "ok", "operator": "Exists"}])
    bad, good = node("n", taints=[("bad", "", "NoSchedule")]), node("n", taints=[("ok", "", "NoSchedule")])
    assert hint(p, None, good) == QueueingHint.QUEUE
    assert hint(p, None, bad) == QueueingHint.QUEUE_SKIP
    assert hint(p, bad, good) == QueueingHint.QUEUE
    assert hint(p, good, good) == QueueingHint.QUEUE_SKIP
    assert hint(p, good, bad) == QueueingHint.QUEUE_SKIP


# --- end to end ----------------------------------------------------------------------------


def test_failed_scheduling_message_counts_each_reason():
    sim = simulate([
        node("small", cpu="1"),
        node("t1", cpu="4", taints=[("k", "v", "NoSchedule")]),
        node("t2", cpu="4", taints=[("k", "v", "NoSchedule")]),
        pod("p", cpu="2"),
    ])
    assert sim.placements() == {"default/p": ""}
    message = ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}. "
               "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert failure(sim) == message
    cond = condition(sim, "p")
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", message)


def test_tolerating_pod_schedules_on_tainted_node():
    tol = [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]
    sim = simulate([
        node("small", cpu="1"),
        node("t1", cpu="4", taints=[("k", "v", "NoSchedule")]),
        pod("p", cpu="2", tolerations=tol),
    ])
    assert sim.placements() == {"default/p": "t1"}


def test_soft_taint_steers_the_pod_away():
    for seed in range(5):
        sim = simulate([
            node("soft", taints=[("spot", "true", "PreferNoSchedule")]),
            node("plain"),
            pod("p", cpu="100m"),
        ], seed=seed)
        assert sim.placements() == {"default/p": "plain"}


def test_removing_the_taint_releases_the_pod():
    sim = simulate([node("n", taints=[("maintenance", "", "NoExecute")]), pod("p", cpu="100m")])
    assert failure(sim) == ("0/1 nodes are available: 1 node(s) had untolerated taint {maintenance: }. "
                            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    n = sim.get("Node", "n")
    sim.cluster.update(attrs.evolve(n, spec=attrs.evolve(n.spec, taints=(Taint("other", "", "PreferNoSchedule"),))))
    sim.run()
    assert sim.placements() == {"default/p": "n"}
