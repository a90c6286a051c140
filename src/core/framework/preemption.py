"""Preemption: make room for a pod that fits nowhere by evicting lower-priority pods.

Framework code for PostFilter plugins, as upstream's
``pkg/scheduler/framework/preemption``.  :class:`Evaluator` runs the steps;
a :class:`PreemptionPolicy` (DefaultPreemption, or an out-of-tree plugin)
decides the parts that differ between preemption plugins:

1. the preemptor must be eligible (``pod_eligible_to_preempt_others``);
2. candidates come only from nodes whose Filter failure was ``Unschedulable``
   (never ``UnschedulableAndUnresolvable``); a sample of them, from a random
   offset (``offset_and_num_candidates``), is dry-run: on a cloned NodeInfo
   and CycleState the policy removes victims through the profile's PreFilter
   RemovePod and re-runs Filter with the nominated pods
   (``select_victims_on_node``), so every plugin that keeps per-pod state
   takes part;
3. the best candidate wins (fewest PDB violations, lowest highest-victim
   priority, smallest priority sum, fewest victims, latest start time);
4. PrepareCandidate: each victim waiting at Permit is rejected, the others
   get the ``DisruptionTarget`` condition and are deleted through the cluster
   client, with a ``Preempted`` event; lower-priority pods nominated to that
   node lose their nomination.  The PostFilter result nominates the node.

Victims are deleted synchronously (upstream's behaviour without the
SchedulerAsyncPreemption feature).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Callable, Protocol

import attrs
from attrs import frozen

from kubesched.core.api.core_v1 import Pod, PodCondition
from kubesched.core.api.podpriority import earliest_start_time_of_highest_priority, pod_priority
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.cluster.client import ApiError, Conflict, NotFound
from kubesched.core.cluster.patch import patch_status
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.diagnosis import Diagnosis, FitError
from kubesched.core.framework.handle import Handle
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.status import Code, Status
from kubesched.core.framework.types import PostFilterResult
from kubesched.core.observability import metrics

log = logging.getLogger(__name__)

#: The status of nodes preemption did not consider (their failure was unresolvable).
NOT_HELPFUL = "Preemption is not helpful for scheduling"
#: Pod condition a victim gets before it is deleted.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
#: Offset added to every priority in the priority-sum criterion, so that negative
#: priorities still make more victims worse (upstream adds MaxInt32 + 1).
PRIORITY_OFFSET = 2 ** 31

ScoreFunc = Callable[["Candidate"], float]


@frozen
class Candidate:
    """A node where evicting ``victims`` (most important first) makes the
    preemptor fit; ``num_pdb_violations`` counts victims whose eviction breaks a
    PodDisruptionBudget."""

    node_name: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


class PreemptionPolicy(Protocol):
    """What a preemption plugin decides (upstream ``preemption.Interface``)."""

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start among ``num_nodes`` potential nodes and how many
        candidates the dry run should find."""

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """(eligible, reason when not).  ``nominated_node_status`` is the Filter
        status of the pod's nominated node."""

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo,
                               pdbs: list[PodDisruptionBudget]) -> tuple[list[Pod], int, Status | None]:
        """The fewest pods to evict from ``node_info`` (a clone, as is ``state``;
        both may be changed) for ``pod`` to fit: (victims, PDB violations,
        status).  A non-success status says why the node is no candidate."""

    def ordered_score_funcs(self, candidates: list[Candidate]) -> list[ScoreFunc] | None:
        """Criteria to pick the best candidate, each scoring a candidate (higher
        wins) and consulted only to break the previous one's ties; None for
        the default criteria."""


