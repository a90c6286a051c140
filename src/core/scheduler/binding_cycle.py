"""The binding cycle: waiting on Permit, PreBind (with waits), Bind, PostBind
(upstream ``schedule_one.go``'s ``bindingCycle``).

Any failure unreserves in reverse order, forgets the assumed pod, requeues
it and tells the queue that the room it held is free again.  The scheduler
never blocks: a Permit wait (a :class:`~kubesched.core.framework.waiting_pods.WaitingPod`) and a PreBind wait
(:class:`BindingWait`) are timers on the clock, and a daemon runs PreBind and
Bind on binding workers (what the plugins change of the state the scheduling
cycle reads comes back to the loop through ``Handle.on_loop``).
:class:`BindingCycle` is a part of
:class:`~kubesched.core.scheduler.scheduler.Scheduler`.
"""

from __future__ import annotations

import collections
import logging
import time
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Callable

import attrs

from kubesched.core.observability import metrics

from ..api.core_v1 import Pod
from ..clock import Clock, Timer
from ..framework.cycle_state import CycleState
from ..framework.handle import calls_for_the_loop
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from ..framework.types import ASSIGNED_POD, ActionType, ClusterEvent, PreBindWait
from ..framework.waiting_pods import WaitingPod
from .cache import CacheError
from .queue import QueuedPodInfo
from .recording import binding_record

if TYPE_CHECKING:
    from ..observability.decision_log import DecisionLog
    from .cache import Cache
    from .queue import SchedulingQueue
    from .scheduling_cycle import ScheduleResult
    from .stats import SchedulingStats

log = logging.getLogger(__name__)

#: marks a call a binding worker queued for the loop (Handle.on_loop) in ``bind_results``
_LOOP_CALL = object()


@attrs.define
class BindingWait:
    """A binding cycle parked at a PreBind plugin's :class:`PreBindWait`:
    the poll ``timer`` and what the cycle needs to go on or fail."""

    timer: Timer
    fwk: Framework
    state: CycleState
    info: QueuedPodInfo
    assumed: Pod
    node_name: str


