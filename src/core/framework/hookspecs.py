"""One pluggy hookspec per kube-scheduler extension point, grouped by the cycle they run in.

A plugin is a class whose methods carry :data:`hookimpl`; it implements the
extension points whose hooks it defines, with exactly these argument names
(pluggy checks them when the plugin is registered, so a typo is an error at
start-up, not at the first pod).  ``None`` means Success wherever a
:class:`~kubesched.core.framework.status.Status` is returned.

The framework resolves each profile's implementations once and calls them
directly in the profile's order (pluggy's own per-call dispatch is too slow for
per-node hooks); so these specs document and validate, they are not called
through ``pm.hook``.

Order of a pod's scheduling cycle: PreEnqueue (when queued) -> QueueSort ->
PreFilter -> Filter (per node) -> PostFilter (no node fits) -> PreScore ->
Score (per node) -> NormalizeScore -> Reserve -> Permit; then the binding
cycle: wait on Permit -> PreBind -> Bind -> PostBind.  Any failure after
Reserve runs Unreserve of every Reserve plugin in reverse order.

A PodGroup's cycle (workload-aware scheduling, KEP-4671/5732) wraps the pod's:
PlacementGenerate (the sets of nodes a whole group may take) -> per
placement, each member through PreFilter..Reserve, PlacementFeasible after
each -> PlacementScore -> NormalizePlacementScore; PodGroupPostFilter once
when the whole group fails (per-pod PostFilter does not run inside it); then
each member's Permit and binding cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pluggy

if TYPE_CHECKING:
    import numpy as np

    from ..api.core_v1 import Pod
    from .cycle_state import CycleState
    from .nodeinfo import NodeInfo, PodInfo
    from .podgroups import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
    from .snapshot import NodeTable
    from .status import Status

PROJECT = "kubesched"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Mark a plugin method as the implementation of an extension point.
hookimpl = pluggy.HookimplMarker(PROJECT)

#: the attribute :func:`normalizes_scores_alone` sets on a NormalizeScore method
SCORES_ALONE = "kubesched_normalizes_scores_alone"


def normalizes_scores_alone(normalize: Callable) -> Callable:
    """Mark a plugin's ``normalize_score`` whose answer depends on the scores it is handed alone (and on what
    its PreScore left in the CycleState), never on the cluster, as upstream's DefaultNormalizeScore: handed the
    same scores again, it answers the same.  A PodGroup's next member re-scoring the one node the member before
    took then keeps its last answer when that node's score did not change (Framework.rescore), except in a cycle
    sampled for plugin metrics, where every call is timed.  Returns ``normalize``."""
    setattr(normalize, SCORES_ALONE, True)
    return normalize


class ExtensionPoints:
    """The hookspecs.  Each docstring says when the hook runs, what it may
    change and what each Status code means there."""

    # --- the queue (upstream PreEnqueuePlugin, QueueSortPlugin, EnqueueExtensions) ---------------

    @hookspec
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """PreEnqueue: called before ``pod`` (core/v1 Pod) enters activeQ.

        Success lets it in; any other status gates it: the pod waits in the
        unschedulable pool until an event this plugin registered for (see
        :meth:`events_to_register`) makes PreEnqueue pass.  Runs in event
        handlers: keep it cheap.  Returns Status or None.
        """

    @hookspec
    def less(self, pod_info_a: Any, pod_info_b: Any) -> bool:
        """QueueSort: True when queued pod A goes before B in activeQ.

        Arguments are :class:`QueuedPodInfo` (``.pod``, ``.timestamp`` in
        seconds).  Exactly one QueueSort plugin, the same for every profile.
        """

    @hookspec
    def events_to_register(self) -> list[Any]:
        """EnqueueExtensions: the cluster events that may make a pod this
        plugin rejected schedulable, as a list of :class:`ClusterEventWithHint`.
        Not implemented: every event may.  Empty list: none."""

    # --- opportunistic batching (SignPlugin, KEP-5598) ------------------------------------------------

    @hookspec
    def sign_pod(self, pod: Pod) -> list[tuple[str, Any]] | Status | None:
        """SignPlugin: what of ``pod`` this plugin's PreFilter, Filter, PreScore and Score read, as
        signature fragments ``(signer name, value)`` (plain tuples, strings, ints; upstream's signer names,
        see ``kubesched.TOLERATIONS_SIGNER`` and the fragment helpers).  Two pods with equal fragments from
        every plugin must get the same feasibility and scores on any node in the same state.  None or []:
        nothing to add.  A non-success Status: the pod is unsignable (its answers depend on more than the pod
        and the node, e.g. on other pods), so it is never batched.  Not a configured point: every PreFilter,
        Filter, PreScore and Score plugin of a profile must implement it, or the profile signs no pod
        (batching off).  Called once per scheduling attempt: keep it cheap.
        """

    # --- a pod's scheduling cycle: filtering (PreFilterPlugin, FilterPlugin, PostFilterPlugin) -------

    @hookspec
    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Any:
        """PreFilter: once per cycle before Filter; ``nodes`` is the snapshot's NodeInfo list.

        May write pre-computed data into ``state`` (CycleState).  Returns a
        Status, or a tuple ``(PreFilterResult | None, Status | None)`` where
        ``PreFilterResult.node_names`` narrows the nodes to filter (results
        of all plugins are intersected).  Skip: this plugin's Filter and
        AddPod/RemovePod are skipped for this pod.  Unschedulable: the pod is
        rejected (remaining PreFilters still run).
        UnschedulableAndUnresolvable: rejected at once.  Error: the cycle fails.
        """

    @hookspec
    def pre_filter_add_pod(self, state: CycleState, pod: Pod, pod_info_to_add: PodInfo,
                           node_info: NodeInfo) -> Status | None:
        """PreFilterExtensions.AddPod: update ``state`` as if ``pod_info_to_add``
        ran on ``node_info`` (nominated pods, preemption dry runs).  Treat
        ``node_info`` as read-only.  Returns Status or None."""

    @hookspec
    def pre_filter_remove_pod(self, state: CycleState, pod: Pod, pod_info_to_remove: PodInfo,
                              node_info: NodeInfo) -> Status | None:
        """PreFilterExtensions.RemovePod: update ``state`` as if
        ``pod_info_to_remove`` left ``node_info``.  Returns Status or None."""

    @hookspec
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Filter: can ``pod`` run on ``node_info``?

        Success/None: yes.  Unschedulable: no, preemption may help.
        UnschedulableAndUnresolvable: no, preemption cannot help on this node.
        Error: aborts the cycle.  The first plugin that rejects a node ends
        that node's Filter.  Must not change ``node_info``.
        """

    @hookspec
    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        """Batch form of Filter over the snapshot's columnar view.

        ``table`` is the snapshot's NodeTable, ``rows`` an int array of the
        rows to judge.  Returns a bool array (True = passes) of ``len(rows)``.
        A plugin offering it must also implement :meth:`filter`, which gives
        the reasons for the rejected nodes and must agree with it.  Returning
        None declines for this pod: :meth:`filter` then runs per node.
        """

    @hookspec
    def filter_batch_status(self, state: CycleState, pod: Pod, table: NodeTable,
                            rows: np.ndarray) -> tuple[np.ndarray, list[Status]] | None:
        """Batch form of Filter's rejections, for a pod that fits nowhere.

        Returns ``(index, statuses)``: ``index`` an int array of ``len(rows)``,
        -1 where the node passes, else the position in ``statuses`` (a list of
        rejection Statuses, typically a handful shared by many nodes) of the
        node's status - exactly what :meth:`filter` would return.  None
        declines (then :meth:`filter` runs per rejected node).
        """

    @hookspec
    def post_filter(self, state: CycleState, pod: Pod, filtered_node_status: Any) -> Any:
        """PostFilter: no node fits; try to make room (preemption).

        ``filtered_node_status`` maps node name -> Status of the failure.
        Returns ``(PostFilterResult | None, Status | None)``: Success with a
        nominated node ends PostFilter; Unschedulable lets the next plugin try;
        UnschedulableAndUnresolvable or Error stops.  The result sets the
        pod's nominated node (``PostFilterResult("")`` clears it); None leaves
        the nomination as it is.  A Status message is appended to the pod's
        FailedScheduling message.
        """

    # --- a pod's scheduling cycle: scoring (PreScorePlugin, ScorePlugin with ScoreExtensions) ----------

    @hookspec
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """PreScore: once per cycle with the feasible NodeInfo list.

        Skip: this plugin's Score is skipped for this pod.  Any other
        non-success status fails the cycle.
        """

    @hookspec
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        """Score: how much ``pod`` likes ``node_info``; an int (or a Status for an error).

        After NormalizeScore every score must be within [0, 100]; it is then
        multiplied by the plugin's weight.
        """

    @hookspec
    def score_batch(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Batch form of Score: an int64 array of scores for the NodeTable
        ``rows``.  Must agree with :meth:`score`."""

    @hookspec
    def score_row(self, state: CycleState, pod: Pod, table: NodeTable, row: int) -> int | None:
        """One-row form of Score: the int :meth:`score_batch` would give the NodeTable ``row``, for a
        PodGroup's next member re-scoring the one node the member before it was placed on (numpy's cost per
        call exceeds a row's arithmetic); None when the plugin cannot tell (then :meth:`score_batch` scores
        it).  Optional, with :meth:`score_batch`; must agree with it."""

    @hookspec
    def normalize_score(self, state: CycleState, pod: Pod, node_names: Any, scores: np.ndarray) -> Status | None:
        """NormalizeScore: rewrite ``scores`` (int64 numpy array, in place),
        one per name in ``node_names``, into [0, 100].  Returns Status or None.
        See :func:`normalizes_scores_alone` for one that reads the scores alone."""

    # --- the end of the scheduling cycle (ReservePlugin, PermitPlugin) ------------------------------

    @hookspec
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Reserve: the pod is assumed on ``node_name``; reserve what the
        plugin tracks.  A failure runs Unreserve of every Reserve plugin."""

    @hookspec
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Unreserve: undo Reserve.  Must be idempotent; may run even when
        Reserve did not."""

    @hookspec
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> Any:
        """Permit: the last gate before binding.  Returns a Status (or None)
        or ``(Status, timeout_seconds)``.  Wait: the binding cycle waits until
        some plugin allows or rejects the waiting pod, or the timeout (at most
        15 minutes) rejects it.  Any rejection unreserves the pod."""

    # --- the binding cycle (PreBindPlugin, BindPlugin, PostBindPlugin) ------------------------------

    @hookspec
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """PreBindPreFlight (upstream, with NominatedNodeNameForExpectation): a cheap
        look at whether this plugin's PreBind will do work for the pod on the node:
        Success (None) if it will, Skip if it has nothing to do, Error if it cannot
        tell.  When one answers Success (or the pod waits on Permit), the binding cycle
        publishes ``status.nominatedNodeName`` before the slow work.  A PreBind plugin
        without this hook counts as one that will act."""

    @hookspec
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Any:
        """PreBind: work that must succeed before binding (volumes, devices).
        Unschedulable: scheduling failure; any other non-success: error."""

    @hookspec
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Bind: bind the pod to the node.  Skip: not this plugin's pod; the
        first other result ends Bind."""

    @hookspec
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """PostBind: informational, after a successful bind."""

    # --- a PodGroup's scheduling cycle (PlacementGeneratePlugin, PlacementFeasiblePlugin,
    # --- PlacementScorePlugin with PlacementScoreExtensions, PodGroupPostFilterPlugin) -------------

    @hookspec
    def placement_generate(self, state: CycleState, group: PodGroupInfo, parent: Placement) -> Any:
        """PlacementGenerate: the placements (sets of nodes) ``group`` may be
        placed in, within ``parent`` (all nodes for a group of its own).
        Returns a list of :class:`Placement`, or ``(placements, Status)``, or
        a Status.  Several plugins' placements are intersected (non-empty
        intersections kept).  Error fails the group's cycle; Unschedulable
        rejects the group."""

    @hookspec
    def placement_feasible(self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress) -> Status | None:
        """PlacementFeasible: after each member tried in a placement (and once
        before the first), may the group still be placed there?  Success: yes,
        enough members are placed; Wait: not yet, go on with the next member;
        Unschedulable: it cannot be any more (the placement is abandoned);
        Error fails the cycle."""

    @hookspec
    def placement_score(self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments) -> int | Status:
        """PlacementScore: how good a feasible placement is for ``group``,
        given where its members went there.  After NormalizePlacementScore
        every score is within [0, 100]; it is then multiplied by the plugin's
        weight and the highest total wins."""

    @hookspec
    def normalize_placement_score(self, state: CycleState, group: PodGroupInfo, scores: np.ndarray) -> Status | None:
        """PlacementScoreExtensions.NormalizePlacementScore: rewrite ``scores``
        (int64 numpy array, one per feasible placement, in place) into [0, 100]."""

    @hookspec
    def pod_group_post_filter(self, state: CycleState, group: PodGroupInfo, schedule_group: Any) -> Any:
        """PodGroupPostFilter: the whole group failed; make room for it
        (workload-aware preemption).  ``schedule_group(removed=())`` runs the
        group's algorithm again (without PodGroupPostFilter) as if the running
        pods ``removed`` were gone, undoes it, and returns ``(Status | None,
        PodGroupAssignments)``: None when the group would fit, and each member
        it placed, where, with its CycleState (for in-place reprieval of
        victims).  Returns ``(nominations | None, Status | None)``
        where nominations map member UIDs to nominated node names.  Success
        ends the chain, and the members wait for their nominations (the
        group's next attempt starts no preemption); Unschedulable lets the
        next plugin try (its reasons join the group's message);
        UnschedulableAndUnresolvable or Error stops."""


#: config key of an extension point -> the hooks a plugin implements for it.
#: The first hook is the one that makes a plugin "implement" the point.
EXTENSION_POINTS: dict[str, tuple[str, ...]] = {
    "preEnqueue": ("pre_enqueue",),
    "queueSort": ("less",),
    "preFilter": ("pre_filter", "pre_filter_add_pod", "pre_filter_remove_pod"),
    "filter": ("filter", "filter_batch", "filter_batch_status"),
    "postFilter": ("post_filter",),
    "preScore": ("pre_score",),
    "score": ("score", "score_batch", "score_row", "normalize_score"),
    "reserve": ("reserve", "unreserve"),
    "permit": ("permit",),
    "preBind": ("pre_bind", "pre_bind_pre_flight"),
    "bind": ("bind",),
    "postBind": ("post_bind",),
    "placementGenerate": ("placement_generate",),
    "placementFeasible": ("placement_feasible",),
    "placementScore": ("placement_score", "normalize_placement_score"),
    "podGroupPostFilter": ("pod_group_post_filter",),
}
