"""The snapshot a scheduling cycle reads, with a columnar (numpy) view of its nodes.

:class:`Snapshot` is what ``handle.snapshot`` gives plugins: the NodeInfo of
every node, in a stable order, valid for one scheduling cycle.  Its
:class:`NodeTable` holds per-node numbers as numpy arrays in the same order, so
batch Filter/Score forms can judge every node in one vectorised step.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

import numpy as np

from ..api.core_v1 import Toleration
from ..api.nodeaffinity import RequiredNodeAffinity
from ..api.taints import find_untolerated_taint, is_hard
from .nodeinfo import NodeInfo, PodInfo
from .pod_counts import PodCount, PodCounts
from .resources import PODS

#: How many evictable columns (per label selector, say) a NodeTable keeps: a kept column costs its memory (a number
#: per node) and, when asked for again, recomputing the rows changed since; more distinct live keys than this (say,
#: more workloads' selectors interleaved) rebuild a whole column per miss.
MAX_EVICTABLE_COLUMNS = 1024
#: A merged dict (see :meth:`NodeTable.merged`) past this size is rebuilt from the rows.
MAX_MERGED_ENTRIES = 4096
#: How many derived columns (see :meth:`NodeTable.derived`: whether a pod of some requests fits, say) a NodeTable keeps, least
#: recently used dropped first: a kept one costs a number per node; a miss computes it over every row at once.
MAX_DERIVED_COLUMNS = 64
#: At most this many changed rows of a derived column are judged one by one (more: at once, vectorised).
MAX_JUDGED_ROWS = 16


class NodeTable:
    """Columns of per-node values, row ``i`` = ``snapshot.nodes[i]``.

    A column is defined by a key and an extractor ``NodeInfo -> value``; it is
    computed on first use and then kept current row by row as nodes change.
    :meth:`allocatable` and :meth:`requested` give resource columns (int64,
    scheduler units); :meth:`pod_count` the number of pods per node;
    :meth:`domain_ids` each node's topology domain for a label key.
    Columns asked for as ``evictable`` (one per label selector, say) are
    dropped least recently used first beyond :data:`MAX_EVICTABLE_COLUMNS`,
    and brought up to date only when asked for (the rows changed since their
    last use are recomputed then), so keeping many costs memory, not work on
    every change.  Columns asked
    for as ``of_node`` read only the Node object (allocatable, labels, taints,
    images): a row whose pods changed but whose Node did not keeps them.
    """

    def __init__(self, infos: list[NodeInfo]):
        self.infos = infos
        #: the node names, row by row (an object array: ``names[rows]`` picks many at once)
        self.names = np.array([info.name for info in infos], dtype=object)
        #: the NodeInfos as an object array (``info_array[rows]`` picks many at once)
        self.info_array = np.empty(len(infos), dtype=object)
        self.info_array[:] = infos
        self._columns: dict[str, tuple[Callable[[NodeInfo], Any], np.ndarray]] = {}
        self._of_node: set[str] = set()
        #: what :meth:`refresh` recomputes, (every column kept current, those of them that read pods), made when
        #: first needed after a column came
        self._kept_current: tuple[list[tuple[Callable[[NodeInfo], Any], np.ndarray]], ...] | None = None
        #: evictable column -> the position in ``_log`` up to which it is current, least recently used first
        self._evictable: dict[str, int] = {}
        #: the rows changed (and whether only their pods did) since the evictable columns' oldest position,
        #: ``_log[0]`` being position ``_log_base``
        self._log: list[tuple[int, bool]] = []
        self._log_base = 0
        self._domains: dict[str, dict[str, int]] = {}
        self._domain_nodes: dict[str, np.ndarray] = {}
        self._pod_counts = PodCounts(self)
        self._merged: dict[str, tuple[Callable[[NodeInfo], dict], dict]] = {}
        #: matrix key -> the matrix (values, nodes); ``_columns`` holds its by-node view, kept current row by row
        self._matrices: dict[str, np.ndarray] = {}
        #: derived column key -> (its values over every row, the position in ``_log`` up to which they are current),
        #: least recently used first
        self._derived: dict[Hashable, tuple[np.ndarray, int]] = {}

    def __len__(self) -> int:
        return len(self.infos)

    def column(self, key: str, extract: Callable[[NodeInfo], Any], dtype: Any = np.int64,
               evictable: bool = False, of_node: bool = False) -> np.ndarray:
        """The column ``key``, built with ``extract`` the first time it is asked for; ``of_node``: ``extract``
        reads only ``info.node`` and what NodeInfo derives from it (allocatable, labels), never the pods."""
        entry = self._columns.get(key)
        if entry is None:
            values = np.fromiter((extract(info) for info in self.infos), dtype=dtype, count=len(self.infos))
            self._columns[key] = (extract, values)
            self._kept_current = None
            if of_node:
                self._of_node.add(key)
            if evictable:
                self._evictable[key] = self._log_base + len(self._log)
                if len(self._evictable) > MAX_EVICTABLE_COLUMNS:
                    oldest = next(iter(self._evictable))
                    del self._evictable[oldest]
                    del self._columns[oldest]
                    self._of_node.discard(oldest)
            return values
        current = self._evictable.pop(key, None)
        if current is not None:  # the most recently used goes last; catch up with the rows changed since
            self._catch_up(key, current)
            self._evictable[key] = self._log_base + len(self._log)
        return entry[1]

    def _matrix(self, key: str, extract: Callable[[NodeInfo], list[int]], width: int,
                of_node: bool = False) -> np.ndarray:
        """The matrix ``key``: ``width`` int64 values per row (``extract`` gives a row's), kept as ``width``
        contiguous rows of one value per node - shape (width, nodes) - so that ``matrix.take(rows, axis=1)``
        gathers every value of many nodes in one step and a pod's amounts (``amounts[:, None]``) compare with
        them at once; kept current as nodes change as a column is (never evictable)."""
        matrix = self._matrices.get(key)
        if matrix is None:
            by_node = np.fromiter((extract(info) for info in self.infos), dtype=(np.int64, width),
                                  count=len(self.infos))
            matrix = self._matrices[key] = np.ascontiguousarray(by_node.T)
            self._columns[key] = (extract, matrix.T)  # the refresh writes a node's values through this view
            self._kept_current = None
            if of_node:
                self._of_node.add(key)
        return matrix

    def derived(self, key: Hashable, compute: Callable[[np.ndarray], np.ndarray],
                judge: Callable[[int], Any] | None = None) -> np.ndarray:
        """The column ``key`` computed by ``compute`` (vectorised: given ascending int64 rows, their values as an
        array) over every row the first time it is asked for; on each later use only the rows changed since
        (their nodes or their pods) are judged again, one by one with ``judge`` (a row -> its value, the same as
        ``compute``'s, or None to leave that row to ``compute``) when given and they are few, else by
        ``compute``: a value that depends on a pod's shape and a node (whether the pod fits there, its score
        there) then costs a cycle the nodes changed since its last use.  ``compute`` must read only what the
        table keeps current (columns and matrices that are not evictable) and give each row a value of its own
        alone.  The :data:`MAX_DERIVED_COLUMNS` most recently used are kept.  Read-only: index it (``values[rows]``
        is a copy), never write into it."""
        now = self._log_base + len(self._log)
        entry = self._derived.pop(key, None)
        if entry is None or entry[1] < self._log_base:
            values = compute(np.arange(len(self.infos), dtype=np.int64))
        else:
            values, current = entry
            if current < now:
                changed = {row for row, _ in self._log[current - self._log_base:]}
                if judge is not None and len(changed) <= MAX_JUDGED_ROWS:
                    left = []
                    for row in changed:
                        value = judge(row)
                        if value is None:
                            left.append(row)
                        else:
                            values[row] = value
                    changed = set(left)
                if changed:
                    rows = np.array(sorted(changed), dtype=np.int64)
                    values[rows] = compute(rows)
        self._derived[key] = (values, now)
        if len(self._derived) > MAX_DERIVED_COLUMNS:
            del self._derived[next(iter(self._derived))]
        return values

    def _catch_up(self, key: str, current: int) -> None:
        """Recompute the rows of evictable column ``key`` that changed since log position ``current`` (all of them
        when the log no longer reaches back that far)."""
        extract, values = self._columns[key]
        if current < self._log_base:
            values[:] = np.fromiter((extract(info) for info in self.infos), dtype=values.dtype, count=len(self.infos))
            return
        keep_on_pod_change = key in self._of_node
        changed = {row for row, pods_only in self._log[current - self._log_base:]
                   if not (pods_only and keep_on_pod_change)}
        for row in changed:
            values[row] = extract(self.infos[row])

    def per_node(self, rows: np.ndarray, judge: Callable[[NodeInfo], Any], dtype: Any = bool) -> np.ndarray:
        """``judge`` of each row's NodeInfo, node by node (for a batch hook handed a
        table its cycle state was not computed on)."""
        infos = self.infos
        return np.fromiter((judge(infos[r]) for r in rows), dtype=dtype, count=len(rows))

    def merged(self, key: str, extract: Callable[[NodeInfo], dict]) -> dict:
        """The union of the dicts ``extract`` gives every row (say, the distinct
        terms of the nodes' pods), built the first time ``key`` is asked for and
        then merged with the changed rows.  It only grows (an entry may outlive
        the pods it came from) until it passes :data:`MAX_MERGED_ENTRIES`, when
        it is rebuilt from the rows."""
        entry = self._merged.get(key)
        if entry is None or len(entry[1]) > MAX_MERGED_ENTRIES:
            union: dict = {}
            for info in self.infos:
                union.update(extract(info))
            self._merged[key] = (extract, union)
            return union
        return entry[1]

    def matching_node_affinity(self, required: RequiredNodeAffinity) -> np.ndarray:
        """Per row, whether the node matches a pod's nodeSelector and required
        node affinity (an evictable column per distinct constraint)."""
        return self.column("node-affinity/" + required.key, lambda info: required.matches(info.require_node()), dtype=bool,
                           evictable=True, of_node=True)

    def tolerating(self, tolerations: tuple[Toleration, ...]) -> np.ndarray:
        """Per row, whether the node has no NoSchedule/NoExecute taint that
        ``tolerations`` leave untolerated (an evictable column per distinct
        tolerations; a node without such taints costs nothing)."""
        if not tolerations:
            return self.column("untainted/hard", lambda info: not any(is_hard(t) for t in info.require_node().spec.taints),
                               dtype=bool, of_node=True)
        return self.column("tolerated/" + repr(tolerations), lambda info: not info.require_node().spec.taints or (
            find_untolerated_taint(info.require_node().spec.taints, tolerations, is_hard) is None), dtype=bool, evictable=True,
            of_node=True)

    def domain_ids(self, key: str) -> np.ndarray:
        """Per row, the id of the node's value of label ``key`` (its topology
        domain for that key), -1 for a node without the label.  Ids are
        stable for the table's life; :meth:`domain_id` maps a value to its id
        and :meth:`domain_count` bounds them."""
        ids = self._domains.setdefault(key, {})

        def extract(info: NodeInfo) -> int:
            value = info.labels.get(key)
            if value is None:
                return -1
            return ids.setdefault(value, len(ids))

        return self.column("domain/" + key, extract, dtype=np.int32, of_node=True)

    def domain_nodes(self, key: str) -> np.ndarray:
        """Per domain id of label ``key``, how many nodes are in it (int64; kept until nodes change)."""
        sizes = self._domain_nodes.get(key)
        if sizes is None:
            ids = self.domain_ids(key)
            sizes = self._domain_nodes[key] = np.bincount(ids[ids >= 0], minlength=self.domain_count(key))
        return sizes

    def matching_pods(self, key: str, weight: Callable[[PodInfo], int], tag: Hashable | None) -> PodCount:
        """The count ``key``: ``weight`` of each pod summed per node and per topology domain, kept current as pods
        come and go (see :mod:`.pod_counts`; ``tag``: one that every pod of positive weight carries, from
        ``selector_tag`` or ``term_tag``, or None).  The table keeps the most recently used
        :data:`~.pod_counts.MAX_POD_COUNT_BYTES` of them; making one weighs the pods carrying its tag once."""
        return self._pod_counts.get(key, weight, tag)

    def domain_id(self, key: str, value: str) -> int:
        """The id of ``value`` of label ``key`` (-1 if no node had it)."""
        return self._domains.get(key, {}).get(value, -1)

    def domain_values(self, key: str) -> list[str]:
        """The values of label ``key``, indexed by domain id."""
        return list(self._domains.get(key, ()))

    def domain_count(self, key: str) -> int:
        """How many distinct values of label ``key`` the nodes had."""
        return len(self._domains.get(key, ()))

    def allocatable(self, resource: str) -> np.ndarray:
        """Per row, the node's allocatable ``resource`` (int64: milli-CPU for cpu, bytes for memory and storage, counts
        otherwise)."""
        return self.column(f"allocatable/{resource}", lambda info: info.allocatable.get(resource, 0), of_node=True)

    def requested(self, resource: str) -> np.ndarray:
        """Per row, the sum of the node's pods' requests of ``resource`` (int64, units as :meth:`allocatable`)."""
        return self.column(f"requested/{resource}", lambda info: info.requested.get(resource, 0))

    def pod_count(self) -> np.ndarray:
        """Per row, how many pods (bound and assumed) the node holds (int64)."""
        return self.column("pods", lambda info: len(info.pods))

    def free(self, resource: str) -> np.ndarray:
        """Per row, :meth:`allocatable` minus :meth:`requested` of ``resource`` (int64, negative when the node's
        pods ask for more than it has), kept as a column of its own: a Filter compares it once per pod."""
        return self.column(f"free/{resource}",
                           lambda info: info.allocatable.get(resource, 0) - info.requested.get(resource, 0))

    def free_pods(self) -> np.ndarray:
        """Per row, how many more pods the node's allocatable ``pods`` admits (int64, :meth:`pod_count` subtracted)."""
        return self.column("free-pods", lambda info: info.allocatable.get(PODS, 0) - len(info.pods))

    def allocatable_matrix(self, resources: tuple[str, ...]) -> np.ndarray:
        """:meth:`allocatable` of each of ``resources``: int64, shape (len(resources), nodes) (see
        :meth:`_matrix`)."""
        return self._matrix(f"allocatable[{','.join(resources)}]",
                            lambda info: [info.allocatable.get(name, 0) for name in resources], len(resources),
                            of_node=True)

    def requested_matrix(self, resources: tuple[str, ...], non_zero: bool = False) -> np.ndarray:
        """:meth:`requested` of each of ``resources``: int64, shape (len(resources), nodes) (see
        :meth:`_matrix`); with ``non_zero`` cpu and memory as scoring counts them (NodeInfo's ``non_zero_cpu``
        and ``non_zero_memory``: upstream's non-zero requests)."""
        return self._matrix(f"{'nonzero' if non_zero else 'requested'}[{','.join(resources)}]",
                            lambda info: info.scoring_requested(resources, non_zero), len(resources))

    def refresh(self, rows: Iterable[int], pods_only: bool = False) -> None:
        """Recompute every column at ``rows`` (after those nodes changed); with
        ``pods_only`` (only their pods changed, not their Node objects) the
        ``of_node`` columns are kept.  Evictable columns are recomputed when
        next asked for (the rows are logged until then)."""
        rows = list(rows)
        if not rows:
            return
        kept = self._kept_current
        if kept is None:
            every = [(key, entry) for key, entry in self._columns.items() if key not in self._evictable]
            kept = self._kept_current = ([entry for _, entry in every],
                                         [entry for key, entry in every if key not in self._of_node])
        infos = self.infos
        if len(rows) == 1:  # the usual change (a pod assumed or forgotten): no loop per column
            row = rows[0]
            info = infos[row]
            for extract, values in kept[pods_only]:
                values[row] = extract(info)
            for extract, union in self._merged.values():
                union.update(extract(info))
            self._log.append((row, pods_only))
        else:
            for extract, values in kept[pods_only]:
                for row in rows:
                    values[row] = extract(infos[row])
            for extract, union in self._merged.values():
                for row in rows:
                    union.update(extract(infos[row]))
            self._log.extend((row, pods_only) for row in rows)
        if not pods_only:
            self._domain_nodes.clear()
        self._pod_counts.refresh(rows, nodes_changed=not pods_only)
        reach = max(len(self.infos), 1)
        if len(self._log) > 2 * reach:  # a column further behind than a whole table is rebuilt instead
            dropped = len(self._log) - reach
            del self._log[:dropped]
            self._log_base += dropped


