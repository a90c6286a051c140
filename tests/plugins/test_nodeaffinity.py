"""NodeAffinity: nodeSelector, required and preferred node affinity, matchFields
PreFilterResult, Gt/Lt, and the profile-wide addedAffinity."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.registry import PluginError, build_args
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import PreFilterResult, QueueingHint
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.testing import node, pod

from .helpers import (
    code,
    condition,
    config,
    failure,
    filter_all,
    info,
    make,
    reasons,
    run_pre_filter,
    score_all,
    simulate,
    use_nodes,
)

REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


def expr(key: str, operator: str, *values: str) -> dict:
    req = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return req


def term(*expressions: dict, fields: list[dict] | None = None) -> dict:
    t: dict = {}
    if expressions:
        t["matchExpressions"] = list(expressions)
    if fields:
        t["matchFields"] = fields
    return t


def required(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict]) -> dict:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": t} for w, t in weighted]}}


def name_in(*names: str) -> dict:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def nodes(**labels_by_name: dict) -> list:
    return [info(node(name, labels=labels)) for name, labels in labels_by_name.items()]


def passing(plugin, p, infos) -> list[str]:
    """Names of the nodes that pass PreFilter (when it does not Skip) + Filter."""
    state, result, status = run_pre_filter(plugin, p, infos)
    assert status is None or status.code in (Code.SUCCESS, Code.SKIP), status
    statuses = filter_all(plugin, state, p, infos)
    for s in statuses:
        assert s is None or (s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and s.reasons in ((REASON,), (ENFORCED,)))
    return [ni.name for ni, s in zip(infos, statuses) if s is None]


# --- PreFilter -----------------------------------------------------------------------------


def test_prefilter_skips_a_pod_without_node_constraints():
    plugin = make(NodeAffinity)
    for p in (pod("p"), pod("p", affinity=preferred((5, term(expr("a", "Exists")))))):
        _, result, status = run_pre_filter(plugin, p, [])
        assert result is None and status.code == Code.SKIP


def test_prefilter_does_not_skip_with_a_node_selector_or_added_affinity():
    _, result, status = run_pre_filter(make(NodeAffinity), pod("p", node_selector={"a": "b"}), [])
    assert (result, status) == (None, None)
    added = make(NodeAffinity, {"addedAffinity": required(term(expr("a", "Exists")))["nodeAffinity"]})
    _, result, status = run_pre_filter(added, pod("p"), [])
    assert (result, status) == (None, None)


@pytest.mark.parametrize("terms, expected", [
    ([term(fields=[name_in("n1", "n2")])], {"n1", "n2"}),
    # two requirements in one term are ANDed: intersection
    ([term(fields=[name_in("n1", "n2"), name_in("n2", "n3")])], {"n2"}),
    # terms are ORed: union
    ([term(fields=[name_in("n1")]), term(fields=[name_in("n3")])], {"n1", "n3"}),
    # a term without a name requirement can match any node: no narrowing
    ([term(fields=[name_in("n1")]), term(expr("zone", "In", "a"))], None),
    # NotIn on the name does not narrow
    ([term(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}])], None),
    ([term(expr("zone", "In", "a"))], None),
])
def test_prefilter_result_from_match_fields(terms, expected):
    state, result, status = run_pre_filter(make(NodeAffinity), pod("p", affinity=required(*terms)), [])
    assert status is None
    if expected is None:
        assert result is None
    else:
        assert result == PreFilterResult(frozenset(expected))


def test_prefilter_conflicting_name_terms_are_unresolvable():
    terms = [term(fields=[name_in("n1"), name_in("n2")]), term(fields=[name_in("n3"), name_in("n4")])]
    _, result, status = run_pre_filter(make(NodeAffinity), pod("p", affinity=required(*terms)), [])
    assert result is None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod affinity terms conflict",))


# --- Filter --------------------------------------------------------------------------------


def test_node_selector_needs_every_label():
    infos = nodes(a={"zone": "a", "disk": "ssd"}, b={"zone": "a"}, c={"zone": "b", "disk": "ssd"}, d={})
    p = pod("p", node_selector={"zone": "a", "disk": "ssd"})
    assert passing(make(NodeAffinity), p, infos) == ["a"]


def test_filter_status_is_unresolvable_with_the_upstream_reason():
    infos = nodes(a={"zone": "b"})
    p = pod("p", node_selector={"zone": "a"})
    state, _, _ = run_pre_filter(make(NodeAffinity), p, infos)
    (status,) = filter_all(make(NodeAffinity), state, p, infos)
    assert (code(status), reasons(status)) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON,))


@pytest.mark.parametrize("requirement, expected", [
    (expr("zone", "In", "a", "b"), ["a", "b"]),
    (expr("zone", "NotIn", "a"), ["b", "c", "none"]),     # a missing label is "not in"
    (expr("zone", "Exists"), ["a", "b", "c"]),
    (expr("zone", "DoesNotExist"), ["none"]),
    (expr("cpus", "Gt", "4"), ["b"]),                    # 8 > 4; "x" is not an integer; 4 > 4 is false
    (expr("cpus", "Lt", "8"), ["a"]),                    # 4 < 8
    (expr("cpus", "Gt", "-1"), ["a", "b"]),
    (expr("cpus", "Gt", "four"), []),                    # a non-integer value matches nothing
])
def test_required_operators(requirement, expected):
    infos = nodes(
        a={"zone": "a", "cpus": "4"},
        b={"zone": "b", "cpus": "8"},
        c={"zone": "c", "cpus": "x"},
        none={},
    )
    assert passing(make(NodeAffinity), pod("p", affinity=required(term(requirement))), infos) == expected


def test_gt_lt_parse_integers_like_go():
    # "1_0" is a valid label value that Python's int() would read as 10; Go's ParseInt refuses it,
    # as it refuses values beyond int64
    infos = nodes(ten={"n": "10"}, underscore={"n": "1_0"}, huge={"n": "99999999999999999999"}, neg={"n": "-3"})
    assert passing(make(NodeAffinity), pod("p", affinity=required(term(expr("n", "Gt", "5")))), infos) == ["ten"]
    assert passing(make(NodeAffinity), pod("p", affinity=required(term(expr("n", "Lt", "+5")))), infos) == ["neg"]
    assert passing(make(NodeAffinity), pod("p", affinity=required(term(expr("n", "Lt", "2_0")))), infos) == []


def test_required_terms_or_and_expressions_and():
    infos = nodes(a={"zone": "a", "disk": "hdd"}, b={"zone": "b", "disk": "ssd"}, c={"zone": "a", "disk": "ssd"}, d={})
    aff = required(term(expr("zone", "In", "a"), expr("disk", "In", "ssd")), term(expr("zone", "In", "b")))
    assert passing(make(NodeAffinity), pod("p", affinity=aff), infos) == ["b", "c"]


def test_empty_term_matches_nothing():
    infos = nodes(a={"zone": "a"})
    assert passing(make(NodeAffinity), pod("p", affinity=required(term())), infos) == []


def test_node_selector_and_required_affinity_must_both_match():
    infos = nodes(a={"zone": "a", "disk": "ssd"}, b={"zone": "a"}, c={"disk": "ssd"})
    p = pod("p", node_selector={"zone": "a"}, affinity=required(term(expr("disk", "Exists"))))
    assert passing(make(NodeAffinity), p, infos) == ["a"]


def test_match_fields_also_filter():
    infos = nodes(n1={"zone": "a"}, n2={"zone": "b"}, n3={"zone": "a"})
    aff = required(term(expr("zone", "In", "a"), fields=[name_in("n1", "n2")]))
    assert passing(make(NodeAffinity), pod("p", affinity=aff), infos) == ["n1"]


def test_filter_without_prefilter_falls_back_to_the_pod():
    infos = nodes(a={"zone": "a"}, b={"zone": "b"})
    statuses = filter_all(make(NodeAffinity), CycleState(), pod("p", node_selector={"zone": "b"}), infos)
    assert [s is None for s in statuses] == [False, True]


def test_added_affinity_applies_to_every_pod_before_the_pods_own():
    plugin = make(NodeAffinity, {"addedAffinity": required(term(expr("pool", "In", "batch")))["nodeAffinity"]})
    infos = nodes(batch_a={"pool": "batch", "zone": "a"}, batch_b={"pool": "batch", "zone": "b"},
                  web_a={"pool": "web", "zone": "a"})
    assert passing(plugin, pod("p"), infos) == ["batch_a", "batch_b"]
    p = pod("p", node_selector={"zone": "a"})
    state, _, _ = run_pre_filter(plugin, p, infos)
    statuses = filter_all(plugin, state, p, infos)
    assert [reasons(s) for s in statuses] == [(), (REASON,), (ENFORCED,)]


# --- Score ---------------------------------------------------------------------------------


def scores(plugin, p, infos, normalize=True):
    state = CycleState()
    status = plugin.pre_score(state, p, infos)
    assert status is None
    return score_all(plugin, state, p, infos, normalize=normalize)


def test_preferred_terms_add_their_weights_and_normalise():
    infos = nodes(zone_a={"zone": "a"}, ssd={"disk": "ssd"}, both={"zone": "a", "disk": "ssd"}, neither={})
    aff = preferred((2, term(expr("zone", "In", "a"))), (5, term(expr("disk", "In", "ssd"))))
    plugin = make(NodeAffinity)
    assert scores(plugin, pod("p", affinity=aff), infos, normalize=False) == [2, 5, 7, 0]
    # max 7: 100*2//7 = 28, 100*5//7 = 71
    assert scores(plugin, pod("p", affinity=aff), infos) == [28, 71, 100, 0]


def test_preferred_all_zero_stays_zero():
    infos = nodes(a={}, b={})
    aff = preferred((3, term(expr("zone", "Exists"))))
    assert scores(make(NodeAffinity), pod("p", affinity=aff), infos) == [0, 0]


def test_prescore_skips_without_preferred_terms():
    plugin = make(NodeAffinity)
    assert plugin.pre_score(CycleState(), pod("p", node_selector={"a": "b"}), []).code == Code.SKIP
    # an empty preference matches nothing
    aff = preferred((4, term()), (6, term(expr("zone", "Exists"))))
    assert scores(plugin, pod("p", affinity=aff), nodes(a={"zone": "x"}, b={}), normalize=False) == [6, 0]


def test_added_preferred_terms_add_to_the_pods_own():
    added = preferred((3, term(expr("gpu", "In", "true"))))["nodeAffinity"]
    plugin = make(NodeAffinity, {"addedAffinity": added})
    infos = nodes(gpu={"gpu": "true"}, ssd={"disk": "ssd"}, both={"gpu": "true", "disk": "ssd"}, none={})
    # no preferences of its own: the added ones still score (PreScore does not skip)
    assert scores(plugin, pod("p"), infos, normalize=False) == [3, 0, 3, 0]
    aff = preferred((1, term(expr("disk", "In", "ssd"))))
    assert scores(plugin, pod("p", affinity=aff), infos, normalize=False) == [3, 1, 4, 0]
    assert scores(plugin, pod("p", affinity=aff), infos) == [75, 25, 100, 0]  # 100*3//4, 100*1//4


def test_score_without_prescore_falls_back_to_the_pod():
    # a profile may disable PreScore for the plugin; Score then works the preferences out itself
    infos = nodes(a={"zone": "a"}, b={})
    aff = preferred((2, term(expr("zone", "In", "a"))))
    plugin = make(NodeAffinity)
    assert [plugin.score(CycleState(), pod("p", affinity=aff), ni) for ni in infos] == [2, 0]
    assert score_all(plugin, CycleState(), pod("p", affinity=aff), infos, normalize=False) == [2, 0]


def test_batch_score_follows_a_relabelled_node():
    # the batch form keeps a column per preferred term; a node whose labels change is rescored
    plugin = make(NodeAffinity)
    infos = nodes(a={"zone": "a"}, b={"zone": "b"})
    snapshot = use_nodes(plugin, infos)
    p = pod("p", affinity=preferred((4, term(expr("zone", "In", "a")))))
    state = CycleState()
    assert plugin.pre_score(state, p, snapshot.nodes) is None
    assert list(plugin.score_batch(state, p, snapshot.table, np.arange(2))) == [4, 0]
    snapshot.nodes[1].set_node(node("b", labels={"zone": "a"}))
    snapshot.refresh(["b"])
    assert list(plugin.score_batch(state, p, snapshot.table, np.arange(2))) == [4, 4]
    assert [plugin.score(state, p, ni) for ni in snapshot.nodes] == [4, 4]


# --- args ----------------------------------------------------------------------------------


def test_args_decode_added_affinity():
    args = build_args(NodeAffinity, {"addedAffinity": required(term(expr("a", "In", "b")))["nodeAffinity"]})
    terms = args.added_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert terms[0].match_expressions[0].values == ("b",)
    assert build_args(NodeAffinity, None).added_affinity is None


def test_args_refuse_an_unknown_field():
    with pytest.raises(PluginError, match=r"^args\.bogus: unknown field$"):
        build_args(NodeAffinity, {"bogus": {}})


# --- queueing hint -------------------------------------------------------------------------


def test_hint_queues_when_a_node_starts_to_match():
    plugin = make(NodeAffinity)
    (registered,) = plugin.events_to_register()
    hint = registered.hint
    p = pod("p", node_selector={"zone": "a"})
    match, other = node("n", labels={"zone": "a"}), node("n", labels={"zone": "b"})
    assert hint(p, None, match) == QueueingHint.QUEUE
    assert hint(p, None, other) == QueueingHint.QUEUE_SKIP
    assert hint(p, other, match) == QueueingHint.QUEUE
    assert hint(p, match, match) == QueueingHint.QUEUE_SKIP


# --- end to end ----------------------------------------------------------------------------


def test_node_selector_places_the_pod():
    sim = simulate([node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}),
                    pod("p", cpu="100m", node_selector={"zone": "b"})])
    assert sim.placements() == {"default/p": "b"}


def test_nothing_matches_then_a_node_is_relabelled():
    sim = simulate([node("a", labels={"zone": "a"}), node("b"), node("c"),
                    pod("p", cpu="100m", node_selector={"zone": "z"})])
    message = ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
               "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert failure(sim) == message
    assert condition(sim, "p").message == message
    n = sim.get("Node", "c")
    sim.cluster.update(attrs.evolve(n, metadata=attrs.evolve(n.metadata, labels={**n.metadata.labels, "zone": "z"})))
    sim.run()
    assert sim.placements() == {"default/p": "c"}


def test_preferred_affinity_wins_over_an_emptier_node():
    # "busy" already runs a pod (lower Fit/Balanced scores), but it has the preferred label (weight 2 x 100)
    for seed in range(3):
        sim = simulate([
            node("busy", cpu="4", memory="8Gi", labels={"disk": "ssd"}),
            node("idle", cpu="4", memory="8Gi"),
            pod("running", cpu="1", memory="1Gi", node_name="busy"),
            pod("p", cpu="500m", memory="512Mi", affinity=preferred((10, term(expr("disk", "In", "ssd"))))),
        ], seed=seed)
        assert sim.placements()["default/p"] == "busy"


def test_match_fields_pins_the_pod_and_the_message_counts_only_those_nodes():
    sim = simulate([node("n1", cpu="1"), node("n2", cpu="4"), node("n3", cpu="4"),
                    pod("p", cpu="2", affinity=required(term(fields=[name_in("n1")])))])
    assert sim.placements() == {"default/p": ""}
    # n2 and n3 were cut by the PreFilterResult: counted as absent nodes, blaming the narrowing plugin
    assert failure(sim) == ("0/3 nodes are available: 1 Insufficient cpu, "
                            "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
                            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")

    sim = simulate([node("n1", cpu="1"), node("n2", cpu="4"), node("n3", cpu="4"),
                    pod("p", cpu="500m", affinity=required(term(fields=[name_in("n3", "gone")])))])
    assert sim.placements() == {"default/p": "n3"}


def test_conflicting_match_fields_fail_in_prefilter():
    aff = required(term(fields=[name_in("n1"), name_in("n2")]))
    sim = simulate([node("n1"), node("n2"), pod("p", affinity=aff)])
    assert failure(sim) == "0/2 nodes are available: pod affinity terms conflict. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def test_added_affinity_from_the_profile():
    cfg = config({"NodeAffinity": {"addedAffinity": required(term(expr("pool", "In", "batch")))["nodeAffinity"]}})
    sim = simulate([node("web", labels={"pool": "web"}), node("batch", labels={"pool": "batch"}),
                    pod("p", cpu="100m")], config=cfg)
    assert sim.placements() == {"default/p": "batch"}

    sim = simulate([node("web", labels={"pool": "web"}), pod("p", cpu="100m")], config=cfg)
    assert failure(sim) == ("0/1 nodes are available: 1 node(s) didn't match scheduler-enforced node affinity. "
                            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
