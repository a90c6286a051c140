"""PodGroupPodsCount: prefer the placement that places most of a PodGroup's pods
(upstream plugins/podgrouppodscount, KEP-5732)."""

from __future__ import annotations

from typing import Any

from kubesched import MAX_NODE_SCORE, MIN_NODE_SCORE, Code, Status, hookimpl

NAME = "PodGroupPodsCount"


class PodGroupPodsCount:
    """PlacementScore: members already scheduled plus those the placement
    places; normalized as ``score * 100 / max`` (minCount deliberately plays
    no part: no score cliffs); Error "no pods from pod group are assigned to
    any of the candidate placements" when every placement places none."""

    name = NAME

    def __init__(self, args: Any, handle: Any):
        pass

    @hookimpl
    def placement_score(self, state, group, assignments):
        return group.scheduled_before + len(assignments.assignments)

    @hookimpl
    def normalize_placement_score(self, state, group, scores):
        highest = int(scores.max()) if len(scores) else 0
        if highest == 0:
            return Status(Code.ERROR, ("no pods from pod group are assigned to any of the candidate placements",))
        scores[:] = MIN_NODE_SCORE + scores * (MAX_NODE_SCORE - MIN_NODE_SCORE) // highest
        return None