class Evaluator:
    """Runs preemption for one plugin: ``plugin_name`` signs events and Permit
    rejections; ``handle`` gives the snapshot, cluster, recorder, nominator,
    waiting pods and the profile's framework for dry runs; ``policy`` the
    plugin's decisions.  Reads PodDisruptionBudgets from the shared informers."""

    def __init__(self, plugin_name: str, handle: Handle, policy: PreemptionPolicy):
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        self._pdbs = handle.informers.store("PodDisruptionBudget")
        #: preemptor UID -> evictions still running on the handle's API workers
        self._evicting: dict[str, int] = {}
        self._evicting_lock = threading.Lock()

    # --- the steps -----------------------------------------------------------------------

    def preempt(self, state: CycleState, pod: Pod,
                node_status: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt``.  ``node_status`` maps each node that
        failed Filter to its status.  Returns

        - ``(PostFilterResult(node), None)``: victims evicted, nominate ``node``;
        - ``(PostFilterResult(""), Unschedulable)``: preemption cannot help (the
          message is a FitError over the nodes tried); the nomination is cleared;
        - ``(None, Unschedulable or Error)``: not eligible, or a failure; the
          nomination is kept.
        """
        current = self.handle.informers.get("Pod", pod.key)
        if current is None or current.metadata.uid != pod.metadata.uid:
            return None, Status.as_error(f'pods "{pod.metadata.name}" not found')
        pod = current
        with self._evicting_lock:
            evicting = self._evicting.get(pod.metadata.uid, 0)
        if evicting:
            # upstream (async preemption): the preemptor waits for its victims to go, keeping its nomination
            return None, Status(Code.UNSCHEDULABLE, (f"preemption is in progress ({evicting} victim(s) being evicted)",))
        nominated_status = node_status.get(pod.status.nominated_node_name, _UNRESOLVABLE)
        eligible, reason = self.policy.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, (reason,))
        nodes = self.handle.snapshot.nodes
        candidates, statuses, errors = self.find_candidates(state, pod, nodes, node_status)
        if errors and not candidates:
            return None, Status.as_error("; ".join(errors))
        if not candidates:
            for info in nodes:
                statuses.setdefault(info.name, _NOT_HELPFUL)
            fit = FitError(pod, len(nodes), Diagnosis(node_status=statuses))
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (fit.message(),))
        best = self.select_candidate(candidates)
        metrics.PREEMPTION_VICTIMS.observe(len(best.victims))
        status = self.prepare_candidate(best, pod)
        if status is not None:
            return None, status
        if state.record is not None:
            state.record.post_filter = {"plugin": self.plugin_name, "nominatedNodeName": best.node_name,
                                        "victims": [victim.key for victim in best.victims]}
        return PostFilterResult(best.node_name), None

    def find_candidates(self, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                        node_status: Mapping[str, Status]) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Dry-run preemption on a sample of the nodes whose failure was
        Unschedulable.  Returns (candidates, statuses of nodes that are no
        candidate, error messages)."""
        if not nodes:
            return [], {}, ["no nodes available"]
        potential = []
        for info in nodes:
            status = node_status.get(info.name)
            if status is not None and status.code == Code.UNSCHEDULABLE:
                potential.append(info)
        if not potential:
            return [], {}, []
        offset, count = self.policy.offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, list(self._pdbs.values()), offset, count)

    def dry_run_preemption(self, state: CycleState, pod: Pod, potential: list[NodeInfo],
                           pdbs: list[PodDisruptionBudget], offset: int,
                           count: int) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Upstream ``DryRunPreemption``: nodes from ``offset`` on (wrapping
        around) until ``count`` candidates are found, at least one of them
        violating no PDB.  Candidates that violate no PDB come first."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        total = len(potential)
        for i in range(total):
            info = potential[(offset + i) % total]
            victims, violations, status = self.policy.select_victims_on_node(state.clone(), pod, info.clone(), pdbs)
            if status is None or status.is_success():
                if victims:
                    found = non_violating if violations == 0 else violating
                    if len(found) < count:
                        found.append(Candidate(info.name, tuple(victims), violations))
                    if non_violating and len(non_violating) + len(violating) >= count:
                        break
                    continue
                status = Status.as_error(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            statuses[info.name] = status
        return non_violating + violating, statuses, errors

    def select_candidate(self, candidates: list[Candidate]) -> Candidate:
        """The best candidate, by the policy's criteria or the default ones."""
        if len(candidates) == 1:
            return candidates[0]
        funcs = self.policy.ordered_score_funcs(candidates) or default_score_funcs(self.handle.clock.now())
        return pick_one_candidate(candidates, funcs)

    def prepare_candidate(self, candidate: Candidate, pod: Pod) -> Status | None:
        """Evict the victims (already terminating ones are left alone) and clear
        the nominations of lower-priority pods on the node.  An Error status
        when a victim could not be evicted."""
        workers = self.handle.api_workers
        for victim in candidate.victims:
            if victim.metadata.deletion_timestamp is not None:
                continue
            if workers is not None and victim.metadata.uid not in self.handle.waiting_pods:
                self._evict_elsewhere(workers, candidate, pod, victim)
                continue
            error = self.preempt_pod(candidate, pod, victim)
            if error is not None:
                return Status.as_error(error)
        priority = pod_priority(pod)
        lower = [info.pod for info in self.handle.nominator.pods_for_node(candidate.node_name)
                 if pod_priority(info.pod) < priority]
        self.clear_nominated_node_name(lower)
        return None

    def preempt_pod(self, candidate: Candidate, preemptor: Pod, victim: Pod) -> ApiError | None:
        """Evict one victim: a pod waiting at Permit is told it was preempted;
        any other gets the DisruptionTarget condition and is deleted.  Records
        the ``Preempted`` event.  Returns the API error that stopped it; a victim
        already gone is no error."""
        waiting = self.handle.waiting_pods.get(victim.metadata.uid)
        if waiting is not None:
            waiting.preempt(self.plugin_name, "preempted")
        else:
            error = self._evict(preemptor, victim)
            if error is not None:
                return error
        self._preempted_event(candidate, preemptor, victim)
        return None

    def _evict(self, preemptor: Pod, victim: Pod) -> ApiError | None:
        """The API calls of an eviction, as upstream's: the DisruptionTarget
        condition (a strategic-merge patch of the victim's status from the
        informer's copy, UID precondition), then DELETE (UID precondition).  A
        failed condition write is logged and the victim deleted all the same;
        a victim gone or replaced is no error."""
        cluster = self.handle.cluster
        marked = with_disruption_target(victim, preemptor, self.handle.clock.now())
        if marked is not victim:
            try:
                patch_status(cluster, victim, marked.status)
            except NotFound:
                return None
            except ApiError as err:
                log.warning("could not add the DisruptionTarget condition to a preemption victim", extra={
                    "pod": victim.key, "preemptor": preemptor.key, "err": err.message})
        try:
            cluster.delete("Pod", victim.metadata.name, victim.metadata.namespace, uid=victim.metadata.uid)
        except (NotFound, Conflict):
            return None
        except ApiError as err:
            return err
        return None

    def _evict_elsewhere(self, workers: Executor, candidate: Candidate, preemptor: Pod, victim: Pod) -> None:
        """Upstream's asynchronous preemption: the preemptor is nominated now and
        the victim's eviction runs on an API worker; until every eviction of
        its preemption has returned, the preemptor does not preempt again."""
        uid = preemptor.metadata.uid
        with self._evicting_lock:
            self._evicting[uid] = self._evicting.get(uid, 0) + 1
        self._preempted_event(candidate, preemptor, victim)

        def evict() -> None:
            try:
                error = self._evict(preemptor, victim)
                if error is not None:
                    log.warning("evicting a preemption victim failed", extra={
                        "pod": victim.key, "preemptor": preemptor.key, "err": error.message})
            finally:
                with self._evicting_lock:
                    left = self._evicting.get(uid, 1) - 1
                    if left:
                        self._evicting[uid] = left
                    else:
                        self._evicting.pop(uid, None)

        workers.submit(evict)

    def _preempted_event(self, candidate: Candidate, preemptor: Pod, victim: Pod) -> None:
        self.handle.recorder.event(victim, "Normal", "Preempted", "Preempting",
                                   f"Preempted by pod {preemptor.metadata.uid} on node {candidate.node_name}")

    def clear_nominated_node_name(self, pods: list[Pod]) -> None:
        """End the nominations of ``pods``: in the nominator at once, and in
        their ``status.nominatedNodeName`` (a failed write is not critical)."""
        for pod in pods:
            self.handle.nominator.delete(pod)
            current = self.handle.informers.get("Pod", pod.key)
            if current is None or not current.status.nominated_node_name:
                continue
            try:
                patch_status(self.handle.cluster, current, attrs.evolve(current.status, nominated_node_name=""))
            except ApiError:
                pass


_UNRESOLVABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
_NOT_HELPFUL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,))


