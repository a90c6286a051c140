"""Running one workload: its ops against a MemoryCluster and the scheduler, on the real clock.

:class:`WorkloadExecutor` is scheduler_perf's executor in one thread.  It
resolves the workload's params into the ops of the table
(:mod:`kubesched.perf.ops`), builds the scheduler and the controllers over an
embedded cluster, asks every op what it cannot do (before anything runs) and
then runs them in order.  Whenever an op waits (for pods to be scheduled, for
a ``sleep``, for paced deletions) the executor drives the scheduler itself:
``step()`` schedules one pod (delivering watch events and due timers first),
and between steps the throughput collector samples each time the wall clock
passes a second.  Background activity (``churn``, paced ``deletePods`` with
``skipWaitToCompletion``) runs as timers on the same clock, so it interleaves
with scheduling as upstream's goroutines do.
"""

from __future__ import annotations

import gc
import random
import threading
from pathlib import Path
from typing import Callable

from ..controllers import CONTROLLERS, WORKLOAD_CONTROLLERS
from ..core.api.core_v1 import Namespace
from ..core.api.meta import ObjectMeta
from ..core.clock import Clock, RealClock
from ..core.cluster.client import AlreadyExists, ClusterClient, NotFound
from ..core.cluster.informer import Informers
from ..core.cluster.kube import TokenBucketRateLimiter
from ..core.cluster.memory import MemoryCluster
from ..core.cluster.throttled import ThrottledClient
from ..core.dra.allocator import unpublished_attributes
from ..core.dra.claims import ClaimNameError, pod_claims
from ..core.features import RELEASES, FeatureGateError, FeatureGates
from ..core.framework.config import ConfigError, KubeSchedulerConfiguration
from ..core.framework.registry import Registry
from ..core.scheduler.scheduler import Scheduler
from ..drivers.harness import Harness, scheduler_configuration
from .config import THROUGHPUT_METRIC, Params, TestCase, Workload, resolve_op
from .errors import PerfConfigError, Unsupported, WorkloadFailed
from .histograms import DEFAULT_METRICS, HistogramWindow, metrics_from_config
from .ops import OPS, PerfOp
from .ops.base import Background
from .results import DataItem
from .suites import Suite, suite_for
from .template import TemplateError
from .throughput import ThroughputCollector, summarize
from .tracker import PodTracker, ScheduledCounter

#: How long an op waits for pods before giving up (upstream: 10 minutes), seconds.
WAIT_TIMEOUT = 600.0

#: Longest single sleep while the scheduler is idle, seconds (keeps progress output alive).
IDLE_SLEEP = 0.25

#: How often progress is reported, seconds.
PROGRESS_PERIOD = 0.25

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

#: Controllers upstream's scheduler_perf does not run: its volume workloads
#: create PVs and claims already bound, and no PV controller touches them;
#: no disruption controller computes PodDisruptionBudget status; no
#: podgroup-protection controller (no workload deletes a PodGroup); no
#: kubelet (pods stay Pending once bound) and no workload controllers (its
#: ops create pods themselves).
NOT_IN_SCHEDULER_PERF = ("persistentvolume-binder-controller", "ephemeral-volume-controller", "disruption-controller",
                         "podgroup-protection-controller", *WORKLOAD_CONTROLLERS, "kubelet")


