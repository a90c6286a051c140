"""The PodGroup scheduling cycle (upstream ``schedule_one_podgroup.go``; KEP-4671 gang
scheduling, KEP-5732 topology-aware workload scheduling).

A group popped from the queue is scheduled all at once on one snapshot: its
profile's PlacementGenerate plugins give the placements (sets of nodes: one
per rack for a rack constraint, else all nodes); in each placement every
member goes through PreFilter, Filter and Score among the placement's
nodes with the members before it already assumed and reserved, and
PlacementFeasible says after each whether the group can still make it
there; the feasible placements are scored (PlacementScore) and the best one
kept.  Only a group that succeeded sends members to Permit and their binding
cycles; otherwise every assume and Reserve is undone in reverse order, the
members go back to the queue as one entity with the group's reason, their
nominations are cleared, and the PodGroup's ``PodGroupInitiallyScheduled``
condition says why (it never goes back from True).  :class:`PodGroupCycle`
runs each member through the pod cycle's algorithm and hands the placed
ones to the binding cycle; a CompositePodGroup tree's cycle
(:mod:`.composite_cycle`) is built on it.
"""

from __future__ import annotations

import math
import time
from typing import Iterable

import attrs
import numpy as np

from kubesched.core.api.podpriority import PREEMPT_LOWER_PRIORITY, pod_priority
from kubesched.core.api.scheduling_v1beta1 import (
    COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED,
    POD_GROUP_INITIALLY_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    CompositePodGroup,
    PodGroup,
)
from kubesched.core.framework.diagnosis import FitError
from kubesched.core.observability import metrics

from ..api.convert import format_time
from ..api.core_v1 import Pod
from ..cluster.client import ApiError
from ..framework.attempt_record import status_json
from ..framework.cycle_state import REMOVED_PODS_KEY, CycleState
from ..framework.placements import PlacementError
from ..framework.podgroups import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
from ..framework.runtime import Framework
from ..framework.scoring import ScoreError
from ..framework.snapshot import NodeTable
from ..framework.status import Code, Status
from .assume import assume_and_reserve, unreserve_and_forget
from .binding_cycle import BindingCycle, ScheduleResult
from .failure import FailureHandler
from .queue import QueuedPodGroupInfo, QueuedPodInfo
from .recording import GroupAttemptNotes, first_unplaced, group_record, write_attempt
from .scheduling_cycle import CycleError, KeptCycle, KeptPreFilter, SchedulingCycle
from .state import SchedulerState

#: The prefix of a queued CompositePodGroup tree's key (upstream EntityKey's type).
COMPOSITE = "compositepodgroup/"
#: A group's rejection when every placement failed (upstream's message).
NO_PLACEMENT = "0/{} placements are available"
#: The error a group's members carry when it is unschedulable (upstream errPodGroupUnschedulable).
GROUP_UNSCHEDULABLE = "pod group is unschedulable"
#: A dry run's answer when it stops trying placements (``pod_group_algorithm(give_up=True)``): never a pod's message.
GAVE_UP = "the dry run gave up: as many placements failed as feasible ones are looked for"
#: Fewest feasible placements to find before scoring stops looking (KEP-5732 beta's
#: percentage of placements to score, adaptive like percentageOfNodesToScore).
MIN_FEASIBLE_PLACEMENTS = 1


