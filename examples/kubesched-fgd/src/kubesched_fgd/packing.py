"""Packing: fill GPUs already in use first, then nodes already in use, then empty nodes.

For a GPU pod, with its GPUs chosen fullest first:

- only partly used GPUs: 100 - (their free compute in %) / 10, at least 50;
- some entirely free GPUs of a node in use: 50 - their number, at least 33;
- a node with every GPU free: 33 - its GPUs (at least that number).

CPU-only pods score 0 everywhere.  GPU choice: the fullest GPU that fits.
"""

from __future__ import annotations

import numpy as np

from .gpuscore import MAX_NODE_SCORE, GpuScore, NodeView

WHOLE = 1000


class Packing(GpuScore):
    """The paper's GpuPacking score plugin."""

    name = "Packing"

    def scores(self, shape, nodes: NodeView, state) -> np.ndarray:
        if shape.milli_gpu <= 0:
            return np.zeros(len(nodes.rows), dtype=np.int64)
        left = nodes.left
        real = np.arange(left.shape[1]) < nodes.count[:, None]
        free = ((left == WHOLE) & real).sum(axis=1)
        idle_node = free == nodes.count
        ordered = np.sort(np.where(real, left, -1), axis=1, kind="stable")
        fits = ordered >= shape.milli_gpu
        used = fits & (np.cumsum(fits, axis=1) <= shape.gpu_count)
        free_used = (used & (ordered == WHOLE)).sum(axis=1)
        percent_free = (used * (np.maximum(ordered, 0) * 100 // WHOLE)).sum(axis=1)
        shared = np.maximum(MAX_NODE_SCORE - percent_free // 10, MAX_NODE_SCORE // 2)
        opened = np.maximum(MAX_NODE_SCORE // 2 - free_used, MAX_NODE_SCORE // 3)
        empty = np.maximum(MAX_NODE_SCORE // 3 - free, free)
        return np.where(idle_node, empty, np.where(free_used > 0, opened, shared)).astype(np.int64)
