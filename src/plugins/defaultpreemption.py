"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods
(upstream plugins/defaultpreemption).

When a pod fits nowhere, it looks for nodes where evicting pods of lower
priority would make room, chooses the fewest and least important victims per
node (keeping PodDisruptionBudgets whole where it can), picks the best node,
evicts the victims and nominates the node.  The steps shared by all
preemption plugins are :class:`kubesched.core.framework.preemption.Evaluator`'s; this
module holds DefaultPreemption's choices:

- a pod with ``preemptionPolicy: Never`` never preempts; nor does a pod whose
  nominated node still has a victim terminating from an earlier preemption;
- victims have a strictly lower priority than the preemptor;
- per node: remove every possible victim, check the preemptor fits, then give
  back ("reprieve") as many as still fit, PDB-violating ones first, each group
  from the most important (priority, then longest running) down;
- the dry run samples ``max(minCandidateNodesPercentage% of the nodes,
  minCandidateNodesAbsolute)`` candidate nodes from a random offset.

Messages are upstream's, prefixed ``preemption: ``, e.g.
``preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

from typing import ClassVar

from attrs import frozen

from kubesched.core.api.convert import ManifestError
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.podpriority import PREEMPT_NEVER, importance_key, pod_priority
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.hookspecs import hookimpl
from kubesched.core.framework.nodeinfo import NodeInfo, PodInfo
from kubesched.core.framework.preemption import (
    Candidate,
    Evaluator,
    ScoreFunc,
    terminating_by_preemption,
)
from kubesched.core.framework.status import Code, Status
from kubesched.core.observability import metrics

NO_VICTIMS = "No preemption victims found for incoming pod"


@frozen
class DefaultPreemptionArgs:
    """``minCandidateNodesPercentage`` (0-100, default 10) and
    ``minCandidateNodesAbsolute`` (>= 0, default 100): the dry run looks for
    ``max(nodes * percentage / 100, absolute)`` candidates (never more than
    the nodes).  Both zero is an error, as upstream's validation."""

    STRICT: ClassVar[bool] = True
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

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


class DefaultPreemption:
    """PostFilter: evict lower-priority pods to make room (see the module doc).

    Subclasses may override :meth:`is_eligible_pod` (extra rules on who may be
    a victim) and :meth:`victim_order_key` (the most important victims first;
    they are reprieved first), as upstream's ``IsEligiblePod`` and
    ``MoreImportantPod`` hooks.
    """

    name = "DefaultPreemption"
    args_class = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs, handle):
        self.args = args
        self.handle = handle
        self.evaluator = Evaluator(self.name, handle, self)

    @hookimpl
    def post_filter(self, state, pod, filtered_node_status):
        metrics.PREEMPTION_ATTEMPTS.inc()
        result, status = self.evaluator.preempt(state, pod, filtered_node_status)
        if status is not None and status.reasons:
            status = Status(status.code, ("preemption: " + status.message(),), status.plugin, status.error)
        return result, status

    # --- the evaluator's questions (PreemptionPolicy) ------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """``max(num_nodes * percentage // 100, absolute)``, at most ``num_nodes``."""
        count = max(num_nodes * self.args.min_candidate_nodes_percentage // 100, self.args.min_candidate_nodes_absolute)
        return min(count, num_nodes)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
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
        framework = self.handle.framework
        nominator = self.handle.nominator

        def remove(info: PodInfo) -> Status | None:
            node_info.remove_pod(info.pod)
            return framework.run_pre_filter_remove_pod(state, pod, info, node_info)

        def fits() -> bool:
            nominated = nominator.pods_to_respect(pod, node_info.name)
            return framework.run_filter_with_nominated_pods(state, pod, node_info, nominated) is None

        potential = [info for info in node_info.pods if self.is_preemption_allowed(node_info, info, pod)]
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
        for info in potential:
            status = remove(info)
            if status is not None:
                return [], 0, status
        status = framework.run_filter_with_nominated_pods(
            state, pod, node_info, nominator.pods_to_respect(pod, node_info.name))
        if status is not None:
            return [], 0, status
        now = self.handle.clock.now()
        potential.sort(key=lambda info: self.victim_order_key(info.pod, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(info: PodInfo) -> tuple[bool, Status | None]:
            node_info.add_pod(info)
            status = framework.run_pre_filter_add_pod(state, pod, info, node_info)
            if status is not None:
                return False, status
            if fits():
                return True, None
            victims.append(info)
            return False, remove(info)

        violations = 0
        for info in violating:
            kept, status = reprieve(info)
            if status is not None:
                return [], 0, status
            violations += not kept
        for info in non_violating:
            _, status = reprieve(info)
            if status is not None:
                return [], 0, status
        if violating and non_violating:
            victims.sort(key=lambda info: self.victim_order_key(info.pod, now))
        return [info.pod for info in victims], violations, None

    def ordered_score_funcs(self, candidates: list[Candidate]) -> list[ScoreFunc] | None:
        return None

    # --- customisation points ------------------------------------------------------------

    def is_eligible_pod(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        """Extra rules on who may be preempted, beyond a lower priority (none by default)."""
        return True

    def victim_order_key(self, pod: Pod, now: float):
        """Sort key putting the most important pods first: higher priority, then
        the earlier start time (upstream ``MoreImportantPod``)."""
        return importance_key(pod, now)

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        return pod_priority(victim.pod) < pod_priority(preemptor) and self.is_eligible_pod(node_info, victim, preemptor)


def filter_pods_with_pdb_violation(infos: list[PodInfo],
                                   pdbs: list[PodDisruptionBudget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``infos`` (order kept) into those whose eviction would exceed a
    matching PDB's ``status.disruptionsAllowed`` and the others.  Evictions are
    counted in order, so the later pods of one budget are the violating ones.
    A PDB matches pods of its namespace by a non-empty selector; pods already
    in its ``status.disruptedPods`` do not count again."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in infos:
        pod = info.pod
        violated = False
        labels = pod.metadata.labels
        if labels:
            for index, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pod.metadata.namespace:
                    continue
                selector = pdb.spec.selector
                if selector is None or (not selector.match_labels and not selector.match_expressions):
                    continue
                if not selector.matches(labels) or pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating
