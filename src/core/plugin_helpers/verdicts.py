"""What per-node and batch hooks of topology plugins (PodTopologySpread, InterPodAffinity) share:
the Filter status of a reason, and a batch answer that falls back to the per-node one when the
cycle state was computed on another NodeTable."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.snapshot import NodeTable
from kubesched.core.framework.status import Code, Status


def filter_status(reason: str | None, unresolvable: str) -> Status | None:
    """None (the node passes) without a ``reason``; else Unschedulable with it,
    or UnschedulableAndUnresolvable when it is the ``unresolvable`` reason (one
    that preempting pods cannot cure, such as a missing topology label)."""
    if reason is None:
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if reason == unresolvable else Code.UNSCHEDULABLE, (reason,))


def on_rows(table: NodeTable, rows: Any, computed_on: NodeTable | None, batch: Callable[[np.ndarray], np.ndarray],
            per_node: Callable[[NodeInfo], Any], dtype: Any = bool) -> np.ndarray:
    """A batch hook's answer (``filter_batch``: bool, ``score_batch``: int64) for
    the NodeTable ``rows``: ``batch(rows)`` (an intp array) when the cycle state
    was computed on ``table`` (``computed_on``: its per-domain counts are indexed
    by this table's domain ids); else ``per_node(NodeInfo)`` row by row, so that a
    batch hook handed another table (a preemption dry run's) agrees with the
    per-node hook."""
    rows = np.asarray(rows, dtype=np.intp)
    if table is not computed_on:
        return table.per_node(rows, per_node, dtype=dtype)
    return batch(rows)
