"""Why a pod fits nowhere: per-node statuses and upstream's FitError message.

The message is kube-scheduler's, e.g.
``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.``
followed by PostFilter's message when there is one, e.g.
``... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from attrs import define, field

from kubesched.core.framework.status import Status

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES_TO_SCHEDULE = "no nodes available to schedule pods"


class NodeToStatus(Mapping[str, Status]):
    """Node name -> the Status that rejected it, over a snapshot's rows
    (upstream's ``NodeToStatus``): ``index`` maps a node name to its row,
    ``statuses[row]`` is that node's rejection or None when Filter passed it
    (such a node is absent from the mapping).  Built without a dict per
    node, since a pod that fits nowhere has one status per node and most of
    them are one shared object."""

    def __init__(self, index: Mapping[str, int], statuses: Sequence[Status | None]):
        self._index = index
        self._statuses = statuses
        self._present: list[Status] | None = None

    def __getitem__(self, name: str) -> Status:
        status = self._statuses[self._index[name]]
        if status is None:
            raise KeyError(name)
        return status

    def __iter__(self) -> Iterator[str]:
        return (name for name, status in zip(self._index, self._statuses) if status is not None)

    def __len__(self) -> int:
        return len(self.values())

    def values(self) -> list[Status]:  # type: ignore[override]  # a list, faster than a view for the histogram
        if self._present is None:
            self._present = [status for status in self._statuses if status is not None]
        return self._present


@define
class Diagnosis:
    """``node_status``: node name -> the Status that rejected it;
    ``unschedulable_plugins``: plugins that rejected the pod somewhere;
    ``pre_filter_msg``: PreFilter's rejection message (all nodes share it);
    ``post_filter_msg``: PostFilter's message, when it ran and failed."""

    node_status: Mapping[str, Status] = field(factory=dict)
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
        super().__init__()

    def __str__(self) -> str:
        return self.message()

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
    statuses = list(statuses)
    by_id = dict(zip(map(id, statuses), statuses))  # many nodes share one Status object
    counts: Counter[str] = Counter()
    for key, times in Counter(map(id, statuses)).items():
        for reason in by_id[key].reasons:
            counts[reason] += times
    return sorted(f"{count} {reason}" for reason, count in counts.items())
