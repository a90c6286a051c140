"""NodePorts: a pod's host ports must be free on the node (upstream plugins/nodeports)."""

from __future__ import annotations

import numpy as np

from kubesched import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    hookimpl,
    host_ports,
    host_ports_fragment,
    ports_conflict,
)

REASON = "node(s) didn't have free ports for the requested pod ports"
STATE_KEY = "PreFilterNodePorts"


class NodePorts:
    """PreFilter collects the pod's host ports (Skip when it has none);
    Filter rejects nodes where one is taken (Unschedulable: evicting the
    holder would free it)."""

    name = "NodePorts"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the pod's host ports."""
        return [host_ports_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        ports = host_ports(pod)
        if not ports:
            return Status.skip()
        state.write(STATE_KEY, ports)
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        ports = state.get(STATE_KEY)
        if ports is None:
            ports = host_ports(pod)
        if ports and ports_conflict(node_info.used_ports, ports):
            return Status.unschedulable(REASON)
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        """:meth:`filter` over ``rows`` at once: whether each node leaves the pod's host ports free, an
        evictable column per distinct set of ports that the table keeps current as pods come and go (so a
        cycle costs the nodes changed since the last pod, not one Python call per node)."""
        ports = state.get(STATE_KEY)
        if ports is None:
            ports = host_ports(pod)
        if not ports:
            return np.ones(len(rows), dtype=bool)
        free = table.column(f"host-ports/{sorted(set(ports))}",
                            lambda info: not ports_conflict(info.used_ports, ports), bool, evictable=True)
        return free[np.asarray(rows, dtype=np.intp)]

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE), None),
        ]

    @staticmethod
    def _pod_deleted(pod, old, new):
        """Only a deleted pod that held one of our host ports can help."""
        if old is None:
            return QueueingHint.QUEUE
        freed = host_ports(old)
        return QueueingHint.QUEUE if freed and ports_conflict(freed, host_ports(pod)) else QueueingHint.QUEUE_SKIP
