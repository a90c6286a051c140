"""Running a profile's PreScore, Score and NormalizeScore plugins, with upstream's semantics
(``frameworkImpl.RunPreScorePlugins``, ``RunScorePlugins``).

:class:`ScoreExtensionPoints` is a part of :class:`~kubesched.core.framework.runtime.Framework`.
Score runs once per pod over every feasible node (hundreds of them), so its own work is kept to a
few numpy operations per plugin: the plugins' normalised scores go into one (plugins, nodes) matrix,
range-checked at once and summed with the weights in one product.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter
from typing import Any, Callable, Iterator, overload

import numpy as np

from kubesched.core.observability import metrics

from .cycle_state import FEASIBLE_ROWS_KEY, CycleState
from .hookspecs import SCORES_ALONE
from .nodeinfo import NodeInfo
from .snapshot import NodeTable
from .status import SKIP, Code, Status
from .timing import extension_point, no_status
from .types import MAX_NODE_SCORE, MIN_NODE_SCORE

#: How many skip sets' plans (:meth:`ScoreExtensionPoints._score_plan`) a profile keeps before starting afresh.
MAX_SCORE_PLANS = 256


class ScoreError(Exception):
    """A Score or NormalizeScore failure; ``status`` is the Error status."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


class NodeNames(Sequence):
    """The names of the nodes being scored, in score order, as NormalizeScore is handed them: a
    read-only sequence of str over the NodeTable's names and the scored rows, made into strings only
    when a plugin reads them (most normalisers never do)."""

    __slots__ = ("_names", "_rows", "_list")

    def __init__(self, names: np.ndarray, rows: np.ndarray):
        self._names = names
        self._rows = rows
        self._list: list[str] | None = None

    def _strings(self) -> list[str]:
        if self._list is None:
            self._list = self._names[self._rows].tolist()
        return self._list

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self._strings()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._strings())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) and not isinstance(other, str) else other)

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by value, as a list is

    def __repr__(self) -> str:
        return repr(self._strings())


class KeptScores:
    """One scoring of a placement's feasible rows, kept for a PodGroup's next member of the same signature
    (:meth:`ScoreExtensionPoints.rescore`): per Score plugin that ran (the profile's order) its step - (name,
    Score method, score_row or None, NormalizeScore or None, weight, its scheduler_plugin_evaluation_total
    key, whether that NormalizeScore reads the scores alone: ``normalizes_scores_alone``) - and its ``raw``
    scores (before NormalizeScore) and ``normalized`` ones, with the weighted ``total`` per row; the plugins'
    names and weights alike (``plugins``, ``weights``), the NodeTable ``rows`` scored and their ``names`` as
    NormalizeScore is handed them.  Lists of int, one per row, read-only once kept (a member's attempt record
    holds them)."""

    __slots__ = ("steps", "plugins", "weights", "rows", "names", "raw", "normalized", "total")

    def __init__(self) -> None:
        self.steps: list[tuple[str, Callable, Callable | None, Callable | None, int, tuple[str, str, str], bool]] = []
        self.plugins: list[str] = []
        self.weights: list[int] = []
        self.rows: list[int] = []
        self.names: NodeNames | None = None
        self.raw: list[list[int]] = []
        self.normalized: list[list[int]] = []
        self.total: list[int] = []


