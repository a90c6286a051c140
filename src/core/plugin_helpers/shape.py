"""Utilization shapes: the piecewise-linear scoring functions of plugin args.

``NodeResourcesFitArgs.scoringStrategy.requestedToCapacityRatio.shape`` and
``VolumeBindingArgs.shape`` are lists of (utilization 0-100, score 0-10)
points; upstream scales the scores by 10 (to 0-100) and scores a utilization
with ``helper.BuildBrokenLinearFunction``.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
from attrs import frozen

from kubesched.core.api.convert import ManifestError
from kubesched.core.framework.types import MAX_NODE_SCORE

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@frozen
class UtilizationShapePoint:
    """One point: ``utilization`` in percent (0-100), ``score`` 0-10."""

    utilization: int = 0
    score: int = 0


def validate_shape(shape: tuple[UtilizationShapePoint, ...]) -> None:
    """Upstream ``validateFunctionShape``: at least one point, utilizations
    increasing within [0, 100], scores within [0, 10].  Raises
    :class:`ManifestError` naming the point (``shape[1].utilization``)."""
    if not shape:
        raise ManifestError("shape", "at least one point must be specified")
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            raise ManifestError(f"shape[{i}].utilization", f"not in valid range [0, {MAX_UTILIZATION}]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ManifestError(f"shape[{i}].score", f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        if i and point.utilization <= shape[i - 1].utilization:
            raise ManifestError(f"shape[{i}].utilization", "values must be sorted in increasing order")


class BrokenLinear:
    """A validated shape as a function of utilization (int64 array -> int64
    array of node scores 0-100): integer-linear between the points (Go's
    truncating division), flat outside them."""

    def __init__(self, shape: Iterable[UtilizationShapePoint]):
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.points = [(p.utilization, p.score * scale) for p in shape]

    def __call__(self, utilization: np.ndarray) -> np.ndarray:
        points = self.points
        out = np.full(utilization.shape, points[-1][1], dtype=np.int64)
        done = np.zeros(utilization.shape, dtype=bool)
        for i, (x, y) in enumerate(points):
            here = ~done & (utilization <= x)
            if i == 0:
                out[here] = y
            else:
                x0, y0 = points[i - 1]
                numerator = (y - y0) * (utilization[here] - x0)
                out[here] = y0 + np.sign(numerator) * (np.abs(numerator) // (x - x0))
            done |= here
        return out