class Snapshot:
    """Nodes as the current scheduling cycle sees them.

    ``nodes`` is the list of NodeInfo (only nodes that exist), ``table`` its
    columnar view, :meth:`get` finds one by name.  Built and refreshed by the
    scheduler cache (:meth:`Cache.update_snapshot`).
    """

    def __init__(self, nodes: list[NodeInfo] | None = None):
        self.nodes: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.table = NodeTable([])
        self.generations: list[int] = []
        self._node_objects: list[Any] = []
        if nodes is not None:
            self.rebuild(nodes)

    def rebuild(self, nodes: list[NodeInfo]) -> None:
        """Replace the nodes with ``nodes``: a new index, NodeTable and generations."""
        self.nodes = list(nodes)
        self.index = {info.name: i for i, info in enumerate(self.nodes)}
        self.table = NodeTable(self.nodes)
        self.generations = [info.generation for info in self.nodes]
        self._node_objects = [info.node for info in self.nodes]

    def refresh(self, names: Iterable[str]) -> None:
        """Note that the nodes ``names`` changed in place (their pods, or their Node objects)."""
        node_rows, pod_rows = [], []
        for name in names:
            row = self.index.get(name)
            if row is None:
                continue
            info = self.nodes[row]
            if self.generations[row] != info.generation:
                self.generations[row] = info.generation
                if self._node_objects[row] is info.node:
                    pod_rows.append(row)
                else:
                    self._node_objects[row] = info.node
                    node_rows.append(row)
        self.table.refresh(node_rows)
        self.table.refresh(pod_rows, pods_only=True)

    def get(self, name: str) -> NodeInfo | None:
        """The NodeInfo of node ``name``, or None when the snapshot has no such node."""
        row = self.index.get(name)
        return self.nodes[row] if row is not None else None

    def __len__(self) -> int:
        return len(self.nodes)
