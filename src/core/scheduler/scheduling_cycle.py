"""The scheduling cycle of one pod (upstream ``schedule_one.go``'s ``schedulingCycle``,
``schedulePod``, ``findNodesThatFitPod`` and ``selectHost``).

:meth:`SchedulingCycle.scheduling_cycle` takes a popped pod through its
profile's snapshot, PreFilter, Filter (nominated node first,
percentageOfNodesToScore, rotating start index), PostFilter when nothing
fits, PreScore/Score/NormalizeScore, host selection, assume, Reserve and
Permit, and hands back where the binding cycle starts; a failure puts the
pod back in the queue with kube-scheduler's reason (the failure handler).
The PodGroup cycle runs each member through :meth:`SchedulingCycle.schedule_pod`.
"""

from __future__ import annotations

import random
import time

import numpy as np

from kubesched.core.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.core.observability import metrics

from ..api.core_v1 import Pod
from ..framework.attempt_record import AttemptRecord
from ..framework.cycle_state import CycleState
from ..framework.extender import (
    EXTENDER_NAME,
    ExtenderError,
    extender_scores,
    find_nodes_that_pass_extenders,
)
from ..framework.nodeinfo import NodeInfo, PodInfo, next_generation
from ..framework.runtime import FilterError, Framework
from ..framework.scoring import KeptScores, ScoreError
from ..framework.signature import PodSigner
from ..framework.status import Code, Status
from ..framework.types import PostFilterResult, PreFilterResult
from .assume import assume_and_reserve, unreserve_and_forget
from .binding_cycle import ScheduleResult
from .failure import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE, FailureHandler
from .opportunistic_batch import OpportunisticBatch, PodToSign
from .queue import QueuedPodInfo
from .recording import record_feasible, record_unschedulable, write_attempt
from .state import SchedulerState

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: Up to this many scored nodes (a PodGroup's placement, say) :meth:`SchedulingCycle.select_host` compares them in
#: Python, which costs less than numpy's steps there; the same node, drawn the same way.
FEW_SCORED_NODES = 64


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Upstream's adaptive percentageOfNodesToScore: all nodes below 100, else
    ``N * p / 100`` with ``p = 50 - N/125`` (at least 5) when not configured, and
    never fewer than 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct >= 100:
        return num_all_nodes
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    found = num_all_nodes * pct // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingCycle:
    """The scheduling cycle of one pod.

    ``state``: the scheduler's shared state; ``failures``: where a failed
    attempt's pod goes back; ``rng``: the source of tie-breaks between
    equally scored nodes; ``node_rank``: node name -> rank, ties go to the
    lowest rank instead (not upstream: simulators replaying a paper's
    protocol need it).  Its own fields: ``next_start_node_index``, where the
    next Filter pass starts (upstream's rotating start), ``batches``, each
    profile's :class:`OpportunisticBatch` (while OpportunisticBatching is on),
    and ``signers``, each profile's :class:`PodSigner`."""

    _ring: np.ndarray = np.empty(0, dtype=np.int64)

    def __init__(self, state: SchedulerState, failures: FailureHandler, rng: random.Random,
                 node_rank: dict[str, int] | None = None):
        self.shared = state
        self.failures = failures
        self.rng = rng
        self.node_rank = node_rank
        self.next_start_node_index = 0
        self.batches: dict[str, OpportunisticBatch] = {}
        self.signers: dict[str, PodSigner] = {}

    def batch_for(self, fwk: Framework) -> OpportunisticBatch | None:
        """``fwk``'s opportunistic batch, None when the OpportunisticBatching gate is off or the profile
        signs no pod (a scheduling plugin without ``sign_pod``, or extenders)."""
        if not self.shared.features.enabled("OpportunisticBatching"):
            return None
        batch = self.batches.get(fwk.profile_name)
        if batch is None:
            batch = self.batches[fwk.profile_name] = OpportunisticBatch(fwk, self.signer_for(fwk))
        return batch if batch.signer.enabled else None

    def signer_for(self, fwk: Framework) -> PodSigner:
        """``fwk``'s pod signer (over its PreFilter, Filter, PreScore and Score plugins), made once."""
        signer = self.signers.get(fwk.profile_name)
        if signer is None:
            scheduling = [name for attr in ("pre_filter_plugins", "filter_plugins", "pre_score_plugins",
                                            "score_plugins") for name, _ in getattr(fwk, attr)]
            signer = self.signers[fwk.profile_name] = PodSigner(fwk.plugins, scheduling,
                                                                extenders=bool(self.shared.extenders))
        return signer

    def new_cycle_state(self, fwk: Framework, info: QueuedPodInfo) -> CycleState:
        """A fresh CycleState for ``info``'s attempt (with its PodInfo), recording it when decisions are recorded."""
        state = CycleState(info.pod_info)
        state.record = self.new_record(fwk, info)
        return state

    def new_record(self, fwk: Framework, info: QueuedPodInfo) -> AttemptRecord | None:
        """The record of ``info``'s attempt, None when its decisions are not recorded."""
        pod = info.pod
        decisions = self.shared.decisions
        if decisions is None or not decisions.wants(pod.key):
            return None
        return AttemptRecord(pod.key, pod.metadata.uid, info.attempts, self.shared.clock.now(), fwk.profile_name,
                             moved_by=info.moved_by)

    def scheduling_cycle(self, fwk: Framework, state: CycleState, info: QueuedPodInfo) -> ScheduleResult | None:
        """Upstream ``schedulingCycle``: find a node for ``info``'s pod, assume
        it there, Reserve and Permit.  Returns where the binding cycle starts,
        or None when the attempt failed (the pod is back in the queue with its
        reason; PostFilter ran when no node fit)."""
        pod = info.pod
        shared = self.shared
        shared.stats.cycles += 1
        started = shared.attempt_started[pod.metadata.uid] = time.perf_counter()
        try:
            node_name = self.schedule_pod(fwk, state, info, batch=self.batch_for(fwk))
            metrics.SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - started)
        except FitError as fit:
            self.handle_fit_error(fwk, state, info, fit, post_filter=True)
            return None
        except CycleError as err:
            self.handle_cycle_error(fwk, state, info, err.status)
            return None
        assumed, status = assume_and_reserve(shared.cache, shared.queue.nominator, fwk, state, info, node_name)
        if status is not None:
            write_attempt(shared.decisions, state, "Error", status.message(), node_name, failed_at=("Reserve", status))
            self.failures.fail(fwk, info, status)
            return None
        status, waits = fwk.run_permit(state, assumed, node_name)
        if status is not None:
            write_attempt(shared.decisions, state, status.code.name.title().replace("_", ""), status.message(),
                          node_name, failed_at=("Permit", status))
            unreserve_and_forget(shared.cache, fwk, state, assumed, node_name)
            self.failures.fail(fwk, info, status)
            return None
        write_attempt(shared.decisions, state, "WaitingOnPermit" if waits else "Scheduled", "", node_name)
        shared.stats.scheduled += 1
        return ScheduleResult(assumed, node_name, waits)

    def handle_fit_error(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, fit: FitError,
                         post_filter: bool, nominated: str | None = None, requeue: bool = True) -> None:
        """No node fits ``info``'s pod: :meth:`explain_fit_error`, then the pod
        handed back with upstream's FitError message.  ``nominated``: the
        nomination to keep when PostFilter does not run (None: as it is);
        ``requeue``: False for a PodGroup's member (its group is requeued once)."""
        message, nominated = self.explain_fit_error(fwk, state, info, fit, post_filter, nominated)
        rejectors = fit.diagnosis.unschedulable_plugins | fit.diagnosis.pending_plugins
        pending = bool(fit.diagnosis.pending_plugins) and not fit.diagnosis.unschedulable_plugins
        self.failures.handle_failure(fwk, info, REASON_UNSCHEDULABLE, message, rejectors, nominated, pending, requeue)

    def explain_fit_error(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, fit: FitError,
                          post_filter: bool, nominated: str | None = None) -> tuple[str, str | None]:
        """What a failed attempt says, before the pod is handed back: PostFilter
        (when ``post_filter`` and the profile has any) may nominate a node; the
        attempt is counted and recorded.  Returns upstream's FitError message and
        the nomination (None: left as it is; a string, even "", replaces it)."""
        pod = info.pod
        if fit.num_all_nodes == 0:
            nominated = ""
        elif post_filter and fwk.post_filter_plugins:
            result, status = fwk.run_post_filter(state, pod, fit.diagnosis.node_status)
            if status is not None and status.reasons:
                fit.diagnosis.post_filter_msg = status.message()
            if isinstance(result, PostFilterResult):
                nominated = result.nominated_node_name
        self.shared.stats.unschedulable += 1
        message = fit.message()
        if state.record is not None:
            if fit.num_all_nodes:
                record_unschedulable(state.record, fwk, state, pod, self.shared.snapshot, fit.diagnosis.node_status)
            write_attempt(self.shared.decisions, state, REASON_UNSCHEDULABLE, message, nominated=nominated)
        return message, nominated

    def handle_cycle_error(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, status: Status) -> None:
        """An Error status aborted the attempt: recorded, and the pod back to backoff with SchedulerError."""
        self.shared.stats.errors += 1
        if state.record is not None:
            write_attempt(self.shared.decisions, state, "Error", status.message())
        self.failures.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, status.message(), set(), "")

    def schedule_pod(self, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                     within: np.ndarray | None = None, batch: OpportunisticBatch | None = None,
                     kept: KeptCycle | None = None, pre_filtered: KeptPreFilter | None = None) -> str:
        """Upstream ``SchedulePod``: the name of the chosen node, among the
        snapshot rows ``within`` a placement when given (a PodGroup cycle);
        ``batch``: the profile's opportunistic batch (a single pod's cycle);
        ``kept``: filled with what the next member of a PodGroup with the same
        signature may reuse (see :class:`KeptCycle`); ``pre_filtered``: this pod's PreFilter kept from an
        earlier placement of its PodGroup's cycle, ``state`` a clone of the state it left (see :class:`KeptPreFilter`).
        Raises :class:`FitError` when no node fits, :class:`CycleError` on an Error."""
        pod = info.pod
        snapshot = self.shared.snapshot
        attempt = BatchAttempt(batch, PodToSign(pod, batch.signer), next_generation()) if batch is not None else None
        self.shared.cache.update_snapshot(snapshot)
        num_nodes = len(snapshot) if within is None else len(within)
        if num_nodes == 0:
            raise FitError(pod, 0, Diagnosis())
        feasible = self.find_nodes_that_fit(fwk, state, info, within, attempt, kept, pre_filtered)
        if kept is not None:
            kept.feasible, kept.record = feasible, state.record
            kept.evaluated = state.evaluated_nodes if state.evaluated_nodes == num_nodes else 0
        if len(feasible) == 1:
            name = snapshot.nodes[feasible[0]].name
            if attempt is not None:
                self.store_batch(attempt, name, None)
            if kept is not None:
                kept.prescored = state.clone()
            return name
        nodes = snapshot.table.info_array[feasible].tolist()
        status = fwk.run_pre_score(state, pod, nodes, feasible)
        if status is not None:
            raise CycleError(status)
        if kept is not None:
            kept.prescored, kept.scores, kept.nodes = state.clone(), KeptScores(), nodes
        try:
            total, _ = fwk.run_score(state, pod, snapshot.table, feasible, nodes,
                                     kept.scores if kept is not None else None)
        except ScoreError as err:
            raise CycleError(err.status) from None
        if self.shared.extenders:
            added = extender_scores(self.shared.extenders, pod, [n.node for n in nodes], state.record)
            if added is not None:
                total = total + added
        chosen = self.select_host(total, feasible)
        if state.record is not None:
            state.record.scored(snapshot.table.names[feasible], total, chosen)
        if attempt is not None:
            self.store_batch(attempt, nodes[chosen].name, (np.asarray(feasible), total, chosen))
        return nodes[chosen].name

    def store_batch(self, attempt: BatchAttempt, chosen: str, scored: tuple[np.ndarray, np.ndarray, int] | None
                    ) -> None:
        """Hand the cycle's outcome to its batch: ``chosen`` node; ``scored`` the feasible rows, their total
        scores and the index of the chosen one (None: none were scored)."""
        shared = self.shared
        hinted = shared.snapshot.nodes[attempt.hint].name if attempt.hint is not None else None
        attempt.batch.store_results(attempt.signed, hinted, chosen, shared.stats.cycles, shared.clock.now(),
                                    scored, shared.snapshot, attempt.since)

    def select_host(self, total: np.ndarray | list[int], rows: np.ndarray) -> int:
        """Index of the highest total score (an int64 array or a list of int; ``rows``: the snapshot rows
        scored); ties broken uniformly at random (upstream), or by the lowest :attr:`node_rank` when one is set."""
        if self.node_rank is None and (isinstance(total, list) or len(total) <= FEW_SCORED_NODES):
            values = total if isinstance(total, list) else total.tolist()  # a placement's few nodes: Python's cheaper
            top = max(values)
            if values.count(top) == 1:
                return values.index(top)
            ties = [at for at, value in enumerate(values) if value == top]
            return ties[self.rng.randrange(len(ties))]
        total = np.asarray(total)
        best = np.flatnonzero(total == np.maximum.reduce(total))  # the ufunc itself: .max() wraps it in Python
        if len(best) == 1:
            return int(best[0])
        if self.node_rank is not None:
            ranks = self._row_ranks(self.node_rank)[np.asarray(rows)[best]]
            return int(best[np.argmin(ranks)])
        return int(best[self.rng.randrange(len(best))])

    def _row_ranks(self, rank: dict[str, int]) -> np.ndarray:
        """``rank`` (:attr:`node_rank`) per snapshot row (nodes without a rank last)."""
        return self.shared.snapshot.table.column(f"rank/{id(rank)}", lambda info: rank.get(info.name, len(rank)))

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                            within: np.ndarray | None = None, attempt: BatchAttempt | None = None,
                            kept: KeptCycle | None = None, pre_filtered: KeptPreFilter | None = None) -> np.ndarray:
        """Upstream ``findNodesThatFitPod``: PreFilter, the nominated node (or the
        batch's hint, kept in ``attempt``) first, then Filter, over the snapshot or
        the rows ``within`` a placement.  ``pre_filtered``: PreFilter's answer kept (not run again); ``kept``
        gets this PreFilter's, when it succeeds in a cycle neither recorded nor sampled for plugin metrics.
        Returns feasible snapshot rows; raises :class:`FitError`."""
        pod = info.pod
        snapshot = self.shared.snapshot
        num_nodes = len(snapshot) if within is None else len(within)
        if pre_filtered is not None:
            result, status, rejectors = fwk.run_pre_filter_kept(state, pre_filtered.result, pre_filtered.narrowing)
        else:
            result, status, rejectors = fwk.run_pre_filter(state, pod, snapshot.nodes)
            if kept is not None and status is None and state.record is None and not state.record_plugin_metrics:
                kept.pre_filtered = KeptPreFilter(state.clone(), result, frozenset(rejectors))
        if status is not None:
            if status.code == Code.ERROR:
                raise CycleError(status)
            codes = np.zeros(len(snapshot), dtype=np.int64)
            if within is not None:
                codes[:] = -1
                codes[within] = 0
            diagnosis = Diagnosis(node_status=NodeToStatus.coded(snapshot.index, codes, [status]),
                                  pre_filter_msg=status.message())
            if status.code == Code.PENDING:
                diagnosis.pending_plugins = rejectors
            else:
                diagnosis.unschedulable_plugins = rejectors
            raise FitError(pod, num_nodes, diagnosis)

        nominator = self.shared.queue.nominator
        nominated = {name: pods for name in nominator.nodes() if (pods := nominator.pods_to_respect(pod, name))}
        try:
            # the nominated node first; when it fails (or there is none), the batch's hint (nnn_hint_fallback)
            if self.passes_alone(fwk, state, pod, snapshot.index.get(pod.status.nominated_node_name), within,
                                 nominated):
                return np.array([snapshot.index[pod.status.nominated_node_name]])
            if attempt is not None:
                attempt.hint = attempt.batch.node_hint(state, attempt.signed, self.shared.stats.cycles,
                                                       self.shared.clock.now(), snapshot, self.select_host)
                if self.passes_alone(fwk, state, pod, attempt.hint, within, nominated):
                    return np.array([attempt.hint])

            if result is not None and result.node_names is not None:
                rows = np.array(sorted(snapshot.index[n] for n in result.node_names if n in snapshot.index),
                                dtype=np.int64)
                if within is not None:
                    rows = np.intersect1d(rows, within, assume_unique=True)
            else:
                rows = self.every_row(len(snapshot)) if within is None else within
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, rows, nominated) if len(rows) else rows
            if len(feasible) == 0:
                raise FitError(pod, num_nodes, fwk.diagnose(state, pod, snapshot, rows, rejectors, nominated, within))
            if self.shared.extenders:
                statuses: dict[str, Status] = {}
                passing = self.pass_extenders(pod, feasible, statuses, state)
                if len(passing) == 0:  # the FitError names the Filter plugins' and the extenders' rejections
                    diagnosis = fwk.diagnose(state, pod, snapshot, rows, rejectors, nominated, within)
                    diagnosis.node_status = {**dict(diagnosis.node_status.items()), **statuses}
                    diagnosis.unschedulable_plugins = diagnosis.unschedulable_plugins | {EXTENDER_NAME}
                    raise FitError(pod, num_nodes, diagnosis)
                feasible = passing
        except FilterError as err:
            raise CycleError(err.status) from None
        state.feasible_nodes = len(feasible)
        return feasible

    def every_row(self, count: int) -> np.ndarray:
        """Snapshot rows 0..``count``-1 in order (int64, read-only): a view of a kept ring of them twice over,
        so that :meth:`find_nodes_that_pass_filters` rotates them to its start without a copy per cycle."""
        if len(self._ring) != 2 * count:
            ring = np.arange(2 * count, dtype=np.int64) % max(count, 1)
            ring.flags.writeable = False
            self._ring = ring
        return self._ring[:count]

    def passes_alone(self, fwk: Framework, state: CycleState, pod: Pod, row: int | None, within: np.ndarray | None,
                     nominated: dict[str, list[PodInfo]]) -> bool:
        """Upstream ``evaluateNominatedNode``: does snapshot ``row`` (the nominated node or the batch's hint;
        None: no such node) pass the Filter plugins (with the pods nominated there) and the extenders?  Then
        it is the only feasible node."""
        if row is None or (within is not None and not _holds(within, row)):
            return False
        node_info = self.shared.snapshot.nodes[row]
        if fwk.run_filter_with_nominated_pods(state, pod, node_info, nominated.get(node_info.name, [])) is not None:
            return False
        if state.record is not None:
            state.record.filtered(1, 1, [])
        if not len(self.pass_extenders(pod, np.array([row]), {}, state)):
            return False
        state.evaluated_nodes = state.feasible_nodes = 1
        return True

    def pass_extenders(self, pod: Pod, rows: np.ndarray, statuses: dict[str, Status], state: CycleState) -> np.ndarray:
        """Upstream ``findNodesThatPassExtenders`` over the feasible snapshot ``rows``: the rows the extenders
        keep, in their order; ``statuses`` gets their rejections.  A failing non-ignorable extender raises
        :class:`CycleError` (an Error: the pod goes back to backoff), as upstream's attempt fails."""
        snapshot = self.shared.snapshot
        try:
            kept = find_nodes_that_pass_extenders(self.shared.extenders, pod, [snapshot.nodes[r].node for r in rows],
                                                  statuses, state.record)
        except ExtenderError as err:
            raise CycleError(Status.as_error(str(err))) from None
        if len(kept) == len(rows):
            return rows
        return np.array([snapshot.index[name] for name in kept], dtype=np.int64)

    def find_nodes_that_pass_filters(self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray,
                                     nominated: dict[str, list[PodInfo]]) -> np.ndarray:
        """Upstream ``findNodesThatPassFilters``: filter ``rows`` starting at the
        rotating start index, stopping after ``numFeasibleNodesToFind`` feasible
        nodes (the framework's :meth:`~Framework.find_feasible_rows` does the filtering)."""
        count = len(rows)
        to_find = num_feasible_nodes_to_find(
            fwk.profile.percentage_of_nodes_to_score
            if fwk.profile.percentage_of_nodes_to_score is not None
            else self.shared.config.percentage_of_nodes_to_score,
            count,
        )
        extenders = self.shared.extenders
        if not fwk.score_plugins and not any(e.config.filter_verb or e.config.prioritize_verb for e in extenders):
            to_find = min(to_find, 1)  # upstream: no scoring and no extender filters, the first feasible node
        start = self.next_start_node_index % count
        if start:
            rows = (self._ring[start:start + count] if rows.base is self._ring  # every row: a view, no copy
                    else np.concatenate((rows[start:], rows[:start])))
        feasible, processed = fwk.find_feasible_rows(state, pod, self.shared.snapshot, rows, to_find, nominated)
        self.next_start_node_index = (start + processed) % count
        state.evaluated_nodes = processed
        if state.record is not None and len(feasible):
            record_feasible(state.record, fwk, state, pod, self.shared.snapshot, rows[:processed], feasible)
        return feasible


