"""InterPodAffinity's PreFilter state and Filter verdicts (upstream interpodaffinity/filtering.go).

Counts are kept per topology domain: for each topology key an int64 array
indexed by the NodeTable's domain ids of that key (upstream keeps a map per
``(key, value)`` pair):

- ``existing_anti``: existing pods whose required anti-affinity terms select
  the incoming pod, per domain of their node (symmetry);
- ``affinity``: existing pods matching *all* the incoming pod's required
  affinity terms, per domain of each term's key;
- ``anti``: existing pods matching each of the incoming pod's required
  anti-affinity terms, per domain of that term's key.

The numbers come from NodeTable counts (pods matching a term, or carrying
one, per node and per domain: ``matching_pods``) that the table keeps
current as pods come and go, so PreFilter reads counts per domain instead of
walking every pod, and the batch Filter judges every node with a few array
lookups.
"""

from __future__ import annotations

import functools
from typing import Iterable

import numpy as np

from kubesched import AffinityTerm, NodeInfo, NodeTable, PodCount, PodInfo, TermIndex, selector_tag, term_tag
from kubesched.core.api.core_v1 import Node, Pod

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

#: topology key -> matching pods per domain id of that key
DomainCounts = dict[str, np.ndarray]


def matches_all(terms: Iterable[AffinityTerm], pod: Pod) -> bool:
    """``pod`` matches every term (and there is at least one), namespace labels not looked up."""
    terms = tuple(terms)
    return bool(terms) and all(term.matches(pod, None) for term in terms)


def pods_matching(table: NodeTable, term: AffinityTerm) -> PodCount:
    """The pods that ``term`` (namespaces resolved) selects, per node and per domain: a count kept current."""
    return table.matching_pods(f"{NAME}/term/{term.key}", lambda info: term.matches(info.pod, None),
                               selector_tag(term.selector))


#: The NodeTable's merged dict of the existing pods' required anti-affinity terms (:func:`anti_terms`).
ANTI_TERMS = f"{NAME}/anti-terms"


def anti_terms(node_info: NodeInfo) -> dict[str, AffinityTerm]:
    """The distinct required anti-affinity terms of the node's pods, by key."""
    return {term.key: term for info in node_info.pods_with_required_anti_affinity
            for term in info.affinity_terms.required_anti_affinity}


def _sum_domains(counts: DomainCounts, key: str, count: PodCount) -> None:
    """Add ``count`` per domain of ``key`` to ``counts[key]``."""
    sums = count.per_domain(key)
    counts[key] = counts[key] + sums if key in counts else sums.copy()


def _positive(counts: DomainCounts, key: str, ids: np.ndarray) -> np.ndarray:
    """Per entry of ``ids`` (domain ids of ``key``, -1 for none), whether its domain has a positive count."""
    per_domain = counts.get(key)
    if per_domain is None:
        return np.zeros(len(ids), dtype=bool)
    positive = np.append(per_domain > 0, False)  # the last slot stands for -1
    return positive[np.minimum(ids, len(per_domain))]


