"""The counters a run of the scheduler reports (``Scheduler.stats``)."""

from __future__ import annotations

import attrs


@attrs.define
class SchedulingStats:
    """Counters a run reports: scheduling attempts by result (``scheduled``,
    ``unschedulable``, ``errors``; ``cycles`` in all), pods ``bound`` and
    ``binding_failures``."""

    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bound: int = 0
    binding_failures: int = 0
    cycles: int = 0
