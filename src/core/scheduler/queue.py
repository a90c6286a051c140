"""The scheduling queue: activeQ, backoffQ, the unschedulable pool, and the nominator.

Mirrors upstream's ``internal/queue``:

- activeQ is ordered by the QueueSort plugin; :meth:`SchedulingQueue.pop` takes its head.
- A pod that failed goes to the unschedulable pool, remembering which plugins
  rejected it; a pod that failed without a rejecting plugin (an error) goes to
  backoffQ.  Backoff is ``podInitialBackoffSeconds * 2^(attempts-1)``, capped
  at ``podMaxBackoffSeconds``.
- A cluster event moves a pod out of the pool when one of its rejecting
  plugins registered for that event and the plugin's queueing hint says
  Queue; it goes to backoffQ if its backoff has not expired, else to activeQ.
- PreEnqueue plugins gate pods: a gated pod waits in the pool until an event
  its gating plugin registered for makes PreEnqueue pass.
- With SchedulerPopFromBackoffQ (beta, on since 1.33; KEP-5142) backoff
  expiries are cut to whole-second windows, backoffQ orders a window's pods as
  activeQ does, and :meth:`SchedulingQueue.pop` takes the head of backoffQ
  when activeQ is empty (not pods backing off after an error, which wait out
  their backoff in a queue of their own).
- Pods left in the pool for ``podMaxInUnschedulablePodsDuration`` (5 minutes)
  are moved back anyway (checked every 30 seconds).
- Cluster events that happen while a pod is in flight (being scheduled, or
  waiting at Permit or in its binding cycle) are remembered: when the pod comes
  back unschedulable, an event one of its rejecting plugins cares about moves
  it at once instead of leaving it in the pool (upstream's in-flight events).
- A pod that names a PodGroup (``spec.schedulingGroup``) is never queued
  alone: it is a member of its group's :class:`QueuedPodGroupInfo`, which
  sits in activeQ, backoffQ or the pool as one entity (KEP-4671's queued
  entities).  The group enters activeQ once PreEnqueue passes for every
  member (a member waiting for its claims or gates holds the group), is
  ordered by the PodGroup's priority, and backs off as one; members that
  arrive while the group is in flight join its next attempt.
"""

from __future__ import annotations

import collections
import heapq
import itertools
from typing import Any, Callable

from kubesched.core.api.podpriority import pod_priority
from kubesched.core.observability import metrics

from ..api.core_v1 import Pod
from ..clock import Clock, Timer
from ..framework.nodeinfo import PodInfo
from ..framework.status import Status
from ..framework.types import UNSCHEDULED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..undo import Restore, restoring_all, saved_fields
from .waiting_index import WaitingIndex

#: Upstream's podMaxInUnschedulablePodsDuration and its flush period.
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0
#: scheduler_queue_incoming_pods_total's event labels, as upstream's queue gives them
POD_ADD, POD_UPDATE, ATTEMPT_FAILURE = "UnscheduledPodAdd", "UnscheduledPodUpdate", "ScheduleAttemptFailure"
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
#: upstream's backoffQOrderingWindowDuration: with SchedulerPopFromBackoffQ, backoff ends on whole windows (seconds)
BACKOFF_ORDERING_WINDOW = 1.0
#: scheduler_queue_incoming_pods_total's label for a pod taken from backoffQ by an idle pop
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"

ACTIVE, BACKOFF, UNSCHEDULABLE = "active", "backoff", "unschedulable"


class QueuedPodInfo:
    """A pending pod in the queue.

    ``timestamp``: when it was last added (seconds); ``attempts``: scheduling
    attempts so far; ``initial_attempt_timestamp``: first pop;
    ``unschedulable_plugins`` / ``pending_plugins``: who rejected it last;
    ``gating_plugin``: the PreEnqueue plugin holding it back; ``moved_by``:
    the event that last moved it out of the unschedulable pool.  ``pod_info``:
    what the scheduler derives from ``pod``, when already known (default: derived here).
    """

    __slots__ = (
        "pod_info", "timestamp", "attempts", "initial_attempt_timestamp", "unschedulable_plugins",
        "pending_plugins", "gating_plugin", "gating_status", "gated_since", "where", "_entry", "backoff_expiry",
        "popped_at", "_group", "moved_by", "stranded",
    )

    def __init__(self, pod: Pod, now: float, pod_info: PodInfo | None = None):
        self.pod_info = pod_info if pod_info is not None else PodInfo(pod)
        self.timestamp = now
        self.attempts = 0
        self.initial_attempt_timestamp: float | None = None
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.gating_plugin = ""
        self.gating_status: Status | None = None
        #: since when PreEnqueue holds it with ``gating_status`` (seconds; None: not held)
        self.gated_since: float | None = None
        self.where = ""
        self._entry: _Entry | None = None
        self.backoff_expiry = 0.0
        self.popped_at = 0
        #: in the unschedulable pool: (profile, gating plugin, rejectors, pending plugins), see SchedulingQueue.move_all
        self._group: tuple | None = None
        self.moved_by = ""
        #: a PodGroup that ran and fell below its minCount (always False for a pod of its own)
        self.stranded = False

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def uid(self) -> str:
        return self.pod_info.pod.metadata.uid

    @property
    def priority(self) -> int:
        """What QueueSort orders by: the pod's priority."""
        return self.pod_info.pod.spec.priority or 0


