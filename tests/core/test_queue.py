"""The scheduling queue: activeQ order, backoff, the unschedulable pool, gates, hints, flushes."""

from __future__ import annotations

import attrs
import pytest

import kubesched
from kubesched import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Status
from kubesched.core.api.meta import evolve_meta
from kubesched.core.clock import FakeClock
from kubesched.core.features import FeatureGates
from kubesched.core.framework.registry import build_args
from kubesched.core.framework.types import ASSIGNED_POD, NODE, UNSCHEDULED_POD, WILDCARD
from kubesched.core.scheduler.queue import (
    MAX_IN_UNSCHEDULABLE_SECONDS,
    SchedulingQueue,
)
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.testing import node, pod

from .helpers import condition, config, simulation

PROFILE = "default-scheduler"
NODE_ADD = ClusterEvent(NODE, ActionType.ADD)


def mk(name, **kwargs):
    return evolve_meta(pod(name, **kwargs), uid=f"uid-{name}")


def make_queue(hints=(), gates=False, initial=1.0, maximum=10.0, start=0.0):
    clock = FakeClock(start)
    gate_plugin = SchedulingGates(None, None)

    def pre_enqueue(p):
        if not gates:
            return None
        status = gate_plugin.pre_enqueue(p)
        return status.with_plugin("SchedulingGates") if status is not None else None

    queue = SchedulingQueue(
        clock=clock,
        less=PrioritySort(build_args(PrioritySort, None), None).less,
        pre_enqueue=pre_enqueue,
        hints={PROFILE: list(hints)},
        profile_of=lambda p: p.spec.scheduler_name,
        initial_backoff=initial,
        max_backoff=maximum,
    )
    return queue, clock


def fail(queue, name_or_info, rejectors=(), pending=False):
    """Pop the pod (it must be the head) and hand it back as failed."""
    info = queue.pop()
    assert info.pod.metadata.name == name_or_info
    queue.add_unschedulable(info, set(rejectors), pending)
    return info


def counts(queue):
    return {k: v for k, v in queue.pending_counts().items() if v}


# --- activeQ -------------------------------------------------------------------------------


def test_active_queue_is_ordered_by_priority_then_arrival():
    queue, clock = make_queue()
    queue.add(mk("low", priority=1))
    clock.advance(1)
    queue.add(mk("high-late", priority=10))
    queue.add(mk("mid", priority=5))
    clock.advance(1)
    queue.add(mk("high-later", priority=10))
    order = []
    while (info := queue.pop()) is not None:
        order.append(info.pod.metadata.name)
    assert order == ["high-late", "high-later", "mid", "low"]


def test_pods_queued_at_the_same_instant_keep_their_arrival_order():
    queue, _ = make_queue()
    names = [f"p{i}" for i in range(12)]
    for name in names:
        queue.add(mk(name))
    queue.add(mk("urgent", priority=5))
    order = []
    while (info := queue.pop()) is not None:
        order.append(info.pod.metadata.name)
    assert order == ["urgent"] + names


def test_pop_counts_attempts_and_adding_twice_is_harmless():
    queue, clock = make_queue(start=50)
    p = mk("p")
    queue.add(p)
    queue.add(p)
    assert counts(queue) == {"active": 1}
    info = queue.pop()
    assert (info.attempts, info.initial_attempt_timestamp) == (1, 50)
    assert queue.pop() is None
    queue.add(p)  # in flight: not queued again
    assert counts(queue) == {}


# --- backoff -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "initial, maximum, expected",
    [(1, 10, [1, 2, 4, 8, 10, 10, 10]), (2, 5, [2, 4, 5, 5]), (3, 3, [3, 3]), (1, 1000, [1, 2, 4, 8, 16, 32])],
)
def test_backoff_doubles_from_initial_up_to_max(initial, maximum, expected):
    queue, _ = make_queue(initial=initial, maximum=maximum)
    queue.add(mk("p"))
    info = queue.pop()
    durations = []
    for attempts in range(1, len(expected) + 1):
        info.attempts = attempts
        durations.append(queue.backoff_duration(info))
    assert durations == expected


