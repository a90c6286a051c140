"""PodGroups as the scheduler sees them (upstream ``PodGroupManager``, ``PodGroupState``,
``PodGroupInfo``, ``Placement`` and the placement extension points' values).

:class:`PodGroupManager` follows every pod that names a PodGroup
(``spec.schedulingGroup.podGroupName``) and the PodGroup objects themselves:
per group all, unscheduled, assumed and assigned pods, and the pod -> group
index.  Plugins reach it as ``handle.pod_groups``.  The values below are
what the PodGroup scheduling cycle hands to PlacementGenerate,
PlacementFeasible, PlacementScore and PodGroupPostFilter plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
from attrs import field, frozen

from ..api.core_v1 import Pod
from ..api.scheduling_v1beta1 import WORKLOAD_MAX_TREE_DEPTH, CompositePodGroup, PodGroup, pod_group_key
from .cycle_state import CycleState

if TYPE_CHECKING:
    from ..cluster.informer import Informers


@frozen(eq=False)
class Placement:
    """A set of nodes a whole group may be placed on (upstream ``Placement``):
    ``name`` (e.g. the topology domain's value) and ``rows``, the snapshot's
    NodeTable rows of its nodes (an ascending int64 array).  Placements may
    overlap."""

    name: str
    rows: np.ndarray


@frozen
class PlacementProgress:
    """How far a group got inside one placement: ``scheduled`` members (placed
    before this cycle or in it so far) and ``remaining`` members of the
    attempt not tried yet (upstream ``PlacementProgress``)."""

    scheduled: int
    remaining: int


@frozen(eq=False)
class PodGroupInfo:
    """The group a PodGroup cycle schedules (upstream ``PodGroupInfo``):
    ``namespace``, ``name``, ``pod_group`` (the PodGroup object),
    ``unscheduled_pods`` (the attempt's members, in the order they are tried)
    and ``scheduled_before``: its pods already assigned or assumed when the
    cycle began (upstream's snapshot ``ScheduledPodsCount``)."""

    namespace: str
    name: str
    pod_group: PodGroup
    unscheduled_pods: tuple[Pod, ...] = ()
    scheduled_before: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@frozen(eq=False)
class PodGroupAssignments:
    """What a group's members got inside one placement (upstream
    ``PodGroupAssignments``): ``placement`` and ``assignments``, one
    ``(pod, node name)`` per member placed there in this cycle (the pod as
    assumed, ``spec.nodeName`` set), in the order they were placed, and
    ``states``: each one's CycleState, as its PreFilter to Reserve left it
    (upstream ``ProposedAssignment.GetCycleState``; empty when not kept)."""

    placement: Placement
    assignments: tuple[tuple[Pod, str], ...] = field(factory=tuple)
    states: tuple[CycleState, ...] = field(factory=tuple)


class PodGroupState:
    """One PodGroup's pods: ``all_pods`` (UID -> the newest Pod), and which of
    them are assigned (``spec.nodeName`` set), assumed (in the scheduler's
    cache, binding) or still unscheduled."""

    __slots__ = ("all_pods", "_assumed_node")

    def __init__(self, assumed_node: Callable[[Pod], str | None]):
        self.all_pods: dict[str, Pod] = {}
        self._assumed_node = assumed_node

    def _is_assumed(self, pod: Pod) -> bool:
        return self._assumed_node(pod) is not None

    def assigned_pods(self) -> list[Pod]:
        """The members bound to a node (``spec.nodeName`` set) (upstream ``AssignedPods``)."""
        return [pod for pod in self.all_pods.values() if pod.spec.node_name]

    def assumed_pods(self) -> list[Pod]:
        """The members assumed in the scheduler's cache but not bound yet (upstream ``AssumedPods``)."""
        return [pod for pod in self.all_pods.values() if not pod.spec.node_name and self._is_assumed(pod)]

    def unscheduled_pods(self) -> list[Pod]:
        """The members neither bound nor assumed (upstream ``UnscheduledPods``)."""
        return [pod for pod in self.all_pods.values() if not pod.spec.node_name and not self._is_assumed(pod)]

    def scheduled_count(self) -> int:
        """Assumed and assigned pods (upstream ``ScheduledPodsCount``)."""
        return sum(1 for pod in self.all_pods.values() if pod.spec.node_name or self._is_assumed(pod))

    def scheduled_pods(self) -> list[tuple[Pod, str]]:
        """Every assigned or assumed pod with its node (upstream ``ScheduledPods``)."""
        pods = []
        for pod in self.all_pods.values():
            node = pod.spec.node_name or self._assumed_node(pod)
            if node:
                pods.append((pod, node))
        return pods

    def scheduled_nodes(self) -> list[str]:
        """The node of every assigned or assumed pod."""
        return [node for _, node in self.scheduled_pods()]


class PodGroupManager:
    """Every PodGroup's pods and object, kept by the scheduler's informer
    handlers (:meth:`add_pod`, :meth:`update_pod`, :meth:`delete_pod`);
    ``assumed_node(pod)`` asks the scheduler's cache where a pod is assumed
    (None: it is not).  PodGroup objects come from the shared informers'
    store."""

    def __init__(self, informers: "Informers", assumed_node: Callable[[Pod], str | None]):
        self._informers = informers
        self._assumed_node = assumed_node
        #: PodGroup key -> (first attempt, seconds; the nodes of the placement its latest failed attempt came
        #: closest in): the groups still waiting after an attempt, for GangScheduling's starvation window
        self.waiting: dict[str, tuple[float, frozenset[str]]] = {}
        self._states: dict[str, PodGroupState] = {}

    def pod_group(self, key: str) -> PodGroup | None:
        """The PodGroup ``namespace/name`` as the informers last saw it, or None."""
        return self._informers.get("PodGroup", key)

    def composite(self, key: str) -> CompositePodGroup | None:
        """The CompositePodGroup ``namespace/name``, or None."""
        return self._informers.get("CompositePodGroup", key)

    def parent_of(self, group: PodGroup | CompositePodGroup) -> str | None:
        """``namespace/name`` of the CompositePodGroup ``group`` belongs to, or None."""
        parent = group.spec.parent_composite_pod_group_name
        return f"{group.metadata.namespace}/{parent}" if parent else None

    def root_of(self, group: PodGroup | CompositePodGroup) -> tuple[str | None, str]:
        """The root CompositePodGroup's key of ``group``'s tree (None: the group
        stands alone, or a parent is not known yet) and the problem that makes
        the tree Invalid ("": none): a cycle, more than
        :data:`WORKLOAD_MAX_TREE_DEPTH` levels, or several Workloads in it."""
        seen = {group.key}
        workloads = {group.spec.workload_ref.workload_name} if group.spec.workload_ref is not None else set()
        node: PodGroup | CompositePodGroup = group
        depth = 1
        while (parent_key := self.parent_of(node)) is not None:
            if parent_key in seen:
                return parent_key, f"the group tree has a cycle through {parent_key}"
            seen.add(parent_key)
            parent = self.composite(parent_key)
            if parent is None:
                return None, ""
            node, depth = parent, depth + 1
            if node.spec.workload_ref is not None:
                workloads.add(node.spec.workload_ref.workload_name)
        if node is group:
            return None, ""
        if depth > WORKLOAD_MAX_TREE_DEPTH:
            return node.key, f"the group tree is {depth} levels deep, more than {WORKLOAD_MAX_TREE_DEPTH}"
        if len(workloads) > 1:
            return node.key, f"the group tree spans several Workloads: {', '.join(sorted(workloads))}"
        return node.key, ""

    def missing_ancestor(self, group: PodGroup | CompositePodGroup) -> str | None:
        """``namespace/name`` of the first CompositePodGroup on ``group``'s path to
        its root that is not known (yet), or None when every parent is (a cycle
        ends the walk)."""
        seen = {group.key}
        node: PodGroup | CompositePodGroup = group
        while (parent_key := self.parent_of(node)) is not None and parent_key not in seen:
            seen.add(parent_key)
            parent = self.composite(parent_key)
            if parent is None:
                return parent_key
            node = parent
        return None

    def children(self, key: str) -> list[PodGroup | CompositePodGroup]:
        """The PodGroups and CompositePodGroups whose parent is CompositePodGroup ``key``, by name."""
        namespace, _, name = key.partition("/")
        found: list[PodGroup | CompositePodGroup] = [
            group for kind in ("CompositePodGroup", "PodGroup") for group in self._informers.store(kind).values()
            if group.metadata.namespace == namespace and group.spec.parent_composite_pod_group_name == name]
        return sorted(found, key=lambda g: g.metadata.name)

    def ready(self, group: PodGroup | CompositePodGroup, depth: int = 0) -> bool:
        """Has ``group`` enough pods to be tried: a gang ``minCount`` of them, a
        basic group one; a composite group ``minGroupCount`` ready children."""
        if isinstance(group, PodGroup):
            return len(self.state(group.key).all_pods) >= group.min_count
        if depth > WORKLOAD_MAX_TREE_DEPTH:
            return False
        return sum(self.ready(child, depth + 1) for child in self.children(group.key)) >= group.min_group_count

    def group_of(self, pod: Pod) -> PodGroup | None:
        """The PodGroup ``pod`` names, or None (none named, or not known yet)."""
        key = pod_group_key(pod)
        return self.pod_group(key) if key is not None else None

    def state(self, key: str) -> PodGroupState:
        """The pods of PodGroup ``namespace/name`` (an empty state when none is known)."""
        return self._states.get(key) or PodGroupState(self._assumed_node)

    def keys(self) -> list[str]:
        """Every PodGroup key some pod names."""
        return list(self._states)

    def note_attempt(self, key: str, first_attempt: float | None, closest: Iterable[str] = ()) -> None:
        """The PodGroup cycle's outcome for group ``key``: still waiting since
        ``first_attempt`` (seconds) and closest on the nodes ``closest``; or,
        with ``first_attempt`` None, placed."""
        if first_attempt is None:
            self.waiting.pop(key, None)
        else:
            self.waiting[key] = (first_attempt, frozenset(closest))

    def add_pod(self, pod: Pod) -> None:
        """Follow ``pod`` when it names a PodGroup and has not finished (a
        terminal pod counts for no group)."""
        key = pod_group_key(pod)
        if key is None or pod.terminal:
            return
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState(self._assumed_node)
        state.all_pods[pod.metadata.uid] = pod

    def update_pod(self, old: Any, new: Pod) -> None:
        """Follow the pod's new state; one that finished leaves its group."""
        if new.terminal:
            self.delete_pod(new)
        else:
            self.add_pod(new)

    def delete_pod(self, pod: Pod) -> None:
        """Stop following ``pod``; a group left without pods is forgotten, with its waiting record."""
        key = pod_group_key(pod)
        if key is None or key not in self._states:
            return
        state = self._states[key]
        state.all_pods.pop(pod.metadata.uid, None)
        if not state.all_pods:
            del self._states[key]
            self.waiting.pop(key, None)
