"""InterPodAffinity: pod affinity and anti-affinity (upstream plugins/interpodaffinity).

Filter: the incoming pod's required affinity ("node(s) didn't match pod
affinity rules", UnschedulableAndUnresolvable: evicting pods cannot help),
its required anti-affinity ("node(s) didn't match pod anti-affinity rules")
and existing pods' required anti-affinity against it ("node(s) didn't
satisfy existing pods anti-affinity rules"), both Unschedulable: preemption
may remove the pods in the way.  A pod whose required affinity selects only
itself, with no matching pod anywhere, may go wherever the topology keys
exist (the first pod of a group).  PreFilter counts once per cycle;
AddPod/RemovePod keep the counts for nominated pods and preemption.

Score: preferred terms both ways, existing pods' required affinity weighted
by ``hardPodAffinityWeight`` (0-100, default 1), normalised min..max to
0..100.  ``ignorePreferredTermsOfExistingPods`` skips scoring for pods
without preferred terms of their own.  A pod without terms in a cluster
without anti-affinity skips both.

Namespaces: a term's ``namespaceSelector`` is matched against the labels of
the Namespace objects; the embedded API server merges
``matchLabelKeys``/``mismatchLabelKeys`` into the selector at pod creation,
as kube-apiserver does.
"""

from __future__ import annotations

import numpy as np
from attrs import frozen

from kubesched import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    AffinityTerms,
    ClusterEvent,
    ClusterEventWithHint,
    NodeTable,
    QueueingHint,
    Status,
    TermIndex,
    WeightedAffinityTerm,
    hookimpl,
    labels_fragment,
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.plugin_helpers.verdicts import filter_status, on_rows

from .filtering import ANTI_TERMS, NAME, REASON_AFFINITY, PreFilterState, anti_terms
from .scoring import SCORING_TERMS, TopologyScores, existing_terms_score, incoming_terms_score, normalize, scoring_terms

PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME


