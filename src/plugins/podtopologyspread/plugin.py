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

The matching pods per node and per topology domain (one NodeTable
``matching_pods`` count per selector and namespace, over the table's domain
ids per label key) are kept current as pods come and go, so a cycle reads
the counts per domain and judges every node with a few numpy operations,
however many workloads' selectors are live.
"""

from __future__ import annotations

import math

import numpy as np
from attrs import frozen

from kubesched import (
    ASSIGNED_POD,
    FEASIBLE_ROWS_KEY,
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    NodeInfo,
    NodeTable,
    PodCount,
    QueueingHint,
    Status,
    hookimpl,
    selector_tag,
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Node, TopologySpreadConstraint
from kubesched.core.api.nodeaffinity import RequiredNodeAffinity
from kubesched.core.plugin_helpers.default_selector import WorkloadIndex, default_selector, is_empty
from kubesched.core.plugin_helpers.verdicts import filter_status, on_rows

from .constraints import (
    DO_NOT_SCHEDULE,
    HOSTNAME,
    SCHEDULE_ANYWAY,
    ZONE,
    Constraint,
    count_matching,
    default_constraints,
    has_all_keys,
    matches,
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


@frozen
class PodTopologySpreadArgs:
    """``defaultConstraints`` apply to pods without constraints of their own,
    when ``defaultingType`` is ``List`` (upstream's v1 default is ``System``,
    which uses :data:`SYSTEM_DEFAULT_CONSTRAINTS` and requires
    ``defaultConstraints`` to be empty).  Raises ManifestError as upstream's
    ``ValidatePodTopologySpreadArgs``."""

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
    """Per DoNotSchedule constraint: matching pods per topology domain (an
    int64 array indexed by the NodeTable's domain ids), which domains count
    (``present``: they hold a node that passes the inclusion policies), and
    the smallest count (upstream ``preFilterState`` with its
    ``TpValueToMatchNum`` and critical paths)."""

    __slots__ = ("constraints", "table", "counts", "present", "minimums", "required")

    def __init__(self, constraints: list[Constraint], table: NodeTable, counts: list[np.ndarray],
                 present: list[np.ndarray], required: RequiredNodeAffinity):
        self.constraints = constraints
        self.table = table
        self.counts = counts
        self.present = present
        self.required = required
        self.minimums = [self._minimum(index) for index in range(len(constraints))]

    def _minimum(self, index: int) -> int:
        """The global minimum: 0 while there are fewer domains than ``minDomains`` (or none)."""
        present = self.present[index]
        domains = int(np.count_nonzero(present))
        if domains == 0 or domains < self.constraints[index].min_domains:
            return 0
        return int(self.counts[index][present].min())

    def clone(self) -> "PreFilterState":
        """A copy with its own counts and ``present`` arrays, so AddPod/RemovePod on it leave this state alone
        (upstream ``preFilterState.Clone``)."""
        return PreFilterState(self.constraints, self.table, [c.copy() for c in self.counts],
                              [p.copy() for p in self.present], self.required)

    def count_at(self, index: int, value: str) -> int:
        """Matching pods in the domain ``value`` of constraint ``index``."""
        domain = self.table.domain_id(self.constraints[index].topology_key, value)
        counts = self.counts[index]
        return int(counts[domain]) if 0 <= domain < len(counts) else 0

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
            domain = self.table.domain_id(constraint.topology_key, labels[constraint.topology_key])
            if not 0 <= domain < len(self.counts[index]):
                continue  # a node outside the snapshot
            self.counts[index][domain] += delta
            self.present[index][domain] = True
            self.minimums[index] = self._minimum(index)


class PreScoreState:
    """ScheduleAnyway constraints, the feasible nodes they ignore (missing a
    key), matching pods per topology domain slot (domain id + 1, slot 0 for
    nodes without the key; hostname constraints: per NodeTable row instead),
    each constraint's weight, and each constraint's score term ready to pick
    rows from (``terms``: float64, ``count x weight + maxSkew - 1`` per domain
    id, the last entry 0 for nodes without the key; for hostname, which rows
    have the label, None when all do: its term is computed on the rows scored)."""

    __slots__ = ("constraints", "ignored", "counts", "weights", "terms", "namespace", "table")

    def __init__(self, constraints, ignored, counts, weights, terms, namespace, table):
        self.constraints = constraints
        self.ignored = ignored
        self.counts = counts
        self.weights = weights
        self.terms = terms
        self.namespace = namespace
        self.table = table


class PodTopologySpread:
    """PreFilter (with AddPod/RemovePod), Filter, PreScore, Score, NormalizeScore and queueing hints: spreads pods
    matching each topology spread constraint (or the profile's default constraints) over topology domains (upstream
    plugin PodTopologySpread; see the module doc)."""

    name = NAME
    args_class = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs, handle):
        self.defaults = args.effective_defaults
        self.system_defaulted = args.defaulting_type == SYSTEM
        self.handle = handle
        self._default_actions = {spec.when_unsatisfiable for spec in self.defaults}
        #: the Services, ReplicationControllers, ReplicaSets and StatefulSets that may select a pod
        self._workloads = WorkloadIndex(handle.informers) if self.defaults else None

    # --- constraints ----------------------------------------------------------------------

    def _constraints(self, pod, action: str) -> list[Constraint]:
        """The pod's own constraints of ``action``, or the defaults (upstream ``getConstraints``)."""
        if pod.spec.topology_spread_constraints:
            return pod_constraints(pod, action)
        if action not in self._default_actions or self._workloads is None:
            return []
        workloads = self._workloads.selecting(pod)
        if not workloads:  # nothing could select the pod
            return []
        selector = default_selector(pod, workloads)
        if is_empty(selector):
            return []
        return default_constraints(self.defaults, action, selector)

    # --- the node table ---------------------------------------------------------------------

    def _table(self, nodes) -> NodeTable:
        """The snapshot's table when ``nodes`` are the snapshot's nodes, else a table of ``nodes``."""
        snapshot = self.handle.snapshot
        if nodes is snapshot.nodes:
            return snapshot.table
        return NodeTable(list(nodes))

    @staticmethod
    def _matching(table: NodeTable, constraint: Constraint, namespace: str) -> PodCount:
        """The pods in ``namespace`` that the constraint selects, per row and per domain (kept current as pods come
        and go)."""
        selector = constraint.selector
        return table.matching_pods(f"{NAME}/{namespace}/{constraint.key}",
                                   lambda info: matches(info.pod, selector, namespace), selector_tag(selector))

    @staticmethod
    def _keyed(table: NodeTable, constraints: list[Constraint]) -> np.ndarray:
        """Rows whose node has every constraint's topology key (a column kept per set of keys: read-only)."""
        keys = tuple(sorted({constraint.topology_key for constraint in constraints}))
        return table.column(f"{NAME}/keyed/{keys!r}", lambda info: all(key in info.labels for key in keys), dtype=bool,
                            of_node=True)

    @staticmethod
    def _included(table: NodeTable, pod, constraints: list[Constraint], required: RequiredNodeAffinity,
                  keyed: np.ndarray) -> list[np.ndarray]:
        """Per constraint, the rows that count as its domains: ``keyed`` and
        passing its node inclusion policies."""
        by_affinity = by_taints = None
        result = []
        for constraint in constraints:
            mask = keyed
            if constraint.honor_node_affinity and not required.is_empty:
                if by_affinity is None:
                    by_affinity = table.matching_node_affinity(required)
                mask = mask & by_affinity
            if constraint.honor_node_taints:
                if by_taints is None:
                    by_taints = table.tolerating(pod.spec.tolerations)
                mask = mask & by_taints
            result.append(mask)
        return result

    # --- PreFilter / Filter -----------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod):
        """Spreading counts other pods: a pod with constraints, its own or defaulted, is unsignable (upstream's
        messages).  Upstream refuses every pod while default constraints are configured; kubesched only the
        pods the defaults select (their workloads'), so a bare pod under the System defaults is signed."""
        if pod.spec.topology_spread_constraints:
            return Status.unschedulable("pods with topology constraints are not signable")
        if self.defaults and self._all_constraints(pod):
            return Status.unschedulable("pods with default topology constraints are not signable")
        return None

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return Status.skip()
        required = RequiredNodeAffinity(pod)
        namespace = pod.metadata.namespace
        table = self._table(nodes)
        keyed = self._keyed(table, constraints)
        whole = bool(keyed.all())
        counts, present = [], []
        for constraint, mask in zip(constraints, self._included(table, pod, constraints, required, keyed)):
            key = constraint.topology_key
            matching = self._matching(table, constraint, namespace)
            if mask is keyed and whole:  # every node counts: the counts kept per domain
                counts.append(matching.per_domain(key).copy())
                present.append(table.domain_nodes(key) > 0)
                continue
            ids = table.domain_ids(key)[mask]
            size = table.domain_count(key)
            counts.append(np.bincount(ids, weights=matching.per_node[mask], minlength=size).astype(np.int64))
            present.append(np.bincount(ids, minlength=size) > 0)
        state.write(PRE_FILTER_KEY, PreFilterState(constraints, table, counts, present, required))
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

    @staticmethod
    def _judge(pre: PreFilterState, pod_labels: dict[str, str], labels: dict[str, str]) -> str | None:
        """The rejection reason for a node with ``labels``, or None."""
        for index, constraint in enumerate(pre.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                return REASON_NODE_LABEL_NOT_MATCH
            self_match = 1 if constraint.selector.matches(pod_labels) else 0
            if pre.count_at(index, value) + self_match - pre.minimums[index] > constraint.max_skew:
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
        return filter_status(self._judge(pre, pod.metadata.labels, node_info.node.metadata.labels),
                             REASON_NODE_LABEL_NOT_MATCH)

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        pre = self._state(state, pod)
        if pre is None:
            return np.ones(len(rows), dtype=bool)
        labels = pod.metadata.labels
        return on_rows(table, rows, pre.table, lambda rows: self._passes(pre, pod, table, rows),
                       lambda info: self._judge(pre, labels, info.node.metadata.labels) is None)

    def _passes(self, pre, pod, table, rows: np.ndarray) -> np.ndarray:
        """Filter over the NodeTable ``rows`` of the table ``pre`` was computed on."""
        passes = np.ones(len(rows), dtype=bool)
        for index, constraint in enumerate(pre.constraints):
            ids = table.domain_ids(constraint.topology_key)[rows]
            counts = pre.counts[index]
            known = (ids >= 0) & (ids < len(counts))
            matching = np.where(known, counts[np.where(known, ids, 0)] if len(counts) else 0, 0)
            self_match = 1 if constraint.selector.matches(pod.metadata.labels) else 0
            passes &= (ids >= 0) & (matching + self_match - pre.minimums[index] <= constraint.max_skew)
        return passes

    # --- PreScore / Score -------------------------------------------------------------------

    @hookimpl
    def pre_score(self, state, pod, nodes):
        snapshot = self.handle.snapshot
        if not nodes or not snapshot.nodes:
            return None
        constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status.skip()
        table = snapshot.table
        feasible = state.get(FEASIBLE_ROWS_KEY)
        if feasible is None or len(feasible) != len(nodes):
            feasible = np.fromiter((snapshot.index[info.name] for info in nodes), dtype=np.intp, count=len(nodes))
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        keyed = self._keyed(table, constraints) if require_all else None
        whole = keyed is None or bool(keyed.all())
        if whole:
            keyed, ignored, counted = np.ones(len(table), dtype=bool) if keyed is None else keyed, set(), feasible
        else:
            ignored = {table.infos[row].name for row in feasible[~keyed[feasible]]}
            counted = feasible[keyed[feasible]]
        namespace = pod.metadata.namespace
        required = RequiredNodeAffinity(pod)
        weights, counts, terms = [], [], []
        for constraint, mask in zip(constraints, self._included(table, pod, constraints, required, keyed)):
            key = constraint.topology_key
            matching = self._matching(table, constraint, namespace)
            labelled = int(table.domain_nodes(key).sum()) == len(table)
            if key == HOSTNAME:  # read per row: a node is its own domain
                weights.append(math.log(len(counted) + 2))
                counts.append(matching.per_node)
                terms.append(None if labelled else table.domain_ids(key) >= 0)
                continue
            # a node without the key is in the domain "" (slot 0), as upstream
            size = table.domain_count(key) + 1
            wanted = np.zeros(size, dtype=bool)
            if labelled and len(counted) == len(table):  # every node, each with the key
                wanted[1:] = table.domain_nodes(key) > 0
            else:
                wanted[table.domain_ids(key)[counted] + 1] = True
            weight = math.log(int(np.count_nonzero(wanted)) + 2)
            if mask is keyed and whole and labelled:
                per_domain = np.concatenate(([0], matching.per_domain(key)))  # every node counts, none in ""
            else:
                slots = table.domain_ids(key) + 1
                per_domain = np.bincount(slots[mask], weights=matching.per_node[mask], minlength=size).astype(np.int64)
            weights.append(weight)
            counts.append(np.where(wanted, per_domain, 0))
            term = np.empty(size, dtype=np.float64)  # indexed by domain id; -1 (no key) picks the last entry, 0
            term[:-1] = counts[-1][1:] * weight + (constraint.max_skew - 1)
            term[-1] = 0.0
            terms.append(term)
        state.write(PRE_SCORE_KEY, PreScoreState(constraints, ignored, counts, weights, terms, namespace, table))
        return None

    @staticmethod
    def _scores(pre: PreScoreState, rows: np.ndarray) -> np.ndarray:
        """The scores of the NodeTable ``rows``: each constraint's term summed, rounded half up."""
        table = pre.table
        total = np.zeros(len(rows), dtype=np.float64)
        for index, (constraint, term) in enumerate(zip(pre.constraints, pre.terms)):
            key = constraint.topology_key
            if key != HOSTNAME:
                total += term[table.domain_ids(key)[rows]]
                continue
            part = pre.counts[index][rows] * pre.weights[index] + (constraint.max_skew - 1)
            total += part if term is None else np.where(term[rows], part, 0.0)  # nodes without the label: nothing
        return np.floor(total + 0.5).astype(np.int64)

    @staticmethod
    def _score_node(pre: PreScoreState, node_info: NodeInfo) -> int:
        """Score of one node (what :meth:`_scores` gives its row)."""
        labels = node_info.labels
        total = 0.0
        for index, constraint in enumerate(pre.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                continue
            if constraint.topology_key == HOSTNAME:
                matching = count_matching(node_info, constraint.selector, pre.namespace)
            else:
                slot = pre.table.domain_id(constraint.topology_key, value) + 1
                counts = pre.counts[index]
                matching = int(counts[slot]) if 0 < slot < len(counts) else 0
            total += matching * pre.weights[index] + (constraint.max_skew - 1)
        return int(math.floor(total + 0.5))

    @hookimpl
    def score(self, state, pod, node_info):
        pre = state.get(PRE_SCORE_KEY)
        if pre is None or node_info.name in pre.ignored:
            return 0
        return self._score_node(pre, node_info)

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        pre = state.get(PRE_SCORE_KEY)
        if pre is None:
            return np.zeros(len(rows), dtype=np.int64)
        return on_rows(table, rows, pre.table, lambda rows: self._rows_scores(pre, table, rows),
                       lambda info: 0 if info.name in pre.ignored else self._score_node(pre, info), dtype=np.int64)

    def _rows_scores(self, pre, table, rows: np.ndarray) -> np.ndarray:
        """Score over the NodeTable ``rows`` of the table ``pre`` was computed on (ignored nodes 0)."""
        scores = self._scores(pre, rows)
        if pre.ignored:
            scores[np.isin(table.names[rows], list(pre.ignored))] = 0
        return scores

    @hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        pre = state.get(PRE_SCORE_KEY)
        if pre is None:
            return None
        if not pre.ignored:  # every node counted
            if len(scores):
                lowest, highest = int(scores.min()), int(scores.max())
                scores[:] = MAX_NODE_SCORE if highest == 0 else MAX_NODE_SCORE * (highest + lowest - scores) // highest
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
