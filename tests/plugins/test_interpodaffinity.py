"""InterPodAffinity: required affinity and anti-affinity, symmetry, the first pod of a
group, namespaces, matchLabelKeys, preferred scoring both ways, args, preemption."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.convert import ManifestError
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.registry import PluginError
from kubesched.core.framework.status import Code
from kubesched.plugins.interpodaffinity.filtering import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.testing import node, pod

from .helpers import (
    code,
    config,
    failure,
    filter_all,
    info,
    make,
    on,
    reasons,
    run_pre_filter,
    run_pre_score,
    score_all,
    simulate,
)

HOST = "kubernetes.io/hostname"
WEB, DB = {"app": "web"}, {"app": "db"}


def term(labels: dict, key: str = HOST, **extra) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def affinity(required=(), preferred=(), anti=(), anti_preferred=()) -> dict:
    result: dict = {}
    if required or preferred:
        result["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(required),
                                 "preferredDuringSchedulingIgnoredDuringExecution": list(preferred)}
    if anti or anti_preferred:
        result["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti),
                                     "preferredDuringSchedulingIgnoredDuringExecution": list(anti_preferred)}
    return result


def weighted(weight: int, t: dict) -> dict:
    return {"weight": weight, "podAffinityTerm": t}


def namespace(name: str, **labels: str):
    return from_manifest({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})


def zone_node(name: str, zone: str):
    return node(name, labels={"zone": zone})


def test_three_replicas_with_hostname_anti_affinity_on_two_nodes_leave_one_pending():
    spec = affinity(anti=[term(WEB)])
    sim = simulate([node("n1"), node("n2"), *(pod(f"web-{i}", cpu="100m", labels=WEB, affinity=spec)
                                               for i in range(3))])
    placed = [p.spec.node_name for p in sim.pods() if p.spec.node_name]
    assert sorted(placed) == ["n1", "n2"]
    assert failure(sim).startswith("0/2 nodes are available: 2 " + REASON_ANTI_AFFINITY + ".")


def test_required_affinity_follows_the_matching_pods_domain():
    nodes = [zone_node("a1", "a"), zone_node("a2", "a"), zone_node("b1", "b")]
    sim = simulate([*nodes, pod("db", cpu="100m", labels=DB, node_name="a1"),
                    pod("web", cpu="100m", labels=WEB, affinity=affinity(required=[term(DB, "zone")]))])
    assert sim.pod("web").spec.node_name in ("a1", "a2")


def test_filter_reasons_and_codes():
    plugin = make(InterPodAffinity)
    nodes = [info(zone_node("a1", "a"), on(pod("db", labels=DB), "a1")), info(zone_node("b1", "b")),
             info(node("nozone"))]
    incoming = pod("web", labels=WEB, affinity=affinity(required=[term(DB, "zone")]))
    state, _, status = run_pre_filter(plugin, incoming, nodes)
    assert status is None
    statuses = filter_all(plugin, state, incoming, nodes)
    assert statuses[0] is None
    assert code(statuses[1]) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and reasons(statuses[1]) == (REASON_AFFINITY,)
    assert reasons(statuses[2]) == (REASON_AFFINITY,)  # the topology key is missing


def test_anti_affinity_is_unschedulable_so_preemption_may_help():
    plugin = make(InterPodAffinity)
    nodes = [info(node("n1"), on(pod("web-0", labels=WEB), "n1"))]
    incoming = pod("web-1", labels=WEB, affinity=affinity(anti=[term(WEB)]))
    state, _, _ = run_pre_filter(plugin, incoming, nodes)
    (status,) = filter_all(plugin, state, incoming, nodes)
    assert code(status) == Code.UNSCHEDULABLE and reasons(status) == (REASON_ANTI_AFFINITY,)


def test_existing_pods_anti_affinity_keeps_a_matching_pod_away():
    keeper = on(pod("keeper", labels=DB, affinity=affinity(anti=[term(WEB, "zone")])), "a1")
    plugin = make(InterPodAffinity)
    nodes = [info(zone_node("a1", "a"), keeper), info(zone_node("a2", "a")), info(zone_node("b1", "b"))]
    incoming = pod("web", labels=WEB)
    state, _, status = run_pre_filter(plugin, incoming, nodes)
    assert status is None  # no terms of its own, but an existing pod's anti-affinity applies
    statuses = filter_all(plugin, state, incoming, nodes)
    assert [reasons(s) for s in statuses] == [(REASON_EXISTING_ANTI_AFFINITY,)] * 2 + [()]
    assert code(statuses[0]) == Code.UNSCHEDULABLE


def test_a_pod_without_terms_in_a_cluster_without_anti_affinity_skips():
    plugin = make(InterPodAffinity)
    _, _, status = run_pre_filter(plugin, pod("plain"), [info(node("n1"), on(pod("x", labels=WEB), "n1"))])
    assert status.code == Code.SKIP


def test_the_first_pod_of_a_self_affine_group_goes_anywhere_the_key_exists():
    spec = affinity(required=[term(WEB, "zone")])
    sim = simulate([zone_node("a1", "a"), zone_node("b1", "b"), node("nozone"),
                    *(pod(f"web-{i}", cpu="100m", labels=WEB, affinity=spec) for i in range(3))])
    zones = {sim.get("Node", p.spec.node_name).metadata.labels.get("zone") for p in sim.pods()}
    assert len(zones) == 1 and None not in zones  # all follow the first, never onto the unlabelled node


def test_a_self_affine_pod_that_does_not_match_itself_stays_pending():
    sim = simulate([zone_node("a1", "a"),
                    pod("web", cpu="100m", labels=WEB, affinity=affinity(required=[term(DB, "zone")]))])
    assert not sim.pod("web").spec.node_name
    assert REASON_AFFINITY in failure(sim)


def test_a_pending_pod_is_retried_when_the_pod_its_affinity_wants_is_bound():
    sim = simulate([node("n1"), node("n2"),
                    pod("web", cpu="100m", labels=WEB, affinity=affinity(required=[term(DB)]))])
    assert not sim.pod("web").spec.node_name
    sim.create([pod("db", cpu="100m", labels=DB)])
    sim.run()
    assert sim.pod("web").spec.node_name == sim.pod("db").spec.node_name != ""


def test_terms_select_the_pods_own_namespace_unless_told_otherwise():
    plugin = make(InterPodAffinity)
    other_ns = on(pod("db", labels=DB, namespace="other"), "a1")
    nodes = [info(zone_node("a1", "a"), other_ns), info(zone_node("b1", "b"))]
    same_ns = pod("web", labels=WEB, affinity=affinity(anti=[term(DB, "zone")]))
    state, _, _ = run_pre_filter(plugin, same_ns, nodes)
    assert filter_all(plugin, state, same_ns, nodes) == [None, None]
    listed = pod("web", labels=WEB, affinity=affinity(anti=[term(DB, "zone", namespaces=["other"])]))
    state, _, _ = run_pre_filter(plugin, listed, nodes)
    assert [reasons(s) for s in filter_all(plugin, state, listed, nodes)] == [(REASON_ANTI_AFFINITY,), ()]
    everywhere = pod("web", labels=WEB, affinity=affinity(anti=[term(DB, "zone", namespaceSelector={})]))
    state, _, _ = run_pre_filter(plugin, everywhere, nodes)
    assert reasons(filter_all(plugin, state, everywhere, nodes)[0]) == (REASON_ANTI_AFFINITY,)


def test_namespace_selector_matches_namespace_labels():
    spec = affinity(required=[term(DB, "zone", namespaceSelector={"matchLabels": {"team": "data"}})])
    objects = [namespace("default"), namespace("data", team="data"), namespace("other", team="other"),
               zone_node("a1", "a"), zone_node("b1", "b"),
               pod("db-other", cpu="100m", labels=DB, namespace="other", node_name="a1"),
               pod("db-data", cpu="100m", labels=DB, namespace="data", node_name="b1"),
               pod("web", cpu="100m", labels=WEB, affinity=spec)]
    sim = simulate(objects)
    assert sim.pod("web").spec.node_name == "b1"


def test_existing_pods_namespace_selector_is_matched_against_the_incoming_pods_namespace():
    keeper_spec = affinity(anti=[term(WEB, namespaceSelector={"matchLabels": {"env": "prod"}})])
    objects = [namespace("prod", env="prod"), namespace("dev", env="dev"), node("n1"),
               pod("keeper", cpu="100m", labels=DB, affinity=keeper_spec, node_name="n1"),
               pod("web-dev", cpu="100m", labels=WEB, namespace="dev"),
               pod("web-prod", cpu="100m", labels=WEB, namespace="prod")]
    sim = simulate(objects)
    assert sim.pod("dev/web-dev").spec.node_name == "n1"
    assert not sim.pod("prod/web-prod").spec.node_name


def test_match_label_keys_keep_revisions_apart():
    spec = affinity(anti=[term(WEB, matchLabelKeys=["rev"])])
    sim = simulate([node("n1"), node("n2"),
                    pod("old", cpu="100m", labels={**WEB, "rev": "1"}, affinity=spec, node_name="n1"),
                    pod("new-0", cpu="100m", labels={**WEB, "rev": "2"}, affinity=spec),
                    pod("new-1", cpu="100m", labels={**WEB, "rev": "2"}, affinity=spec)])
    # the old revision does not repel the new one: both new pods place (one per node among themselves)
    assert {sim.pod("new-0").spec.node_name, sim.pod("new-1").spec.node_name} == {"n1", "n2"}
    merged = sim.pod("new-0").spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0]
    assert ("rev", "In", ("2",)) in [(r.key, r.operator, r.values) for r in merged.label_selector.match_expressions]


def test_add_pod_and_remove_pod_update_the_counts():
    plugin = make(InterPodAffinity)
    nodes = [info(node("n1")), info(node("n2"))]
    incoming = pod("web", labels=WEB, affinity=affinity(anti=[term(WEB)]))
    state, _, _ = run_pre_filter(plugin, incoming, nodes)
    nominated = info(node("tmp"), on(pod("other", labels=WEB), "n1")).pods[0]
    plugin.pre_filter_add_pod(state, incoming, nominated, nodes[0])
    assert reasons(plugin.filter(state, incoming, nodes[0])) == (REASON_ANTI_AFFINITY,)
    clone = state.clone()
    plugin.pre_filter_remove_pod(clone, incoming, nominated, nodes[0])
    assert plugin.filter(clone, incoming, nodes[0]) is None
    assert plugin.filter(state, incoming, nodes[0]) is not None


def test_preferred_affinity_and_anti_affinity_score_per_domain():
    plugin = make(InterPodAffinity)
    nodes = [info(zone_node("a1", "a"), on(pod("db", labels=DB), "a1")), info(zone_node("a2", "a")),
             info(zone_node("b1", "b"), on(pod("cache", labels={"app": "cache"}), "b1")), info(zone_node("c1", "c"))]
    incoming = pod("web", labels=WEB, affinity=affinity(preferred=[weighted(10, term(DB, "zone"))],
                                                         anti_preferred=[weighted(5, term({"app": "cache"}, "zone"))]))
    state = CycleState()
    assert run_pre_score(plugin, state, incoming, nodes) is None
    # raw: a = +10, b = -5, c = 0 -> (s - min) * 100 / 15
    assert score_all(plugin, state, incoming, nodes) == [100, 100, 0, 33]


def test_existing_pods_terms_score_the_incoming_pod_with_hard_weight():
    existing = on(pod("db", labels=DB, affinity=affinity(required=[term(WEB, "zone")],
                                                         preferred=[weighted(3, term(WEB, "zone"))])), "a1")
    nodes = [info(zone_node("a1", "a"), existing), info(zone_node("b1", "b"))]
    incoming = pod("web", labels=WEB)
    state = CycleState()
    run_pre_score(make(InterPodAffinity, {"hardPodAffinityWeight": 5}), state, incoming, nodes)
    assert state.get("PreScoreInterPodAffinity").pairs() == {"zone": {"a": 8}}
    state = CycleState()
    run_pre_score(make(InterPodAffinity, {"hardPodAffinityWeight": 0}), state, incoming, nodes)
    assert state.get("PreScoreInterPodAffinity").pairs() == {"zone": {"a": 3}}


def test_ignore_preferred_terms_of_existing_pods_skips_pods_without_their_own():
    existing = on(pod("db", labels=DB, affinity=affinity(preferred=[weighted(3, term(WEB))])), "n1")
    nodes = [info(node("n1"), existing), info(node("n2"))]
    plugin = make(InterPodAffinity, {"ignorePreferredTermsOfExistingPods": True})
    assert run_pre_score(plugin, CycleState(), pod("web", labels=WEB), nodes).code == Code.SKIP
    assert run_pre_score(make(InterPodAffinity), CycleState(), pod("web", labels=WEB), nodes) is None


@pytest.mark.parametrize("args", [{"hardPodAffinityWeight": -1}, {"hardPodAffinityWeight": 101}])
def test_hard_pod_affinity_weight_must_be_within_0_and_100(args):
    with pytest.raises((ManifestError, PluginError)) as err:
        make(InterPodAffinity, args)
    assert "hardPodAffinityWeight" in str(err.value)


@pytest.mark.parametrize("bad, field", [
    ({"labelSelector": {"matchLabels": WEB}, "topologyKey": ""}, "topologyKey"),
    ({"labelSelector": {"matchLabels": WEB}, "topologyKey": HOST, "matchLabelKeys": ["a"],
      "mismatchLabelKeys": ["a"]}, "matchLabelKeys"),
])
def test_invalid_terms_are_refused_naming_the_field(bad, field):
    with pytest.raises(ManifestError) as err:
        pod("bad", affinity=affinity(anti=[bad]))
    assert err.value.field.endswith(field)


def test_preemption_evicts_the_lower_priority_pod_that_the_anti_affinity_rejects():
    spec = affinity(anti=[term(WEB)])
    sim = simulate([node("n1"), pod("low", cpu="100m", labels=WEB, priority=1, node_name="n1"),
                    pod("high", cpu="100m", labels=WEB, priority=100, affinity=spec)],
                   config(plugins={"multiPoint": {"enabled": [{"name": "InterPodAffinity"}]}}))
    assert sim.pod("high").spec.node_name == "n1"
    assert "low" not in [p.metadata.name for p in sim.pods()]
