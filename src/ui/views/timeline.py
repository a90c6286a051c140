"""The Timeline page: the charts over simulated time and the cluster at the scrubber's time T."""

from __future__ import annotations

from typing import Any

from ..outcome import Outcome
from ..timeline import DELETED
from .cluster import PAGE_ROWS

#: Log entries listed around T.
ENTRIES_SHOWN = 40


def timeline_page(outcome: Outcome) -> dict[str, Any]:
    """The charts' series (JSON-ready) and the run's length in simulated seconds."""
    timeline = outcome.timeline
    return {"series": timeline.series(), "duration": timeline.duration, "resources": timeline.resources}


def state_at(outcome: Outcome, offset: float) -> dict[str, Any]:
    """The cluster ``offset`` seconds after the start: pods existing, bound,
    pending (the first :data:`PAGE_ROWS` listed), the busiest nodes by pod
    count, and the log entries around that time."""
    timeline = outcome.timeline
    offset = min(max(offset, 0.0), timeline.duration)
    placements = timeline.placements_at(offset)
    pending = sorted(pod for pod, node in placements.items() if not node)
    per_node: dict[str, int] = {}
    for node in placements.values():
        if node:
            per_node[node] = per_node.get(node, 0) + 1
    busiest = sorted(per_node.items(), key=lambda item: (-item[1], item[0]))[:20]
    return {"t": offset, "pods": len(placements), "bound": len(placements) - len(pending), "pending": len(pending),
            "pending_pods": pending[:PAGE_ROWS], "busiest": busiest,
            "entries": [_entry(outcome, entry) for entry in timeline.entries_near(offset, ENTRIES_SHOWN)],
            "nodes_used": len(per_node)}


def _entry(outcome: Outcome, entry: tuple[float, str, str, str]) -> tuple[float, str, str, str]:
    """A log entry as listed: a preemption's victim deleted reads ``preempted by PREEMPTOR``."""
    t, kind, pod, node = entry
    preemption = outcome.preemptions.get(pod)
    if kind == DELETED and preemption is not None and t >= preemption.time - 1e-6:
        kind = f"preempted by {preemption.preemptor or 'a pod now gone'}"
    return t, kind, pod, node