class KeptCycle:
    """What one pod's cycle in a PodGroup's placement found, for the next member with the same signature
    (KEP-5598's promise: equal results on nodes in the same state): ``feasible`` (the snapshot rows that
    passed Filter, in the order filtered), ``evaluated`` (how many nodes Filter judged: every node of the
    placement, so that the rotating start stayed put; 0 when it stopped early), ``prescored`` (a clone of its CycleState after PreScore, or after Filter when
    one node was feasible), ``scores`` (its scoring of ``feasible``, None when not scored) and
    ``record`` (its attempt record, None when not recorded); ``nodes``, the NodeInfos of ``feasible`` (when
    scored); ``positions``, each feasible row's index in ``feasible``, and ``names``, their node names (an object
    array), both made by the first member reusing it; ``pre_filtered``, its PreFilter (see :class:`KeptPreFilter`),
    None when not kept."""

    __slots__ = ("feasible", "evaluated", "prescored", "scores", "record", "nodes", "positions", "names",
                 "pre_filtered")

    def __init__(self) -> None:
        self.feasible: np.ndarray = np.empty(0, dtype=np.int64)
        self.evaluated = 0
        self.prescored: CycleState | None = None
        self.scores: KeptScores | None = None
        self.record: AttemptRecord | None = None
        self.nodes: list[NodeInfo] = []
        self.positions: dict[int, int] | None = None
        self.names: np.ndarray | None = None
        self.pre_filtered: KeptPreFilter | None = None


