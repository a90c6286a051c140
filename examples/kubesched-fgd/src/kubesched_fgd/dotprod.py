"""DotProd (Tetris): prefer the node whose free resources align least with the pod's request.

Both vectors (CPU, total GPU compute) are divided by the largest node (128
cores, 8 GPUs); score = (1 - dot product / 2) x 100, truncated.  A node
without the CPU scores 0.  GPU choice: the fullest GPU that fits.
"""

from __future__ import annotations

import numpy as np

from .gpuscore import MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, GpuScore, NodeView


class DotProd(GpuScore):
    """The paper's DotProduct score plugin (dimensions merged, normalised by the largest node)."""

    name = "DotProd"

    def scores(self, shape, nodes: NodeView, state) -> np.ndarray:
        product = (nodes.cpu_left / MAX_SPEC_CPU) * (shape.milli_cpu / MAX_SPEC_CPU)
        product = product + (nodes.total_left / MAX_SPEC_GPU) * (shape.total_milli_gpu / MAX_SPEC_GPU)
        score = np.trunc(MAX_NODE_SCORE * (1 - product / 2)).astype(np.int64)
        return np.where(nodes.cpu_left < shape.milli_cpu, 0, score)
