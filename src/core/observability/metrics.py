"""kube-scheduler's metrics, with its names, labels and buckets, on prometheus-client.

Mirrors ``pkg/scheduler/metrics``: the metrics are process-wide (registered in
prometheus-client's default registry, as upstream's legacy registry), so a
plugin may import this module and update them, or register its own next to
them.  ``kubesched run`` serves the registry on ``/metrics``.

- ``scheduler_schedule_attempts_total{result,profile}``: scheduling attempts by
  result (``scheduled``, ``unschedulable``, ``error``);
- ``scheduler_scheduling_attempt_duration_seconds{result,profile}``: their
  latency (scheduling algorithm + binding), wall-clock seconds;
- ``scheduler_scheduling_algorithm_duration_seconds``;
- ``scheduler_pod_scheduling_attempts`` and
  ``scheduler_pod_scheduling_sli_duration_seconds{attempts}``: per pod, at its
  binding (the SLI is measured on the scheduler's clock from the first attempt);
- ``scheduler_pending_pods{queue}`` (``active``, ``backoff``,
  ``unschedulable``, ``gated``), ``scheduler_cache_size{type}`` (upstream renamed ``scheduler_scheduler_cache_size``, deprecated in 1.33)
  (``nodes``, ``pods``, ``assumed_pods``) and
  ``scheduler_unschedulable_pods{plugin,profile}``: gauges set by
  :func:`refresh` from the scheduler's loop thread;
- ``scheduler_preemption_attempts_total`` and
  ``scheduler_preemption_victims``: for the preemption plugin to update;
- ``scheduler_permit_wait_duration_seconds{result}``;
- ``leader_election_master_status{name}`` (client-go's): 1 while leading;
- ``scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}``:
  every run of PreFilter, PostFilter, PreScore, Score, Reserve, Unreserve,
  Permit, PreBind, Bind and PostBind (Filter is per node and is not timed, as upstream);
- ``scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}``:
  each plugin's call, in the 10% of scheduling cycles upstream samples
  (:data:`PLUGIN_METRICS_SAMPLE_PERCENT`, ``CycleState.record_plugin_metrics``);
- ``scheduler_plugin_evaluation_total{plugin,extension_point,profile}``: how
  many times a PreFilter, Filter, PreScore and Score plugin judged a pod (Filter
  and Score: per node; a batch Filter counts every node of the chunk it judged);
- ``scheduler_queue_incoming_pods_total{queue,event}``: pods added to activeQ,
  backoffQ and unschedulablePods, by the event that moved them;
- ``scheduler_event_handling_duration_seconds{event}``: informer event handling.

Upstream's ``scheduler_pod_scheduling_duration_seconds`` was deprecated in 1.29
and is gone (``scheduler_pod_scheduling_sli_duration_seconds`` replaces it).
The histograms observed for every pod (the attempt, algorithm, SLI and
attempts-per-pod histograms, extension points, plugins, event handling:
:class:`BufferedHistogram`) and the plugin evaluation counter
(:class:`PluginEvaluations`) keep plain Python numbers and are turned into
prometheus samples when the registry is collected (a ``/metrics`` scrape), so
a scheduling cycle pays an append, not a lock and a walk over the buckets.
"""

from __future__ import annotations