def test_error_goes_to_backoff_and_back_to_active_on_the_fake_clock():
    queue, clock = make_queue()
    woken = []
    queue.on_activate = lambda: woken.append(clock.now())
    queue.add(mk("p"))
    woken.clear()
    expected_waits = [1, 2, 4, 8, 10, 10]
    for wait in expected_waits:
        info = fail(queue, "p")  # no rejecting plugin: an error
        assert counts(queue) == {"backoff": 1}
        expiry = clock.now() + wait
        assert info.backoff_expiry == expiry
        clock.advance_to(expiry - 0.01)
        assert counts(queue) == {"backoff": 1} and not queue.has_active()
        clock.advance_to(expiry)
        assert counts(queue) == {"active": 1}
        assert woken[-1] == expiry


def test_backoff_queue_releases_pods_in_expiry_order():
    queue, clock = make_queue()
    queue.add(mk("a", priority=1))
    queue.add(mk("b"))
    a = queue.pop()
    a.attempts = 3  # 4 s
    queue.add_unschedulable(a, set())
    b = queue.pop()
    queue.add_unschedulable(b, set())  # 1 s
    clock.advance(1)
    assert queue.pop().pod.metadata.name == "b"
    assert queue.pop() is None
    clock.advance(3)
    assert queue.pop().pod.metadata.name == "a"


# --- the unschedulable pool and queueing hints -----------------------------------------------


def hint(result, calls=None, raises=False):
    def fn(p, old, new):
        if calls is not None:
            calls.append((p.metadata.name, old, new.metadata.name if new is not None else None))
        if raises:
            raise RuntimeError("hint failed")
        return result
    return fn


def test_rejected_pod_waits_in_the_pool_until_a_registered_event_may_help():
    calls = []
    queue, clock = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE, calls)))])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"Fit"})
    assert counts(queue) == {"unschedulable": 1}
    clock.advance(60)
    assert counts(queue) == {"unschedulable": 1}  # no event, no retry
    new_node = node("n9")
    assert queue.move_all(NODE_ADD, None, new_node) == 1
    assert calls == [("p", None, "n9")]
    assert counts(queue) == {"active": 1}  # backoff (1 s) long expired


def test_a_hint_returning_queue_skip_keeps_the_pod_in_the_pool():
    calls = []
    queue, clock = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE_SKIP, calls)))])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"Fit"})
    assert queue.move_all(NODE_ADD, None, node("n9")) == 0
    assert calls == [("p", None, "n9")]
    assert counts(queue) == {"unschedulable": 1}
    assert queue.get(mk("p")).where == "unschedulable"


def test_an_indexed_hint_is_asked_only_about_the_pods_the_event_concerns():
    """A claim event asks the hint about the pods waiting for that claim alone (HintIndex); an event the index
    cannot narrow (no keys) asks every pod; a pod that leaves the pool leaves the index."""
    calls = []
    claim_added = ClusterEvent("ResourceClaim", ActionType.ADD)
    index = kubesched.HintIndex(lambda p: [p.metadata.labels["claim"]] if "claim" in p.metadata.labels else None,
                                lambda old, new: (new.metadata.labels["claim"],) if "claim" in new.metadata.labels else None)
    queue, _ = make_queue(hints=[("DRA", ClusterEventWithHint(claim_added, hint(QueueingHint.QUEUE, calls), index))])
    for name in ("a", "b", "c"):
        queue.add(mk(name, labels={"claim": f"c-{name}"}))
    queue.add(mk("unkeyed"))
    for name in ("a", "b", "c", "unkeyed"):
        fail(queue, name, rejectors={"DRA"})
    assert queue.move_all(claim_added, None, mk("x", labels={"claim": "c-b"})) == 2
    assert sorted(call[0] for call in calls) == ["b", "unkeyed"]
    calls.clear()
    assert queue.move_all(claim_added, None, mk("x", labels={"claim": "c-b"})) == 0  # b left the pool
    assert calls == []
    assert queue.move_all(claim_added, None, mk("y")) == 2  # no keys: every pod asked
    assert sorted(call[0] for call in calls) == ["a", "c"]


