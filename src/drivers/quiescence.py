"""Driving the scheduler (and controllers) on a fake clock until nothing more can happen."""

from __future__ import annotations

from typing import Protocol

from kubesched.core.clock import FakeClock


class Loop(Protocol):
    """Anything with a ``step() -> bool`` that does one unit of work (False: idle)."""

    def step(self) -> bool:
        """Do one unit of work; False when there was nothing to do."""


#: Without an end time, stop after this many clock jumps in a row that bound nothing new ...
IDLE_JUMP_LIMIT = 50
#: ... or after this much simulated time without progress, even while bounded waits go on.
IDLE_TIME_LIMIT = 3600.0


def run_simulation(loops: list[Loop], clock: FakeClock, until: float | None = None,
                   progress=lambda: 0, waiting=lambda: False, expecting=lambda: False, bound=lambda: 0) -> None:
    """Step every loop until all are idle, then jump the clock to the next
    timer, and again.  With ``until`` (seconds since the epoch) time runs to
    that moment, housekeeping timers included; without it the run ends when
    only housekeeping timers are left, or when ``IDLE_JUMP_LIMIT`` jumps in a
    row brought no progress (``progress()`` returns a counter that grows
    with useful work, e.g. pods bound) - pods that keep failing with errors
    would otherwise retry for ever.  Jumps while ``waiting()`` (a bounded wait
    is under way, e.g. a binding cycle polling at PreBind) do not count, but
    ``IDLE_TIME_LIMIT`` seconds without progress end the run all the same, and
    so do ``IDLE_TIME_LIMIT`` seconds of such waits without a pod bound
    (``bound()``: pods bound so far) - a binding that waits for a condition
    nobody sets fails at its timeout and is retried for ever, and the
    controllers cleaning up after each attempt would count as progress; while
    ``expecting()`` (more input is due, e.g. a timed change) it never ends on
    its own."""
    idle_jumps = 0
    last = progress()
    last_change = clock.now()
    last_bound, last_bind = bound(), clock.now()
    while True:
        busy = True
        while busy:
            busy = False
            for loop in loops:
                while loop.step():
                    busy = True
        deadline = clock.next_deadline(include_background=until is not None)
        if deadline is None or (until is not None and deadline > until):
            if until is not None:
                clock.advance_to(until)
                for loop in loops:
                    while loop.step():
                        pass
            return
        clock.advance_to(deadline)
        now = progress()
        if now != last:
            last, last_change, idle_jumps = now, clock.now(), 0
        elif not waiting():
            idle_jumps += 1
        if bound() != last_bound:
            last_bound, last_bind = bound(), clock.now()
        stalled_waits = waiting() and clock.now() - last_bind > IDLE_TIME_LIMIT
        if until is None and not expecting() and (idle_jumps >= IDLE_JUMP_LIMIT or stalled_waits
                                                  or clock.now() - last_change > IDLE_TIME_LIMIT):
            return
