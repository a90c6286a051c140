"""SchedulingGates: hold pods with ``spec.schedulingGates`` out of activeQ (upstream plugins/schedulinggates)."""

from __future__ import annotations

from kubesched import (
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    QueueingHint,
    Status,
    hookimpl,
)


class SchedulingGates:
    """PreEnqueue: a pod with scheduling gates stays gated
    (UnschedulableAndUnresolvable "waiting for scheduling gates: [...]") until
    its gates are removed."""

    name = "SchedulingGates"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def pre_enqueue(self, pod):
        gates = [gate.name for gate in pod.spec.scheduling_gates]
        if not gates:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"waiting for scheduling gates: [{' '.join(gates)}]",))

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), self._gates_removed)]

    @staticmethod
    def _gates_removed(pod, old, new):
        if new is None or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if not new.spec.scheduling_gates else QueueingHint.QUEUE_SKIP
