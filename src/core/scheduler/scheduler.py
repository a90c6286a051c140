"""The scheduler (upstream ``pkg/scheduler``'s ``scheduler.go`` and ``ScheduleOne``).

:class:`Scheduler` builds a framework per profile, the queue and the cache
(its :class:`~.state.SchedulerState`, shared by its parts) and is composed of
parts, one module each as upstream keeps them: the informer handlers
(:mod:`.event_handlers`), the pod's scheduling cycle (:mod:`.scheduling_cycle`),
the PodGroup cycle (:mod:`.podgroup_cycle`) and the CompositePodGroup tree's
(:mod:`.composite_cycle`), the binding cycle (:mod:`.binding_cycle`) and the
failure handler (:mod:`.failure`).  :meth:`Scheduler.schedule_one` pops the
next entity and hands it to its cycle.

The scheduler never waits itself: Permit waits are timers on the clock and a
driver (:mod:`kubesched.drivers.quiescence`, the daemon) calls :meth:`step`.
"""

from __future__ import annotations

import random
from concurrent.futures import Executor
from typing import Any, Callable

import numpy as np

from kubesched.core.dra.manager import DRAManager
from kubesched.core.framework.diagnosis import FitError
from kubesched.core.observability.decision_log import DecisionLog

from ..api.core_v1 import Pod
from ..api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED, PodGroup, pod_group_key
from ..clock import Clock
from ..cluster.client import ClusterClient
from ..cluster.informer import Informers
from ..features import FeatureGates
from ..framework.config import ConfigError, KubeSchedulerConfiguration
from ..framework.cycle_state import CycleState
from ..framework.extender import build_extenders
from ..framework.handle import profile_handle
from ..framework.nodeinfo import NodeInfo
from ..framework.podgroups import PodGroupManager
from ..framework.registry import Registry
from ..framework.runtime import Framework
from ..framework.scoring import ScoreError
from ..framework.snapshot import Snapshot
from ..framework.waiting_pods import WaitingPod
from ..undo import Restore, restoring_all, saved_fields
from .binding_cycle import BindingCycle
from .cache import Cache
from .composite_cycle import CompositePodGroupCycle
from .event_handlers import EventHandlers
from .failure import FailureHandler
from .podgroup_cycle import COMPOSITE, PodGroupCycle
from .queue import Nominator, QueuedPodGroupInfo, QueuedPodInfo, SchedulingQueue
from .recording import record_held
from .resize_cycle import ResizeCycle
from .scheduling_cycle import CycleError, SchedulingCycle
from .state import SchedulerState
from .stats import SchedulingStats


