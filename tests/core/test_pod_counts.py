"""Pods counted per node and per topology domain (NodeTable.matching_pods), kept as pods come and go."""

from __future__ import annotations

import attrs
import pytest

from kubesched import TermIndex, selector_tag, term_tag
from kubesched.core.api.meta import LabelSelector, LabelSelectorRequirement, evolve_meta
from kubesched.core.clock import FakeClock
from kubesched.core.framework import pod_counts
from kubesched.core.framework.affinity import AffinityTerm, AffinityTerms
from kubesched.core.framework.snapshot import Snapshot
from kubesched.core.scheduler.cache import Cache
from kubesched.testing import node, pod

WEB = LabelSelector(match_labels={"app": "web"})


def on(p, node_name):
    return attrs.evolve(p, spec=attrs.evolve(p.spec, node_name=node_name))


def mk(name, node_name, labels, **kwargs):
    return on(evolve_meta(pod(name, cpu="0", labels=labels, **kwargs), uid=f"uid-{name}"), node_name)


@pytest.fixture
def cache():
    c = Cache(FakeClock(0), ttl=30)
    for name, zone in (("n1", "a"), ("n2", "a"), ("n3", "b")):
        c.add_node(node(name, cpu="4", labels={"zone": zone}))
    return c


def web_count(table):
    return table.matching_pods("web", lambda info: WEB.matches(info.pod.metadata.labels), selector_tag(WEB))


def recount(cache, snapshot):
    """What a count from scratch gives: web pods per node of the snapshot."""
    return [sum(1 for info in cache.nodes[i.name].pods if WEB.matches(info.pod.metadata.labels))
            for i in snapshot.nodes]


