"""The Cluster page and a node's page: what the templates show, computed from an :class:`Outcome`.

The node table is sorted by a numpy argsort over the outcome's columns and
cut to one page of :data:`PAGE_ROWS` rows; the node grid is one canvas drawn
by the browser from a list of percentages (one number per node), so a
5,000-node cluster is one small JSON array, not 5,000 elements.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kubesched.analysis.explain import quantity

from ..outcome import Outcome

#: Rows of a table shown at once (node table, pending pods, a node's pods).
PAGE_ROWS = 100
#: Reasons listed in the aggregate over Pending pods.
REASONS_SHOWN = 20


def paged(total: int, page: int) -> tuple[int, int, int]:
    """(page, first index, last index + 1) of ``page`` (1-based, clamped) over ``total`` rows."""
    pages = max(1, math.ceil(total / PAGE_ROWS))
    page = min(max(page, 1), pages)
    return page, (page - 1) * PAGE_ROWS, min(page * PAGE_ROWS, total)


def pages_of(total: int) -> int:
    """How many pages of :data:`PAGE_ROWS` rows ``total`` rows take (at least 1)."""
    return max(1, math.ceil(total / PAGE_ROWS))


def node_order(outcome: Outcome, sort: str, descending: bool, query: str = "") -> np.ndarray:
    """Row indices of the node table: nodes whose name contains ``query``,
    sorted by ``sort`` (``name``, ``pods``, or a resource: its requested
    share; nodes without the resource last)."""
    rows = np.arange(len(outcome.node_names))
    if query:
        rows = np.array([i for i, name in enumerate(outcome.node_names) if query in name], dtype=np.int64)
    if sort == "pods":
        keys = outcome.pod_counts[rows].astype(float)
    elif sort in outcome.resources:
        keys = outcome.percent[rows, outcome.resources.index(sort)]
        keys = np.where(np.isnan(keys), -np.inf if descending else np.inf, keys)
    else:
        keys = rows.astype(float)  # names are sorted already
    order = np.argsort(-keys if descending else keys, kind="stable")
    return rows[order]


def usage_cell(outcome: Outcome, row: int, col: int) -> dict[str, Any]:
    """One resource of one node: requested and allocatable as text and the share (%; None without it)."""
    resource = outcome.resources[col]
    allocatable = int(outcome.allocatable[row, col])
    requested = int(outcome.requested[row, col])
    percent = float(outcome.percent[row, col])
    return {"requested": quantity(resource, requested), "allocatable": quantity(resource, allocatable),
            "percent": None if math.isnan(percent) else round(percent, 1)}


def cluster_page(outcome: Outcome, sort: str = "name", descending: bool = False, page: int = 1, query: str = "",
                 pending_page: int = 1, grid_resource: str = "cpu") -> dict[str, Any]:
    """The Cluster page's data: summary, node grid, one page of the node
    table, one page of Pending pods with their reasons, reasons summed over
    Pending pods."""
    order = node_order(outcome, sort, descending, query)
    page, low, high = paged(len(order), page)
    rows = []
    for row in order[low:high]:
        row = int(row)
        rows.append({"name": outcome.node_names[row], "pods": int(outcome.pod_counts[row]),
                     "cordoned": bool(outcome.cordoned[row]), "taints": outcome.taints[row],
                     "usage": [usage_cell(outcome, row, col) for col in range(len(outcome.resources))]})
    pending_page, p_low, p_high = paged(len(outcome.pending), pending_page)
    pending = [{"key": pod.key, "priority": pod.spec.priority or 0, "reason": outcome.pending_reasons[pod.key]}
               for pod in outcome.pending[p_low:p_high]]
    grid_resource = grid_resource if grid_resource in outcome.resources else outcome.resources[0]
    column = outcome.percent[:, outcome.resources.index(grid_resource)]
    grid = {"names": outcome.node_names,
            "percent": np.where(np.isnan(column), -1, np.round(column)).astype(int).tolist(),
            "flags": (outcome.cordoned.astype(int) + 2 * np.array([bool(t) for t in outcome.taints], dtype=int)
                      ).tolist() if outcome.node_names else [],
            "resource": grid_resource}
    return {"summary": {"nodes": len(outcome.node_names), "pods": len(outcome.pods), "bound": outcome.bound,
                        "pending": len(outcome.pending), "utilisation": outcome.utilisation(),
                        "simulated": outcome.timeline.duration, "attempts": outcome.cycles},
            "resources": outcome.resources, "rows": rows, "sort": sort, "descending": descending, "query": query,
            "page": page, "pages": pages_of(len(order)), "matching": len(order),
            "pending": pending, "pending_page": pending_page, "pending_pages": pages_of(len(outcome.pending)),
            "reasons": outcome.reasons_across_pending()[:REASONS_SHOWN], "grid": grid}


def node_page(outcome: Outcome, name: str, page: int = 1) -> dict[str, Any] | None:
    """A node's page: requested vs allocatable per resource, labels, taints,
    one page of its pods; None when the last run has no such node."""
    node = outcome.nodes.get(name)
    if node is None:
        return None
    row = outcome.node_index.get(name)
    usage = [] if row is None else [{"resource": r, **usage_cell(outcome, row, col),
                                     "allocatable_text": quantity(r, int(outcome.allocatable[row, col]))}
                                    for col, r in enumerate(outcome.resources)]
    pods = sorted((pod for pod in outcome.pods if pod.spec.node_name == name), key=lambda p: p.key)
    page, low, high = paged(len(pods), page)
    return {"name": name, "node": node, "usage": usage, "labels": sorted(node.metadata.labels.items()),
            "taints": list(node.spec.taints), "cordoned": node.spec.unschedulable,
            "pods": [{"key": p.key, "priority": p.spec.priority or 0} for p in pods[low:high]],
            "pod_count": len(pods), "page": page, "pages": pages_of(len(pods))}
