"""Handle: everything a plugin may reach in the framework, given to its constructor."""

from __future__ import annotations

import random
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from kubesched.core.dra.manager import DRAManager
    from kubesched.core.observability.events import EventRecorder

    from ..clock import Clock
    from ..cluster.client import ClusterClient
    from ..cluster.informer import Informers
    from .snapshot import Snapshot


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
    - ``api_workers``: an executor for API calls off the scheduling loop
      (preemption's evictions), set by a daemon; None in simulations.
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
    ):
        self.cluster = cluster
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
        self.rng = rng if rng is not None else random.Random(0)
        #: workers for API calls that need not hold the scheduling loop (a daemon's; None: on the loop)
        self.api_workers: Executor | None = None

    @property
    def snapshot(self) -> "Snapshot":
        return self._snapshot()

    @property
    def dra(self) -> "DRAManager":
        if self._dra is None:
            raise RuntimeError("this handle has no DRA manager")
        return self._dra()

    def activate(self, pod: Any) -> None:
        """Move ``pod`` (pending) to activeQ now (upstream's PodActivator)."""
        if self._activate is not None:
            self._activate(pod)
