"""The scheduler cache: assumed pods, confirmation by the informer, expiry, snapshots."""

from __future__ import annotations

import re

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import Pod, PodSpec
from kubesched.core.api.meta import evolve_meta, replacer
from kubesched.core.clock import FakeClock
from kubesched.core.framework.snapshot import Snapshot
from kubesched.core.scheduler.assume import on_node
from kubesched.core.scheduler.cache import Cache, CacheError
from kubesched.testing import node, pod


def on(p, node_name):
    return attrs.evolve(p, spec=attrs.evolve(p.spec, node_name=node_name))


def mk(name, cpu="1", node_name="", **kwargs):
    return evolve_meta(pod(name, cpu=cpu, memory="1Gi", node_name=node_name, **kwargs), uid=f"uid-{name}")


@pytest.fixture
def cache():
    c = Cache(FakeClock(0), ttl=30)
    c.add_node(node("n1", cpu="4"))
    c.add_node(node("n2", cpu="4"))
    return c


def cpu_used(cache, name):
    return cache.nodes[name].requested.get("cpu", 0)


def test_assume_counts_the_pod_before_binding(cache):
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    assert cache.is_assumed(p)
    assert cpu_used(cache, "n1") == 1000
    assert cache.dump() == {"n1": ["default/p*"], "n2": []}
    with pytest.raises(CacheError, match="is in the cache, so can't be assumed"):
        cache.assume_pod(p)
    bound = mk("b", node_name="n2")
    cache.add_pod(bound)
    for again in (on(p, "n2"), bound):  # refused, and nothing counted twice
        with pytest.raises(CacheError, match=r"pod default/\w \(uid uid-\w\) is in the cache, so can't be assumed"):
            cache.assume_pod(again)
    assert cache.dump() == {"n1": ["default/p*"], "n2": ["default/b"]} and cache.pod_count() == 2
    assert cpu_used(cache, "n1") == 1000 == cpu_used(cache, "n2") and cache.assumed_node(p) == "n1"


RICH = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    "hostNetwork": True, "tolerations": [{"operator": "Exists"}], "priority": 7}


def test_the_assumed_pod_is_the_pod_evolved_onto_its_node():
    p = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u", "labels": {"a": "b"}},
                       "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}],
                                **RICH},
                       "status": {"phase": "Pending"}})
    assumed = on_node(p, "n1")
    assert type(assumed) is Pod and assumed == on(p, "n1") and assumed.spec.node_name == "n1"
    assert p.spec.node_name == "" and assumed.spec.extra == {"hostNetwork": True}
    assert all(getattr(assumed.spec, f.name) is getattr(p.spec, f.name)
               for f in attrs.fields(PodSpec) if f.name != "node_name")
    assert (assumed.metadata, assumed.status) == (p.metadata, p.status) and assumed.metadata is p.metadata


@attrs.frozen
class _Checked:
    a: int = attrs.field(default=0, validator=attrs.validators.instance_of(int))


@attrs.frozen
class _Converted:
    a: int = attrs.field(default=0, converter=int)


@attrs.frozen
class _PostInit:
    a: int = 0
    b: int = 0

    def __attrs_post_init__(self):
        if self.a < 0:
            raise ValueError("a")


@attrs.define
class _Mutable:
    a: int = 0


@attrs.frozen
class _NotInit:
    a: int = 0
    b: int = attrs.field(default=0, init=False)


@attrs.frozen(cache_hash=True)
class _CachedHash:
    a: int = 0


@attrs.frozen
class _PreInit:
    a: int = 0

    def __attrs_pre_init__(self):
        pass


@attrs.frozen(slots=False)
class _NoSlots:
    a: int = 0


