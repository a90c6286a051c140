"""Preemption: make room for a pod, or a whole PodGroup, by evicting lower-priority pods.

Framework code for preemption plugins, as upstream's
``pkg/scheduler/framework/preemption``.  What every preemption shares lives
here: the unit of preemption (:class:`Victim`: one pod, or every scheduled
pod of a PodGroup whose ``disruptionMode`` is ``all``, with the PodGroup's
priority), their order of importance, PodDisruptionBudget checks, and
carrying a preemption out (:class:`Executor`).  :class:`Evaluator` runs the
steps for a pod preemptor; a :class:`PreemptionPolicy` (DefaultPreemption,
or an out-of-tree plugin) decides the parts that differ between preemption
plugins:

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
4. the :class:`Executor` evicts: each victim waiting at Permit is rejected,
   the others get the ``DisruptionTarget`` condition and are deleted through
   the cluster client, with a ``Preempted`` event; a victim PodGroup (all
   members evicted together) gets the ``DisruptionTarget`` condition too;
   lower-priority pods nominated to that node lose their nomination.  The
   PostFilter result nominates the node.

The group preemptor's algorithm (PodGroupPostFilter) is
:mod:`kubesched.core.framework.podgroup_preemption`.  Victims are deleted
on the scheduling loop in a simulation, and on the handle's API workers in
a daemon (upstream's SchedulerAsyncPreemption).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor as WorkerPool
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Protocol

import attrs
import numpy as np
from attrs import frozen

from kubesched.core.api.convert import format_time
from kubesched.core.api.core_v1 import Pod, PodCondition
from kubesched.core.api.podpriority import earliest_start_time_of_highest_priority, pod_priority, pod_start_time
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.api.scheduling_v1beta1 import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
    PodGroup,
    pod_group_key,
)
from kubesched.core.cluster.client import ApiError, Conflict, NotFound
from kubesched.core.cluster.patch import patch_status
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.core.framework.extender import ExtenderError, extenders_preemption
from kubesched.core.framework.handle import Handle
from kubesched.core.framework.nodeinfo import NodeInfo, PodInfo
from kubesched.core.framework.status import Code, Status
from kubesched.core.framework.types import PostFilterResult
from kubesched.core.observability import metrics

if TYPE_CHECKING:
    from kubesched.core.framework.podgroups import PodGroupManager
    from kubesched.core.framework.snapshot import Snapshot

log = logging.getLogger(__name__)

#: The status of nodes preemption did not consider (their failure was unresolvable).
NOT_HELPFUL = "Preemption is not helpful for scheduling"
#: Offset added to every priority in the priority-sum criterion, so that negative
#: priorities still make more victims worse (upstream adds MaxInt32 + 1).
PRIORITY_OFFSET = 2 ** 31
#: The candidate name of a group preemption, whose victims may be anywhere (upstream's).
CLUSTER = "cluster"

ScoreFunc = Callable[["Candidate"], float]


@frozen
class Preemptor:
    """Who preempts (upstream ``ExecutorPreemptor``): ``kind`` "pod" or
    "podgroup" (it names the preemptor in events and in the victims'
    DisruptionTarget message), its ``uid`` and ``key`` (namespace/name), the
    ``scheduler_name`` of its profile, its ``priority`` and the object itself
    (the Pod or PodGroup, the related object of ``Preempted`` events)."""

    kind: str
    uid: str
    key: str
    scheduler_name: str
    priority: int
    obj: Any

    @classmethod
    def of_pod(cls, pod: Pod) -> "Preemptor":
        """``pod`` as a preemptor: kind "pod", its profile's scheduler name and its priority."""
        return cls("pod", pod.metadata.uid, pod.key, pod.spec.scheduler_name or "", pod_priority(pod), pod)

    @classmethod
    def of_pod_group(cls, group: PodGroup, scheduler_name: str) -> "Preemptor":
        """A PodGroup preempting with its members' profile ``scheduler_name`` and the PodGroup's priority."""
        return cls("podgroup", group.metadata.uid, group.key, scheduler_name, group.priority_value, group)