class PreFilterState:
    """What PreFilter computed for one incoming pod (cloneable for dry runs).
    ``table`` is the NodeTable whose domain ids index the counts."""

    __slots__ = ("pod", "required_affinity", "required_anti", "namespace_labels", "table", "existing_anti",
                 "affinity", "anti")

    def __init__(self, pod: Pod, required_affinity: tuple[AffinityTerm, ...], required_anti: tuple[AffinityTerm, ...],
                 namespace_labels: dict[str, str], table: NodeTable):
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti = required_anti
        self.namespace_labels = namespace_labels
        self.table = table
        self.existing_anti: DomainCounts = {}
        self.affinity: DomainCounts = {}
        self.anti: DomainCounts = {}

    def clone(self) -> "PreFilterState":
        """A copy whose domain counts can change without touching this state's (upstream ``preFilterState.Clone``)."""
        copy = PreFilterState(self.pod, self.required_affinity, self.required_anti, self.namespace_labels, self.table)
        copy.existing_anti = {key: counts.copy() for key, counts in self.existing_anti.items()}
        copy.affinity = {key: counts.copy() for key, counts in self.affinity.items()}
        copy.anti = {key: counts.copy() for key, counts in self.anti.items()}
        return copy

    # --- counting ---------------------------------------------------------------------------

    def count_existing_anti(self, index: TermIndex) -> None:
        """Existing pods' required anti-affinity against the incoming pod: each
        distinct term of the existing pods that may select the pod (``index``
        finds them by its labels) is matched once, its pods counted per node."""
        distinct = self.table.merged(ANTI_TERMS, anti_terms, affinity_pods_only=True)
        table = self.table
        for key, term in index.selecting(distinct, self.pod.metadata.labels):
            if not term.matches(self.pod, self.namespace_labels):
                continue
            carrying = table.matching_pods(f"{NAME}/existing-anti/{key}", functools.partial(_anti_affinity_terms, key),
                                           term_tag(term))
            _sum_domains(self.existing_anti, term.topology_key, carrying)

    def count_incoming(self) -> None:
        """The incoming pod's required terms against every existing pod, from
        per-node columns of matching pods summed per topology domain."""
        table = self.table
        if self.required_affinity:
            terms = self.required_affinity
            matching = table.matching_pods(f"{NAME}/all/" + repr(sorted(t.key for t in terms)),
                                           lambda info: matches_all(terms, info.pod), selector_tag(terms[0].selector))
            for key in {term.topology_key for term in terms}:
                _sum_domains(self.affinity, key, matching)
        for term in self.required_anti:
            _sum_domains(self.anti, term.topology_key, pods_matching(table, term))

    def update(self, info: PodInfo, node: Node, delta: int) -> None:
        """``info``'s pod added to (1) or removed from (-1) ``node`` (AddPod/RemovePod)."""
        for term in info.affinity_terms.required_anti_affinity:
            if term.matches(self.pod, self.namespace_labels):
                self._add(self.existing_anti, node, term.topology_key, delta)
        pod = info.pod
        if matches_all(self.required_affinity, pod):
            for key in {term.topology_key for term in self.required_affinity}:
                self._add(self.affinity, node, key, delta)
        for term in self.required_anti:
            if term.matches(pod, None):
                self._add(self.anti, node, term.topology_key, delta)

    def _add(self, counts: DomainCounts, node: Node, key: str, delta: int) -> None:
        value = node.metadata.labels.get(key)
        if value is None:
            return
        domain = self.table.domain_id(key, value)
        if domain < 0:
            return  # a node outside the snapshot
        per_domain = counts.get(key)
        if per_domain is None:
            per_domain = counts[key] = np.zeros(self.table.domain_count(key), dtype=np.int64)
        per_domain[domain] += delta

    # --- verdicts ---------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        """Nothing to check: no existing anti-affinity applies and the pod has no required terms."""
        return not self.required_affinity and not self.required_anti and not _any(self.existing_anti)

    def _count(self, counts: DomainCounts, key: str, labels: dict[str, str]) -> int:
        per_domain = counts.get(key)
        value = labels.get(key)
        if per_domain is None or value is None:
            return 0
        domain = self.table.domain_id(key, value)
        return int(per_domain[domain]) if 0 <= domain < len(per_domain) else 0

    def verdict(self, node: Node) -> str | None:
        """The rejection reason for ``node``, in upstream's order, or None."""
        labels = node.metadata.labels
        if self.required_affinity and not self._affinity_holds(labels):
            return REASON_AFFINITY
        for term in self.required_anti:
            if self._count(self.anti, term.topology_key, labels) > 0:
                return REASON_ANTI_AFFINITY
        for key in self.existing_anti:
            if self._count(self.existing_anti, key, labels) > 0:
                return REASON_EXISTING_ANTI_AFFINITY
        return None

    def _affinity_holds(self, labels: dict[str, str]) -> bool:
        pods_exist = True
        for term in self.required_affinity:
            if term.topology_key not in labels:
                return False  # every topology key must be on the node
            if self._count(self.affinity, term.topology_key, labels) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # the first pod of a group whose affinity selects itself may go anywhere the keys exist
        return not _any(self.affinity) and matches_all(self.required_affinity, self.pod)

    def passes(self, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """:meth:`verdict` is None, for the NodeTable ``rows`` at once (bool
        array); ``table`` must be the state's own."""
        passes = np.ones(len(rows), dtype=bool)
        if self.required_affinity:
            keyed = np.ones(len(rows), dtype=bool)
            pods_exist = np.ones(len(rows), dtype=bool)
            for term in self.required_affinity:
                ids = table.domain_ids(term.topology_key)[rows]
                keyed &= ids >= 0
                pods_exist &= _positive(self.affinity, term.topology_key, ids)
            first_pod = not _any(self.affinity) and matches_all(self.required_affinity, self.pod)
            passes &= keyed & (pods_exist | first_pod)
        for term in self.required_anti:
            passes &= ~_positive(self.anti, term.topology_key, table.domain_ids(term.topology_key)[rows])
        for key in self.existing_anti:
            passes &= ~_positive(self.existing_anti, key, table.domain_ids(key)[rows])
        return passes


def _any(counts: DomainCounts) -> bool:
    return any(bool((per_domain > 0).any()) for per_domain in counts.values())


def _anti_affinity_terms(key: str, info: PodInfo) -> int:
    """How many required anti-affinity terms with ``key`` the pod carries."""
    return sum(1 for term in info.affinity_terms.required_anti_affinity if term.key == key)
