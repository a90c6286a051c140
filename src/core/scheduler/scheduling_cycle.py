"""The scheduling cycle of one pod (upstream ``schedule_one.go``'s ``schedulingCycle``,
``schedulePod``, ``findNodesThatFitPod``, ``selectHost`` and ``handleSchedulingFailure``).

:meth:`SchedulingCycle.scheduling_cycle` takes a popped pod through its
profile's snapshot, PreFilter, Filter (nominated node first,
percentageOfNodesToScore, rotating start index), PostFilter when nothing
fits, PreScore/Score/NormalizeScore, host selection, assume, Reserve and
Permit, and hands back where the binding cycle starts; a failure puts the
pod back in the queue with kube-scheduler's reason.  :class:`SchedulingCycle`
is a part of :class:`~kubesched.core.scheduler.scheduler.Scheduler`.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

import attrs
import numpy as np

from kubesched.core.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.core.observability import metrics

from ..api.core_v1 import Pod, PodCondition
from ..api.meta import evolve
from ..cluster.client import ApiError
from ..cluster.patch import patch_status
from ..framework.attempt_record import AttemptRecord, status_json
from ..framework.cycle_state import CycleState
from ..framework.nodeinfo import PodInfo
from ..framework.runtime import FilterError, Framework, ScoreError
from ..framework.status import Code, Status
from ..framework.types import PostFilterResult
from .queue import QueuedPodInfo
from .recording import record_feasible, record_unschedulable

if TYPE_CHECKING:
    from ..clock import Clock
    from ..cluster.client import ClusterClient
    from ..cluster.informer import Informers
    from ..framework.config import KubeSchedulerConfiguration
    from ..framework.snapshot import Snapshot
    from ..observability.decision_log import DecisionLog
    from .cache import Cache
    from .queue import SchedulingQueue
    from .stats import SchedulingStats

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

#: Pod condition reasons, as upstream.
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


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


@attrs.frozen
class ScheduleResult:
    """Where a scheduling cycle left a pod that fits: ``assumed`` (the pod with
    ``spec.nodeName`` set, in the cache), ``node_name``, and ``waits`` (Permit
    plugin -> timeout in seconds; empty when the binding cycle may start now)."""

    assumed: Pod
    node_name: str
    waits: dict[str, float]


class SchedulingCycle:
    """The scheduling cycle of the :class:`Scheduler` (a part of it: it uses the
    scheduler's cache, snapshot, queue, clock, stats and decision log)."""

    cluster: ClusterClient
    config: KubeSchedulerConfiguration
    clock: Clock
    rng: random.Random
    informers: Informers
    cache: Cache
    snapshot: Snapshot
    queue: SchedulingQueue
    stats: SchedulingStats
    attempt_started: dict[str, float]
    next_start_node_index: int
    node_rank: dict[str, int] | None
    decisions: DecisionLog | None

    if TYPE_CHECKING:  # the binding cycle's, in binding_cycle.py
        def _undo_assume(self, fwk: Framework, state: CycleState, assumed: Pod, node_name: str) -> None: ...

    def new_cycle_state(self, fwk: Framework, info: QueuedPodInfo) -> CycleState:
        """A fresh CycleState for ``info``'s attempt, recording it when decisions are recorded."""
        state = CycleState()
        pod = info.pod
        decisions = self.decisions
        if decisions is not None and decisions.wants(pod.key):
            state.record = AttemptRecord(pod.key, pod.metadata.uid, info.attempts, self.clock.now(),
                                         fwk.profile_name, moved_by=info.moved_by)
        return state

    def scheduling_cycle(self, fwk: Framework, state: CycleState, info: QueuedPodInfo) -> ScheduleResult | None:
        """Upstream ``schedulingCycle``: find a node for ``info``'s pod, assume
        it there, Reserve and Permit.  Returns where the binding cycle starts,
        or None when the attempt failed (the pod is back in the queue with its
        reason; PostFilter ran when no node fit)."""
        pod = info.pod
        self.stats.cycles += 1
        self.attempt_started[pod.metadata.uid] = time.perf_counter()
        try:
            node_name = self.schedule_pod(fwk, state, info)
            metrics.SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - self.attempt_started[pod.metadata.uid])
        except FitError as fit:
            self.handle_fit_error(fwk, state, info, fit, post_filter=True)
            return None
        except CycleError as err:
            self.handle_cycle_error(fwk, state, info, err.status)
            return None
        assumed, status = self.assume_and_reserve(fwk, state, info, node_name)
        if status is not None:
            self._write_record(state, "Error", status.message(), node_name, failed_at=("Reserve", status))
            self._fail_status(fwk, info, status)
            return None
        status, waits = fwk.run_permit(state, assumed, node_name)
        if status is not None:
            self._write_record(state, status.code.name.title().replace("_", ""), status.message(), node_name,
                               failed_at=("Permit", status))
            self._undo_assume(fwk, state, assumed, node_name)
            self._fail_status(fwk, info, status)
            return None
        self._write_record(state, "WaitingOnPermit" if waits else "Scheduled", "", node_name)
        self.stats.scheduled += 1
        return ScheduleResult(assumed, node_name, waits)

    def assume_and_reserve(self, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                           node_name: str) -> tuple[Pod, Status | None]:
        """Assume the pod on ``node_name`` in the cache (its nomination ends) and
        run Reserve.  Returns the assumed pod and Reserve's failure (None: it
        holds its node); after a failure the pod is already unreserved and
        forgotten."""
        pod = info.pod
        assumed = evolve(pod, spec=evolve(pod.spec, node_name=node_name))
        self.cache.assume_pod(assumed, info.pod_info)
        self.queue.nominator.delete(pod)
        status = fwk.run_reserve(state, assumed, node_name)
        if status is not None:
            self._undo_assume(fwk, state, assumed, node_name)
        return assumed, status

    def handle_fit_error(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, fit: FitError,
                         post_filter: bool, nominated: str | None = None, requeue: bool = True) -> None:
        """No node fits ``info``'s pod: PostFilter (when ``post_filter`` and the
        profile has any) may nominate a node; then the failure is recorded and
        the pod handed back with upstream's FitError message.  ``nominated``:
        the nomination to keep when PostFilter does not run (None: as it is);
        ``requeue``: False for a PodGroup's member (its group is requeued once)."""
        pod = info.pod
        # None leaves status.nominatedNodeName as it is; a string (even "") replaces it
        if fit.num_all_nodes == 0:
            nominated = ""
        elif post_filter and fwk.post_filter_plugins:
            result, status = fwk.run_post_filter(state, pod, fit.diagnosis.node_status)
            if status is not None and status.reasons:
                fit.diagnosis.post_filter_msg = status.message()
            if isinstance(result, PostFilterResult):
                nominated = result.nominated_node_name
        self.stats.unschedulable += 1
        rejectors = fit.diagnosis.unschedulable_plugins | fit.diagnosis.pending_plugins
        pending = bool(fit.diagnosis.pending_plugins) and not fit.diagnosis.unschedulable_plugins
        message = fit.message()
        if state.record is not None:
            if fit.num_all_nodes:
                record_unschedulable(state.record, fwk, state, pod, self.snapshot, fit.diagnosis.node_status)
            self._write_record(state, REASON_UNSCHEDULABLE, message, nominated=nominated)
        self.handle_failure(fwk, info, REASON_UNSCHEDULABLE, message, rejectors, nominated, pending, requeue)

    def handle_cycle_error(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, status: Status) -> None:
        """An Error status aborted the attempt: recorded, and the pod back to backoff with SchedulerError."""
        self.stats.errors += 1
        if state.record is not None:
            self._write_record(state, "Error", status.message())
        self.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, status.message(), set(), "")

    def _write_record(self, state: CycleState, result: str, message: str, node_name: str = "",
                      failed_at: tuple[str, Status] | None = None, nominated: str | None = None) -> None:
        """Finish the attempt's record (when decisions are recorded) and hand it to the log."""
        record = state.record
        if record is None or self.decisions is None:
            return
        record.result, record.message, record.node = result, message, node_name
        if failed_at is not None:
            record.failed_at = {"extensionPoint": failed_at[0], **(status_json(failed_at[1]) or {})}
        if nominated:
            record.post_filter = {**(record.post_filter or {}), "nominatedNodeName": nominated}
        self.decisions.write(record.to_json())

    def schedule_pod(self, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                     within: np.ndarray | None = None) -> str:
        """Upstream ``SchedulePod``: the name of the chosen node, among the
        snapshot rows ``within`` a placement when given (a PodGroup cycle).
        Raises :class:`FitError` when no node fits, :class:`CycleError` on an Error."""
        pod = info.pod
        self.cache.update_snapshot(self.snapshot)
        num_nodes = len(self.snapshot) if within is None else len(within)
        if num_nodes == 0:
            raise FitError(pod, 0, Diagnosis())
        feasible = self.find_nodes_that_fit(fwk, state, info, within)
        if len(feasible) == 1:
            return self.snapshot.nodes[feasible[0]].name
        nodes = self.snapshot.table.info_array[feasible].tolist()
        status = fwk.run_pre_score(state, pod, nodes, feasible)
        if status is not None:
            raise CycleError(status)
        try:
            total, _ = fwk.run_score(state, pod, self.snapshot.table, feasible, nodes)
        except ScoreError as err:
            raise CycleError(err.status) from None
        chosen = self.select_host(total, feasible)
        if state.record is not None:
            state.record.scored(self.snapshot.table.names[feasible], total, chosen)
        return nodes[chosen].name

    def select_host(self, total: np.ndarray, rows: np.ndarray) -> int:
        """Index of the highest total score (``rows``: the snapshot rows
        scored); ties broken uniformly at random (upstream), or by the lowest
        :attr:`node_rank` when one is set."""
        best = np.flatnonzero(total == np.maximum.reduce(total))  # the ufunc itself: .max() wraps it in Python
        if len(best) == 1:
            return int(best[0])
        if self.node_rank is not None:
            ranks = self._row_ranks(self.node_rank)[np.asarray(rows)[best]]
            return int(best[np.argmin(ranks)])
        return int(best[self.rng.randrange(len(best))])

    def _row_ranks(self, rank: dict[str, int]) -> np.ndarray:
        """``rank`` (:attr:`node_rank`) per snapshot row (nodes without a rank last)."""
        return self.snapshot.table.column(f"rank/{id(rank)}", lambda info: rank.get(info.name, len(rank)))

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                            within: np.ndarray | None = None) -> np.ndarray:
        """Upstream ``findNodesThatFitPod``: PreFilter, the nominated node first,
        then Filter, over the snapshot or the rows ``within`` a placement.
        Returns feasible snapshot rows; raises :class:`FitError`."""
        pod = info.pod
        snapshot = self.snapshot
        num_nodes = len(snapshot) if within is None else len(within)
        result, status, rejectors = fwk.run_pre_filter(state, pod, snapshot.nodes)
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

        nominator = self.queue.nominator
        nominated = {name: pods for name in nominator.nodes() if (pods := nominator.pods_to_respect(pod, name))}
        try:
            nominated_name = pod.status.nominated_node_name
            if nominated_name:
                row = snapshot.index.get(nominated_name)
                if row is not None and (within is None or _holds(within, row)):
                    node_info = snapshot.nodes[row]
                    pods = nominated.get(nominated_name, [])
                    if fwk.run_filter_with_nominated_pods(state, pod, node_info, pods) is None:
                        if state.record is not None:
                            state.record.filtered(1, 1, [])
                        return np.array([row])

            if result is not None and result.node_names is not None:
                rows = np.array(sorted(snapshot.index[n] for n in result.node_names if n in snapshot.index),
                                dtype=np.int64)
                if within is not None:
                    rows = np.intersect1d(rows, within, assume_unique=True)
            else:
                rows = np.arange(len(snapshot), dtype=np.int64) if within is None else within
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, rows, nominated) if len(rows) else rows
            if len(feasible) == 0:
                raise FitError(pod, num_nodes, fwk.diagnose(state, pod, snapshot, rows, rejectors, nominated, within))
        except FilterError as err:
            raise CycleError(err.status) from None
        return feasible

    def find_nodes_that_pass_filters(self, fwk: Framework, state: CycleState, pod: Pod, rows: np.ndarray,
                                     nominated: dict[str, list[PodInfo]]) -> np.ndarray:
        """Upstream ``findNodesThatPassFilters``: filter ``rows`` starting at the
        rotating start index, stopping after ``numFeasibleNodesToFind`` feasible
        nodes (the framework's :meth:`~Framework.find_feasible_rows` does the filtering)."""
        count = len(rows)
        to_find = num_feasible_nodes_to_find(
            fwk.profile.percentage_of_nodes_to_score
            if fwk.profile.percentage_of_nodes_to_score is not None
            else self.config.percentage_of_nodes_to_score,
            count,
        )
        if not fwk.score_plugins:
            to_find = min(to_find, 1)
        start = self.next_start_node_index % count
        if start:
            rows = np.concatenate((rows[start:], rows[:start]))
        feasible, processed = fwk.find_feasible_rows(state, pod, self.snapshot, rows, to_find, nominated)
        self.next_start_node_index = (start + processed) % count
        if state.record is not None and len(feasible):
            record_feasible(state.record, fwk, state, pod, self.snapshot, rows[:processed], feasible)
        return feasible

    # --- failure -------------------------------------------------------------------------

    def _fail_status(self, fwk: Framework, info: QueuedPodInfo, status: Status) -> None:
        """A failure after a node was chosen (Reserve, Permit, binding): the pod's
        nomination is cleared, as upstream's ``clearNominatedNode``."""
        if status.code == Code.ERROR:
            self.stats.errors += 1
            self.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, status.message(), set(), "")
        else:
            self.stats.unschedulable += 1
            self.handle_failure(fwk, info, REASON_UNSCHEDULABLE, one_node_fit_message(info.pod, status),
                                {status.plugin} if status.plugin else set(), "", pending=status.code == Code.PENDING)

    def handle_failure(
        self,
        fwk: Framework,
        info: QueuedPodInfo,
        reason: str,
        message: str,
        rejectors: set[str],
        nominated_node: str | None = None,
        pending: bool = False,
        requeue: bool = True,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: FailedScheduling event, the pod's
        PodScheduled=False condition, back to the queue (unless ``requeue`` is
        False: a PodGroup's member, whose group goes back once).
        ``nominated_node``: None keeps the pod's nomination; a node name
        nominates the pod there (the queue's nominator and
        ``status.nominatedNodeName``); "" clears it."""
        pod = info.pod
        started = self.attempt_started.pop(pod.metadata.uid, None)
        if started is not None:
            result = metrics.UNSCHEDULABLE if reason == REASON_UNSCHEDULABLE else metrics.ERROR
            metrics.observe_attempt(result, fwk.profile_name, time.perf_counter() - started)
        fwk.handle.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", message)
        current = self.informers.get("Pod", pod.key)
        if current is None or current.metadata.uid != pod.metadata.uid or current.spec.node_name:
            self.queue.done(pod)
            return
        if requeue:
            self.queue.add_unschedulable(info, rejectors, pending)
        if nominated_node is not None:
            self.queue.nominator.add(info.pod_info, nominated_node)
        self._update_pod_status(current, reason, message, nominated_node)

    def _update_pod_status(self, pod: Pod, reason: str, message: str, nominated_node: str | None) -> None:
        condition = PodCondition(
            type="PodScheduled", status="False", reason=reason, message=message,
            last_transition_time=self.clock.now(),
        )
        existing = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
        same = existing is not None and (existing.status, existing.reason, existing.message) == ("False", reason, message)
        nominated = pod.status.nominated_node_name if nominated_node is None else nominated_node
        if same and nominated == pod.status.nominated_node_name:
            return
        conditions = tuple(c for c in pod.status.conditions if c.type != "PodScheduled") + (condition,)
        updated = evolve(pod, status=evolve(pod.status, conditions=conditions, nominated_node_name=nominated))
        try:
            patch_status(self.cluster, pod, updated.status)  # upstream's util.PatchPodStatus
        except ApiError:
            pass  # gone, replaced or refused: the next attempt writes it again


def _holds(rows: np.ndarray, row: int) -> bool:
    """Is ``row`` in the ascending array ``rows``?"""
    at = int(np.searchsorted(rows, row))
    return at < len(rows) and int(rows[at]) == row


def one_node_fit_message(pod: Pod, status: Status) -> str:
    """A rejection after the node was chosen (Reserve, Permit, waiting on Permit,
    PreBind) reads as a FitError over that one node, as upstream:
    ``0/1 nodes are available: 1 <reason>.``"""
    return FitError(pod, 1, Diagnosis(node_status={"": status})).message()


class CycleError(Exception):
    """An Error status that aborts the scheduling cycle."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status