def default_score_funcs(now: float) -> list[ScoreFunc]:
    """Upstream's criteria, best first: fewest PDB violations; lowest priority
    of the most important victim; smallest sum of victim priorities; fewest
    victims; latest start time of the highest-priority victims."""
    return [
        lambda c: -c.num_pdb_violations,
        lambda c: -pod_priority(c.victims[0]),
        lambda c: -sum(pod_priority(v) + PRIORITY_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: earliest_start_time_of_highest_priority(c.victims, now),
    ]


def pick_one_candidate(candidates: list[Candidate], funcs: list[ScoreFunc]) -> Candidate:
    """Apply ``funcs`` in order, each keeping the candidates with its highest
    score, until one is left; ties after the last go to the first candidate."""
    remaining = candidates
    for func in funcs:
        scores = [func(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, score in zip(remaining, scores) if score == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def terminating_by_preemption(pod: Pod) -> bool:
    """True when the pod is being deleted because the scheduler preempted it."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


def with_disruption_target(pod: Pod, preemptor: Pod, now: float) -> Pod:
    """``pod`` with the DisruptionTarget=True condition preemption sets (the same
    object when it already has it)."""
    condition = PodCondition(
        type=DISRUPTION_TARGET, status="True", reason=REASON_PREEMPTION_BY_SCHEDULER,
        message=f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod",
        last_transition_time=now,
    )
    existing = next((c for c in pod.status.conditions if c.type == DISRUPTION_TARGET), None)
    if existing is not None:
        if (existing.status, existing.reason, existing.message) == (condition.status, condition.reason,
                                                                     condition.message):
            return pod
        if existing.status == condition.status:
            condition = attrs.evolve(condition, last_transition_time=existing.last_transition_time)
    conditions = tuple(c for c in pod.status.conditions if c.type != DISRUPTION_TARGET) + (condition,)
    return attrs.evolve(pod, status=attrs.evolve(pod.status, conditions=conditions))

