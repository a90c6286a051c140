"""The scheduler's informer handlers (upstream ``pkg/scheduler/eventhandlers.go``).

Nodes and bound pods feed the cache; pending pods of the scheduler's
profiles feed the queue; every change that may help unschedulable pods
becomes a cluster event (``AssignedPod``/``Node`` with the update bits that
changed, or the kind a plugin registered for) that the queue turns into
moves by the plugins' queueing hints.  :class:`EventHandlers` is one of the
scheduler's parts; it calls none of the others.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Callable

from kubesched.core.observability.metrics import EVENT_HANDLING_DURATION

from ..api import RESOURCES
from ..api.core_v1 import Node, Pod
from ..api.resource_helpers import status_counts, wants_resize_preemption
from ..cluster.informer import AddHandler, DeleteHandler, UpdateHandler
from ..framework.resources import pod_scaled_down
from ..framework.types import ASSIGNED_POD, NODE, ActionType, ClusterEvent
from .state import SchedulerState


class EventHandlers:
    """The scheduler's informer handlers over its shared ``state`` (cache,
    queue, PodGroup manager, waiting pods); ``workload_aware``: PodGroups are
    scheduled as groups, so a (Composite)PodGroup's arrival regroups the
    queue.  :meth:`register` adds them to the informers."""

    def __init__(self, state: SchedulerState, workload_aware: bool):
        self.shared = state
        self.workload_aware = workload_aware

    def responsible_for(self, pod: Pod) -> bool:
        """Whether ``pod.spec.schedulerName`` names one of this scheduler's profiles (upstream
        ``responsibleForPod``)."""
        return pod.spec.scheduler_name in self.shared.profiles

    def register(self) -> None:
        """Add the handlers to the scheduler's informers (Node, Pod, and every kind a plugin registered events for)."""
        inf = self.shared.informers
        inf.add_handlers("Node", timed(lambda *_: "NodeAdd", self._on_node_add),
                         timed(lambda *_: "NodeUpdate", self._on_node_update),
                         timed(lambda *_: "NodeDelete", self._on_node_delete))
        inf.add_handlers("Pod", timed(lambda pod: _pod_label(pod, "Add"), self._on_pod_add),
                         timed(lambda old, new: _pod_label(new, "Update"), self._on_pod_update),
                         timed(lambda pod: _pod_label(pod, "Delete"), self._on_pod_delete))
        kinds = {
            registered.event.resource
            for fw in self.shared.profiles.values()
            for _, registered in fw.events_to_register()
        }
        for kind in sorted(kinds & set(RESOURCES) - {"Node", "Pod"}):
            inf.add_handlers(kind, *self._queue_movers(kind))
        if self.workload_aware:  # a group that joins a CompositePodGroup tree takes its queued pods along
            for kind in ("PodGroup", "CompositePodGroup"):
                inf.add_handlers(kind, on_add=lambda obj: self.shared.queue.regroup())

    def _queue_movers(self, kind: str) -> tuple[AddHandler, UpdateHandler, DeleteHandler]:
        """Informer handlers for a kind some plugin registered events for: each
        change moves the unschedulable pods whose hints say it may help."""
        def on_add(obj: Any) -> None:
            self.shared.queue.move_all(ClusterEvent(kind, ActionType.ADD), None, obj)

        def on_update(old: Any, new: Any) -> None:
            self.shared.queue.move_all(ClusterEvent(kind, ActionType.UPDATE), old, new)

        def on_delete(obj: Any) -> None:
            self.shared.queue.move_all(ClusterEvent(kind, ActionType.DELETE), obj, None)

        return (timed(lambda *_: f"{kind}Add", on_add), timed(lambda *_: f"{kind}Update", on_update),
                timed(lambda *_: f"{kind}Delete", on_delete))

    def _on_node_add(self, node: Node) -> None:
        self.shared.cache.add_node(node)
        self.shared.queue.move_all(ClusterEvent(NODE, ActionType.ADD), None, node)

    def _on_node_update(self, old: Node, new: Node) -> None:
        self.shared.cache.update_node(old, new)
        action = node_update_action(old, new)
        if action:
            self.shared.queue.move_all(ClusterEvent(NODE, action), old, new)

    def _on_node_delete(self, node: Node) -> None:
        self.shared.cache.remove_node(node)

    def resizes_preempt(self, pod: Pod) -> bool:
        """Whether bound ``pod`` is queued for its deferred resize (InPlacePodVerticalScalingSchedulerPreemption)."""
        return (self.shared.features.enabled("InPlacePodVerticalScalingSchedulerPreemption")
                and self.responsible_for(pod) and wants_resize_preemption(pod))

    def _on_pod_add(self, pod: Pod) -> None:
        self.shared.pod_groups.add_pod(pod)
        if pod.spec.node_name:
            if not pod.terminal:
                self.shared.cache.add_pod(pod)
                self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, pod)
                if self.resizes_preempt(pod):
                    self.shared.queue.add(pod)
        elif self.responsible_for(pod) and not pod.terminal:
            self.shared.queue.add(pod)

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        self.shared.pod_groups.update_pod(old, new)
        if new.spec.node_name:
            if not old.spec.node_name:
                self.shared.queue.delete(old)
            if new.terminal:
                self.shared.cache.remove_pod(new)
                if new in self.shared.queue:  # queued for its deferred resize
                    self.shared.queue.delete(new)
                self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), new, None)
                return
            if old.spec.node_name:
                self.shared.cache.update_pod(old, new)
                self._requeue_resize(old, new)
                action = assigned_pod_update_action(old, new)
                if action:
                    self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, action), old, new)
            else:
                # a binding landed: upstream's AssignedPodAdd, which has no old object
                self.shared.cache.add_pod(new)
                self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.ADD), None, new)
        elif self.responsible_for(new):
            if new.terminal:
                self.shared.queue.delete(new)
                return
            self.shared.queue.update(old, new)
            if new not in self.shared.queue and not self.shared.cache.is_assumed(new):
                self.shared.queue.add(new)

    def _requeue_resize(self, old: Pod, new: Pod) -> None:
        """A bound pod whose resize is now deferred joins the queue; one queued
        for it follows the update, and leaves once its resize is no longer deferred."""
        queue = self.shared.queue
        if self.resizes_preempt(new):
            if new in queue:
                queue.update(old, new)
            else:
                queue.add(new)
        elif new in queue:
            queue.delete(new)

    def _on_pod_delete(self, pod: Pod) -> None:
        self.shared.pod_groups.delete_pod(pod)
        if pod.spec.node_name:
            self.shared.cache.remove_pod(pod)
            if pod in self.shared.queue:  # queued for its deferred resize
                self.shared.queue.delete(pod)
            self.shared.queue.move_all(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), pod, None)
            return
        self.shared.queue.delete(pod)
        waiting = self.shared.waiting_pods.get(pod.metadata.uid)
        if waiting is not None:
            waiting.reject("", "pod was deleted")


