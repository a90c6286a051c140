"""Driving the scheduler (and controllers) on a fake clock until nothing more can happen."""

from __future__ import annotations

from typing import Protocol

from ..clock import FakeClock


class Loop(Protocol):
    """Anything with a ``step() -> bool`` that does one unit of work (False: idle)."""

    def step(self) -> bool: ...


#: Without an end time, stop after this many clock jumps in a row that bound nothing new.
IDLE_JUMP_LIMIT = 50


def run_simulation(loops: list[Loop], clock: FakeClock, until: float | None = None,
                   progress=lambda: 0) -> None:
    """Step every loop until all are idle, then jump the clock to the next
    timer, and again.  With ``until`` (seconds since the epoch) time runs to
    that moment, housekeeping timers included; without it the run ends when
    only housekeeping timers are left, or when ``IDLE_JUMP_LIMIT`` jumps in a
    row brought no progress (``progress()`` returns a counter that grows
    with useful work, e.g. pods bound) - pods that keep failing with errors
    would otherwise retry for ever."""
    idle_jumps = 0
    last = progress()
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
        idle_jumps = idle_jumps + 1 if now == last else 0
        last = now
        if until is None and idle_jumps >= IDLE_JUMP_LIMIT:
            return
