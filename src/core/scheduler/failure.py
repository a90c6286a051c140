"""What happens to a pod whose attempt failed (upstream ``schedule_one.go``'s
``handleSchedulingFailure``, the scheduler's ``FailureHandler``).

Every cycle ends a failed attempt here: the pod cycle (no node fits, an
Error, Reserve or Permit refused), the binding cycle (Permit rejected
while waiting, PreBind, Bind) and the PodGroup cycles (each member of a
group that does not fit).
"""

from __future__ import annotations

import time

from kubesched.core.framework.diagnosis import Diagnosis, FitError
from kubesched.core.observability import metrics

from ..api.core_v1 import Pod, PodCondition
from ..api.meta import evolve
from ..cluster.client import ApiError
from ..cluster.patch import patch_status
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from .queue import QueuedPodInfo
from .state import SchedulerState

#: Pod condition reasons, as upstream.
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class FailureHandler:
    """Hands a pod whose attempt failed back: event, PodScheduled condition,
    nomination, queue; counts it in ``state.stats``."""

    def __init__(self, state: SchedulerState):
        self.shared = state

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
        state = self.shared
        pod = info.pod
        started = state.attempt_started.pop(pod.metadata.uid, None)
        if started is not None:
            result = metrics.UNSCHEDULABLE if reason == REASON_UNSCHEDULABLE else metrics.ERROR
            metrics.observe_attempt(result, fwk.profile_name, time.perf_counter() - started)
        fwk.handle.recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", message)
        current = state.informers.get("Pod", pod.key)
        if current is None or current.metadata.uid != pod.metadata.uid or current.spec.node_name:
            state.queue.done(pod)
            return
        if requeue:
            state.queue.add_unschedulable(info, rejectors, pending)
        if nominated_node is not None:
            state.queue.nominator.add(info.pod_info, nominated_node)
        self._update_pod_status(current, reason, message, nominated_node)

    def fail(self, fwk: Framework, info: QueuedPodInfo, status: Status, requeue: bool = True) -> None:
        """A failure after a node was chosen (Reserve, Permit, binding): counted,
        and the pod handed back with its nomination cleared, as upstream's
        ``clearNominatedNode``, its message a FitError over that one node.
        ``requeue`` False: a member of a PodGroup that fits, which waits with
        its group under the status's own message."""
        stats = self.shared.stats
        if status.code == Code.ERROR:
            stats.errors += 1
            self.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, status.message(), set(), "", requeue=requeue)
        else:
            stats.unschedulable += 1
            message = one_node_fit_message(info.pod, status) if requeue else status.message()
            self.handle_failure(fwk, info, REASON_UNSCHEDULABLE, message, {status.plugin} if status.plugin else set(),
                                "", pending=requeue and status.code == Code.PENDING, requeue=requeue)

    def fail_group_member(self, fwk: Framework, info: QueuedPodInfo, error: bool, message: str,
                          nominated: str = "") -> None:
        """A member of a group (PodGroup, CompositePodGroup tree) that does not
        fit, or whose attempt failed (``error``): counted and handed back with
        the group's ``message``, nominated to ``nominated`` ("": cleared); the
        group goes back to the queue once, as one entity."""
        if error:
            self.shared.stats.errors += 1
            self.handle_failure(fwk, info, REASON_SCHEDULER_ERROR, message, set(), "", requeue=False)
        else:
            self.shared.stats.unschedulable += 1
            self.handle_failure(fwk, info, REASON_UNSCHEDULABLE, message, set(), nominated, requeue=False)

    def _update_pod_status(self, pod: Pod, reason: str, message: str, nominated_node: str | None) -> None:
        condition = PodCondition(
            type="PodScheduled", status="False", reason=reason, message=message,
            last_transition_time=self.shared.clock.now(),
        )
        existing = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
        same = existing is not None and (existing.status, existing.reason, existing.message) == ("False", reason, message)
        nominated = pod.status.nominated_node_name if nominated_node is None else nominated_node
        if same and nominated == pod.status.nominated_node_name:
            return
        conditions = tuple(c for c in pod.status.conditions if c.type != "PodScheduled") + (condition,)
        updated = evolve(pod, status=evolve(pod.status, conditions=conditions, nominated_node_name=nominated))
        try:
            patch_status(self.shared.cluster, pod, updated.status)  # upstream's util.PatchPodStatus
        except ApiError:
            pass  # gone, replaced or refused: the next attempt writes it again


def one_node_fit_message(pod: Pod, status: Status) -> str:
    """A rejection after the node was chosen (Reserve, Permit, waiting on Permit,
    PreBind) reads as a FitError over that one node, as upstream:
    ``0/1 nodes are available: 1 <reason>.``"""
    return FitError(pod, 1, Diagnosis(node_status={"": status})).message()
