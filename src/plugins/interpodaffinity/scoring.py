"""InterPodAffinity's PreScore sums, Score and NormalizeScore (upstream interpodaffinity/scoring.go).

PreScore sums, per topology domain, the weights of every term that holds
between the incoming pod and an existing pod, both directions: the incoming
pod's preferred terms over the existing pods, and the existing pods'
preferred terms and - weighted by ``hardPodAffinityWeight`` - required
affinity terms over the incoming pod; anti-affinity terms subtract.  A node's
score is the sum over its domains; NormalizeScore maps the range min..max to
0..100.

As in Filter, the existing pods are not walked one by one: the distinct
scoring terms of the existing pods are matched once against the incoming
pod, and NodeTable counts kept per domain give the pods carrying each term or
matching each of the incoming pod's terms (upstream skips nodes without
labels; a node in a domain has the label).
"""

from __future__ import annotations

import functools

import numpy as np

from kubesched import (
    MAX_NODE_SCORE,
    AffinityTerm,
    NodeInfo,
    NodeTable,
    PodCount,
    PodInfo,
    WeightedAffinityTerm,
    term_tag,
)
from kubesched.core.api.core_v1 import Pod

from .filtering import NAME, pods_matching

REQUIRED, PREFERRED, PREFERRED_ANTI = "required", "preferred", "preferred-anti"

#: an existing pod's scoring term: (key, term, kind, weight); a required term's weight is hardPodAffinityWeight
ScoringTerm = tuple[str, AffinityTerm, str, int]


def _pod_scoring_terms(info: PodInfo) -> list[ScoringTerm]:
    terms = info.affinity_terms
    found = [(f"{REQUIRED}/{t.key}", t, REQUIRED, 0) for t in terms.required_affinity]
    found += [(f"{PREFERRED}/{w.weight}/{w.term.key}", w.term, PREFERRED, w.weight) for w in terms.preferred_affinity]
    found += [(f"{PREFERRED_ANTI}/{w.weight}/{w.term.key}", w.term, PREFERRED_ANTI, w.weight)
              for w in terms.preferred_anti_affinity]
    return found


#: The NodeTable's merged dict of the existing pods' scoring terms (:func:`scoring_terms`).
SCORING_TERMS = f"{NAME}/scoring-terms"


def scoring_terms(node_info: NodeInfo) -> dict[str, ScoringTerm]:
    """The distinct scoring terms of the node's pods, by key (none on a node without labels)."""
    if node_info.node is None or not node_info.node.metadata.labels:
        return {}
    return {entry[0]: entry for info in node_info.pods_with_affinity for entry in _pod_scoring_terms(info)}


class TopologyScores:
    """Term weights summed per topology domain: for each topology key, an
    int64 array indexed by the NodeTable's domain ids of that key."""

    def __init__(self, table: NodeTable):
        self.table = table
        self.per_key: dict[str, np.ndarray] = {}
        self.touched = False

    def add(self, key: str, count: PodCount, weight: int) -> None:
        """Add ``weight`` times ``count`` (of pods, per domain) to the domains of ``key``."""
        sums = count.per_domain(key)
        if not sums.any():
            return
        self.touched = True
        current = self.per_key.get(key)
        weighted = sums.astype(np.int64) * weight
        self.per_key[key] = weighted if current is None else current + weighted

    def pairs(self) -> dict[str, dict[str, int]]:
        """The non-zero sums as ``{topology key: {value: score}}`` (upstream's ``topologyToScore``)."""
        result: dict[str, dict[str, int]] = {}
        for key, per_domain in self.per_key.items():
            values = self.table.domain_values(key)
            found = {values[domain]: int(per_domain[domain]) for domain in np.flatnonzero(per_domain)}
            if found:
                result[key] = found
        return result

    def node(self, labels: dict[str, str]) -> int:
        """The score of a node with ``labels``: the sum over its domains."""
        total = 0
        for key, per_domain in self.per_key.items():
            value = labels.get(key)
            if value is not None:
                domain = self.table.domain_id(key, value)
                if 0 <= domain < len(per_domain):
                    total += int(per_domain[domain])
        return total

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The scores of the NodeTable ``rows`` (int64 array)."""
        total = np.zeros(len(rows), dtype=np.int64)
        for key, per_domain in self.per_key.items():
            ids = self.table.domain_ids(key)[rows]
            total += np.append(per_domain, 0)[np.where(ids >= 0, np.minimum(ids, len(per_domain)), len(per_domain))]
        return total


def existing_terms_score(scores: TopologyScores, incoming: Pod, namespace_labels: dict[str, str],
                         distinct: dict[str, ScoringTerm], hard_weight: int) -> None:
    """The existing pods' required affinity (at ``hard_weight``) and preferred
    terms that select ``incoming``; ``distinct`` holds (at least) every
    :func:`scoring_terms` of the nodes."""
    table = scores.table
    for key, term, kind, weight in distinct.values():
        if kind == REQUIRED:
            if hard_weight <= 0:
                continue
            weight = hard_weight
        if not term.matches(incoming, namespace_labels):
            continue
        carrying = table.matching_pods(f"{NAME}/scoring/{key}", functools.partial(_scoring_terms, key),
                                       term_tag(term))
        scores.add(term.topology_key, carrying, -weight if kind == PREFERRED_ANTI else weight)


def incoming_terms_score(scores: TopologyScores, terms: tuple[WeightedAffinityTerm, ...], sign: int) -> None:
    """The incoming pod's preferred terms over every existing pod (namespaces resolved)."""
    table = scores.table
    for weighted in terms:
        term = weighted.term
        scores.add(term.topology_key, pods_matching(table, term), sign * weighted.weight)


def normalize(scores: np.ndarray) -> None:
    """Min..max -> 0..100 in place (all equal: all 0), truncating as upstream."""
    if not len(scores):
        return
    lowest, highest = int(scores.min()), int(scores.max())
    spread = highest - lowest
    if spread <= 0:
        scores[:] = 0
        return
    scores[:] = (MAX_NODE_SCORE * ((scores - lowest) / spread)).astype(np.int64)


def _scoring_terms(key: str, info: PodInfo) -> int:
    """How many scoring terms with ``key`` the pod carries."""
    return sum(1 for entry in _pod_scoring_terms(info) if entry[0] == key)
