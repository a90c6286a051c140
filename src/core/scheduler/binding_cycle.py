"""The binding cycle: waiting on Permit, PreBind (with waits), Bind, PostBind
(upstream ``schedule_one.go``'s ``bindingCycle``).

Any failure unreserves in reverse order, forgets the assumed pod, requeues
it and tells the queue that the room it held is free again.  The scheduler
never blocks: a Permit wait (a :class:`~kubesched.core.framework.waiting_pods.WaitingPod`) and a PreBind wait
(:class:`BindingWait`) are timers on the clock, and a daemon runs PreBind and
Bind on binding workers (what the plugins change of the state the scheduling
cycle reads comes back to the loop through ``Handle.on_loop``).
The pod cycle's caller and the PodGroup cycle start it
(:meth:`BindingCycle.start_binding`); it calls down only (the failure
handler, :func:`~.assume.unreserve_and_forget`).
"""

from __future__ import annotations

import collections
import logging
import time
from concurrent.futures import Executor
from typing import Callable

import attrs

from kubesched.core.observability import metrics

from ..api.core_v1 import Pod
from ..clock import Timer
from ..cluster.client import ApiError
from ..cluster.patch import patch_status
from ..framework.cycle_state import CycleState
from ..framework.extender import extenders_binding
from ..framework.handle import calls_for_the_loop
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from ..framework.types import ASSIGNED_POD, ActionType, ClusterEvent, PreBindWait
from ..framework.waiting_pods import WaitingPod
from .assume import unreserve_and_forget
from .failure import FailureHandler
from .queue import QueuedPodInfo
from .recording import binding_record
from .state import SchedulerState

log = logging.getLogger(__name__)

#: marks a call a binding worker queued for the loop (Handle.on_loop) in ``results``
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


@attrs.frozen
class ScheduleResult:
    """Where a scheduling cycle left a pod that fits: ``assumed`` (the pod with
    ``spec.nodeName`` set, in the cache), ``node_name``, and ``waits`` (Permit
    plugin -> timeout in seconds; empty when the binding cycle may start now)."""

    assumed: Pod
    node_name: str
    waits: dict[str, float]