def _pod_label(pod: Pod, action: str) -> str:
    return ("AssignedPod" if pod.spec.node_name else "UnscheduledPod") + action


def timed(label: Callable[..., str], handler: Callable[..., None]) -> Callable[..., None]:
    """``handler`` observing each call into scheduler_event_handling_duration_seconds under the event label
    ``label(*args)`` gives (upstream's: NodeAdd, AssignedPodUpdate, UnscheduledPodDelete, PersistentVolumeAdd, ...)."""
    observers: dict[str, Callable[[float], None]] = {}  # event label -> its series' observe

    def handle(*args: Any) -> None:
        started = perf_counter()
        handler(*args)
        event = label(*args)
        (observers.get(event) or observers.setdefault(event, EVENT_HANDLING_DURATION.labels(event).observe))(
            perf_counter() - started)
    return handle


#: no update bit (made once: calling an IntFlag class costs more than the comparisons deciding the bits)
_NO_ACTION = ActionType(0)


def node_update_action(old: Node, new: Node) -> ActionType:
    """Which Node update bits changed (upstream ``nodeSchedulingPropertiesChange``)."""
    action = _NO_ACTION
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.spec.taints != new.spec.taints or old.spec.unschedulable != new.spec.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.status.conditions != new.status.conditions:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.status.declared_features != new.status.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


def assigned_pod_update_action(old: Pod, new: Pod) -> ActionType:
    """Which assigned-Pod update bits changed: labels; a scale-down when the
    pod now counts less of a resource, by its spec or by what its status says
    the kubelet allocated after an in-place resize (upstream
    ``extractPodScaleDown``)."""
    action = _NO_ACTION
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_POD_LABEL
    before, after = old.status, new.status
    if (old.spec.containers != new.spec.containers or old.spec.resources != new.spec.resources
            or before.container_statuses != after.container_statuses
            # the conditions count (a resize found infeasible) only for a pod whose status reports resources:
            # a kubelet's Running and Ready need no requests computed
            or (before.conditions != after.conditions and (status_counts(before) or status_counts(after)))
            ) and pod_scaled_down(old, new):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    return action