import collections
import itertools
import operator
import threading
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Upstream ``metrics.ExponentialBuckets``: ``start * factor**i`` for ``i < count``."""
    return [start * factor ** i for i in range(count)]


#: how many observations a :class:`_BufferedChild` keeps before counting them into its buckets
_FLUSH_AT = 4096


class _BufferedChild:
    """One labelled series of a :class:`BufferedHistogram`: observations wait in a deque (appends are
    thread-safe) and are counted into buckets with numpy every :data:`BufferedHistogram.FLUSH_AT` of them
    and when collected."""

    __slots__ = ("bounds", "pending", "counts", "total", "lock")

    def __init__(self, bounds: np.ndarray):
        self.bounds = bounds
        self.pending: collections.deque[float] = collections.deque()
        self.counts = np.zeros(len(bounds) + 1, dtype=np.int64)  # the last one: above every bound (+Inf)
        self.total = 0.0
        self.lock = threading.Lock()

    def observe(self, seconds: float) -> None:
        """Add one observation (seconds)."""
        pending = self.pending
        pending.append(seconds)
        if len(pending) >= _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Count the pending observations into the buckets."""
        with self.lock:
            pending = self.pending
            # exactly the observations there now, each taken off once (appends may go on meanwhile)
            taken = list(map(operator.call, itertools.repeat(pending.popleft, len(pending))))
            if taken:
                values = np.asarray(taken)
                # a bucket's upper bound is inclusive (le): searchsorted's left side puts v == bound in it
                self.counts += np.bincount(np.searchsorted(self.bounds, values, side="left"),
                                           minlength=len(self.counts))
                self.total += float(values.sum())


class BufferedHistogram:
    """A prometheus histogram with upstream's ``name``, ``documentation``, ``labelnames`` and ``buckets`` whose
    :meth:`labels` children (without labels: its ``observe``) take observations for the price of an append
    (see :class:`_BufferedChild`); registered in the default registry as a collector.  Exposed as
    prometheus-client's Histogram is, without its ``_created`` series (Go's client, upstream's, has none)."""

    observe: Callable[[float], None]  # without labels: the one series' observe (seconds, or the observed value)

    FLUSH_AT = _FLUSH_AT

    def __init__(self, name: str, documentation: str, labelnames: list[str], buckets: list[float]):
        self.name, self.documentation, self.labelnames = name, documentation, labelnames
        self.bounds = np.asarray(buckets, dtype=float)
        self.children: dict[tuple[str, ...], _BufferedChild] = {}
        if not labelnames:  # the one series, shown from the start (as prometheus-client's Histogram does)
            self.observe = self.labels().observe
        REGISTRY.register(self)

    def labels(self, *values: str) -> _BufferedChild:
        """The series of these label values (created on first use, then the same object)."""
        child = self.children.get(values)
        if child is None:
            child = self.children.setdefault(values, _BufferedChild(self.bounds))
        return child

    def describe(self) -> list[HistogramMetricFamily]:
        return [HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in list(self.children.items()):
            child.flush()
            cumulative = np.cumsum(child.counts).tolist()
            buckets = [(floatToGoString(b), c) for b, c in zip(self.bounds.tolist(), cumulative)]
            buckets.append(("+Inf", cumulative[-1]))
            family.add_metric(list(values), buckets, child.total)
        yield family


SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.",
    ["result", "profile"])
SCHEDULING_ATTEMPT_DURATION = BufferedHistogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
    ["result", "profile"], exponential_buckets(0.001, 2, 15))
SCHEDULING_ALGORITHM_DURATION = BufferedHistogram(
    "scheduler_scheduling_algorithm_duration_seconds", "Scheduling algorithm latency in seconds",
    [], exponential_buckets(0.001, 2, 15))
PREEMPTION_VICTIMS = Histogram(
    "scheduler_preemption_victims", "Number of selected preemption victims",
    buckets=exponential_buckets(1, 2, 7))
PREEMPTION_ATTEMPTS = Counter(
    "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now")
PENDING_PODS = Gauge(
    "scheduler_pending_pods",
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number "
    "of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted "
    "to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to "
    "schedule because they are gated.",
    ["queue"])
POD_SCHEDULING_SLI_DURATION = BufferedHistogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve "
    "multiple scheduling attempts.",
    ["attempts"], exponential_buckets(0.01, 2, 20))
POD_SCHEDULING_ATTEMPTS = BufferedHistogram(
    "scheduler_pod_scheduling_attempts", "Number of attempts to successfully schedule a pod.",
    [], exponential_buckets(1, 2, 5))
