"""The scheduler behind a rate-limited client (scheduler_perf's schedulerApiClientQPS/Burst): each of its
requests takes a token, events and the test's own requests do not."""

from __future__ import annotations

from kubesched.core.clock import FakeClock
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.cluster.throttled import ThrottledClient
from kubesched.drivers.harness import Harness
from kubesched.testing import node, pod


class CountingLimiter:
    """A limiter that never waits and counts the tokens taken."""

    def __init__(self):
        self.taken = 0

    def take(self) -> None:
        self.taken += 1


def test_the_schedulers_requests_take_tokens_and_events_do_not():
    clock = FakeClock()
    cluster = MemoryCluster(clock)
    limiter = CountingLimiter()
    harness = Harness(cluster, clock, scheduler_client=ThrottledClient(cluster, limiter), controllers=())
    harness.start()
    cluster.create(node("n", cpu="2"))
    cluster.create(pod("fits", cpu="1"))
    harness.run_to_quiescence()
    assert limiter.taken == 1, "one bind; the test's creates and the Scheduled event are not counted"
    assert cluster.get("Pod", "fits", "default").spec.node_name == "n"
    events = len(cluster.list("Event").items)
    assert events >= 1
    cluster.create(pod("too-big", cpu="4"))
    harness.run_to_quiescence()
    assert limiter.taken == 2, "the failed attempt's PodScheduled=False status patch"
    assert len(cluster.list("Event").items) > events, "its FailedScheduling event is free"


def test_attributes_pass_through():
    cluster = MemoryCluster(FakeClock())
    throttled = ThrottledClient(cluster, CountingLimiter())
    assert throttled.features is cluster.features
    assert throttled.flush()
