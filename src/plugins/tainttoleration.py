"""TaintToleration: pods must tolerate a node's hard taints; soft taints lower the score
(upstream plugins/tainttoleration).

Filter: the first NoSchedule/NoExecute taint the pod does not tolerate makes
the node UnschedulableAndUnresolvable: "node(s) had untolerated taint {key: value}".
Score: the number of PreferNoSchedule taints the pod does not tolerate,
normalised in reverse (fewest intolerable taints = 100); its batch form is a
NodeTable column per distinct set of the pod's tolerations.
"""

from __future__ import annotations

import numpy as np

from kubesched import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    hookimpl,
    normalizes_scores_alone,
    tolerations_fragment,
)
from kubesched.core.api.taints import find_untolerated_taint, is_hard, tolerates
from kubesched.core.plugin_helpers.normalize import default_normalize_score

STATE_KEY = "PreScoreTaintToleration"


def _prefer_no_schedule(taint) -> bool:
    return taint.effect == "PreferNoSchedule"


def _intolerable(tolerations, taints) -> int:
    """How many of ``taints`` are PreferNoSchedule taints ``tolerations`` do not tolerate."""
    return sum(1 for t in taints if _prefer_no_schedule(t) and not tolerates(tolerations, t))


def _intolerable_column(state, table) -> np.ndarray:
    """Per NodeTable row, how many PreferNoSchedule taints the pod's PreScore tolerations do not tolerate (a
    column per set of tolerations)."""
    tolerations = state.get(STATE_KEY)
    if not tolerations:
        return table.column("taints/soft", lambda info: sum(map(_prefer_no_schedule, info.node.spec.taints)),
                            of_node=True)
    return table.column(f"taints/soft-untolerated/{tolerations!r}",
                        lambda info: _intolerable(tolerations, info.require_node().spec.taints),
                        evictable=True, of_node=True)


class TaintToleration:
    """Filter, PreScore, Score, NormalizeScore and a queueing hint on node add/taint updates: hard taints the pod does
    not tolerate reject the node, intolerable PreferNoSchedule taints lower its score (upstream plugin
    TaintToleration; see the module doc)."""

    name = "TaintToleration"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def sign_pod(self, pod):
        """Filter and Score read the pod's tolerations."""
        return [tolerations_fragment(pod)]

    @hookimpl
    def filter(self, state, pod, node_info):
        taints = node_info.node.spec.taints
        if not taints:  # most nodes: nothing to tolerate
            return None
        taint = find_untolerated_taint(taints, pod.spec.tolerations, is_hard)
        if taint is None:
            return None
        return Status.unresolvable(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        return table.tolerating(pod.spec.tolerations)[np.asarray(rows, dtype=np.intp)]

    @hookimpl
    def pre_score(self, state, pod, nodes):
        state.write(STATE_KEY, tuple(t for t in pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")))
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        return _intolerable(state.get(STATE_KEY, ()), node_info.node.spec.taints)

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        return _intolerable_column(state, table)[rows]

    @hookimpl
    def score_row(self, state, pod, table, row):
        return int(_intolerable_column(state, table)[row])

    @hookimpl
    @normalizes_scores_alone
    def normalize_score(self, state, pod, node_names, scores):
        default_normalize_score(scores, reverse=True)
        return None

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                     self._node_change)]

    @staticmethod
    def _node_change(pod, old, new):
        """Queue when the node now has no hard taint the pod cannot tolerate."""
        if new is None:
            return QueueingHint.QUEUE_SKIP
        was_ok = old is not None and find_untolerated_taint(old.spec.taints, pod.spec.tolerations, is_hard) is None
        now_ok = find_untolerated_taint(new.spec.taints, pod.spec.tolerations, is_hard) is None
        return QueueingHint.QUEUE if now_ok and not was_ok else QueueingHint.QUEUE_SKIP
