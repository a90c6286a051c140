"""NodeUnschedulable: keep pods off cordoned nodes (upstream plugins/nodeunschedulable)."""

from __future__ import annotations

import numpy as np

from kubesched import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    hookimpl,
    tolerations_fragment,
)
from kubesched.core.api.taints import UNSCHEDULABLE_TAINT, tolerates

REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    """Filter: a node with ``spec.unschedulable: true`` is UnschedulableAndUnresolvable
    unless the pod tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""

    name = "NodeUnschedulable"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the pod's tolerations of the unschedulable taint (upstream: the Tolerations signer)."""
        return [tolerations_fragment(pod)]

    @hookimpl
    def filter(self, state, pod, node_info):
        if node_info.node.spec.unschedulable and not tolerates(pod.spec.tolerations, UNSCHEDULABLE_TAINT):
            return Status.unresolvable(REASON)
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        if tolerates(pod.spec.tolerations, UNSCHEDULABLE_TAINT):
            return np.ones(len(rows), dtype=bool)
        return table.column("schedulable", lambda info: not info.node.spec.unschedulable, bool, of_node=True)[rows]

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                     self._node_change)]

    @staticmethod
    def _node_change(pod, old, new):
        if new is None or new.spec.unschedulable:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old is None or old.spec.unschedulable else QueueingHint.QUEUE_SKIP