@frozen(eq=False)
class Victim:
    """A unit of preemption (upstream ``Victim``): evicted or spared as a
    whole.  ``pods``: (PodInfo, node name) of each pod; one pod, or every
    scheduled pod of a PodGroup whose ``disruptionMode`` is ``all`` (on
    whichever nodes they run).  ``priority``: the PodGroup's priority for a
    pod of a known PodGroup (its own priority is ignored, as KEP-5710 says),
    else the pod's.  ``group``: the key (namespace/name) of the PodGroup it
    belongs to ("" for a pod of no group); ``whole_group``: True when the
    unit is that whole PodGroup (disruptionMode all)."""

    pods: tuple[tuple[PodInfo, str], ...]
    priority: int
    group: str = ""
    whole_group: bool = False

    @property
    def pod_list(self) -> list[Pod]:
        return [info.pod for info, _ in self.pods]

    def importance_key(self, now: float) -> tuple:
        """Sort key putting the most important victim first (upstream
        ``MoreImportantVictim``): higher priority; then pods of PodGroups
        before pods of none; among PodGroup units the larger first; then the
        earliest started (``now`` for a pod that has not started)."""
        start = min(pod_start_time(info.pod, now) for info, _ in self.pods)
        size = -len(self.pods) if self.group else 0
        return -self.priority, 0 if self.group else 1, size, start


def victim_priority(pod: Pod, pod_groups: "PodGroupManager | None") -> int:
    """The priority a pod is preempted at: its PodGroup's (when the pod names
    one the scheduler knows), else its own (upstream ``getPodPriority``)."""
    group = pod_groups.group_of(pod) if pod_groups is not None else None
    return group.priority_value if group is not None else pod_priority(pod)


def cluster_victims(nodes: Iterable[NodeInfo], pod_groups: "PodGroupManager | None") -> list[Victim]:
    """Every unit of preemption running on ``nodes`` (upstream
    ``getCrossNodesVictims``): the pods of a PodGroup with ``disruptionMode:
    {all: {}}`` as one :class:`Victim` (its pods on these nodes), every other
    pod as its own."""
    victims: list[Victim] = []
    groups: dict[str, list[tuple[PodInfo, str]]] = {}
    group_objects: dict[str, PodGroup] = {}
    for node in nodes:
        name = node.name
        for info in node.pods:
            pod = info.pod
            key = pod_group_key(pod)
            group = pod_groups.pod_group(key) if key is not None and pod_groups is not None else None
            if group is None:
                victims.append(Victim(((info, name),), pod_priority(pod)))
            elif group.disrupts_all:
                groups.setdefault(group.key, []).append((info, name))
                group_objects[group.key] = group
            else:
                victims.append(Victim(((info, name),), group.priority_value, group.key))
    for key, pods in groups.items():
        victims.append(Victim(tuple(pods), group_objects[key].priority_value, key, whole_group=True))
    return victims


def node_victims(node: NodeInfo, snapshot: "Snapshot", pod_groups: "PodGroupManager | None") -> list[Victim]:
    """The units of preemption with a pod on ``node``: a PodGroup with
    ``disruptionMode: {all: {}}`` with every one of its scheduled pods
    (found on their nodes in ``snapshot``), every other pod alone."""
    victims: list[Victim] = []
    seen: set[str] = set()
    for info in node.pods:
        pod = info.pod
        key = pod_group_key(pod)
        group = pod_groups.pod_group(key) if key is not None and pod_groups is not None else None
        if group is None:
            victims.append(Victim(((info, node.name),), pod_priority(pod)))
        elif not group.disrupts_all:
            victims.append(Victim(((info, node.name),), group.priority_value, group.key))
        elif group.key not in seen:
            seen.add(group.key)
            assert pod_groups is not None
            pods = []
            for member, member_node in pod_groups.state(group.key).scheduled_pods():
                held = snapshot.get(member_node)
                found = _pod_info(held, member.metadata.uid) if held is not None else None
                if found is not None:
                    pods.append((found, member_node))
            victims.append(Victim(tuple(pods) or ((info, node.name),), group.priority_value, group.key, True))
    return victims


def _pod_info(node: NodeInfo, uid: str) -> PodInfo | None:
    return next((info for info in node.pods if info.pod.metadata.uid == uid), None)