class ScoreExtensionPoints:
    """PreScore and Score of one profile (bound methods in the profile's order, set by the Framework)."""

    score_plugins: list[tuple[str, Callable]]
    score_row: dict[str, Callable]
    score_weights: dict[str, int]
    _lists: tuple[dict[str, Any], dict[str, Any]]
    _evaluations: dict[tuple[str, str, str], int]
    _evaluation_key: dict[str, dict[str, tuple[str, str, str]]]
    #: skip set -> (the Score plugins that run, their weights): see :meth:`_score_plan`
    _score_plans: dict[frozenset[str], tuple[list[tuple[str, Callable]], np.ndarray]]

    @extension_point("PreScore")
    def run_pre_score(self, state: CycleState, pod: Any, nodes: list[NodeInfo],
                      rows: np.ndarray | None = None) -> Status | None:
        """PreScore over the feasible ``nodes`` (their snapshot NodeTable
        ``rows``, when given, are left in the state under
        :data:`FEASIBLE_ROWS_KEY`).  Skip marks the plugin's Score skipped;
        any other failure is an Error status naming the plugin."""
        if rows is not None:
            state.write(FEASIBLE_ROWS_KEY, rows)
        evaluations, keys = self._evaluations, self._evaluation_key["PreScore"]
        for name, method in self._lists[state.record_plugin_metrics]["pre_score_plugins"]:
            status = method(state, pod, nodes)
            if status is None:
                evaluations[keys[name]] += 1
                continue
            if status is SKIP or status.code == Code.SKIP:
                state.skip_score_plugins.add(name)
                continue
            evaluations[keys[name]] += 1
            if status.code == Code.SUCCESS:
                continue
            return Status(Code.ERROR, (f"running PreScore plugin \"{name}\": {status.message()}",), name)
        return None

    @extension_point("Score", no_status)
    def run_score(
        self, state: CycleState, pod: Any, table: NodeTable, rows: np.ndarray, nodes: list[NodeInfo],
        kept: KeptScores | None = None, per_plugin: bool = False,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Score the feasible ``nodes`` (NodeTable ``rows``): each plugin's scores, normalised, range-checked,
        weighted and summed.  Returns (total int64 array, {plugin: weighted scores}); the dict is filled only
        with ``per_plugin``.  ``kept``, when given, is filled with this scoring for a PodGroup's next member
        (:meth:`rescore`).  Raises :class:`ScoreError` for a plugin error or a score out of range (the first
        plugin in the profile's order that has one)."""
        plugins, factors = self._score_plan(state.skip_score_plugins)
        scored = np.empty((len(plugins), len(rows)), dtype=np.int64)  # row i: plugin i's normalised scores
        raws: list[np.ndarray] = []
        record = state.record
        normalizers = self._lists[state.record_plugin_metrics]["normalize"]
        names: NodeNames | None = None
        for at, (name, method) in enumerate(plugins):
            normalize = normalizers.get(name)
            try:
                scores = self._plugin_scores(name, method, state, pod, table, rows, nodes)
            except ScoreError:
                self._check_range(plugins, scored[:at])  # an earlier plugin's bad score is found first
                raise
            if record is not None or kept is not None:
                raws.append(scores.copy())  # the plugin's array may be one it keeps (and changes later)
            if normalize is not None:
                if names is None:
                    names = NodeNames(table.names, rows)
                status = normalize(state, pod, names, scores)
                if status is not None and not status.is_success():
                    self._check_range(plugins, scored[:at])
                    raise ScoreError(Status(Code.ERROR, (
                        f"running Normalize on Score plugin \"{name}\": {status.message()}",), name))
            scored[at] = scores
        self._check_range(plugins, scored)
        weights = self.score_weights
        if record is not None:
            for at, (name, _) in enumerate(plugins):
                record.plugin_scored(name, weights[name], raws[at], scored[at])
        weighted = {name: scored[at] * factors[at] for at, (name, _) in enumerate(plugins)} if per_plugin else {}
        total = factors @ scored
        if kept is not None:
            by_row, keys = self.score_row, self._evaluation_key["Score"]
            kept.plugins, kept.weights = [name for name, _ in plugins], factors.tolist()
            kept.steps = [(name, method, by_row.get(name), normalizers.get(name), weight, keys[name],
                           getattr(normalizers.get(name), SCORES_ALONE, False))
                          for (name, method), weight in zip(plugins, kept.weights)]
            kept.rows, kept.names = rows.tolist(), names or NodeNames(table.names, rows)
            kept.raw, kept.normalized, kept.total = [raw.tolist() for raw in raws], scored.tolist(), total.tolist()
        return total, weighted

    @extension_point("Score", no_status)
    def rescore(self, state: CycleState, pod: Any, table: NodeTable, rows: np.ndarray, nodes: list[NodeInfo],
                kept: KeptScores, position: int) -> list[int]:
        """:meth:`run_score` of the rows ``kept`` scored, for a pod of the same signature and with the same
        skipped plugins (a PodGroup's next member, whose CycleState is a clone of the one that scored), when of
        those nodes only the one at ``position`` (in ``rows``, ``nodes``) changed since: each plugin scores that
        node alone (its ``score_row``, else its ``score_batch`` or ``score`` of it; the others' raw scores
        stand), NormalizeScore runs over every row as ever (one marked ``normalizes_scores_alone`` keeps its
        answer when that node's score did not change, outside cycles sampled for plugin metrics), and the
        weighted totals change where the scores did.  Works on Python ints (numpy's cost per call exceeds the
        arithmetic of a placement's few rows).
        Returns the totals (a list of int, one per row) and keeps this scoring in ``kept``; raises
        :class:`ScoreError` as :meth:`run_score` does (``kept`` then unchanged)."""
        sampled = state.record_plugin_metrics
        evaluations, row = self._evaluations, kept.rows[position]
        raws: list[list[int]] = []
        normalized: list[list[int]] = []
        total = kept.total.copy()
        bad: ScoreError | None = None  # the first plugin's score out of range (raised once every plugin scored)
        for at, (name, method, score_row, normalize, weight, key, alone) in enumerate(kept.steps):
            value = None
            if score_row is not None:
                value = (self._timed_row_score(name, score_row, state, pod, table, row) if sampled
                         else score_row(state, pod, table, row))
            if value is not None:
                evaluations[key] += 1
            else:
                try:
                    value = int(self._plugin_scores(name, method, state, pod, table, rows[position:position + 1],
                                                    [nodes[position]])[0])
                except ScoreError:
                    if bad is not None:  # an earlier plugin's bad score is found first
                        raise bad from None
                    raise
            before = kept.raw[at][position]
            if value == before and alone and not sampled:  # the same scores: its answer is the one before
                raws.append(kept.raw[at])
                normalized.append(kept.normalized[at])
                continue
            raw = kept.raw[at].copy()
            raw[position] = value
            raws.append(raw)
            if normalize is None:  # the other scores passed the range check before
                normalized.append(raw)
                total[position] += weight * (value - before)
                if bad is None and not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                    bad = _out_of_range(name, value)
                continue
            scores = np.array(raw, dtype=np.int64)
            status = normalize(state, pod, kept.names, scores)
            if status is not None and not status.is_success():
                if bad is not None:
                    raise bad
                raise ScoreError(Status(Code.ERROR, (
                    f"running Normalize on Score plugin \"{name}\": {status.message()}",), name))
            now = scores.tolist()
            normalized.append(now)
            was = kept.normalized[at]
            if now == was:  # passed the range check before
                continue
            if bad is None and (min(now) < MIN_NODE_SCORE or max(now) > MAX_NODE_SCORE):
                bad = _out_of_range(name, next(score for score in now if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE))
            total = [sum_ + weight * (new - old) for sum_, new, old in zip(total, now, was)]
        if bad is not None:
            raise bad
        if state.record is not None:
            state.record.plugins_scored(kept.plugins, kept.weights, raws, normalized)
        kept.raw, kept.normalized, kept.total = raws, normalized, total
        return total

    @staticmethod
    def _timed_row_score(name: str, score_row: Callable, state: CycleState, pod: Any, table: NodeTable,
                         row: int) -> int | None:
        """``score_row`` in a sampled cycle, observed as the plugin's Score call when it answers (None: the
        plugin's score_batch, observed then, scores the row)."""
        started = perf_counter()
        try:
            value = score_row(state, pod, table, row)
        except Exception:
            metrics.PLUGIN_EXECUTION_DURATION.labels(name, "Score", "Error").observe(perf_counter() - started)
            raise
        if value is not None:
            metrics.PLUGIN_EXECUTION_DURATION.labels(name, "Score", "Success").observe(perf_counter() - started)
        return value

    def _score_plan(self, skip: set[str]) -> tuple[list[tuple[str, Callable]], np.ndarray]:
        """The Score plugins that run when those in ``skip`` are skipped (in the profile's order) and their
        weights (a read-only int64 array), kept per skip set: a PodGroup's members, and most pods, share one."""
        key = frozenset(skip)
        plan = self._score_plans.get(key)
        if plan is None:
            if len(self._score_plans) >= MAX_SCORE_PLANS:
                self._score_plans.clear()
            plugins = [(name, method) for name, method in self.score_plugins if name not in skip]
            factors = np.array([self.score_weights[name] for name, _ in plugins], dtype=np.int64)
            factors.flags.writeable = False
            plan = self._score_plans[key] = (plugins, factors)
        return plan

    def _plugin_scores(self, name: str, method: Callable, state: CycleState, pod: Any, table: NodeTable,
                       rows: np.ndarray, nodes: list[NodeInfo]) -> np.ndarray:
        """Plugin ``name``'s raw int64 scores of ``rows``: its ``score_batch``, or ``score`` node by node (in a
        sampled cycle the pod's per-node calls are one observation)."""
        self._evaluations[self._evaluation_key["Score"][name]] += len(rows)
        batch = self._lists[state.record_plugin_metrics]["score_batch"].get(name)
        if batch is not None:
            return np.asarray(batch(state, pod, table, rows), dtype=np.int64)
        started = perf_counter() if state.record_plugin_metrics else 0.0
        scores = np.empty(len(nodes), dtype=np.int64)
        for i, node_info in enumerate(nodes):
            value = method(state, pod, node_info)
            if isinstance(value, Status):
                raise ScoreError(Status(Code.ERROR, (f"running Score plugin \"{name}\": {value.message()}",), name))
            scores[i] = value
        if started:
            metrics.PLUGIN_EXECUTION_DURATION.labels(name, "Score", "Success").observe(perf_counter() - started)
        return scores

    @staticmethod
    def _check_range(plugins: list[tuple[str, Callable]], scored: np.ndarray) -> None:
        """Raise :class:`ScoreError` for the first plugin (row of ``scored``) with a score outside
        [MIN_NODE_SCORE, MAX_NODE_SCORE] after normalising."""
        # one pass for both bounds: MIN_NODE_SCORE is 0, and a negative score read as unsigned is above the max
        if not scored.size or np.maximum.reduce(scored.view(np.uint64), axis=None) <= MAX_NODE_SCORE:
            return
        bad = (scored < MIN_NODE_SCORE) | (scored > MAX_NODE_SCORE)
        at = int(np.argmax(bad.any(axis=1)))
        value = int(scored[at][np.argmax(bad[at])])
        raise _out_of_range(plugins[at][0], value)


def _out_of_range(name: str, value: int) -> ScoreError:
    """The error of plugin ``name``'s normalised score ``value`` outside [MIN_NODE_SCORE, MAX_NODE_SCORE]."""
    return ScoreError(Status(Code.ERROR, (
        f"plugin \"{name}\" returns an invalid score {value}, it should in the range of "
        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",), name))
