"""Why a pod fits nowhere: per-node statuses and upstream's FitError message.

The message is kube-scheduler's, e.g.
``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.``
followed by PostFilter's message when there is one, e.g.
``... 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
from attrs import define, field

from kubesched.core.framework.status import Code, Status

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
        self._statuses: Sequence[Status | None] | None = statuses
        self._present: list[Status] | None = None
        self._codes: np.ndarray | None = None
        self._distinct: list[Status | None] = []
        self._counts: list[tuple[Status, int]] | None = None

    @classmethod
    def coded(cls, index: Mapping[str, int], codes: np.ndarray, distinct: list[Status | None]) -> NodeToStatus:
        """The statuses given as ``distinct[codes[row]]`` per row (``codes``: an
        int array, -1 for a node Filter passed): counted with one ``bincount``,
        a list per row made only if someone asks node by node."""
        mapping = cls(index, ())
        mapping._statuses = None
        mapping._codes = np.asarray(codes, dtype=np.int64)
        mapping._distinct = distinct
        return mapping

    @property
    def index(self) -> Mapping[str, int]:
        """Node name -> its row (the snapshot's index the statuses were taken over)."""
        return self._index

    def rows_with_code(self, code: Code) -> list[int]:
        """The rows whose status has ``code``, ascending (upstream ``NodesForStatusCode``), without a
        Python step per node when the statuses are coded."""
        if self._codes is not None:
            wanted = [at for at, status in enumerate(self._distinct) if status is not None and status.code == code]
            return np.flatnonzero(np.isin(self._codes, wanted)).tolist() if wanted else []
        return [row for row, status in enumerate(self.per_row()) if status is not None and status.code == code]

    def per_row(self) -> Sequence[Status | None]:
        """The status of each row (None: Filter passed the node)."""
        if self._statuses is None:
            assert self._codes is not None
            lookup = np.empty(len(self._distinct) + 1, dtype=object)  # the last entry (code -1) stays None
            for at, status in enumerate(self._distinct):
                lookup[at] = status
            self._statuses = lookup[self._codes].tolist()
        return self._statuses

    def __getitem__(self, name: str) -> Status:
        status = self.per_row()[self._index[name]]
        if status is None:
            raise KeyError(name)
        return status

    def __iter__(self) -> Iterator[str]:
        return (name for name, status in zip(self._index, self.per_row()) if status is not None)

    def __len__(self) -> int:
        return sum(times for _, times in self.counted())

    def values(self) -> list[Status]:  # type: ignore[override]  # a list, faster than a view for the histogram
        """The rejecting statuses, one per rejected node, as a list (computed once)."""
        if self._present is None:
            self._present = [status for status in self.per_row() if status is not None]
        return self._present

    def counted(self) -> list[tuple[Status, int]]:
        """Each distinct Status object present and how many nodes it rejected."""
        if self._counts is None:
            if self._codes is not None:
                codes = self._codes
                times = np.bincount(codes[codes >= 0], minlength=len(self._distinct)).tolist()
                self._counts = [(status, n) for status, n in zip(self._distinct, times)
                                if n and status is not None]
            else:
                self._counts = _count_by_identity(self.values())
        return self._counts


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
            statuses = diagnosis.node_status
            histogram = reasons_histogram(statuses.counted() if isinstance(statuses, NodeToStatus)
                                          else _count_by_identity(statuses.values()))
            if histogram:
                text += " " + ", ".join(histogram) + "."
        if diagnosis.post_filter_msg:
            # appended as is: PostFilter messages bring their own punctuation
            text += f" {diagnosis.post_filter_msg}"
        return text


def _count_by_identity(statuses: Iterable[Status]) -> list[tuple[Status, int]]:
    """Each distinct Status object among ``statuses`` and how often it occurs (many nodes share one)."""
    statuses = list(statuses)
    by_id = dict(zip(map(id, statuses), statuses))
    return [(by_id[key], times) for key, times in Counter(map(id, statuses)).items()]


def reasons_histogram(counted: Iterable[tuple[Status, int]]) -> list[str]:
    """``["1 Insufficient cpu", "2 node(s) had ..."]``: how many nodes gave each
    reason, sorted as strings like upstream; ``counted``: (Status, nodes it rejected)."""
    counts: Counter[str] = Counter()
    for status, times in counted:
        for reason in status.reasons:
            counts[reason] += times
    return sorted(f"{count} {reason}" for reason, count in counts.items())
