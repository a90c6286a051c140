"""Garbage collection for batch runs that keep most of what they create.

A replay or simulation keeps nearly every object it makes (pods, claims,
events, the versions a watch delivers), so CPython's default thresholds
(700, 10, 10) keep scheduling full collections that walk all of them and find
little to free: on a full FGD trace replay, 11 full collections took 3.1 s of
36 s.  :func:`batch_collection` raises the thresholds for the duration of
such a run and restores them afterwards; garbage is still collected, in
larger batches (at most ~200,000 new container objects wait for it).

What a collection finds is next to nothing: on 30,000 pods of the envelope
case (benchmarks/scale.py), 8,700 unreachable objects over 550 collections;
reading 35,000 manifests leaves ~540,000 container objects of which a full
collection finds ~900 unreachable.  The cost is walking the live objects once
per young and once per middle collection: on that run (20,000, 20, 20) spent
0.72-0.80 CPU s in the collector (32 young and 2 middle collections, no full
one), (200,000, 10, 10) 0.37 s (4 young ones); peak RSS unchanged (360 MiB).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: (allocations before a young collection, young collections per middle one, middle per full)
BATCH_THRESHOLDS = (200_000, 10, 10)


class _Batches:
    """The blocks running under :func:`batch_collection` now, in every thread: the first one in sets
    the thresholds, the last one out puts back those it found (two runs on two threads - the UI's
    background runs beside a request's - would otherwise leave the batch thresholds set for good
    when their blocks interleave)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.before = gc.get_threshold()


_BATCHES = _Batches()


@contextmanager
def batch_collection() -> Iterator[None]:
    """Run the block with :data:`BATCH_THRESHOLDS` (process-wide, as
    ``gc.set_threshold`` is), then put the previous thresholds back once no
    block of any thread runs under it any more."""
    with _BATCHES.lock:
        if _BATCHES.running == 0:
            _BATCHES.before = gc.get_threshold()
            gc.set_threshold(*BATCH_THRESHOLDS)
        _BATCHES.running += 1
    try:
        yield
    finally:
        with _BATCHES.lock:
            _BATCHES.running -= 1
            if _BATCHES.running == 0:
                gc.set_threshold(*_BATCHES.before)
