"""PodTopologySpread: spread matching pods evenly over topology domains
(upstream plugins/podtopologyspread).

PreFilter counts, per ``DoNotSchedule`` constraint, the pods the constraint's
selector matches (in the incoming pod's namespace) in every topology domain of
the nodes that count (nodes with all the constraints' topology keys that pass
the node inclusion policies).  Filter rejects a node whose domain would then
exceed ``maxSkew`` over the smallest domain ("node(s) didn't match pod topology
spread constraints", Unschedulable: preemption may help) and a node missing a
topology key ("... (missing required label)", UnschedulableAndUnresolvable).
The domain minimum is 0 when fewer domains than ``minDomains`` exist.
AddPod/RemovePod keep the counts right for nominated pods and preemption dry
runs.

PreScore/Score, for ``ScheduleAnyway`` constraints: a node scores the
matching pods of its domain, each constraint weighted by log(number of
domains + 2), plus ``maxSkew - 1``; NormalizeScore inverts the scores so the
emptiest domain gets 100.  Pods without constraints get the profile's default
constraints (``defaultingType: System``: hostname maxSkew 3 and zone maxSkew 5,
ScheduleAnyway) with the selector of the Services, ReplicationControllers,
ReplicaSets and StatefulSets that select them.

Per-node counts are cached by (selector, namespace) and NodeInfo generation,
so a cycle only recounts the nodes that changed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from attrs import frozen

from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Node, TopologySpreadConstraint
from kubesched.core.api.nodeaffinity import RequiredNodeAffinity
from kubesched.core.framework.hookspecs import hookimpl
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.status import Code, Status
from kubesched.core.framework.types import (
    ASSIGNED_POD,
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from kubesched.core.plugin_helpers.default_selector import WORKLOAD_KINDS, default_selector, is_empty

from .constraints import (
    DO_NOT_SCHEDULE,
    HOSTNAME,
    SCHEDULE_ANYWAY,
    ZONE,
    Constraint,
    count_matching,
    default_constraints,
    has_all_keys,
    pod_constraints,
)

NAME = "PodTopologySpread"
REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

SYSTEM, LIST = "System", "List"
#: Upstream's system default constraints (``defaultingType: System``).
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)
#: Cached per-node counts are dropped when this many (selector, namespace) pairs pile up.
MAX_CACHED_SELECTORS = 256


@frozen
class PodTopologySpreadArgs:
    """``defaultConstraints`` apply to pods without constraints of their own,
    when ``defaultingType`` is ``List`` (upstream's v1 default is ``System``,
    which uses :data:`SYSTEM_DEFAULT_CONSTRAINTS` and requires
    ``defaultConstraints`` to be empty).  Raises ManifestError as upstream's
    ``ValidatePodTopologySpreadArgs``."""

    STRICT: ClassVar[bool] = True
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM

    def __attrs_post_init__(self):
        if self.defaulting_type not in (SYSTEM, LIST):
            raise ManifestError("defaultingType", f"Unsupported value: {self.defaulting_type!r}: supported values: "
                                                  "\"System\", \"List\"")
        if self.defaulting_type == SYSTEM and self.default_constraints:
            raise ManifestError("defaultConstraints", "Invalid value: when .defaultingType is \"System\", "
                                                      ".defaultConstraints must be empty")
        seen = set()
        for index, constraint in enumerate(self.default_constraints):
            where = f"defaultConstraints[{index}]"
            if constraint.label_selector is not None:
                raise ManifestError(f"{where}.labelSelector", "Forbidden: constraint must not define a selector, "
                                                              "as they deduced for each pod")
            pair = (constraint.topology_key, constraint.when_unsatisfiable)
            if pair in seen:
                raise ManifestError(where, f"Duplicate value: {{{pair[0]}, {pair[1]}}}")
            seen.add(pair)

    @property
    def effective_defaults(self) -> tuple[TopologySpreadConstraint, ...]:
        return SYSTEM_DEFAULT_CONSTRAINTS if self.defaulting_type == SYSTEM else self.default_constraints


class PreFilterState:
    """Per DoNotSchedule constraint: matching pods per topology value of the
    nodes that count, and the smallest such count (upstream ``preFilterState``
    with its ``TpValueToMatchNum`` and critical paths)."""

    __slots__ = ("constraints", "counts", "minimums", "required")

    def __init__(self, constraints: list[Constraint], counts: list[dict[str, int]], required: RequiredNodeAffinity):
        self.constraints = constraints
        self.counts = counts
        self.required = required
        self.minimums = [min(c.values()) if c else None for c in counts]

    def clone(self) -> "PreFilterState":
        return PreFilterState(self.constraints, [dict(c) for c in self.counts], self.required)

    def min_match(self, index: int) -> int:
        """The global minimum for constraint ``index``: 0 while there are fewer
        domains than ``minDomains`` (or none at all)."""
        counts = self.counts[index]
        if len(counts) < self.constraints[index].min_domains or self.minimums[index] is None:
            return 0
        return self.minimums[index]

    def update(self, pod, preemptor, node: Node, delta: int) -> None:
        """``pod`` added to (delta 1) or removed from (-1) ``node`` in a dry run."""
        if pod.metadata.namespace != preemptor.metadata.namespace:
            return
        labels = node.metadata.labels
        if not has_all_keys(labels, self.constraints):
            return
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(pod.metadata.labels):
                continue
            if not constraint.includes(preemptor, node, self.required):
                continue
            value = labels[constraint.topology_key]
            counts = self.counts[index]
            counts[value] = counts.get(value, 0) + delta
            self.minimums[index] = min(counts.values())


class PreScoreState:
    """ScheduleAnyway constraints, the feasible nodes they ignore (missing a
    key), matching pods per topology value, and each constraint's weight."""

    __slots__ = ("constraints", "ignored", "counts", "weights")

    def __init__(self, constraints, ignored, counts, weights):
        self.constraints = constraints
        self.ignored = ignored
        self.counts = counts
        self.weights = weights