def test_a_pod_moved_before_its_backoff_expired_goes_to_backoff_first():
    queue, clock = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD))])  # no hint function: Queue
    queue.add(mk("p"))
    info = queue.pop()
    info.attempts = 4  # 8 s backoff
    queue.add_unschedulable(info, {"Fit"})
    clock.advance(3)
    assert queue.move_all(NODE_ADD, None, node("n9")) == 1
    assert counts(queue) == {"backoff": 1}
    clock.advance(5)
    assert counts(queue) == {"active": 1}


def test_events_only_move_pods_rejected_by_plugins_registered_for_them():
    queue, clock = make_queue(hints=[
        ("Fit", ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE))),
        ("Taints", ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT))),
    ])
    queue.add(mk("by-fit"))
    queue.add(mk("by-taints"))
    fail(queue, "by-fit", rejectors={"Fit"})
    fail(queue, "by-taints", rejectors={"Taints"})
    clock.advance(2)  # past the backoff
    # an event nobody registered for
    assert queue.move_all(NODE_ADD, None, node("n")) == 0
    # a node label change is not a taint change
    assert queue.move_all(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), node("n"), node("n")) == 0
    # a taint change moves only the pod the taint plugin rejected
    assert queue.move_all(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT | ActionType.UPDATE_NODE_LABEL),
                          node("n"), node("n")) == 1
    assert queue.get(mk("by-taints")).where == "active"
    assert queue.get(mk("by-fit")).where == "unschedulable"


def test_a_pod_registered_event_matches_assigned_and_unscheduled_pods():
    queue, _ = make_queue(hints=[("P", ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE)))])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"P"})
    assert queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), mk("gone"), None) == 1


def test_wildcard_registration_moves_on_any_event():
    queue, _ = make_queue(hints=[("Any", ClusterEventWithHint(ClusterEvent(WILDCARD, ActionType.ALL)))])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"Any"})
    assert queue.move_all(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), None, None) == 1


def test_a_failing_hint_counts_as_queue():
    queue, _ = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE_SKIP, raises=True)))])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"Fit"})
    assert queue.move_all(NODE_ADD, None, node("n")) == 1


def test_one_queueing_plugin_is_enough():
    queue, _ = make_queue(hints=[
        ("A", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE_SKIP))),
        ("B", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE))),
    ])
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"A", "B"})
    assert queue.move_all(NODE_ADD, None, node("n")) == 1


def test_a_pending_pod_skips_backoff_when_moved():
    queue, clock = make_queue(hints=[("Wait", ClusterEventWithHint(NODE_ADD))])
    queue.add(mk("p"))
    info = queue.pop()
    info.attempts = 5
    queue.add_unschedulable(info, {"Wait"}, pending=True)
    assert counts(queue) == {"unschedulable": 1}
    assert queue.move_all(NODE_ADD, None, node("n")) == 1
    assert counts(queue) == {"active": 1}


def test_a_pod_update_moves_it_out_of_the_pool():
    queue, clock = make_queue()
    p = mk("p")
    queue.add(p)
    fail(queue, "p", rejectors={"Fit"})
    clock.advance(5)
    queue.update(p, evolve_meta(p, annotations={"note": "x"}))  # metadata only: stays
    assert counts(queue) == {"unschedulable": 1}
    bigger = attrs.evolve(p, spec=attrs.evolve(p.spec, node_selector={"zone": "b"}))
    queue.update(p, bigger)
    assert counts(queue) == {"active": 1}
    assert queue.pop().pod.spec.node_selector == {"zone": "b"}


def test_activate_and_delete():
    queue, _ = make_queue()
    a, b = mk("a"), mk("b")
    queue.add(a)
    queue.add(b)
    fail(queue, "a", rejectors={"X"})
    fail(queue, "b")
    assert counts(queue) == {"unschedulable": 1, "backoff": 1}
    queue.activate(a)
    queue.activate(b)
    assert counts(queue) == {"active": 2}
    queue.delete(a)
    assert a not in queue and b in queue
    assert queue.pop().pod.metadata.name == "b"
    assert queue.pop() is None