class WorkloadExecutor:
    """Runs ``workload`` of ``case``.

    ``registry`` gives the plugins (default: entry-point discovery);
    ``progress`` is called with a one-line status now and then (seconds
    apart, never in a tight loop); ``seed`` fixes generated names and
    tie-breaking; ``clock`` is the wall clock unless given (a FakeClock makes
    waits, backoffs and paced ops jump instead of sleep: for tests; the
    throughput it measures is then meaningless).  :meth:`check` raises
    :class:`~kubesched.perf.errors.Unsupported` or ``PerfConfigError``;
    :meth:`run` fills ``data_items``, ``samples`` (pods/s), ``measured_pods``
    and ``notes``, and raises :class:`~kubesched.perf.errors.WorkloadFailed`.
    ``features``: the command line's feature gates (default: the newest release's defaults); the
    workload runs with its test case's and its own ``featureGates`` applied over that release's
    defaults, the command line's on top (:attr:`features`).  A workload gate locked to the other value in
    that release (``NodeDeclaredFeatures: false`` in 1.37), which component-base and upstream's runner
    refuse, is honoured: the workload runs as the newest older release where it can be set, said in
    ``notes``; when no release can (``SchedulerQueueingHints: false``, locked since 1.34) :meth:`check`
    raises ``Unsupported`` with upstream's message - never run with the gate left on.

    The methods below :meth:`run` are what ops use (the
    :class:`~kubesched.perf.ops.base.Executor` protocol)."""

    def __init__(self, case: TestCase, workload: Workload, registry: Registry | None = None,
                 progress: Callable[[str], None] | None = None, seed: int = 0, clock: Clock | None = None,
                 features: FeatureGates | None = None):
        self.case = case
        self.workload = workload
        self.registry = registry
        self.progress = progress
        self.seed = seed
        self.name = f"{case.name}/{workload.name}"
        self.params = Params(workload)
        self.ops: list[PerfOp] = []
        self.suite: Suite | None = None
        self.config: KubeSchedulerConfiguration | None = None
        self.data_items: list[DataItem] = []
        self.samples: list[float] = []
        self.measured_pods = 0
        self.notes: list[str] = []
        # runtime state
        self.clock = clock or RealClock()
        self._never = threading.Event()  # an idle wait has nothing to be woken by but time
        given = features if features is not None else FeatureGates()
        self._features_refused: FeatureGateError | None = None
        gates = {**self.feature_gates, **given.overrides}
        release = given.emulated_version
        locked = sorted(name for name, value in self.feature_gates.items()
                        if name not in given.overrides and given.locked_to(name) not in (None, value))
        if locked:  # honoured in the newest release where it can be set, else refused as component-base refuses it
            release = given.settable_release(gates) or release
            if release != given.emulated_version:
                self.notes.append(f"featureGates: {', '.join(f'{n}={str(gates[n]).lower()}' for n in locked)} "
                                  f"is locked in {given.emulated_version}: this workload runs as {release}, the "
                                  "newest release where it can be set")
        try:
            #: the gates this workload runs with (the cluster's and the scheduler's)
            self.features = FeatureGates(release, gates)
        except FeatureGateError as err:
            self._features_refused, self.features = err, given
            if locked:
                self._features_refused = FeatureGateError(
                    f"{err} (in every release kubesched emulates, {RELEASES[0]}-{given.emulated_version})")
        self.cluster = MemoryCluster(self.clock, seed=seed, features=self.features)
        self._harness: Harness | None = None
        self._tracker: PodTracker | None = None
        self.namespaces: dict[str, int] = {}
        self._collector: ThroughputCollector | None = None
        #: the histograms measured beside SchedulingThroughput (the test case's metricsCollectorConfig)
        self._histogram_metrics = DEFAULT_METRICS
        self._histograms: HistogramWindow | None = None
        self._counter: ScheduledCounter | None = None
        self._background: list[Background] = []
        self.rng = random.Random(seed)
        self._generated_names: set[str] = set()
        self._status = ""
        self._last_progress = 0.0

    @property
    def harness(self) -> Harness:
        """The scheduler and controllers over :attr:`cluster`, built by :meth:`check`."""
        if self._harness is None:
            raise RuntimeError(f"{self.name}: check() builds the scheduler; call it first")
        return self._harness

    @property
    def scheduler(self) -> Scheduler:
        return self.harness.scheduler

    @property
    def informers(self) -> Informers:
        """The informers the scheduler and the controllers share (built by :meth:`check`)."""
        return self.harness.informers

    @property
    def tracker(self) -> PodTracker:
        """Pods per namespace and scheduled counts, kept while :meth:`run` runs."""
        if self._tracker is None:
            raise RuntimeError(f"{self.name}: the pod tracker exists only while run() runs")
        return self._tracker

    # --- checking ----------------------------------------------------------------------------

    def check(self) -> None:
        """Resolve params, build the cluster and the scheduler, and find what
        kubesched cannot run; raises ``Unsupported`` (the first reason) or
        ``PerfConfigError`` / ``TemplateError``."""
        if self._features_refused is not None:
            raise Unsupported(f"featureGates: {self._features_refused}")
        unsupported = [op.opcode for op in self.case.ops if not op.supported]
        if unsupported:
            raise Unsupported("unsupported op: " + ", ".join(dict.fromkeys(unsupported)))
        if self.workload.threshold_metric != THROUGHPUT_METRIC:
            raise Unsupported(f"threshold metric {self.workload.threshold_metric} is not collected "
                              f"(kubesched measures {THROUGHPUT_METRIC})")
        self._histogram_metrics = metrics_from_config(self.case.metrics_collector_config, self.case.name)
        self.ops = [OPS[op.opcode](self, op.index, op.opcode, resolve_op(op, self.params)) for op in self.case.ops]
        self.suite = suite_for(self.case.base_dir.name, self.feature_gates, self.params)
        unused = self.params.unused()
        if unused:
            raise PerfConfigError(f"the parameters {unused} are defined on workload {self.workload.name}, but unused")
        self.config = self._load_scheduler_config()
        try:
            self._harness = Harness(self.cluster, self.clock, self.config, self._registry(), seed=self.seed,
                                    features=self.features, scheduler_client=self._scheduler_client(),
                                    controllers=[name for name in CONTROLLERS if name not in NOT_IN_SCHEDULER_PERF])
        except ConfigError as err:
            raise PerfConfigError(f"{self.case.name}: scheduler configuration: {err}") from None
        if self.suite is not None:
            self.suite.scheduler_built(self.scheduler)
        for op in self.ops:
            op.check()

    def _scheduler_client(self) -> ClusterClient | None:
        """The scheduler's client: the cluster behind a token bucket with the workload's (or the test case's)
        ``schedulerApiClientQPS``/``Burst`` (a blocking wait in wall time, as client-go's), None when unset."""
        limits = self.case.api_client_limits(self.workload)
        if limits is None:
            return None
        qps, burst = limits
        self.notes.append(f"the scheduler's API client is limited to {qps:g} requests/s, burst {burst} "
                          "(schedulerApiClientQPS/Burst; events and watches are not counted)")
        return ThrottledClient(self.cluster, TokenBucketRateLimiter(qps, burst))

    def _load_scheduler_config(self) -> KubeSchedulerConfiguration:
        try:
            return scheduler_configuration(self.case.scheduler_config_path)
        except ConfigError as err:
            raise PerfConfigError(f"{self.case.name}: schedulerConfigPath: {err}") from None

    def _registry(self) -> Registry:
        if self.registry is None:
            self.registry = Registry.discover()
        return self.registry

    # --- running -----------------------------------------------------------------------------

    def run(self) -> None:
        """Run every op (call :meth:`check` first).  Raises ``WorkloadFailed``."""
        if self._harness is None:
            self.check()
        self._tracker = PodTracker(self.cluster)
        self.harness.start()
        try:
            for position, op in enumerate(self.ops):
                self._status = f"op {position + 1}/{len(self.ops)} {op.opcode}"
                self._report(force=True)
                try:
                    op.run()
                    if self.suite is not None and op.opcode == "createNodes":
                        self.suite.nodes_created(self.cluster)
                except (PerfConfigError, TemplateError, WorkloadFailed) as err:
                    raise WorkloadFailed(f"op {op.index} ({op.opcode}): {err}") from None
            if self._collector is not None:
                self.notes.append("startCollectingMetrics without stopCollectingMetrics: stopped at the end")
                self.finish_collecting()
        finally:
            for task in self._background:
                task.cancel()
            self.tracker.stop()
            self.harness.controllers.stop()
            self.notes.extend(self.features.notes)

    # --- what ops use --------------------------------------------------------------------------

    @property
    def feature_gates(self) -> dict[str, bool]:
        """The test case's feature gates, overridden by the workload's."""
        return {**self.case.feature_gates, **self.workload.feature_gates}

    @property
    def default_pod_template_path(self) -> Path | None:
        return self.case.default_pod_template_path

    @property
    def collecting(self) -> bool:
        """A throughput collector is running."""
        return self._collector is not None

    def path(self, value: str) -> Path:
        """A template or config path of the test case, resolved against the config file."""
        return self.case.path(value)

    def enabled_everywhere(self, plugin: str) -> bool:
        """True when every profile of the scheduler enables ``plugin``."""
        return all(plugin in framework.plugins for framework in self.scheduler.profiles.values())

    def loop(self, done: Callable[[], bool], what: str, deadline: float | None = None,
             on_step: Callable[[], None] | None = None, until_time: bool = False) -> None:
        """Drive the scheduler until ``done()``.  ``until_time``: ``done`` is a
        time limit, so an idle scheduler just waits.  Otherwise an idle
        scheduler with no timer that could change anything means the wait can
        never end: :class:`WorkloadFailed`.  ``deadline`` (seconds since the
        epoch; default now + :data:`WAIT_TIMEOUT`) bounds the wait."""
        harness = self.harness
        clock = self.clock
        step = harness.step
        now_fn = self.clock.now
        if deadline is None and not until_time:
            deadline = now_fn() + WAIT_TIMEOUT
        timeout = f"timed out after {deadline - now_fn():g}s waiting for {what}" if deadline is not None else ""
        while not done():
            busy = step()
            now = now_fn()
            collector = self._collector
            if collector is not None and now >= collector.next_tick:
                collector.tick(now)
            if now - self._last_progress >= PROGRESS_PERIOD:
                self._report(now=now)
            if on_step is not None:
                on_step()
            if busy:
                if deadline is not None and now > deadline:
                    if until_time:
                        return
                    raise WorkloadFailed(timeout)
                continue
            if done():
                return
            if harness.pending():
                continue
            wake = [IDLE_SLEEP + now]
            if deadline is not None:
                wake.append(deadline)
            if collector is not None:
                wake.append(collector.next_tick)
            next_timer = clock.next_deadline(include_background=True)
            if next_timer is not None:
                wake.append(next_timer)
            if not until_time and clock.next_deadline(include_background=False) is None:
                raise WorkloadFailed(f"stuck waiting for {what}: the scheduler has nothing left to try")
            if deadline is not None and now > deadline:
                if until_time:
                    return
                raise WorkloadFailed(timeout)
            pause = min(wake) - now
            if pause > 0:
                clock.wait(pause, self._never)

    def _report(self, now: float | None = None, force: bool = False) -> None:
        now = self.clock.now() if now is None else now
        self._last_progress = now
        if self.progress is None:
            return
        extra = ""
        if self._collector is not None:
            extra = f", {self._collector.total} measured pods scheduled"
        self.progress(f"{self.name}: {self._status}{extra}")

    def tick(self) -> None:
        """Let the throughput collector sample (during long create loops)."""
        if self._collector is not None:
            self._collector.tick()

    def ensure_namespace(self, name: str, register: bool = True) -> None:
        """Create namespace ``name`` unless it exists; ``register`` records it (0
        pods) for barriers, as upstream's createNamespaceIfNotPresent does."""
        if register and name not in self.namespaces:
            self.namespaces[name] = 0
        try:
            self.cluster.create(Namespace(metadata=ObjectMeta(name=name)))
        except AlreadyExists:
            pass

    def generate_name(self, prefix: str) -> str:
        """``<prefix>`` and five random characters, never handed out before in this workload."""
        while True:
            name = prefix + "".join(self.rng.choice(_NAME_ALPHABET) for _ in range(5))
            if name not in self._generated_names:
                self._generated_names.add(name)
                return name

    def pending_hint(self, namespace: str) -> str:
        """``; at least pod NS/NAME is not scheduled: WHY`` for a failure message."""
        pod = self.tracker.pending_pod(namespace)
        if pod is None:
            return ""
        why = next((f": {c.reason}: {c.message}" for c in pod.status.conditions
                    if c.type == "PodScheduled" and c.message), "")
        return f"; at least pod {pod.key} is not scheduled{why}{self._unmet_constraints(pod)}"

    def _unmet_constraints(self, pod) -> str:
        """`` (ResourceClaim NS/NAME: constraint matchAttribute X: no device publishes that attribute)`` for each
        claim of ``pod`` with a constraint no ResourceSlice can meet (upstream's scheduler says only "cannot
        allocate all claims"); "" when there is none."""
        if not pod.spec.resource_claims:
            return ""

        def lookup(namespace: str, name: str):
            try:
                return self.cluster.get("ResourceClaim", name, namespace)
            except NotFound:
                return None
        try:
            claims = [claim for _, claim in pod_claims(pod, lookup)]
        except ClaimNameError:
            return ""
        slices = self.cluster.list("ResourceSlice").items
        return "".join(f" (ResourceClaim {claim.key}: constraint {constraint}: no device publishes that attribute)"
                       for claim in claims for constraint in unpublished_attributes(claim, slices))

    def start_collecting(self, namespaces: list[str], selector: dict[str, str] | None) -> None:
        """Start measuring SchedulingThroughput of the pods of ``namespaces``
        (matching ``selector``); :class:`WorkloadFailed` while one already runs."""
        if self._collector is not None:
            raise WorkloadFailed("metrics collection is overlapping: a second collector was started "
                                 "before the previous one stopped")
        self._counter = self.tracker.counter(namespaces, selector)
        counter = self._counter
        gc.collect()  # as upstream: clean up after the setup phase before measuring
        self._collector = ThroughputCollector(lambda: counter.value, self.clock.now)
        self._histograms = HistogramWindow(self._histogram_metrics)
        self._collector.start()

    def finish_collecting(self) -> None:
        """Stop the collector and record its DataItem (pods/s); :class:`WorkloadFailed` without one."""
        if self._collector is None:
            raise WorkloadFailed("missing startCollectingMetrics operation before stopping")
        samples = self._collector.stop()
        self.measured_pods += self._collector.total
        if self._counter is not None:
            self.tracker.release(self._counter)
        self._collector = None
        self._counter = None
        self.samples.extend(samples)
        data = summarize(samples)
        if not data:
            self.notes.append("no measured pod got scheduled: no SchedulingThroughput sample")
            return
        self.data_items.append(DataItem(
            data=data, unit="pods/s",
            labels={"Metric": THROUGHPUT_METRIC, "Name": self.name},
        ))
        if self._histograms is not None:  # upstream's metricsCollector: the histograms over the same window
            self.data_items.extend(self._histograms.data_items(self.name))
            self._histograms = None

    def add_background(self, task: Background) -> None:
        """Keep ``task`` running until the workload ends (then it is cancelled)."""
        self._background.append(task)

    def paced(self, name: str, count: int, rate: int, action: Callable[[int], None]) -> Background:
        """Call ``action(0..count-1)``: all at once when ``rate`` (per second) is
        0, else one every ``1/rate`` seconds on the clock (upstream's ticker, so
        the first after one interval).  A :class:`WorkloadFailed` from
        ``action`` ends the chain and is kept in the task's ``error``."""
        task = Background(name)
        if rate <= 0:
            for index in range(count):
                action(index)
            task.finished = True
            return task
        self._background.append(task)
        interval = 1.0 / rate
        start = self.clock.now()
        position = {"n": 0}

        def fire() -> None:
            if task.cancelled:
                return
            if position["n"] >= count:
                task.finished = True
                return
            try:
                action(position["n"])
            except WorkloadFailed as err:
                task.error = err
                task.finished = True
                return
            position["n"] += 1
            task.timer = self.clock.call_at(start + interval * (position["n"] + 1), fire)

        if count == 0:
            task.finished = True
        else:
            task.timer = self.clock.call_at(start + interval, fire)
        return task

    def wait_for(self, task: Background, what: str) -> None:
        """Drive the scheduler until ``task`` finished; re-raise its error."""
        self.loop(lambda: task.finished, what)
        if task.error is not None:
            raise task.error
