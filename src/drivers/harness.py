"""The scheduler and the controllers over one cluster, one clock and one set of informers.

Every way of running kubesched puts the same pieces together and differs
only in the clock, the cluster and when to stop: ``kubesched simulate`` and
the tests (:mod:`kubesched.drivers.simulation`: MemoryCluster, fake clock, run to
quiescence), ``kubesched run`` (:mod:`kubesched.drivers.daemon`: a real or embedded
cluster, the wall clock, leader election, until stopped), scheduler_perf
(:mod:`kubesched.perf`: MemoryCluster, the wall clock, until each op's
condition) and trace replay (:mod:`kubesched.trace`: MemoryCluster, fake
clock, pod by pod).  :class:`Harness` is that wiring, as kube-scheduler and
kube-controller-manager share one informer factory per process.
"""

from __future__ import annotations

import random
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable, Iterable

from kubesched.controllers import build_controller_manager
from kubesched.core.clock import Clock, FakeClock
from kubesched.core.cluster.client import ClusterClient
from kubesched.core.cluster.gated import follow_served
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.controller.base import ControllerContext
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import ConfigError, KubeSchedulerConfiguration, load_config
from kubesched.core.framework.registry import PluginError, Registry
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.core.scheduler.scheduler import Scheduler
from kubesched.drivers.quiescence import run_simulation
from kubesched.plugins import DEFAULT_PLUGINS

#: What may stand for a configuration: a KubeSchedulerConfiguration file, its dict, a loaded one, or None
#: (the default profile).
ConfigSource = str | Path | dict | KubeSchedulerConfiguration | None


def scheduler_configuration(config: ConfigSource) -> KubeSchedulerConfiguration:
    """``config`` loaded and merged over kube-scheduler's default plugins (a
    loaded one as it is).  Raises ``ConfigError`` naming the file and field."""
    if isinstance(config, KubeSchedulerConfiguration):
        return config
    return load_config(config, DEFAULT_PLUGINS)


def check_configuration(config: ConfigSource, registry: Registry | None = None) -> Scheduler:
    """The scheduler ``config`` makes, built on an empty embedded cluster without starting: every profile's plugins
    found and constructed with their args decoded, as a scheduler starting with it would (``registry``: the plugins,
    default entry-point discovery).  Raises ``ConfigError``/``PluginError`` naming the file (when ``config`` is
    one), the profile, the plugin and the field, e.g. ``prefer.yaml: profile 'default-scheduler': pluginConfig
    PreferLabel: args.lable: unknown field``."""
    clock = FakeClock()
    return Harness(MemoryCluster(clock), clock, config, registry, controllers=()).scheduler


#: steps of the scheduler and controllers between two progress reports of a long run
PROGRESS_STEPS = 500


class _Reporting:
    """``loop`` (anything with ``step()``), calling ``report()`` every :data:`PROGRESS_STEPS` steps."""

    def __init__(self, loop: Any, report: Callable[[], None]):
        self.loop, self.report, self.steps = loop, report, 0

    def step(self) -> bool:
        self.steps += 1
        if self.steps % PROGRESS_STEPS == 0:
            self.report()
        return self.loop.step()


