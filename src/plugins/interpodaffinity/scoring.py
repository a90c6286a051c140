"""InterPodAffinity's PreScore map and NormalizeScore (upstream interpodaffinity/scoring.go).

PreScore sums, per topology key and value, the weights of every preferred
term that holds between the incoming pod and an existing pod (both
directions: the incoming pod's preferred terms over existing pods, existing
pods' preferred terms and - weighted by ``hardPodAffinityWeight`` - required
affinity terms over the incoming pod); anti-affinity terms subtract.  A
node's score is the sum over its labels; NormalizeScore maps the range
min..max to 0..100.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

import numpy as np

from kubesched.core.api.core_v1 import Node, Pod
from kubesched.core.framework.affinity import AffinityTerm, WeightedAffinityTerm
from kubesched.core.framework.nodeinfo import PodInfo
from kubesched.core.framework.types import MAX_NODE_SCORE

#: topology key -> topology value -> score
TopologyScore = dict[str, dict[str, int]]


class ScoreMap:
    """Accumulates term weights per topology pair of the existing pods' nodes."""

    def __init__(self):
        self.scores: TopologyScore = defaultdict(lambda: defaultdict(int))

    def term(self, term: AffinityTerm, weight: int, pod: Pod, namespace_labels: dict[str, str] | None,
             node: Node, sign: int) -> None:
        if term.matches(pod, namespace_labels):
            value = node.metadata.labels.get(term.topology_key)
            if value is not None:
                self.scores[term.topology_key][value] += weight * sign

    def terms(self, terms: Iterable[WeightedAffinityTerm], pod: Pod, namespace_labels: dict[str, str] | None,
              node: Node, sign: int) -> None:
        for weighted in terms:
            self.term(weighted.term, weighted.weight, pod, namespace_labels, node, sign)

    def existing_pod(self, incoming: Pod, preferred_affinity: tuple[WeightedAffinityTerm, ...],
                     preferred_anti: tuple[WeightedAffinityTerm, ...], namespace_labels: dict[str, str],
                     existing: PodInfo, node: Node, hard_weight: int) -> None:
        """Everything one existing pod on ``node`` contributes (upstream ``processExistingPod``)."""
        if not node.metadata.labels:
            return
        pod = existing.pod
        self.terms(preferred_affinity, pod, None, node, 1)
        self.terms(preferred_anti, pod, None, node, -1)
        theirs = existing.affinity_terms
        if hard_weight > 0:
            for term in theirs.required_affinity:
                self.term(term, hard_weight, incoming, namespace_labels, node, 1)
        self.terms(theirs.preferred_affinity, incoming, namespace_labels, node, 1)
        self.terms(theirs.preferred_anti_affinity, incoming, namespace_labels, node, -1)

    def result(self) -> TopologyScore:
        """The non-empty part, as plain dicts."""
        return {key: dict(values) for key, values in self.scores.items() if values}


def node_score(scores: TopologyScore, labels: dict[str, str]) -> int:
    """The sum over the node's topology pairs."""
    total = 0
    for key, values in scores.items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


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
