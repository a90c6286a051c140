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
from .resources import CPU, MEMORY, PODS

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
    Columns asked for as ``of_node`` read only the Node object (allocatable,
    labels, taints, images): a row whose pods changed but whose Node did not
    keeps them, and a row whose Node changed has them recomputed at once.
    Every other column (one that reads the pods) is brought up to date when
    it is next asked for: the rows changed since its last use are recomputed
    then, so a gang assuming and forgetting its members node by node costs
    no column work until a cycle reads the column.  An array the table hands
    out is current when handed out: ask again after the snapshot changed,
    never keep one across cycles.  Columns asked for as ``evictable`` (one
    per label selector, say) are dropped least recently used first beyond
    :data:`MAX_EVICTABLE_COLUMNS`, so keeping many costs memory, not work on
    every change.
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
        #: what :meth:`refresh` recomputes at once when Node objects changed (the ``of_node`` columns that are not
        #: evictable), made when first needed after a column came
        self._node_columns: list[tuple[Callable[[NodeInfo], Any], np.ndarray]] | None = None
        #: column (or matrix) that reads pods and is not evictable -> the position in ``_log`` up to which it is
        #: current (it catches up with the rows changed since when next asked for)
        self._lazy: dict[str, int] = {}
        #: evictable column -> the position in ``_log`` up to which it is current, least recently used first
        self._evictable: dict[str, int] = {}
        #: the rows changed (and whether only their pods did) since the evictable columns' oldest position,
        #: ``_log[0]`` being position ``_log_base``
        self._log: list[tuple[int, bool]] = []
        self._log_base = 0
        #: (from, to, the rows changed between these log positions) of the last :meth:`_changed_since`
        self._changed_memo: tuple[int, int, set[int]] = (-1, -1, set())
        #: the log is cut back to the table's size when it grows past twice that
        self._log_limit = 2 * max(len(infos), 1)
        self._domains: dict[str, dict[str, int]] = {}
        self._domain_nodes: dict[str, np.ndarray] = {}
        self._pod_counts = PodCounts(self)
        #: merged dict key -> (its extract, the dict, whether only rows with pods with affinity count)
        self._merged: dict[str, tuple[Callable[[NodeInfo], dict], dict, bool]] = {}
        #: whether a merged dict reads every changed row (one not ``affinity_pods_only``)
        self._merged_reads_every_row = False
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
            if of_node:
                self._of_node.add(key)
                self._node_columns = None
            elif not evictable:
                self._lazy[key] = self._log_base + len(self._log)
            if evictable:
                self._evictable[key] = self._log_base + len(self._log)
                if len(self._evictable) > MAX_EVICTABLE_COLUMNS:
                    oldest = next(iter(self._evictable))
                    del self._evictable[oldest]
                    del self._columns[oldest]
                    self._of_node.discard(oldest)
            return values
        current = self._lazy.get(key)
        if current is not None:
            self._keep_up(key, current)
            return entry[1]
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
            self._columns[key] = (extract, matrix.T)  # a node's values are written through this view
            if of_node:
                self._of_node.add(key)
                self._node_columns = None
            else:
                self._lazy[key] = self._log_base + len(self._log)
            return matrix
        current = self._lazy.get(key)
        if current is not None:
            self._keep_up(key, current)
        return matrix

    def derived(self, key: Hashable, compute: Callable[[np.ndarray], np.ndarray],
                judge: Callable[[int], Any] | None = None) -> np.ndarray:
        """The column ``key`` computed by ``compute`` (vectorised: given ascending int64 rows, their values as an
        array) over every row the first time it is asked for; on each later use only the rows changed since
        (their nodes or their pods) are judged again, one by one with ``judge`` (a row -> its value, the same as
        ``compute``'s, or None to leave that row to ``compute``) when given and they are few, else by
        ``compute``: a value that depends on a pod's shape and a node (whether the pod fits there, its score
        there) then costs a cycle the nodes changed since its last use.  ``compute`` must read the table's columns and
        matrices (not evictable ones) through their methods, which bring them up to date, and give each row a
        value of its own alone.  The :data:`MAX_DERIVED_COLUMNS` most recently used are kept.  Read-only: index it (``values[rows]``
        is a copy), never write into it."""
        now = self._log_base + len(self._log)
        entry = self._derived.pop(key, None)
        if entry is None or entry[1] < self._log_base:
            values = compute(np.arange(len(self.infos), dtype=np.int64))
        else:
            values, current = entry
            if current < now:
                changed = self._changed_since(current)
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

    def position(self) -> int:
        """The log position now: what :meth:`rewind` takes back to."""
        return self._log_base + len(self._log)

    def rewind(self, position: int) -> bool:
        """Forget the rows logged since ``position`` (from :meth:`position`), when every node changed since is back
        as it was then (a PodGroup placement's members assumed, then forgotten) and only its pods changed: the
        columns, matrices and derived columns none has read since then need not judge those rows again.  Refused
        (False, nothing changes) when the log no longer reaches back there, a Node changed, or something that
        reads pods was brought up to date past ``position`` (its values are those of the state in between)."""
        base = self._log_base
        if position < base or position > base + len(self._log):
            return False
        since = self._log[position - base:]
        if any(not pods_only for _, pods_only in since):
            return False
        if any(current > position for current in self._lazy.values()):
            return False
        if any(current > position for key, current in self._evictable.items() if key not in self._of_node):
            return False
        if any(current > position for _, current in self._derived.values()):
            return False
        del self._log[position - base:]
        for key, current in self._evictable.items():  # a Node's columns: nothing logged since was of their concern
            if current > position:
                self._evictable[key] = position
        self._changed_memo = (-1, -1, set())
        return True

    def _keep_up(self, key: str, current: int) -> None:
        """Bring column (or matrix) ``key`` that reads pods, current up to log position ``current``, up to date."""
        now = self._log_base + len(self._log)
        if current != now:
            self._catch_up(key, current)
            self._lazy[key] = now

    def _catch_up(self, key: str, current: int) -> None:
        """Recompute the rows of column (or matrix) ``key`` that changed since log position ``current`` (all of
        them when the log no longer reaches back that far)."""
        extract, values = self._columns[key]
        if current < self._log_base:
            dtype = values.dtype if values.ndim == 1 else (values.dtype, values.shape[1])  # a matrix's by-node view
            values[:] = np.fromiter((extract(info) for info in self.infos), dtype=dtype, count=len(self.infos))
            return
        if key in self._of_node:  # an evictable column of the Node alone: rows whose Node changed
            changed = {row for row, pods_only in self._log[current - self._log_base:] if not pods_only}
        else:
            changed = self._changed_since(current)
        infos = self.infos
        for row in changed:
            values[row] = extract(infos[row])

    def _changed_since(self, current: int) -> set[int]:
        """The rows changed since log position ``current`` (which the log reaches back to); read-only.  The
        columns and derived columns a cycle reads were mostly last brought up to date together, so the answer
        is kept for the next one asking about the same stretch of the log."""
        now = self._log_base + len(self._log)
        memo = self._changed_memo
        if memo[0] == current and memo[1] == now:
            return memo[2]
        changed = {row for row, _ in self._log[current - self._log_base:]}
        self._changed_memo = (current, now, changed)
        return changed

    def per_node(self, rows: np.ndarray, judge: Callable[[NodeInfo], Any], dtype: Any = bool) -> np.ndarray:
        """``judge`` of each row's NodeInfo, node by node (for a batch hook handed a
        table its cycle state was not computed on)."""
        infos = self.infos
        return np.fromiter((judge(infos[r]) for r in rows), dtype=dtype, count=len(rows))

    def merged(self, key: str, extract: Callable[[NodeInfo], dict], affinity_pods_only: bool = False) -> dict:
        """The union of the dicts ``extract`` gives every row (say, the distinct
        terms of the nodes' pods), built the first time ``key`` is asked for and
        then merged with the changed rows as they change.  It only grows (an entry may outlive
        the pods it came from) until it passes :data:`MAX_MERGED_ENTRIES`, when
        it is rebuilt from the rows.  ``affinity_pods_only``: ``extract`` gives {}
        for a node none of whose pods has pod (anti-)affinity (an empty
        ``pods_with_affinity``), so such a changed row is not read."""
        entry = self._merged.get(key)
        if entry is None or len(entry[1]) > MAX_MERGED_ENTRIES:
            union: dict = {}
            for info in self.infos:
                union.update(extract(info))
            self._merged[key] = (extract, union, affinity_pods_only)
            self._merged_reads_every_row = not all(only for _, _, only in self._merged.values())
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
                            lambda info: _allocatable_of(info, resources), len(resources), of_node=True)

    def requested_matrix(self, resources: tuple[str, ...], non_zero: bool = False) -> np.ndarray:
        """:meth:`requested` of each of ``resources``: int64, shape (len(resources), nodes) (see
        :meth:`_matrix`); with ``non_zero`` cpu and memory as scoring counts them (NodeInfo's ``non_zero_cpu``
        and ``non_zero_memory``: upstream's non-zero requests)."""
        return self._matrix(f"{'nonzero' if non_zero else 'requested'}[{','.join(resources)}]",
                            lambda info: _requested_of(info, resources, non_zero), len(resources))

    def allocatable_row(self, resources: tuple[str, ...], row: int) -> list[int]:
        """:meth:`allocatable_matrix`'s values at ``row`` as Python ints, read from the row's NodeInfo (re-scoring
        one node costs no matrix)."""
        return _allocatable_of(self.infos[row], resources)

    def requested_row(self, resources: tuple[str, ...], row: int, non_zero: bool = False) -> list[int]:
        """:meth:`requested_matrix`'s values at ``row`` as Python ints, read from the row's NodeInfo."""
        return _requested_of(self.infos[row], resources, non_zero)

    def refresh(self, rows: Iterable[int], pods_only: bool = False) -> None:
        """Note that the nodes at ``rows`` changed: the ``of_node`` columns are recomputed there at once unless
        ``pods_only`` (only their pods changed, not their Node objects); every other column when next asked for
        (the rows are logged until then); the merged dicts and the pod counts at once."""
        if not isinstance(rows, list):
            rows = list(rows)
        if not rows:
            return
        infos = self.infos
        if not pods_only:
            kept = self._node_columns
            if kept is None:
                kept = self._node_columns = [entry for key, entry in self._columns.items()
                                             if key in self._of_node and key not in self._evictable]
            for extract, values in kept:
                for row in rows:
                    values[row] = extract(infos[row])
            self._domain_nodes.clear()
        merged = self._merged
        if merged:
            for row in rows:
                info = infos[row]
                if info.pods_with_affinity or self._merged_reads_every_row:
                    for extract, union, affinity_pods_only in merged.values():
                        if info.pods_with_affinity or not affinity_pods_only:
                            union.update(extract(info))
        log = self._log
        if len(rows) == 1:  # the usual change (a pod assumed or forgotten)
            log.append((rows[0], pods_only))
        else:
            log.extend((row, pods_only) for row in rows)
        self._pod_counts.refresh(rows, nodes_changed=not pods_only)
        if len(log) > self._log_limit:  # a column further behind than a whole table is rebuilt instead
            dropped = len(log) - self._log_limit // 2
            del log[:dropped]
            self._log_base += dropped


