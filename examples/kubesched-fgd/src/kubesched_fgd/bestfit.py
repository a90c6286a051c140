"""BestFit: the node left with the least free CPU and GPU after the pod, by a weighted sum.

Score = (1 - 0.5 x (CPU free - requested) / 128 cores - 0.5 x (GPU free -
requested) / 8 GPUs) x 100, truncated; then normalised so the best node gets
100 and the worst 0.  GPU choice: the fullest GPU that fits.
"""

from __future__ import annotations

import numpy as np

from kubesched import hookimpl

from .gpuscore import MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, GpuScore, NodeView, min_max_normalize


class BestFit(GpuScore):
    """The paper's BestFit score plugin."""

    name = "BestFit"

    def scores(self, shape, nodes: NodeView, state) -> np.ndarray:
        waste = (nodes.cpu_left - shape.milli_cpu) / MAX_SPEC_CPU * 0.5
        waste = waste + (nodes.total_left - shape.total_milli_gpu) / MAX_SPEC_GPU * 0.5
        return np.trunc((1.0 - waste) * MAX_NODE_SCORE).astype(np.int64)

    @hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        scores[:] = min_max_normalize(scores)
        return None
