"""Two scheduler configurations on the same input, side by side: ``kubesched compare``.

Each side runs the same manifests (a simulation on the fake clock, seeded),
the same converted production trace (:func:`compare_replays`: the trace's
own measures) or the same scheduler_perf workload (on a fake clock: the placements matter
here, not the speed) with its own KubeSchedulerConfiguration, and the
outcome is summarised as a :class:`RunSummary`: where every pod went, which
pods stay Pending and why, and per node the share of each resource in use.
:func:`compare` gives the differences: placements that differ, pending
counts, per-node utilisation side by side and two fragmentation measures -
nodes in use, and the share of the free capacity stranded on nodes that are
partly used (what a bin-packing profile lowers).

A side is ``FILE`` or ``FILE:PROFILE``: the latter runs the profile named
PROFILE of FILE as the default scheduler (pods that name
``default-scheduler``, or none, go to it), so a second profile such as
configs/bin-packing.yaml's ``bin-packing-scheduler`` is compared as if every
pod asked for it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Iterable

import attrs
import yaml

from kubesched.core.api.core_v1 import Node, Pod
from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, read_yaml
from kubesched.core.clock import FakeClock
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.resources import CPU, MEMORY
from kubesched.drivers.simulation import Simulation, create_sourced
from kubesched.perf.config import load_test_cases
from kubesched.perf.executor import WorkloadExecutor
from kubesched.trace.replay import ReplayResult, replay

DEFAULT_SCHEDULER = "default-scheduler"
#: Placements that differ listed in full (the count is always given).
MAX_DIFFERENCES_SHOWN = 50


@attrs.define
class NodeUsage:
    """One node at the end of a run: ``allocatable`` and ``requested`` per
    resource (scheduler units: milli-CPU, bytes, counts) and its pod count."""

    name: str
    allocatable: dict[str, int]
    requested: dict[str, int]
    pods: int


@attrs.define
class RunSummary:
    """The outcome of one side: ``placements`` pod -> node, ``pending`` pod ->
    its PodScheduled message, ``nodes`` by name, ``features`` every feature gate's value."""

    label: str
    placements: dict[str, str]
    pending: dict[str, str]
    nodes: dict[str, NodeUsage]
    features: dict[str, bool] = attrs.field(factory=dict)


def summarize(label: str, pods: Iterable[Pod], nodes: Iterable[Node]) -> RunSummary:
    """A :class:`RunSummary` of the final ``pods`` and ``nodes`` of a run."""
    placements, pending = {}, {}
    by_node: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.spec.node_name:
            placements[pod.key] = pod.spec.node_name
            by_node.setdefault(pod.spec.node_name, []).append(pod)
        elif pod.status.phase not in ("Succeeded", "Failed"):
            condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
            pending[pod.key] = condition.message if condition is not None else ""
    usage = {}
    for node in nodes:
        info = NodeInfo(node, by_node.get(node.metadata.name, []))
        usage[info.name] = NodeUsage(info.name, dict(info.allocatable), dict(info.requested), len(info.pods))
    return RunSummary(label, placements, pending, usage)


def profile_as_default(config: Path, profile: str | None, scratch: Path) -> Path:
    """``config`` itself, or with ``profile`` a copy in ``scratch`` whose only
    profile is that one, renamed ``default-scheduler``.  Raises
    :class:`ConfigError` when the file cannot be read or has no such profile."""
    if profile is None:
        return config
    try:
        document = read_yaml(config, MAX_CONFIG_BYTES)
    except InvalidManifest as err:
        raise ConfigError(str(err)) from None
    profiles = document.get("profiles") if isinstance(document, dict) else None
    chosen = [p for p in profiles or [] if isinstance(p, dict) and p.get("schedulerName", DEFAULT_SCHEDULER) == profile]
    if not chosen:
        raise ConfigError(f"{config}: profiles: no profile with schedulerName {profile!r}")
    document = {**document, "profiles": [{**chosen[0], "schedulerName": DEFAULT_SCHEDULER}]}
    path = scratch / f"{config.stem}-{profile}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def split_side(side: str) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:PROFILE`` -> (path, profile or None)."""
    path, sep, profile = side.rpartition(":")
    if sep and path and not Path(side).exists():
        return Path(path), profile
    return Path(side), None