def test_counts_follow_assume_forget_confirm_relabel_and_delete(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    count = web_count(table)
    assert list(count.per_node) == [0, 0, 0] and list(count.per_domain("zone")) == [0, 0]
    web1, web2, db = mk("w1", "n1", {"app": "web"}), mk("w2", "n3", {"app": "web"}), mk("d", "n1", {"app": "db"})
    for p in (web1, web2, db):
        cache.assume_pod(p)
    cache.update_snapshot(snapshot)
    assert web_count(table) is count
    assert list(count.per_node) == [1, 0, 1] and list(count.per_domain("zone")) == [1, 1]
    cache.forget_pod(web2)  # an assumed pod undone
    cache.add_pod(web1)  # the binding confirmed: the same pod, a new PodInfo
    cache.update_snapshot(snapshot)
    assert list(count.per_node) == [1, 0, 0] == recount(cache, snapshot)
    assert list(count.per_domain("zone")) == [1, 0]
    relabelled = evolve_meta(db, labels={"app": "web"})
    cache.add_pod(db)
    cache.update_pod(db, relabelled)
    cache.update_snapshot(snapshot)
    assert list(count.per_node) == [2, 0, 0] == recount(cache, snapshot)
    cache.remove_pod(web1)
    cache.update_snapshot(snapshot)
    assert list(count.per_node) == [1, 0, 0] and list(count.per_domain("zone")) == [1, 0]
    made_now = table.matching_pods("web-again", lambda info: WEB.matches(info.pod.metadata.labels), selector_tag(WEB))
    assert list(made_now.per_node) == [1, 0, 0]  # made from the pods indexed by tag, as they came and went


def test_a_count_made_mid_cycle_counts_the_pods_as_the_snapshot_last_saw_them(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    other = table.matching_pods("other", lambda info: 0, None)  # the table now follows its rows' pods
    cache.assume_pod(mk("w1", "n2", {"app": "web"}))  # not yet in the snapshot
    count = web_count(table)
    assert list(count.per_node) == [0, 0, 0]
    cache.update_snapshot(snapshot)
    assert list(count.per_node) == [0, 1, 0] and list(other.per_node) == [0, 0, 0]


def test_a_node_relabelled_moves_its_pods_to_the_new_domain(cache):
    snapshot = Snapshot()
    cache.assume_pod(mk("w1", "n1", {"app": "web"}))
    cache.update_snapshot(snapshot)
    count = web_count(snapshot.table)
    assert list(count.per_domain("zone")) == [1, 0]
    cache.update_node(node("n1", cpu="4", labels={"zone": "a"}), node("n1", cpu="4", labels={"zone": "b"}))
    cache.update_snapshot(snapshot)
    assert list(count.per_domain("zone")) == [0, 1]
    # back to zone a, with a pod arriving in the same refresh: weighed after the relabel
    cache.update_node(node("n1", cpu="4", labels={"zone": "b"}), node("n1", cpu="4", labels={"zone": "a"}))
    cache.assume_pod(mk("w2", "n1", {"app": "web"}))
    cache.update_snapshot(snapshot)
    assert list(count.per_domain("zone")) == [2, 0]


def test_only_counts_a_pod_could_touch_weigh_it(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    weighed: list[str] = []

    def weight(info):
        weighed.append(info.pod.metadata.name)
        return WEB.matches(info.pod.metadata.labels)

    table.matching_pods("web", weight, selector_tag(WEB))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}
    guard = mk("g", "n3", {"app": "guard"}, affinity=anti)
    term = AffinityTerms.of(guard).required_anti_affinity[0]
    carrying = table.matching_pods("anti", lambda info: term in info.affinity_terms.required_anti_affinity,
                                   term_tag(term))
    for p in (mk("w1", "n1", {"app": "web"}), mk("d", "n2", {"app": "db"}), guard):
        cache.assume_pod(p)
    cache.update_snapshot(snapshot)
    assert weighed == ["w1"]
    assert list(carrying.per_node) == [0, 0, 1]


def test_selector_tags_name_a_label_every_selected_pod_carries():
    assert selector_tag(WEB) == ("app", "web")
    assert selector_tag(LabelSelector(match_expressions=(LabelSelectorRequirement("tier", "In", ("a",)),))) \
        == ("tier", "a")
    assert selector_tag(LabelSelector(match_expressions=(LabelSelectorRequirement("tier", "In", ("a", "b")),))) \
        == ("tier",)
    assert selector_tag(LabelSelector(match_expressions=(LabelSelectorRequirement("tier", "NotIn", ("a",)),))) \
        is None
    assert selector_tag(LabelSelector()) is None


def test_beyond_the_bound_the_least_recently_used_count_is_made_again(cache, monkeypatch):
    # room for two counts of this 3-node table (int32 per node and the fixed share), not three
    monkeypatch.setattr(pod_counts, "MAX_POD_COUNT_BYTES", 2 * (pod_counts.COUNT_OVERHEAD_BYTES + 3 * 4))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    first = web_count(table)
    table.matching_pods("second", lambda info: 1, None)
    assert web_count(table) is first
    table.matching_pods("third", lambda info: 1, None)  # "second" was the least recently used
    assert web_count(table) is first
    cache.assume_pod(mk("w1", "n1", {"app": "web"}))
    cache.update_snapshot(snapshot)
    remade = table.matching_pods("second", lambda info: 1, None)
    assert list(remade.per_node) == [1, 0, 0] and list(first.per_node) == [1, 0, 0]


def test_a_term_index_gives_the_terms_a_pod_may_match_and_follows_its_dict():
    def term(selector):
        return AffinityTerm("zone", selector, frozenset({"default"}), None)

    web, tiers, anything = term(WEB), term(LabelSelector(match_expressions=(
        LabelSelectorRequirement("tier", "In", ("a", "b")),))), term(LabelSelector(match_expressions=(
            LabelSelectorRequirement("tier", "NotIn", ("c",)),)))
    terms = {"web": web, "tiers": tiers}
    index = TermIndex()
    assert list(index.selecting(terms, {"app": "db"})) == []
    assert list(index.selecting(terms, {"app": "web", "tier": "z"})) in (
        [("web", web), ("tiers", tiers)], [("tiers", tiers), ("web", web)])
    terms["anything"] = anything  # the dict grew: caught up
    assert list(index.selecting(terms, {"app": "db"})) == [("anything", anything)]
    rebuilt = {"tiers": tiers}  # a new dict: indexed afresh
    assert list(index.selecting(rebuilt, {"app": "web", "tier": "a"})) == [("tiers", tiers)]