def test_a_pod_deleted_while_in_flight_is_not_requeued():
    queue, _ = make_queue()
    p = mk("p")
    queue.add(p)
    info = queue.pop()
    queue.delete(p)
    queue.add_unschedulable(info, set())
    assert p in queue  # the scheduler hands back what it popped ...
    queue.add(p)       # ... but a re-add does not duplicate it
    assert counts(queue) == {"backoff": 1}


# --- the 5-minute flush --------------------------------------------------------------------


def test_pods_left_in_the_pool_for_five_minutes_are_flushed():
    queue, clock = make_queue()
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"NoEventsEver"})
    clock.advance(MAX_IN_UNSCHEDULABLE_SECONDS)
    # exactly 5 minutes is not "longer than" 5 minutes
    assert counts(queue) == {"unschedulable": 1}
    clock.advance(30)  # the next periodic check
    assert counts(queue) == {"active": 1}


def test_flush_timers_are_background_and_stop_when_the_pool_is_empty():
    queue, clock = make_queue()
    queue.add(mk("p"))
    fail(queue, "p", rejectors={"X"})
    assert clock.next_deadline(include_background=False) is None
    assert clock.next_deadline() == 30
    clock.advance(400)
    queue.pop()
    clock.advance(400)
    assert clock.next_deadline() is None


# --- scheduling gates ----------------------------------------------------------------------


def test_gated_pods_wait_until_their_gates_are_removed():
    gates_removed = ClusterEventWithHint(
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), SchedulingGates._gates_removed)
    queue, clock = make_queue(hints=[("SchedulingGates", gates_removed)], gates=True)
    gated = mk("g", scheduling_gates=["example.com/a", "example.com/b"])
    queue.add(gated)
    queue.add(mk("free"))
    assert counts(queue) == {"active": 1, "gated": 1}
    info = queue.get(gated)
    assert info.gating_plugin == "SchedulingGates"
    assert info.gating_status.message() == "waiting for scheduling gates: [example.com/a example.com/b]"
    # other events and the 5-minute flush leave it alone
    assert queue.move_all(NODE_ADD, None, node("n")) == 0
    clock.advance(3600)
    assert counts(queue) == {"active": 1, "gated": 1}
    # one gate removed: still gated
    one_left = attrs.evolve(gated, spec=attrs.evolve(gated.spec, scheduling_gates=gated.spec.scheduling_gates[1:]))
    queue.update(gated, one_left)
    assert counts(queue) == {"active": 1, "gated": 1}
    none_left = attrs.evolve(gated, spec=attrs.evolve(gated.spec, scheduling_gates=()))
    queue.update(one_left, none_left)
    assert counts(queue) == {"active": 2}


# --- in a simulation -----------------------------------------------------------------------


class AlwaysError:
    """Fails every attempt with an internal error, recording when it was tried."""

    name = "AlwaysError"

    def __init__(self, args, handle):
        self.clock = handle.clock
        self.attempts = []

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        self.attempts.append(self.clock.now())
        return Status.as_error("flaky backend")


@pytest.mark.parametrize("pop_from_backoff, offsets", [
    # 1, 2, 4, 8, 10, 10 s: the backoff ends when it expires
    (False, [0, 1, 3, 7, 15, 25, 35]),
    # SchedulerPopFromBackoffQ: expiries cut to their 1-second window, which must be over first
    (True, [0, 2, 5, 10, 19, 30]),
])
def test_backoff_in_a_simulation(pop_from_backoff, offsets):
    features = FeatureGates(overrides={"SchedulerPopFromBackoffQ": pop_from_backoff})
    sim = simulation(config({"plugins": {"preFilter": {"enabled": [{"name": "AlwaysError"}]}}}), AlwaysError,
                     features=features)
    sim.create([node("n1"), pod("p")])
    sim.run_for(40)
    plugin = sim.scheduler.profiles[PROFILE].plugins["AlwaysError"]
    assert [t - sim.start_time for t in plugin.attempts] == offsets
    assert condition(sim.pod("p")).reason == "SchedulerError"
    (event,) = sim.events("FailedScheduling")  # repeats are aggregated into one Event
    assert event.count == len(offsets)


