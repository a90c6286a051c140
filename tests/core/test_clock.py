"""The fake clock: time moves only when told, timers fire in time order, nothing sleeps."""

from __future__ import annotations

import threading
import time

from kubesched.core.clock import FakeClock, RealClock


def test_fake_clock_starts_where_told_and_advances():
    clock = FakeClock(100.0)
    assert clock.now() == 100.0
    clock.advance(2.5)
    assert clock.now() == 102.5
    clock.advance_to(50)  # never backwards
    assert clock.now() == 102.5


def test_timers_fire_in_time_order_at_their_time():
    clock = FakeClock()
    fired = []
    clock.call_at(5, lambda: fired.append(("b", clock.now())))
    clock.call_later(2, lambda: fired.append(("a", clock.now())))
    clock.call_at(5, lambda: fired.append(("c", clock.now())))  # same time: creation order
    clock.advance(4.9)
    assert fired == [("a", 2.0)]
    clock.advance_to(10)
    assert fired == [("a", 2.0), ("b", 5.0), ("c", 5.0)]
    assert clock.now() == 10


def test_a_timer_set_by_a_timer_fires_within_the_same_advance():
    clock = FakeClock()
    fired = []
    clock.call_at(1, lambda: clock.call_later(1, lambda: fired.append(clock.now())))
    clock.advance(5)
    assert fired == [2.0]


def test_cancelled_timers_do_not_fire():
    clock = FakeClock()
    fired = []
    timer = clock.call_later(1, lambda: fired.append(1))
    timer.cancel()
    assert clock.next_deadline() is None
    clock.advance(2)
    assert fired == []


def test_next_deadline_can_ignore_background_timers():
    clock = FakeClock()
    clock.call_later(30, lambda: None, background=True)
    assert clock.next_deadline() == 30
    assert clock.next_deadline(include_background=False) is None
    clock.call_later(40, lambda: None)
    assert clock.next_deadline(include_background=False) == 40


def test_run_due_fires_only_what_is_due():
    clock = FakeClock()
    fired = []
    clock.call_at(0, lambda: fired.append("now"))
    clock.call_at(1, lambda: fired.append("later"))
    assert clock.run_due() == 1
    assert fired == ["now"]
    assert clock.run_due() == 0


def test_fake_wait_jumps_instead_of_sleeping():
    clock = FakeClock()
    wakeup = threading.Event()
    started = time.monotonic()
    clock.wait(3600, wakeup)
    assert clock.now() == 3600
    assert time.monotonic() - started < 1
    wakeup.set()
    clock.wait(3600, wakeup)  # already woken: no time passes
    assert clock.now() == 3600


def test_real_clock_follows_wall_time():
    clock = RealClock()
    assert abs(clock.now() - time.time()) < 5
    wakeup = threading.Event()
    wakeup.set()
    clock.wait(10, wakeup)  # returns at once when woken
