"""The scheduler and its scheduling cycle (upstream ``pkg/scheduler``'s
``scheduler.go`` and ``schedule_one.go``).

:class:`Scheduler` builds a framework per profile, the queue and the cache,
and is put together from three parts, one module each as upstream keeps
them: its informer handlers (:mod:`.event_handlers`), the scheduling cycle
here - :meth:`Scheduler.schedule_one` pops one pod and runs its profile's
snapshot, PreFilter, Filter (nominated node first, percentageOfNodesToScore,
rotating start index), PostFilter when nothing fits,
PreScore/Score/NormalizeScore, host selection, assume, Reserve, Permit - and
the binding cycle (:mod:`.binding_cycle`).

The scheduler never waits itself: Permit waits are timers on the clock and a
driver (:mod:`kubesched.drivers.quiescence`) calls :meth:`step`.
"""

from __future__ import annotations

import collections
import logging
import random
import time
from concurrent.futures import Executor
from typing import Callable

import attrs
import numpy as np

from kubesched.core.dra.manager import DRAManager
from kubesched.core.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.core.observability import metrics
from kubesched.core.observability.decisions import DecisionLog
from kubesched.core.observability.events import EventRecorder

from ..api.core_v1 import Pod, PodCondition
from ..clock import Clock
from ..cluster.client import ApiError, ClusterClient, Conflict, NotFound
from ..cluster.informer import Informers
from ..framework.config import ConfigError, KubeSchedulerConfiguration
from ..framework.cycle_state import CycleState
from ..framework.decision import AttemptRecord, status_json
from ..framework.handle import Handle
from ..framework.nodeinfo import NodeInfo, PodInfo
from ..framework.registry import Registry
from ..framework.runtime import FilterError, Framework, ScoreError
from ..framework.snapshot import Snapshot
from ..framework.status import Code, Status
from ..framework.types import (
    PostFilterResult,
)
from .binding_cycle import BindingCycle, BindingWait, WaitingPod
from .cache import Cache
from .event_handlers import EventHandlers
from .queue import QueuedPodInfo, SchedulingQueue
from .recording import record_feasible, record_unschedulable

log = logging.getLogger(__name__)

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


@attrs.define
class SchedulingStats:
    """Counters a run reports: attempts by result, bindings, preemptions."""

    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bound: int = 0
    binding_failures: int = 0
    cycles: int = 0