def run_manifests(sourced: list[tuple[str, Any]], side: str | None, seed: int = 0,
                  features: FeatureGates | None = None, label: str | None = None) -> RunSummary:
    """Simulate the parsed manifests ``sourced`` ((file, object) pairs, as
    :func:`~kubesched.core.api.manifests.load_sourced_objects` reads them once for both sides: the objects are
    frozen, each side's API server stores its own) with the configuration ``side`` (None: the default profile)
    and ``features`` (None: the newest release's defaults) until nothing more can happen; ``label`` names the
    side (default ``side``).  Raises ``ConfigError``/``InvalidManifest``."""
    with tempfile.TemporaryDirectory() as scratch:
        sim = Simulation(config=_side_config(side, Path(scratch)), seed=seed, features=features)
        create_sourced(sim.cluster, sourced)
        sim.run()
    summary = summarize(label or side or "default", sim.pods(), sim.cluster.list("Node").items)
    summary.features = sim.features.values()
    return summary


def run_workload(perf_config: Path, test: str, workload: str, side: str | None, seed: int = 0,
                 features: FeatureGates | None = None, label: str | None = None) -> RunSummary:
    """Run one scheduler_perf workload (on a fake clock) with the configuration
    ``side`` instead of the test case's own (None: its own) and ``features`` under the workload's
    featureGates.  Raises ``PerfConfigError``, ``Unsupported``, ``WorkloadFailed`` or ``ConfigError``."""
    cases = [c for c in load_test_cases(perf_config) if c.name == test]
    if not cases:
        raise ConfigError(f"{perf_config}: no test case {test!r}")
    with tempfile.TemporaryDirectory() as scratch:
        case = cases[0]
        if side is not None:
            case = attrs.evolve(case, scheduler_config_path=_side_config(side, Path(scratch)))
        executor = WorkloadExecutor(case, case.workload(workload), seed=seed, clock=FakeClock(1e9),
                                    features=features)
        executor.check()
        executor.run()
    summary = summarize(label or side or "default", executor.cluster.list("Pod").items,
                        executor.cluster.list("Node").items)
    summary.features = executor.features.values()
    return summary


def _side_config(side: str | None, scratch: Path) -> Path | None:
    if side is None:
        return None
    config, profile = split_side(side)
    return profile_as_default(config, profile, scratch)


def run_trace(trace_dir: Path, side: str) -> ReplayResult:
    """Replay a converted trace (``kubesched trace``; pods arrive one at a time,
    each tried once) with the configuration ``side``.  Raises ``ConfigError``
    or ``InvalidManifest``."""
    config, profile = split_side(side)
    with tempfile.TemporaryDirectory() as scratch:
        result = replay(trace_dir, profile_as_default(config, profile, Path(scratch)))
    result.config = side
    return result


