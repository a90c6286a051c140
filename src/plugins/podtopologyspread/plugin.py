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
from typing import Any, Callable

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
)
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Node, TopologySpreadConstraint
from kubesched.core.api.nodeaffinity import RequiredNodeAffinity
from kubesched.core.plugin_helpers.default_selector import WorkloadIndex, default_selector, is_empty
from kubesched.core.plugin_helpers.verdicts import filter_status, on_rows

from .constraints import (
    DO_NOT_SCHEDULE,
    HOSTNAME,
    MAX_CACHED_CONSTRAINT_SETS,
    SCHEDULE_ANYWAY,
    ZONE,
    Constraint,
    ConstraintCache,
    count_matching,
    default_constraints,
    has_all_keys,
    matches,
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


class Domains:
    """The topology domains of one label key in a NodeTable, as PreScore reads them: ``ids`` (the table's domain id
    per row, -1 for a node without the label), ``count`` (distinct values), ``labelled`` (every node has the label),
    ``slots`` (``ids`` with -1 made ``count``: a node without the label is in the domain ""), ``present`` (per slot,
    whether a node is in it: ``count + 1`` bools, the last for "") and ``present_count``.  Kept while the table's
    ``domain_nodes`` array for the key is the same object (the table makes a new one when nodes change)."""

    __slots__ = ("sizes", "ids", "count", "labelled", "slots", "present", "present_count")

    def __init__(self, table: NodeTable, key: str, sizes: np.ndarray):
        self.sizes = sizes
        self.ids = table.domain_ids(key)
        self.count = table.domain_count(key)
        self.labelled = int(sizes.sum()) == len(table)
        self.slots = self.ids if self.labelled else np.where(self.ids < 0, self.count, self.ids)
        self.present = np.append(sizes > 0, not self.labelled)
        self.present_count = int(np.count_nonzero(self.present))


class PreScoreState:
    """What Score reads (upstream ``preScoreState``): the ScheduleAnyway constraints, the feasible nodes they ignore
    (missing a key), the rows PreScore was given (``rows``) and, per constraint, its weight (log of its domains + 2),
    its domains (:class:`Domains`), the domain slots holding a feasible node (``wanted``; hostname: None) and its
    score term (``terms``).  A zone-like constraint's term is ``count x weight + maxSkew - 1`` per domain id
    (float64, matching pods counted when PreScore ran), the last entry 0 (nodes without the key score nothing); a
    domain holding no feasible node counts 0 pods.  A hostname constraint reads the live per-node counts
    (``host_counts``) on the rows scored, as upstream counts a node's pods in Score.  ``picked``: each constraint's
    domain ids of ``rows``, and ``single``: the one zone-like constraint's term rounded (int64) when it is the only
    constraint, so Score over ``rows`` is one pick."""

    __slots__ = ("constraints", "ignored", "rows", "weights", "domains", "wanted", "terms", "host_counts", "picked",
                 "single", "namespace", "table")

    def __init__(self, constraints, ignored, rows, namespace, table):
        self.constraints = constraints
        self.ignored = ignored
        self.rows = rows
        self.namespace = namespace
        self.table = table
        self.weights: list[float] = []
        self.domains: list[Domains] = []
        # per constraint, an array or None (see above: hostname has no wanted slots nor term, others no host counts)
        self.wanted: list[Any] = []
        self.terms: list[Any] = []
        self.host_counts: list[Any] = []
        self.picked: list[Any] = []
        self.single: np.ndarray | None = None


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
        #: the last pod asked about, the workload index's version then, its constraints by action (PreFilter,
        #: PreScore, sign_pod and the hints ask about the same pod in turn)
        self._last: tuple[object, int, dict[str, list[Constraint]]] = (None, -1, {})
        #: pods' own constraints, shared by the pods whose constraints are alike
        self._own = ConstraintCache()
        #: (namespace, selector key) -> the NodeTable count's key and weight (at most MAX_CACHED_CONSTRAINT_SETS)
        self._counted: dict[tuple[str, str], tuple[str, Callable[[Any], int]]] = {}
        #: topology key -> its domains in the snapshot's table (see :class:`Domains`)
        self._domains: dict[str, Domains] = {}

    # --- constraints ----------------------------------------------------------------------

    def _constraints(self, pod, action: str) -> list[Constraint]:
        """The pod's own constraints of ``action``, or the defaults (upstream ``getConstraints``); the last pod's are
        kept until a workload object changes (read-only)."""
        version = self._workloads.version if self._workloads is not None else 0
        last = self._last
        if last[0] is not pod or last[1] != version:  # a pod's own constraints are shared by the pods alike
            last = self._last = (pod, version, self._own.of(pod) if pod.spec.topology_spread_constraints else {})
        found = last[2].get(action)
        if found is None:
            found = last[2][action] = self._find_constraints(pod, action)
        return found

    def _find_constraints(self, pod, action: str) -> list[Constraint]:
        """The profile's default constraints of ``action`` for a pod without constraints of its own."""
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

    def _matching(self, table: NodeTable, constraint: Constraint, namespace: str) -> PodCount:
        """The pods in ``namespace`` that the constraint selects, per row and per domain (kept current as pods come
        and go)."""
        counted = self._counted.get((namespace, constraint.key))
        if counted is None:
            if len(self._counted) >= MAX_CACHED_CONSTRAINT_SETS:
                self._counted.clear()
            selector = constraint.selector
            counted = self._counted[namespace, constraint.key] = (
                f"{NAME}/{namespace}/{constraint.key}", lambda info: matches(info.pod, selector, namespace))
        return table.matching_pods(counted[0], counted[1], constraint.tag)

    def _domains_of(self, table: NodeTable, key: str) -> Domains:
        """The domains of ``key`` in ``table`` (kept while its nodes do not change)."""
        sizes = table.domain_nodes(key)
        domains = self._domains.get(key)
        if domains is None or domains.sizes is not sizes:
            domains = self._domains[key] = Domains(table, key, sizes)
        return domains

    @staticmethod
    def _keyed(table: NodeTable, constraints: list[Constraint]) -> np.ndarray:
        """Rows whose node has every constraint's topology key (a column kept per set of keys: read-only)."""
        keys = tuple(sorted({constraint.topology_key for constraint in constraints}))
        return table.column(f"{NAME}/keyed/{keys!r}", lambda info: all(key in info.labels for key in keys), dtype=bool,
                            of_node=True)

    @staticmethod
    def _included(table: NodeTable, pod, constraints: list[Constraint], required: RequiredNodeAffinity,
                  keyed: np.ndarray | None) -> list[np.ndarray | None]:
        """Per constraint, the rows that count as its domains: ``keyed`` (None: every row) and
        passing its node inclusion policies (None: every row)."""
        by_affinity = by_taints = None
        result = []
        for constraint in constraints:
            mask = keyed
            if constraint.honor_node_affinity and not required.is_empty:
                if by_affinity is None:
                    by_affinity = table.matching_node_affinity(required)
                mask = by_affinity if mask is None else mask & by_affinity
            if constraint.honor_node_taints:
                if by_taints is None:
                    by_taints = table.tolerating(pod.spec.tolerations)
                mask = by_taints if mask is None else mask & by_taints
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
        domains = [self._domains_of(table, constraint.topology_key) for constraint in constraints]
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        keyed = None  # every row has every key, or need not
        if require_all and not all(found.labelled for found in domains):
            keyed = self._keyed(table, constraints)
        if keyed is None:
            ignored, counted = frozenset(), feasible
        else:
            ignored = {table.infos[row].name for row in feasible[~keyed[feasible]]}
            counted = feasible[keyed[feasible]]
        pre = PreScoreState(constraints, ignored, feasible, pod.metadata.namespace, table)
        masks = self._included(table, pod, constraints, RequiredNodeAffinity(pod), keyed)
        for constraint, found, mask in zip(constraints, domains, masks):
            self._prescore_constraint(pre, table, constraint, found, mask, counted)
        if len(constraints) == 1 and pre.terms[0] is not None:  # terms are never negative: truncating is flooring
            pre.single = (pre.terms[0] + 0.5).astype(np.int64)
        state.write(PRE_SCORE_KEY, pre)
        return None

    def _prescore_constraint(self, pre: PreScoreState, table: NodeTable, constraint: Constraint, found: Domains,
                             mask: np.ndarray | None, counted: np.ndarray) -> None:
        """Add ``constraint``'s weight, domains and term to ``pre`` (``mask``: the rows counting as its domains,
        None for every row; ``counted``: the feasible rows not ignored)."""
        matching = self._matching(table, constraint, pre.namespace)
        pre.domains.append(found)
        if constraint.topology_key == HOSTNAME:  # read per row: a node is its own domain
            pre.picked.append(None if found.labelled else found.ids[pre.rows])
            pre.weights.append(math.log(len(counted) + 2))
            pre.wanted.append(None)
            pre.terms.append(None)
            pre.host_counts.append(matching.per_node)
            return
        # a node without the key is in the domain "" (the last slot), as upstream
        picked = found.ids[pre.rows]
        if len(counted) == len(table):
            wanted = found.present
            weight = math.log(found.present_count + 2)
        else:
            wanted = np.zeros(found.count + 1, dtype=bool)
            wanted[picked if counted is pre.rows else found.ids[counted]] = True  # id -1 marks the last slot
            weight = math.log(int(np.count_nonzero(wanted)) + 2)
        if mask is None and found.labelled:
            per_domain = matching.per_domain(constraint.topology_key)  # every node counts, none in ""
        else:
            rows = slice(None) if mask is None else mask
            per_domain = np.bincount(found.slots[rows], weights=matching.per_node[rows],
                                     minlength=found.count + 1)[:found.count]
        term = np.zeros(found.count + 1, dtype=np.float64)  # indexed by domain id: -1 (no key) picks the last, 0
        np.multiply(per_domain, weight, out=term[:found.count])
        if constraint.max_skew != 1:
            term[:found.count] += constraint.max_skew - 1
        pre.picked.append(picked)
        pre.weights.append(weight)
        pre.wanted.append(wanted)
        pre.terms.append(term)
        pre.host_counts.append(None)

    @staticmethod
    def _scores(pre: PreScoreState, rows: np.ndarray) -> np.ndarray:
        """The scores of the NodeTable ``rows``: each constraint's term summed, rounded half up."""
        same = rows is pre.rows
        if same and pre.single is not None:
            return pre.single[pre.picked[0]]
        total = None  # the first constraint's part (a new array), the others' added to it in their order
        for index, constraint in enumerate(pre.constraints):
            term, found = pre.terms[index], pre.domains[index]
            if term is None:  # hostname: nodes without the label score nothing
                part = pre.host_counts[index][rows] * pre.weights[index]
                if constraint.max_skew != 1:
                    part += constraint.max_skew - 1
                if not found.labelled:
                    part = np.where((pre.picked[index] if same else found.ids[rows]) >= 0, part, 0.0)
            elif same:  # the rows PreScore was given: each in a domain holding a feasible node
                part = term[pre.picked[index]]
            else:  # a domain without a feasible node counts no pod
                ids = found.ids[rows]
                part = np.where(pre.wanted[index][ids] | (ids < 0), term[ids], float(constraint.max_skew - 1))
            if total is None:
                total = part
            else:
                total += part
        if total is None:
            return np.zeros(len(rows), dtype=np.int64)
        total += 0.5
        return np.floor(total, out=total).astype(np.int64)

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
                total += matching * pre.weights[index] + (constraint.max_skew - 1)
                continue
            domain = pre.table.domain_id(constraint.topology_key, value)
            if 0 <= domain < pre.domains[index].count and pre.wanted[index][domain]:
                total += float(pre.terms[index][domain])
            else:  # no feasible node in the domain: it counts no pod
                total += constraint.max_skew - 1
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
        if rows is pre.rows and table is pre.table and not pre.ignored:  # the rows PreScore was given
            return self._scores(pre, rows)
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
                lowest, highest = int(np.minimum.reduce(scores)), int(np.maximum.reduce(scores))
                if highest == 0:
                    scores[:] = MAX_NODE_SCORE
                else:
                    np.subtract(highest + lowest, scores, out=scores)
                    scores *= MAX_NODE_SCORE
                    scores //= highest
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
