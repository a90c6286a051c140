"""SchedulingThroughput: pods scheduled per second, sampled every second.

Mirrors scheduler_perf's throughput collector, driven from the engine's own
loop instead of a goroutine: :meth:`ThroughputCollector.tick` is called
often (after every scheduling step) and takes a sample each time the wall
clock passes the next one-second boundary.

- Nothing is sampled while no measured pod has been scheduled yet; the first
  boundary after that only starts the count (upstream skips it as an outlier).
- An interval in which no pod got scheduled is not recorded as 0 pods/s: the
  next sample covers the whole stretch and is recorded once per interval.
- Each sample is ``newly scheduled pods / actual seconds since the last sample``.
- A run too short to give any sample (under about a second) still reports one
  sample: every pod it scheduled over the elapsed time.

:func:`summarize` turns the samples into upstream's DataItem numbers:
``Average`` and ``Perc50/90/95/99`` (the sorted sample at index
``ceil(n * p / 100) - 1``), unit pods/s.
"""

from __future__ import annotations

import math
from typing import Callable

#: Seconds between samples (upstream's throughputSampleInterval).
SAMPLE_INTERVAL = 1.0

PERCENTILES = (50, 90, 95, 99)


class ThroughputCollector:
    """Samples a cumulative scheduled-pods counter.

    ``scheduled`` returns how many measured pods have been scheduled so far
    (monotonic: pods deleted afterwards still count); ``now`` is the wall
    clock in seconds.  :meth:`start`, then :meth:`tick` from the loop, then
    :meth:`stop` which returns the samples (pods/s)."""

    def __init__(self, scheduled: Callable[[], int], now: Callable[[], float], interval: float = SAMPLE_INTERVAL):
        self._scheduled = scheduled
        self._now = now
        self.interval = interval
        self.samples: list[float] = []
        self.started_at = 0.0
        self.stopped_at = 0.0
        self._first_count = 0
        self._last_count = 0
        self._last_time = 0.0
        self._next_tick = 0.0
        self._counting = False
        self._skipped = 0
        self.running = False

    def start(self) -> None:
        """Begin measuring now."""
        now = self._now()
        self.started_at = now
        self._first_count = self._last_count = self._scheduled()
        self._last_time = now
        self._next_tick = now + self.interval
        self.running = True

    @property
    def next_tick(self) -> float:
        """When the next sample is due (seconds since the epoch)."""
        return self._next_tick

    def tick(self, now: float | None = None) -> None:
        """Take the samples due by ``now`` (default: the clock)."""
        if not self.running:
            return
        if now is None:
            now = self._now()
        if now < self._next_tick:
            return
        # Boundaries that passed while the loop was busy elsewhere collapse into one sample.
        while self._next_tick <= now:
            self._next_tick += self.interval
        scheduled = self._scheduled()
        if scheduled - self._first_count <= 0:
            return
        if not self._counting:
            self._counting = True
            self._last_count = scheduled
            self._last_time = now
            return
        new = scheduled - self._last_count
        if new == 0:
            self._skipped += 1
            return
        duration = now - self._last_time
        throughput = new / duration if duration > 0 else 0.0
        self.samples.extend([throughput] * (self._skipped + 1))
        self._skipped = 0
        self._last_count = scheduled
        self._last_time = now

    def stop(self) -> list[float]:
        """Stop measuring; returns the samples (pods/s).  Without any sample,
        one sample over the whole elapsed time (if any pod was scheduled)."""
        now = self._now()
        self.tick(now)
        self.running = False
        self.stopped_at = now
        if not self.samples:
            total = self._scheduled() - self._first_count
            elapsed = now - self.started_at
            if total > 0 and elapsed > 0:
                self.samples.append(total / elapsed)
        return list(self.samples)

    @property
    def total(self) -> int:
        """Measured pods scheduled since :meth:`start`."""
        return self._scheduled() - self._first_count


def summarize(samples: list[float]) -> dict[str, float]:
    """Upstream's SchedulingThroughput data: Average and Perc50/90/95/99 of the samples."""
    if not samples:
        return {}
    ordered = sorted(samples)
    n = len(ordered)
    data = {"Average": sum(ordered) / n}
    for p in PERCENTILES:
        data[f"Perc{p}"] = ordered[math.ceil(n * p / 100) - 1]
    return data
