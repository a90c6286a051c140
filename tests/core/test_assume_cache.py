"""AssumeCache: assumed versions over an informer, as the volume and DRA plugins use it."""

from __future__ import annotations

import pytest

from kubesched.core.api.meta import evolve_meta
from kubesched.core.cluster.assume_cache import AssumeCache, AssumeError
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.testing import node


def started(*objects):
    cluster = MemoryCluster()
    for obj in objects:
        cluster.create(obj)
    informers = Informers(cluster)
    cache = AssumeCache(informers, "Node")
    changes = []
    cache.add_handler(lambda old, new: changes.append((old and old.metadata.labels.get("x"),
                                                       new and new.metadata.labels.get("x"))))
    informers.start()
    informers.pump()
    return cluster, informers, cache, changes


def test_an_assumed_version_is_visible_until_restored():
    cluster, informers, cache, changes = started(node("n1"))
    api = cache.get("n1")
    cache.assume(evolve_meta(api, labels={"x": "assumed"}))
    assert cache.get("n1").metadata.labels == {"x": "assumed"}
    assert cache.get_api_obj("n1") is api
    assert cache.is_assumed("n1")
    cache.restore("n1")
    assert cache.get("n1") is api and not cache.is_assumed("n1")
    assert changes == [(None, None), (None, "assumed"), ("assumed", None)]


def test_a_newer_api_version_replaces_the_assumed_one():
    cluster, informers, cache, _ = started(node("n1"))
    cache.assume(evolve_meta(cache.get("n1"), labels={"x": "assumed"}))
    cluster.update(evolve_meta(cluster.get("Node", "n1"), labels={"x": "written"}))
    informers.pump()
    assert cache.get("n1").metadata.labels == {"x": "written"}
    assert not cache.is_assumed("n1")
    cache.restore("n1")  # nothing assumed any more: a no-op
    assert cache.get("n1").metadata.labels == {"x": "written"}


def test_assuming_an_unknown_or_stale_object_is_refused():
    cluster, informers, cache, _ = started(node("n1"))
    stale = cache.get("n1")
    cluster.update(evolve_meta(stale, labels={"x": "new"}))
    informers.pump()
    with pytest.raises(AssumeError, match="out of sync"):
        cache.assume(evolve_meta(stale, labels={"x": "mine"}))
    with pytest.raises(AssumeError, match="not found"):
        cache.assume(node("n2"))


def test_a_deleted_object_leaves_the_cache():
    cluster, informers, cache, changes = started(node("n1"), node("n2"))
    cluster.delete("Node", "n1")
    informers.pump()
    assert cache.get("n1") is None
    assert [n.metadata.name for n in cache.list()] == ["n2"]
