"""NodeAffinity: ``spec.nodeSelector`` and node affinity (upstream plugins/nodeaffinity).

PreFilter: Skip when the pod has no node selector and no required affinity;
``matchFields metadata.name In [...]`` in every term narrows the nodes to
filter (PreFilterResult).  Filter: "node(s) didn't match Pod's node
affinity/selector" (UnschedulableAndUnresolvable).  Score: the sum of the
weights of the matching preferred terms, normalised to 0-100 (its batch
form: a NodeTable column per distinct preferred term, weighted and summed).
``NodeAffinityArgs.addedAffinity`` applies to every pod of the profile.
"""

from __future__ import annotations

import numpy as np
from attrs import frozen

from kubesched import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    PreFilterResult,
    QueueingHint,
    Status,
    hookimpl,
    node_affinity_fragments,
    normalizes_scores_alone,
)
from kubesched.core.api.core_v1 import NodeAffinity as NodeAffinitySpec
from kubesched.core.api.core_v1 import NodeSelectorTerm
from kubesched.core.api.nodeaffinity import (
    NAME_FIELD,
    RequiredNodeAffinity,
    selector_matches,
    term_matches,
)
from kubesched.core.plugin_helpers.normalize import default_normalize_score

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
FILTER_KEY = "PreFilterNodeAffinity"
SCORE_KEY = "PreScoreNodeAffinity"


#: How many distinct preferred terms' column keys a NodeAffinity plugin remembers (it starts afresh when full).
MAX_PREFERENCE_KEYS = 4096


@frozen
class NodeAffinityArgs:
    """``addedAffinity``: node affinity applied to every pod of the profile on top of its own (upstream
    NodeAffinityArgs, kubescheduler.config.k8s.io/v1)."""

    added_affinity: NodeAffinitySpec | None = None


class NodeAffinity:
    """PreFilter, Filter, PreScore, Score, NormalizeScore and a queueing hint on node add/label updates:
    ``spec.nodeSelector``, required and preferred node affinity, plus the profile's ``addedAffinity`` (upstream
    plugin NodeAffinity; see the module doc)."""

    name = "NodeAffinity"
    args_class = NodeAffinityArgs

    def __init__(self, args: NodeAffinityArgs, handle):
        added = args.added_affinity
        self.added_required = added.required_during_scheduling_ignored_during_execution if added else None
        self.added_preferred = added.preferred_during_scheduling_ignored_during_execution if added else ()
        #: preferred term -> its column's key (the term's text, made once per distinct term rather than per pod)
        self._preference_keys: dict[NodeSelectorTerm, str] = {}

    @staticmethod
    def _required(pod):
        affinity = pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity else None
        return node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None

    @hookimpl
    def sign_pod(self, pod):
        """Filter and Score read the pod's node affinity and nodeSelector (addedAffinity is the profile's)."""
        return node_affinity_fragments(pod)

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        required = self._required(pod)
        if required is None and self.added_required is None and not pod.spec.node_selector:
            return Status.skip()
        state.write(FILTER_KEY, RequiredNodeAffinity(pod))
        if required is None or not required.node_selector_terms:
            return None
        names: set[str] | None = None
        for term in required.node_selector_terms:
            term_names: set[str] | None = None
            for req in term.match_fields:
                if req.key == NAME_FIELD and req.operator == "In":
                    term_names = set(req.values) if term_names is None else term_names & set(req.values)
            if term_names is None:
                return None
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_CONFLICT,))
        return (PreFilterResult(frozenset(names)), None) if names else None

    def _matches(self, state, pod, node) -> Status | None:
        if self.added_required is not None and not selector_matches(self.added_required, node):
            return Status.unresolvable(REASON_ENFORCED)
        required = state.get(FILTER_KEY) or RequiredNodeAffinity(pod)
        if not required.matches(node):
            return Status.unresolvable(REASON_POD)
        return None

    @hookimpl
    def filter(self, state, pod, node_info):
        return self._matches(state, pod, node_info.node)

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        rows = np.asarray(rows, dtype=np.intp)
        passes = table.matching_node_affinity(state.get(FILTER_KEY) or RequiredNodeAffinity(pod))[rows]
        if self.added_required is not None:
            added = self.added_required
            # keyed by the selector itself: profiles with different addedAffinity share the snapshot
            passes = passes & table.column(f"NodeAffinity/addedAffinity/{added!r}",
                                           lambda info: selector_matches(added, info.node), dtype=bool,
                                           evictable=True)[rows]
        return passes

    def _preferred_terms(self, pod):
        affinity = pod.spec.affinity
        preferred = affinity.node_affinity.preferred_during_scheduling_ignored_during_execution \
            if affinity and affinity.node_affinity else ()
        return tuple(t for t in tuple(preferred) + tuple(self.added_preferred) if t.weight)

    @hookimpl
    def pre_score(self, state, pod, nodes):
        terms = self._preferred_terms(pod)
        if not terms:
            return Status.skip()
        state.write(SCORE_KEY, terms)
        return None

    def _scored_terms(self, state, pod):
        terms = state.get(SCORE_KEY)
        if terms is None:  # PreScore disabled in the profile: work the terms out here, as upstream
            terms = self._preferred_terms(pod)
        return terms

    @hookimpl
    def score(self, state, pod, node_info):
        node = node_info.node
        labels, name = node.metadata.labels, node.metadata.name
        return sum(t.weight for t in self._scored_terms(state, pod) if term_matches(t.preference, labels, name))

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        rows = np.asarray(rows, dtype=np.intp)
        scores = np.zeros(len(rows), dtype=np.int64)
        for term in self._scored_terms(state, pod):
            scores += term.weight * self._preference_matches(table, term.preference)[rows]
        return scores

    def _preference_matches(self, table, preference: NodeSelectorTerm) -> np.ndarray:
        """Per row of ``table``, whether the node matches the preferred term's ``preference`` (an evictable column
        per distinct term: pods of one workload share theirs)."""
        key = self._preference_keys.get(preference)
        if key is None:
            if len(self._preference_keys) >= MAX_PREFERENCE_KEYS:
                self._preference_keys.clear()
            key = self._preference_keys[preference] = f"NodeAffinity/preferred/{preference!r}"
        return table.column(key, lambda info: term_matches(preference, info.require_node().metadata.labels,
                                                           info.name),
                            dtype=bool, evictable=True, of_node=True)

    @hookimpl
    @normalizes_scores_alone
    def normalize_score(self, state, pod, node_names, scores):
        default_normalize_score(scores, reverse=False)
        return None

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                                     self._node_change)]

    def _node_change(self, pod, old, new):
        """Queue when the changed node now matches the pod's required affinity."""
        if new is None:
            return QueueingHint.QUEUE_SKIP
        if self.added_required is not None and not selector_matches(self.added_required, new):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        if not required.matches(new):
            return QueueingHint.QUEUE_SKIP
        if old is not None and required.matches(old):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
