"""The scheduling queue holding PodGroups as one entity (KEP-4671's queued entities):
members never queued alone, a gate on one member holds its group, the group's
priority orders it, it fails and backs off as one, late members join the next attempt."""

from __future__ import annotations

from kubesched.core.api.meta import evolve_meta
from kubesched.core.api.scheduling_v1beta1 import pod_group_key
from kubesched.core.clock import FakeClock
from kubesched.core.framework.registry import build_args
from kubesched.core.framework.status import Code, Status
from kubesched.core.scheduler.queue import QueuedPodGroupInfo, SchedulingQueue
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.testing import pod

PROFILE = "default-scheduler"


def mk(name, group=None, **kwargs):
    return evolve_meta(pod(name, pod_group=group, **kwargs), uid=f"uid-{name}")


def make_queue(gated=(), priorities=None):
    """A queue whose PreEnqueue holds the pods named in ``gated`` (a set the test may change)."""
    clock = FakeClock(0.0)
    gated = set(gated)
    queue = SchedulingQueue(
        clock=clock,
        less=PrioritySort(build_args(PrioritySort, None), None).less,
        pre_enqueue=lambda p: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("held",), "Gate")
        if p.metadata.name in gated else None,
        hints={PROFILE: []},
        profile_of=lambda p: p.spec.scheduler_name,
        group_of=pod_group_key,
        group_priority=lambda key: (priorities or {}).get(key),
    )
    return queue, clock, gated


def test_members_are_one_entity_popped_together():
    queue, _, _ = make_queue()
    for name in ("a", "b", "c"):
        queue.add(mk(name, "g"))
    assert queue.pending_counts() == {"active": 3, "backoff": 0, "unschedulable": 0, "gated": 0}
    group = queue.pop()
    assert isinstance(group, QueuedPodGroupInfo) and group.key == "default/g"
    assert [m.pod.metadata.name for m in group.attempt] == ["a", "b", "c"]
    assert queue.pop() is None  # no member left to pop alone


def test_a_gated_member_holds_its_group_until_it_passes():
    queue, _, gated = make_queue(gated={"b"})
    queue.add(mk("a", "g"))
    queue.add(mk("b", "g"))
    assert queue.pop() is None and queue.pending_counts()["gated"] == 2
    gated.clear()
    queue.update(mk("b", "g"), mk("b", "g", labels={"x": "y"}))
    group = queue.pop()
    assert group is not None and len(group.attempt) == 2


def test_groups_are_ordered_by_the_pod_groups_priority():
    queue, _, _ = make_queue(priorities={"default/high": 100, "default/low": 1})
    queue.add(mk("low-0", "low"))
    queue.add(mk("high-0", "high"))
    queue.add(mk("solo", priority=50))
    assert [queue.pop().pod.metadata.name for _ in range(3)] == ["high-0", "solo", "low-0"]


def test_a_failed_group_backs_off_as_one_and_a_late_member_joins_the_next_attempt():
    queue, clock, _ = make_queue()
    queue.add(mk("a", "g"))
    queue.add(mk("b", "g"))
    group = queue.pop()
    queue.add(mk("late", "g"))  # arrives while the group is in flight
    assert [m.pod.metadata.name for m in group.attempt] == ["a", "b"]
    queue.group_done(group, set())  # an error: to backoffQ as one
    assert queue.pending_counts() == {"active": 0, "backoff": 3, "unschedulable": 0, "gated": 0}
    clock.advance_to(clock.now() + 1)
    queue.flush_backoff_completed()
    again = queue.pop()
    assert again is group and [m.pod.metadata.name for m in again.attempt] == ["a", "b", "late"]


def test_members_sent_to_binding_leave_and_the_rest_go_back_to_active():
    queue, _, _ = make_queue()
    for name in ("a", "b", "c"):
        queue.add(mk(name, "g"))
    group = queue.pop()
    queue.done(group.attempt[0].pod)
    queue.done(group.attempt[1].pod)
    queue.group_done(group)  # succeeded; c did not fit on its own
    again = queue.pop()
    assert [m.pod.metadata.name for m in again.attempt] == ["c"]