class QueuedPodGroupInfo(QueuedPodInfo):
    """A PodGroup in the queue: one entity for all its pending members
    (upstream's ``QueuedPodGroupInfo``).

    ``key``: ``namespace/name`` of the PodGroup; ``members``: pod UID ->
    the member's own :class:`QueuedPodInfo` (its pod, attempts, gate), in
    arrival order; ``attempt``: the members a popped group is being scheduled
    with (those that arrive meanwhile wait for the next attempt);
    ``group_priority``: the PodGroup's ``spec.priority`` (None while the
    group is unknown: the members' priority then).  ``pod`` is a
    representative member (for QueueSort, profiles and queueing hints);
    timestamps, attempts, backoff and rejecting plugins are the group's.
    """

    __slots__ = ("key", "members", "attempt", "group_priority", "waiting_on_preemption")

    def __init__(self, key: str, first: QueuedPodInfo, now: float):
        super().__init__(first.pod, now)
        self.pod_info = first.pod_info
        self.key = key
        self.members: dict[str, QueuedPodInfo] = {}
        self.attempt: list[QueuedPodInfo] = []
        self.group_priority: int | None = None
        #: its last attempt ended with room being made for it (PodGroupPostFilter): the next starts no preemption
        self.waiting_on_preemption = False

    @property
    def uid(self) -> str:
        return self.key

    @property
    def priority(self) -> int:
        """What QueueSort orders by: the PodGroup's priority."""
        return self.group_priority if self.group_priority is not None else super().priority


class _Entry:
    """A heap slot; ``removed`` entries are skipped (lazy deletion)."""

    __slots__ = ("info", "key", "removed", "less")

    def __init__(self, info: QueuedPodInfo, key: Any, less: Callable[[Any, Any], bool] | None):
        self.info = info
        self.key = key
        self.removed = False
        self.less = less

    def __lt__(self, other: "_Entry") -> bool:
        if self.less is not None:
            if self.less(self.info, other.info):
                return True
            # pods queued at the same instant (a fake clock) that QueueSort does not
            # tell apart keep their arrival order (``key`` is a sequence number)
            return (self.info.timestamp == other.info.timestamp and self.key < other.key
                    and not self.less(other.info, self.info))
        return self.key < other.key


class _WindowEntry(_Entry):
    """A backoffQ slot under SchedulerPopFromBackoffQ: by backoff window (``key[0]``), then as activeQ
    orders pods, then by arrival (``key[1]``)."""

    __slots__ = ()

    def __lt__(self, other: "_Entry") -> bool:
        if self.key[0] != other.key[0]:
            return self.key[0] < other.key[0]
        assert self.less is not None
        if self.less(self.info, other.info):
            return True
        return not self.less(other.info, self.info) and self.key[1] < other.key[1]


