"""A delayed, rate-limited work queue for controllers, on the one :class:`Clock`.

Mirrors client-go's ``workqueue.TypedRateLimitingInterface``:

- an item is queued at most once (``add`` of an item already waiting is a
  no-op); an item added while a worker processes it is queued again when the
  worker calls :meth:`WorkQueue.done`, so one item is never processed by two
  workers at once;
- :meth:`WorkQueue.add_after` queues an item once a delay (seconds) has passed,
  through a clock timer, so a fake clock jumps over the wait;
- :meth:`WorkQueue.add_rate_limited` queues it after the delay of the
  :class:`RateLimiter` (per-item exponential backoff, retried for ever) and
  :meth:`WorkQueue.forget` resets that item's backoff.

Workers take items with :meth:`WorkQueue.get`: without ``block`` (the
simulation's single thread) it returns None when nothing is ready; with it (the
daemon's worker threads) it waits for an item or :meth:`WorkQueue.shut_down`.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Hashable

from kubesched.core.clock import Clock

#: Upstream ``DefaultTypedControllerRateLimiter``: per-item backoff 5 ms doubling to 1000 s ...
BASE_DELAY = 0.005
MAX_DELAY = 1000.0
#: ... combined with a token bucket of 10 per second, burst 100, over all items.
BUCKET_QPS = 10.0
BUCKET_BURST = 100


class RateLimiter:
    """How long an item waits before its next retry, in seconds.

    The larger of a per-item exponential backoff (``base * 2**failures``, capped
    at ``max_delay``) and an overall token bucket (``qps`` refill, ``burst``
    size) that spaces out retries of many items, as upstream's default
    controller rate limiter (``MaxOf(ItemExponential, Bucket)``).
    """

    def __init__(self, clock: Clock, base: float = BASE_DELAY, max_delay: float = MAX_DELAY,
                 qps: float = BUCKET_QPS, burst: int = BUCKET_BURST):
        self.clock = clock
        self.base = base
        self.max_delay = max_delay
        self.qps = qps
        self.burst = burst
        self._failures: dict[Hashable, int] = {}
        self._tokens = float(burst)
        self._last = clock.now()

    def when(self, item: Hashable) -> float:
        """The delay before ``item``'s next try; counts one more failure."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        backoff = min(self.base * (2 ** failures), self.max_delay)
        return max(backoff, self._bucket_delay())

    def _bucket_delay(self) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def failures(self, item: Hashable) -> int:
        """How many times ``item`` was rate limited since it was last forgotten."""
        return self._failures.get(item, 0)

    def forget(self, item: Hashable) -> None:
        """Reset ``item``'s failure count, so its next backoff starts at the base delay again (client-go's
        ``Forget``)."""
        self._failures.pop(item, None)


class WorkQueue:
    """Items (hashable keys, e.g. ``("pod", "ns/name", uid)``) waiting for a worker.

    ``clock`` drives :meth:`add_after`; ``rate_limiter`` defaults to upstream's
    default controller rate limiter.  Thread-safe.
    """

    def __init__(self, clock: Clock, rate_limiter: RateLimiter | None = None):
        self.clock = clock
        self.rate_limiter = rate_limiter or RateLimiter(clock)
        self._queue: collections.deque[Hashable] = collections.deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._cond = threading.Condition()
        self._shutting_down = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def add(self, item: Hashable) -> None:
        """Queue ``item`` now (a no-op if it is already waiting)."""
        with self._cond:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            self._cond.notify()

    def add_after(self, item: Hashable, delay: float, background: bool = False) -> None:
        """Queue ``item`` after ``delay`` seconds (at once when ``delay <= 0``); a ``background`` wait (a
        CronJob's next time) does not by itself keep a simulation without an end time going."""
        if delay <= 0:
            self.add(item)
            return
        self.clock.call_later(delay, lambda: self.add(item), background=background)

    def add_rate_limited(self, item: Hashable) -> None:
        """Queue ``item`` after its rate-limited backoff (a failed try)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        """``item`` succeeded: its next failure starts the backoff afresh."""
        self.rate_limiter.forget(item)

    def get(self, block: bool = False, timeout: float | None = None) -> Any | None:
        """The next item, now marked as being processed (call :meth:`done`).

        Without ``block`` returns None at once when nothing is queued; with it,
        waits (at most ``timeout`` seconds of wall time) and returns None on
        shutdown or timeout."""
        if not block and not self._queue:  # a simulation polls every controller each step: no lock for nothing
            return None
        with self._cond:
            if block:
                self._cond.wait_for(lambda: self._queue or self._shutting_down, timeout)
            if not self._queue:
                return None
            item = self._queue.popleft()
            self._dirty.discard(item)
            self._processing.add(item)
            return item

    def done(self, item: Hashable) -> None:
        """The worker finished ``item``; if it was added meanwhile, it is queued again."""
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()

    def shut_down(self) -> None:
        """Stop accepting items and wake every blocked :meth:`get`."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()
