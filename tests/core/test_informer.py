"""Informers: list, watch, a local store, and handlers called on pump()."""

from __future__ import annotations

import threading

import attrs

from kubesched.core.api.meta import evolve_meta
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.testing import node, pod


def recording_informers(cluster, kind="Pod"):
    log = []
    informers = Informers(cluster)
    informers.add_handlers(
        kind,
        lambda obj: log.append(("add", obj.metadata.name)),
        lambda old, new: log.append(("update", old.metadata.name, old.metadata.resource_version,
                                     new.metadata.resource_version)),
        lambda obj: log.append(("delete", obj.metadata.name)),
    )
    return informers, log


def test_existing_objects_arrive_as_adds_then_changes_in_order():
    cluster = MemoryCluster()
    cluster.create(pod("a"))
    cluster.create(pod("b"))
    informers, log = recording_informers(cluster)
    informers.start()
    assert log == [] and informers.synced  # nothing is delivered until pump()
    assert informers.pump() == 2
    assert sorted(log) == [("add", "a"), ("add", "b")]
    log.clear()

    c = cluster.create(pod("c"))
    updated = cluster.update(evolve_meta(c, labels={"x": "1"}))
    cluster.delete("Pod", "a", "default")
    assert informers.pending() and informers.wakeup.is_set()
    assert informers.pump() == 3
    assert log == [
        ("add", "c"),
        ("update", "c", c.metadata.resource_version, updated.metadata.resource_version),
        ("delete", "a"),
    ]
    assert not informers.pending() and not informers.wakeup.is_set()
    assert sorted(informers.store("Pod")) == ["default/b", "default/c"]
    assert informers.get("Pod", "default/c").metadata.labels == {"x": "1"}


def test_pump_limit():
    cluster = MemoryCluster()
    informers, log = recording_informers(cluster)
    informers.start()
    for name in "abc":
        cluster.create(pod(name))
    assert informers.pump(limit=2) == 2
    assert log == [("add", "a"), ("add", "b")]
    assert informers.pump() == 1
    assert log[-1] == ("add", "c")


def test_only_registered_kinds_are_watched():
    cluster = MemoryCluster()
    informers, log = recording_informers(cluster, kind="Node")
    informers.start()
    cluster.create(pod("p"))
    cluster.create(node("n1"))
    informers.pump()
    assert log == [("add", "n1")]
    assert informers.store("Pod") == {}


def test_delete_hands_over_the_last_known_object():
    cluster = MemoryCluster()
    deleted = []
    informers = Informers(cluster)
    informers.add_handlers("Pod", on_delete=deleted.append)
    informers.start()
    created = cluster.create(pod("a"))
    cluster.update_status(attrs.evolve(created, status=attrs.evolve(created.status, phase="Running")))
    cluster.delete("Pod", "a", "default")
    informers.pump()
    (last,) = deleted
    assert last.status.phase == "Running"


def test_stop_ends_the_watches():
    cluster = MemoryCluster()
    informers, log = recording_informers(cluster)
    informers.start()
    informers.stop()
    cluster.create(pod("late"))
    informers.pump()
    assert log == []


def test_events_from_other_threads_are_queued_for_the_pumping_thread():
    cluster = MemoryCluster()
    informers, log = recording_informers(cluster)
    informers.start()
    writer = threading.Thread(target=lambda: [cluster.create(pod(f"p{i}")) for i in range(20)])
    writer.start()
    writer.join()
    assert log == []
    informers.pump()
    assert log == [("add", f"p{i}") for i in range(20)]


def test_a_reader_iterating_a_store_never_sees_it_change_under_it():
    # a controller worker walks the pods while the scheduler's loop delivers new ones
    cluster = MemoryCluster()
    informers = Informers(cluster)
    informers.add_handlers("Pod")
    for i in range(3):
        cluster.create(pod(f"p{i}"))
    informers.start()
    informers.pump()
    store = informers.store("Pod")
    seen = []
    for i, current in enumerate(store.values()):
        cluster.create(pod(f"late-{i}"))
        informers.pump()  # adds to the store while the walk goes on
        seen.append(current.metadata.name)
    assert seen == ["p0", "p1", "p2"] and len(store) == 6
    for key in store:  # the keys too are a snapshot
        cluster.delete("Pod", key.split("/")[1], "default")
        informers.pump()
    assert len(store) == 0
