"""Score normalisation helpers the built-in Score plugins share (upstream helper.DefaultNormalizeScore)."""

from __future__ import annotations

import numpy as np

from kubesched.core.framework.types import MAX_NODE_SCORE

#: Up to this many scores (a rack's nodes) the highest is found in Python.
FEW_SCORES = 64


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """Scale ``scores`` (int64 array, in place) so the highest becomes
    ``max_priority``; with ``reverse`` the lowest does.  All zero: 0s, or
    ``max_priority`` when reversed."""
    if len(scores) == 0:
        return
    # a placement's few nodes: Python's max of them is cheaper than the ufunc (the ufunc itself: .max() wraps it)
    highest = max(scores.tolist()) if len(scores) <= FEW_SCORES else int(np.maximum.reduce(scores))
    if highest == 0:
        if reverse:
            scores.fill(max_priority)
        return
    # max_priority * score // highest, in place
    np.multiply(scores, max_priority, out=scores)
    np.floor_divide(scores, highest, out=scores)
    if reverse:
        np.subtract(max_priority, scores, out=scores)
