"""GangScheduling: all or nothing for a PodGroup's pods (upstream plugins/gangscheduling, 1.37).

PreEnqueue holds a member back until its PodGroup exists and, for a gang,
until at least ``minCount`` of its pods are known (for a group in a
CompositePodGroup tree: until the root has ``minGroupCount`` ready
children, recursively); PlacementFeasible tells
the PodGroup cycle, member by member, whether ``minCount`` can still be met
in the placement being tried.  Its queueing hints retry a waiting group when
a member pod or its PodGroup is added, or when ``minCount`` is lowered.
"""

from __future__ import annotations

import json
from typing import Any

from kubesched import (
    ASSIGNED_POD,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.core.api.scheduling_v1beta1 import PodGroup, pod_group_name

NAME = "GangScheduling"
#: How many PlacementFeasible answers (one per minCount and progress) the plugin keeps before starting afresh.
MAX_ANSWERS = 4096
def quoted(name: str) -> str:
    """``name`` as Go's ``%q`` prints it (a PodGroup name is a DNS label: no escapes needed)."""
    return json.dumps(name)


class GangScheduling:
    """PreEnqueue (UnschedulableAndUnresolvable "waiting for pods's pod group %q
    to appear in scheduling queue" / "waiting for minCount pods from a gang to
    appear in scheduling queue" / "waiting for composite pod group %q tree to
    meet quorum") and PlacementFeasible (Wait "minCount (%d) is not yet
    satisfied: %d scheduled, %d remaining", Unschedulable "minCount (%d) cannot
    be satisfied: ..."), upstream's messages byte for byte; a basic group needs
    one pod.  Only with GangScheduling on (GenericWorkload from 1.37); the
    CompositePodGroup tree only with CompositePodGroup on."""

    name = NAME

    def __init__(self, args: Any, handle: Any):
        self.handle = handle
        #: (minCount, scheduled, remaining) -> PlacementFeasible's answer, up to :data:`MAX_ANSWERS` of them
        self._answers: dict[tuple[int, int, int], Status] = {}

    @hookimpl
    def pre_enqueue(self, pod):
        name = pod_group_name(pod)
        features = self.handle.features
        if name is None or not features.enabled("GangScheduling"):
            return None
        groups = self.handle.pod_groups
        pod_group = groups.group_of(pod)
        if pod_group is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          (f"waiting for pods's pod group {quoted(name)} to appear in scheduling queue",))
        parent = groups.parent_of(pod_group) if features.enabled("CompositePodGroup") else None
        if parent is not None:  # one of a CompositePodGroup's groups: the whole tree needs its quorum
            missing = groups.missing_ancestor(pod_group)
            if missing is not None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                              ("failed to build hierarchy snapshot: composite pod group object not found in state "
                               f"for compositepodgroup/{missing}",))
            root, problem = groups.root_of(pod_group)
            if problem:  # the tree goes to its cycle, which marks it Invalid and reports the problem
                return None
            tree = groups.composite(root) if root is not None else None
            if tree is None or not groups.ready(tree):
                name = (root or parent).partition("/")[2]
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                              (f"waiting for composite pod group {quoted(name)} tree to meet quorum",))
            return None
        if pod_group.is_gang and len(groups.state(pod_group.key).all_pods) < pod_group.min_count:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          ("waiting for minCount pods from a gang to appear in scheduling queue",))
        return None

    @hookimpl
    def placement_feasible(self, state, group, progress):
        if not self.handle.features.enabled("GangScheduling"):
            return None
        min_count = group.pod_group.min_count
        scheduled, remaining = progress.scheduled, progress.remaining
        if scheduled >= min_count:
            return None
        # asked once per member tried, the same progress in every placement: each answer made once (a Status is
        # frozen), named already (the framework's attribution keeps the same object)
        key = (min_count, scheduled, remaining)
        status = self._answers.get(key)
        if status is None:
            if len(self._answers) >= MAX_ANSWERS:
                self._answers.clear()
            if scheduled + remaining < min_count:
                status = Status(Code.UNSCHEDULABLE, (f"minCount ({min_count}) cannot be satisfied: "
                                                     f"{scheduled} scheduled, {remaining} remaining",), NAME)
            else:
                status = Status(Code.WAIT, (f"minCount ({min_count}) is not yet satisfied: "
                                            f"{scheduled} scheduled, {remaining} remaining",), NAME)
            self._answers[key] = status
        return status

    @hookimpl
    def events_to_register(self):
        # schedulingGroup is immutable: pod adds are the only pod events that can complete a gang
        return [
            ClusterEventWithHint(ClusterEvent(UNSCHEDULED_POD, ActionType.ADD), pod_added),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD), pod_added),
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.ADD), pod_group_added),
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.UPDATE), pod_group_updated),
            ClusterEventWithHint(ClusterEvent("CompositePodGroup", ActionType.ADD | ActionType.UPDATE)),
        ]


def _same_group(pod: Any, namespace: str, name: str | None) -> bool:
    return name is not None and pod.metadata.namespace == namespace and pod_group_name(pod) == name


def pod_added(pod, old, new) -> QueueingHint:
    """A pod of ``pod``'s group arrived (unscheduled or bound): Queue."""
    if new is None or pod_group_name(pod) is None:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if _same_group(pod, new.metadata.namespace, pod_group_name(new)) \
        else QueueingHint.QUEUE_SKIP


def pod_group_added(pod, old, new: PodGroup | None) -> QueueingHint:
    """``pod``'s PodGroup appeared: Queue."""
    if new is None:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if _same_group(pod, new.metadata.namespace, new.metadata.name) \
        else QueueingHint.QUEUE_SKIP


def pod_group_updated(pod, old: PodGroup | None, new: PodGroup | None) -> QueueingHint:
    """``pod``'s gang lowered ``minCount``: Queue (anything else cannot help)."""
    if old is None or new is None or not _same_group(pod, new.metadata.namespace, new.metadata.name):
        return QueueingHint.QUEUE_SKIP
    before, after = old.spec.scheduling_policy.gang, new.spec.scheduling_policy.gang
    if before is None or after is None:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if after.min_count < before.min_count else QueueingHint.QUEUE_SKIP
