"""DefaultPreemption: the PostFilter and PodGroupPostFilter plugin that preempts
lower-priority pods (upstream plugins/defaultpreemption).

When a pod fits nowhere, it looks for nodes where evicting pods of lower
priority would make room, chooses the fewest and least important victims per
node (keeping PodDisruptionBudgets whole where it can), picks the best node,
evicts the victims and nominates the node.  The steps shared by all
preemption plugins are :class:`kubesched.core.framework.preemption.Evaluator`'s; this
module holds DefaultPreemption's choices:

- a pod with ``preemptionPolicy: Never`` never preempts; nor does a pod whose
  nominated node still has a victim terminating from an earlier preemption;
- victims have a strictly lower priority than the preemptor (a pod of a
  PodGroup is preempted at the PodGroup's priority);
- a unit of preemption is one pod, or a whole PodGroup whose
  ``disruptionMode`` is ``all`` (preempting one member evicts every member,
  on whichever node; the PodGroup gets ``DisruptionTarget``);
- per node: remove every possible victim, check the preemptor fits, then give
  back ("reprieve") as many as still fit, PDB-violating ones first, each group
  from the most important (priority, then PodGroups before single pods, then
  longest running) down;
- the dry run samples ``max(minCandidateNodesPercentage% of the nodes,
  minCandidateNodesAbsolute)`` candidate nodes from a random offset.

When a whole PodGroup fits nowhere, PodGroupPostFilter runs workload-aware
preemption (KEP-5710, :mod:`kubesched.core.framework.podgroup_preemption`).

Messages are upstream's, prefixed ``preemption: `` (``pod group preemption: ``
for a PodGroup), e.g.
``preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

import time

from attrs import frozen

from kubesched import Code, CycleState, NodeInfo, PodInfo, Status, hookimpl
from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.podpriority import PREEMPT_NEVER, pod_priority
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.observability import metrics
from kubesched.preemption import (
    BEST_PLACEMENT,
    EVERY_PLACEMENT,
    Candidate,
    Evaluator,
    Executor,
    PodGroupEvaluator,
    ScoreFunc,
    Victim,
    node_victims,
    split_by_pdb_violation,
    terminating_by_preemption,
    victim_priority,
)

NO_VICTIMS = "No preemption victims found for incoming pod"


@frozen
class DefaultPreemptionArgs:
    """``minCandidateNodesPercentage`` (0-100, default 10) and
    ``minCandidateNodesAbsolute`` (>= 0, default 100): the dry run looks for
    ``max(nodes * percentage / 100, absolute)`` candidates (never more than
    the nodes).  Both zero is an error, as upstream's validation.

    ``podGroupCandidates`` (kubesched's, not upstream's): how a PodGroup
    preempts.  ``BestPlacement`` (default, upstream): one candidate, where
    the group's own algorithm places it with every lower-priority victim
    gone.  ``EveryPlacement``: each placement of the group (one per domain of
    its topology constraint) with the victims running there is a candidate,
    and the one disrupting the fewest PodGroups, then with the lowest total
    victim priority, wins (the same as BestPlacement for a group without a
    topology constraint)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    pod_group_candidates: str = BEST_PLACEMENT

    def __attrs_post_init__(self):
        percentage, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if not 0 <= percentage <= 100:
            raise ManifestError("minCandidateNodesPercentage",
                                f"Invalid value: {percentage}: not in valid range [0, 100]")
        if absolute < 0:
            raise ManifestError("minCandidateNodesAbsolute", f"Invalid value: {absolute}: not in valid range [0, inf)")
        if percentage == 0 and absolute == 0:
            raise ManifestError("minCandidateNodesPercentage",
                                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute")
        if self.pod_group_candidates not in (BEST_PLACEMENT, EVERY_PLACEMENT):
            raise ManifestError("podGroupCandidates", f"Unsupported value: {self.pod_group_candidates!r}: "
                                f"supported values: {BEST_PLACEMENT!r}, {EVERY_PLACEMENT!r}")


class DefaultPreemption:
    """PostFilter and PodGroupPostFilter: evict lower-priority pods to make
    room (see the module doc).

    Subclasses may override :meth:`is_eligible_pod` (extra rules on who may be
    a victim) and :meth:`victim_order_key` (the most important victims first;
    they are reprieved first), as upstream's ``IsEligiblePod`` and
    ``MoreImportantVictim`` hooks.
    """

    name = "DefaultPreemption"
    args_class = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs, handle):
        self.args = args
        self.handle = handle
        executor = Executor(self.name, handle)
        self.evaluator = Evaluator(self.name, handle, self, executor)
        self.group_evaluator = PodGroupEvaluator(handle, executor, args.pod_group_candidates)

    @hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        metrics.PREEMPTION_ATTEMPTS.inc()
        result, status = self.evaluator.preempt(state, pod, filtered_node_status)
        if status is not None and status.reasons:
            status = Status(status.code, ("preemption: " + status.message(),), status.plugin, status.error)
        return result, status

    @hookimpl
    def pod_group_post_filter(self, state, group, schedule_group):
        """Workload-aware preemption for a PodGroup that fits nowhere:
        returns the members' nominations (pod UID -> node) once its victims
        are being evicted, or why preemption cannot help; nothing without
        WorkloadAwarePreemption (GenericWorkload from 1.37)."""
        if not self.handle.features.enabled("WorkloadAwarePreemption"):
            return None, Status(Code.UNSCHEDULABLE)
        started = time.perf_counter()
        nominations, status = self.group_evaluator.preempt(state, group, schedule_group)
        result = str(status.code if status is not None else Code.SUCCESS)
        metrics.PODGROUP_PREEMPTION_ATTEMPTS.labels(result).inc()
        metrics.PODGROUP_PREEMPTION_ATTEMPT_DURATION.labels(result).observe(time.perf_counter() - started)
        if status is not None and status.reasons:
            status = Status(status.code, ("pod group preemption: " + status.message(),), status.plugin,
                            status.error)
        return nominations, status

    # --- the evaluator's questions (PreemptionPolicy) ------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``max(num_nodes * percentage // 100, absolute)``, at most ``num_nodes``."""
        count = max(num_nodes * self.args.min_candidate_nodes_percentage // 100, self.args.min_candidate_nodes_absolute)
        return min(count, num_nodes)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start in ``[0, num_nodes)`` from the handle's rng and :meth:`calculate_num_candidates` (upstream
        ``GetOffsetAndNumCandidates``)."""
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """(eligible, reason): not with ``preemptionPolicy: Never``, nor while a victim on the pod's nominated node is
        still terminating from a preemption (unless that node's status is UnschedulableAndUnresolvable) (upstream
        ``PodEligibleToPreemptOthers``)."""
        if pod.spec.preemption_policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.status.nominated_node_name
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node_info = self.handle.snapshot.get(nominated)
            if node_info is not None:
                for info in node_info.pods:
                    if self.is_preemption_allowed(node_info, info, pod) and terminating_by_preemption(info.pod):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                               pdbs: list[PodDisruptionBudget]) -> tuple[list[Pod], int, Status | None]:
        """Upstream ``SelectVictimsOnNode`` over units of preemption: a victim
        PodGroup evicted as a whole leaves ``node_info`` (a clone) with its
        pods here, and the other nodes through PreFilter RemovePod only (their
        NodeInfo is not changed, as upstream)."""
        framework = self.handle.framework
        nominator = self.handle.nominator
        snapshot = self.handle.snapshot
        here = node_info.name

        def node_of(name: str) -> NodeInfo | None:
            return node_info if name == here else snapshot.get(name)

        def remove(victim: Victim) -> Status | None:
            for info, name in victim.pods:
                node = node_of(name)
                if node is None:
                    continue
                if name == here:
                    node.remove_pod(info.pod)
                status = framework.run_pre_filter_remove_pod(state, pod, info, node)
                if status is not None:
                    return status
            return None

        def add(victim: Victim) -> Status | None:
            for info, name in victim.pods:
                node = node_of(name)
                if node is None:
                    continue
                if name == here:
                    node.add_pod(info)
                status = framework.run_pre_filter_add_pod(state, pod, info, node)
                if status is not None:
                    return status
            return None

        def fits() -> bool:
            nominated = nominator.pods_to_respect(pod, here)
            return framework.run_filter_with_nominated_pods(state, pod, node_info, nominated) is None

        priority = pod_priority(pod)
        potential = []
        for victim in node_victims(node_info, snapshot, self.handle.pod_groups):
            if victim.priority < priority and all(
                    (node := node_of(name)) is not None and self.is_eligible_pod(node, info, pod)
                    for info, name in victim.pods):
                potential.append(victim)
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
        for victim in potential:
            status = remove(victim)
            if status is not None:
                return [], 0, status
        status = framework.run_filter_with_nominated_pods(state, pod, node_info, nominator.pods_to_respect(pod, here))
        if status is not None:
            return [], 0, status
        now = self.handle.clock.now()
        potential.sort(key=lambda victim: self.victim_order_key(victim, now))
        violating, non_violating = split_by_pdb_violation(potential, pdbs)
        victims: list[Victim] = []

        def reprieve(victim: Victim) -> tuple[bool, Status | None]:
            status = add(victim)
            if status is not None:
                return False, status
            if fits():
                return True, None
            victims.append(victim)
            return False, remove(victim)

        violations = 0
        for victim, count in violating:
            kept, status = reprieve(victim)
            if status is not None:
                return [], 0, status
            if not kept:
                violations += count
        for victim in non_violating:
            _, status = reprieve(victim)
            if status is not None:
                return [], 0, status
        if violating and non_violating:
            victims.sort(key=lambda victim: self.victim_order_key(victim, now))
        return [p for victim in victims for p in victim.pod_list], violations, None

    def ordered_score_funcs(self, candidates: list[Candidate]) -> list[ScoreFunc] | None:
        """None: DefaultPreemption picks the best candidate by the default criteria (upstream ``OrderedScoreFuncs``
        returns nil)."""
        return None

    # --- customisation points ------------------------------------------------------------

    def is_eligible_pod(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        """Extra rules on who may be preempted, beyond a lower priority (none by default)."""
        return True

    def victim_order_key(self, victim: Victim, now: float):
        """Sort key putting the most important victims first: higher priority,
        then PodGroups before single pods, the larger group first, then the
        earlier start time (upstream ``MoreImportantVictim``)."""
        return victim.importance_key(now)

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        """``victim`` (at its PodGroup's priority when it has one) is less important than ``preemptor``."""
        return (victim_priority(victim.pod, self.handle.pod_groups) < pod_priority(preemptor)
                and self.is_eligible_pod(node_info, victim, preemptor))
