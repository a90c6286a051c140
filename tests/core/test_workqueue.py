"""The controllers' work queue and the Controller base, on the fake clock."""

from __future__ import annotations

import threading

from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import Conflict
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.controller.base import Controller, ControllerContext, ControllerManager
from kubesched.core.controller.workqueue import RateLimiter, WorkQueue
from kubesched.testing import node


def test_an_item_is_queued_once_and_requeued_when_added_while_processed():
    queue = WorkQueue(FakeClock())
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    item = queue.get()
    assert item == "a"
    queue.add("a")  # changed again while a worker has it: not handed to a second worker
    assert queue.get() == "b"
    assert queue.get() is None
    queue.done("a")
    assert queue.get() == "a"


def test_add_after_waits_on_the_clock():
    clock = FakeClock(100)
    queue = WorkQueue(clock)
    queue.add_after("a", 30)
    queue.add_after("b", 0)
    assert queue.get() == "b"
    clock.advance(29.9)
    assert queue.get() is None
    clock.advance(0.1)
    assert queue.get() == "a"


def test_rate_limited_retries_back_off_exponentially_until_forgotten():
    clock = FakeClock()
    limiter = RateLimiter(clock, qps=1e9)
    assert [limiter.when("x") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert limiter.failures("x") == 4
    limiter.forget("x")
    assert limiter.when("x") == 0.005
    for _ in range(30):
        limiter.when("y")
    assert limiter.when("y") == 1000.0  # capped


def test_the_token_bucket_spaces_out_many_items_after_the_burst():
    clock = FakeClock()
    limiter = RateLimiter(clock)
    delays = [limiter.when(i) for i in range(102)]
    assert delays[:100] == [0.005] * 100
    assert delays[100] == 0.1 and delays[101] == 0.2


def test_a_blocking_get_returns_on_shutdown():
    queue = WorkQueue(FakeClock())
    got = []
    thread = threading.Thread(target=lambda: got.append(queue.get(block=True)))
    thread.start()
    queue.shut_down()
    thread.join(60)  # a guard against a hang: the get returns at once
    assert got == [None]


class LabelCounter(Controller):
    """Counts node adds; its sync fails with a conflict the first two times."""

    name = "label-counter"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.tries: list[float] = []
        self.informers.add_handlers("Node", lambda n: self.queue.add(n.metadata.name))

    def sync(self, item):
        self.tries.append(self.clock.now())
        if len(self.tries) <= 2:
            raise Conflict("try again")


def test_a_failing_sync_is_retried_with_backoff_until_it_succeeds():
    clock = FakeClock(0)
    cluster = MemoryCluster(clock)
    informers = Informers(cluster)
    controller = LabelCounter(ControllerContext(cluster, informers, clock))
    manager = ControllerManager(informers, [controller])
    cluster.create(node("n1"))
    manager.start()
    assert manager.step()
    assert controller.tries == [0] and manager.synced == 0
    for _ in range(2):
        clock.advance_to(clock.next_deadline())
        manager.step()
    assert controller.tries == [0, 0.005, 0.015]
    assert manager.synced == 1
    assert clock.next_deadline() is None
    assert not manager.step()