@pytest.mark.parametrize("cls, name, problem", [
    (_Checked, "a", "_Checked.a is set by __init__ otherwise than from its argument"),
    (_Converted, "a", "_Converted.a is set by __init__ otherwise than from its argument"),
    (_NotInit, "a", "_NotInit.b is set by __init__ otherwise than from its argument"),
    (_CachedHash, "a", "_CachedHash._attrs_cached_hash is set by __init__ otherwise than from its argument"),
    (_PreInit, "a", "_PreInit has an __attrs_pre_init__"),
    (_PostInit, "a", "_PostInit.__attrs_post_init__ reads 'a'"),
    (_PostInit, "c", "_PostInit has no field 'c'"),
    (_Mutable, "a", "_Mutable is not a frozen attrs class with slots"),
    (_NoSlots, "a", "_NoSlots is not a frozen attrs class with slots"),
])
def test_a_one_field_copy_without_init_is_refused_where_init_could_matter(cls, name, problem):
    with pytest.raises(TypeError, match=re.escape(f"replacer: {problem}")):
        replacer(cls, name)
    assert replacer(_PostInit, "b")(_PostInit(1, 2), 3) == _PostInit(1, 3)


def test_forget_undoes_assume(cache):
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    cache.forget_pod(p)
    assert not cache.is_assumed(p) and cache.pod_count() == 0
    assert cpu_used(cache, "n1") == 0


def test_forgetting_a_pod_before_the_last_one_takes_off_what_it_counted(cache):
    a = on(mk("a", labels={"app": "db"}, affinity=ANTI, host_ports=[80]), "n1")
    b, c = on(mk("b", affinity=ANTI, host_ports=[81]), "n1"), on(mk("c"), "n1")
    for p in (a, b, c):
        cache.assume_pod(p)
    info = cache.nodes["n1"]
    cache.forget_pod(a)
    assert [p.pod for p in info.pods] == [b, c] and [p.pod for p in info.pods_with_affinity] == [b]
    assert [p.pod for p in info.pods_with_required_anti_affinity] == [b]
    assert info.used_ports == [("0.0.0.0", "TCP", 81)] and cpu_used(cache, "n1") == 2000 == info.non_zero_cpu
    cache.forget_pod(c)
    cache.forget_pod(on(b, ""))  # a copy without its node: found by UID
    assert info.pods == info.pods_with_affinity == info.used_ports == [] and cpu_used(cache, "n1") == 0
    assert cache.pod_count() == 0 and cache.dump() == {"n1": [], "n2": []}


def test_forget_refuses_a_confirmed_pod_or_the_wrong_node(cache):
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    with pytest.raises(CacheError, match="was assumed on n1 but assigned to n2"):
        cache.forget_pod(on(p, "n2"))
    cache.add_pod(p)  # confirmed
    with pytest.raises(CacheError, match="wasn't assumed so cannot be forgotten"):
        cache.forget_pod(p)
    assert cpu_used(cache, "n1") == 1000


def test_the_informer_confirms_an_assumed_pod(cache):
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    cache.finish_binding(p)
    bound = evolve_meta(p, resource_version="9")
    cache.add_pod(bound)
    assert not cache.is_assumed(p)
    assert cache.nodes["n1"].pods[0].pod is bound  # the API's copy replaces the assumed one
    assert cpu_used(cache, "n1") == 1000 and cache.pod_count() == 1
    cache.clock.advance(60)
    assert cache.pod_count() == 1  # confirmed pods never expire


ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def test_a_confirmed_or_updated_pod_goes_last_on_its_node_counted_as_before(cache):
    a, b = on(mk("a", labels={"app": "db"}, affinity=ANTI, host_ports=[80]), "n1"), on(mk("b"), "n1")
    cache.assume_pod(a)
    cache.assume_pod(b)
    info = cache.nodes["n1"]
    held, generation = info.pods[0], info.generation
    bound = evolve_meta(a, resource_version="9")
    cache.add_pod(bound)  # the binding confirmed: a goes after b, as when removed and added again
    assert [p.pod for p in info.pods] == [b, bound] and info.generation > generation
    assert info.pods[1].requests is held.requests  # nothing recomputed for the same spec
    assert [p.pod for p in info.pods_with_affinity] == [bound] == [p.pod for p in info.pods_with_required_anti_affinity]
    assert info.used_ports == [("0.0.0.0", "TCP", 80)] and cpu_used(cache, "n1") == 2000
    running = attrs.evolve(bound, status=attrs.evolve(bound.status, phase="Running"))
    cache.update_pod(bound, running)
    cache.update_pod(b, b)  # b's own update moves it last again
    assert [p.pod for p in info.pods] == [running, b] and info.pods_with_affinity[0].pod is running
    assert cpu_used(cache, "n1") == 2000 and info.non_zero_cpu == 2000


