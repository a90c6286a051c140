"""Preemption on behalf of a deferred in-place resize (KEP-5836,
``InPlacePodVerticalScalingSchedulerPreemption``, alpha in 1.37).

A running pod whose resize its kubelet deferred (condition
``PodResizePending`` with reason ``Deferred``: the node could hold the new
size, not now) is queued again, as upstream's scheduler does with the gate on,
unless its status says ``PodResizePreemptionDisabled``.  Its cycle looks only at
its own node, without the pod itself: PreFilter and Filter with the pod's
desired resources; when that fails, PostFilter (DefaultPreemption) evicts
lower-priority pods there.  Either way the pod stays bound and goes back to
the queue ("parked": no ``nominatedNodeName``, no PodScheduled change, never
a binding); an event that frees room on the node (a victim gone, a pod scaled
down) brings it back, and it leaves the queue when its kubelet actuates the
resize or the pod goes.  Upstream's integration test
``TestDeferredResizePodPreemption`` states these outcomes.
"""

from __future__ import annotations

from ..api.core_v1 import Pod
from ..api.resource_helpers import wants_resize_preemption
from ..framework.cycle_state import CycleState
from ..framework.nodeinfo import NodeInfo
from ..framework.runtime import FilterError, Framework
from ..framework.status import Code, Status
from .queue import QueuedPodInfo
from .recording import write_attempt
from .state import SchedulerState


class ResizeCycle:
    """The cycle of a queued pod that is already bound (its deferred resize),
    over the scheduler's shared ``state``."""

    def __init__(self, state: SchedulerState):
        self.shared = state

    def resize_cycle(self, fwk: Framework, state: CycleState, info: QueuedPodInfo) -> None:
        """Filter ``info``'s pod on its own node without itself and, when it
        does not fit, preempt there; the pod goes back to the queue (see the
        module's docstring)."""
        shared = self.shared
        pod = info.pod
        current = shared.informers.get("Pod", pod.key)
        if current is None or current.metadata.uid != pod.metadata.uid or not wants_resize_preemption(current):
            shared.queue.done(pod)
            return
        shared.stats.cycles += 1
        shared.cache.update_snapshot(shared.snapshot)
        node_name = current.spec.node_name
        node_info = shared.snapshot.get(node_name)
        if node_info is None:
            shared.queue.done(pod)
            return
        saved = node_info.clone()
        node_info.remove_pod(current)  # the cache's NodeInfo: only this thread touches it, restored below
        shared.snapshot.refresh([node_name])
        try:
            status = self._filter(fwk, state, current, shared.snapshot.nodes, node_info)
            if status is not None and status.code == Code.UNSCHEDULABLE and fwk.post_filter_plugins:
                _, post = fwk.run_post_filter(state, current, {node_name: status})
                if post is not None and status.reasons:
                    status = Status(status.code, status.reasons + post.reasons, status.plugin)
        finally:
            node_info.restore(saved)
            shared.snapshot.refresh([node_name])
        if state.record is not None:
            write_attempt(shared.decisions, state, "ResizeParked" if status is None else "ResizeUnschedulable",
                          "" if status is None else status.message(), node_name)
        rejectors = {status.plugin} if status is not None and status.plugin else set()
        shared.queue.add_unschedulable(info, rejectors or {"NodeResourcesFit"})

    @staticmethod
    def _filter(fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                node_info: NodeInfo) -> Status | None:
        """PreFilter over ``nodes`` (the snapshot's), then Filter on ``node_info``: the first rejection, or None
        when the pod fits."""
        _, status, rejectors = fwk.run_pre_filter(state, pod, nodes)
        if status is not None:
            return status.with_plugin(next(iter(sorted(rejectors)), status.plugin or ""))
        try:
            return fwk.run_filter_with_nominated_pods(state, pod, node_info, [])
        except FilterError as err:
            return err.status