def _allocatable_of(info: NodeInfo, resources: tuple[str, ...]) -> list[int]:
    """The node's allocatable ``resources`` (0 for one it lacks)."""
    allocatable = info.allocatable
    return [allocatable.get(name, 0) for name in resources]


def _requested_of(info: NodeInfo, resources: tuple[str, ...], non_zero: bool) -> list[int]:
    """The sums of the node's pods' requests of ``resources``; with ``non_zero`` cpu and memory counted as
    scoring counts them."""
    requested = info.requested
    if not non_zero:
        return [requested.get(name, 0) for name in resources]
    return [info.non_zero_cpu if name == CPU else info.non_zero_memory if name == MEMORY
            else requested.get(name, 0) for name in resources]


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
        node_rows: list[int] = []
        pod_rows: list[int] = []
        index, nodes, generations, node_objects = self.index, self.nodes, self.generations, self._node_objects
        for name in names:
            row = index.get(name)
            if row is None:
                continue
            info = nodes[row]
            if generations[row] != info.generation:
                generations[row] = info.generation
                if node_objects[row] is info.node:
                    pod_rows.append(row)
                else:
                    node_objects[row] = info.node
                    node_rows.append(row)
        if node_rows:
            self.table.refresh(node_rows)
        if pod_rows:
            self.table.refresh(pod_rows, pods_only=True)

    def get(self, name: str) -> NodeInfo | None:
        """The NodeInfo of node ``name``, or None when the snapshot has no such node."""
        row = self.index.get(name)
        return self.nodes[row] if row is not None else None

    def __len__(self) -> int:
        return len(self.nodes)