class KeptPreFilter:
    """A pod's successful PreFilter in a PodGroup's placement, for the same pod in the next placements of the
    same cycle, which start from the same state (everything the placement before assumed and reserved undone):
    ``state``, a clone of the CycleState it left; ``result`` and ``narrowing``, its merged PreFilterResult and the
    plugins that narrowed it (as :meth:`~kubesched.core.framework.runtime.Framework.run_pre_filter` returns them).
    Kept only from a cycle neither recorded nor sampled for plugin metrics, and used only by one."""

    __slots__ = ("state", "result", "narrowing")

    def __init__(self, state: CycleState, result: PreFilterResult | None, narrowing: frozenset[str]):
        self.state = state
        self.result = result
        self.narrowing = narrowing


class BatchAttempt:
    """One pod's use of its profile's opportunistic ``batch``: the pod to sign (``signed``, signed only when
    the batch needs its signature), a node generation drawn before the cycle's snapshot (``since``) and the
    snapshot row the batch hinted (``hint``, None: no hint)."""

    __slots__ = ("batch", "signed", "since", "hint")

    def __init__(self, batch: OpportunisticBatch, signed: PodToSign, since: int):
        self.batch = batch
        self.signed = signed
        self.since = since
        self.hint: int | None = None


def _holds(rows: np.ndarray, row: int) -> bool:
    """Is ``row`` in the ascending array ``rows``?"""
    at = int(np.searchsorted(rows, row))
    return at < len(rows) and int(rows[at]) == row


class CycleError(Exception):
    """An Error status that aborts the scheduling cycle."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status