def feasible_placements_to_find(num_placements: int, num_nodes: int) -> int:
    """How many feasible placements to find before choosing (KEP-5732 beta):
    all of them on small clusters, ``p = 50 - nodes/125`` percent (at least
    5) of them on large ones, never fewer than :data:`MIN_FEASIBLE_PLACEMENTS`."""
    if num_nodes < 100:
        return num_placements
    percentage = max(50 - num_nodes // 125, 5)
    return max(math.ceil(num_placements * percentage / 100), MIN_FEASIBLE_PLACEMENTS)


@attrs.define
class MemberResult:
    """One member's outcome inside a placement: its queue entry, CycleState,
    the node it was assumed on (with the assumed pod) or its failure."""

    info: QueuedPodInfo
    state: CycleState
    node_name: str = ""
    assumed: Pod | None = None
    fit: FitError | None = None
    status: Status | None = None


@attrs.define
class PlacementResult:
    """What one placement gave: ``status`` (None: feasible), the members'
    results in the order tried, and whether they are still assumed."""

    placement: Placement
    status: Status | None
    members: list[MemberResult]
    applied: bool = True
    #: the first member that did not fit, for the group's decision record (when recorded)
    first_unplaced: dict | None = None
    #: the snapshot's NodeTable, its log position and the cache's pod count before the first member was
    #: assumed (see :meth:`PodGroupCycle.revert`)
    mark: tuple[NodeTable, int, int] | None = None

    @property
    def placed(self) -> list[MemberResult]:
        return [m for m in self.members if m.assumed is not None]

    def summary(self) -> dict:
        """This placement in the group's decision record."""
        entry: dict = {"name": self.placement.name, "nodes": len(self.placement.rows), "feasible": self.status is None,
                       "placed": len(self.placed), "tried": len(self.members)}
        if self.status is not None:
            entry["status"] = status_json(self.status)
        if self.first_unplaced is not None:
            entry["firstUnplaced"] = self.first_unplaced
        return entry

    def assignments(self) -> PodGroupAssignments:
        """The members placed in this placement as :class:`PodGroupAssignments`: each assumed pod with its node, and
        their CycleStates."""
        placed = self.placed
        return PodGroupAssignments(self.placement, tuple((m.assumed, m.node_name) for m in placed
                                                         if m.assumed is not None), tuple(m.state for m in placed))


class MemberPlan:
    """What a group's attempt works out once for its members (in the order they are tried), for every
    placement's member loop: ``signed[i]``, whether member i's cycle may be kept for the next member (it has a
    signature); ``follows[i]``, whether member i has the signature of member i-1 and no nominated node, so it may
    reuse that member's cycle; the PlacementProgress values, each made once; and ``pre_filtered``, by member UID,
    the PreFilter a signed member's full cycle kept, run before any member was assumed in its placement, for its
    full cycles in the next placements before any is assumed there (the same state: everything the placement
    before assumed and reserved undone)."""

    __slots__ = ("signed", "follows", "_progress", "pre_filtered")

    def __init__(self, signed: list[bool], follows: list[bool]):
        self.signed = signed
        self.follows = follows
        self._progress: dict[tuple[int, int], PlacementProgress] = {}
        self.pre_filtered: dict[str, KeptPreFilter] = {}

    def progress(self, scheduled: int, remaining: int) -> PlacementProgress:
        """``PlacementProgress(scheduled, remaining)`` (a frozen value: the same one handed out again)."""
        found = self._progress.get((scheduled, remaining))
        if found is None:
            found = self._progress[(scheduled, remaining)] = PlacementProgress(scheduled, remaining)
        return found


class PodGroupCycle:
    """The PodGroup scheduling cycle.

    ``state``: the scheduler's shared state; ``pods``: the pod cycle, whose
    algorithm places each member; ``binding``: where the placed members go;
    ``failures``: where the members of a group that does not fit go back."""

    def __init__(self, state: SchedulerState, pods: SchedulingCycle, binding: BindingCycle,
                 failures: FailureHandler):
        self.shared = state
        self.pods = pods
        self.binding = binding
        self.failures = failures

    def schedule_one_pod_group(self, group: QueuedPodGroupInfo) -> None:
        """Upstream ``scheduleOnePodGroup``: the group's members still to
        schedule, its profile and the scheduler's checks of it, then its
        cycle (:meth:`pod_group_cycle`); a group that fails a check goes back
        to the queue with its members."""
        members, fwk, problem = self.prepare(group)
        if not members:
            self.shared.queue.group_done(group)
            return
        started = time.perf_counter()
        pod_group = self.shared.pod_groups.pod_group(group.key)
        if fwk is None or problem:
            fwk = fwk or next(iter(self.shared.profiles.values()))
            self._group_failed(fwk, group, members, pod_group, Status(Code.ERROR, (problem,)), [])
            return
        if pod_group is None:  # deleted while queued: the members wait for it again
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            (f"waiting for pod's pod group {group.key.partition('/')[2]!r} to appear in scheduling "
                             "queue",), "GangScheduling")
            self._group_failed(fwk, group, members, None, status, [])
            return
        problem = validate_members(pod_group, [m.pod for m in members],
                                   self.shared.pod_groups.state(group.key).assigned_pods())
        if problem:
            self._group_failed(fwk, group, members, pod_group, Status(Code.ERROR, (problem,)), [])
            return
        members.sort(key=member_order)
        self.start_attempts(members)
        self.pod_group_cycle(fwk, group, pod_group, members, started)

    def prepare(self, group: QueuedPodGroupInfo) -> tuple[list[QueuedPodInfo], Framework | None, str]:
        """The step every group's attempt starts with (a PodGroup's, a
        CompositePodGroup tree's): its members still to schedule (upstream
        ``skipPodGroupPodSchedule``), and when there are any, the attempt
        counted and the one profile of them all with the problem when there is
        none (upstream ``frameworkForPodGroup``)."""
        members = self.skip_pod_group_pod_schedule(group)
        if not members:
            return members, None, ""
        self.shared.stats.cycles += 1
        fwk, problem = self.framework_for(members)
        return members, fwk, problem

    def skip_pod_group_pod_schedule(self, group: QueuedPodGroupInfo) -> list[QueuedPodInfo]:
        """The group's members to schedule: a member being deleted or already
        assumed is left out (and done in the queue), as upstream."""
        members = []
        for member in group.attempt:
            pod = member.pod
            if pod.metadata.deletion_timestamp is not None or self.shared.cache.is_assumed(pod):
                self.shared.queue.done(pod)
                continue
            members.append(member)
        return members

    def start_attempts(self, members: list[QueuedPodInfo]) -> None:
        """Each member's attempt starts now (scheduler_scheduling_attempt_duration_seconds)."""
        attempt_started = self.shared.attempt_started
        for member in members:
            attempt_started[member.uid] = time.perf_counter()

    def pod_group_cycle(self, fwk: Framework, group: QueuedPodGroupInfo, pod_group: PodGroup,
                        members: list[QueuedPodInfo], started: float) -> None:
        """Upstream ``podGroupCycle``: the placement algorithm, PodGroupPostFilter
        when the group does not fit (:meth:`pod_group_post_filter`), then the
        outcome: the members to binding, or all back to the queue."""
        info, group_state = self._group_attempt(pod_group, members)
        outcome, tried = self.pod_group_algorithm(fwk, group_state, info, members)
        metrics.PODGROUP_SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - started)
        nominations: dict[str, str] | None = None
        if outcome.status is not None and outcome.status.is_rejected():
            nominations = self.pod_group_post_filter(fwk, group, group_state, info, members, outcome)
        if outcome.status is None:
            self._group_scheduled(fwk, group, pod_group, outcome, tried)
        else:
            self._group_failed(fwk, group, members, pod_group, outcome.status, tried, outcome, nominations,
                               group_state.record.post_filter if group_state.record is not None else None)
        metrics.observe_pod_group_attempt(
            metrics.SCHEDULED if outcome.status is None else
            metrics.ERROR if outcome.status.code == Code.ERROR else metrics.UNSCHEDULABLE,
            fwk.profile_name, time.perf_counter() - started)

    def _group_attempt(self, pod_group: PodGroup, members: list[QueuedPodInfo]) -> tuple[PodGroupInfo, CycleState]:
        """The group as its cycle hands it to the plugins (its members in the order tried, its pods scheduled
        before) and the group's CycleState (recording its attempt when recorded)."""
        shared = self.shared
        key = pod_group.key
        info = PodGroupInfo(pod_group.metadata.namespace, pod_group.metadata.name, pod_group,
                            tuple(m.pod for m in members), shared.pod_groups.state(key).scheduled_count())
        group_state = CycleState()
        if shared.recording(f"podgroup/{key}"):
            group_state.record = GroupAttemptNotes()
        return info, group_state

    def dry_run(self, fwk: Framework, pod_group: PodGroup, members: list[QueuedPodInfo]) -> PlacementResult | None:
        """The cycle of ``pod_group`` popped with ``members`` (:meth:`schedule_one_pod_group`) up to the chosen
        placement, with nothing kept: the scheduler's checks of the group, the members in their order
        (:func:`member_order`), the algorithm (:meth:`pod_group_algorithm`; a chosen placement that is not the
        one tried last is not assumed and reserved again, only to be undone; it gives up once as many placements
        failed as feasible ones are looked for), then everything it assumed and reserved undone (:meth:`revert`).
        Returns the outcome (``status`` None: the group fits, its members as placed), or None when the
        scheduler's checks refuse the group."""
        if validate_members(pod_group, [m.pod for m in members],
                            self.shared.pod_groups.state(pod_group.key).assigned_pods()):
            return None
        members = sorted(members, key=member_order)
        info, group_state = self._group_attempt(pod_group, members)
        outcome, _ = self.pod_group_algorithm(fwk, group_state, info, members, keep_chosen=False, give_up=True)
        self.revert(fwk, outcome)
        return outcome

    def pod_group_post_filter(self, fwk: Framework, group: QueuedPodGroupInfo, group_state: CycleState,
                              info: PodGroupInfo, members: list[QueuedPodInfo],
                              outcome: PlacementResult) -> dict[str, str] | None:
        """The group's preemption (upstream's PodGroupPostFilter step of
        ``podGroupCycle``, KEP-5710): the profile's PodGroupPostFilter plugins,
        each able to dry-run the group without chosen victims
        (:meth:`try_pod_group`).  Returns the nominations (pod UID -> node)
        when one made room; its reasons join ``outcome``'s status.  The retry
        after a preemption starts no new one."""
        if group.waiting_on_preemption:
            group.waiting_on_preemption = False
            return None
        if not fwk.pod_group_post_filter_plugins:
            return None
        nominations, preemption = fwk.run_pod_group_post_filter(
            group_state, info, lambda removed=(): self.try_pod_group(fwk, info, members, removed))
        status = outcome.status
        if preemption is not None and preemption.reasons and status is not None:
            outcome.status = Status(status.code, (*status.reasons, *preemption.reasons), status.plugin)
        return nominations

    def framework_for(self, members: list[QueuedPodInfo]) -> tuple[Framework | None, str]:
        """The one profile of all members (upstream ``frameworkForPodGroup``), or the problem."""
        names = {m.pod.spec.scheduler_name for m in members}
        if len(names) > 1:
            first, second = sorted(names)[:2]
            return None, (f"all pods in a single pod group should have the same .spec.schedulerName set, "
                          f"got: {second!r} and {first!r}")
        name = names.pop()
        fwk = self.shared.profiles.get(name)
        return fwk, "" if fwk is not None else f"profile not found for scheduler name {name!r}"

    # --- the algorithm ----------------------------------------------------------------------

    def pod_group_algorithm(self, fwk: Framework, group_state: CycleState, info: PodGroupInfo,
                            members: list[QueuedPodInfo], parent: Placement | None = None,
                            keep_chosen: bool = True, give_up: bool = False,
                            ) -> tuple[PlacementResult, list[PlacementResult]]:
        """Upstream ``podGroupSchedulingPlacementAlgorithm``: try the group in
        each placement within ``parent`` (default: all nodes; a composite
        group's placement for its children), the nominated one first, score
        the feasible ones and keep the best assumed.  Returns the chosen (or,
        when none is feasible, the most promising) result and every placement
        tried.  ``keep_chosen`` False (a dry run that undoes everything next): a chosen placement that is not
        the one tried last is not assumed and reserved again (``applied`` False), its members as evaluated.
        ``give_up`` (a dry run that leaves a group that does not fit to the full cycle): once as many placements
        failed as feasible ones are looked for, stop with :data:`GAVE_UP` (nothing left assumed)."""
        self.shared.cache.update_snapshot(self.shared.snapshot)
        table = self.shared.snapshot.table
        if parent is None:
            parent = Placement("", np.arange(len(self.shared.snapshot), dtype=np.int64))
        placements, status = fwk.run_placement_generate(group_state, info, parent)
        if status is not None:
            return PlacementResult(parent, status, [], applied=False), []
        placements = sorted(placements, key=lambda p: p.name)
        plan = self._member_plan(fwk, members)
        nominated = _nominated_placement(placements, members, table.names)
        if nominated is not None:
            placements.remove(nominated)
            placements.insert(0, nominated)
        to_find = feasible_placements_to_find(len(placements), len(self.shared.snapshot))
        tried: list[PlacementResult] = []
        feasible: list[PlacementResult] = []
        current: PlacementResult | None = None
        for placement in placements:
            if current is not None:
                self.revert(fwk, current)
            result = self._evaluate_placement(fwk, group_state, info, members, placement, plan)
            tried.append(result)
            current = result
            if result.status is not None:
                if result.status.code == Code.ERROR:
                    self.revert(fwk, result)
                    return result, tried
                if give_up and len(tried) - len(feasible) >= to_find:
                    self.revert(fwk, result)
                    return PlacementResult(parent, Status(Code.UNSCHEDULABLE, (GAVE_UP,)), [], False), tried
                continue
            feasible.append(result)
            if placement is nominated or len(feasible) >= to_find:
                break
        if not feasible:
            if current is not None:
                self.revert(fwk, current)
            if len(placements) == 1 and tried:
                return tried[0], tried
            reason = NO_PLACEMENT.format(len(placements))
            if tried:
                reason += ": " + "; ".join(f"{r.placement.name or 'all nodes'}: {r.status.message()}"
                                           for r in tried if r.status is not None)
            best = max(tried, key=lambda r: len(r.placed), default=PlacementResult(parent, None, [], False))
            return PlacementResult(best.placement, Status(Code.UNSCHEDULABLE, (reason,)), best.members, False), tried
        chosen = feasible[0]
        if len(feasible) > 1:
            self.shared.cache.update_snapshot(self.shared.snapshot)
            try:
                totals = fwk.run_placement_score(group_state, info, [r.assignments() for r in feasible])
            except PlacementError as err:
                assert current is not None
                self.revert(fwk, current)
                return PlacementResult(parent, err.status, [], False), tried
            chosen = feasible[int(np.argmax(totals))]  # ties: the first tried (placements are in name order)
        if chosen is not current:
            assert current is not None
            self.revert(fwk, current)
            if not keep_chosen:
                return chosen, tried
            if not self._reapply(fwk, chosen):
                chosen = self._evaluate_placement(fwk, group_state, info, members, chosen.placement, plan)
            if chosen.status is not None:  # the state changed under it (it should not): give up this attempt
                self.revert(fwk, chosen)
                return PlacementResult(chosen.placement, chosen.status, chosen.members, False), tried
        return chosen, tried

    def _member_plan(self, fwk: Framework, members: list[QueuedPodInfo]) -> MemberPlan:
        """What every placement's member loop uses of ``members``, worked out once per attempt: each member's
        signature (KEP-5598's ``SignPod``; none for a member whose cycle is never reused - unsignable, or mounting
        volumes from claims, whose Reserve changes what the other nodes offer) and so which members may reuse
        the cycle of the member before them (:meth:`_schedule_as_before`)."""
        signer = self.pods.signer_for(fwk)
        signatures = [None if _volumes_from_claims(m.pod) else signer.sign(m.pod) for m in members]
        follows = [at > 0 and signature is not None and signature == signatures[at - 1]
                   and not members[at].pod.status.nominated_node_name for at, signature in enumerate(signatures)]
        return MemberPlan([signature is not None for signature in signatures], follows)

    def _reapply(self, fwk: Framework, result: PlacementResult) -> bool:
        """Assume and reserve again what ``result`` placed (reverted since), each
        member on its node with the CycleState its cycle left, in the order
        they were placed (as upstream commits the chosen placement).  False,
        with nothing assumed, when a Reserve now fails."""
        done: list[tuple[MemberResult, Pod]] = []
        for member in result.members:
            if member.assumed is None:
                continue
            assumed, status = assume_and_reserve(self.shared.cache, self.shared.queue.nominator, fwk, member.state,
                                                 member.info, member.node_name)
            if status is not None:
                for placed, pod in reversed(done):
                    unreserve_and_forget(self.shared.cache, fwk, placed.state, pod, placed.node_name)
                return False
            done.append((member, assumed))
        result.applied = True
        return True

    def try_pod_group(self, fwk: Framework, info: PodGroupInfo, members: list[QueuedPodInfo],
                      removed: Iterable[Pod] = ()) -> tuple[Status | None, PodGroupAssignments]:
        """What PodGroupPostFilter's ``schedule_group(removed)`` runs: the
        group's algorithm (no PodGroupPostFilter) as if the running pods
        ``removed`` were gone, undone afterwards (assumed pods come back
        assumed; the snapshot is brought back up to date).  Returns its status
        (None: the group would fit) and the members it placed, where, with
        their CycleStates."""
        gone: list[tuple[Pod, bool]] = []
        for pod in removed:
            held = self.shared.cache.pod_state(pod)
            if held is not None:
                gone.append((held, self.shared.cache.is_assumed(held)))
                self.shared.cache.remove_pod(held)
        group_state = CycleState()
        group_state.write(REMOVED_PODS_KEY, tuple(pod for pod, _ in gone))
        try:
            result, _ = self.pod_group_algorithm(fwk, group_state, info, members)
            self.revert(fwk, result)
            return result.status, result.assignments()
        finally:
            for pod, assumed in gone:
                if assumed:
                    self.shared.cache.assume_pod(pod)
                else:
                    self.shared.cache.add_pod(pod)
            self.shared.cache.update_snapshot(self.shared.snapshot)

    def _evaluate_placement(self, fwk: Framework, group_state: CycleState, info: PodGroupInfo,
                            members: list[QueuedPodInfo], placement: Placement, plan: MemberPlan) -> PlacementResult:
        """Upstream ``podGroupSchedulingDefaultAlgorithm`` within ``placement``:
        members one by one, each assumed and reserved where it fits, with
        PlacementFeasible before the first and after each; what was assumed
        stays so (see :meth:`revert`).  ``plan``: the members' (:meth:`_member_plan`): a member signed as
        the one before it reuses its cycle (:meth:`_schedule_as_before`)."""
        shared = self.shared
        cache, nominator = shared.cache, shared.queue.nominator
        scheduled = info.scheduled_before
        remaining = len(members)
        results: list[MemberResult] = []
        result = PlacementResult(placement, None, results)
        cache.update_snapshot(shared.snapshot)
        table = shared.snapshot.table
        result.mark = (table, table.position(), cache.pod_count())
        run_feasible, progress = fwk.run_placement_feasible, plan.progress
        status = run_feasible(group_state, info, progress(scheduled, remaining))
        if status is not None and status.code != Code.WAIT:
            result.status = status
            return result
        any_scheduled = False
        removed = group_state.get(REMOVED_PODS_KEY)
        # an extender, or a pod nominated anywhere, stops the reuse; nominations only end during the loop (a member
        # assumed), so they are looked at member by member only while some are left
        reusable = not shared.extenders
        nominations = bool(nominator.nodes())
        # what the member before found, while the next may reuse it (that member is assumed on node_name)
        kept: KeptCycle | None = None
        node_name = ""
        for member, signed, follows in zip(members, plan.signed, plan.follows):
            again = None
            if kept is not None and follows and reusable and not (nominations and nominator.nodes()):
                again = self._schedule_as_before(fwk, member, kept, node_name)
            if again is not None:
                state, node_name = again
                outcome = MemberResult(member, state)
                results.append(outcome)
            else:
                state, kept, pre_filtered = self._full_cycle_state(fwk, member, signed, plan, removed, any_scheduled)
                outcome = MemberResult(member, state)
                results.append(outcome)
                try:
                    node_name = self.pods.schedule_pod(fwk, state, member, within=placement.rows, kept=kept,
                                                       pre_filtered=pre_filtered)
                    if kept is not None and kept.pre_filtered is not None and not any_scheduled:
                        plan.pre_filtered.setdefault(member.uid, kept.pre_filtered)
                except FitError as fit:
                    kept = None
                    outcome.fit = fit
                    if result.first_unplaced is None and shared.recording(f"podgroup/{info.key}"):
                        result.first_unplaced = first_unplaced(fwk, state, member.pod, shared.snapshot, fit,
                                                               shared.dra, info.pod_group)
                except CycleError as err:
                    result.status = err.status
                    return result
            if outcome.fit is None:
                assumed, reserve = assume_and_reserve(cache, nominator, fwk, state, member, node_name)
                if reserve is None:
                    outcome.node_name, outcome.assumed = node_name, assumed
                    scheduled += 1
                    any_scheduled = True
                elif reserve.code == Code.ERROR:
                    result.status = reserve
                    return result
                else:
                    kept = None
                    outcome.status = reserve
            remaining -= 1
            status = run_feasible(group_state, info, progress(scheduled, remaining))
            if status is not None and status.code != Code.WAIT:
                result.status = status
                return result
        if status is not None:  # still waiting with nobody left: the group cannot make it here
            result.status = Status(Code.UNSCHEDULABLE, status.reasons, status.plugin)
        elif not any_scheduled:
            result.status = Status(Code.UNSCHEDULABLE, (GROUP_UNSCHEDULABLE,))
        return result

    def _full_cycle_state(self, fwk: Framework, member: QueuedPodInfo, signed: bool, plan: MemberPlan,
                          removed: object, assumed: bool) -> tuple[CycleState, KeptCycle | None, KeptPreFilter | None]:
        """The CycleState of ``member``'s full cycle in a placement (``removed``: a preemption dry run's victims,
        which the members' plugins discount), what it keeps for the members after it (a :class:`KeptCycle`,
        when ``signed``) and its PreFilter kept from an earlier placement, when there is one, no member is
        ``assumed`` in this placement yet (the same state again: see :class:`MemberPlan`) and this cycle is
        neither recorded nor sampled for plugin metrics - then the state is a clone of the one that PreFilter
        left."""
        state = self.pods.new_cycle_state(fwk, member)
        if removed:
            state.write(REMOVED_PODS_KEY, removed)
        if not signed:
            return state, None, None
        pre_filtered = None if assumed else plan.pre_filtered.get(member.uid)
        if pre_filtered is None or state.record is not None or state.record_plugin_metrics:
            return state, KeptCycle(), None
        return pre_filtered.state.clone(), KeptCycle(), pre_filtered

    def _schedule_as_before(self, fwk: Framework, member: QueuedPodInfo, kept: KeptCycle,
                            previous_node: str) -> tuple[CycleState, str] | None:
        """``member``'s cycle from what the member before it found in this placement (``kept``), when it has
        the same signature and was just assumed on its node: the other nodes did not change, so their Filter
        and raw Score answers stand (KEP-5598's promise, the idea of opportunistic batching within a gang);
        only that node (``previous_node``) is filtered and scored again, the scores normalised again and the
        host selected as the pod's cycle selects it.  The caller has checked the signatures and that no
        nominated pod or extender is to be respected (:meth:`_evaluate_placement`).  Returns the member's
        CycleState (a clone of the one before it after PreScore) and node, or None when the full cycle must
        run: no Filter pass over every node of the placement to reuse, a record to fill and none to fill it
        from, or that node now rejecting the member."""
        prescored = kept.prescored
        if not kept.evaluated or prescored is None:
            return None
        pod = member.pod
        shared = self.shared
        record = self.pods.new_record(fwk, member)
        if record is not None and kept.record is None:
            return None
        snapshot = shared.snapshot
        shared.cache.update_snapshot(snapshot)
        row = snapshot.index[previous_node]
        state = prescored.clone()
        state.record = record
        if fwk.run_filter(state, pod, snapshot.nodes[row]) is not None:
            return None
        feasible = kept.feasible
        if record is not None and kept.record is not None:
            record.filtered_as(kept.record)
        state.evaluated_nodes, state.feasible_nodes = kept.evaluated, len(feasible)
        if kept.scores is None:  # the one feasible node: nothing was scored
            return state, previous_node
        nodes = kept.nodes
        positions = kept.positions
        if positions is None:
            positions = kept.positions = {r: at for at, r in enumerate(feasible.tolist())}
        try:
            total = fwk.rescore(state, pod, snapshot.table, feasible, nodes, kept.scores, positions[row])
        except ScoreError:
            return None
        chosen = self.pods.select_host(total, feasible)
        if record is not None:
            if kept.names is None:
                kept.names = snapshot.table.names[feasible]
            record.scored(kept.names, total, chosen)
        return state, nodes[chosen].name

    def revert(self, fwk: Framework, result: PlacementResult) -> None:
        """Unreserve and forget what ``result`` assumed, last member first; the snapshot's NodeTable then
        forgets the rows changed since its mark (:meth:`NodeTable.rewind`), when the cache holds as many pods
        as then (nothing assumed after it is left)."""
        if not result.applied:
            return
        for member in reversed(result.members):
            if member.assumed is not None:
                unreserve_and_forget(self.shared.cache, fwk, member.state, member.assumed, member.node_name)
        result.applied = False
        if result.mark is not None:  # every node is back as it was at the mark: its columns need not judge them again
            shared = self.shared
            shared.cache.update_snapshot(shared.snapshot)
            table, position, pods = result.mark
            if table is shared.snapshot.table and pods == shared.cache.pod_count():  # undone last in, first out
                table.rewind(position)

    # --- the outcome ------------------------------------------------------------------------

    def _group_scheduled(self, fwk: Framework, group: QueuedPodGroupInfo, pod_group: PodGroup,
                         chosen: PlacementResult, tried: list[PlacementResult]) -> None:
        """The group fits: its placed members go to Permit and binding; members
        that did not fit on their own wait with their reasons; the group's
        remaining members go back to the queue."""
        self._record_group(fwk, group, pod_group, "Scheduled", "", chosen, tried)
        self.send_to_binding(fwk, chosen)
        self.shared.queue.group_done(group)
        self.shared.pod_groups.note_attempt(group.key, None)
        self.write_condition(pod_group, "True", REASON_SCHEDULED, "")

    def send_to_binding(self, fwk: Framework, chosen: PlacementResult) -> None:
        """The members ``chosen`` placed go through Permit to their binding
        cycles; those it could not place wait with their own reasons."""
        for member in chosen.members:
            if member.assumed is None:
                if member.fit is not None:
                    self.pods.handle_fit_error(fwk, member.state, member.info, member.fit, post_filter=False,
                                          requeue=False)
                elif member.status is not None:
                    write_attempt(self.shared.decisions, member.state, "Unschedulable", member.status.message())
                    self.failures.fail(fwk, member.info, member.status, requeue=False)
                continue
            status, waits = fwk.run_permit(member.state, member.assumed, member.node_name)
            if status is not None:
                write_attempt(self.shared.decisions, member.state, status.code.name.title().replace("_", ""),
                              status.message(), member.node_name, failed_at=("Permit", status))
                unreserve_and_forget(self.shared.cache, fwk, member.state, member.assumed, member.node_name)
                self.failures.fail(fwk, member.info, status, requeue=False)
                continue
            write_attempt(self.shared.decisions, member.state, "WaitingOnPermit" if waits else "Scheduled", "",
                          member.node_name)
            self.shared.stats.scheduled += 1
            self.shared.queue.done(member.info.pod)
            self.binding.start_binding(fwk, member.state, member.info,
                                       ScheduleResult(member.assumed, member.node_name, waits))

    def _group_failed(self, fwk: Framework, group: QueuedPodGroupInfo, members: list[QueuedPodInfo],
                      pod_group: PodGroup | None, status: Status, tried: list[PlacementResult],
                      outcome: PlacementResult | None = None, nominations: dict[str, str] | None = None,
                      preemption: dict | None = None) -> None:
        """The group does not fit (or its attempt failed): every member back
        with the group's reason and its nomination cleared - or, when
        PodGroupPostFilter made room (``nominations``: pod UID -> node;
        ``preemption``: what it recorded of its victims), set to where it will
        go - and the group waiting as one entity for an event one of the
        rejecting plugins cares about."""
        error = status.code == Code.ERROR
        message = status.message()
        if pod_group is not None:
            self._record_group(fwk, group, pod_group, "Error" if error else "Unschedulable", message,
                               outcome, tried, preemption)
        rejectors: set[str] = set() if error else {status.plugin} if status.plugin else set()
        pending = False
        own = {m.info.uid: m for m in outcome.members} if outcome is not None else {}
        for member in members:
            result = own.get(member.uid)
            if result is not None and result.fit is not None and not error:
                rejectors |= result.fit.diagnosis.unschedulable_plugins | result.fit.diagnosis.pending_plugins
            if result is not None:
                write_attempt(self.shared.decisions, result.state, "Error" if error else "Unschedulable", message)
            self.failures.fail_group_member(fwk, member, error, message, (nominations or {}).get(member.uid, ""))
        if not error:
            rejectors |= {name for name, _ in fwk.placement_feasible_plugins}
            rejectors |= {name for name, _ in fwk.placement_generate_plugins}
            rejectors |= {name for name, _ in fwk.pod_group_post_filter_plugins} if nominations else set()
        group.waiting_on_preemption = bool(nominations)
        if outcome is not None and not error:
            closest = self.shared.snapshot.table.names[outcome.placement.rows].tolist()
            first_attempt = group.initial_attempt_timestamp or self.shared.clock.now()
            self.shared.pod_groups.note_attempt(group.key, first_attempt, closest)
        self.shared.queue.group_done(group, rejectors, pending)
        if pod_group is not None:
            self.write_condition(pod_group, "False", REASON_SCHEDULER_ERROR if error else REASON_UNSCHEDULABLE,
                                 message)

    def write_condition(self, pod_group: PodGroup | CompositePodGroup, status: str, reason: str,
                        message: str) -> None:
        """``PodGroupInitiallyScheduled`` (``CompositePodGroupInitiallyScheduled``)
        by a strategic-merge patch of status with observedGeneration, as
        upstream ``PatchPodGroupStatus``; a True condition is never set back,
        and an unchanged one is not written."""
        composite = isinstance(pod_group, CompositePodGroup)
        kind, type_ = (("CompositePodGroup", COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED) if composite
                       else ("PodGroup", POD_GROUP_INITIALLY_SCHEDULED))
        current = (self.shared.pod_groups.composite(pod_group.key) if composite
                   else self.shared.pod_groups.pod_group(pod_group.key)) or pod_group
        existing = current.condition(type_)
        if existing is not None and existing.status == "True" and status != "True":
            return
        generation = current.metadata.generation
        if existing is not None and (existing.status, existing.reason, existing.message,
                                     existing.observed_generation) == (status, reason, message, generation):
            return
        changed = existing is None or existing.status != status
        since = self.shared.clock.now() if changed or existing is None else existing.last_transition_time
        condition = {"type": type_, "status": status, "reason": reason, "message": message,
                     "observedGeneration": generation, "lastTransitionTime": format_time(since)}
        try:
            self.shared.cluster.patch(kind, current.metadata.name, {"status": {"conditions": [condition]}},
                               current.metadata.namespace, subresource="status", uid=current.metadata.uid)
        except ApiError:
            pass  # gone or changed meanwhile: the next attempt writes it again

    def _record_group(self, fwk: Framework, group: QueuedPodGroupInfo, pod_group: PodGroup, result: str,
                      message: str, chosen: PlacementResult | None, tried: list[PlacementResult],
                      preemption: dict | None = None) -> None:
        """The group's decision record (placements tried, members placed in
        each, the first member that did not fit and why, the preemption it
        started), when recorded."""
        if self.shared.decisions is None or not self.shared.recording(f"podgroup/{group.key}"):
            return
        scheduled = self.shared.pod_groups.state(group.key).scheduled_count()
        if chosen is not None and chosen.applied:
            scheduled -= len(chosen.placed)
        placed = chosen is not None and result == "Scheduled"
        self.shared.decisions.write(group_record(
            group.key, group.attempts, self.shared.clock.now(), fwk.profile_name, result, message, pod_group.min_count,
            scheduled, [r.summary() for r in tried], chosen.placement.name if placed and chosen else None,
            {m.info.pod.key: m.node_name for m in chosen.placed} if placed and chosen else None, preemption))


