"""PrioritySort: the default QueueSort plugin (upstream plugins/queuesort)."""

from __future__ import annotations

from kubesched.core.framework.hookspecs import hookimpl


class PrioritySort:
    """Orders activeQ by pod priority (higher first), then by the time the pod
    was queued (earlier first)."""

    name = "PrioritySort"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def less(self, pod_info_a, pod_info_b):
        pa = pod_info_a.pod.spec.priority or 0
        pb = pod_info_b.pod.spec.priority or 0
        return pa > pb or (pa == pb and pod_info_a.timestamp < pod_info_b.timestamp)