class Scheduler:
    """kube-scheduler over a :class:`ClusterClient`.

    ``config`` is a loaded :class:`KubeSchedulerConfiguration`; ``registry``
    the plugins; ``seed`` fixes tie-breaking between equally scored nodes.
    Options: ``informers`` to share (default: a new set over ``cluster``);
    ``rng``: the random source of tie-breaks and every profile's
    ``handle.rng`` (default: ``random.Random(seed)``; a driver that replays
    another program's random stream passes its own); ``node_rank``: node
    name -> rank, equally scored nodes go to the lowest rank instead of a
    random one (not upstream: simulators that replay a paper's protocol need
    it); ``decisions``: where the record of every scheduling attempt goes;
    ``bind_pool``: workers that run PreBind and Bind (and preemption's
    evictions, as ``handle.api_workers``) off the loop, with
    ``bind_wakeup`` called when one finished (None: on the loop, as
    simulations need for determinism); ``features``: its :class:`FeatureGates`
    (default: every gate at its default in the newest release), which every
    profile's handle carries.  Construction builds every profile's
    framework, so configuration errors surface here as :class:`ConfigError`.
    Call :meth:`start`, then :meth:`step` from one thread.

    Its parts: ``state`` (what they share), ``failures``, ``binding``,
    ``pods`` (the pod's scheduling cycle), ``groups`` (the PodGroup cycle),
    ``trees`` (the CompositePodGroup cycle) and ``handlers``.
    """

    def __init__(
        self,
        cluster: ClusterClient,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        clock: Clock,
        *,
        seed: int = 0,
        informers: Informers | None = None,
        rng: random.Random | None = None,
        node_rank: dict[str, int] | None = None,
        decisions: DecisionLog | None = None,
        bind_pool: Executor | None = None,
        bind_wakeup: Callable[[], object] | None = None,
        features: FeatureGates | None = None,
    ):
        rng = rng if rng is not None else random.Random(seed)
        informers = informers or Informers(cluster)
        cache = Cache(clock)
        #: every PodGroup's pods and object (plugins: ``handle.pod_groups``)
        pod_groups = PodGroupManager(informers, cache.assumed_node)
        self.state = state = SchedulerState(cluster, config, clock, informers, pod_groups, decisions, cache,
                                            features=features if features is not None else FeatureGates(),
                                            extenders=build_extenders(config.extenders))
        nominator = Nominator()
        self._build_profiles(registry, rng, nominator, bind_pool)
        sorts = {(fw.queue_sort_name, repr(fw.profile.args_for(fw.queue_sort_name))) for fw in self.profiles.values()}
        if len(sorts) > 1:
            raise ConfigError("queueSort: all profiles must use the same queue sort plugin with the same args")
        #: pods that name a PodGroup are scheduled as groups when a profile has a PlacementFeasible plugin
        #: (GangScheduling, in the default profile); otherwise one by one, as kube-scheduler without GenericWorkload
        workload_aware = any(fw.placement_feasible_plugins for fw in self.profiles.values())
        state.queue = SchedulingQueue(
            clock=clock,
            # the QueueSort plugin's own less (Framework.less without its frame: ~19 comparisons per pod popped)
            less=next(iter(self.profiles.values())).queue_sort_plugins[0][1],
            pre_enqueue=lambda pod: state.profiles[pod.spec.scheduler_name].run_pre_enqueue(pod),
            hints={name: fw.events_to_register() for name, fw in self.profiles.items()},
            profile_of=lambda pod: pod.spec.scheduler_name,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            nominator=nominator,
            # as one entity only while GenericWorkload is on (an object may switch it on after the start)
            group_of=(lambda pod: self._queued_group(pod) if state.features.enabled("GenericWorkload") else None)
            if workload_aware else lambda pod: None,
            group_priority=self._pod_group_priority,
            group_stranded=self._pod_group_stranded,
            pop_from_backoff=state.features.enabled("SchedulerPopFromBackoffQ"),
        )
        self.failures = FailureHandler(state)
        self.binding = BindingCycle(state, self.failures, bind_pool, bind_wakeup)
        self.pods = SchedulingCycle(state, self.failures, rng, node_rank)
        self.resizes = ResizeCycle(state)
        self.groups = PodGroupCycle(state, self.pods, self.binding, self.failures)
        self.trees = CompositePodGroupCycle(state, self.groups, self.failures)
        self.handlers = EventHandlers(state, workload_aware)
        self.handlers.register()
        state.queue.on_held = self._record_held

    def _record_held(self, info: QueuedPodInfo) -> None:
        """A pod PreEnqueue holds, in the decision record (when one is kept)."""
        decisions = self.state.decisions
        if decisions is not None and info.gating_status is not None and info.gated_since is not None:
            record_held(decisions, info.pod, info.gating_status, info.gated_since, self.state.pod_groups)

    def _build_profiles(self, registry: Registry, rng: random.Random, nominator: Nominator,
                        api_workers: Executor | None) -> None:
        """A framework per configured profile, each with its handle on the scheduler's state."""
        state = self.state
        for profile in state.config.profiles:
            handle = profile_handle(
                state.cluster, state.informers, state.clock, profile.scheduler_name, lambda: state.snapshot,
                dra=state.dra_manager,
                pod_groups=state.pod_groups,
                rng=rng,
                nominator=nominator,
                waiting_pods=state.waiting_pods,
                activate=lambda pod: state.queue.activate(pod),
                move_pods=lambda event, old, new: state.queue.move_all(event, old, new),
                api_workers=api_workers,
                features=state.features,
                extenders=state.extenders,
            )
            state.profiles[profile.scheduler_name] = Framework(profile, registry, handle)

    # --- the shared state, as drivers, reports and tests read it ---------------------------

    @property
    def features(self) -> FeatureGates:
        """Its feature gates (what every profile's handle carries)."""
        return self.state.features

    @property
    def config(self) -> KubeSchedulerConfiguration:
        """The loaded KubeSchedulerConfiguration."""
        return self.state.config

    @property
    def profiles(self) -> dict[str, Framework]:
        """Scheduler name -> its profile's framework."""
        return self.state.profiles

    @property
    def informers(self) -> Informers:
        """The informers the scheduler watches the cluster with."""
        return self.state.informers

    @property
    def queue(self) -> SchedulingQueue:
        """The scheduling queue (activeQ, backoffQ, unschedulable pods, PodGroups as entities)."""
        return self.state.queue

    @property
    def cache(self) -> Cache:
        """The cache: nodes, bound and assumed pods."""
        return self.state.cache

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot as the last cycle left it (:meth:`current_snapshot` brings it up to date)."""
        return self.state.snapshot

    @property
    def stats(self) -> SchedulingStats:
        """Counters of this run (attempts by result, binds)."""
        return self.state.stats

    @property
    def waiting_pods(self) -> dict[str, WaitingPod]:
        """Pod UID -> pod waiting on Permit."""
        return self.state.waiting_pods

    @property
    def decisions(self) -> DecisionLog | None:
        """Where attempt records go (None: not recorded); settable."""
        return self.state.decisions

    @decisions.setter
    def decisions(self, log: DecisionLog | None) -> None:
        self.state.decisions = log

    def _queued_group(self, pod: Pod) -> str | None:
        """The queue entity ``pod`` joins: its PodGroup, or the root of the
        CompositePodGroup tree that group is in (``compositepodgroup/NS/NAME``)."""
        key = pod_group_key(pod)
        group = self.state.pod_groups.pod_group(key) if key is not None else None
        if group is not None and group.spec.parent_composite_pod_group_name:
            root, _ = self.state.pod_groups.root_of(group)
            if root is not None:
                return COMPOSITE + root
        return key

    def _pod_group_priority(self, key: str) -> int | None:
        group = (self.state.pod_groups.composite(key[len(COMPOSITE):]) if key.startswith(COMPOSITE)
                 else self.state.pod_groups.pod_group(key))
        return group.spec.priority if group is not None else None

    def _pod_group_stranded(self, key: str) -> bool:
        """The PodGroup ``key`` was placed once (PodGroupInitiallyScheduled) and
        fewer than its minCount pods run or are assumed now."""
        group = self.state.pod_groups.pod_group(key)
        if group is None or not group.is_gang:
            return False
        condition = group.condition(POD_GROUP_INITIALLY_SCHEDULED)
        return (condition is not None and condition.status == "True"
                and self.state.pod_groups.state(key).scheduled_count() < group.min_count)

    def dra_manager(self) -> DRAManager:
        """The shared :class:`DRAManager`, created (and its kinds watched) on first use."""
        return self.state.dra_manager()

    # --- what drivers, reports and metrics read ------------------------------------------

    def node_infos(self) -> list[NodeInfo]:
        """The scheduler's view of every known node (bound and assumed pods,
        requested resources), by node name; entries without a Node left out."""
        return [info for _, info in sorted(self.cache.nodes.items()) if info.node is not None]

    def node_info(self, name: str) -> NodeInfo | None:
        """The scheduler's view of node ``name`` (None when it does not know the node)."""
        info = self.cache.nodes.get(name)
        return info if info is not None and info.node is not None else None

    def cache_sizes(self) -> dict[str, int]:
        """Upstream's scheduler_cache_size: ``nodes``, ``pods`` (bound) and ``assumed_pods``."""
        assumed = len(self.cache.assumed_pods())
        return {"nodes": self.cache.node_count(), "pods": self.cache.pod_count() - assumed, "assumed_pods": assumed}

    def current_snapshot(self) -> Snapshot:
        """The snapshot brought up to date with the cache, as a scheduling cycle starts with it."""
        self.cache.update_snapshot(self.snapshot)
        return self.snapshot

    def queued(self, pod: Pod) -> QueuedPodInfo | None:
        """The queue's entry for ``pod`` (attempts, gating plugin, unschedulable plugins), or None."""
        return self.queue.get(pod)

    def pending_pods(self) -> list[QueuedPodInfo]:
        """Every pod in the scheduling queue (activeQ, backoffQ, unschedulable pods)."""
        return self.queue.pending_pods()

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue (``active``, ``backoff``, ``unschedulable``, ``gated``): upstream's scheduler_pending_pods."""
        return self.queue.pending_counts()

    def on_activate(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a pod becomes active (a daemon wakes its loop with it)."""
        self.queue.on_activate = callback

    def in_flight(self) -> int:
        """Binding cycles not finished: pods waiting at Permit, at a PreBind wait, or in Bind on a worker."""
        binding = self.binding
        return len(self.waiting_pods) + len(binding.waits) + len(binding.in_flight)

    def pre_bind_waits(self) -> int:
        """Binding cycles parked at a PreBind wait (polling a condition on the clock)."""
        return len(self.binding.waits)

    def abort_in_flight(self, message: str) -> int:
        """Fail every binding cycle that has not finished (Permit waits are
        rejected, PreBind waits aborted): Unreserve, forget the assumed pod,
        requeue it.  Returns how many there were."""
        waiting = list(self.waiting_pods.values())
        for pod in waiting:
            pod.reject("", message)
        return len(waiting) + self.binding.abort_binding_waits(message)

    def score_nodes(self, pod: Pod) -> dict[str, dict[str, int]]:
        """What each Score plugin (weighted, after NormalizeScore) gives every
        feasible node for ``pod`` in the current state, without scheduling it:
        ``{node: {plugin: score}}`` (empty when no node fits).  Raises
        :class:`FilterError`/:class:`ScoreError` as a cycle would."""
        framework = self.profiles[pod.spec.scheduler_name or "default-scheduler"]
        state = CycleState()
        snapshot = self.current_snapshot()
        try:
            rows = self.pods.find_nodes_that_fit(framework, state, QueuedPodInfo(pod, self.state.clock.now()))
        except FitError:
            return {}
        nodes = [snapshot.nodes[row] for row in rows]
        status = framework.run_pre_score(state, pod, nodes, np.asarray(rows))
        if status is not None:
            raise ScoreError(status)
        _, per_plugin = framework.run_score(state, pod, snapshot.table, np.asarray(rows), nodes, per_plugin=True)
        return {info.name: {name: int(scores[i]) for name, scores in per_plugin.items()} for i, info in enumerate(nodes)}

    def savepoint(self) -> Restore:
        """What the scheduler keeps of its history, as it is now: the queue (:meth:`SchedulingQueue.savepoint`),
        the counters, the tie-break random source and the rotating start node, pods waiting on Permit or
        binding, PodGroups' waiting times, the profiles' event recorders, the decision records; the returned
        callable puts it back.  What it derives from the cluster's objects (the cache, the snapshot, the
        PodGroup members, allocated devices) is not saved: ``kubesched.sim``'s rollback delivers the inverse
        of the cluster's changes to the informers, which bring it back.  Cost: what is pending, not the cluster."""
        state = self.state
        restores = [self.queue.savepoint(), self._attempt_savepoint(),
                    saved_fields(state, ("waiting_pods", "attempt_started")), saved_fields(state.pod_groups, ("waiting",)),
                    saved_fields(self.binding, ("waits", "results", "in_flight"))]
        restores += [saved_fields(fw.handle.recorder) for fw in self.profiles.values()]
        if state.dra is not None:
            restores.append(saved_fields(state.dra, ("_in_flight",)))
        return restoring_all(restores)

    def _attempt_savepoint(self) -> Restore:
        """What a scheduling attempt moves besides the cache and the queue: the tie-break random state, the
        rotating start node, the opportunistic batches, the counters, the decision records."""
        decisions, rng, pods = self.state.decisions, self.pods.rng.getstate(), self.pods
        records = len(decisions.records) if decisions is not None else 0
        restores = [saved_fields(self.state.stats), saved_fields(pods, ("next_start_node_index", "batches"))]
        restores += [saved_fields(batch) for batch in pods.batches.values()]
        if decisions is not None:
            restores.append(saved_fields(decisions, ("written",)))

        def restore() -> None:
            restoring_all(restores)()
            pods.rng.setstate(rng)
            if decisions is not None:
                del decisions.records[records:]
        return restore

    def dry_run(self, pod: Pod) -> tuple[str, str, dict[str, Any] | None]:
        """Upstream's scheduling cycle for ``pod`` (not in the cluster: as the API server would store it) on the
        current state, up to the choice of a node - PreFilter, Filter, PostFilter when no node fits, PreScore,
        Score, the tie-break - with nothing assumed, reserved or written; what the attempt moves (the tie-break
        random state, the rotating start node, the opportunistic batch, the counters, the decision records) is
        put back.  A pod popped from the queue now would get this node.  Returns the node ("" when none fits),
        upstream's FitError (or Error) message ("" when a node fits) and the attempt's decision record (None
        when the pod's attempts are not recorded or a node fits).  Raises ValueError for a ``schedulerName``
        no profile has."""
        fwk = self.profiles.get(pod.spec.scheduler_name)
        if fwk is None:
            raise ValueError(f"spec.schedulerName: no profile {pod.spec.scheduler_name!r}")
        restore = self._attempt_savepoint()
        try:
            with self.state.informers.showing("Pod", pod):
                info = QueuedPodInfo(pod, self.state.clock.now())
                info.attempts = 1  # popped once, as the queue counts
                state = self.pods.new_cycle_state(fwk, info)
                try:
                    return self.pods.schedule_pod(fwk, state, info, batch=self.pods.batch_for(fwk)), "", None
                except FitError as fit:
                    message, _ = self.pods.explain_fit_error(fwk, state, info, fit, post_filter=True)
                except CycleError as err:
                    message = err.status.message()
                return "", message, state.record.to_json() if state.record is not None else None
        finally:
            restore()

    def dry_run_group(self, pod_group: PodGroup, pods: list[Pod]) -> dict[str, str] | None:
        """Upstream's PodGroup cycle for a new ``pod_group`` (no CompositePodGroup parent) and its member ``pods``
        (none of them in the cluster: as the API server would store them, in the order created) on the current
        state, as the queue would hand the group over once they all arrived - one attempt, the members in the
        cycle's order - up to the chosen placement: PlacementGenerate, each member through the pod's algorithm
        within each placement with those before it assumed and reserved, PlacementFeasible, PlacementScore; then
        everything assumed and reserved undone and what the attempt moves put back (as :meth:`dry_run`); its
        decision records are not made.
        Returns pod ``namespace/name`` -> node for every member, in the order of ``pods``, when the cycle would
        place them all; None when it would not (the group does not fit, a member is left without a node, or as
        many placements failed as feasible ones are looked for before it found them: the dry run gives up) or
        when the group would not reach that cycle now as one entity with nothing but it deciding (no profile
        schedules groups, GenericWorkload off, a PreEnqueue plugin holding a member, a Permit plugin in the
        profile, members of several profiles, the scheduler's own checks refusing it): the words for those
        are the full cycle's to give (create the objects and schedule them)."""
        fwk = self.profiles.get(pods[0].spec.scheduler_name) if pods else None
        key = pod_group.key
        if (fwk is None or fwk.permit_plugins or not self.features.enabled("GenericWorkload")
                or not any(fw.placement_feasible_plugins for fw in self.profiles.values())
                or pod_group.spec.parent_composite_pod_group_name or key in self.state.pod_groups.keys()
                or any(pod.spec.scheduler_name != fwk.profile_name for pod in pods)):
            return None
        informers, groups = self.state.informers, self.state.pod_groups
        restore = self._attempt_savepoint()
        waiting = groups.waiting.get(key)
        # nothing recorded: the answer is where the members go, and the records would be put back
        decisions, self.state.decisions = self.state.decisions, None
        try:
            with informers.showing("PodGroup", pod_group), informers.showing("Pod", *pods):
                for pod in pods:
                    groups.add_pod(pod)
                if (any(self._queued_group(pod) != key for pod in pods)
                        or any(fwk.run_pre_enqueue(pod) is not None for pod in pods)):
                    return None
                now = self.state.clock.now()
                members: list[QueuedPodInfo] = []
                derived = None
                for pod in pods:
                    # pods that share their spec and status (one manifest's) derive the same requests and ports
                    if derived is not None and not (derived.pod.spec is pod.spec and derived.pod.status is pod.status
                                                    and not derived.with_affinity):
                        derived = None
                    member = QueuedPodInfo(pod, now, derived.with_pod(pod) if derived is not None else None)
                    member.attempts, member.initial_attempt_timestamp = 1, now  # popped once, as the queue counts
                    members.append(member)
                    derived = member.pod_info
                outcome = self.groups.dry_run(fwk, pod_group, members)
                if outcome is None or outcome.status is not None or len(outcome.placed) != len(pods):
                    return None
                placed = {m.info.uid: m.node_name for m in outcome.members}
                return {pod.key: placed[pod.metadata.uid] for pod in pods}
        finally:
            for pod in pods:
                groups.delete_pod(pod)
            if waiting is not None:
                groups.waiting[key] = waiting
            self.state.decisions = decisions
            restore()

    # --- the loop ------------------------------------------------------------------------

    def start(self) -> None:
        """List and watch the cluster (the existing objects arrive on the next step)."""
        self.informers.start()
        self.informers.pump()

    def step(self) -> bool:
        """Finish the binds that came back from binding workers, deliver pending
        events and due timers, then schedule one pod.  Returns False when
        there was nothing to schedule."""
        self.binding.finish_binds()
        self.informers.pump()
        self.state.clock.run_due()
        if self.informers.pending():
            self.informers.pump()
        if not self.queue.has_active():
            return False
        self.schedule_one()
        return True

    # --- the cycles ----------------------------------------------------------------------

    def schedule_one(self) -> None:
        """Upstream ``ScheduleOne``: the next queued entity to its cycle - a
        CompositePodGroup tree, a PodGroup, or one pod through the scheduling
        cycle and, unless Permit makes it wait, the binding cycle."""
        info = self.queue.pop()
        if info is None:
            return
        if isinstance(info, QueuedPodGroupInfo):
            if info.key.startswith(COMPOSITE):
                self.trees.schedule_one_tree(info)
            else:
                self.groups.schedule_one_pod_group(info)
            return
        pod = info.pod
        fwk = self.profiles.get(pod.spec.scheduler_name)
        if fwk is None or pod.metadata.deletion_timestamp is not None or self.cache.is_assumed(pod):
            self.queue.done(pod)
            return
        state = self.pods.new_cycle_state(fwk, info)
        if pod.spec.node_name:  # a bound pod queued for its deferred resize
            self.resizes.resize_cycle(fwk, state, info)
            return
        result = self.pods.scheduling_cycle(fwk, state, info)
        if result is not None:
            self.binding.start_binding(fwk, state, info, result)
