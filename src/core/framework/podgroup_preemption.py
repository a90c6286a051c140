"""Workload-aware preemption: a whole PodGroup as the preemptor (KEP-5710; upstream
``pkg/scheduler/framework/preemption/podgrouppreemption.go``).

A group that fits nowhere gets one PodGroupPostFilter call (per-pod
PostFilter does not run inside the group's cycle).  :class:`PodGroupEvaluator`
then:

1. refuses a group whose ``preemptionPolicy`` is ``Never``, or whose
   members' nominated nodes still hold a lower-priority pod terminating from
   an earlier preemption;
2. takes every unit of preemption running in the domain - the whole cluster
   (upstream's one domain; under a topology constraint the group's
   algorithm picks the best placement) - with a lower priority than the
   PodGroup's (:class:`~kubesched.core.framework.preemption.Victim`: a pod,
   or a whole PodGroup with ``disruptionMode: {all: {}}``, at the PodGroup's
   priority);
3. places the group with all of them removed (``schedule_group(removed)``,
   the group's own algorithm); if it does not fit even so, preemption cannot
   help;
4. gives victims back where they run (:class:`InPlaceReprieval`), the most
   important first, PDB-violating ones before the others, each unit all or
   nothing, when every placed member still passes Filter on its node with
   its own CycleState;
   when a member or a victim holds ResourceClaims the in-place check is
   only a first guess (each member's Filter re-picks its own devices, blind to
   the devices the other members took in the dry run), so the group is placed
   again with only the victims it chose gone and, if it does not fit, victims
   are given back one at a time, each kept only when the group's own
   algorithm still places every member (:meth:`PodGroupEvaluator.exact_reprieval`):
   the victims evicted are enough for the whole group;
5. evicts the rest and gives each whole victim PodGroup the
   ``DisruptionTarget`` condition; the members are nominated where the group
   was placed.

kubesched's own choice (DefaultPreemption's ``podGroupCandidates:
EveryPlacement``, off the upstream path): each placement of the group (one
per topology domain) is a candidate with the victims running in it - the
group combining free capacity and victims across the placement's nodes -
and the candidate that disrupts the fewest PodGroups, then the lowest total
victim priority, wins, instead of the placement the group would score best
with every victim gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from attrs import frozen

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.podpriority import PREEMPT_NEVER
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import NodeInfo, PodInfo
from kubesched.core.framework.podgroups import Placement, PodGroupAssignments, PodGroupInfo
from kubesched.core.framework.preemption import (
    CLUSTER,
    PRIORITY_OFFSET,
    Executor,
    Preemptor,
    Victim,
    cluster_victims,
    split_by_pdb_violation,
    terminating_by_preemption,
    victim_priority,
)
from kubesched.core.framework.status import Code, Status
from kubesched.core.observability import metrics

if TYPE_CHECKING:
    from kubesched.core.framework.handle import Handle
    from kubesched.core.framework.snapshot import Snapshot

#: Upstream's messages.
NO_VICTIMS = "No preemption victims found for incoming preemptor"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
#: ``podGroupCandidates`` of DefaultPreemptionArgs: upstream's single candidate ...
BEST_PLACEMENT = "BestPlacement"
#: ... or kubesched's: every placement, the least disruptive wins.
EVERY_PLACEMENT = "EveryPlacement"

#: ``schedule_group(removed)``: the group's algorithm with the running pods ``removed`` gone.
ScheduleGroup = Callable[..., "tuple[Status | None, PodGroupAssignments]"]


@frozen(eq=False)
class GroupCandidate:
    """A way to place the group by preemption: ``placement`` (its name; "" for
    the whole cluster), the ``victims`` to evict (most important first),
    ``nominations`` (member UID -> node) and how many evicted pods break a
    PodDisruptionBudget."""

    placement: str
    victims: tuple[Victim, ...]
    nominations: dict[str, str]
    num_pdb_violations: int = 0

    @property
    def pods(self) -> list[Pod]:
        return [pod for victim in self.victims for pod in victim.pod_list]

    @property
    def whole_groups(self) -> list[str]:
        """Keys of the PodGroups evicted as a whole (``disruptionMode: {all: {}}``)."""
        return [victim.group for victim in self.victims if victim.whole_group]

    def disruption_cost(self) -> tuple[int, int]:
        """kubesched's order of candidates (lower is better): PodGroups with a
        member evicted, then the sum of the victims' priorities (each offset
        so that more victims always cost more)."""
        groups = {victim.group for victim in self.victims if victim.group}
        return len(groups), sum((victim.priority + PRIORITY_OFFSET) * len(victim.pods) for victim in self.victims)


class InPlaceReprieval:
    """KEP-5710's in-place reprieval on clones of the snapshot's nodes:
    every potential victim starts removed; :meth:`reprieve` adds one back
    where it runs (PreFilter AddPod for every placed member's CycleState) and
    keeps it when every member still passes Filter, with the nominated pods
    of others, on its node - the members before it on that node counted
    there, as when the group was placed - else removes it again (RemovePod).

    ``assignments``: the group placed with every victim gone (its members'
    pods as assumed, nodes and CycleStates); ``members``: the members as
    queued (by UID), Filter sees them without ``spec.nodeName``.  Members on
    the victim's nodes are checked first: a member's verdict depends only on
    its node and its CycleState, so the order does not change the answer.
    Stateful Reserve plugins (volumes, devices) are not replayed: they read
    informer state the snapshot does not change (upstream notes their false
    negatives in preemption)."""

    def __init__(self, handle: "Handle", snapshot: "Snapshot", victims: Sequence[Victim],
                 assignments: PodGroupAssignments, members: Sequence[Pod]):
        self._fwk = handle.framework
        self._nominator = handle.nominator
        self._snapshot = snapshot
        self._nodes: dict[str, NodeInfo] = {}
        for victim in victims:
            for info, node in victim.pods:
                self._node(node).remove_pod(info.pod)
        queued = {pod.metadata.uid: pod for pod in members}
        self._uids = set(queued)
        #: (member as queued, its PodInfo as assumed, CycleState) per node, in the order placed
        self._by_node: dict[str, list[tuple[Pod, PodInfo, CycleState]]] = {}
        self._members: list[tuple[Pod, CycleState]] = []
        for (assumed, node), state in zip(assignments.assignments, assignments.states):
            pod = queued.get(assumed.metadata.uid, assumed)
            self._by_node.setdefault(node, []).append((pod, PodInfo(assumed), state))
            self._members.append((pod, state))

    def _node(self, name: str) -> NodeInfo:
        node = self._nodes.get(name)
        if node is None:
            held = self._snapshot.get(name)
            node = self._nodes[name] = held.clone() if held is not None else NodeInfo()
        return node

    def reprieve(self, victim: Victim) -> bool:
        """Give ``victim`` back if the group still fits with it.  Raises
        :class:`ReprieveError` when a plugin fails with an Error."""
        for info, name in victim.pods:
            node = self._node(name)
            node.add_pod(info)
            for pod, state in self._members:
                _check(self._fwk.run_pre_filter_add_pod(state, pod, info, node))
        if self._fits({name for _, name in victim.pods}):
            return True
        for info, name in victim.pods:
            node = self._node(name)
            node.remove_pod(info.pod)
            for pod, state in self._members:
                _check(self._fwk.run_pre_filter_remove_pod(state, pod, info, node))
        return False

    def _fits(self, touched: set[str]) -> bool:
        nodes = sorted(self._by_node, key=lambda name: name not in touched)
        for name in nodes:
            node = self._node(name)
            added: list[PodInfo] = []
            try:
                for pod, info, state in self._by_node[name]:
                    nominated = [other for other in self._nominator.pods_to_respect(pod, name)
                                 if other.pod.metadata.uid not in self._uids]
                    if self._fwk.run_filter_with_nominated_pods(state, pod, node, nominated) is not None:
                        return False
                    node.add_pod(info)
                    added.append(info)
            finally:
                for info in added:
                    node.remove_pod(info.pod)
        return True


def _pods_of(victims: Sequence[Victim]) -> list[Pod]:
    return [info.pod for victim in victims for info, _ in victim.pods]


def _holds_devices(members: Sequence[Pod], victims: Sequence[Victim]) -> bool:
    """A member or a victim has ResourceClaims (the in-place reprieval cannot count their devices exactly)."""
    return any(pod.spec.resource_claims for pod in members) or any(
        info.pod.spec.resource_claims for victim in victims for info, _ in victim.pods)


class ReprieveError(Exception):
    """A PreFilter AddPod/RemovePod failed during reprieval; ``status`` says which."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status


def _check(status: Status | None) -> None:
    if status is not None:
        raise ReprieveError(status)


class PodGroupEvaluator:
    """Runs preemption for a PodGroup preemptor (see the module doc).
    ``handle``: the plugin's (snapshot, PodGroups, nominator, framework,
    PodDisruptionBudget informer); ``executor``: carries the preemption out
    (shared with the plugin's pod preemption); ``candidates``:
    :data:`BEST_PLACEMENT` (upstream) or :data:`EVERY_PLACEMENT`."""

    def __init__(self, handle: "Handle", executor: Executor, candidates: str = BEST_PLACEMENT):
        self.handle = handle
        self.executor = executor
        self.candidates = candidates
        self._pdbs = handle.informers.store("PodDisruptionBudget")

    def preempt(self, state: CycleState, group: PodGroupInfo,
                schedule_group: ScheduleGroup) -> tuple[dict[str, str] | None, Status | None]:
        """Upstream ``PodGroupEvaluator.Preempt``: returns the members'
        nominations (pod UID -> node) with None once the victims are being
        evicted; ``(None, Unschedulable)`` when the group is not eligible or
        preemption cannot make it fit (the status of the group's algorithm with
        every victim gone); ``(None, UnschedulableAndUnresolvable)`` without
        victims; ``(None, Error)`` on a plugin or API failure."""
        pod_group = group.pod_group
        if pod_group.spec.preemption_policy == PREEMPT_NEVER:
            return None, Status(Code.UNSCHEDULABLE, (NOT_ELIGIBLE_NEVER,))
        members = group.unscheduled_pods
        if self.executor.in_flight(pod_group.metadata.uid):  # its evictions still run: keep the nominations
            return {p.metadata.uid: p.status.nominated_node_name for p in members
                    if p.status.nominated_node_name}, None
        snapshot = self.handle.snapshot
        pod_groups = self.handle.pod_groups
        priority = pod_group.priority_value
        if self._terminating_on_nominated_nodes(members, snapshot, priority):
            return None, Status(Code.UNSCHEDULABLE, (NOT_ELIGIBLE_TERMINATING,))
        own = {p.metadata.uid for p in members}
        victims = [v for v in cluster_victims(snapshot.nodes, pod_groups)
                   if v.priority < priority and not any(info.pod.metadata.uid in own for info, _ in v.pods)]
        if not victims:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
        pdbs = list(self._pdbs.values())
        found: list[GroupCandidate] = []
        failure: Status | None = None
        for name, domain in self._domains(state, group, snapshot):
            in_domain = victims if domain is None else [v for v in victims if any(n in domain for _, n in v.pods)]
            if not in_domain:
                continue
            candidate, status = self.select_victims(name, group, in_domain, schedule_group, pdbs)
            if candidate is not None:
                found.append(candidate)
            elif status is not None and status.code == Code.ERROR:
                return None, status
            else:
                failure = failure or status
        if not found:
            return None, failure or Status(Code.UNSCHEDULABLE, (NO_VICTIMS,))
        best = min(found, key=GroupCandidate.disruption_cost) if len(found) > 1 else found[0]
        pods = best.pods
        metrics.PODGROUP_PREEMPTION_VICTIMS.observe(len(pods))
        preemptor = Preemptor.of_pod_group(pod_group, members[0].spec.scheduler_name if members else "")
        status = self.executor.actuate(preemptor, CLUSTER, pods, best.whole_groups)
        if status is not None:
            return None, status
        if state.record is not None:
            state.record.post_filter = {"plugin": self.executor.plugin_name, "placement": best.placement,
                                        "victims": [pod.key for pod in pods]}
        return best.nominations, None

    def _domains(self, state: CycleState, group: PodGroupInfo,
                 snapshot: "Snapshot") -> list[tuple[str, set[str] | None]]:
        """The domains to look for victims in: the whole cluster (None) -
        or, with :data:`EVERY_PLACEMENT`, each placement the group's
        PlacementGenerate plugins give (its node names)."""
        if self.candidates != EVERY_PLACEMENT:
            return [("", None)]
        parent = Placement("", np.arange(len(snapshot), dtype=np.int64))
        placements, status = self.handle.framework.run_placement_generate(state, group, parent)
        if status is not None or len(placements) < 2:
            return [("", None)]
        names = snapshot.table.names
        return [(p.name, set(names[p.rows].tolist())) for p in sorted(placements, key=lambda p: p.name)]

    def select_victims(self, placement: str, group: PodGroupInfo, victims: list[Victim],
                       schedule_group: ScheduleGroup,
                       pdbs: list[PodDisruptionBudget]) -> tuple[GroupCandidate | None, Status | None]:
        """Upstream ``selectVictimsOnDomain``: the group placed with every
        one of ``victims`` gone, then as many given back as still let it fit.
        Returns the candidate, or the reason there is none."""
        removed = [info.pod for victim in victims for info, _ in victim.pods]
        status, assignments = schedule_group(removed)
        if status is not None:
            return None, status
        now = self.handle.clock.now()
        victims = sorted(victims, key=lambda v: v.importance_key(now))
        violating, non_violating = split_by_pdb_violation(victims, pdbs)
        reprieval = InPlaceReprieval(self.handle, self.handle.snapshot, victims, assignments,
                                     group.unscheduled_pods)
        evicted: list[Victim] = []
        violations = 0
        try:
            for victim, count in violating:
                if not reprieval.reprieve(victim):
                    evicted.append(victim)
                    violations += count
            for victim in non_violating:
                if not reprieval.reprieve(victim):
                    evicted.append(victim)
        except ReprieveError as err:
            return None, Status(Code.ERROR, err.status.reasons, err.status.plugin)
        if _holds_devices(group.unscheduled_pods, victims):
            order = [victim for victim, _ in violating] + list(non_violating)
            evicted, assignments, status = self.exact_reprieval(order, evicted, schedule_group, assignments)
            if status is not None:
                return None, status
            counts = {id(victim): count for victim, count in violating}
            violations = sum(counts.get(id(victim), 0) for victim in evicted)
        evicted.sort(key=lambda v: v.importance_key(now))
        nominations = {assumed.metadata.uid: node for assumed, node in assignments.assignments}
        return GroupCandidate(placement, tuple(evicted), nominations, violations), None

    @staticmethod
    def exact_reprieval(order: Sequence[Victim], evicted: list[Victim], schedule_group: ScheduleGroup,
                        assignments: PodGroupAssignments
                        ) -> tuple[list[Victim], PodGroupAssignments, Status | None]:
        """The victims to evict, checked by the group's own algorithm (members assumed and reserved one by
        one, so each member's devices count for the next): ``evicted`` when the group fits with only them
        gone, else every victim of ``order`` (the reprieval order) given back in turn and kept only when the
        group still fits without it.  Returns the victims, the members' placement and an Error status of
        the algorithm (None otherwise)."""
        status, placed = schedule_group(_pods_of(evicted))
        if status is None:
            return evicted, placed, None
        if status.code == Code.ERROR:
            return evicted, assignments, status
        gone = list(order)  # every victim gone: the group fits (select_victims placed it so)
        for victim in order:
            trial = [v for v in gone if v is not victim]
            status, placed = schedule_group(_pods_of(trial))
            if status is None:
                gone, assignments = trial, placed
            elif status.code == Code.ERROR:
                return gone, assignments, status
        return gone, assignments, None

    def _terminating_on_nominated_nodes(self, members: Sequence[Pod], snapshot: "Snapshot", priority: int) -> bool:
        """Does a member's nominated node still hold a lower-priority pod that an
        earlier preemption is terminating (upstream ``preemptorEligibleToPreemptOthers``)?"""
        pod_groups = self.handle.pod_groups
        for name in {p.status.nominated_node_name for p in members if p.status.nominated_node_name}:
            node = snapshot.get(name)
            if node is None:
                continue
            for info in node.pods:
                if terminating_by_preemption(info.pod) and victim_priority(info.pod, pod_groups) < priority:
                    return True
        return False
