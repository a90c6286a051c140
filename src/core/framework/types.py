"""Values passed between the framework and plugins besides Status and CycleState."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Callable

from attrs import field, frozen

#: The range of a Score plugin's normalized score (upstream framework.MaxNodeScore / MinNodeScore).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
#: Bounds of the configuration's integers: a plugin weight is an int32, a total score an int64.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


@frozen
class PreFilterResult:
    """``node_names``: the only nodes worth filtering (None = all).  Results of
    several PreFilter plugins are intersected."""

    node_names: frozenset[str] | None = None

    def merge(self, other: "PreFilterResult | None") -> "PreFilterResult":
        """The intersection of the two results' nodes; None or an all-nodes result leaves the other as is (upstream
        ``PreFilterResult.Merge``)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@frozen
class PostFilterResult:
    """``nominated_node_name``: where the pod should go once victims are gone
    ("" clears the pod's nomination)."""

    nominated_node_name: str = ""


@frozen
class PreBindWait:
    """What a PreBind plugin returns when its work completes elsewhere (a
    controller binding volumes, a driver meeting binding conditions).

    The binding cycle then polls ``check()`` every ``interval`` seconds on the
    clock (the scheduler goes on with other pods meanwhile): a Status with
    code Wait means not yet; None or Success continues with the next PreBind
    plugin; any other status fails the binding as that plugin's PreBind
    status would.  After ``timeout`` seconds the binding fails with an Error
    whose message is ``message``.  Mirrors the ``wait.PollUntilContextTimeout``
    upstream plugins run inside PreBind (VolumeBinding: every 1 s, up to
    bindTimeoutSeconds).
    """

    check: Callable[[], Any]
    timeout: float
    interval: float = 1.0
    message: str = "timed out waiting for the condition"


class ActionType(enum.IntFlag):
    """What happened to an object (upstream's ``fwk.ActionType`` bits)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_OTHER = 4096
    #: ``status.declaredFeatures`` of a Node changed (NodeDeclaredFeatures)
    UPDATE_NODE_DECLARED_FEATURE = 8192
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED | UPDATE_POD_GENERATED_RESOURCE_CLAIM | UPDATE_OTHER
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE

    def __str__(self) -> str:
        """Upstream's ``ActionType.String()``: ``Add``, ``Delete``, ``UpdateNodeTaint``, ``Update``, ``All``;
        other combinations as their bits joined by ``|`` (``Add|Delete``)."""
        named = _ACTION_NAMES.get(self)
        if named is not None:
            return named
        return "|".join(_ACTION_NAMES[bit] for bit in ActionType if bit & self and bit in _ACTION_NAMES)


#: Each single bit's (and UPDATE's, ALL's) name as upstream prints it; its "other update" bit prints as Update.
_ACTION_NAMES = {
    **{action: "".join(word.capitalize() for word in action.name.split("_"))
       for action in ActionType if action.name is not None},
    ActionType.UPDATE_OTHER: "Update", ActionType.UPDATE: "Update", ActionType.ALL: "All",
}


#: Event resources: ``Pod`` matches both assigned and unscheduled pods.
POD, ASSIGNED_POD, UNSCHEDULED_POD, NODE, WILDCARD = "Pod", "AssignedPod", "UnscheduledPod", "Node", "*"


@frozen
class ClusterEvent:
    """A change of some resource: ``resource`` is a kind name ("Node",
    "PersistentVolumeClaim", "AssignedPod", "*") and ``action`` the bits."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: "ClusterEvent") -> bool:
        """True when this registered event covers the event ``other`` that happened."""
        if self.resource != WILDCARD and self.resource != other.resource:
            if not (self.resource == POD and other.resource in (ASSIGNED_POD, UNSCHEDULED_POD)):
                return False
        return bool(self.action & other.action)

    def __str__(self) -> str:
        """Upstream's ``ClusterEvent.Label()``: the custom label, else resource and action (``AssignedPodDelete``)."""
        return self.label or f"{self.resource}{self.action}"


class QueueingHint(enum.IntEnum):
    """QUEUE_SKIP: the event cannot help the pod; QUEUE: it may."""

    QUEUE_SKIP = 0
    QUEUE = 1


#: ``hint(pod, old_obj, new_obj) -> QueueingHint``; old is None on add, new None on delete.
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@frozen
class HintIndex:
    """Which waiting pods an event can concern, so that the scheduling queue asks a queueing hint about those
    pods only instead of every pod its plugin holds (kubesched's: upstream asks them all; the answers are the
    same, as the hint answers QueueSkip for the others).

    ``pod_keys(pod)``: the keys of what the pod waits for (``namespace/name`` of its ResourceClaims, say), read
    when the pod enters the unschedulable pool; None: ask about the pod for every event.  ``event_keys(old,
    new)``: the keys the event concerns; None: it may concern any pod.  Contract: the hint answers QueueSkip
    for a pod that has none of the event's keys."""

    pod_keys: Callable[[Any], Iterable[str] | None]
    event_keys: Callable[[Any, Any], Iterable[str] | None]


@frozen
class ClusterEventWithHint:
    """A cluster event a plugin registers and its queueing hint (None: always queue) (upstream
    ``ClusterEventWithHint``); ``index``: the pods the hint can answer Queue for (:class:`HintIndex`; None:
    any it holds)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = field(default=None, eq=False)
    index: HintIndex | None = field(default=None, eq=False)


#: The event that matches everything (used when a plugin does not register events).
EVERY_EVENT = ClusterEvent(WILDCARD, ActionType.ALL, "WildCardEvent")
