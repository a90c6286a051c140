"""PrioritySort: activeQ order is higher priority first, then earlier queue time."""

from __future__ import annotations

import functools

from kubesched.core.scheduler.queue import QueuedPodInfo
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.testing import node, pod

from .helpers import failure, make, simulate


def queued(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    return QueuedPodInfo(pod(name, priority=priority), timestamp)


def test_higher_priority_goes_first_whatever_the_time():
    less = make(PrioritySort).less
    high, low = queued("high", 10, 200.0), queued("low", 1, 100.0)
    assert less(high, low) is True
    assert less(low, high) is False


def test_equal_priority_earlier_timestamp_goes_first():
    less = make(PrioritySort).less
    early, late = queued("early", 5, 100.0), queued("late", 5, 100.5)
    assert less(early, late) is True
    assert less(late, early) is False


def test_same_priority_and_time_is_not_less_either_way():
    less = make(PrioritySort).less
    a, b = queued("a", 3, 7.0), queued("b", 3, 7.0)
    assert less(a, b) is False and less(b, a) is False


def test_missing_priority_counts_as_zero():
    less = make(PrioritySort).less
    unset, negative, zero_later = queued("unset", None, 1.0), queued("neg", -1, 0.0), queued("zero", 0, 2.0)
    assert less(unset, negative) is True    # 0 > -1
    assert less(unset, zero_later) is True  # 0 == 0, 1.0 < 2.0
    assert less(zero_later, unset) is False


def test_sorting_a_queue_with_less():
    less = make(PrioritySort).less
    infos = [queued("a", 1, 3.0), queued("b", 100, 9.0), queued("c", 1, 1.0), queued("d", None, 0.0), queued("e", 100, 2.0)]
    order = sorted(infos, key=functools.cmp_to_key(lambda x, y: -1 if less(x, y) else (1 if less(y, x) else 0)))
    assert [i.pod.metadata.name for i in order] == ["e", "b", "c", "a", "d"]


# --- end to end ----------------------------------------------------------------------------


def test_higher_priority_pod_gets_the_only_room():
    # one slot of cpu; the low-priority pod is created first but the high one is popped first
    sim = simulate([
        node("n1", cpu="1"),
        pod("low", cpu="1", priority=1),
        pod("high", cpu="1", priority=1000),
    ])
    assert sim.placements() == {"default/high": "n1", "default/low": ""}
    assert failure(sim) == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    assert sim.events("FailedScheduling")[-1].involved_object.name == "low"


def _fifo(first: str, second: str) -> dict[str, str]:
    sim = Simulation()
    sim.create([node("n1", cpu="1")])
    sim.start()
    sim.create([pod(first, cpu="1")])
    sim.scheduler.informers.pump()  # queued now ...
    sim.clock.advance(1)
    sim.create([pod(second, cpu="1")])  # ... and this one a second later
    sim.run()
    return sim.placements()


def test_equal_priority_pods_are_scheduled_in_queue_order():
    assert _fifo("a", "b") == {"default/a": "n1", "default/b": ""}
    assert _fifo("b", "a") == {"default/a": "", "default/b": "n1"}
