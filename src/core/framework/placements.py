"""Running a profile's PodGroup extension points: PlacementGenerate, PlacementFeasible,
PlacementScore (+ NormalizePlacementScore) and PodGroupPostFilter, with upstream's
semantics (``frameworkImpl.RunPlacement*Plugins``, ``RunPodGroupPostFilterPlugins``).

:class:`PlacementExtensionPoints` is a part of
:class:`~kubesched.core.framework.runtime.Framework`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .cycle_state import CycleState
from .podgroups import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
from .status import Code, Status
from .types import MAX_NODE_SCORE, MIN_NODE_SCORE


class PlacementError(Exception):
    """A placement plugin failed with an Error; ``status`` says which and why."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


class PlacementExtensionPoints:
    """The PodGroup cycle's extension points of one profile (bound methods in
    the profile's order, set by the Framework)."""

    placement_generate_plugins: list[tuple[str, Callable]]
    placement_feasible_plugins: list[tuple[str, Callable]]
    placement_score_plugins: list[tuple[str, Callable]]
    normalize_placement: dict[str, Callable]
    placement_score_weights: dict[str, int]
    pod_group_post_filter_plugins: list[tuple[str, Callable]]

    def run_placement_generate(self, state: CycleState, group: PodGroupInfo,
                               parent: Placement) -> tuple[list[Placement], Status | None]:
        """The placements of ``group`` within ``parent``: each plugin's list,
        intersected with the others' (empty intersections dropped); without a
        plugin, ``parent`` alone.  A plugin's rejection or error is returned
        with an empty list (an error's message names the plugin)."""
        placements: list[Placement] | None = None
        for name, method in self.placement_generate_plugins:
            answer = method(state, group, parent)
            if isinstance(answer, Status):
                found, status = [], answer
            elif isinstance(answer, tuple):
                found, status = answer
            else:
                found, status = answer, None
            if status is not None and not status.is_success():
                if status.is_rejected():
                    return [], status.with_plugin(name)
                return [], Status(Code.ERROR, (f"running PlacementGenerate plugin \"{name}\": {status.message()}",),
                                  name, status.error)
            placements = list(found) if placements is None else _intersect(placements, list(found))
        return ([parent] if placements is None else placements), None

    def run_placement_feasible(self, state: CycleState, group: PodGroupInfo,
                               progress: PlacementProgress) -> Status | None:
        """Every PlacementFeasible plugin: the first non-success answer
        (Wait, a rejection, or an Error naming the plugin), or None."""
        wait: Status | None = None
        for name, method in self.placement_feasible_plugins:  # asked once per member tried: kept to the few checks
            status = method(state, group, progress)
            if status is None:
                continue
            code = status.code
            if code == Code.SUCCESS:
                continue
            if code == Code.WAIT:
                if wait is None:
                    wait = status if status.plugin == name else status.with_plugin(name)
                continue
            if status.is_rejected():
                return status.with_plugin(name)
            return Status(Code.ERROR, (f"running PlacementFeasible plugin \"{name}\": {status.message()}",),
                          name, status.error)
        return wait

    def run_placement_score(self, state: CycleState, group: PodGroupInfo,
                            results: list[PodGroupAssignments]) -> np.ndarray:
        """Score each feasible placement's ``results``: per plugin raw scores,
        NormalizePlacementScore, range check [0, 100], weight, sum.  Returns
        the totals (int64).  Raises :class:`PlacementError`."""
        total = np.zeros(len(results), dtype=np.int64)
        for name, method in self.placement_score_plugins:
            scores = np.empty(len(results), dtype=np.int64)
            for i, assignments in enumerate(results):
                value = method(state, group, assignments)
                if isinstance(value, Status):
                    raise PlacementError(Status(Code.ERROR, (
                        f"running PlacementScore plugin \"{name}\": {value.message()}",), name))
                scores[i] = value
            normalize = self.normalize_placement.get(name)
            if normalize is not None:
                status = normalize(state, group, scores)
                if status is not None and not status.is_success():
                    raise PlacementError(Status(Code.ERROR, (
                        f"running NormalizePlacementScore on PlacementScore plugin \"{name}\": {status.message()}",),
                        name))
            if len(scores) and (scores.min() < MIN_NODE_SCORE or scores.max() > MAX_NODE_SCORE):
                raise PlacementError(Status(Code.ERROR, (
                    f"plugin \"{name}\" returns an invalid placement score, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",), name))
            total += scores * self.placement_score_weights[name]
        return total

    def run_pod_group_post_filter(self, state: CycleState, group: PodGroupInfo,
                                  schedule_group: Callable[..., tuple[Status | None, PodGroupAssignments]]
                                  ) -> tuple[Any, Status | None]:
        """PodGroupPostFilter plugins in order until one succeeds (its
        nominations are returned) or says UnschedulableAndUnresolvable/Error;
        when all reject, their reasons joined (naming the first)."""
        reasons: list[str] = []
        rejector = ""
        for name, method in self.pod_group_post_filter_plugins:
            answer = method(state, group, schedule_group)
            result, status = answer if isinstance(answer, tuple) else (None, answer)
            if status is None or status.is_success():
                return result, None
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return None, status.with_plugin(name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, status.reasons, name, status.error)
            reasons.extend(status.reasons)
            rejector = rejector or name
        return None, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)


def _intersect(a: list[Placement], b: list[Placement]) -> list[Placement]:
    """Every non-empty intersection of a placement of ``a`` with one of ``b``
    (named ``A/B`` when the names differ)."""
    out: list[Placement] = []
    for left in a:
        for right in b:
            rows = np.intersect1d(left.rows, right.rows, assume_unique=True)
            if len(rows):
                name = left.name if left.name == right.name else f"{left.name}/{right.name}"
                out.append(Placement(name, rows))
    return out