def test_backoff_settings_come_from_the_configuration():
    cfg = config({"plugins": {"preFilter": {"enabled": [{"name": "AlwaysError"}]}}},
                 podInitialBackoffSeconds=2, podMaxBackoffSeconds=5)
    # the backoff ends as it expires (no SchedulerPopFromBackoffQ window)
    sim = simulation(cfg, AlwaysError, features=FeatureGates(overrides={"SchedulerPopFromBackoffQ": False}))
    sim.create([node("n1"), pod("p")])
    sim.run_for(20)
    plugin = sim.scheduler.profiles[PROFILE].plugins["AlwaysError"]
    assert [t - sim.start_time for t in plugin.attempts] == [0, 2, 6, 11, 16]


class NeedsReadyNode:
    """Rejects nodes without ``ready: "yes"``; a node event is worth a retry only
    when the new node carries the label."""

    name = "NeedsReadyNode"

    def __init__(self, args, handle):
        self.clock = handle.clock
        self.hints = []
        self.attempts = 0

    @kubesched.hookimpl
    def filter(self, state, pod, node_info):
        return None if node_info.node.metadata.labels.get("ready") == "yes" else Status.unschedulable("node not ready")

    @kubesched.hookimpl
    def pre_filter(self, state, pod, nodes):
        self.attempts += 1
        return None

    @kubesched.hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self.hint)]

    def hint(self, pod, old, new):
        self.hints.append(new.metadata.name)
        return QueueingHint.QUEUE if new.metadata.labels.get("ready") == "yes" else QueueingHint.QUEUE_SKIP


def test_cluster_events_requeue_through_queueing_hints():
    sim = simulation(config({"plugins": {"multiPoint": {"enabled": [{"name": "NeedsReadyNode"}]}}}), NeedsReadyNode)
    plugin = sim.scheduler.profiles[PROFILE].plugins["NeedsReadyNode"]
    sim.create([node("n1"), pod("p")])
    sim.run_for(10)
    assert plugin.attempts == 1
    assert condition(sim.pod("p")).message == (
        "0/1 nodes are available: 1 node not ready. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")

    # a node the hint says cannot help: the pod stays in the pool, no new attempt
    sim.create([node("n2")])
    sim.run_for(10)
    assert plugin.hints == ["n2"]
    assert plugin.attempts == 1
    assert sim.scheduler.queue.pending_counts()["unschedulable"] == 1

    # a label change that helps
    n2 = sim.cluster.get("Node", "n2")
    sim.cluster.update(evolve_meta(n2, labels={**n2.metadata.labels, "ready": "yes"}))
    sim.run_for(10)
    assert plugin.hints == ["n2", "n2"]
    assert plugin.attempts == 2
    assert sim.pod("p").spec.node_name == "n2"


def test_a_pod_no_event_helps_is_still_retried_after_five_minutes():
    sim = simulation(config({"plugins": {"multiPoint": {"enabled": [{"name": "NeedsReadyNode"}]}}}), NeedsReadyNode)
    plugin = sim.scheduler.profiles[PROFILE].plugins["NeedsReadyNode"]
    sim.create([node("n1"), pod("p")])
    sim.run_for(300)
    assert plugin.attempts == 1
    sim.run_for(31)
    assert plugin.attempts == 2  # flushed at 330 s (checked every 30 s, strictly more than 300 s)


def test_gated_pod_is_scheduled_once_its_gates_are_removed():
    sim = simulation(None)
    sim.create([node("n1"), pod("g", scheduling_gates=["example.com/quota"])])
    sim.run_for(600)
    g = sim.pod("g")
    assert g.spec.node_name == ""
    assert condition(g).reason == "SchedulingGated"
    assert sim.events() == []  # a gated pod is not attempted
    assert sim.scheduler.queue.pending_counts()["gated"] == 1
    sim.cluster.update(attrs.evolve(g, spec=attrs.evolve(g.spec, scheduling_gates=())))
    sim.run()
    assert sim.pod("g").spec.node_name == "n1"
    assert condition(sim.pod("g")).status == "True"


# --- events while a pod is in flight -------------------------------------------------------


