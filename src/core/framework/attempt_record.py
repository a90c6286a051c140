"""The record of one scheduling attempt, made by the framework as it runs.

kube-scheduler tells why a pod went where it went only in logs at high
verbosity.  When a :class:`~kubesched.core.observability.decision_log.DecisionLog`
is set on the scheduler, every attempt fills an :class:`AttemptRecord` in its
CycleState (``state.record``) from what the plugins actually returned - not
by running them again afterwards - and the scheduler writes it out as one
JSON object per line:

- ``preFilter``: the plugins that did not simply succeed (a rejection, a
  PreFilterResult narrowing the nodes); ``preFilterSkipped``: those that
  said Skip (their Filter did not run);
- ``filter``: how many nodes were evaluated and found feasible, and the
  rejected nodes grouped by (plugin, code, reason), at most
  :data:`MAX_NODES_PER_GROUP` names per group (a 5,000-node cluster's record
  stays small); for nodes that NodeResourcesFit alone rejected, how much of
  each resource is missing (``shortfall``, same units as the pod's requests:
  milli-CPU, bytes, counts);
- ``score``: for the :data:`TOP_NODES` best scored nodes (the chosen one
  always among them), each Score plugin's raw, normalized and weighted score
  and the final sum, with how many nodes were scored;
- ``extenders``: each scheduler extender's answer (filter: nodes kept and
  rejected with its message; prioritize: weight and scores; or its error);
- ``node``, ``result`` (Scheduled, Unschedulable, Error, WaitingOnPermit)
  and ``message``; ``postFilter`` (nominated node, victims, message);
  ``reserve``/``permit`` failures; ``movedBy``: the cluster event (or
  timeout) that moved the pod back to the active queue before this attempt.

The binding cycle, which may end much later, adds a second line for the same
attempt (``phase: binding``) with PreBind's and Bind's outcome.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from attrs import define, field

from .status import Code, Status

#: Node names kept per group of nodes that share a Filter status.
MAX_NODES_PER_GROUP = 20
#: Scored nodes whose per-plugin breakdown is kept (the best ones).
TOP_NODES = 10


def status_json(status: Status | None) -> dict[str, Any] | None:
    """``{"code", "plugin", "reasons"}`` of a status (None: success)."""
    if status is None:
        return None
    return {"code": status.code.name, "plugin": status.plugin, "reasons": list(status.reasons)}


def group_statuses(named: list[tuple[str, Status]]) -> list[dict[str, Any]]:
    """(node name, status) pairs grouped by plugin, code and message, the largest
    group first: ``[{"plugin", "code", "reason", "count", "nodes"}]`` with at
    most :data:`MAX_NODES_PER_GROUP` names in ``nodes``."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for name, status in named:
        key = (status.plugin, status.code.name, status.message())
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"plugin": key[0], "code": key[1], "reason": key[2], "count": 0, "nodes": []}
        group["count"] += 1
        if len(group["nodes"]) < MAX_NODES_PER_GROUP:
            group["nodes"].append(name)
    return sorted(groups.values(), key=lambda g: (-g["count"], g["plugin"], g["reason"]))


