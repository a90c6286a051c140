"""Clustering: put GPU pods with pods of the same kind (sharing, 1 GPU, 2 GPUs, ...).

For a GPU pod, with ``busy`` = 25 x (8 GPUs - free GPU compute) / 8 GPUs:

- the node runs only GPU pods of the pod's kind: 75 + busy;
- it runs that kind and others: 50 + busy;
- it runs no GPU pod: 25 + busy;
- it runs only other kinds: busy.

CPU-only pods score 0 everywhere.  GPU choice: the fullest GPU that fits.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .gpuscore import MAX_NODE_SCORE, MAX_SPEC_GPU, MILLI, GpuScore, NodeView


def kind_of(gpu_count: int, milli_gpu: int) -> str:
    """A GPU pod's kind: ``share-gpu``, or ``<n>-gpu`` for whole GPUs."""
    if gpu_count == 1 and milli_gpu < MILLI:
        return "share-gpu"
    return f"{gpu_count}-gpu"


class Clustering(GpuScore):
    """The paper's GpuClustering score plugin.  The kinds of the GPU pods on
    each node are counted from the allocated ResourceClaims of its GPUs."""

    name = "Clustering"

    def __init__(self, args, handle):
        super().__init__(args, handle)
        #: node name -> kind -> allocated claims of that kind on the node
        self.kinds: dict[str, Counter] = {}
        self._pool_nodes: dict[str, str] = {}
        self._slice_generation = -1
        # the same per NodeTable row: kind -> has such claims, and how many kinds
        self._table = None
        self._has: dict[str, np.ndarray] = {}
        self._distinct = np.zeros(0, dtype=np.int64)
        self._dirty: set[str] = set()
        handle.dra.add_listener(self._claim_changed)

    def _claim_changed(self, old, new) -> None:
        for claim, step in ((old, -1), (new, 1)):
            if claim is None or claim.status.allocation is None:
                continue
            found = self._kind(claim.status.allocation)
            if found is None:
                continue
            node, kind = found
            counts = self.kinds.setdefault(node, Counter())
            counts[kind] += step
            if counts[kind] <= 0:
                del counts[kind]
            self._dirty.add(node)

    def _kind(self, allocation) -> tuple[str, str] | None:
        """(node, kind) of an allocation of this plugin's GPUs, or None."""
        results = [r for r in allocation.devices.results if r.driver == self.args.driver]
        if not results:
            return None
        dra = self.handle.dra
        if dra.slice_generation != self._slice_generation:
            self._slice_generation = dra.slice_generation
            self._pool_nodes = {s.spec.pool.name: s.spec.node_name for s in dra.slices()
                                if s.spec.driver == self.args.driver and s.spec.node_name}
        node = self._pool_nodes.get(results[0].pool)
        if node is None:
            return None
        consumed = results[0].consumed_capacity.get(self.args.compute)
        milli = int(consumed * MILLI) if consumed is not None else MILLI
        return node, kind_of(len(results), milli)

    def _rows(self, table) -> None:
        """Bring the per-row arrays up to date with ``kinds``."""
        if table is not self._table:
            self._table = table
            self._has = {}
            self._distinct = np.zeros(len(table), dtype=np.int64)
            self._dirty = set(self.kinds)
        index = self.handle.snapshot.index
        for node in self._dirty:
            row = index.get(node)
            if row is None:
                continue
            counts = self.kinds.get(node, Counter())
            for kind, has in self._has.items():
                has[row] = counts[kind] > 0
            for kind in counts:
                if kind not in self._has:
                    self._has[kind] = np.zeros(len(table), dtype=bool)
                    for other, other_counts in self.kinds.items():
                        other_row = index.get(other)
                        if other_row is not None:
                            self._has[kind][other_row] = other_counts[kind] > 0
            self._distinct[row] = len(counts)
        self._dirty.clear()

    def scores(self, shape, nodes: NodeView, state) -> np.ndarray:
        if shape.milli_gpu <= 0:
            return np.zeros(len(nodes.rows), dtype=np.int64)
        self._rows(self.handle.snapshot.table)
        has = self._has.get(kind_of(shape.gpu_count, shape.milli_gpu))
        same = has[nodes.rows] if has is not None else np.zeros(len(nodes.rows), dtype=bool)
        kinds = self._distinct[nodes.rows]
        busy = MAX_NODE_SCORE // 4 * (MAX_SPEC_GPU - nodes.total_left) // MAX_SPEC_GPU
        quarter = MAX_NODE_SCORE // 4
        base = np.where(same, np.where(kinds == 1, 3 * quarter, 2 * quarter), np.where(kinds == 0, quarter, 0))
        return (busy + base).astype(np.int64)