class BindingCycle:
    """The binding cycle of the :class:`Scheduler` (a part of it: it uses the
    scheduler's cache, queue, clock, stats and failure handling)."""

    cache: Cache
    queue: SchedulingQueue
    clock: Clock
    stats: SchedulingStats
    attempt_started: dict[str, float]
    waiting_pods: dict[str, WaitingPod]
    binding_waits: dict[str, BindingWait]
    decisions: DecisionLog | None
    #: where PreBind and Bind plugins run (None: on the scheduling loop, as simulations need for determinism)
    bind_pool: Executor | None
    #: called from a binding worker when a Bind finished (wakes the daemon's loop)
    bind_wakeup: Callable[[], object] | None
    #: outcomes of Bind plugins run on workers, for :meth:`finish_binds`
    bind_results: collections.deque
    #: pod UID -> assumed pod whose Bind runs on a worker
    binds_in_flight: dict[str, Pod]

    def _record_binding(self, state: CycleState, node_name: str, status: Status | None) -> None:
        """The binding cycle's outcome, when the attempt is being recorded."""
        if state.record is not None and self.decisions is not None:
            self.decisions.write(binding_record(state.record, self.clock.now(), node_name, status))

    def _undo_assume(self, fwk: Framework, state: CycleState, assumed: Pod, node_name: str) -> None:
        """Unreserve and forget the assumed pod (one that its informer event
        already confirmed as bound - a Bind that failed after the API server
        bound it, seen first on a binding worker - stays)."""
        fwk.run_unreserve(state, assumed, node_name)
        try:
            self.cache.forget_pod(assumed)
        except CacheError as err:
            log.warning("not forgetting a pod the cluster already bound", extra={"pod": assumed.key, "err": str(err)})

    if TYPE_CHECKING:  # the scheduling cycle's failure handling, in scheduler.py
        def _fail_status(self, fwk: Framework, info: QueuedPodInfo, status: Status) -> None: ...

    def start_binding(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, result: ScheduleResult) -> None:
        """After a scheduling cycle that placed the pod: wait on Permit (a
        :class:`WaitingPod`) or go straight into the binding cycle."""
        assumed, node_name = result.assumed, result.node_name
        if result.waits:
            WaitingPod(assumed, result.waits, self.clock, self.waiting_pods,
                       lambda permit: self.binding_cycle(fwk, state, info, assumed, node_name, permit))
            return
        self.binding_cycle(fwk, state, info, assumed, node_name, None)

    def binding_cycle(
        self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod, node_name: str,
        permit: Status | None,
    ) -> None:
        """Wait-on-Permit result, PreBind, Bind, PostBind; on failure Unreserve,
        forget the assumed pod, requeue it and tell the queue resources were freed."""
        if permit is not None:
            self._binding_failed(fwk, state, info, assumed, node_name, permit)
            return
        self.queue.done(assumed)
        self._pre_bind_from(fwk, state, info, assumed, node_name, 0)

    def _pre_bind_from(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod,
                       node_name: str, start: int) -> None:
        """PreBind plugins from ``start`` on, then Bind (on a binding worker
        when there is a pool); a :class:`PreBindWait` parks the binding cycle
        in :attr:`binding_waits` and polls on the clock."""
        pool = self.bind_pool
        if pool is not None:
            self._bind_elsewhere(pool, fwk, state, info, assumed, node_name, start)
            return
        status, wait, index = fwk.run_pre_bind(state, assumed, node_name, start)
        if wait is not None:
            self._park(fwk, state, info, assumed, node_name, wait, index)
            return
        if status is None:
            status = fwk.run_bind(state, assumed, node_name)
        self._finish_binding(fwk, state, info, assumed, node_name, status)

    def _park(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod, node_name: str,
              wait: PreBindWait, index: int) -> None:
        """Poll PreBind plugin ``index``'s ``wait`` on the clock until it is
        over (then PreBind goes on after it), fails, or times out."""
        deadline = self.clock.now() + wait.timeout

        def poll() -> None:
            if self.binding_waits.pop(assumed.metadata.uid, None) is None:
                return  # aborted meanwhile
            answer = wait.check()
            if answer is not None and answer.code == Code.WAIT:
                if self.clock.now() >= deadline:
                    self._binding_failed(fwk, state, info, assumed, node_name, Status(
                        Code.ERROR, (f"running PreBind plugin \"{fwk.pre_bind_plugins[index][0]}\": {wait.message}",)))
                    return
                self.binding_waits[assumed.metadata.uid] = BindingWait(
                    self.clock.call_later(wait.interval, poll), fwk, state, info, assumed, node_name)
                return
            failed = fwk.pre_bind_status(index, answer)
            if failed is not None:
                self._binding_failed(fwk, state, info, assumed, node_name, failed)
            else:
                self._pre_bind_from(fwk, state, info, assumed, node_name, index + 1)

        self.binding_waits[assumed.metadata.uid] = BindingWait(
            self.clock.call_later(wait.interval, poll), fwk, state, info, assumed, node_name)

    def _bind_elsewhere(self, pool: Executor, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                        assumed: Pod, node_name: str, start: int) -> None:
        """Run PreBind (from plugin ``start``) and Bind on a binding worker;
        what the plugins hand to :meth:`Handle.on_loop` and then the outcome
        come back to the scheduling loop in that order (:meth:`finish_binds`),
        which alone touches the cache, the queue and the state the scheduling
        cycle reads.  Upstream runs each binding cycle in a goroutine."""
        uid = assumed.metadata.uid
        self.binds_in_flight[uid] = assumed
        results = self.bind_results

        def bind() -> None:
            wait, index = None, 0
            with calls_for_the_loop(lambda call: results.append((_LOOP_CALL, call))):
                try:
                    status, wait, index = fwk.run_pre_bind(state, assumed, node_name, start)
                    if wait is None and status is None:
                        status = fwk.run_bind(state, assumed, node_name)
                except Exception as err:  # noqa: BLE001 - a failing plugin fails the binding, as upstream
                    status, wait = Status(Code.ERROR, (f"running PreBind or Bind plugins: {err}",), error=err), None
            results.append((fwk, state, info, assumed, node_name, status, wait, index))
            if self.bind_wakeup is not None:
                self.bind_wakeup()

        pool.submit(bind)

    def finish_binds(self) -> int:
        """On the scheduling loop's thread: make the calls binding workers
        queued for it and finish the binding cycles that came back (a PreBind
        wait is parked here, on the loop's clock); returns how many came back."""
        done = 0
        while self.bind_results:
            entry = self.bind_results.popleft()
            if entry[0] is _LOOP_CALL:
                entry[1]()
                continue
            fwk, state, info, assumed, node_name, status, wait, index = entry
            self.binds_in_flight.pop(assumed.metadata.uid, None)
            if wait is not None:
                self._park(fwk, state, info, assumed, node_name, wait, index)
            else:
                self._finish_binding(fwk, state, info, assumed, node_name, status)
            done += 1
        return done

    def _finish_binding(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod,
                        node_name: str, status: Status | None) -> None:
        """What follows Bind: the bound pod's bookkeeping, event and PostBind, or the failure."""
        if status is not None and status.code == Code.SKIP:
            status = Status(Code.ERROR, ("no bind plugin bound the pod",))
        if status is not None:
            self._binding_failed(fwk, state, info, assumed, node_name, status)
            return
        self.cache.finish_binding(assumed)
        self.stats.bound += 1
        self._record_binding(state, node_name, None)
        log.debug("Successfully bound pod to node", extra={"pod": assumed.key, "node": node_name})
        started = self.attempt_started.pop(assumed.metadata.uid, None)
        if started is not None:
            metrics.observe_attempt(metrics.SCHEDULED, fwk.profile_name, time.perf_counter() - started)
        first = info.initial_attempt_timestamp if info.initial_attempt_timestamp is not None else info.timestamp
        metrics.observe_bound(info.attempts, self.clock.now() - first)
        fwk.handle.recorder.event(
            assumed, "Normal", "Scheduled", "Binding",
            f"Successfully assigned {assumed.metadata.namespace}/{assumed.metadata.name} to {node_name}",
        )
        fwk.run_post_bind(state, assumed, node_name)

    def abort_binding_waits(self, message: str) -> int:
        """Fail every binding cycle parked at a PreBind wait (Unreserve, forget,
        requeue), e.g. on shutdown; returns how many there were."""
        aborted = 0
        for uid in list(self.binding_waits):
            wait = self.binding_waits.pop(uid)
            wait.timer.cancel()
            self._binding_failed(wait.fwk, wait.state, wait.info, wait.assumed, wait.node_name,
                                 Status(Code.ERROR, (message,)))
            aborted += 1
        return aborted

    def _binding_failed(self, fwk, state, info, assumed, node_name, status: Status) -> None:
        self.stats.binding_failures += 1
        self._record_binding(state, node_name, status)
        self._undo_assume(fwk, state, assumed, node_name)
        self._fail_status(fwk, info, status)
        # after the pod is back in the queue, so that the room it frees does not count as news for itself
        uid = assumed.metadata.uid
        self.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"), assumed, None,
                            precheck=lambda pod: pod.metadata.uid != uid)