class Harness:
    """The :class:`Scheduler` and a controller manager sharing ``informers``.

    ``config``: see :func:`scheduler_configuration`; ``registry``: the
    plugins (default: entry-point discovery); ``controllers``: the controller names to run (None: every one that
    applies; ``()``: none); ``embedded``: the cluster is kubesched's own (the
    embedded-only controllers run); ``controller_options``: per-controller
    settings by name; ``seed``: tie-breaking; ``informers``: the set to share
    (default: a new one over ``cluster``; the daemon's clock wakes on it);
    ``rng``, ``node_rank``, ``decisions``, ``bind_pool``, ``bind_wakeup``:
    the :class:`Scheduler`'s options; ``features``: the scheduler's feature gates (default: the embedded
    cluster's, so that its API server and the scheduler agree; for another cluster every gate at its default
    in the newest release); ``scheduler_client``: what the scheduler sends its requests through (default:
    ``cluster``; scheduler_perf's rate-limited client), its informers reading ``cluster``.  Raises ``ConfigError`` for a bad
    scheduler configuration, ``PluginError`` for broken plugins and
    ``KeyError`` for an unknown controller.
    Call :meth:`start` once, then :meth:`step` (or :meth:`run_to_quiescence`
    on a fake clock) from one thread.
    """

    def __init__(self, cluster: ClusterClient, clock: Clock, config: ConfigSource = None,
                 registry: Registry | None = None, *, seed: int = 0, embedded: bool = True,
                 controllers: Iterable[str] | None = None, controller_options: dict[str, Any] | None = None,
                 informers: Informers | None = None, rng: random.Random | None = None,
                 node_rank: dict[str, int] | None = None, decisions: DecisionLog | None = None,
                 bind_pool: Executor | None = None, bind_wakeup: Callable[[], object] | None = None,
                 features: FeatureGates | None = None, scheduler_client: ClusterClient | None = None):
        self.cluster = cluster
        self.features: FeatureGates = features or getattr(cluster, "features", None) or FeatureGates()
        self.clock = clock
        self.config = scheduler_configuration(config)
        self.registry = registry or Registry.discover()
        self.informers = informers or Informers(cluster)
        # before the scheduler's handlers: an object served with a gate on switches it on for the scheduler
        for kind in ("PodGroup", "CompositePodGroup", "Pod"):  # what the scheduler watches anyway
            self.informers.add_handlers(kind, self._served, lambda old, new: self._served(new), None)
        try:
            self.scheduler = Scheduler(scheduler_client or cluster, self.config, self.registry, clock, seed=seed,
                                       informers=self.informers, rng=rng, node_rank=node_rank, decisions=decisions,
                                       bind_pool=bind_pool, bind_wakeup=bind_wakeup, features=self.features)
        except (PluginError, ConfigError) as err:
            if isinstance(config, (str, Path)):  # the file the profiles' plugins and their args came from
                raise type(err)(f"{config}: {err}") from None
            raise
        self.controllers = build_controller_manager(
            ControllerContext(cluster, self.informers, clock, embedded=embedded, options=controller_options or {},
                              features=self.features),
            None if controllers is None else list(controllers))
        self._started = False

    def _served(self, obj: Any) -> None:
        follow_served(obj, self.features)

    def start(self) -> None:
        """List and watch the cluster once (the objects arrive as adds)."""
        if not self._started:
            self.informers.start()
            self.informers.pump()
            self._started = True

    def step(self) -> bool:
        """One round: deliver events, run the controllers' ready work, schedule
        one pod.  False when there was nothing to do."""
        return self.controllers.step() | self.scheduler.step()

    def pending(self) -> bool:
        """Watch events are waiting to be delivered."""
        return self.informers.pending()

    def progress(self) -> int:
        """Grows with useful work: pods bound and successful controller syncs."""
        return self.scheduler.stats.bound + self.controllers.synced

    def run_to_quiescence(self, until: float | None = None, progress: Callable[[], int] | None = None,
                          expecting: Callable[[], bool] = lambda: False,
                          report: Callable[[], None] | None = None) -> None:
        """On a fake clock: step until idle, jump to the next timer, and again,
        until nothing more can happen or simulated time ``until`` (see
        :func:`~kubesched.drivers.quiescence.run_simulation`); ``report()`` is
        called every :data:`PROGRESS_STEPS` steps (a long run shows progress)."""
        if not isinstance(self.clock, FakeClock):
            raise TypeError("run_to_quiescence needs a FakeClock")
        self.start()
        loop: Any = self if report is None else _Reporting(self, report)
        run_simulation([loop], self.clock, until, progress=progress or self.progress,
                       waiting=lambda: self.scheduler.pre_bind_waits() > 0, expecting=expecting,
                       bound=lambda: self.scheduler.stats.bound)
