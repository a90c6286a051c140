"""Scheduling a CompositePodGroup tree in one cycle (KEP-6012, ``scheduling.k8s.io/v1alpha3``).

A CompositePodGroup groups PodGroups (and other CompositePodGroups, up to
4 levels): a job in one block whose replicas each sit in one rack is a
root constrained to ``block`` with child PodGroups constrained to ``rack``.
The tree is one queued entity (``compositepodgroup/NS/ROOT``); its cycle
generates the root's placements (PlacementGenerate on the root's
constraint), and in each tries the children one by one - a child
PodGroup with its own placement algorithm within the parent's placement, a
child CompositePodGroup recursively - with PlacementFeasible counting
child groups against ``minGroupCount``.  A parent that fails undoes the
children that had succeeded; only a tree that succeeds sends members to
binding.  A tree with a cycle, more than 4 levels or several Workloads is
``Invalid``.  :class:`CompositePodGroupCycle` is built on the PodGroup
cycle by composition: it runs each leaf PodGroup through that cycle's
placement algorithm and sends what a tree placed to binding through it.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from kubesched.core.api.scheduling_v1beta1 import (
    REASON_INVALID,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    CompositePodGroup,
    PodGroup,
    pod_group_key,
)
from kubesched.core.observability import metrics

from ..framework.cycle_state import CycleState
from ..framework.podgroups import Placement, PlacementProgress, PodGroupInfo
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from .failure import FailureHandler
from .podgroup_cycle import COMPOSITE, NO_PLACEMENT, PlacementResult, PodGroupCycle, member_order, validate_members
from .queue import QueuedPodGroupInfo, QueuedPodInfo
from .state import SchedulerState


@attrs.define
class TreeResult:
    """What one node of the tree got within a placement: ``status`` (None: it
    fits), the placement chosen for it, the PodGroups placed below it (their
    results stay assumed) and the groups of the tree that fit (for their
    conditions)."""

    group: PodGroup | CompositePodGroup
    status: Status | None
    placement: Placement
    leaves: list[PlacementResult] = attrs.Factory(list)
    fitted: list[PodGroup | CompositePodGroup] = attrs.Factory(list)


class CompositePodGroupCycle:
    """The CompositePodGroup tree cycle.

    ``state``: the scheduler's shared state; ``groups``: the PodGroup cycle
    (its prepare step, placement algorithm, revert, binding and conditions);
    ``failures``: where the members of a tree that does not fit go back."""

    def __init__(self, state: SchedulerState, groups: PodGroupCycle, failures: FailureHandler):
        self.shared = state
        self.groups = groups
        self.failures = failures

    def schedule_one_tree(self, group: QueuedPodGroupInfo) -> None:
        """The tree's attempt: validation, the recursive algorithm from its
        root over all nodes, then binding for every placed member, or every
        member back to the queue with the tree's reason."""
        shared = self.shared
        root = shared.pod_groups.composite(group.key[len(COMPOSITE):])
        if root is None:
            left = self.groups.skip_pod_group_pod_schedule(group)
            shared.queue.group_done(group, {"GangScheduling"} if left else None)
            return
        members, fwk, problem = self.groups.prepare(group)
        if not members:
            shared.queue.group_done(group)
            return
        started = time.perf_counter()
        if fwk is None:
            self._tree_failed(next(iter(shared.profiles.values())), group, members, root,
                              Status(Code.ERROR, (problem,)), REASON_SCHEDULER_ERROR)
            return
        by_leaf, invalid, reason = self._validate(fwk, root, members)
        if invalid:
            self._tree_failed(fwk, group, members, root, Status(Code.ERROR, (invalid,)), reason)
            return
        self.groups.start_attempts(members)
        shared.cache.update_snapshot(shared.snapshot)
        everything = Placement("", np.arange(len(shared.snapshot), dtype=np.int64))
        result = self._schedule_node(fwk, root, everything, by_leaf, 0)
        if result.status is None:
            for placed in result.leaves:
                self.groups.send_to_binding(fwk, placed)
            shared.queue.group_done(group)
            for node in result.fitted:
                self.groups.write_condition(node, "True", REASON_SCHEDULED, "")
            outcome = metrics.SCHEDULED
        else:
            error = result.status.code == Code.ERROR
            self._tree_failed(fwk, group, members, root, result.status,
                              REASON_SCHEDULER_ERROR if error else REASON_UNSCHEDULABLE)
            outcome = metrics.ERROR if error else metrics.UNSCHEDULABLE
        metrics.observe_pod_group_attempt(outcome, fwk.profile_name, time.perf_counter() - started)

    def _validate(self, fwk: Framework, root: CompositePodGroup, members: list[QueuedPodInfo],
                  ) -> tuple[dict[str, list[QueuedPodInfo]], str, str]:
        """The tree's checks: its shape (``Invalid``), then each leaf's
        members (upstream ``validatePodGroup``).  Returns the members by leaf
        PodGroup key, in scheduling order, and the problem with its condition
        reason ("": none)."""
        pod_groups = self.shared.pod_groups
        _, invalid = pod_groups.root_of(root) if root.spec.parent_composite_pod_group_name else (None, "")
        invalid = invalid or self._tree_problem(root)
        if invalid:
            return {}, invalid, REASON_INVALID
        by_leaf: dict[str, list[QueuedPodInfo]] = {}
        for member in sorted(members, key=member_order):
            by_leaf.setdefault(pod_group_key(member.pod) or "", []).append(member)
        for key, leaf_members in by_leaf.items():
            leaf = pod_groups.pod_group(key)
            problem = validate_members(leaf, [m.pod for m in leaf_members],
                                       pod_groups.state(key).assigned_pods()) if leaf is not None else ""
            if problem:
                return by_leaf, problem, REASON_SCHEDULER_ERROR
        return by_leaf, "", ""

    def _tree_problem(self, root: CompositePodGroup) -> str:
        """Why the tree below ``root`` is Invalid: a group below it whose own
        path to the root breaks the rules (see ``PodGroupManager.root_of``)."""
        pending: list[PodGroup | CompositePodGroup] = [root]
        seen = {root.key}
        while pending:
            for child in self.shared.pod_groups.children(pending.pop().key):
                if child.key in seen:
                    return f"the group tree has a cycle through {child.key}"
                seen.add(child.key)
                _, problem = self.shared.pod_groups.root_of(child)
                if problem:
                    return problem
                if isinstance(child, CompositePodGroup):
                    pending.append(child)
        return ""

    def _schedule_node(self, fwk: Framework, node: PodGroup | CompositePodGroup, parent: Placement,
                       by_leaf: dict[str, list[QueuedPodInfo]], depth: int) -> TreeResult:
        """One node of the tree within ``parent``: a PodGroup through its own
        placement algorithm; a CompositePodGroup over its placements, each
        child in turn, PlacementFeasible counting child groups.  What fits
        stays assumed."""
        if isinstance(node, PodGroup):
            return self._schedule_leaf(fwk, node, parent, by_leaf.get(node.key, []))
        state = CycleState()
        info = PodGroupInfo(node.metadata.namespace, node.metadata.name, node)  # type: ignore[arg-type]
        placements, status = fwk.run_placement_generate(state, info, parent)
        if status is not None:
            return TreeResult(node, status, parent)
        children = self.shared.pod_groups.children(node.key)
        reasons = []
        for placement in sorted(placements, key=lambda p: p.name):
            fitted: list[TreeResult] = []
            remaining = len(children)
            status = fwk.run_placement_feasible(state, info, PlacementProgress(0, remaining))
            for child in children if status is None or status.code == Code.WAIT else ():
                result = self._schedule_node(fwk, child, placement, by_leaf, depth + 1)
                remaining -= 1
                if result.status is None:
                    fitted.append(result)
                elif result.status.code == Code.ERROR:
                    self._undo(fwk, fitted)
                    return result
                status = fwk.run_placement_feasible(state, info, PlacementProgress(len(fitted), remaining))
                if status is not None and status.code != Code.WAIT:
                    break
            if status is None:
                return TreeResult(node, None, placement, [leaf for r in fitted for leaf in r.leaves],
                                  [node, *(g for r in fitted for g in r.fitted)])
            self._undo(fwk, fitted)
            if status.code == Code.ERROR:
                return TreeResult(node, status, placement)
            reasons.append(f"{placement.name or 'all nodes'}: {status.message()}")
        message = NO_PLACEMENT.format(len(placements)) + (": " + "; ".join(reasons) if reasons else "")
        if len(placements) == 1 and reasons:
            message = reasons[0].partition(": ")[2]
        return TreeResult(node, Status(Code.UNSCHEDULABLE, (message,)), parent)

    def _schedule_leaf(self, fwk: Framework, group: PodGroup, parent: Placement,
                       members: list[QueuedPodInfo]) -> TreeResult:
        """A PodGroup of the tree: fits when its placement algorithm places it
        within ``parent``, or (no member pending) when its members already run."""
        scheduled = self.shared.pod_groups.state(group.key).scheduled_count()
        if not members:
            if scheduled >= group.min_count:
                return TreeResult(group, None, parent, [], [group])
            return TreeResult(group, Status(Code.UNSCHEDULABLE, (
                f"pod group {group.metadata.name!r} has {scheduled} of its minCount {group.min_count} pods",)), parent)
        info = PodGroupInfo(group.metadata.namespace, group.metadata.name, group, tuple(m.pod for m in members),
                            scheduled)
        result, _ = self.groups.pod_group_algorithm(fwk, CycleState(), info, members, parent)
        if result.status is not None:
            return TreeResult(group, Status(result.status.code, (
                f"pod group {group.metadata.name!r}: {result.status.message()}",), result.status.plugin), parent)
        return TreeResult(group, None, result.placement, [result], [group])

    def _undo(self, fwk: Framework, fitted: list[TreeResult]) -> None:
        """Revert what ``fitted`` children assumed, the last first."""
        for child in reversed(fitted):
            for leaf in reversed(child.leaves):
                self.groups.revert(fwk, leaf)

    def _tree_failed(self, fwk: Framework, group: QueuedPodGroupInfo, members: list[QueuedPodInfo],
                     root: CompositePodGroup, status: Status, reason: str) -> None:
        """The tree does not fit (or is invalid): every member back with its
        reason, nominations cleared; the tree waits as one entity; the root's
        CompositePodGroupInitiallyScheduled and each of its PodGroups'
        conditions say why."""
        error = status.code == Code.ERROR
        message = status.message()
        for member in members:
            self.failures.fail_group_member(fwk, member, error, message)
        rejectors = set() if error else {name for name, _ in fwk.placement_feasible_plugins} | {
            name for name, _ in fwk.placement_generate_plugins} | {
            name for name, _ in fwk.filter_plugins}
        self.shared.queue.group_done(group, rejectors)
        self.groups.write_condition(root, "False", reason, message)
        for key in {pod_group_key(m.pod) for m in members}:
            leaf = self.shared.pod_groups.pod_group(key) if key is not None else None
            if leaf is not None:
                self.groups.write_condition(leaf, "False", REASON_SCHEDULER_ERROR if error else REASON_UNSCHEDULABLE,
                                            message)