def compare_replays(a: ReplayResult, b: ReplayResult) -> dict[str, Any]:
    """Two replays of one trace (JSON-ready): per side the pods placed and
    failed, the GPU allocation ratio and the fragmented share of GPU compute at
    the end (``trace`` measures, % of all GPU compute); per node its GPU
    utilisation (%) at the last sampled arrival on each side (``gpuUtilisationAt``, a multiple of the replay's
    sampling step: the replay itself ends at ``arrivedPercent``), nodes that differ first."""
    def side(result: ReplayResult) -> dict[str, Any]:
        return {"config": result.config, "pods": result.pods, "bound": result.bound, "failed": result.failed,
                "gpuAllocationRatio": result.gpu_allocation_ratio,
                "fragmentationPercent": result.fragmentation[-1][1] if result.fragmentation else None,
                "wallSeconds": result.wall_seconds}

    last_a = dict(zip(a.nodes, a.heatmap[-1] if a.heatmap else []))
    last_b = dict(zip(b.nodes, b.heatmap[-1] if b.heatmap else []))
    nodes = [{"node": name, "a": last_a.get(name), "b": last_b.get(name)} for name in a.nodes]
    nodes.sort(key=lambda row: (row["a"] == row["b"], row["node"]))
    return {"trace": a.trace, "sides": {"a": side(a), "b": side(b)},
            "gpuUtilisationAt": a.heatmap_arrived[-1] if a.heatmap_arrived else None,
            "arrivedPercent": a.curve[-1][0] if a.curve else None,
            "nodesDiffering": sum(row["a"] != row["b"] for row in nodes), "nodes": nodes}


def compare(a: RunSummary, b: RunSummary) -> dict[str, Any]:
    """The differences of two runs (JSON-ready): ``sides`` (per side: bound,
    pending, nodes in use, stranded share per resource), ``moved`` (pods
    placed differently: pod, node on a, node on b; "" for pending),
    ``nodes`` (per node, per side: pods and the percentage of cpu, memory and
    each extended resource in use) and ``gates`` (feature gates on on one side and off on the other: gate,
    a, b; None where a side's release does not have the gate)."""
    pods = sorted(set(a.placements) | set(a.pending) | set(b.placements) | set(b.pending))
    moved = [{"pod": pod, "a": a.placements.get(pod, ""), "b": b.placements.get(pod, "")}
             for pod in pods if a.placements.get(pod, "") != b.placements.get(pod, "")]
    resources = _resources(a, b)
    nodes = []
    for name in sorted(set(a.nodes) | set(b.nodes)):
        row: dict[str, Any] = {"node": name}
        for side, summary in (("a", a), ("b", b)):
            usage = summary.nodes.get(name)
            row[side] = None if usage is None else {"pods": usage.pods, **{
                resource: _percent(usage.requested.get(resource, 0), usage.allocatable.get(resource, 0))
                for resource in resources}}
        nodes.append(row)
    gates = [{"gate": name, "a": a.features.get(name), "b": b.features.get(name)}
             for name in sorted(set(a.features) | set(b.features))
             if a.features.get(name, False) != b.features.get(name, False)]
    return {"sides": {"a": _side(a, resources), "b": _side(b, resources)}, "moved": moved, "nodes": nodes,
            "resources": resources, "gates": gates}


def _resources(*summaries: RunSummary) -> list[str]:
    """cpu, memory and every extended resource some node has (not pods or storage)."""
    extra = sorted({name for s in summaries for usage in s.nodes.values() for name, amount in usage.allocatable.items()
                    if amount and "/" in name})
    return [CPU, MEMORY, *extra]


def _percent(used: int, total: int) -> float | None:
    return round(100 * used / total, 1) if total else None


def _side(summary: RunSummary, resources: list[str]) -> dict[str, Any]:
    used = [u for u in summary.nodes.values() if u.pods]
    stranded = {}
    for resource in resources:
        free = [max(u.allocatable.get(resource, 0) - u.requested.get(resource, 0), 0) for u in summary.nodes.values()]
        on_used = [max(u.allocatable.get(resource, 0) - u.requested.get(resource, 0), 0) for u in used
                   if u.requested.get(resource, 0)]
        stranded[resource] = _percent(sum(on_used), sum(free))
    return {"config": summary.label, "bound": len(summary.placements), "pending": len(summary.pending),
            "nodesInUse": len(used), "nodes": len(summary.nodes), "strandedFreePercent": stranded,
            "pendingPods": dict(sorted(summary.pending.items())[:MAX_DIFFERENCES_SHOWN])}


