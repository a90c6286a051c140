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
    each node are counted from the allocated ResourceClaims of its GPUs (by
    resource pool, which the node's ResourceSlice names)."""

    name = "Clustering"

    def __init__(self, args, handle):
        super().__init__(args, handle)
        #: pool -> kind -> allocated claims of that kind with GPUs of the pool
        self.kinds: dict[str, Counter] = {}
        self._dirty: set[str] = set()
        # per NodeTable row: kind -> has such claims, and how many kinds
        self._layout = None
        self._has: dict[str, np.ndarray] = {}
        self._distinct = np.zeros(0, dtype=np.int64)
        self._pool_rows: dict[str, int] = {}
        handle.dra.add_listener(self._claim_changed)

    def _claim_changed(self, old, new) -> None:
        for claim, step in ((old, -1), (new, 1)):
            if claim is None or claim.status.allocation is None:
                continue
            results = [r for r in claim.status.allocation.devices.results if r.driver == self.args.driver]
            if not results:
                continue
            consumed = results[0].consumed_capacity.get(self.args.compute)
            kind = kind_of(len(results), int(consumed * MILLI) if consumed is not None else MILLI)
            counts = self.kinds.setdefault(results[0].pool, Counter())
            counts[kind] += step
            if counts[kind] <= 0:
                del counts[kind]
            self._dirty.add(results[0].pool)

    def _rows(self, table) -> None:
        """Bring the per-row arrays up to date with ``kinds``."""
        layout = (table, self.handle.dra.slice_generation)
        if layout != self._layout:
            self._layout = layout
            index = self.handle.snapshot.index
            self._pool_rows = {s.spec.pool.name: index[s.spec.node_name] for s in self.handle.dra.slices()
                               if s.spec.driver == self.args.driver and s.spec.node_name in index}
            self._has = {}
            self._distinct = np.zeros(len(table), dtype=np.int64)
            self._dirty = set(self.kinds)
        for pool in self._dirty:
            row = self._pool_rows.get(pool)
            if row is None:
                continue
            counts = self.kinds.get(pool, Counter())
            for kind in counts:
                if kind not in self._has:
                    self._has[kind] = np.zeros(len(table), dtype=bool)
            for kind, has in self._has.items():
                has[row] = counts[kind] > 0
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