PERMIT_WAIT_DURATION = Histogram(
    "scheduler_permit_wait_duration_seconds", "Duration of waiting on permit.",
    ["result"], buckets=exponential_buckets(0.001, 2, 15))
CACHE_SIZE = Gauge(
    "scheduler_cache_size", "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
    ["type"])
UNSCHEDULABLE_PODS = Gauge(
    "scheduler_unschedulable_pods",
    "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins "
    "that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
    ["plugin", "profile"])
LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
    "'name' is the string used to identify the lease.",
    ["name"])

PODGROUP_SCHEDULE_ATTEMPTS = Counter(
    "scheduler_podgroup_schedule_attempts_total",
    "Number of attempts to schedule pod groups, by the result. 'unschedulable' means a pod group could not be "
    "scheduled, while 'error' means an internal scheduler problem.",
    ["result", "profile"])
PODGROUP_SCHEDULING_ATTEMPT_DURATION = Histogram(
    "scheduler_podgroup_scheduling_attempt_duration_seconds",
    "Pod group scheduling attempt latency in seconds (the whole pod group cycle)",
    ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15))
PODGROUP_SCHEDULING_ALGORITHM_DURATION = Histogram(
    "scheduler_podgroup_scheduling_algorithm_duration_seconds", "Pod group scheduling algorithm latency in seconds",
    buckets=exponential_buckets(0.001, 2, 15))
PODGROUP_PREEMPTION_ATTEMPTS = Counter(
    "scheduler_podgroup_preemption_attempts_total",
    "Total preemption attempts by pod groups (PodGroupPostFilter) in the cluster till now, by the result "
    "(Success, Unschedulable, UnschedulableAndUnresolvable, Error).",
    ["result"])
PODGROUP_PREEMPTION_ATTEMPT_DURATION = Histogram(
    "scheduler_podgroup_preemption_attempt_duration_seconds",
    "Pod group preemption (PodGroupPostFilter) latency in seconds, by the result", ["result"],
    buckets=exponential_buckets(0.001, 2, 15))
PODGROUP_PREEMPTION_VICTIMS = Histogram(
    "scheduler_podgroup_preemption_victims", "Number of pods a pod group preemption selected as victims",
    buckets=exponential_buckets(1, 2, 11))

SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"

#: Upstream ``pluginMetricsSamplePercent``: the share of scheduling cycles whose plugins are timed one by one.
PLUGIN_METRICS_SAMPLE_PERCENT = 10


class PluginEvaluations:
    """``scheduler_plugin_evaluation_total``: ``counts[(plugin, extension_point, profile)]`` is a plain
    integer the framework adds to, read when the registry is collected."""

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str, str]] = collections.Counter()
        REGISTRY.register(self)

    def describe(self) -> list[CounterMetricFamily]:
        return [self._family()]

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(
            "scheduler_plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point (available only in "
            "PreFilter, Filter, PreScore, and Score).", labels=["plugin", "extension_point", "profile"])

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = self._family()
        for labels, count in list(self.counts.items()):
            family.add_metric(list(labels), count)
        yield family