class BindingCycle:
    """The scheduler's binding cycles.

    ``state``: the scheduler's shared state; ``failures``: where a failed
    binding's pod goes back; ``pool``: where PreBind and Bind plugins run
    (None: on the scheduling loop, as simulations need for determinism);
    ``wakeup``: called from a binding worker when a Bind finished (wakes the
    daemon's loop).  Its own fields: ``waits`` (pod UID -> binding cycle
    parked at a PreBind wait), ``results`` (outcomes of binding cycles run on
    workers, for :meth:`finish_binds`) and ``in_flight`` (pod UID -> assumed
    pod whose Bind runs on a worker)."""

    def __init__(self, state: SchedulerState, failures: FailureHandler, pool: Executor | None = None,
                 wakeup: Callable[[], object] | None = None):
        self.shared = state
        self.failures = failures
        self.pool = pool
        self.wakeup = wakeup
        self.waits: dict[str, BindingWait] = {}
        self.results: collections.deque = collections.deque()
        self.in_flight: dict[str, Pod] = {}

    def _record_binding(self, state: CycleState, node_name: str, status: Status | None) -> None:
        """The binding cycle's outcome, when the attempt is being recorded."""
        if state.record is not None and self.shared.decisions is not None:
            self.shared.decisions.write(binding_record(state.record, self.shared.clock.now(), node_name, status))

    def start_binding(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, result: ScheduleResult) -> None:
        """After a scheduling cycle that placed the pod: wait on Permit (a
        :class:`WaitingPod`) or go straight into the binding cycle."""
        assumed, node_name = result.assumed, result.node_name
        if self.shared.features.enabled("NominatedNodeNameForExpectation"):
            flight = fwk.run_pre_bind_pre_flights(state, assumed, node_name)
            if flight.code == Code.ERROR:
                self._binding_failed(fwk, state, info, assumed, node_name, flight)
                return
            if flight.code == Code.SUCCESS or result.waits:
                self._publish_nomination(assumed, node_name)
        if result.waits:
            WaitingPod(assumed, result.waits, self.shared.clock, self.shared.waiting_pods,
                       lambda permit: self.binding_cycle(fwk, state, info, assumed, node_name, permit))
            return
        self.binding_cycle(fwk, state, info, assumed, node_name, None)

    def _publish_nomination(self, assumed: Pod, node_name: str) -> None:
        """``status.nominatedNodeName`` = the chosen node, before Permit's wait or the PreBind work
        (NominatedNodeNameForExpectation): an autoscaler or Kueue watching the pod sees where it is going.
        A failed write is logged and the binding goes on, as upstream."""
        if assumed.status.nominated_node_name == node_name:
            return
        try:
            patch_status(self.shared.cluster, assumed,
                         attrs.evolve(assumed.status, nominated_node_name=node_name))
        except ApiError as err:
            log.warning("publishing the nominated node failed", extra={"pod": assumed.key, "err": err.message})

    def binding_cycle(
        self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod, node_name: str,
        permit: Status | None,
    ) -> None:
        """Wait-on-Permit result, PreBind, Bind, PostBind; on failure Unreserve,
        forget the assumed pod, requeue it and tell the queue resources were freed."""
        if permit is not None:
            self._binding_failed(fwk, state, info, assumed, node_name, permit)
            return
        self.shared.queue.done(assumed)
        self._pre_bind_from(fwk, state, info, assumed, node_name, 0)

    def _pre_bind_from(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod,
                       node_name: str, start: int) -> None:
        """PreBind plugins from ``start`` on, then Bind (on a binding worker
        when there is a pool); a :class:`PreBindWait` parks the binding cycle
        in :attr:`waits` and polls on the clock."""
        pool = self.pool
        if pool is not None:
            self._bind_elsewhere(pool, fwk, state, info, assumed, node_name, start)
            return
        status, wait, index = fwk.run_pre_bind(state, assumed, node_name, start)
        if wait is not None:
            self._park(fwk, state, info, assumed, node_name, wait, index)
            return
        if status is None:
            status = self.bind(fwk, state, assumed, node_name)
        self._finish_binding(fwk, state, info, assumed, node_name, status)

    def bind(self, fwk: Framework, state: CycleState, assumed: Pod, node_name: str) -> Status | None:
        """Upstream ``bind``: a binder extender interested in the pod binds it (``extendersBinding``), else the
        profile's Bind plugins.  None on success, else the failure.

        A failed Bind whose call may have been carried out although its
        answer was lost (a timeout, a connection cut after the request was
        sent) is checked against the API server: when the pod (same UID) is
        bound to ``node_name`` there, the binding succeeded and is treated so
        (Scheduled event, PostBind) instead of failing the pod.  Upstream's
        handleSchedulingFailure only sees it in the informer cache, if the
        watch already delivered it, and then still reports a failure."""
        status: Status | None
        if self.shared.extenders:
            taken, status = extenders_binding(self.shared.extenders, assumed, node_name)
            if not taken:
                status = fwk.run_bind(state, assumed, node_name)
        else:
            status = fwk.run_bind(state, assumed, node_name)
        if status is not None and status.code != Code.SKIP and self._bound_there(assumed, node_name):
            log.info("the binding call failed but the pod is bound to the node",
                     extra={"pod": assumed.key, "node": node_name, "err": status.message()})
            return None
        return status

    def _bound_there(self, assumed: Pod, node_name: str) -> bool:
        """Whether the API server has the pod (same UID) bound to ``node_name`` now."""
        try:
            current = self.shared.cluster.get("Pod", assumed.metadata.name, assumed.metadata.namespace)
        except ApiError:
            return False
        return current.metadata.uid == assumed.metadata.uid and current.spec.node_name == node_name

    def _park(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod, node_name: str,
              wait: PreBindWait, index: int) -> None:
        """Poll PreBind plugin ``index``'s ``wait`` on the clock until it is
        over (then PreBind goes on after it), fails, or times out."""
        deadline = self.shared.clock.now() + wait.timeout

        def poll() -> None:
            if self.waits.pop(assumed.metadata.uid, None) is None:
                return  # aborted meanwhile
            answer = wait.check()
            if answer is not None and answer.code == Code.WAIT:
                if self.shared.clock.now() >= deadline:
                    self._binding_failed(fwk, state, info, assumed, node_name, Status(
                        Code.ERROR, (f"running PreBind plugin \"{fwk.pre_bind_plugins[index][0]}\": {wait.message}",)))
                    return
                self.waits[assumed.metadata.uid] = BindingWait(
                    self.shared.clock.call_later(wait.interval, poll), fwk, state, info, assumed, node_name)
                return
            failed = fwk.pre_bind_status(index, answer)
            if failed is not None:
                self._binding_failed(fwk, state, info, assumed, node_name, failed)
            else:
                self._pre_bind_from(fwk, state, info, assumed, node_name, index + 1)

        self.waits[assumed.metadata.uid] = BindingWait(
            self.shared.clock.call_later(wait.interval, poll), fwk, state, info, assumed, node_name)

    def _bind_elsewhere(self, pool: Executor, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                        assumed: Pod, node_name: str, start: int) -> None:
        """Run PreBind (from plugin ``start``) and Bind on a binding worker;
        what the plugins hand to :meth:`Handle.on_loop` and then the outcome
        come back to the scheduling loop in that order (:meth:`finish_binds`),
        which alone touches the cache, the queue and the state the scheduling
        cycle reads.  Upstream runs each binding cycle in a goroutine."""
        uid = assumed.metadata.uid
        self.in_flight[uid] = assumed
        results = self.results

        def bind() -> None:
            wait, index = None, 0
            with calls_for_the_loop(lambda call: results.append((_LOOP_CALL, call))):
                try:
                    status, wait, index = fwk.run_pre_bind(state, assumed, node_name, start)
                    if wait is None and status is None:
                        status = self.bind(fwk, state, assumed, node_name)
                except Exception as err:  # noqa: BLE001 - a failing plugin fails the binding, as upstream
                    status, wait = Status(Code.ERROR, (f"running PreBind or Bind plugins: {err}",), error=err), None
            results.append((fwk, state, info, assumed, node_name, status, wait, index))
            if self.wakeup is not None:
                self.wakeup()

        pool.submit(bind)

    def finish_binds(self) -> int:
        """On the scheduling loop's thread: make the calls binding workers
        queued for it and finish the binding cycles that came back (a PreBind
        wait is parked here, on the loop's clock); returns how many came back."""
        done = 0
        while self.results:
            entry = self.results.popleft()
            if entry[0] is _LOOP_CALL:
                entry[1]()
                continue
            fwk, state, info, assumed, node_name, status, wait, index = entry
            self.in_flight.pop(assumed.metadata.uid, None)
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
        self.shared.cache.finish_binding(assumed)
        self.shared.stats.bound += 1
        self._record_binding(state, node_name, None)
        if log.isEnabledFor(logging.INFO):  # once per bound pod: its fields only when a handler will see them
            log.info("Successfully bound pod to node", extra={"pod": assumed.key, "node": node_name,
                                                              "evaluatedNodes": state.evaluated_nodes,
                                                              "feasibleNodes": state.feasible_nodes})
        started = self.shared.attempt_started.pop(assumed.metadata.uid, None)
        if started is not None:
            metrics.observe_attempt(metrics.SCHEDULED, fwk.profile_name, time.perf_counter() - started)
        first = info.initial_attempt_timestamp if info.initial_attempt_timestamp is not None else info.timestamp
        metrics.observe_bound(info.attempts, self.shared.clock.now() - first)
        fwk.handle.recorder.event(
            assumed, "Normal", "Scheduled", "Binding",
            f"Successfully assigned {assumed.metadata.namespace}/{assumed.metadata.name} to {node_name}",
        )
        fwk.run_post_bind(state, assumed, node_name)

    def abort_binding_waits(self, message: str) -> int:
        """Fail every binding cycle parked at a PreBind wait (Unreserve, forget,
        requeue), e.g. on shutdown; returns how many there were."""
        aborted = 0
        for uid in list(self.waits):
            wait = self.waits.pop(uid)
            wait.timer.cancel()
            self._binding_failed(wait.fwk, wait.state, wait.info, wait.assumed, wait.node_name,
                                 Status(Code.ERROR, (message,)))
            aborted += 1
        return aborted

    def _binding_failed(self, fwk: Framework, state: CycleState, info: QueuedPodInfo, assumed: Pod, node_name: str,
                        status: Status) -> None:
        """Upstream ``handleBindingCycleError``: counted, recorded, unreserved and
        forgotten, the pod back in the queue, and the room it held offered to
        the pods waiting for room."""
        self.shared.stats.binding_failures += 1
        self._record_binding(state, node_name, status)
        unreserve_and_forget(self.shared.cache, fwk, state, assumed, node_name)
        self.failures.fail(fwk, info, status)
        # after the pod is back in the queue, so that the room it frees does not count as news for itself
        uid = assumed.metadata.uid
        self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"), assumed, None,
                                   precheck=lambda pod: pod.metadata.uid != uid)
