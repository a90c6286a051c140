"""PodTopologySpread: maxSkew, missing labels, minDomains, node inclusion policies,
matchLabelKeys, scoring, system default constraints, args and API validation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.meta import evolve_meta
from kubesched.core.framework.cycle_state import FEASIBLE_ROWS_KEY, CycleState
from kubesched.core.framework.registry import PluginError
from kubesched.core.framework.status import Code
from kubesched.plugins.podtopologyspread.plugin import (
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from kubesched.testing import node, pod

from .helpers import (
    bench,
    code,
    config,
    filter_all,
    fit_reason,
    info,
    make,
    on,
    reasons,
    run_pre_filter,
    run_pre_score,
    score_all,
    simulate,
    use_nodes,
)

WEB = {"app": "web"}
HOSTNAME = "kubernetes.io/hostname"


def spread(key: str = "zone", max_skew: int = 1, when: str = "DoNotSchedule", **extra) -> dict:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": WEB}, **extra}


def web(name: str, *constraints: dict, **kwargs):
    return pod(name, cpu="100m", labels={**WEB, **kwargs.pop("labels", {})},
               topologySpreadConstraints=list(constraints), **kwargs)


def zone_nodes(*zones: str, **kwargs):
    return [node(f"n{i}", labels={"zone": z}, **kwargs) for i, z in enumerate(zones)]


ONLY_SPREAD = config(plugins={"multiPoint": {"enabled": [{"name": "PodTopologySpread", "weight": 2}]}})


def zones_of(sim) -> Counter:
    return Counter(sim.get("Node", p.spec.node_name).metadata.labels.get("zone")
                   for p in sim.pods() if p.spec.node_name)


def test_pods_never_exceed_max_skew_at_any_step():
    nodes = zone_nodes("a", "a", "b", "c")
    sim = simulate(nodes, ONLY_SPREAD)
    for i in range(9):
        sim.create([web(f"p{i}", spread())])
        sim.run()
        counts = zones_of(sim)
        assert sum(counts.values()) == i + 1
        assert max(counts.values()) - min(counts[z] for z in "abc") <= 1, counts


def test_a_full_domain_leaves_the_pod_pending_with_upstreams_reason():
    # zone a holds 2 web pods, zone b none and its only node is full: the third pod cannot go to a
    nodes = [node("a1", labels={"zone": "a"}), node("b1", cpu="100m", labels={"zone": "b"})]
    existing = [on(pod(f"old{i}", cpu="100m", labels=WEB), "a1") for i in range(2)]
    sim = simulate(nodes + existing + [pod("filler", cpu="100m", node_name="b1"), web("new", spread())], ONLY_SPREAD)
    assert not sim.pod("new").spec.node_name
    assert fit_reason(sim, "new") == "0/2 nodes are available: 1 Insufficient cpu, 1 " + REASON_CONSTRAINTS_NOT_MATCH + "."


def test_filter_statuses_and_missing_label():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"}), on(pod("x", labels=WEB), "a1")),
             info(node("b1", labels={"zone": "b"})),
             info(node("nolabel"))]
    incoming = web("in", spread())
    state, _, status = run_pre_filter(plugin, incoming, nodes)
    assert status is None
    statuses = filter_all(plugin, state, incoming, nodes)
    assert code(statuses[0]) == Code.UNSCHEDULABLE and reasons(statuses[0]) == (REASON_CONSTRAINTS_NOT_MATCH,)
    assert statuses[1] is None
    assert code(statuses[2]) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reasons(statuses[2]) == (REASON_NODE_LABEL_NOT_MATCH,)


def test_a_pod_without_constraints_skips():
    plugin = make(PodTopologySpread, {"defaultingType": "List"})
    _, _, status = run_pre_filter(plugin, pod("plain"), [info(node("n"))])
    assert status.code == Code.SKIP


def test_the_pod_counts_itself_only_when_it_matches_the_selector():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"}), on(pod("x", labels=WEB), "a1")), info(node("b1", labels={"zone": "b"}))]
    other = pod("other", labels={"app": "db"}, topologySpreadConstraints=[spread()])
    state, _, _ = run_pre_filter(plugin, other, nodes)
    # skew on a = 1 (existing) + 0 (not self) - 0 = 1: allowed
    assert filter_all(plugin, state, other, nodes) == [None, None]


def test_min_domains_counts_the_global_minimum_as_zero_until_enough_domains_exist():
    nodes = zone_nodes("a", "b")
    existing = [on(pod("x", labels=WEB), "n0"), on(pod("y", labels=WEB), "n1")]
    plugin = make(PodTopologySpread)
    infos = [info(nodes[0], existing[0]), info(nodes[1], existing[1])]
    # two domains with one pod each: skew 1 + 1 - 1 = 1 passes without minDomains ...
    incoming = web("in", spread())
    state, _, _ = run_pre_filter(plugin, incoming, infos)
    assert filter_all(plugin, state, incoming, infos) == [None, None]
    # ... but with minDomains 3 the global minimum is 0: skew 2 > 1 everywhere
    incoming = web("in", spread(minDomains=3))
    state, _, _ = run_pre_filter(plugin, incoming, infos)
    assert [reasons(s) for s in filter_all(plugin, state, incoming, infos)] == [(REASON_CONSTRAINTS_NOT_MATCH,)] * 2


def test_node_affinity_policy_honor_ignores_domains_the_pod_cannot_reach():
    nodes = [node("a1", labels={"zone": "a", "pool": "x"}), node("b1", labels={"zone": "b", "pool": "y"})]
    existing = on(pod("x", labels=WEB), "a1")
    infos = [info(nodes[0], existing), info(nodes[1])]
    plugin = make(PodTopologySpread)
    selector = {"pool": "x"}
    honor = web("in", spread(), node_selector=selector)
    state, _, _ = run_pre_filter(plugin, honor, infos)
    # zone b is not eligible (Honor): only zone a counts, skew 1 + 1 - 1 = 1
    assert filter_all(plugin, state, honor, infos)[0] is None
    ignore = web("in", spread(nodeAffinityPolicy="Ignore"), node_selector=selector)
    state, _, _ = run_pre_filter(plugin, ignore, infos)
    # zone b counts with 0 pods: skew on a = 2
    assert reasons(filter_all(plugin, state, ignore, infos)[0]) == (REASON_CONSTRAINTS_NOT_MATCH,)


def test_node_taints_policy_honor_ignores_tainted_domains():
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}, taints=[("gpu", "yes", "NoSchedule")])]
    infos = [info(nodes[0], on(pod("x", labels=WEB), "a1")), info(nodes[1])]
    plugin = make(PodTopologySpread)
    ignore = web("in", spread())
    state, _, _ = run_pre_filter(plugin, ignore, infos)
    assert reasons(filter_all(plugin, state, ignore, infos)[0]) == (REASON_CONSTRAINTS_NOT_MATCH,)
    honor = web("in", spread(nodeTaintsPolicy="Honor"))
    state, _, _ = run_pre_filter(plugin, honor, infos)
    assert filter_all(plugin, state, honor, infos)[0] is None


def test_match_label_keys_spread_each_revision_on_its_own():
    nodes = zone_nodes("a", "b")
    old = [on(pod(f"old{i}", labels={**WEB, "rev": "1"}), "n0") for i in range(3)]
    sim = simulate(nodes + old + [web(f"new{i}", spread(matchLabelKeys=["rev"]), labels={"rev": "2"})
                                  for i in range(2)], ONLY_SPREAD)
    new_zones = Counter(sim.get("Node", sim.pod(f"new{i}").spec.node_name).metadata.labels["zone"] for i in range(2))
    assert new_zones == Counter({"a": 1, "b": 1})


def test_pods_alike_but_for_a_match_label_keys_value_count_their_own_revision():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"}), *(on(pod(f"old{i}", labels={**WEB, "rev": "1"}), "a1")
                                                     for i in range(2))),
             info(node("b1", labels={"zone": "b"}))]
    verdicts = {}
    for rev in ("1", "2", "1"):  # the same constraints, asked about in turn by pods of two revisions
        incoming = web(f"in{rev}", spread(matchLabelKeys=["rev"]), labels={"rev": rev})
        state, _, _ = run_pre_filter(plugin, incoming, nodes)
        verdicts.setdefault(rev, []).append([code(status) for status in filter_all(plugin, state, incoming, nodes)])
    assert verdicts == {"1": [[Code.UNSCHEDULABLE, Code.SUCCESS]] * 2, "2": [[Code.SUCCESS, Code.SUCCESS]]}


def test_add_pod_and_remove_pod_update_the_counts():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"})), info(node("b1", labels={"zone": "b"}))]
    incoming = web("in", spread())
    state, _, _ = run_pre_filter(plugin, incoming, nodes)
    nominated = info(node("tmp"), on(pod("nom", labels=WEB), "a1")).pods[0]
    plugin.pre_filter_add_pod(state, incoming, nominated, nodes[0])
    plugin.pre_filter_add_pod(state, incoming, nominated, nodes[0])
    assert reasons(plugin.filter(state, incoming, nodes[0])) == (REASON_CONSTRAINTS_NOT_MATCH,)
    clone = state.clone()
    plugin.pre_filter_remove_pod(clone, incoming, nominated, nodes[0])
    plugin.pre_filter_remove_pod(clone, incoming, nominated, nodes[0])
    assert plugin.filter(clone, incoming, nodes[0]) is None
    assert reasons(plugin.filter(state, incoming, nodes[0])) == (REASON_CONSTRAINTS_NOT_MATCH,)


def prescored_rows_scores(plugin, incoming, nodes) -> list[int]:
    """The raw batch scores of the very rows PreScore was handed (as the framework hands them: its
    FEASIBLE_ROWS_KEY array), which the plugin scores from what PreScore picked for them."""
    snapshot = use_nodes(plugin, nodes)
    rows = np.arange(len(snapshot.nodes), dtype=np.intp)
    state = CycleState()
    state.write(FEASIBLE_ROWS_KEY, rows)
    assert plugin.pre_score(state, incoming, snapshot.nodes) is None
    return [int(v) for v in plugin.score_batch(state, incoming, snapshot.table, rows)]


def test_schedule_anyway_prefers_the_emptiest_domain():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"}), *(on(pod(f"x{i}", labels=WEB), "a1") for i in range(2))),
             info(node("b1", labels={"zone": "b"}), on(pod("y", labels=WEB), "b1")),
             info(node("c1", labels={"zone": "c"}))]
    incoming = web("in", spread(when="ScheduleAnyway"))
    state = CycleState()
    assert run_pre_score(plugin, state, incoming, nodes) is None
    # raw: count * log(3 + 2) + 0 -> 2*1.609=3, 1.609=2, 0; normalized 100*(3+0-s)/3
    assert score_all(plugin, state, incoming, nodes) == [0, 33, 100]
    assert prescored_rows_scores(plugin, incoming, nodes) == score_all(plugin, state, incoming, nodes, normalize=False)


def test_nodes_missing_a_key_score_zero_for_pods_with_own_constraints():
    plugin = make(PodTopologySpread)
    nodes = [info(node("a1", labels={"zone": "a"})), info(node("nolabel"))]
    incoming = web("in", spread(when="ScheduleAnyway"))
    state = CycleState()
    run_pre_score(plugin, state, incoming, nodes)
    assert score_all(plugin, state, incoming, nodes) == [100, 0]
    assert prescored_rows_scores(plugin, incoming, nodes) == score_all(plugin, state, incoming, nodes, normalize=False)


@pytest.mark.parametrize("node_selector, expected", [
    (None, [0, 70, 0, 100]),
    ({"pool": "x"}, [0, 80, 0, 100]),  # node affinity honoured: b1 no longer counts in its zone
])
def test_zone_and_hostname_scores_with_a_node_missing_its_hostname_label(node_selector, expected):
    bare = evolve_meta(node("bare"), labels={"zone": "a"})
    nodes = [info(node("a1", labels={"zone": "a", "pool": "x"}), *(on(pod(f"x{i}", labels=WEB), "a1") for i in range(3))),
             info(node("b1", labels={"zone": "b"}), on(pod("y", labels=WEB), "b1")),
             info(bare, on(pod("z", labels=WEB), "bare")),
             info(node("c1", labels={"zone": "c", "pool": "x"}))]
    incoming = web("in", spread(when="ScheduleAnyway"), spread(HOSTNAME, when="ScheduleAnyway"),
                   node_selector=node_selector)
    plugin = make(PodTopologySpread)
    state = CycleState()
    assert run_pre_score(plugin, state, incoming, nodes) is None
    assert score_all(plugin, state, incoming, nodes) == expected
    assert prescored_rows_scores(plugin, incoming, nodes) == score_all(plugin, state, incoming, nodes, normalize=False)


def test_system_default_constraints_spread_a_replicasets_pods_over_hostnames():
    replicaset = from_manifest({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                "metadata": {"name": "web", "namespace": "default"},
                                "spec": {"selector": {"matchLabels": WEB}, "replicas": 4,
                                         "template": {"metadata": {"labels": WEB},
                                                      "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    nodes = [node(f"n{i}") for i in range(4)]
    sim = simulate([replicaset, *nodes], ONLY_SPREAD)
    placed = sim.placements()
    assert len(placed) == 4 and len(set(placed.values())) == 4


def test_without_a_workload_the_system_defaults_do_not_apply():
    plugin = make(PodTopologySpread)
    loner = pod("loner", labels=WEB)
    assert run_pre_score(plugin, CycleState(), loner, [info(node("n0"))]).code == Code.SKIP
    # a Service selecting the same pod object arrives: the defaults now apply to it
    made = bench(plugin)
    made.cluster.create(from_manifest({"apiVersion": "v1", "kind": "Service",
                                       "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": WEB}}))
    made.informers.pump()
    assert run_pre_score(plugin, CycleState(), loner, [info(node("n0"))]) is None


def test_list_defaults_apply_to_pods_selected_by_a_service():
    service = from_manifest({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                             "spec": {"selector": WEB}})
    cfg = config({"PodTopologySpread": {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}},
        plugins={"multiPoint": {"enabled": [{"name": "PodTopologySpread"}]}})
    nodes = zone_nodes("a", "b")
    sim = simulate([service, *nodes, *(pod(f"p{i}", cpu="100m", labels=WEB) for i in range(4))], cfg)
    assert zones_of(sim) == Counter({"a": 2, "b": 2})


@pytest.mark.parametrize("args, message", [
    ({"defaultingType": "Sometimes"}, "defaultingType: Unsupported value"),
    ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     "must be empty"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": WEB}}]}, "must not define a selector"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}, "maxSkew"),
])
def test_args_are_validated_as_upstream(args, message):
    with pytest.raises((ManifestError, PluginError)) as err:
        make(PodTopologySpread, args)
    assert message in str(err.value)


@pytest.mark.parametrize("constraint, field", [
    ({"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, "maxSkew"),
    ({"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}, "topologyKey"),
    ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}, "whenUnsatisfiable"),
    ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}, "minDomains"),
    ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Maybe"},
     "nodeTaintsPolicy"),
])
def test_invalid_constraints_are_refused_naming_the_field(constraint, field):
    with pytest.raises(ManifestError) as err:
        pod("bad", topologySpreadConstraints=[constraint])
    assert err.value.field == f"spec.topologySpreadConstraints[0].{field}"