class Nominator:
    """Pods nominated to nodes by preemption (``status.nominatedNodeName``)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add(self, pod_info: PodInfo, node_name: str) -> None:
        """Nominate the pod to ``node_name`` (replacing an earlier nomination)."""
        uid = pod_info.pod.metadata.uid
        self.delete(pod_info.pod)
        if not node_name:
            return
        self._by_node.setdefault(node_name, {})[uid] = pod_info
        self._node_of[uid] = node_name

    def delete(self, pod: Pod) -> None:
        """End ``pod``'s nomination, if any (upstream ``DeleteNominatedPodIfExists``)."""
        node = self._node_of.pop(pod.metadata.uid, None)
        if node is not None:
            pods = self._by_node.get(node, {})
            pods.pop(pod.metadata.uid, None)
            if not pods:
                self._by_node.pop(node, None)

    def update(self, old: Pod, new_info: PodInfo) -> None:
        """A nominated pod changed (upstream ``UpdateNominatedPod``): a changed
        ``status.nominatedNodeName`` wins (an empty one ends the nomination);
        otherwise the nomination stays with the newer pod."""
        new = new_info.pod
        if old.status.nominated_node_name != new.status.nominated_node_name:
            self.add(new_info, new.status.nominated_node_name)
            return
        node = self._node_of.get(old.metadata.uid)
        if node is not None:
            self.add(new_info, node)

    def nominated_node(self, pod: Pod) -> str:
        """The node ``pod`` is nominated to, "" when none."""
        return self._node_of.get(pod.metadata.uid, "")

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to ``node_name`` (upstream ``NominatedPodsForNode``)."""
        return list(self._by_node.get(node_name, {}).values())

    def pods_to_respect(self, pod: Pod, node_name: str) -> list[PodInfo]:
        """Pods nominated to ``node_name`` that ``pod`` must leave room for: those
        of equal or higher priority, other than ``pod`` itself (upstream
        ``addGENominatedPods``)."""
        pods = self._by_node.get(node_name)
        if not pods:
            return []
        priority = pod_priority(pod)
        uid = pod.metadata.uid
        return [info for other, info in pods.items() if other != uid and pod_priority(info.pod) >= priority]

    def nodes(self) -> list[str]:
        """The names of the nodes that have nominated pods."""
        return list(self._by_node)


class SchedulingQueue:
    """activeQ + backoffQ + unschedulable pool, shared by every profile.

    ``less``: the QueueSort plugin's ``less(a, b)``; ``pre_enqueue(pod)``:
    runs the pod's profile's PreEnqueue plugins (Status or None);
    ``hints``: profile name -> [(plugin, ClusterEventWithHint)];
    ``profile_of(pod)``: the pod's profile name; ``nominator``: the pods
    nominated to nodes (shared with the plugins' handles; default: a new
    one); ``group_of(pod)``: the ``namespace/name`` of the PodGroup a pod
    belongs to (None: queued alone); ``group_priority(key)``: that PodGroup's
    priority (None while it is unknown); ``group_stranded(key)``: whether it
    ran and fell below its minCount; ``pop_from_backoff``: the
    SchedulerPopFromBackoffQ behaviour (module docstring).  Backoff values are seconds.
    """

    def __init__(
        self,
        clock: Clock,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        pre_enqueue: Callable[[Pod], Status | None],
        hints: dict[str, list[tuple[str, ClusterEventWithHint]]],
        profile_of: Callable[[Pod], str],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        nominator: Nominator | None = None,
        group_of: Callable[[Pod], str | None] = lambda pod: None,
        group_priority: Callable[[str], int | None] = lambda key: None,
        group_stranded: Callable[[str], bool] = lambda key: False,
        pop_from_backoff: bool = False,
    ):
        self.clock = clock
        self.pop_from_backoff = pop_from_backoff
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._hints = hints
        #: the pool's pods by what they wait for, for the hints with a HintIndex (see move_all)
        self._waiting = WaitingIndex(hints)
        self._profile_of = profile_of
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[_Entry] = []
        #: pods backing off after a rejection, and after an error (never popped before their backoff ends)
        self._backoff: list[_Entry] = []
        self._error_backoff: list[_Entry] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        #: the same pods grouped by who holds them (profile, gating plugin, rejectors, pending plugins), so
        #: that an event none of a group's plugins registered for skips the whole group
        self._unschedulable_groups: dict[tuple, dict[str, QueuedPodInfo]] = {}
        self._pods: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        #: (sequence number, event, old, new) of cluster events seen while pods were in flight
        self._in_flight_events: collections.deque[tuple[int, ClusterEvent, Any, Any]] = collections.deque()
        self._event_seq = 0
        self._seq = itertools.count()
        self._backoff_timer: Timer | None = None
        self._flush_timer: Timer | None = None
        self.nominator = nominator or Nominator()
        self._group_of = group_of
        self._group_priority = group_priority
        self._group_stranded = group_stranded
        #: PodGroup key -> its entity (also in _pods or _in_flight under the key); pod UID -> its group
        self._groups: dict[str, QueuedPodGroupInfo] = {}
        self._member_of: dict[str, QueuedPodGroupInfo] = {}
        #: Called whenever a pod enters activeQ (wakes a sleeping loop).
        self.on_activate: Callable[[], None] = lambda: None
        #: Called when PreEnqueue starts holding a pod, or holds it for another reason (the decision record)
        self.on_held: Callable[[QueuedPodInfo], None] = lambda info: None

    def savepoint(self) -> Restore:
        """The queue as it is now - every pending pod and group with its attempts, backoff, rejecting plugins
        and place, the nominations, the in-flight events - for ``kubesched.sim``'s rollback; the returned
        callable puts it back.  Cost: the pending pods, not the cluster."""
        infos: dict[int, QueuedPodInfo] = {}
        for info in (*self._pods.values(), *self._in_flight.values(), *self._unschedulable.values(),
                     *self._groups.values(), *self._member_of.values()):
            infos[id(info)] = info
            if isinstance(info, QueuedPodGroupInfo):
                infos.update((id(member), member) for member in (*info.members.values(), *info.attempt))
        entries = [*self._active, *self._backoff, *self._error_backoff]
        infos.update((id(entry.info), entry.info) for entry in entries)
        return restoring_all([saved_fields(self), saved_fields(self.nominator), saved_fields(self._waiting)]
                             + [saved_fields(info) for info in infos.values()]
                             + [saved_fields(entry, ("removed",)) for entry in entries])

    # --- counts --------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue: active, backoff, unschedulable and gated (a group counts its members)."""
        def size(info: QueuedPodInfo) -> int:
            return len(info.members) if isinstance(info, QueuedPodGroupInfo) else 1

        gated = sum(size(info) for info in self._unschedulable.values() if info.gating_plugin)
        return {
            "active": sum(size(e.info) for e in self._active if not e.removed),
            "backoff": sum(size(e.info) for e in (*self._backoff, *self._error_backoff) if not e.removed),
            "unschedulable": sum(size(info) for info in self._unschedulable.values()) - gated,
            "gated": gated,
        }

    def has_active(self) -> bool:
        """Whether :meth:`pop` has a pod or PodGroup to give: activeQ's, or with SchedulerPopFromBackoffQ
        backoffQ's (entries removed since are dropped first)."""
        for heap in (self._active, self._backoff) if self.pop_from_backoff else (self._active,):
            while heap and heap[0].removed:
                heapq.heappop(heap)
            if heap:
                return True
        return False

    def __contains__(self, pod: Pod) -> bool:
        return pod.metadata.uid in self._pods or pod.metadata.uid in self._member_of

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        """The queue's entry for ``pod``: its own, or its entry as a member of a group."""
        group = self._member_of.get(pod.metadata.uid)
        if group is not None:
            return group.members.get(pod.metadata.uid)
        return self._pods.get(pod.metadata.uid)

    def group(self, pod: Pod) -> QueuedPodGroupInfo | None:
        """The queued group ``pod`` is a member of, or None."""
        return self._member_of.get(pod.metadata.uid)

    def pending_pods(self) -> list[QueuedPodInfo]:
        """Every pending pod (members of queued groups included)."""
        out: list[QueuedPodInfo] = []
        for info in self._pods.values():
            out.extend(info.members.values() if isinstance(info, QueuedPodGroupInfo) else (info,))
        return out

    # --- adding --------------------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod (informer add)."""
        uid = pod.metadata.uid
        if uid in self._pods or uid in self._in_flight or uid in self._member_of:
            return
        info = QueuedPodInfo(pod, self.clock.now())
        if pod.status.nominated_node_name:
            # a nomination made earlier (status.nominatedNodeName) keeps holding its room
            self.nominator.add(info.pod_info, pod.status.nominated_node_name)
        key = self._group_of(pod)
        if key is not None:
            self._add_member(key, info)
            return
        self._pods[info.uid] = info
        self._enqueue_gated_or_active(info, POD_ADD)

    def _add_member(self, key: str, info: QueuedPodInfo) -> None:
        """``info`` joins its group's entity (made on the first member)."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = QueuedPodGroupInfo(key, info, self.clock.now())
            self._pods[key] = group
        group.members[info.uid] = info
        self._member_of[info.uid] = group
        status = self._pre_enqueue(info.pod)
        self._hold(info, status)
        if group.key in self._in_flight:
            return  # joins the next attempt
        if status is not None:
            if not group.gating_plugin:  # it holds the whole group (the others stay as they are)
                self._hold(group, status)
                self._to_unschedulable(group, POD_ADD)
        elif group.gating_plugin:
            self._enqueue_gated_or_active(group, POD_ADD)
        elif group.where == UNSCHEDULABLE:
            if self._hint(group, ClusterEvent(UNSCHEDULED_POD, ActionType.ADD), None, info.pod):
                group.moved_by = "UnscheduledPodAdd"
                self._move(group, POD_ADD)
        elif not group.where:
            self._enqueue_gated_or_active(group, POD_ADD)

    def regroup(self) -> None:
        """Move every queued member whose entity changed (its PodGroup turned
        out to be part of a CompositePodGroup tree, say) to its new one."""
        for uid, group in list(self._member_of.items()):
            member = group.members.get(uid)
            if member is not None and group.key not in self._in_flight and self._group_of(member.pod) != group.key:
                self.delete(member.pod)
                self.add(member.pod)

    def _gate(self, info: QueuedPodInfo) -> Status | None:
        """PreEnqueue for a pod, or for a group: its gated members run it again
        (the others passed already) and the group passes when every member
        does (a member waiting for its claims or its scheduling gates holds
        its whole group), else the first gated member's status holds it."""
        if not isinstance(info, QueuedPodGroupInfo):
            return self._pre_enqueue(info.pod)
        held: Status | None = None
        for member in info.members.values():
            if member.gating_status is None:
                continue
            self._hold(member, self._pre_enqueue(member.pod))
            if held is None:
                held = member.gating_status
        return held

    def _enqueue_gated_or_active(self, info: QueuedPodInfo, event: str) -> None:
        status = self._gate(info)
        self._hold(info, status)
        if status is not None:
            self._to_unschedulable(info, event)
            return
        self._to_active(info, event)

    def _hold(self, info: QueuedPodInfo, status: Status | None) -> None:
        """PreEnqueue's answer for ``info``: ``status`` holds it (None: lets it in).  A pod newly held, or held
        by another plugin or message, is reported to :attr:`on_held` (a group's entity is not: its members are)."""
        before = info.gating_status
        info.gating_plugin = status.plugin if status is not None else ""
        info.gating_status = status
        if status is None:
            info.gated_since = None
            return
        if before is None or before.plugin != status.plugin or before.message() != status.message():
            info.gated_since = self.clock.now()
            if not isinstance(info, QueuedPodGroupInfo):
                self.on_held(info)

    @staticmethod
    def _incoming(info: QueuedPodInfo, queue: str, event: str) -> None:
        """scheduler_queue_incoming_pods_total for ``info`` (a group: each member) entering ``queue``."""
        if event:
            for _ in (info.members if isinstance(info, QueuedPodGroupInfo) else (info,)):
                metrics.pod_incoming(queue, event)

    def _to_active(self, info: QueuedPodInfo, event: str = "") -> None:
        """``info`` into activeQ; ``event``: what moved it there (upstream's label), counted in
        scheduler_queue_incoming_pods_total ("": a re-sort of a pod already there, not counted)."""
        self._incoming(info, metrics.ACTIVE_Q, event)
        if isinstance(info, QueuedPodGroupInfo):
            info.group_priority = self._group_priority(info.key)
            info.stranded = self._group_stranded(info.key)
        self._detach(info)
        entry = _Entry(info, next(self._seq), self._less)
        info._entry = entry
        info.where = ACTIVE
        heapq.heappush(self._active, entry)
        self.on_activate()

    def _to_backoff(self, info: QueuedPodInfo, event: str) -> None:
        self._incoming(info, metrics.BACKOFF_Q, event)
        self._detach(info)
        key = (info.backoff_expiry, next(self._seq))
        rejected = bool(info.unschedulable_plugins or info.pending_plugins)
        entry = _WindowEntry(info, key, self._less) if rejected and self.pop_from_backoff else _Entry(info, key, None)
        info._entry = entry
        info.where = BACKOFF
        heapq.heappush(self._backoff if rejected else self._error_backoff, entry)
        self._arm_backoff_timer()

    def _backoff_ends(self, expiry: float) -> float:
        """When a pod whose backoff expires at ``expiry`` may leave backoffQ: then, or with
        SchedulerPopFromBackoffQ once its window is over (upstream's isEntityBackingoff)."""
        return expiry + BACKOFF_ORDERING_WINDOW if self.pop_from_backoff else expiry

    def _backing_off(self, info: QueuedPodInfo) -> bool:
        return self._backoff_ends(info.backoff_expiry) > self.clock.now()

    def _to_unschedulable(self, info: QueuedPodInfo, event: str) -> None:
        if info.where != UNSCHEDULABLE:
            self._incoming(info, metrics.UNSCHEDULABLE_PODS_Q, event)
        self._detach(info)
        info.where = UNSCHEDULABLE
        self._unschedulable[info.uid] = info
        info._group = (self._profile_of(info.pod), info.gating_plugin, frozenset(info.unschedulable_plugins),
                       frozenset(info.pending_plugins))
        self._unschedulable_groups.setdefault(info._group, {})[info.uid] = info
        if self._waiting:
            self._waiting.add(info.uid, info.pod, isinstance(info, QueuedPodGroupInfo))
        self._arm_flush_timer()

    def _detach(self, info: QueuedPodInfo) -> None:
        if info._entry is not None:
            info._entry.removed = True
            info._entry = None
        if info.where == UNSCHEDULABLE:
            self._unschedulable.pop(info.uid, None)
            group = info._group
            members = self._unschedulable_groups.get(group) if group is not None else None
            if group is not None and members is not None:
                members.pop(info.uid, None)
                if not members:
                    del self._unschedulable_groups[group]
            info._group = None
            if self._waiting:
                self._waiting.remove(info.uid)
        info.where = ""

    # --- the scheduling loop's side ------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ (now in flight), or None when activeQ is empty (with
        SchedulerPopFromBackoffQ: the head of backoffQ then, its backoff cut short).
        A group comes with its ``attempt``: its members now, each counting an attempt."""
        if self.pop_from_backoff and not self.has_active_q():
            while self._backoff:
                entry = heapq.heappop(self._backoff)
                if not entry.removed:
                    self._to_active(entry.info, POP_FROM_BACKOFF_Q)
                    break
        while self._active:
            entry = heapq.heappop(self._active)
            if entry.removed:
                continue
            info = entry.info
            info._entry = None
            info.where = ""
            del self._pods[info.uid]
            self._in_flight[info.uid] = info
            info.popped_at = self._event_seq
            info.attempts += 1
            now = self.clock.now()
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = now
            if isinstance(info, QueuedPodGroupInfo):
                info.attempt = list(info.members.values())
                for member in info.attempt:
                    member.attempts += 1
                    if member.initial_attempt_timestamp is None:
                        member.initial_attempt_timestamp = now
            return info
        return None

    def has_active_q(self) -> bool:
        """activeQ itself holds a pod or PodGroup."""
        while self._active and self._active[0].removed:
            heapq.heappop(self._active)
        return bool(self._active)

    def done(self, pod: Pod) -> None:
        """The pod's scheduling attempt ended (bound, or handed back); a group's
        member going to its binding cycle leaves the group."""
        group = self._member_of.pop(pod.metadata.uid, None)
        if group is not None:
            group.members.pop(pod.metadata.uid, None)
            return
        if self._in_flight.pop(pod.metadata.uid, None) is not None:
            self._forget_in_flight_events()

    def group_done(self, group: QueuedPodGroupInfo, rejectors: set[str] | None = None,
                   pending: bool = False) -> None:
        """A group's attempt ended.  ``rejectors`` None: the group succeeded, the
        members left (not attempted, or that failed on their own) go back to
        activeQ; a set: the group failed and waits as one entity, as
        :meth:`add_unschedulable` (an empty set: an error, to backoffQ)."""
        self._in_flight.pop(group.key, None)
        if not group.members:
            self._groups.pop(group.key, None)
            self._forget_in_flight_events()
            return
        group.pod_info = next(iter(group.members.values())).pod_info
        if rejectors is None:
            self._pods[group.key] = group
            self._enqueue_gated_or_active(group, ATTEMPT_FAILURE)
            self._forget_in_flight_events()
            return
        arrived = any(member not in group.attempt for member in group.members.values())
        self.add_unschedulable(group, rejectors, pending)
        if arrived and group.where == UNSCHEDULABLE and not group.gating_plugin:
            group.moved_by = "UnscheduledPodAdd"
            self._move(group, POD_ADD)

    def _forget_in_flight_events(self) -> None:
        """Drop the remembered events no in-flight pod needs any more."""
        events = self._in_flight_events
        if not self._in_flight:
            events.clear()
            return
        oldest = min(info.popped_at for info in self._in_flight.values())
        while events and events[0][0] <= oldest:
            events.popleft()

    def _moved_by_in_flight_events(self, info: QueuedPodInfo) -> bool:
        """True when an event seen since ``info`` was popped may make it schedulable."""
        return any(seq > info.popped_at and self._hint(info, event, old, new)
                   for seq, event, old, new in self._in_flight_events)

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        """``initial * 2^(attempts-1)``, capped at ``max_backoff`` (seconds)."""
        duration = self.initial_backoff
        for _ in range(1, info.attempts):
            duration *= 2
            if duration >= self.max_backoff:
                return self.max_backoff
        return min(duration, self.max_backoff)

    def add_unschedulable(self, info: QueuedPodInfo, rejectors: set[str], pending: bool = False) -> None:
        """Hand back a pod whose attempt failed.

        ``rejectors``: plugins that rejected it (empty for an error: it goes to
        backoffQ); ``pending``: a plugin said Pending (no backoff once an event
        moves it).  A pod deleted meanwhile is dropped.
        """
        self._in_flight.pop(info.uid, None)
        if info.uid in self._pods:
            self._forget_in_flight_events()
            return
        now = self.clock.now()
        info.timestamp = now
        expiry = now + self.backoff_duration(info)
        # SchedulerPopFromBackoffQ: backoff expiries are cut to their ordering window
        info.backoff_expiry = expiry - expiry % BACKOFF_ORDERING_WINDOW if self.pop_from_backoff else expiry
        info.unschedulable_plugins = set() if pending else set(rejectors)
        info.pending_plugins = set(rejectors) if pending else set()
        self._pods[info.uid] = info
        if not rejectors:
            self._to_backoff(info, ATTEMPT_FAILURE)
        elif self._moved_by_in_flight_events(info):
            self._move(info, ATTEMPT_FAILURE)
        else:
            self._to_unschedulable(info, ATTEMPT_FAILURE)
        self._forget_in_flight_events()

    # --- informer side -------------------------------------------------------------------

    def update(self, old: Pod, new: Pod) -> None:
        """A pending pod changed.  Gated pods re-run PreEnqueue; an unschedulable
        pod whose spec, labels or generated claims changed is moved, as upstream
        (a member moves its group)."""
        group = self._member_of.get(new.metadata.uid)
        if group is not None:
            member = group.members[new.metadata.uid]
            member.pod_info = PodInfo(new)
            self.nominator.update(old, member.pod_info)
            if group.where == UNSCHEDULABLE and group.gating_plugin:
                self._enqueue_gated_or_active(group, POD_UPDATE)
            elif group.where == UNSCHEDULABLE and (old.spec != new.spec or old.metadata.labels != new.metadata.labels):
                self._move(group, POD_UPDATE)
            return
        info = self._pods.get(new.metadata.uid)
        if info is None:
            flying = self._in_flight.get(new.metadata.uid)
            if flying is not None:
                flying.pod_info = PodInfo(new)
            return
        info.pod_info = PodInfo(new)
        self.nominator.update(old, info.pod_info)
        if info.where == ACTIVE:
            self._to_active(info)
        elif info.where == UNSCHEDULABLE:
            if info.gating_plugin:
                self._enqueue_gated_or_active(info, POD_UPDATE)
            elif (old.spec != new.spec or old.metadata.labels != new.metadata.labels
                  or old.status.resource_claim_statuses != new.status.resource_claim_statuses):
                self._move(info, POD_UPDATE)

    def delete(self, pod: Pod) -> None:
        """The informer deleted ``pod``: remove it from whichever queue holds it (from its group, the group going
        once empty and not in flight) and end its nomination (upstream ``PriorityQueue.Delete``)."""
        group = self._member_of.pop(pod.metadata.uid, None)
        if group is not None:
            group.members.pop(pod.metadata.uid, None)
            self.nominator.delete(pod)
            if not group.members and group.key not in self._in_flight:
                self._groups.pop(group.key, None)
                self._pods.pop(group.key, None)
                self._detach(group)
            elif group.members:
                group.pod_info = next(iter(group.members.values())).pod_info
            return
        info = self._pods.pop(pod.metadata.uid, None)
        if info is not None:
            self._detach(info)
        self._in_flight.pop(pod.metadata.uid, None)
        self.nominator.delete(pod)

    def activate(self, pod: Pod) -> None:
        """Move a pending pod (or its group) to activeQ now (upstream ``Activate``)."""
        info = self._member_of.get(pod.metadata.uid) or self._pods.get(pod.metadata.uid)
        if info is not None and info.where in (UNSCHEDULABLE, BACKOFF) and not info.gating_plugin:
            info.moved_by = "ForceActivate"
            self._to_active(info, "ForceActivate")

    def _move(self, info: QueuedPodInfo, event: str) -> None:
        if info.gating_plugin:
            self._enqueue_gated_or_active(info, event)
        elif not info.pending_plugins and self._backing_off(info):
            self._to_backoff(info, event)
        else:
            self._to_active(info, event)

    def _hint(self, info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any,
              registered: dict[str, list] | None = None) -> bool:
        """Does ``event`` call for moving ``info``?  Asks the queueing hints of the
        plugins that rejected (or gate) the pod and registered a matching event.
        ``registered`` caches, per profile, the hints whose event matches."""
        gating = info.gating_plugin
        if not gating and not info.unschedulable_plugins and not info.pending_plugins:
            return True
        profile = self._profile_of(info.pod)
        candidates = registered.get(profile) if registered is not None else None
        if candidates is None:
            candidates = [(plugin, r.hint) for plugin, r in self._hints.get(profile, ()) if r.event.matches(event)]
            if registered is not None:
                registered[profile] = candidates
        for plugin, hint in candidates:
            if gating:
                if plugin != gating:
                    continue
            elif plugin not in info.unschedulable_plugins and plugin not in info.pending_plugins:
                continue
            if hint is None:
                return True
            # a group moves when any member's hint says Queue (KEP-4671's optimistic rule)
            pods = [m.pod for m in info.members.values()] if isinstance(info, QueuedPodGroupInfo) else [info.pod]
            for pod in pods:
                try:
                    if hint(pod, old, new) == QueueingHint.QUEUE:
                        return True
                except Exception:  # noqa: BLE001 - upstream: a failing hint means Queue
                    return True
        return False

    def move_all(self, event: ClusterEvent, old: Any = None, new: Any = None,
                 precheck: Callable[[Pod], bool] | None = None) -> int:
        """Upstream ``MoveAllToActiveOrBackoffQueue``: move every pod in the pool
        that ``event`` may help.  Returns how many moved."""
        if self._in_flight:
            self._event_seq += 1
            self._in_flight_events.append((self._event_seq, event, old, new))
        moved = 0
        registered: dict[str, list] = {}
        asked_by: dict[tuple[str, frozenset[str]], set[str] | None] = {}
        for (profile, gating, rejectors, pending), members in list(self._unschedulable_groups.items()):
            infos = list(members.values())
            if gating or rejectors or pending:
                candidates = registered.get(profile)
                if candidates is None:
                    candidates = registered[profile] = [(plugin, r.hint) for plugin, r in self._hints.get(profile, ())
                                                        if r.event.matches(event)]
                holders = frozenset((gating,)) if gating else rejectors | pending
                if not any(plugin in holders for plugin, _ in candidates):
                    continue  # no plugin holding these pods registered for the event
                if self._waiting:
                    if (profile, holders) not in asked_by:
                        asked_by[profile, holders] = self._waiting.asked(profile, holders, event, old, new)
                    asked = asked_by[profile, holders]
                    if asked is not None:
                        infos = [info for uid, info in members.items() if uid in asked] if asked else []
            for info in infos:
                if precheck is not None and not precheck(info.pod):
                    continue
                if self._hint(info, event, old, new, registered):
                    info.moved_by = str(event)
                    self._move(info, info.moved_by)
                    moved += 1
        return moved

    # --- timers --------------------------------------------------------------------------

    def _arm_backoff_timer(self) -> None:
        heads = []
        for heap in (self._backoff, self._error_backoff):
            while heap and heap[0].removed:
                heapq.heappop(heap)
            if heap:
                heads.append(self._backoff_ends(heap[0].key[0]))
        if not heads:
            return
        when = min(heads)
        if self._backoff_timer is not None and not self._backoff_timer.cancelled:
            if self._backoff_timer.when <= when:
                return
            self._backoff_timer.cancel()
        self._backoff_timer = self.clock.call_at(when, self.flush_backoff_completed)

    def flush_backoff_completed(self) -> None:
        """Move pods whose backoff expired from backoffQ to activeQ."""
        now = self.clock.now()
        for heap in (self._backoff, self._error_backoff):
            while heap:
                entry = heap[0]
                if entry.removed:
                    heapq.heappop(heap)
                    continue
                if self._backoff_ends(entry.key[0]) > now:
                    break
                heapq.heappop(heap)
                self._to_active(entry.info, "BackoffComplete")
        self._backoff_timer = None
        self._arm_backoff_timer()

    def _arm_flush_timer(self) -> None:
        if self._flush_timer is None or self._flush_timer.cancelled:
            self._flush_timer = self.clock.call_later(
                UNSCHEDULABLE_FLUSH_PERIOD, self.flush_unschedulable_leftover, background=True
            )

    def flush_unschedulable_leftover(self) -> None:
        """Move pods that stayed in the pool longer than 5 minutes (not gated ones)."""
        self._flush_timer = None
        now = self.clock.now()
        for info in list(self._unschedulable.values()):
            if not info.gating_plugin and now - info.timestamp > MAX_IN_UNSCHEDULABLE_SECONDS:
                info.moved_by = "UnschedulableTimeout"
                self._move(info, "UnschedulableTimeout")
        if any(not i.gating_plugin for i in self._unschedulable.values()):
            self._arm_flush_timer()
