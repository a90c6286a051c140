"""The one clock through which all waiting goes.

Backoff, Permit timeouts, assumed-pod expiry, binding timeouts and
tolerationSeconds all use :meth:`Clock.now` and :meth:`Clock.call_at`.  Times
are float seconds since the epoch.  :class:`FakeClock` moves only when told to,
so tests and simulations never sleep and are deterministic; :class:`RealClock`
follows wall time.  Timers are fired by whoever drives the loop
(:meth:`Clock.run_due`), never from a background thread.
"""

from __future__ import annotations

import heapq
import itertools
import re
import threading
import time
from typing import Any, Callable

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration(text: Any) -> float:
    """A Go duration ("15s", "1m30s", "100ms", "1h") or a number of seconds -> seconds.  Raises ValueError
    ``invalid duration '...'``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    parts = re.findall(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).lstrip("+"):
        raise ValueError(f"invalid duration {text!r}")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


class Timer:
    """A scheduled callback; :meth:`cancel` makes it a no-op.  A ``background``
    timer (periodic housekeeping) does not by itself keep a simulation going."""

    __slots__ = ("when", "callback", "cancelled", "background")

    def __init__(self, when: float, callback: Callable[[], object], background: bool = False):
        self.when = when
        self.callback = callback
        self.cancelled = False
        self.background = background

    def cancel(self) -> None:
        """Make the timer a no-op; cancelling twice, or after it fired, does nothing."""
        self.cancelled = True


class Clock:
    """Time source plus a heap of timers.  Subclasses give :meth:`now`."""

    def __init__(self) -> None:
        self._timers: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def now(self) -> float:
        """The current time, float seconds since the epoch."""
        raise NotImplementedError

    def call_at(self, when: float, callback: Callable[[], object], background: bool = False) -> Timer:
        """Run ``callback`` once the clock reaches ``when`` (seconds)."""
        timer = Timer(when, callback, background)
        with self._lock:
            heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    def call_later(self, delay: float, callback: Callable[[], object], background: bool = False) -> Timer:
        """Run ``callback`` after ``delay`` seconds."""
        return self.call_at(self.now() + delay, callback, background)

    def next_deadline(self, include_background: bool = True) -> float | None:
        """When the earliest live timer is due (ignoring background timers
        unless ``include_background``), or None."""
        with self._lock:
            while self._timers and self._timers[0][2].cancelled:
                heapq.heappop(self._timers)
            if include_background:
                return self._timers[0][0] if self._timers else None
            live = [when for when, _, timer in self._timers if not timer.cancelled and not timer.background]
            return min(live) if live else None

    def run_due(self) -> int:
        """Fire every timer that is due now, in time order; returns how many fired."""
        fired = 0
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > self.now():
                    return fired
                _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.cancelled = True
                timer.callback()
                fired += 1

    def wait(self, timeout: float, wakeup: threading.Event) -> None:
        """Block until ``timeout`` seconds pass or ``wakeup`` is set."""
        raise NotImplementedError

    def savepoint(self) -> Callable[[], None]:
        """The timers as they are now (which are live); the returned callable puts them back: timers added since
        are dropped, timers fired or cancelled since are live again.  Cost: the number of timers."""
        with self._lock:
            timers = list(self._timers)
            live = [entry[2] for entry in timers if not entry[2].cancelled]

        def restore() -> None:
            with self._lock:
                for _, _, timer in self._timers:
                    timer.cancelled = True
                for timer in live:
                    timer.cancelled = False
                self._timers = list(timers)
        return restore


class RealClock(Clock):
    """Wall-clock time (``time.time()``)."""

    def now(self) -> float:
        """``time.time()``: wall-clock seconds since the epoch."""
        return time.time()

    def wait(self, timeout: float, wakeup: threading.Event) -> None:
        """Block the thread until ``timeout`` seconds pass or ``wakeup`` is set."""
        wakeup.wait(max(0.0, timeout))


class FakeClock(Clock):
    """Time that moves only through :meth:`advance` / :meth:`advance_to`.

    ``start`` is the initial time in seconds since the epoch.  Waiting jumps the
    clock instead of sleeping.
    """

    def __init__(self, start: float = 0.0) -> None:
        super().__init__()
        self._now = float(start)

    def now(self) -> float:
        """The fake time, float seconds since the epoch; it moves only through :meth:`advance`,
        :meth:`advance_to` and :meth:`wait`."""
        return self._now

    def advance_to(self, when: float) -> None:
        """Move to ``when``, firing every timer due on the way in time order."""
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > when:
                break
            self._now = max(self._now, deadline)
            self.run_due()
        self._now = max(self._now, when)

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        self.advance_to(self._now + seconds)

    def savepoint(self) -> Callable[[], None]:
        """The time and the timers as they are now; the returned callable puts both back (see
        :meth:`Clock.savepoint`)."""
        timers, now = super().savepoint(), self._now

        def restore() -> None:
            timers()
            self._now = now
        return restore

    def wait(self, timeout: float, wakeup: threading.Event) -> None:
        """Never blocks: unless ``wakeup`` is already set, advance the clock by ``timeout`` seconds (firing due
        timers)."""
        if not wakeup.is_set():
            self.advance(timeout)
