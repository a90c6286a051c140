"""Why a pod fits nowhere: per-node statuses and upstream's FitError message.

The message is kube-scheduler's, e.g.
``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.``
followed by PostFilter's message when there is one, e.g.
``... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

from collections import Counter

from attrs import define, field

from kubesched.core.framework.status import Status

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES_TO_SCHEDULE = "no nodes available to schedule pods"


@define
class Diagnosis:
    """``node_status``: node name -> the Status that rejected it;
    ``unschedulable_plugins``: plugins that rejected the pod somewhere;
    ``pre_filter_msg``: PreFilter's rejection message (all nodes share it);
    ``post_filter_msg``: PostFilter's message, when it ran and failed."""

    node_status: dict[str, Status] = field(factory=dict)
    unschedulable_plugins: set[str] = field(factory=set)
    pending_plugins: set[str] = field(factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """No node fits the pod.  ``num_all_nodes`` is the snapshot size."""

    def __init__(self, pod, num_all_nodes: int, diagnosis: Diagnosis):
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__(self.message())

    def message(self) -> str:
        """Upstream ``FitError.Error()``."""
        if self.num_all_nodes == 0:
            return NO_NODES_TO_SCHEDULE
        text = NO_NODE_AVAILABLE.format(self.num_all_nodes) + ":"
        diagnosis = self.diagnosis
        if diagnosis.pre_filter_msg:
            text += f" {diagnosis.pre_filter_msg}."
        else:
            histogram = reasons_histogram(diagnosis.node_status.values())
            if histogram:
                text += " " + ", ".join(histogram) + "."
        if diagnosis.post_filter_msg:
            # appended as is: PostFilter messages bring their own punctuation
            text += f" {diagnosis.post_filter_msg}"
        return text


def reasons_histogram(statuses) -> list[str]:
    """``["1 Insufficient cpu", "2 node(s) had ..."]``: how many nodes gave each
    reason, sorted as strings like upstream."""
    by_object: dict[int, list] = {}
    for status in statuses:  # many nodes share one Status object: count those first
        entry = by_object.get(id(status))
        if entry is None:
            by_object[id(status)] = [status, 1]
        else:
            entry[1] += 1
    counts: Counter[str] = Counter()
    for status, times in by_object.values():
        for reason in status.reasons:
            counts[reason] += times
    return sorted(f"{count} {reason}" for reason, count in counts.items())
