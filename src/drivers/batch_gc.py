"""Garbage collection for batch runs that keep most of what they create.

A replay or simulation keeps nearly every object it makes (pods, claims,
events, the versions a watch delivers), so CPython's default thresholds
(700, 10, 10) keep scheduling full collections that walk all of them and find
little to free: on a full FGD trace replay, 11 full collections took 3.1 s of
36 s.  :func:`batch_collection` raises the thresholds for the duration of
such a run and restores them afterwards; garbage is still collected, in
larger batches (at most ~20,000 new container objects wait for it).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: (allocations before a young collection, young collections per middle one, middle per full)
BATCH_THRESHOLDS = (20_000, 20, 20)


@contextmanager
def batch_collection() -> Iterator[None]:
    """Run the block with :data:`BATCH_THRESHOLDS` (process-wide, as
    ``gc.set_threshold`` is), then put the previous thresholds back."""
    before = gc.get_threshold()
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