FRAMEWORK_EXTENSION_POINT_DURATION = BufferedHistogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "status", "profile"], exponential_buckets(0.0001, 2, 12))
PLUGIN_EXECUTION_DURATION = BufferedHistogram(
    "scheduler_plugin_execution_duration_seconds", "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "status"], exponential_buckets(0.00001, 1.5, 20))
EVENT_HANDLING_DURATION = BufferedHistogram(
    "scheduler_event_handling_duration_seconds", "Event handling latency in seconds.",
    ["event"], exponential_buckets(0.0001, 2, 12))
PLUGIN_EVALUATIONS = PluginEvaluations()
BATCH_ATTEMPTS = Counter(
    "scheduler_batch_attempts_total", "Counts of results when we attempt to use batching.", ["profile", "result"])
BATCH_CACHE_FLUSHED = Counter(
    "scheduler_batch_cache_flushed_total", "Counts of cache flushes by reason.", ["profile", "reason"])
GET_NODE_HINT_DURATION = BufferedHistogram(
    "scheduler_get_node_hint_duration_seconds", "Latency for getting a node hint.", ["hinted", "profile"],
    exponential_buckets(0.00001, 2, 12))
STORE_SCHEDULE_RESULTS_DURATION = BufferedHistogram(
    "scheduler_store_schedule_results_duration_seconds", "Latency for storing scheduling results.", ["profile"],
    exponential_buckets(0.00001, 2, 12))
QUEUE_INCOMING_PODS = Counter(
    "scheduler_queue_incoming_pods_total", "Number of pods added to scheduling queues by event and queue type.",
    ["queue", "event"])

#: the queue label values of scheduler_queue_incoming_pods_total
ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_PODS_Q = "active", "backoff", "unschedulable"


def pod_incoming(queue: str, event: str) -> None:
    """A pod entered ``queue`` (active, backoff, unschedulable) because of ``event`` (upstream's event label:
    PodAdd, ScheduleAttemptFailure, a cluster event's label, UnschedulableTimeout, ...)."""
    child = _incoming_children.get((queue, event))
    if child is None:
        child = _incoming_children[(queue, event)] = QUEUE_INCOMING_PODS.labels(queue, event)
    child.inc()


_incoming_children: dict[tuple[str, str], Any] = {}


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: "1" ... "15", then "16+"."""
    return str(attempts) if attempts < 16 else "16+"


def observe_attempt(result: str, profile: str, seconds: float) -> None:
    """One scheduling attempt ended with ``result`` after ``seconds`` (wall clock)."""
    children = _attempt_children.get((result, profile))
    if children is None:  # every attempt observes these two: their labelled children are looked up once
        children = _attempt_children[(result, profile)] = (
            SCHEDULE_ATTEMPTS.labels(result, profile), SCHEDULING_ATTEMPT_DURATION.labels(result, profile))
    children[0].inc()
    children[1].observe(seconds)


_attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}


def observe_pod_group_attempt(result: str, profile: str, seconds: float) -> None:
    """One PodGroup scheduling attempt ended with ``result`` after ``seconds`` (wall clock)."""
    PODGROUP_SCHEDULE_ATTEMPTS.labels(result, profile).inc()
    PODGROUP_SCHEDULING_ATTEMPT_DURATION.labels(result, profile).observe(seconds)


def observe_bound(attempts: int, sli_seconds: float) -> None:
    """A pod was bound after ``attempts`` attempts, ``sli_seconds`` after its first one."""
    POD_SCHEDULING_ATTEMPTS.observe(attempts)
    POD_SCHEDULING_SLI_DURATION.labels(attempts_label(attempts)).observe(max(0.0, sli_seconds))


def refresh(scheduler: Any) -> None:
    """Set the gauges from ``scheduler`` (a :class:`~kubesched.core.scheduler.scheduler.Scheduler`).
    Call from the thread that runs the scheduler: it reads the queue and cache."""
    for queue, count in scheduler.pending_counts().items():
        PENDING_PODS.labels(queue).set(count)
    for kind, count in scheduler.cache_sizes().items():
        CACHE_SIZE.labels(kind).set(count)
    counts: collections.Counter = collections.Counter()
    for info in scheduler.pending_pods():
        for plugin in info.unschedulable_plugins:
            counts[(plugin, info.pod.spec.scheduler_name)] += 1
    for labels in _unschedulable_labels - set(counts):
        UNSCHEDULABLE_PODS.labels(*labels).set(0)
    for (plugin, profile), count in counts.items():
        UNSCHEDULABLE_PODS.labels(plugin, profile).set(count)
    _unschedulable_labels.update(counts)


#: (plugin, profile) pairs the unschedulable gauge was ever set for (reset to 0 when they clear)
_unschedulable_labels: set[tuple[str, str]] = set()