def split_by_pdb_violation(victims: Sequence[Victim],
                           pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """Split ``victims`` (order kept) into those whose eviction would exceed a
    matching PDB's ``status.disruptionsAllowed`` - with how many of their
    pods would - and the others (upstream ``FilterVictimsWithPDBViolation``).
    Evictions are counted in order, so the later pods of one budget are the
    violating ones.  A PDB matches pods of its namespace by a non-empty
    selector; pods already in its ``status.disruptedPods`` do not count again."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[tuple[Victim, int]] = []
    non_violating: list[Victim] = []
    for victim in victims:
        count = 0
        for info, _ in victim.pods:
            pod = info.pod
            labels = pod.metadata.labels
            if not labels:
                continue
            violated = False
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
            count += violated
        if count:
            violating.append((victim, count))
        else:
            non_violating.append(victim)
    return violating, non_violating


@frozen
class Candidate:
    """A node where evicting ``victims`` (most important first) makes the
    preemptor fit; ``num_pdb_violations`` counts victims whose eviction breaks a
    PodDisruptionBudget; ``disrupted_groups``: the keys of the PodGroups
    evicted as a whole (``disruptionMode: {all: {}}``) among them."""

    node_name: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0
    disrupted_groups: tuple[str, ...] = ()


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


class Executor:
    """Carries preemptions out for one plugin (upstream ``Executor``):
    ``plugin_name`` signs Permit rejections; ``handle`` gives the cluster,
    recorder, clock, nominator, waiting pods and the API workers.  One
    executor serves a plugin's pod and PodGroup preemptions, so that a
    preemptor whose evictions are still running (on a daemon's API workers)
    is known to both."""

    def __init__(self, plugin_name: str, handle: Handle):
        self.plugin_name = plugin_name
        self.handle = handle
        #: preemptor UID -> evictions still running on the handle's API workers
        self._evicting: dict[str, int] = {}
        self._evicting_lock = threading.Lock()

    def in_flight(self, uid: str) -> int:
        """How many evictions of preemptor ``uid`` are still running (0: none)."""
        with self._evicting_lock:
            return self._evicting.get(uid, 0)

    def actuate(self, preemptor: Preemptor, node_name: str, victims: Sequence[Pod],
                groups: Sequence[str] = ()) -> Status | None:
        """Evict ``victims`` (already terminating ones are left alone), give the
        PodGroups ``groups`` (keys) the DisruptionTarget condition, and clear
        the nominations of lower-priority pods on ``node_name``.  With API
        workers (a daemon) the API calls run there and the preemptor does not
        preempt again until they returned (upstream's asynchronous
        preemption, under SchedulerAsyncPreemption: without it they run on the
        loop).  An Error status when a victim could not be evicted."""
        workers = self.handle.api_workers if self.handle.features.enabled("SchedulerAsyncPreemption") else None
        for victim in victims:
            if victim.metadata.deletion_timestamp is not None:
                continue
            if workers is not None and victim.metadata.uid not in self.handle.waiting_pods:
                self._elsewhere(workers, preemptor, partial(self._evict_logged, node_name, preemptor, victim))
                self._preempted_event(node_name, preemptor, victim)
                continue
            error = self.preempt_pod(node_name, preemptor, victim)
            if error is not None:
                return Status.as_error(error)
        for key in groups:
            if workers is not None:
                self._elsewhere(workers, preemptor, partial(self.mark_pod_group, preemptor, key))
            else:
                self.mark_pod_group(preemptor, key)
        lower = [info.pod for info in self.handle.nominator.pods_for_node(node_name)
                 if pod_priority(info.pod) < preemptor.priority]
        self.clear_nominated_node_name(lower)
        return None

    def preempt_pod(self, node_name: str, preemptor: Preemptor, victim: Pod) -> ApiError | None:
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
        self._preempted_event(node_name, preemptor, victim)
        return None

    def mark_pod_group(self, preemptor: Preemptor, key: str) -> None:
        """The PodGroup ``key`` (namespace/name) gets ``DisruptionTarget=True``,
        reason ``PreemptionByScheduler``, by a merge patch of its status (a
        group gone meanwhile, or a failed write, is logged and left)."""
        group = self.handle.informers.get("PodGroup", key)
        if group is None:
            return
        existing = group.condition(DISRUPTION_TARGET)
        message = disruption_message(preemptor)
        if existing is not None and (existing.status, existing.reason, existing.message) == (
                "True", REASON_PREEMPTION_BY_SCHEDULER, message):
            return
        since = existing.last_transition_time if existing is not None and existing.status == "True" \
            else self.handle.clock.now()
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION_BY_SCHEDULER,
                     "message": message, "observedGeneration": group.metadata.generation,
                     "lastTransitionTime": format_time(since)}
        try:
            self.handle.cluster.patch("PodGroup", group.metadata.name, {"status": {"conditions": [condition]}},
                                      group.metadata.namespace, subresource="status", uid=group.metadata.uid)
        except ApiError as err:
            log.warning("could not add the DisruptionTarget condition to a preempted PodGroup", extra={
                "podGroup": key, "preemptor": preemptor.key, "err": err.message})

    def _evict(self, preemptor: Preemptor, victim: Pod) -> ApiError | None:
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

    def _evict_logged(self, node_name: str, preemptor: Preemptor, victim: Pod) -> None:
        error = self._evict(preemptor, victim)
        if error is not None:
            log.warning("evicting a preemption victim failed", extra={
                "pod": victim.key, "preemptor": preemptor.key, "node": node_name, "err": error.message})

    def _elsewhere(self, workers: WorkerPool, preemptor: Preemptor, call: Callable[[], None]) -> None:
        """Run ``call`` on an API worker, counted as one of ``preemptor``'s
        evictions in flight until it returns."""
        uid = preemptor.uid
        with self._evicting_lock:
            self._evicting[uid] = self._evicting.get(uid, 0) + 1

        def run() -> None:
            try:
                call()
            finally:
                with self._evicting_lock:
                    left = self._evicting.get(uid, 1) - 1
                    if left:
                        self._evicting[uid] = left
                    else:
                        self._evicting.pop(uid, None)

        workers.submit(run)

    def _preempted_event(self, node_name: str, preemptor: Preemptor, victim: Pod) -> None:
        """Record upstream's ``Preempted`` event on ``victim``; a group
        preemption (candidate ``CLUSTER``, victims anywhere) names the
        preemptor instead of a node that does not exist."""
        if node_name == CLUSTER:
            message = f"Preempted by {preemptor.kind} {preemptor.key} (uid {preemptor.uid})"
        else:
            message = f"Preempted by {preemptor.kind} {preemptor.uid} on node {node_name}"
        self.handle.recorder.event(victim, "Normal", "Preempted", "Preempting", message)

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


class Evaluator:
    """Runs preemption for a pod preemptor: ``plugin_name`` signs events;
    ``handle`` gives the snapshot, nominator, PodGroups and the profile's
    framework for dry runs; ``policy`` the plugin's decisions; ``executor``
    carries the chosen preemption out.  Reads PodDisruptionBudgets from the
    shared informers."""

    def __init__(self, plugin_name: str, handle: Handle, policy: PreemptionPolicy, executor: Executor):
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        self.executor = executor
        self._pdbs = handle.informers.store("PodDisruptionBudget")

    def pdbs(self) -> list[PodDisruptionBudget]:
        """Every PodDisruptionBudget the informers hold."""
        return list(self._pdbs.values())

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
        evicting = self.executor.in_flight(pod.metadata.uid)
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
            fit = FitError(pod, len(nodes), Diagnosis(node_status=self._not_helpful_elsewhere(statuses, nodes)))
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (fit.message(),))
        if self.handle.extenders:
            try:
                candidates = self.call_extenders(pod, candidates)
            except ExtenderError as err:
                return None, Status.as_error(str(err))
            if not candidates:
                return None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
        best = self.select_candidate(candidates)
        metrics.PREEMPTION_VICTIMS.observe(len(best.victims))
        status = self.executor.actuate(Preemptor.of_pod(pod), best.node_name, best.victims, best.disrupted_groups)
        if status is not None:
            return None, status
        if state.record is not None:
            state.record.post_filter = {"plugin": self.plugin_name, "nominatedNodeName": best.node_name,
                                        "victims": [victim.key for victim in best.victims]}
        return PostFilterResult(best.node_name), None

    def call_extenders(self, pod: Pod, candidates: list[Candidate]) -> list[Candidate]:
        """Upstream ``callExtenders``: the scheduler extenders with a preempt verb narrow the candidates
        (:func:`~kubesched.core.framework.extender.extenders_preemption`); a candidate whose victims an
        extender changed is rebuilt with them.  Raises ``ExtenderError``."""
        by_node = {c.node_name: c for c in candidates}
        victims = {c.node_name: (list(c.victims), c.num_pdb_violations) for c in candidates}
        snapshot = self.handle.snapshot

        def pods_on(node: str) -> list[Pod] | None:
            info = snapshot.get(node)
            return None if info is None else [p.pod for p in info.pods]

        narrowed = extenders_preemption(self.handle.extenders, pod, victims, pods_on)
        out = []
        for node, (pods, violations) in narrowed.items():
            same = by_node.get(node)
            if same is not None and list(same.victims) == pods and same.num_pdb_violations == violations:
                out.append(same)
            else:
                out.append(Candidate(node, tuple(pods), violations, self._whole_groups(pods)))
        return out

    def find_candidates(self, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                        node_status: Mapping[str, Status]) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Dry-run preemption on a sample of the nodes whose failure was
        Unschedulable.  Returns (candidates, statuses of nodes that are no
        candidate, error messages)."""
        if not nodes:
            return [], {}, ["no nodes available"]
        snapshot = self.handle.snapshot
        if isinstance(node_status, NodeToStatus) and node_status.index is snapshot.index and nodes is snapshot.nodes:
            potential = [nodes[row] for row in node_status.rows_with_code(Code.UNSCHEDULABLE)]
        else:
            potential = [info for info in nodes
                         if (status := node_status.get(info.name)) is not None and status.code == Code.UNSCHEDULABLE]
        if not potential:
            return [], {}, []
        offset, count = self.policy.offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self.pdbs(), offset, count)

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
                        found.append(Candidate(info.name, tuple(victims), violations, self._whole_groups(victims)))
                    if non_violating and len(non_violating) + len(violating) >= count:
                        break
                    continue
                status = Status.as_error(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            statuses[info.name] = status
        return non_violating + violating, statuses, errors

    def _not_helpful_elsewhere(self, statuses: dict[str, Status], nodes: list[NodeInfo]) -> Mapping[str, Status]:
        """``statuses`` with every other node of ``nodes`` (the snapshot's) given "Preemption is not helpful for
        scheduling" (upstream ``SetAbsentNodesStatus``), as one array over the snapshot's rows rather than a
        dict entry per node."""
        index = self.handle.snapshot.index
        codes = np.zeros(len(nodes), dtype=np.int64)
        distinct: list[Status | None] = [_NOT_HELPFUL]
        for name, status in statuses.items():
            codes[index[name]] = len(distinct)
            distinct.append(status)
        return NodeToStatus.coded(index, codes, distinct)

    def _whole_groups(self, victims: Sequence[Pod]) -> tuple[str, ...]:
        """The keys of the PodGroups with ``disruptionMode: {all: {}}`` among ``victims``' groups."""
        pod_groups = self.handle.pod_groups
        keys: dict[str, None] = {}
        for victim in victims:
            group = pod_groups.group_of(victim)
            if group is not None and group.disrupts_all:
                keys[group.key] = None
        return tuple(keys)

    def select_candidate(self, candidates: list[Candidate]) -> Candidate:
        """The best candidate, by the policy's criteria or the default ones."""
        if len(candidates) == 1:
            return candidates[0]
        funcs = self.policy.ordered_score_funcs(candidates) or default_score_funcs(self.handle.clock.now())
        return pick_one_candidate(candidates, funcs)


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


def disruption_message(preemptor: Preemptor) -> str:
    """The DisruptionTarget message of a victim of ``preemptor`` (upstream's)."""
    return f"{preemptor.scheduler_name}: preempting to accommodate a higher priority {preemptor.kind}"


def with_disruption_target(pod: Pod, preemptor: Preemptor, now: float) -> Pod:
    """``pod`` with the DisruptionTarget=True condition preemption sets (the same
    object when it already has it)."""
    condition = PodCondition(
        type=DISRUPTION_TARGET, status="True", reason=REASON_PREEMPTION_BY_SCHEDULER,
        message=disruption_message(preemptor), last_transition_time=now,
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