def test_an_event_during_the_attempt_moves_the_pod_when_it_comes_back():
    queue, clock = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD))])
    queue.add(mk("p"))
    queue.add(mk("q"))
    queue.move_all(NODE_ADD, None, node("before"))  # nobody in flight: not remembered
    info = queue.pop()
    queue.move_all(NODE_ADD, None, node("during"))
    queue.add_unschedulable(info, {"Fit"})
    # the node that arrived while p was being scheduled may fit it: back through backoff, not the pool
    assert queue.get(mk("p")).where == "backoff"
    fail(queue, "q", rejectors={"Fit"})  # popped after the event: it stays
    assert queue.get(mk("q")).where == "unschedulable"


def test_events_during_the_attempt_that_cannot_help_leave_the_pod_in_the_pool():
    calls = []
    queue, _ = make_queue(hints=[("Fit", ClusterEventWithHint(NODE_ADD, hint(QueueingHint.QUEUE_SKIP, calls)))])
    queue.add(mk("p"))
    info = queue.pop()
    queue.move_all(NODE_ADD, None, node("during"))
    queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, mk("other"))  # Fit did not register it
    queue.add_unschedulable(info, {"Fit"})
    assert calls == [("p", None, "during")]
    assert queue.get(mk("p")).where == "unschedulable"


# --- the nominator -------------------------------------------------------------------------


def nominated_to(p, node_name):
    return attrs.evolve(p, status=attrs.evolve(p.status, nominated_node_name=node_name))


def test_nominations_follow_the_pod_status():
    queue, _ = make_queue()
    p = mk("p", priority=10)
    queue.add(nominated_to(p, "n1"))
    assert queue.nominator.nominated_node(p) == "n1"
    # the status nomination moves, then is cleared (e.g. by a more important preemptor)
    queue.update(nominated_to(p, "n1"), nominated_to(p, "n2"))
    assert queue.nominator.nodes() == ["n2"]
    queue.update(nominated_to(p, "n2"), p)
    assert queue.nominator.nodes() == []


def test_an_in_memory_nomination_survives_updates_until_the_status_says_otherwise():
    queue, _ = make_queue()
    p = mk("p", priority=10)
    queue.add(p)
    queue.nominator.add(queue.get(p).pod_info, "n1")  # nominated before the status write arrives
    relabelled = evolve_meta(p, labels={"new": "label"})
    queue.update(p, relabelled)
    assert [info.pod for info in queue.nominator.pods_for_node("n1")] == [relabelled]
    queue.delete(relabelled)
    assert queue.nominator.nodes() == []


def test_pods_to_respect_are_the_others_of_equal_or_higher_priority():
    queue, _ = make_queue()
    for name, priority in (("low", 1), ("peer", 5), ("high", 9)):
        queue.add(nominated_to(mk(name, priority=priority), "n1"))
    me = mk("me", priority=5)
    assert sorted(i.pod.metadata.name for i in queue.nominator.pods_to_respect(me, "n1")) == ["high", "peer"]
    assert [i.pod.metadata.name for i in queue.nominator.pods_to_respect(mk("peer", priority=5), "n1")] == ["high"]
    assert queue.nominator.pods_to_respect(me, "n2") == []


@pytest.mark.parametrize("pop_from_backoff, bound_at", [(True, 0.2), (False, 1.0)])
def test_a_backing_off_pod_is_popped_when_activeq_is_empty(pop_from_backoff, bound_at):
    """KEP-5142: a node arrives 0.2 s after the pod was found unschedulable; with
    SchedulerPopFromBackoffQ the idle scheduler takes it from backoffQ at once,
    without it the pod waits out its 1 s backoff."""
    sim = simulation(features=FeatureGates(overrides={"SchedulerPopFromBackoffQ": pop_from_backoff}))
    sim.create([node("small", cpu="1"), pod("p", cpu="2")])
    sim.run_for(0.2)
    assert sim.placements() == {"default/p": ""}
    sim.create([node("big", cpu="4")])
    sim.run()
    (scheduled,) = sim.events("Scheduled")
    assert scheduled.last_timestamp - sim.start_time == pytest.approx(bound_at)
