"""Random: one feasible node, chosen uniformly at random, scores 100, the others 0.

GPU choice: any GPU that fits, uniformly at random.  Randomness comes from the
scheduler's seeded generator (``handle.rng``), so a run is reproducible.
"""

from __future__ import annotations

import numpy as np

from .gpuscore import MAX_NODE_SCORE, GpuScore, NodeView


class Random(GpuScore):
    """The paper's Random score plugin."""

    name = "Random"
    gpu_selection = "random"

    def scores(self, shape, nodes: NodeView, state) -> np.ndarray:
        scores = np.zeros(len(nodes.rows), dtype=np.int64)
        if len(scores):
            scores[self.handle.rng.randrange(len(scores))] = MAX_NODE_SCORE
        return scores
