"""PrioritySort: the default QueueSort plugin (upstream plugins/queuesort)."""

from __future__ import annotations

from attrs import frozen

from kubesched import hookimpl


@frozen
class PrioritySortArgs:
    """``strandedGangsFirst`` (kubesched's, not upstream's; on by default): a
    PodGroup that ran and fell below its minCount (members evicted, a node
    gone) goes ahead of the other pods and groups of its priority, so that its
    replacements are placed before new work takes their room."""

    stranded_gangs_first: bool = True


class PrioritySort:
    """Orders activeQ by priority (a pod's, or a PodGroup's for a queued
    group; higher first), then - with ``strandedGangsFirst`` - stranded gangs
    first, then by the time the entry was queued (earlier first)."""

    name = "PrioritySort"
    args_class = PrioritySortArgs

    def __init__(self, args: PrioritySortArgs, handle):
        self.stranded_first = args.stranded_gangs_first

    @hookimpl
    def less(self, pod_info_a, pod_info_b):
        pa, pb = pod_info_a.priority, pod_info_b.priority
        if pa != pb:
            return pa > pb
        if self.stranded_first and pod_info_a.stranded != pod_info_b.stranded:
            return pod_info_a.stranded
        return pod_info_a.timestamp < pod_info_b.timestamp