@frozen
class InterPodAffinityArgs:
    """``hardPodAffinityWeight``: the score weight of existing pods' required
    affinity terms that the incoming pod satisfies (0-100, default 1).
    ``ignorePreferredTermsOfExistingPods``: skip scoring for pods without
    preferred terms.  Raises ManifestError as upstream's validation."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def __attrs_post_init__(self):
        if not 0 <= self.hard_pod_affinity_weight <= 100:
            raise ManifestError("hardPodAffinityWeight", f"Invalid value: {self.hard_pod_affinity_weight}: "
                                                         "not in valid range [0-100]")


class InterPodAffinity:
    """PreFilter (with AddPod/RemovePod), Filter, PreScore, Score, NormalizeScore and queueing hints: required and
    preferred pod affinity and anti-affinity, the incoming pod's and existing pods' (upstream plugin
    InterPodAffinity; see the module doc)."""

    name = NAME
    args_class = InterPodAffinityArgs

    def __init__(self, args: InterPodAffinityArgs, handle):
        self.args = args
        self.handle = handle
        self._namespaces = handle.informers.store("Namespace")
        #: the existing pods' distinct required anti-affinity terms by selector tag (kept as the table's grow)
        self._existing_anti = TermIndex()

    # --- namespaces ---------------------------------------------------------------------

    def _namespace_labels(self, name: str) -> dict[str, str]:
        namespace = self._namespaces.get(name)
        return dict(namespace.metadata.labels) if namespace is not None else {}

    def _namespaces_matching(self, selector) -> list[str]:
        return [ns.metadata.name for ns in self._namespaces.values() if selector.matches(ns.metadata.labels)]

    def _resolved(self, terms):
        return tuple(term.resolve_namespaces(self._namespaces_matching) for term in terms)

    def _resolved_weighted(self, terms):
        return tuple(WeightedAffinityTerm(t.weight, t.term.resolve_namespaces(self._namespaces_matching))
                     for t in terms)

    # --- PreFilter / Filter ---------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod):
        """A pod with (anti-)affinity terms of its own depends on other pods: unsignable.  Otherwise existing
        pods' terms may still select it by its labels: signed by them (also with
        ignorePreferredTermsOfExistingPods, where upstream adds nothing: existing pods' required
        anti-affinity still reads the labels)."""
        affinity = pod.spec.affinity
        if affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None):
            return Status.unschedulable("pods with pod affinity or anti-affinity are not signable")
        return [labels_fragment(pod)]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        terms = state.pod_info_of(pod).affinity_terms
        snapshot = self.handle.snapshot
        table = snapshot.table if nodes is snapshot.nodes else NodeTable(list(nodes))
        if not (terms.required_affinity or terms.required_anti_affinity):
            existing = table.merged(ANTI_TERMS, anti_terms, affinity_pods_only=True)
            if next(self._existing_anti.selecting(existing, pod.metadata.labels), None) is None:
                return Status.skip()  # no required term of the pod's, no existing pod's that may select it
        pre = PreFilterState(pod, self._resolved(terms.required_affinity), self._resolved(terms.required_anti_affinity),
                             self._namespace_labels(pod.metadata.namespace), table)
        pre.count_existing_anti(self._existing_anti)
        pre.count_incoming()
        if pre.empty:
            return Status.skip()
        state.write(PRE_FILTER_KEY, pre)
        return None

    @hookimpl
    def pre_filter_add_pod(self, state, pod, pod_info_to_add, node_info):
        pre = state.get(PRE_FILTER_KEY)
        if pre is not None:
            pre.update(pod_info_to_add, node_info.node, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(self, state, pod, pod_info_to_remove, node_info):
        pre = state.get(PRE_FILTER_KEY)
        if pre is not None:
            pre.update(pod_info_to_remove, node_info.node, -1)
        return None

    def _state(self, state, pod) -> PreFilterState | None:
        pre = state.get(PRE_FILTER_KEY)
        if pre is None:  # PreFilter disabled in the profile
            self.pre_filter(state, pod, self.handle.snapshot.nodes)
            pre = state.get(PRE_FILTER_KEY)
        return pre

    @hookimpl
    def filter(self, state, pod, node_info):
        pre = self._state(state, pod)
        if pre is None:
            return None
        return filter_status(pre.verdict(node_info.node), REASON_AFFINITY)

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        pre = self._state(state, pod)
        if pre is None:
            return np.ones(len(rows), dtype=bool)
        return on_rows(table, rows, pre.table, lambda rows: pre.passes(table, rows),
                       lambda info: pre.verdict(info.node) is None)

    # --- PreScore / Score ----------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        if not nodes:
            return None
        terms = state.pod_info_of(pod).affinity_terms
        has_preferred = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return Status.skip()
        table = self.handle.snapshot.table
        existing = table.merged(SCORING_TERMS, scoring_terms, affinity_pods_only=True)
        if not (has_preferred or existing):
            return Status.skip()  # no term of the pod's, none of an existing pod's to score by
        scores = TopologyScores(table)
        incoming_terms_score(scores, self._resolved_weighted(terms.preferred_affinity), 1)
        incoming_terms_score(scores, self._resolved_weighted(terms.preferred_anti_affinity), -1)
        existing_terms_score(scores, pod, self._namespace_labels(pod.metadata.namespace), existing,
                             self.args.hard_pod_affinity_weight)
        if not scores.touched:
            return Status.skip()
        state.write(PRE_SCORE_KEY, scores)
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        scores = state.get(PRE_SCORE_KEY)
        return scores.node(node_info.node.metadata.labels) if scores is not None else 0

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        scores = state.get(PRE_SCORE_KEY)
        if scores is None:
            return np.zeros(len(rows), dtype=np.int64)
        return on_rows(table, rows, scores.table, scores.rows, lambda info: scores.node(info.node.metadata.labels),
                       dtype=np.int64)

    @hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        if state.get(PRE_SCORE_KEY) is not None:
            normalize(scores)
        return None

    # --- queueing hints ------------------------------------------------------------------

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                                              | ActionType.DELETE), self._pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), None),
        ]

    def _pod_change(self, pod, old, new):
        """Queue when an assigned pod came that the pod's affinity wants, or went
        (or changed labels) that its anti-affinity, or the pod's own anti-affinity
        against it, kept away (upstream ``isSchedulableAfterPodChange``)."""
        if old is not None and new is not None and old.metadata.labels == new.metadata.labels:
            return QueueingHint.QUEUE_SKIP
        terms = AffinityTerms.of(pod)
        namespace_labels = self._namespace_labels(pod.metadata.namespace)
        if new is not None:
            wanted = terms.required_affinity + tuple(t.term for t in terms.preferred_affinity)
            if any(term.matches(new, self._namespace_labels(new.metadata.namespace)) for term in wanted):
                return QueueingHint.QUEUE
        if old is not None:
            if any(term.matches(old, self._namespace_labels(old.metadata.namespace))
                   for term in terms.required_anti_affinity):
                return QueueingHint.QUEUE
            theirs = AffinityTerms.of(old).required_anti_affinity
            if any(term.matches(pod, namespace_labels) for term in theirs):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
