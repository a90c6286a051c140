"""Handle: everything a plugin may reach in the framework, given to its constructor."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable

from kubesched.core.features import FeatureGates
from kubesched.core.observability.events import EventRecorder

if TYPE_CHECKING:
    from kubesched.core.dra.manager import DRAManager

    from ..clock import Clock
    from ..cluster.client import ClusterClient
    from ..cluster.informer import Informers
    from .podgroups import PodGroupManager
    from .snapshot import Snapshot


#: per thread: where :meth:`Handle.on_loop` sends its calls (set on binding workers while they run a binding cycle)
_loop_sink = threading.local()


@contextmanager
def calls_for_the_loop(sink: Callable[[Callable[[], Any]], None]) -> Iterator[None]:
    """Within the block, on this thread, :meth:`Handle.on_loop` hands its
    calls to ``sink`` (which queues them for the scheduling loop) instead of
    making them.  A binding worker runs PreBind and Bind inside it."""
    _loop_sink.target = sink
    try:
        yield
    finally:
        _loop_sink.target = None


class Handle:
    """Upstream's ``framework.Handle``, in Python.

    - ``snapshot``: the current cycle's :class:`Snapshot` (valid from PreFilter to Permit);
    - ``cluster``: the :class:`ClusterClient` (API writes: binding, status);
    - ``informers``: shared informers (``informers.store("PersistentVolumeClaim")``);
    - ``recorder``: the :class:`EventRecorder`;
    - ``clock``: the :class:`Clock` all waiting goes through;
    - ``nominator``: nominated pods per node;
    - ``framework``: the profile's plugin runner (for dry runs);
    - ``waiting_pods``: pods waiting at Permit, by UID (``allow``/``reject``);
    - ``profile_name``: the profile's schedulerName;
    - ``dra``: the scheduler's shared :class:`DRAManager` (claims assumed and in
      flight, classes, slices, taint rules), created on first use;
    - ``rng``: the scheduler's seeded random source (random choices stay reproducible);
    - ``pod_groups``: the scheduler's :class:`PodGroupManager`;
    - ``extenders``: the scheduler's extenders (:class:`~kubesched.core.framework.extender.HTTPExtender`,
      upstream ``Handle.Extenders()``), for preemption's preempt verb; empty without any;
    - ``api_workers``: an executor for API calls off the scheduling loop
      (preemption's evictions), set by a daemon; None in simulations;
    - ``features``: the scheduler's :class:`FeatureGates`
      (``handle.features.enabled("SchedulerPopFromBackoffQ")``);
    - :meth:`on_loop` and :meth:`move_pods`: for PreBind and Bind plugins,
      which a daemon runs on binding workers.
    """

    def __init__(
        self,
        cluster: "ClusterClient",
        informers: "Informers",
        clock: "Clock",
        recorder: "EventRecorder",
        snapshot: Callable[[], "Snapshot"],
        nominator: Any = None,
        waiting_pods: dict | None = None,
        profile_name: str = "",
        activate: Callable[[Any], None] | None = None,
        dra: Callable[[], "DRAManager"] | None = None,
        rng: random.Random | None = None,
        move_pods: Callable[[Any, Any, Any], object] | None = None,
        api_workers: Executor | None = None,
        pod_groups: "PodGroupManager | None" = None,
        features: FeatureGates | None = None,
        extenders: tuple = (),
    ):
        self.cluster = cluster
        #: the scheduler's feature gates (every gate at its default in the newest release when not given)
        self.features = features if features is not None else FeatureGates()
        self.informers = informers
        self.clock = clock
        self.recorder = recorder
        self._snapshot = snapshot
        self.nominator = nominator
        self.waiting_pods = waiting_pods if waiting_pods is not None else {}
        self.profile_name = profile_name
        self.framework: Any = None
        self._activate = activate
        self._dra = dra
        self._move_pods = move_pods
        self.rng = rng if rng is not None else random.Random(0)
        #: workers for API calls that need not hold the scheduling loop (a daemon's; None: on the loop)
        self.api_workers = api_workers
        self._pod_groups = pod_groups
        self.extenders = extenders

    @property
    def snapshot(self) -> "Snapshot":
        return self._snapshot()

    @property
    def pod_groups(self) -> "PodGroupManager":
        """Every PodGroup's pods (all, assumed, assigned, unscheduled) and
        object (upstream ``Handle.PodGroupManager()``)."""
        if self._pod_groups is None:
            raise RuntimeError("this handle has no PodGroup manager")
        return self._pod_groups

    @property
    def dra(self) -> "DRAManager":
        if self._dra is None:
            raise RuntimeError("this handle has no DRA manager")
        return self._dra()

    def on_loop(self, call: Callable[[], Any]) -> None:
        """Make ``call()`` on the scheduling loop: at once when this runs there
        (always in simulations); from a binding worker (a daemon runs PreBind
        and Bind off the loop, as upstream runs each binding cycle in a
        goroutine), queued for the loop, before the binding cycle's outcome.
        For PreBind and Bind plugins that update state the scheduling cycle
        reads (assumed and in-flight claims, assumed volumes): that state
        stays the loop's alone, so it needs no lock."""
        sink = getattr(_loop_sink, "target", None)
        if sink is None:
            call()
        else:
            sink(call)

    def move_pods(self, event: Any, old: Any, new: Any) -> None:
        """Retry the pending pods that ``event`` (a ClusterEvent: ``old`` ->
        ``new``) may help, as the queue does for an informer event (its
        queueing hints decide).  For a change the informers do not carry:
        upstream's queue also hears the claim assume cache, so a claim a
        binding cycle just wrote wakes the pods that share it."""
        if self._move_pods is not None:
            self._move_pods(event, old, new)

    def activate(self, pod: Any) -> None:
        """Move ``pod`` (pending) to activeQ now (upstream's PodActivator)."""
        if self._activate is not None:
            self._activate(pod)


def profile_handle(
    cluster: "ClusterClient",
    informers: "Informers",
    clock: "Clock",
    profile_name: str,
    snapshot: Callable[[], "Snapshot"],
    *,
    dra: Callable[[], "DRAManager"],
    pod_groups: "PodGroupManager",
    rng: random.Random,
    nominator: Any,
    waiting_pods: dict | None = None,
    activate: Callable[[Any], None] | None = None,
    move_pods: Callable[[Any, Any, Any], object] | None = None,
    api_workers: Executor | None = None,
    features: FeatureGates | None = None,
    extenders: tuple = (),
) -> Handle:
    """The :class:`Handle` a scheduler gives the plugins of its profile
    ``profile_name``, as upstream's profile map builds each framework: an
    :class:`EventRecorder` of its own reporting as the profile's
    schedulerName, and the parts every profile shares - the informers, the
    ``snapshot`` getter, ``dra`` (the DRA manager's getter), ``pod_groups``,
    the seeded ``rng``, the ``nominator`` and ``waiting_pods`` - plus the
    scheduler's ``activate``/``move_pods`` queue calls and ``api_workers``
    (None where there is no queue or no workers) and its ``features``.  Used by
    :class:`~kubesched.core.scheduler.scheduler.Scheduler` and by
    ``kubesched.testing.PluginBench``."""
    return Handle(
        cluster=cluster,
        informers=informers,
        clock=clock,
        recorder=EventRecorder(cluster, clock, profile_name),
        snapshot=snapshot,
        nominator=nominator,
        waiting_pods=waiting_pods,
        profile_name=profile_name,
        activate=activate,
        dra=dra,
        rng=rng,
        move_pods=move_pods,
        api_workers=api_workers,
        pod_groups=pod_groups,
        features=features,
        extenders=extenders,
    )