def validate_members(pod_group: PodGroup, pods: list[Pod], scheduled: list[Pod]) -> str:
    """The scheduler's own checks of a group (upstream ``validatePodGroup`` and
    ``validateScheduledPods``): every member, queued or already scheduled, has
    the PodGroup's priority and preemption policy.  Returns the problem ("": none)."""
    priority = pod_group.priority_value
    policy = pod_group.spec.preemption_policy or PREEMPT_LOWER_PRIORITY
    for pod in [*pods, *scheduled]:
        if pod_priority(pod) != priority:
            return (f"all pods in a single pod group should have the same priority as the pod group's priority, "
                    f"got {pod_priority(pod)} and {priority}")
        own = pod.spec.preemption_policy or PREEMPT_LOWER_PRIORITY
        if own != policy:
            return (f"all pods in a single pod group should have the same preemption policy as the pod group's "
                    f"preemption policy, got {own} and {policy}")
    return ""


def member_order(info: QueuedPodInfo) -> tuple:
    """Members in a deterministic order (upstream ``GetUnscheduledPods``): higher
    priority first, then the earliest first attempt, then by name."""
    pod = info.pod
    return (-pod_priority(pod), info.initial_attempt_timestamp or 0.0, pod.metadata.name)


def _volumes_from_claims(pod: Pod) -> bool:
    """Does ``pod`` mount a PersistentVolumeClaim or an ephemeral volume (whose binding Reserve assumes)?"""
    return any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes)


def _nominated_placement(placements: list[Placement], members: list[QueuedPodInfo],
                         names: np.ndarray) -> Placement | None:
    """The placement holding most of the members' nominated nodes (tried first,
    as upstream does for a group preemption made room for), or None."""
    nominated = {m.pod.status.nominated_node_name for m in members if m.pod.status.nominated_node_name}
    if not nominated or len(placements) < 2:
        return None
    counts = [sum(1 for name in names[p.rows].tolist() if name in nominated) for p in placements]
    best = int(np.argmax(counts))
    return placements[best] if counts[best] else None

