"""InterPodAffinity's PreFilter state and Filter verdicts (upstream interpodaffinity/filtering.go).

Counts are kept per topology pair ``(topology key, value)``:

- ``existing_anti``: existing pods whose required anti-affinity terms select
  the incoming pod, per pair of their node (symmetry);
- ``affinity``: existing pods matching *all* the incoming pod's required
  affinity terms, per pair of each term's key;
- ``anti``: existing pods matching each of the incoming pod's required
  anti-affinity terms, per pair of that term's key.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from kubesched.core.api.core_v1 import Node, Pod
from kubesched.core.framework.affinity import AffinityTerm
from kubesched.core.framework.nodeinfo import NodeInfo, PodInfo

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]


def _add(counts: Counter, node: Node, key: str, delta: int) -> None:
    value = node.metadata.labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts[pair] + delta
    if total:
        counts[pair] = total
    else:
        del counts[pair]


def matches_all(terms: Iterable[AffinityTerm], pod: Pod) -> bool:
    """``pod`` matches every term (and there is at least one), namespace labels not looked up."""
    terms = tuple(terms)
    return bool(terms) and all(term.matches(pod, None) for term in terms)


class PreFilterState:
    """What PreFilter computed for one incoming pod (cloneable for dry runs)."""

    __slots__ = ("pod", "required_affinity", "required_anti", "namespace_labels", "existing_anti", "affinity", "anti")

    def __init__(self, pod: Pod, required_affinity: tuple[AffinityTerm, ...], required_anti: tuple[AffinityTerm, ...],
                 namespace_labels: dict[str, str]):
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti = required_anti
        self.namespace_labels = namespace_labels
        self.existing_anti: Counter = Counter()
        self.affinity: Counter = Counter()
        self.anti: Counter = Counter()

    def clone(self) -> "PreFilterState":
        copy = PreFilterState(self.pod, self.required_affinity, self.required_anti, self.namespace_labels)
        copy.existing_anti = Counter(self.existing_anti)
        copy.affinity = Counter(self.affinity)
        copy.anti = Counter(self.anti)
        return copy

    def count_existing_anti(self, nodes: Iterable[NodeInfo]) -> None:
        """Existing pods' required anti-affinity against the incoming pod."""
        for node_info in nodes:
            for info in node_info.pods_with_required_anti_affinity:
                self._existing(info, node_info.node, 1)

    def count_incoming(self, nodes: Iterable[NodeInfo]) -> None:
        """The incoming pod's required terms against every existing pod."""
        if not self.required_affinity and not self.required_anti:
            return
        for node_info in nodes:
            node = node_info.node
            for info in node_info.pods:
                self._incoming(info.pod, node, 1)

    def _existing(self, info: PodInfo, node: Node, delta: int) -> None:
        for term in info.affinity_terms.required_anti_affinity:
            if term.matches(self.pod, self.namespace_labels):
                _add(self.existing_anti, node, term.topology_key, delta)

    def _incoming(self, pod: Pod, node: Node, delta: int) -> None:
        if matches_all(self.required_affinity, pod):
            for term in self.required_affinity:
                _add(self.affinity, node, term.topology_key, delta)
        for term in self.required_anti:
            if term.matches(pod, None):
                _add(self.anti, node, term.topology_key, delta)

    def update(self, info: PodInfo, node: Node, delta: int) -> None:
        """``info``'s pod added to (1) or removed from (-1) ``node`` (AddPod/RemovePod)."""
        self._existing(info, node, delta)
        self._incoming(info.pod, node, delta)

    @property
    def empty(self) -> bool:
        """Nothing to check: no existing anti-affinity applies and the pod has no required terms."""
        return not self.existing_anti and not self.required_affinity and not self.required_anti

    def verdict(self, node: Node) -> str | None:
        """The rejection reason for ``node``, in upstream's order, or None."""
        labels = node.metadata.labels
        if self.required_affinity and not self._affinity_holds(labels):
            return REASON_AFFINITY
        if self.anti:
            for term in self.required_anti:
                value = labels.get(term.topology_key)
                if value is not None and self.anti.get((term.topology_key, value), 0) > 0:
                    return REASON_ANTI_AFFINITY
        if self.existing_anti:
            for pair in labels.items():
                if self.existing_anti.get(pair, 0) > 0:
                    return REASON_EXISTING_ANTI_AFFINITY
        return None

    def _affinity_holds(self, labels: dict[str, str]) -> bool:
        pods_exist = True
        for term in self.required_affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every topology key must be on the node
            if self.affinity.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # the first pod of a group whose affinity selects itself may go anywhere the keys exist
        return not self.affinity and matches_all(self.required_affinity, self.pod)
