"""Events about objects, written through the cluster and aggregated like client-go does."""

from __future__ import annotations

from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import ApiError
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.observability.events import AGGREGATION_SECONDS, EventRecorder
from kubesched.testing import pod


def setup():
    clock = FakeClock(1000)
    cluster = MemoryCluster(clock)
    target = cluster.create(pod("web", namespace="shop"))
    return clock, cluster, target, EventRecorder(cluster, clock, "my-scheduler")


def test_an_event_names_the_object_and_the_component():
    clock, cluster, target, recorder = setup()
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available")
    (event,) = cluster.list("Event").items
    assert event.metadata.namespace == "shop" and event.metadata.name.startswith("web.")
    ref = event.involved_object
    assert (ref.api_version, ref.kind, ref.namespace, ref.name, ref.uid) == ("v1", "Pod", "shop", "web", target.metadata.uid)
    assert (event.type, event.reason, event.action, event.message) == (
        "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available")
    assert event.source.component == "my-scheduler" and event.reporting_component == "my-scheduler"
    assert event.first_timestamp == event.last_timestamp == 1000 and event.count == 1


def test_repeats_are_counted_on_one_event_within_the_aggregation_window():
    clock, cluster, target, recorder = setup()
    for _ in range(3):
        recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "same")
        clock.advance(60)
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "different")
    events = sorted(cluster.list("Event").items, key=lambda e: e.first_timestamp)
    assert [(e.message, e.count) for e in events] == [("same", 3), ("different", 1)]
    assert events[0].first_timestamp == 1000 and events[0].last_timestamp == 1120


def test_after_the_window_a_new_event_starts():
    clock, cluster, target, recorder = setup()
    recorder.event(target, "Normal", "Scheduled", "Binding", "ok")
    clock.advance(AGGREGATION_SECONDS + 1)
    recorder.event(target, "Normal", "Scheduled", "Binding", "ok")
    assert sorted(e.count for e in cluster.list("Event").items) == [1, 1]


def test_a_failing_write_is_dropped_not_raised():
    clock, cluster, target, recorder = setup()

    def refuse(verb, kind, obj):
        if kind == "Event":
            raise ApiError("events are off")

    cluster.fail_hook = refuse
    recorder.event(target, "Normal", "Scheduled", "Binding", "ok")
    assert recorder.dropped == 1 and cluster.list("Event").items == []


def test_a_long_running_recorder_remembers_only_the_most_recent_events(monkeypatch):
    # a daemon records events about millions of pods: what it keeps for aggregation is bounded, as client-go's LRU
    monkeypatch.setattr("kubesched.core.observability.events.MAX_REMEMBERED_EVENTS", 3)
    clock, cluster, target, recorder = setup()
    for message in ("a", "b", "c", "a", "d"):  # "a" used again: "b" is the least recent when "d" comes
        recorder.event(target, "Warning", "FailedScheduling", "Scheduling", message)
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "b")  # forgotten: a new Event
    recorder.event(target, "Warning", "FailedScheduling", "Scheduling", "a")  # remembered: counted
    counts = sorted((e.message, e.count) for e in cluster.list("Event").items)
    assert counts == [("a", 3), ("b", 1), ("b", 1), ("c", 1), ("d", 1)]