def test_confirmation_on_another_node_moves_the_pod(cache):
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    cache.add_pod(on(p, "n2"))
    assert cpu_used(cache, "n1") == 0 and cpu_used(cache, "n2") == 1000
    assert not cache.is_assumed(p)


def test_an_assumed_pod_expires_ttl_after_binding_finished(cache):
    clock = cache.clock
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    clock.advance(100)
    assert cache.is_assumed(p)  # the ttl runs only once binding finished
    cache.finish_binding(p)
    clock.advance(29.9)
    assert cache.is_assumed(p)
    clock.advance(0.1)
    assert not cache.is_assumed(p) and cache.pod_count() == 0
    assert cpu_used(cache, "n1") == 0


def test_no_expiry_with_ttl_zero():
    cache = Cache(FakeClock(0))
    cache.add_node(node("n1"))
    p = on(mk("p"), "n1")
    cache.assume_pod(p)
    cache.finish_binding(p)
    cache.clock.advance(10**6)
    assert cache.is_assumed(p)
    assert cache.cleanup_expired() == []


def test_bound_pods_from_the_informer(cache):
    a = mk("a", node_name="n1")
    cache.add_pod(a)
    assert cpu_used(cache, "n1") == 1000
    grown = attrs.evolve(a, spec=attrs.evolve(a.spec, containers=mk("x", cpu="3").spec.containers))
    cache.update_pod(a, grown)
    assert cpu_used(cache, "n1") == 3000
    cache.remove_pod(grown)
    assert cpu_used(cache, "n1") == 0 and cache.pod_count() == 0


def test_pods_may_arrive_before_their_node():
    cache = Cache(FakeClock(0))
    cache.add_pod(mk("early", node_name="late-node"))
    assert cache.node_count() == 0
    cache.add_node(node("late-node", cpu="2"))
    assert cache.node_count() == 1
    assert cpu_used(cache, "late-node") == 1000


