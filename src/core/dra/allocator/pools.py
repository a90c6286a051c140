"""Resource pools as the structured allocator sees them from one node.

Mirrors upstream's ``GatherPools`` (dynamic-resource-allocation
``structured/internal/incubating/pools_incubating.go``):

- a slice is relevant for a node when its ``nodeName`` is the node, it has
  ``allNodes``, its ``nodeSelector`` matches the node, or (with
  ``perDeviceNodeSelection``) any of its devices is available on the node; a
  slice with none of these is some future extension and is skipped;
- relevant slices are grouped per pool ``(driver, pool name)``; only the highest
  generation counts;
- a pool with fewer slices than ``resourceSliceCount`` is checked against *all*
  slices of the pool: a newer generation elsewhere makes it obsolete (dropped),
  a missing slice makes it **incomplete** (never allocated from; a request for
  "All" devices is an error), otherwise it is complete and its slices that do
  not target the node are kept for counter accounting;
- a pool is **invalid** when two of its node's device slices publish the same
  device name, two slices define the same counter set, or a device consumes an
  unknown counter set or counter; it is skipped, and an allocation that finds no
  solution on a node with an invalid pool fails there;
- pools are ordered by driver, then pool name, slices by name, devices as
  published, so that allocation is deterministic; pools with devices that have
  binding conditions come last.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Callable, Generic, Iterable, Sequence, TypeVar

from attrs import define, field

from kubesched.core.api.core_v1 import Node, NodeSelector
from kubesched.core.api.nodeaffinity import selector_matches
from kubesched.core.api.resource_v1 import ResourceSlice

#: ``(driver, pool name)``.
PoolID = tuple[str, str]
T = TypeVar("T")


class SliceMemo(Generic[T]):
    """``build(slice)``, computed once per ResourceSlice object.  Slices are
    immutable (an update is a new object), so what is derived from one alone
    can be shared by every allocator, across scheduling cycles.  What is built
    usually refers to its slice, so a weak reference could never let go of
    it: :meth:`retain` forgets every slice that is not among the current ones
    (each :class:`SliceIndex` calls it with the cluster's slices)."""

    def __init__(self, build: Callable[[ResourceSlice], T]):
        self._build = build
        self._entries: dict[int, tuple[ResourceSlice, T]] = {}

    def __call__(self, resource_slice: ResourceSlice) -> T:
        key = id(resource_slice)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is resource_slice:
            return entry[1]
        value = self._build(resource_slice)
        self._entries[key] = (resource_slice, value)
        return value

    def retain(self, current: dict[int, ResourceSlice]) -> None:
        """Forget the slices that are not in ``current`` (``id(slice) -> slice``)."""
        for key, (resource_slice, _) in list(self._entries.items()):
            if current.get(key) is not resource_slice:
                self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


def node_matches(node: Node, node_name: str | None, all_nodes: bool | None, node_selector: NodeSelector | None) -> bool:
    """Whether a slice's (or, with per-device node selection, a device's) node
    selection includes ``node``: the node name, ``allNodes``, or the node selector
    (standard node-affinity matching).  Nothing set matches nothing."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        return selector_matches(node_selector, node)
    return False


def slice_targets(resource_slice: ResourceSlice, node: Node) -> bool:
    """Whether ``resource_slice`` provides devices for ``node`` (module docstring)."""
    spec = resource_slice.spec
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
    if spec.per_device_node_selection:
        return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in spec.devices)
    return False


@define(eq=False)
class Pool:
    """One resource pool as seen from one node.

    ``slices`` are the slices of the pool with devices for the node (sorted by
    name); ``other_slices`` the pool's remaining device slices (they matter for
    shared counters); ``counter_sets`` maps counter-set name -> counter name ->
    amount (exact base units).  ``incomplete`` and ``invalid`` (the reason, empty
    when valid) keep the pool from being allocated from.
    """

    driver: str
    name: str
    slices: list[ResourceSlice] = field(factory=list)
    other_slices: list[ResourceSlice] = field(factory=list)
    counter_sets: dict[str, dict[str, Fraction]] = field(factory=dict)
    incomplete: bool = False
    invalid: str = ""
    has_binding_conditions: bool = False

    @property
    def id(self) -> PoolID:
        return (self.driver, self.name)

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid


def _counter_sets(slices: Iterable[ResourceSlice]) -> tuple[dict[str, dict[str, Fraction]], str]:
    sets: dict[str, dict[str, Fraction]] = {}
    for resource_slice in slices:
        for counter_set in resource_slice.spec.shared_counters:
            if counter_set.name in sets:
                return {}, f"duplicate counter set name {counter_set.name}"
            sets[counter_set.name] = {name: counter.value for name, counter in counter_set.counters.items()}
    return sets, ""


def _consumption_problem(sets: dict[str, dict[str, Fraction]], slices: Iterable[ResourceSlice]) -> str:
    for resource_slice in slices:
        for device in resource_slice.spec.devices:
            for consumption in device.consumes_counters:
                counters = sets.get(consumption.counter_set)
                if counters is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counters:
                        return f"counter {name} not found in counter set {consumption.counter_set}"
    return ""


def _duplicate_device(slices: Iterable[ResourceSlice]) -> str:
    seen: set[str] = set()
    for resource_slice in slices:
        for device in resource_slice.spec.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return ""


def build_pool(pool_id: PoolID, targeting: Sequence[ResourceSlice], others: Sequence[ResourceSlice] = ()) -> Pool:
    """A :class:`Pool` from the slices of one generation: ``targeting`` provide
    devices for the node, ``others`` are the rest of the pool.  Slices with
    ``sharedCounters`` contribute counter sets (and their devices, if an older
    API version put both into one slice)."""
    targeting = sorted(targeting, key=lambda s: s.metadata.name)
    pool = Pool(pool_id[0], pool_id[1])
    sets, problem = _counter_sets([*targeting, *others])
    problem = (
        _duplicate_device(targeting)
        or problem
        or _consumption_problem(sets, targeting)
        or _consumption_problem(sets, others)
    )
    if problem:
        pool.invalid = problem
        return pool
    pool.slices = [s for s in targeting if s.spec.devices]
    pool.other_slices = [s for s in others if s.spec.devices]
    pool.counter_sets = sets
    pool.has_binding_conditions = any(d.binding_conditions for s in pool.slices for d in s.spec.devices)
    return pool


#: The pool of a slice that is its pool's only slice (the common case: one slice per node).
_single_slice_pool = SliceMemo(lambda s: build_pool(s.pool_id, [s]))

#: Every SliceMemo, pruned to the current slices whenever a SliceIndex is built.
SLICE_MEMOS: list[SliceMemo] = [_single_slice_pool]


class SliceIndex:
    """All ResourceSlices, indexed once for :meth:`pools_for` (per node)."""

    def __init__(self, slices: Iterable[ResourceSlice]):
        self._by_node: dict[str, list[ResourceSlice]] = defaultdict(list)
        self._elsewhere: list[ResourceSlice] = []
        self._by_pool: dict[PoolID, list[ResourceSlice]] = defaultdict(list)
        current: dict[int, ResourceSlice] = {}
        for resource_slice in slices:
            current[id(resource_slice)] = resource_slice
            node_name = resource_slice.spec.node_name
            if node_name:
                self._by_node[node_name].append(resource_slice)
            else:
                self._elsewhere.append(resource_slice)
            self._by_pool[resource_slice.pool_id].append(resource_slice)
        for memo in SLICE_MEMOS:  # what was built for slices since replaced or deleted goes
            memo.retain(current)

    def pools_for(self, node: Node) -> list[Pool]:
        """The pools with devices for ``node``, in allocation order (module
        docstring), including incomplete and invalid ones."""
        newest: dict[PoolID, list[ResourceSlice]] = {}
        relevant = self._by_node.get(node.metadata.name, [])
        if self._elsewhere:
            relevant = relevant + [s for s in self._elsewhere if slice_targets(s, node)]
        if len(relevant) == 1:  # the usual case: one slice per node
            pool = self._complete_pool(relevant[0].pool_id, relevant)
            return [] if pool is None else [pool]
        for resource_slice in relevant:
            pool_id = resource_slice.pool_id
            group = newest.get(pool_id)
            generation = resource_slice.spec.pool.generation
            if group is None or generation > group[0].spec.pool.generation:
                newest[pool_id] = [resource_slice]
            elif generation == group[0].spec.pool.generation:
                group.append(resource_slice)
        pools: list[Pool] = []
        for pool_id, group in newest.items():
            pool = self._complete_pool(pool_id, group)
            if pool is not None:
                pools.append(pool)
        pools.sort(key=lambda p: (p.has_binding_conditions, p.driver, p.name))
        return pools

    def _complete_pool(self, pool_id: PoolID, group: list[ResourceSlice]) -> Pool | None:
        expected = group[0].spec.pool.resource_slice_count
        if len(group) == expected:
            return _single_slice_pool(group[0]) if expected == 1 else build_pool(pool_id, group)
        generation = group[0].spec.pool.generation
        same: list[ResourceSlice] = []
        for resource_slice in self._by_pool[pool_id]:
            other = resource_slice.spec.pool.generation
            if other > generation:
                return None  # obsolete: the driver is publishing a newer generation
            if other == generation:
                same.append(resource_slice)
        if len(same) != expected:
            return Pool(pool_id[0], pool_id[1], incomplete=True)
        mine = {id(s) for s in group}
        return build_pool(pool_id, group, [s for s in same if id(s) not in mine])