@define
class AttemptRecord:
    """What one scheduling attempt of one pod did (see the module docstring);
    :meth:`to_json` gives the JSON line's object."""

    pod: str
    uid: str
    attempt: int
    time: float
    profile: str
    moved_by: str = ""
    pre_filter: list[dict[str, Any]] = field(factory=list)
    pre_filter_skipped: list[str] = field(factory=list)
    filter: dict[str, Any] | None = None
    score: dict[str, Any] | None = None
    post_filter: dict[str, Any] | None = None
    node: str = ""
    result: str = ""
    message: str = ""
    failed_at: dict[str, Any] | None = None
    extenders: list[dict[str, Any]] = field(factory=list)
    _plugin_scores: list[tuple[str, int, Sequence[int], Sequence[int]]] = field(factory=list, repr=False)
    _scored: tuple[Any, Sequence[int], int] | None = field(default=None, repr=False)

    def pre_filter_answer(self, plugin: str, status: Status | None, narrowed_to: int | None) -> None:
        """Note a PreFilter plugin's answer when it is not a plain success."""
        if status is not None and status.code == Code.SKIP:
            self.pre_filter_skipped.append(plugin)
        elif status is not None and status.code != Code.SUCCESS:
            self.pre_filter.append({"plugin": plugin, "code": status.code.name, "reasons": list(status.reasons)})
        elif narrowed_to is not None:
            self.pre_filter.append({"plugin": plugin, "code": "SUCCESS", "nodes": narrowed_to})

    def filtered(self, evaluated: int, feasible: int, rejected: list[tuple[str, Status]],
                 shortfall: dict[str, dict[str, int]] | None = None,
                 lacking: dict[str, list[str]] | None = None) -> None:
        """Filter's outcome: nodes evaluated, how many passed, the rejected ones
        grouped; ``shortfall``: node -> resource -> amount missing; ``lacking``:
        node -> the requested resources it has none of."""
        self.filter = {"evaluated": evaluated, "feasible": feasible, "rejected": group_statuses(rejected)}
        if shortfall:
            self.filter["shortfall"] = shortfall
        if lacking:
            self.filter["lacking"] = lacking

    def filtered_as(self, other: "AttemptRecord") -> None:
        """PreFilter's and Filter's outcome as ``other``'s: an attempt of a pod with the same signature on the
        same nodes, none of which changed for it since (a PodGroup's next member in a placement)."""
        self.pre_filter, self.pre_filter_skipped, self.filter = other.pre_filter, other.pre_filter_skipped, other.filter

    def extender_answer(self, extender: str, verb: str, *, kept: int | None = None,
                        rejected: list[tuple[str, Status]] | None = None, error: str = "", ignored: bool = False,
                        weight: int | None = None, scores: dict[str, int] | None = None) -> None:
        """A scheduler extender's answer to ``verb`` (filter, prioritize): for filter, how many nodes it
        ``kept`` and the ``rejected`` ones grouped (as Filter's); for prioritize, its ``weight`` and raw
        ``scores`` (0-10) of the :data:`TOP_NODES` best nodes; or the ``error`` it failed with and whether it
        was ``ignored`` (an ignorable extender, or any prioritize failure)."""
        entry: dict[str, Any] = {"extender": extender, "verb": verb}
        if error:
            entry["error"] = error
            entry["ignored"] = ignored
        if kept is not None:
            entry["kept"] = kept
            entry["rejected"] = group_statuses(rejected or [])
        if weight is not None:
            entry["weight"] = weight
            best = sorted((scores or {}).items(), key=lambda item: (-item[1], item[0]))[:TOP_NODES]
            entry["scores"] = dict(best)
        self.extenders.append(entry)

    def plugin_scored(self, plugin: str, weight: int, raw: Sequence[int], normalized: Sequence[int]) -> None:
        """One Score plugin's raw (before NormalizeScore) and normalized scores over the scored nodes (int64 arrays
        or lists of int, kept as they are: read when the record is written out)."""
        self._plugin_scores.append((plugin, weight, raw, normalized))

    def plugins_scored(self, plugins: list[str], weights: list[int], raws: list[Sequence[int]],
                       normalized: list[Sequence[int]]) -> None:
        """:meth:`plugin_scored` of each of ``plugins`` in turn, with its weight, raw and normalized scores."""
        self._plugin_scores.extend(zip(plugins, weights, raws, normalized))

    def scored(self, names: Sequence[str] | np.ndarray, total: Sequence[int], chosen: int) -> None:
        """The final scores (an int64 array or a list of int) over ``names`` (the scored nodes, a list or an array)
        and the chosen index: the :data:`TOP_NODES` best nodes' breakdown is kept
        when the record is written out (:meth:`to_json`; most attempts of a
        PodGroup's members are in placements not kept, and never written)."""
        self._scored, self.score = (names, total, chosen), None

    def _score_breakdown(self, names: Sequence[str] | np.ndarray, scores: Sequence[int], chosen: int
                         ) -> dict[str, Any]:
        """``score``: the :data:`TOP_NODES` best of ``names``, each Score plugin's part, the totals (see :meth:`scored`)."""
        total = np.asarray(scores, dtype=np.int64)
        count = len(names)
        if count > TOP_NODES:
            top = np.argpartition(-total, TOP_NODES - 1)[:TOP_NODES]
            if chosen not in top:
                top[-1] = chosen
        else:
            top = np.arange(count)
        top = top[np.lexsort((top, -total[top]))]  # best first, then by scored order
        plugins = []
        for plugin, weight, raw, normalized in self._plugin_scores:
            kept = np.asarray(normalized)[top].tolist()  # within [0, MaxNodeScore]: weighed as Python numbers alike
            plugins.append({"plugin": plugin, "weight": weight, "raw": np.asarray(raw)[top].tolist(), "normalized": kept,
                            "weighted": [score * weight for score in kept]})
        return {"scored": count, "nodes": [str(names[i]) for i in top], "plugins": plugins,
                "total": total[top].tolist()}

    def to_json(self) -> dict[str, Any]:
        """The scheduling-phase line of the decision log: a JSON-ready dict with camelCase keys, empty fields left out
        (see the module doc)."""
        out: dict[str, Any] = {"pod": self.pod, "uid": self.uid, "attempt": self.attempt, "time": self.time,
                               "profile": self.profile, "phase": "scheduling", "result": self.result}
        if self.node:
            out["node"] = self.node
        if self.message:
            out["message"] = self.message
        if self.moved_by:
            out["movedBy"] = self.moved_by
        if self.pre_filter:
            out["preFilter"] = self.pre_filter
        if self.pre_filter_skipped:
            out["preFilterSkipped"] = self.pre_filter_skipped
        if self.extenders:
            out["extenders"] = self.extenders
        if self.score is None and self._scored is not None:
            self.score = self._score_breakdown(*self._scored)
        for key, value in (("filter", self.filter), ("score", self.score), ("postFilter", self.post_filter),
                           ("failedAt", self.failed_at)):
            if value is not None:
                out[key] = value
        return out