class PodTopologySpread:
    name = NAME
    args_class = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs, handle):
        self.defaults = args.effective_defaults
        self.system_defaulted = args.defaulting_type == SYSTEM
        self.handle = handle
        informers = getattr(handle, "informers", None)
        self._stores = [informers.store(kind) for kind in WORKLOAD_KINDS] if informers is not None and self.defaults \
            else []
        self._counts: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}

    # --- constraints ----------------------------------------------------------------------

    def _constraints(self, pod, action: str) -> list[Constraint]:
        """The pod's own constraints of ``action``, or the defaults (upstream ``getConstraints``)."""
        if pod.spec.topology_spread_constraints:
            return pod_constraints(pod, action)
        if not self.defaults or not any(d.when_unsatisfiable == action for d in self.defaults):
            return []
        selector = default_selector(pod, (obj for store in self._stores for obj in store.values()))
        if is_empty(selector):
            return []
        return default_constraints(self.defaults, action, selector)

    def _count(self, node_info: NodeInfo, constraint: Constraint, namespace: str) -> int:
        """Matching pods on the node, recounted only when the NodeInfo changed."""
        cache = self._counts.get((constraint.key, namespace))
        if cache is None:
            if len(self._counts) >= MAX_CACHED_SELECTORS:
                self._counts.clear()
            cache = self._counts[(constraint.key, namespace)] = {}
        name = node_info.name
        entry = cache.get(name)
        if entry is not None and entry[0] == node_info.generation:
            return entry[1]
        count = count_matching(node_info, constraint.selector, namespace)
        cache[name] = (node_info.generation, count)
        return count

    # --- PreFilter / Filter -----------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return Status.skip()
        required = RequiredNodeAffinity(pod)
        namespace = pod.metadata.namespace
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node_info in nodes:
            node = node_info.node
            labels = node.metadata.labels
            if not has_all_keys(labels, constraints):
                continue
            for index, constraint in enumerate(constraints):
                if not constraint.includes(pod, node, required):
                    continue
                value = labels[constraint.topology_key]
                domain = counts[index]
                domain[value] = domain.get(value, 0) + self._count(node_info, constraint, namespace)
        state.write(PRE_FILTER_KEY, PreFilterState(constraints, counts, required))
        return None

    @hookimpl
    def pre_filter_add_pod(self, state, pod, pod_info_to_add, node_info):
        pre = state.get(PRE_FILTER_KEY)
        if pre is not None:
            pre.update(pod_info_to_add.pod, pod, node_info.node, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(self, state, pod, pod_info_to_remove, node_info):
        pre = state.get(PRE_FILTER_KEY)
        if pre is not None:
            pre.update(pod_info_to_remove.pod, pod, node_info.node, -1)
        return None

    def _judge(self, pre: PreFilterState, pod_labels: dict[str, str], labels: dict[str, str]) -> str | None:
        """The rejection reason for a node with ``labels``, or None."""
        for index, constraint in enumerate(pre.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                return REASON_NODE_LABEL_NOT_MATCH
            self_match = 1 if constraint.selector.matches(pod_labels) else 0
            skew = pre.counts[index].get(value, 0) + self_match - pre.min_match(index)
            if skew > constraint.max_skew:
                return REASON_CONSTRAINTS_NOT_MATCH
        return None

    def _state(self, state, pod) -> PreFilterState:
        pre = state.get(PRE_FILTER_KEY)
        if pre is None:  # PreFilter disabled in the profile: compute it now, as upstream
            self.pre_filter(state, pod, self.handle.snapshot.nodes)
            pre = state.get(PRE_FILTER_KEY)
        return pre

    @hookimpl
    def filter(self, state, pod, node_info):
        pre = self._state(state, pod)
        if pre is None:
            return None
        reason = self._judge(pre, pod.metadata.labels, node_info.node.metadata.labels)
        if reason is None:
            return None
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if reason == REASON_NODE_LABEL_NOT_MATCH else Code.UNSCHEDULABLE
        return Status(code, (reason,))

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        pre = self._state(state, pod)
        if pre is None:
            return np.ones(len(rows), dtype=bool)
        infos, labels = table.infos, pod.metadata.labels
        return np.fromiter((self._judge(pre, labels, infos[r].node.metadata.labels) is None for r in rows),
                           dtype=bool, count=len(rows))

    # --- PreScore / Score -------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        all_nodes = self.handle.snapshot.nodes if self.handle is not None else nodes
        if not nodes or not all_nodes:
            return None
        constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node_info in nodes:
            labels = node_info.node.metadata.labels
            if require_all and not has_all_keys(labels, constraints):
                ignored.add(node_info.name)
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key != HOSTNAME:  # a node without the key adds the domain "", as upstream
                    counts[index].setdefault(labels.get(constraint.topology_key, ""), 0)
        weights = []
        for index, constraint in enumerate(constraints):
            size = len(nodes) - len(ignored) if constraint.topology_key == HOSTNAME else len(counts[index])
            weights.append(math.log(size + 2))
        required = RequiredNodeAffinity(pod)
        namespace = pod.metadata.namespace
        for node_info in all_nodes:
            node = node_info.node
            labels = node.metadata.labels
            if require_all and not has_all_keys(labels, constraints):
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key == HOSTNAME or not constraint.includes(pod, node, required):
                    continue
                value = labels.get(constraint.topology_key, "")
                domain = counts[index]
                if value in domain:
                    domain[value] += self._count(node_info, constraint, namespace)
        state.write(PRE_SCORE_KEY, PreScoreState(constraints, ignored, counts, weights))
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        pre = state.get(PRE_SCORE_KEY)
        if pre is None or node_info.name in pre.ignored:
            return 0
        labels = node_info.node.metadata.labels
        total = 0.0
        for index, constraint in enumerate(pre.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                continue
            if constraint.topology_key == HOSTNAME:
                count = self._count(node_info, constraint, pod.metadata.namespace)
            else:
                count = pre.counts[index].get(value, 0)
            total += count * pre.weights[index] + (constraint.max_skew - 1)
        return int(math.floor(total + 0.5))

    @hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        pre = state.get(PRE_SCORE_KEY)
        if pre is None:
            return None
        counted = np.array([name not in pre.ignored for name in node_names], dtype=bool)
        if not counted.any():
            scores[:] = 0
            return None
        lowest, highest = int(scores[counted].min()), int(scores[counted].max())
        if highest == 0:
            scores[:] = np.where(counted, MAX_NODE_SCORE, 0)
            return None
        scores[:] = np.where(counted, MAX_NODE_SCORE * (highest + lowest - scores) // highest, 0)
        return None

    # --- queueing hints ---------------------------------------------------------------------

    @hookimpl
    def events_to_register(self):
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                                              | ActionType.DELETE), self._pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL
                                              | ActionType.UPDATE_NODE_TAINT), self._node_change),
        ]

    def _all_constraints(self, pod) -> list[Constraint]:
        return self._constraints(pod, DO_NOT_SCHEDULE) + self._constraints(pod, SCHEDULE_ANYWAY)

    def _pod_change(self, pod, old, new):
        """Queue when a pod in the same namespace that a constraint selects came,
        went or changed labels (upstream ``isSchedulableAfterPodChange``)."""
        changed = [p for p in (old, new) if p is not None]
        namespace = pod.metadata.namespace
        for constraint in self._all_constraints(pod):
            for other in changed:
                if other.metadata.namespace == namespace and constraint.selector.matches(other.metadata.labels):
                    return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _node_change(self, pod, old, new):
        """Queue when the node carries (or carried) every topology key of the
        pod's constraints, and for taint changes when taints are honoured
        (upstream ``isSchedulableAfterNodeChange``)."""
        constraints = self._all_constraints(pod)
        if not constraints:
            return QueueingHint.QUEUE_SKIP
        for node in (old, new):
            if node is not None and has_all_keys(node.metadata.labels, constraints):
                if old is not None and new is not None and old.metadata.labels == new.metadata.labels \
                        and old.spec.taints != new.spec.taints \
                        and not any(c.honor_node_taints for c in constraints):
                    return QueueingHint.QUEUE_SKIP
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
