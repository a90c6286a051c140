"""PodGroupReservation: a large gang is not starved for ever by a stream of smaller pods.

Not upstream: kubesched's answer to a failure users of gang schedulers report
(Volcano #3291, scheduler-plugins #713): pods that fit one at a time keep
taking the room a waiting gang needs all at once.  Enable it in a profile
(it is not in the default one); ``starvationWindowSeconds`` (default 300):
a PodGroup still waiting that long after its first attempt reserves the
nodes of the placement its latest attempt came closest in (the rack of a
rack constraint, else every node) for the next window - other pods of its
priority or lower are filtered out of them ("node(s) were reserved for a
starving pod group"), so that capacity freed there accumulates for the gang
- then waits a window without the reservation, and so on until it fits.
The PodGroup cycle notes each group's first attempt and closest placement
(``handle.pod_groups.waiting``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import frozen

from kubesched import Code, Status, hookimpl
from kubesched.core.api.podpriority import pod_priority
from kubesched.core.api.scheduling_v1beta1 import pod_group_key

NAME = "PodGroupReservation"
#: CycleState key of the nodes a pod must leave to starving groups
RESERVED_KEY = "PreFilterPodGroupReservation"


@frozen
class PodGroupReservationArgs:
    """``starvationWindowSeconds``: how long a PodGroup waits before it reserves
    its closest placement, and how long each reservation lasts (seconds, > 0)."""

    starvation_window_seconds: int = 300

    def __attrs_post_init__(self):
        if self.starvation_window_seconds <= 0:
            raise ValueError(f"starvationWindowSeconds: must be positive, got {self.starvation_window_seconds}")


class PodGroupReservation:
    """PreFilter (Skip while no group starves) and Filter: keeps pods off the
    nodes that starving PodGroups of their priority or higher hold."""

    name = NAME
    args_class = PodGroupReservationArgs

    def __init__(self, args: PodGroupReservationArgs, handle: Any):
        self.handle = handle
        self.window = float(args.starvation_window_seconds)

    def reserved_for_others(self, pod) -> frozenset[str]:
        """The nodes starving PodGroups of ``pod``'s priority or higher hold now
        (those of ``pod``'s own group excepted)."""
        groups = self.handle.pod_groups
        now = self.handle.clock.now()
        own = pod_group_key(pod)
        priority = pod_priority(pod)
        reserved: set[str] = set()
        for key, (since, nodes) in groups.waiting.items():
            if key == own or not nodes or int((now - since) // self.window) % 2 != 1:
                continue
            group = groups.pod_group(key)
            if group is not None and group.priority_value >= priority:
                reserved |= nodes
        return frozenset(reserved)

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        reserved = self.reserved_for_others(pod)
        if not reserved:
            return Status(Code.SKIP)
        state.write(RESERVED_KEY, reserved)
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        if node_info.name in state.read(RESERVED_KEY):
            return Status(Code.UNSCHEDULABLE, ("node(s) were reserved for a starving pod group",))
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        return ~np.isin(table.names[rows], list(state.read(RESERVED_KEY)))
