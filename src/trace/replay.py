"""Replaying a converted trace: pods arrive one at a time and each is tried once.

This is the FGD paper's protocol (its simulator's ``SchedulePods``): the
cluster starts empty, the pods of ``pods.json`` are created in order, the
scheduler makes exactly one attempt for each, and a pod that finds no node is
deleted (with its ResourceClaim) rather than retried.  No pod ever leaves.
After every pod the replay records how much GPU demand has arrived, how much
GPU compute is allocated, and how much idle GPU compute is fragmented for the
trace's typical pods (:mod:`.fragmentation`).

The scheduler is driven directly (no controllers; claims are created with
their pods): one scheduling cycle per pod, clock moved only when a pod waits
at Permit or PreBind.

Ties between equally scored nodes: the paper's simulator prefixes every
node's name with its position in a random permutation of the nodes (drawn
from the seed) and its kube-scheduler picks the smallest name among the best
nodes, where upstream picks one at random.  That concentrates pods on the
same nodes whenever a policy cannot tell them apart, which matters a lot
(FGD, for one, scores most nodes alike for CPU-only pods).  ``tie_break``
"ranked" (the default) does the same with a seeded permutation; "random" is
upstream's behaviour.

The permutation comes from the trace's generator (its ConfigMap's ``rng``,
:mod:`.openb`): Python's, seeded with the trace's seed, or - for "go" - Go's
math/rand where the conversion left it, as the simulator draws it: first the
10 ``rand.Float64()`` that client-go's Reflectors take for their watch
timeouts when the simulator's informers start, then ``rand.Perm`` over the
nodes sorted by name (:func:`go_node_ranks`).  With "go", the scheduler's own
draws (ties under "random", a plugin's ``handle.rng``, such as the Random
policy's) continue on that Go source.

With ``durations`` the pods also leave: they arrive ``interval`` seconds
apart (simulated time, the same order), the simulated kubelet (the
``kubelet`` controller, the path ``kubesched simulate`` uses) starts each
bound pod and ends it when its ``kubesched.io/run-duration`` (the trace's
``deletion_time - scheduled_time``) is over, and the ResourceClaim
controller releases its GPUs, which later arrivals can take; the curves
then show allocation under churn.  Without it (the default) no controller
runs and no pod leaves: the published runs' protocol, numbers unchanged.

Curves are reported like the paper's analysis scripts: for each whole
percent of arrived GPU demand (relative to the cluster's GPUs), the mean of
the values recorded at arrivals that round to it (or, when none does, to it
plus or minus one); each allocation value is rounded to 0.01 % before the
mean and the mean is rounded as numpy rounds (``rint(x * 100) / 100``), as
those scripts (pandas) do.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from attrs import asdict, define, field

from kubesched.core.api.manifests import (
    InvalidManifest,
    load_objects,
    parse_document,
    read_documents,
)
from kubesched.drivers.batch_gc import batch_collection
from kubesched.drivers.harness import Harness
from kubesched.drivers.simulation import DEFAULT_START

from ..core.api.core_v1 import ConfigMap, Node, Pod
from ..core.api.resource_v1 import ResourceClaim
from ..core.clock import FakeClock
from ..core.cluster.memory import MemoryCluster
from ..core.framework.config import KubeSchedulerConfiguration
from ..core.framework.registry import Registry
from ..core.gpu.fragmentation import TRACE_CONFIGMAP, Workload, node_fragmentation, parse_typical_pods
from ..core.gpu.gpus import COMPUTE, DRIVER, MILLI, NodeGpus
from ..core.scheduler.scheduler import Scheduler
from .gorand import GoRand
from .openb import RNGS

#: Per-node GPU utilisation is sampled every this many percent of arrived demand.
HEATMAP_STEP = 5
#: How ties between equally scored nodes are broken (module docstring).
TIE_BREAKS = ("ranked", "random")
#: Go values the simulator's informers take between the conversion's draws and the node ranking
#: (one ``rand.Float64()`` per client-go Reflector, for its watch timeout).
INFORMER_DRAWS = 10
#: The controllers a replay with ``durations`` runs: the simulated kubelet ends pods, the claim controller
#: releases their GPUs.
DURATION_CONTROLLERS = ("kubelet", "resourceclaim-controller")


@define
class ReplayResult:
    """What one replay measured.

    ``rng``: the generator of the arrival order and node ranking ("python" or
    "go"); ``curve``: ``[arrived %, allocated %]`` per whole percent of arrived GPU
    demand; ``fragmentation``: ``[arrived %, fragmented idle GPU compute as % of
    all GPU compute]``; ``gpu_allocation_ratio``: allocated GPU compute at the
    end, % of all; ``heatmap``: per node (``nodes``, ``models``) its GPU
    utilisation in % at each arrival in ``heatmap_arrived``; ``interval``:
    seconds between arrivals when pods ran their durations (None: the
    paper's protocol, no pod leaves), ``finished``: pods that ended.
    """

    trace: str
    config: str
    seed: int
    arrival: float
    pods: int
    bound: int
    failed: int
    gpus: int
    gpu_allocation_ratio: float
    curve: list[list[float]]
    fragmentation: list[list[float]]
    wall_seconds: float
    nodes: list[str] = field(factory=list)
    models: list[str] = field(factory=list)
    heatmap_arrived: list[int] = field(factory=list)
    heatmap: list[list[int]] = field(factory=list)
    rng: str = "python"
    interval: float | None = None
    finished: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``kubesched trace replay -o json`` prints."""
        data = asdict(self)
        if self.interval is None:  # the paper's protocol: the published runs' keys only
            del data["interval"], data["finished"]
        first = ("seed", "rng", "arrival", "gpu_allocation_ratio", "curve", "wall_seconds")
        return {**{key: data[key] for key in first}, **{k: v for k, v in data.items() if k not in first}}

    def at(self, arrived: int) -> float | None:
        """The allocation curve's value at ``arrived`` percent (None if not reached)."""
        return next((value for point, value in self.curve if point == arrived), None)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayResult:
        """A result read back from :meth:`to_json` (unknown keys are ignored)."""
        names = {a.name for a in cls.__attrs_attrs__}
        return cls(**{k: v for k, v in data.items() if k in names})


class TraceInfo:
    """The ConfigMap a converted trace carries (:data:`~kubesched.core.gpu.fragmentation.TRACE_CONFIGMAP`)."""

    def __init__(self, configmap: ConfigMap, where: str):
        data = configmap.data
        try:
            self.seed = int(data.get("seed", "0"))
            self.arrival = float(data.get("arrival", "0"))
        except ValueError as err:
            raise InvalidManifest(where, f"ConfigMap/{TRACE_CONFIGMAP}", "data", str(err)) from None
        self.driver = data.get("driver", DRIVER)
        self.rng = data.get("rng", "python")
        if self.rng not in RNGS:
            raise InvalidManifest(where, f"ConfigMap/{TRACE_CONFIGMAP}", "data.rng",
                                  f"{self.rng!r} is not one of {', '.join(RNGS)}")
        try:
            self.rng_draws = int(data.get("rng-draws", "0"))
        except ValueError as err:
            raise InvalidManifest(where, f"ConfigMap/{TRACE_CONFIGMAP}", "data.rng-draws", str(err)) from None
        try:
            self.typical = parse_typical_pods(data.get("typical-pods.yaml", "[]"))
        except ValueError as err:
            raise InvalidManifest(where, f"ConfigMap/{TRACE_CONFIGMAP}", "data.typical-pods.yaml", str(err)) from None


#: file -> ((size, mtime), its parsed objects): the latest trace's, for the next replay of it (a sweep
#: worker replays one trace with every policy); the objects are immutable, so replays can share them
_PARSED: dict[Path, tuple[tuple[int, int], list]] = {}


def _parsed(path: Path, parse: Callable[[], list]) -> list:
    """``parse()``, or what it gave for ``path`` last time if the file did not change since."""
    status = path.stat()
    stamp = (status.st_size, status.st_mtime_ns)
    key = path.resolve()
    kept = _PARSED.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    objects = parse()
    if len(_PARSED) >= 2:  # a trace's cluster file and pods file
        _PARSED.clear()
    _PARSED[key] = (stamp, objects)
    return objects


def load_trace(trace_dir: str | Path) -> tuple[list, TraceInfo, Path]:
    """The cluster objects of a converted trace, its description and its pods file.
    Raises :class:`InvalidManifest` for a directory that is not a converted trace."""
    trace_dir = Path(trace_dir)
    cluster_file, pods_file = trace_dir / "cluster.json", trace_dir / "pods.json"
    for needed in (cluster_file, pods_file):
        if not needed.is_file():
            raise InvalidManifest(str(needed), "", "", "not found (convert a trace first: kubesched trace alibaba-openb)")
    objects = _parsed(cluster_file, lambda: load_objects([cluster_file]))
    configmap = next((o for o in objects if isinstance(o, ConfigMap) and o.metadata.name == TRACE_CONFIGMAP), None)
    if configmap is None:
        raise InvalidManifest(str(cluster_file), f"ConfigMap/{TRACE_CONFIGMAP}", "", "not found")
    return objects, TraceInfo(configmap, str(cluster_file)), pods_file


def claim_demand(claim: ResourceClaim, driver: str) -> int:
    """Milli-GPUs a claim asks of ``driver``'s device class: count x its
    ``compute`` request (a whole GPU without one)."""
    total = 0
    for request in claim.spec.devices.requests:
        exactly = request.exactly
        if exactly is None or exactly.device_class_name != driver:
            continue
        per_device = MILLI
        if exactly.capacity is not None and COMPUTE in exactly.capacity.requests:
            per_device = int(exactly.capacity.requests[COMPUTE] * MILLI)
        total += exactly.count * per_device
    return total


def _discrete(arrived: np.ndarray, values: np.ndarray, up_to: int) -> list[list[float]]:
    """The paper's per-percent means (module docstring); ``arrived`` in % (float)."""
    rounded = np.array([round(float(a)) for a in arrived])
    out = []
    for percent in range(0, up_to + 1):
        chosen = values[rounded == percent]
        if not len(chosen):
            chosen = values[(rounded >= percent - 1) & (rounded <= percent + 1)]
            if not len(chosen):
                continue
        # numpy's rounding (half to even on the value x 100), as the scripts' pandas means round
        out.append([percent, float(np.round(chosen.mean(), 2))])
    return out


def replay(
    trace_dir: str | Path,
    config: str | Path | dict | KubeSchedulerConfiguration | None = None,
    registry: Registry | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    tie_break: str = "ranked",
    durations: bool = False,
    interval: float = 60.0,
) -> ReplayResult:
    """Replay the converted trace in ``trace_dir`` with the scheduler
    configuration ``config`` (default profile when None), at most ``limit``
    pods, breaking ties between nodes as ``tie_break`` says ("ranked" or
    "random", module docstring).  ``durations``: pods arrive ``interval``
    seconds apart and end after their run duration (module docstring).
    ``progress(done, total)`` is called every 100 pods.  Raises
    :class:`InvalidManifest` for a bad trace, ``ConfigError`` for a bad
    configuration and ValueError for an unknown ``tie_break`` or an
    ``interval`` that is not positive."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break: {tie_break!r} is not one of {', '.join(TIE_BREAKS)}")
    if durations and not interval > 0:
        raise ValueError(f"interval: {interval!r} seconds: must be positive")
    with batch_collection():
        return _replay(trace_dir, config, registry, limit, progress, tie_break, interval if durations else None)


def _replay(trace_dir: str | Path, config: str | Path | dict | KubeSchedulerConfiguration | None,
            registry: Registry | None, limit: int | None, progress: Callable[[int, int], None] | None,
            tie_break: str, interval: float | None) -> ReplayResult:
    started = time.perf_counter()
    objects, info, pods_file = load_trace(trace_dir)
    harness, clock = _started_harness(objects, info, config, registry, tie_break, interval is not None)
    gpus = _GpuState(harness.scheduler, info, str(trace_dir))
    arrivals = _parsed(pods_file, lambda: [parse_document(doc, str(pods_file)) for doc in read_documents(pods_file)])
    total_pods = sum(1 for obj in arrivals if isinstance(obj, Pod))
    if limit is not None:
        total_pods = min(total_pods, limit)
    departures = None if interval is None else _Departures(harness, clock, gpus, interval)
    series = _place_arrivals(harness, clock, gpus, arrivals, total_pods, info.driver, progress, departures)
    _settle(harness, clock)
    result = _result(str(trace_dir), config, info, gpus, series, time.perf_counter() - started)
    if departures is not None:
        result.interval, result.finished = interval, departures.finished
    return result


def _started_harness(objects: list, info: TraceInfo, config: str | Path | dict | KubeSchedulerConfiguration | None,
                     registry: Registry | None, tie_break: str,
                     durations: bool = False) -> tuple[Harness, FakeClock]:
    """The trace's cluster with its nodes and classes on a fake clock, the scheduler started and settled, ties
    between nodes broken as the trace's simulator did (module docstring)."""
    node_names = [o.metadata.name for o in objects if isinstance(o, Node)]
    generator: GoRand | None = None
    if info.rng == "go":
        generator = GoRand(info.seed)
        generator.advance(info.rng_draws)
        for _ in range(INFORMER_DRAWS):
            generator.float64()
        ranks = go_node_ranks(node_names, generator)
    else:
        ranks = node_ranks(node_names, info.seed)
    clock = FakeClock(DEFAULT_START)
    cluster = MemoryCluster(clock, seed=info.seed)
    # the paper's protocol: pods are placed once each, nothing else acts on the cluster (no controllers);
    # with durations the kubelet ends them and the claim controller frees their GPUs
    harness = Harness(cluster, clock, config, registry, seed=info.seed,
                      controllers=DURATION_CONTROLLERS if durations else (), rng=generator,
                      node_rank=ranks if tie_break == "ranked" else None)
    for obj in objects:
        cluster.create(obj)
    harness.start()
    _settle(harness, clock)
    return harness, clock


class _GpuState:
    """The cluster's GPUs as the replay measures them: compute left per GPU (:class:`NodeGpus`, in
    milli-GPU), milli-CPU left and the FGD fragmentation per node, and the totals the curves plot
    (``used``: milli-GPUs allocated; ``fragmented``: % of all GPU compute).  Raises
    :class:`InvalidManifest` naming ``trace`` when no node has GPUs of the trace's driver."""

    def __init__(self, scheduler: Scheduler, info: TraceInfo, trace: str):
        self.scheduler = scheduler
        self.table = scheduler.current_snapshot().table
        self.gpus = NodeGpus(scheduler.dra_manager(), driver=info.driver)
        self.gpus.sync(self.table)
        self.capacity = int(self.gpus.capacity.sum())
        if not self.capacity:
            raise InvalidManifest(trace, "", "", f"no node has GPUs of driver {info.driver}")
        self.gpu_count = self.capacity / MILLI  # GPUs (a converted trace's GPU has a compute capacity of 1)
        self.workload = Workload(info.typical, self.gpus.models)
        self.models = self.gpus.model_codes(self.workload.model_code)
        self.names = [node.name for node in self.table.infos]
        self.row_of = {name: row for row, name in enumerate(self.names)}
        self.cpu_left = np.array([_cpu_left(scheduler, name) for name in self.names], dtype=np.int64)
        self.frag = node_fragmentation(self.workload, self.gpus.left, self.cpu_left, self.models)
        # GPU compute in use and fragmented, % of all: they change only when a pod is placed
        self.used = self.capacity - int(self.gpus.left.sum())
        self.fragmented = 100 * float(self.frag.sum()) / self.capacity

    def placed_on(self, node_name: str) -> None:
        """A pod was bound to (or ended on) ``node_name``: its row and the totals follow."""
        row = self.row_of[node_name]
        self.gpus.sync(self.table)
        self.cpu_left[row] = _cpu_left(self.scheduler, node_name)
        self.frag[row] = self.workload.fragmentation(self.gpus.left[row:row + 1], self.cpu_left[row:row + 1],
                                                     self.models[row:row + 1])[0]
        self.used = self.capacity - int(self.gpus.left.sum())
        self.fragmented = 100 * float(self.frag.sum()) / self.capacity

    def utilisation(self) -> list[int]:
        """Per node, % of its GPU compute allocated (rounded down)."""
        gpus = self.gpus
        return [int(u) for u in (gpus.capacity - gpus.left).sum(axis=1) * 100 // np.maximum(gpus.capacity.sum(axis=1), 1)]


@define
class _Series:
    """What the replay records as pods arrive: ``records`` (arrived %, allocated %, fragmented %) per
    pod, a ``heatmap`` of per-node utilisation every :data:`HEATMAP_STEP` % of arrivals, counts."""

    arrived_milli: int = 0
    done: int = 0
    bound: int = 0
    records: list[tuple[float, float, float]] = field(factory=list)
    heatmap: list[list[int]] = field(factory=list)
    heatmap_arrived: list[int] = field(factory=list)
    next_sample: int = 0

    def record(self, gpus: _GpuState) -> None:
        """One pod handled: its point of the curves, and heatmap rows for the arrival steps passed."""
        # computed as the paper's analysis scripts do: percent = milli-GPUs / GPUs / 10, allocation rounded to 0.01
        self.records.append((self.arrived_milli / gpus.gpu_count / 10, round(gpus.used / gpus.gpu_count / 10, 2),
                             gpus.fragmented))
        while 100 * self.arrived_milli / gpus.capacity >= self.next_sample:
            self.heatmap.append(gpus.utilisation())
            self.heatmap_arrived.append(self.next_sample)
            self.next_sample += HEATMAP_STEP


class _Departures:
    """A replay with durations: ``interval`` seconds pass before each arrival, and the nodes whose pods ended
    meanwhile (the kubelet made them Succeeded) are measured again."""

    def __init__(self, harness: Harness, clock: FakeClock, gpus: _GpuState, interval: float):
        self.harness, self.clock, self.gpus, self.interval = harness, clock, gpus, interval
        self.finished = 0
        self._ended: set[str] = set()
        harness.informers.add_handlers("Pod", None, self._updated, None)

    def _updated(self, old: Pod, new: Pod) -> None:
        if new.status.phase == "Succeeded" and old.status.phase != "Succeeded" and new.spec.node_name:
            self.finished += 1
            self._ended.add(new.spec.node_name)

    def next_arrival(self) -> None:
        """Run until the next arrival is due: pods end, their claims are released, their nodes measured again."""
        due = self.clock.now() + self.interval
        self.harness.run_to_quiescence(due)
        self.clock.advance_to(max(due, self.clock.now()))
        ended, self._ended = self._ended, set()
        for node_name in sorted(ended):
            self.gpus.placed_on(node_name)


def _place_arrivals(harness: Harness, clock: FakeClock, gpus: _GpuState, arrivals: list, total_pods: int, driver: str,
                    progress: Callable[[int, int], None] | None, departures: _Departures | None = None) -> _Series:
    """Create the trace's objects in order, each pod once: it is bound or, when no node takes it, deleted
    with its claims (the paper's protocol); at most ``total_pods`` pods; with ``departures``, time passes
    before each pod."""
    cluster, scheduler = harness.cluster, harness.scheduler
    series = _Series()
    claims: dict[str, ResourceClaim] = {}
    for obj in arrivals:
        if series.done >= total_pods:
            break
        if departures is not None and isinstance(obj, Pod) and series.done:
            departures.next_arrival()
        if isinstance(obj, ResourceClaim):
            claims[obj.key] = cluster.create(obj)
            continue
        if not isinstance(obj, Pod):
            cluster.create(obj)
            continue
        mine = [claims.pop(f"{obj.metadata.namespace}/{c.resource_claim_name}")
                for c in obj.spec.resource_claims if f"{obj.metadata.namespace}/{c.resource_claim_name}" in claims]
        series.arrived_milli += sum(claim_demand(c, driver) for c in mine)
        before = scheduler.stats.bound
        pod = cluster.create(obj)
        _settle(harness, clock)
        series.done += 1
        if scheduler.stats.bound > before:
            series.bound += 1
            gpus.placed_on(harness.informers.store("Pod")[pod.key].spec.node_name)
        else:
            cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace)
            for claim in mine:
                cluster.delete("ResourceClaim", claim.metadata.name, claim.metadata.namespace)
        series.record(gpus)
        if progress is not None and series.done % 100 == 0:
            progress(series.done, total_pods)
    return series


def _result(trace: str, config: str | Path | dict | KubeSchedulerConfiguration | None, info: TraceInfo,
            gpus: _GpuState, series: _Series, seconds: float) -> ReplayResult:
    """The replay's numbers: the curves as the paper's per-percent means of the per-pod records."""
    data = np.array(series.records) if series.records else np.zeros((0, 3))
    up_to = int(round(data[-1, 0])) if len(data) else 0
    return ReplayResult(
        trace=trace, config=str(config) if isinstance(config, (str, Path)) else "default", seed=info.seed,
        arrival=info.arrival, pods=series.done, bound=series.bound, failed=series.done - series.bound,
        gpus=gpus.capacity // MILLI, gpu_allocation_ratio=round(float(data[-1, 1]), 2) if len(data) else 0.0,
        curve=_discrete(data[:, 0], data[:, 1], up_to),
        fragmentation=_discrete(data[:, 0], data[:, 2], up_to),
        wall_seconds=round(seconds, 2),
        nodes=gpus.names, models=list(gpus.gpus.models), heatmap_arrived=series.heatmap_arrived,
        heatmap=series.heatmap, rng=info.rng,
    )


def node_ranks(names: list[str], seed: int) -> dict[str, int]:
    """A seeded random priority of the nodes (module docstring): the nodes
    sorted by name get the positions of a random permutation."""
    ordered = sorted(names)
    positions = list(range(len(ordered)))
    random.Random(seed).shuffle(positions)
    return dict(zip(ordered, positions))


def go_node_ranks(names: list[str], generator: GoRand) -> dict[str, int]:
    """The Go simulator's node priority (module docstring), drawn from
    ``generator``: the nodes sorted by name, ``Perm(n)``; node ``i`` is renamed
    ``"%04d-" % perm[i]`` + its name and its selectHost keeps the smallest
    name among the best, so a node's rank is the position of that name in
    sorted order (``perm[i]`` itself below 10,000 nodes)."""
    ordered = sorted(names)
    perm = generator.perm(len(ordered))
    renamed = sorted(range(len(ordered)), key=lambda i: f"{perm[i]:04d}-{ordered[i]}")
    return {ordered[i]: rank for rank, i in enumerate(renamed)}


def _cpu_left(scheduler: Scheduler, node_name: str) -> int:
    """Milli-CPU of the node not requested by its pods (bound and assumed)."""
    info = scheduler.node_info(node_name)
    if info is None:
        raise KeyError(f"node {node_name} is not in the scheduler's cache")
    return info.allocatable.get("cpu", 0) - info.requested.get("cpu", 0)


def _settle(harness: Harness, clock: FakeClock) -> None:
    """Let the scheduler finish what it can; move the clock only for pods that
    wait at Permit or PreBind."""
    scheduler = harness.scheduler
    while True:
        while harness.step():
            pass
        if not scheduler.in_flight():
            return
        deadline = clock.next_deadline(include_background=False)
        if deadline is None:
            return
        clock.advance_to(deadline)
