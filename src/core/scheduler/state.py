"""What the parts of the scheduler share, declared once (upstream's ``Scheduler`` struct fields
that more than one of ``schedule_one.go``, ``schedule_one_podgroup.go`` and
``eventhandlers.go`` read).

:class:`SchedulerState` is built by
:class:`~kubesched.core.scheduler.scheduler.Scheduler` and handed to each of its
parts (the cycles, the binding cycle, the failure handler, the event
handlers) in their constructor; what only one part uses is that part's own
field.
"""

from __future__ import annotations

import attrs

from ..clock import Clock
from ..cluster.client import ClusterClient
from ..cluster.informer import Informers
from ..dra.manager import DRAManager
from ..features import FeatureGates
from ..framework.config import KubeSchedulerConfiguration
from ..framework.extender import HTTPExtender
from ..framework.podgroups import PodGroupManager
from ..framework.runtime import Framework
from ..framework.snapshot import Snapshot
from ..framework.waiting_pods import WaitingPod
from ..observability.decision_log import DecisionLog
from .cache import Cache
from .queue import SchedulingQueue
from .stats import SchedulingStats


@attrs.define(eq=False)
class SchedulerState:
    """The scheduler's shared state.

    ``profiles``: scheduler name -> framework; ``queue``: the scheduling
    queue (set once, after the profiles whose hints it needs);
    ``waiting_pods``: pod UID -> pod waiting on Permit (the framework
    handles' view too); ``attempt_started``: pod UID -> ``time.perf_counter()``
    at the start of its current attempt (scheduler_scheduling_attempt_duration_seconds);
    ``decisions``: where attempt records go (None: not recorded); ``dra``:
    the DRA manager once some profile asked for it (:meth:`dra_manager`);
    ``features``: the scheduler's feature gates (every profile's ``handle.features``);
    ``extenders``: the configuration's scheduler extenders, in upstream's
    calling order (:func:`~kubesched.core.framework.extender.build_extenders`).
    """

    cluster: ClusterClient
    config: KubeSchedulerConfiguration
    clock: Clock
    informers: Informers
    pod_groups: PodGroupManager
    decisions: DecisionLog | None
    cache: Cache
    snapshot: Snapshot = attrs.Factory(Snapshot)
    profiles: dict[str, Framework] = attrs.Factory(dict)
    queue: SchedulingQueue = attrs.field(init=False)
    waiting_pods: dict[str, WaitingPod] = attrs.Factory(dict)
    stats: SchedulingStats = attrs.Factory(SchedulingStats)
    attempt_started: dict[str, float] = attrs.Factory(dict)
    dra: DRAManager | None = None
    features: FeatureGates = attrs.Factory(FeatureGates)
    extenders: tuple[HTTPExtender, ...] = ()

    def dra_manager(self) -> DRAManager:
        """The shared :class:`DRAManager`, created (and its kinds watched) on first use."""
        if self.dra is None:
            self.dra = DRAManager(self.informers)
        return self.dra

    def recording(self, key: str) -> bool:
        """Is the attempt of ``key`` (a pod's ``NS/NAME``, ``podgroup/NS/NAME``) recorded?"""
        return self.decisions is not None and self.decisions.wants(key)
