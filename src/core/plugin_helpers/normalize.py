"""Score normalisation helpers the built-in Score plugins share (upstream helper.DefaultNormalizeScore)."""

from __future__ import annotations

import numpy as np

from kubesched.core.framework.types import MAX_NODE_SCORE


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> None:
    """Scale ``scores`` (int64 array, in place) so the highest becomes
    ``max_priority``; with ``reverse`` the lowest does.  All zero: 0s, or
    ``max_priority`` when reversed."""
    if len(scores) == 0:
        return
    highest = int(np.maximum.reduce(scores))  # the ufunc itself: .max() wraps it in Python
    if highest == 0:
        if reverse:
            scores.fill(max_priority)
        return
    # max_priority * score // highest, in place
    np.multiply(scores, max_priority, out=scores)
    np.floor_divide(scores, highest, out=scores)
    if reverse:
        np.subtract(max_priority, scores, out=scores)