class Scheduler(EventHandlers, BindingCycle):
    """kube-scheduler over a :class:`ClusterClient`.

    ``config`` is a loaded :class:`KubeSchedulerConfiguration`; ``registry``
    the plugins; ``seed`` fixes tie-breaking between equally scored nodes.
    Construction builds every profile's framework, so configuration errors
    surface here as :class:`ConfigError`.  Call :meth:`start`, then
    :meth:`step` from one thread.
    """

    def __init__(
        self,
        cluster: ClusterClient,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        clock: Clock,
        seed: int = 0,
        informers: Informers | None = None,
    ):
        self.cluster = cluster
        self.config = config
        self.clock = clock
        self.rng = random.Random(seed)
        self.informers = informers or Informers(cluster)
        self.cache = Cache(clock)
        self.snapshot = Snapshot()
        self.waiting_pods: dict[str, WaitingPod] = {}
        #: pod UID -> binding cycle waiting at PreBind
        self.binding_waits: dict[str, BindingWait] = {}
        self.stats = SchedulingStats()
        #: pod UID -> wall-clock start of its current attempt (scheduler_scheduling_attempt_duration_seconds)
        self.attempt_started: dict[str, float] = {}
        self.next_start_node_index = 0
        #: node name -> rank: equally scored nodes go to the lowest rank (None: at random).
        #: Not upstream; simulators that replay a paper's protocol need it.
        self.node_rank: dict[str, int] | None = None
        #: where the record of every scheduling attempt goes (None: not recorded)
        self.decisions: DecisionLog | None = None
        #: binding workers for the Bind plugins (None: Bind runs on the loop; see BindingCycle)
        self.bind_pool: Executor | None = None
        self.bind_wakeup: Callable[[], object] | None = None
        self.bind_results: collections.deque = collections.deque()
        self.binds_in_flight: dict[str, Pod] = {}
        self.profiles: dict[str, Framework] = {}
        self._dra: DRAManager | None = None
        for profile in config.profiles:
            handle = Handle(
                cluster=cluster,
                informers=self.informers,
                clock=clock,
                recorder=EventRecorder(cluster, clock, profile.scheduler_name),
                snapshot=lambda: self.snapshot,
                waiting_pods=self.waiting_pods,
                profile_name=profile.scheduler_name,
                activate=lambda pod: self.queue.activate(pod),
                dra=self.dra_manager,
                rng=self.rng,
                move_pods=lambda event, old, new: self.queue.move_all(event, old, new),
            )
            self.profiles[profile.scheduler_name] = Framework(profile, registry, handle)
        sorts = {(fw.queue_sort_name, repr(fw.profile.args_for(fw.queue_sort_name))) for fw in self.profiles.values()}
        if len(sorts) > 1:
            raise ConfigError("queueSort: all profiles must use the same queue sort plugin with the same args")
        first = next(iter(self.profiles.values()))
        self.queue = SchedulingQueue(
            clock=clock,
            less=first.less,
            pre_enqueue=lambda pod: self.profiles[pod.spec.scheduler_name].run_pre_enqueue(pod),
            hints={name: fw.events_to_register() for name, fw in self.profiles.items()},
            profile_of=lambda pod: pod.spec.scheduler_name,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
        )
        for fw in self.profiles.values():
            fw.handle.nominator = self.queue.nominator
        self._register_handlers()

    def dra_manager(self) -> DRAManager:
        """The shared :class:`DRAManager`, created (and its kinds watched) on first use."""
        if self._dra is None:
            self._dra = DRAManager(self.informers)
        return self._dra

    def use_rng(self, rng: random.Random) -> None:
        """Draw tie-breaks and every profile's ``handle.rng`` (plugins' random
        choices) from ``rng`` from now on: a driver that replays another
        program's random stream.  Not upstream."""
        self.rng = rng
        for fw in self.profiles.values():
            fw.handle.rng = rng

    # --- what drivers, reports and metrics read ------------------------------------------

    def node_infos(self) -> list[NodeInfo]:
        """The scheduler's view of every known node (bound and assumed pods,
        requested resources), by node name; entries without a Node left out."""
        return [info for _, info in sorted(self.cache.nodes.items()) if info.node is not None]

    def node_info(self, name: str) -> NodeInfo | None:
        """The scheduler's view of node ``name`` (None when it does not know the node)."""
        info = self.cache.nodes.get(name)
        return info if info is not None and info.node is not None else None

    def cache_sizes(self) -> dict[str, int]:
        """Upstream's scheduler_cache_size: ``nodes``, ``pods`` (bound) and ``assumed_pods``."""
        assumed = len(self.cache.assumed_pods())
        return {"nodes": self.cache.node_count(), "pods": self.cache.pod_count() - assumed, "assumed_pods": assumed}

    def current_snapshot(self) -> Snapshot:
        """The snapshot brought up to date with the cache, as a scheduling cycle starts with it."""
        self.cache.update_snapshot(self.snapshot)
        return self.snapshot

    def queued(self, pod: Pod) -> QueuedPodInfo | None:
        """The queue's entry for ``pod`` (attempts, gating plugin, unschedulable plugins), or None."""
        return self.queue.get(pod)

    def pending_pods(self) -> list[QueuedPodInfo]:
        """Every pod in the scheduling queue (activeQ, backoffQ, unschedulable pods)."""
        return self.queue.pending_pods()

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue (``active``, ``backoff``, ``unschedulable``, ``gated``): upstream's scheduler_pending_pods."""
        return self.queue.pending_counts()

    def on_activate(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a pod becomes active (a daemon wakes its loop with it)."""
        self.queue.on_activate = callback

    def in_flight(self) -> int:
        """Binding cycles not finished: pods waiting at Permit, at a PreBind wait, or in Bind on a worker."""
        return len(self.waiting_pods) + len(self.binding_waits) + len(self.binds_in_flight)

    def pre_bind_waits(self) -> int:
        """Binding cycles parked at a PreBind wait (polling a condition on the clock)."""
        return len(self.binding_waits)

    def abort_in_flight(self, message: str) -> int:
        """Fail every binding cycle that has not finished (Permit waits are
        rejected, PreBind waits aborted): Unreserve, forget the assumed pod,
        requeue it.  Returns how many there were."""
        waiting = list(self.waiting_pods.values())
        for pod in waiting:
            pod.reject("", message)
        return len(waiting) + self.abort_binding_waits(message)

    def score_nodes(self, pod: Pod) -> dict[str, dict[str, int]]:
        """What each Score plugin (weighted, after NormalizeScore) gives every
        feasible node for ``pod`` in the current state, without scheduling it:
        ``{node: {plugin: score}}`` (empty when no node fits).  Raises
        :class:`FilterError`/:class:`ScoreError` as a cycle would."""
        framework = self.profiles[pod.spec.scheduler_name or "default-scheduler"]
        state = CycleState()
        snapshot = self.current_snapshot()
        try:
            rows = self.find_nodes_that_fit(framework, state, QueuedPodInfo(pod, self.clock.now()))
        except FitError:
            return {}
        nodes = [snapshot.nodes[row] for row in rows]
        status = framework.run_pre_score(state, pod, nodes, np.asarray(rows))
        if status is not None:
            raise ScoreError(status)
        _, per_plugin = framework.run_score(state, pod, snapshot.table, np.asarray(rows), nodes)
        return {info.name: {name: int(scores[i]) for name, scores in per_plugin.items()} for i, info in enumerate(nodes)}

    # --- the loop ------------------------------------------------------------------------

    def start(self) -> None:
        """List and watch the cluster (the existing objects arrive on the next step)."""
        self.informers.start()
        self.informers.pump()

    def step(self) -> bool:
        """Finish the binds that came back from binding workers, deliver pending
        events and due timers, then schedule one pod.  Returns False when
        there was nothing to schedule."""
        self.finish_binds()
        self.informers.pump()
        self.clock.run_due()
        if self.informers.pending():
            self.informers.pump()
        if not self.queue.has_active():
            return False
        self.schedule_one()
        return True

    # --- scheduling cycle ----------------------------------------------------------------

    def schedule_one(self) -> None:
        """Upstream ``ScheduleOne``: one pod through the scheduling cycle and,
        unless Permit makes it wait, the binding cycle."""
        info = self.queue.pop()
        if info is None:
            return
        pod = info.pod
        fwk = self.profiles.get(pod.spec.scheduler_name)
        if fwk is None or pod.metadata.deletion_timestamp is not None or self.cache.is_assumed(pod):
            self.queue.done(pod)
            return
        self.stats.cycles += 1
        self.attempt_started[pod.metadata.uid] = time.perf_counter()
        state = CycleState()
        decisions = self.decisions
        if decisions is not None and decisions.wants(pod.key):
            state.record = AttemptRecord(pod.key, pod.metadata.uid, info.attempts, self.clock.now(),
                                         fwk.profile_name, moved_by=info.moved_by)
        try:
            node_name = self.schedule_pod(fwk, state, info)
            metrics.SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - self.attempt_started[pod.metadata.uid])
        except FitError as fit:
            # None leaves status.nominatedNodeName as it is; a string (even "") replaces it
            nominated: str | None = "" if fit.num_all_nodes == 0 else None
            if fwk.post_filter_plugins and fit.num_all_nodes:
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
            self.handle_failure(fwk, info, REASON_UNSCHEDULABLE, message, rejectors, nominated, pending)
            return
        except _CycleError as err:
            self.stats.errors += 1
            if state.record is not None:
                self._write_record(state, "Error", err.status.message())
            self.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, err.status.message(), set(), "")
            return

        assumed = attrs.evolve(pod, spec=attrs.evolve(pod.spec, node_name=node_name))
        self.cache.assume_pod(assumed, info.pod_info)
        self.queue.nominator.delete(pod)

        status = fwk.run_reserve(state, assumed, node_name)
        if status is not None:
            self._write_record(state, "Error", status.message(), node_name, failed_at=("Reserve", status))
            self._undo_assume(fwk, state, assumed, node_name)
            self._fail_status(fwk, info, status)
            return
        status, waits = fwk.run_permit(state, assumed, node_name)
        if status is not None:
            self._write_record(state, status.code.name.title().replace("_", ""), status.message(), node_name,
                               failed_at=("Permit", status))
            self._undo_assume(fwk, state, assumed, node_name)
            self._fail_status(fwk, info, status)
            return
        self._write_record(state, "WaitingOnPermit" if waits else "Scheduled", "", node_name)
        self.stats.scheduled += 1
        if waits:
            self.waiting_pods[pod.metadata.uid] = WaitingPod(
                self, assumed, waits,
                lambda permit: self.binding_cycle(fwk, state, info, assumed, node_name, permit),
            )
            return
        self.binding_cycle(fwk, state, info, assumed, node_name, None)

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

    def schedule_pod(self, fwk: Framework, state: CycleState, info: QueuedPodInfo) -> str:
        """Upstream ``SchedulePod``: the name of the chosen node.  Raises
        :class:`FitError` when no node fits."""
        pod = info.pod
        self.cache.update_snapshot(self.snapshot)
        num_nodes = len(self.snapshot)
        if num_nodes == 0:
            raise FitError(pod, 0, Diagnosis())
        feasible = self.find_nodes_that_fit(fwk, state, info)
        if len(feasible) == 1:
            return self.snapshot.nodes[feasible[0]].name
        nodes = self.snapshot.table.info_array[feasible].tolist()
        status = fwk.run_pre_score(state, pod, nodes, feasible)
        if status is not None:
            raise _CycleError(status)
        try:
            total, _ = fwk.run_score(state, pod, self.snapshot.table, feasible, nodes)
        except ScoreError as err:
            raise _CycleError(err.status) from None
        chosen = self.select_host(total, feasible)
        if state.record is not None:
            state.record.scored(self.snapshot.table.names[feasible], total, chosen)
        return nodes[chosen].name

    def select_host(self, total: np.ndarray, rows: np.ndarray) -> int:
        """Index of the highest total score (``rows``: the snapshot rows
        scored); ties broken uniformly at random (upstream), or by the lowest
        :attr:`node_rank` when one is set."""
        best = np.flatnonzero(total == total.max())
        if len(best) == 1:
            return int(best[0])
        if self.node_rank is not None:
            ranks = self._row_ranks(self.node_rank)[np.asarray(rows)[best]]
            return int(best[np.argmin(ranks)])
        return int(best[self.rng.randrange(len(best))])

    def _row_ranks(self, rank: dict[str, int]) -> np.ndarray:
        """``rank`` (:attr:`node_rank`) per snapshot row (nodes without a rank last)."""
        return self.snapshot.table.column(f"rank/{id(rank)}", lambda info: rank.get(info.name, len(rank)))

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState, info: QueuedPodInfo) -> np.ndarray:
        """Upstream ``findNodesThatFitPod``: PreFilter, the nominated node first,
        then Filter.  Returns feasible snapshot rows; raises :class:`FitError`."""
        pod = info.pod
        snapshot = self.snapshot
        result, status, rejectors = fwk.run_pre_filter(state, pod, snapshot.nodes)
        if status is not None:
            if status.code == Code.ERROR:
                raise _CycleError(status)
            diagnosis = Diagnosis(
                node_status=NodeToStatus(snapshot.index, [status] * len(snapshot)),
                pre_filter_msg=status.message(),
            )
            if status.code == Code.PENDING:
                diagnosis.pending_plugins = rejectors
            else:
                diagnosis.unschedulable_plugins = rejectors
            raise FitError(pod, len(snapshot), diagnosis)

        nominator = self.queue.nominator
        nominated = {name: pods for name in nominator.nodes() if (pods := nominator.pods_to_respect(pod, name))}
        try:
            nominated_name = pod.status.nominated_node_name
            if nominated_name:
                row = snapshot.index.get(nominated_name)
                if row is not None:
                    node_info = snapshot.nodes[row]
                    pods = nominated.get(nominated_name, [])
                    if fwk.run_filter_with_nominated_pods(state, pod, node_info, pods) is None:
                        if state.record is not None:
                            state.record.filtered(1, 1, [])
                        return np.array([row])

            if result is not None and result.node_names is not None:
                rows = np.array(sorted(snapshot.index[n] for n in result.node_names if n in snapshot.index),
                                dtype=np.int64)
            else:
                rows = np.arange(len(snapshot), dtype=np.int64)
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, rows, nominated) if len(rows) else rows
            if len(feasible) == 0:
                raise FitError(pod, len(snapshot), fwk.diagnose(state, pod, snapshot, rows, rejectors, nominated))
        except FilterError as err:
            raise _CycleError(err.status) from None
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
    ) -> None:
        """Upstream ``handleSchedulingFailure``: FailedScheduling event, the pod's
        PodScheduled=False condition, back to the queue.  ``nominated_node``:
        None keeps the pod's nomination; a node name nominates the pod there
        (the queue's nominator and ``status.nominatedNodeName``); "" clears it."""
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
        updated = attrs.evolve(pod, status=attrs.evolve(pod.status, conditions=conditions, nominated_node_name=nominated))
        try:
            self.cluster.update_status(updated)
        except (NotFound, Conflict):
            pass
        except ApiError:
            pass

def one_node_fit_message(pod: Pod, status: Status) -> str:
    """A rejection after the node was chosen (Reserve, Permit, waiting on Permit,
    PreBind) reads as a FitError over that one node, as upstream:
    ``0/1 nodes are available: 1 <reason>.``"""
    return FitError(pod, 1, Diagnosis(node_status={"": status})).message()


class _CycleError(Exception):
    """An Error status that aborts the scheduling cycle."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