def test_a_removed_node_leaves_the_snapshot_but_its_pods_stay_counted(cache):
    cache.add_pod(mk("a", node_name="n1"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.nodes] == ["n1", "n2"]
    cache.remove_node(node("n1"))
    cache.update_snapshot(snapshot)
    assert [n.name for n in snapshot.nodes] == ["n2"]
    assert cache.node_count() == 1
    assert "n1" in cache.nodes  # until its pods are gone
    cache.remove_pod(mk("a", node_name="n1"))
    assert "n1" not in cache.nodes


def test_the_snapshot_follows_changes(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    assert list(table.requested("cpu")) == [0, 0]
    assert list(table.allocatable("cpu")) == [4000, 4000]

    # a pod assumed, a pod bound, a node resized: the next snapshot sees all of them
    cache.assume_pod(on(mk("a", cpu="1"), "n1"))
    cache.add_pod(mk("b", cpu="2", node_name="n2"))
    cache.update_node(node("n1", cpu="4"), node("n1", cpu="8"))
    assert list(table.requested("cpu")) == [0, 0]  # not until the next cycle's update
    cache.update_snapshot(snapshot)
    assert snapshot.table is table  # refreshed in place, not rebuilt
    assert list(table.requested("cpu")) == [1000, 2000]
    assert list(table.allocatable("cpu")) == [8000, 4000]
    assert snapshot.get("n1").allocatable["cpu"] == 8000
    assert list(table.pod_count()) == [1, 1]

    # a new node rebuilds it
    cache.add_node(node("n3", cpu="2"))
    cache.update_snapshot(snapshot)
    assert len(snapshot) == 3 and snapshot.index["n3"] == 2
    assert list(snapshot.table.allocatable("cpu")) == [8000, 4000, 2000]
    assert list(snapshot.table.requested("cpu")) == [1000, 2000, 0]

    # forgetting the assumed pod frees the room again
    cache.forget_pod(on(mk("a", cpu="1"), "n1"))
    cache.update_snapshot(snapshot)
    assert list(snapshot.table.requested("cpu")) == [0, 2000, 0]
    assert snapshot.get("nope") is None


def test_a_pod_change_keeps_the_node_columns_and_a_node_change_refreshes_them(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    read: list[str] = []
    labelled = table.column("zone-a", lambda info: read.append(info.name) or info.labels.get("zone") == "a", of_node=True)
    assert list(table.tolerating(())) == [True, True] and list(labelled) == [0, 0]
    read.clear()

    cache.assume_pod(on(mk("a"), "n1"))  # only the pods of n1 changed: its Node's columns are kept
    cache.update_snapshot(snapshot)
    assert read == [] and list(table.requested("cpu")) == [1000, 0]

    cache.update_node(node("n2"), node("n2", labels={"zone": "a"}, taints=[("gpu", "", "NoSchedule")]))
    cache.update_snapshot(snapshot)
    assert read == ["n2"] and list(labelled) == [0, 1]
    assert list(table.tolerating(())) == [True, False]
    assert list(table.requested("cpu")) == [1000, 0]


def counting_pods(cache):
    """A snapshot of ``cache``, its NodeTable, and a column extract counting each node's pods that notes in
    ``read`` the nodes it was asked about."""
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    read: list[str] = []

    def pods_of(info):
        read.append(info.name)
        return len(info.pods)

    return snapshot, snapshot.table, read, pods_of


@pytest.mark.parametrize("evictable", [True, False])
def test_a_column_that_reads_pods_catches_up_with_the_changed_rows_when_next_asked_for(cache, evictable):
    snapshot, table, read, pods_of = counting_pods(cache)
    assert list(table.column("pods-of", pods_of, evictable=evictable)) == [0, 0]
    read.clear()
    for name in ("a", "b", "c"):
        cache.assume_pod(on(mk(name, cpu="0"), "n2"))
        cache.update_snapshot(snapshot)
    assert read == []  # nothing recomputed until asked for (a gang's assumed members cost the column nothing)
    assert list(table.column("pods-of", pods_of, evictable=evictable)) == [0, 3]
    assert read == ["n2"]  # the changed row once, however many times it changed
    read.clear()
    assert list(table.column("pods-of", pods_of, evictable=evictable)) == [0, 3] and read == []


@pytest.mark.parametrize("read_between", [False, True])
def test_rows_assumed_and_forgotten_again_are_not_judged_again_unless_read_in_between(cache, read_between):
    """A PodGroup placement tried and reverted: the rows it changed are back as they were, so the table may
    forget them (NodeTable.rewind); a column read while they were assumed has the values in between, so then
    the table must refuse and the column catch up."""
    snapshot, table, read, pods_of = counting_pods(cache)
    assert list(table.column("pods-of", pods_of)) == [0, 0]
    mark = table.position()
    members = [on(mk(name, cpu="0"), "n2") for name in ("a", "b")]
    for member in members:
        cache.assume_pod(member)
        cache.update_snapshot(snapshot)
    if read_between:
        assert list(table.column("pods-of", pods_of)) == [0, 2]
    for member in reversed(members):
        cache.forget_pod(member)
        cache.update_snapshot(snapshot)
    read.clear()
    assert table.rewind(mark) is not read_between
    assert list(table.column("pods-of", pods_of)) == [0, 0]
    assert read == (["n2"] if read_between else [])
    cache.assume_pod(on(mk("c", cpu="0"), "n1"))  # what changes after a rewind is caught up as ever
    cache.update_snapshot(snapshot)
    assert list(table.column("pods-of", pods_of)) == [1, 0]


def test_a_node_changed_since_the_mark_is_never_rewound(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    mark = table.position()
    cache.update_node(node("n1", cpu="4"), node("n1", cpu="8"))
    cache.update_snapshot(snapshot)
    assert table.rewind(mark) is False
    assert table.rewind(mark + 5) is False  # a position the log never reached


def test_an_evictable_column_far_behind_is_rebuilt_and_the_least_recently_used_goes_first(cache, monkeypatch):
    from kubesched.core.framework import snapshot as snapshot_module
    monkeypatch.setattr(snapshot_module, "MAX_EVICTABLE_COLUMNS", 2)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    first = table.column("first", lambda info: len(info.pods), evictable=True)
    table.column("second", lambda info: len(info.pods), evictable=True)
    for i in range(6):  # more changes than the log keeps (twice the rows)
        cache.assume_pod(on(mk(f"p{i}", cpu="0"), f"n{1 + i % 2}"))
        cache.update_snapshot(snapshot)
    assert list(table.column("first", lambda info: len(info.pods), evictable=True)) == [3, 3]
    table.column("third", lambda info: 0, evictable=True)  # "second" is the least recently used
    assert table.column("first", lambda info: -1, evictable=True) is first
    assert list(table.column("second", lambda info: -1, evictable=True)) == [-1, -1]


def test_a_matrix_that_reads_pods_catches_up_when_next_asked_for_or_is_rebuilt_far_behind(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    table = snapshot.table
    names = ("cpu", "memory")
    assert table.requested_matrix(names, non_zero=True).tolist() == [[0, 0], [0, 0]]
    assert list(table.pod_count()) == [0, 0]
    for name in ("a", "b"):
        cache.assume_pod(on(mk(name), "n2"))
        cache.update_snapshot(snapshot)
    assert table.requested_matrix(names, non_zero=True).tolist() == [[0, 2000], [0, 2 << 30]]
    cache.assume_pod(on(mk("c", cpu="0"), "n1"))  # a column behind since the same position sees this one too
    cache.update_snapshot(snapshot)
    assert list(table.pod_count()) == [1, 2]
    # one row read alone (re-scoring one node) is the matrix's value there
    assert table.requested_row(names, 1, non_zero=True) == [2000, 2 << 30]
    assert table.allocatable_row(names, 1) == table.allocatable_matrix(names)[:, 1].tolist() == [4000, 32 << 30]
    changes = [lambda: cache.forget_pod(on(mk("a"), "n2")), lambda: cache.forget_pod(on(mk("b"), "n2"))]
    changes += [lambda i=i: cache.assume_pod(on(mk(f"c{i}", cpu="3"), "n1")) for i in range(4)]
    for change in changes:  # further behind than the log reaches (twice the rows): the matrix is rebuilt whole
        change()
        cache.update_snapshot(snapshot)
    assert table.requested_matrix(("cpu", "memory"), non_zero=True).tolist() == [[12000, 0], [5 << 30, 0]]
    assert list(table.requested("cpu")) == [12000, 0] and list(table.pod_count()) == [5, 0]


def test_a_merged_dict_of_affinity_pods_reads_only_rows_with_such_pods(cache):
    snapshot, table, read, _ = counting_pods(cache)

    def terms(info):
        read.append(info.name)
        return {info.pods_with_affinity[0].key: True} if info.pods_with_affinity else {}

    assert table.merged("terms", terms, affinity_pods_only=True) == {} and read == ["n1", "n2"]
    read.clear()
    cache.assume_pod(on(mk("plain"), "n1"))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    cache.assume_pod(on(mk("with-anti", affinity=anti), "n2"))
    cache.update_snapshot(snapshot)
    assert read == ["n2"]  # n1's pods have no affinity: its row is not read
    every: list[str] = []
    assert table.merged("names", lambda info: every.append(info.name) or {info.name: len(info.pods)}) == {
        "n1": 1, "n2": 1}
    every.clear()
    cache.assume_pod(on(mk("plain-2"), "n1"))
    cache.update_snapshot(snapshot)
    assert every == ["n1"] and table.merged("names", lambda info: {}) == {"n1": 2, "n2": 1}  # every row for it
    assert table.merged("terms", terms, affinity_pods_only=True) == {"default/with-anti": True}
    cache.forget_pod(on(mk("with-anti", affinity=anti), "n2"))
    cache.update_snapshot(snapshot)
    assert table.merged("terms", terms, affinity_pods_only=True) == {"default/with-anti": True}  # it only grows
