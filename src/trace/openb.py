"""Alibaba's GPU cluster trace "openb" (cluster-trace-gpu-v2023) as a DRA workload.

Input: the trace's CSV files (Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC'23):

- nodes: ``sn, cpu_milli, memory_mib, gpu, model``;
- pods: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, ...``
  (``gpu_milli`` per GPU; ``gpu_spec`` like ``V100M16|V100M32`` = any of;
  ``scheduled_time`` and ``deletion_time``, seconds, when present: how long
  the pod ran).

Output (:func:`convert`): a directory of manifests kubesched replays with
``kubesched trace replay``:

- ``cluster.json``: the DeviceClass, one Node per trace node, one ResourceSlice
  per GPU node with one device per GPU (attribute ``model``; capacity
  ``compute`` = 1 GPU, shareable - ``allowMultipleAllocations`` - and
  ``memory``, the model's GPU memory, which claims do not consume unless they
  ask), and the ConfigMap :data:`TRACE_CONFIGMAP` describing the replay (seed,
  arrival, typical pods);
- ``pods.json``: the pods in arrival order, each GPU pod preceded by its
  ResourceClaim: whole GPUs by count (each consumes all of its GPU's
  compute), a fraction of one GPU as a ``compute`` capacity request, and
  ``gpu_spec`` as a CEL selector on the model; a pod that ran for a known
  time carries it as ``kubesched.io/run-duration`` (``deletion_time -
  scheduled_time``, e.g. ``577s``), the annotation the simulated kubelet ends
  pods by (the paper's replay never ends a pod and ignores it; ``kubesched
  trace replay --durations`` uses it).

The arrival order follows the paper's protocol (its simulator's
``SortClusterPods`` and ``TunePodsByNodeTotalResource``): pods sorted by name,
shuffled with the seed; then, while the GPU demand is below ``arrival`` x the
cluster's GPUs, pods drawn at random (with replacement, from the pods sorted
by name) are appended as ``<name>-tuned-<i>`` until the next draw's per-GPU
request would pass that target; if the demand is above it, random pods are
removed until it is not.  The draws come from one of two generators
(:data:`RNGS`, recorded in the ConfigMap as ``rng``):

- "python": Python's Mersenne Twister seeded with the seed - as random as
  the paper's, but another order for the same seed;
- "go": Go's math/rand (:mod:`.gorand`) exactly as the paper's simulator
  draws from it after ``rand.Seed(seed)``: one ``rand.Int()`` (an argument of
  a debug log call, evaluated even when the line is not printed), the
  ``rand.Shuffle``, then one ``rand.Intn`` per padding draw (including the
  draw that ends the padding) or per removal.  The ConfigMap records how many
  values the conversion took from the source (``rng-draws``): the replay
  draws the node ranking from where the conversion stopped
  (:mod:`.replay`), as the simulator does.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Iterable

from attrs import evolve, frozen

from ..core.api.core_v1 import RUN_DURATION_ANNOTATION
from ..core.gpu.fragmentation import (
    DEFAULT_MILLI_CPU,
    NAMESPACE,
    TRACE_CONFIGMAP,
    PodShape,
    typical_pods,
    typical_pods_yaml,
)
from ..core.gpu.gpus import COMPUTE, DRIVER, MODEL
from .gorand import GoRand

#: Pods a node may hold (the paper's simulator gives every node 1001).
MAX_PODS = 1001
#: The generators the arrival order (and the replay's node ranking) can be drawn from (module docstring).
RNGS = ("python", "go")

#: GPU memory per model in MiB, as the paper's simulator exports it (G1-G3 are
#: undisclosed internal models; G1 is coded as 1000 MiB there).
GPU_MEMORY_MIB = {
    "T4": 15109, "V100M16": 16160, "P100": 16280, "A10": 22731, "V100M32": 32510,
    "A100": 81251, "G1": 1000, "G2": 20000, "G3": 30000,
}


class TraceError(ValueError):
    """A trace file that cannot be read: names the file, the row and the column."""


@frozen
class TraceNode:
    """One node of the trace: ``milli_cpu``, ``memory_mib``, ``gpus`` and their ``model``."""

    name: str
    milli_cpu: int
    memory_mib: int
    gpus: int = 0
    model: str = ""


@frozen
class TracePod:
    """One pod of the trace: ``gpu_count`` GPUs of ``milli_gpu`` each (1000 = a
    whole GPU; 0 for CPU-only pods), on any of ``models`` (empty: any)."""

    name: str
    milli_cpu: int
    memory_mib: int
    gpu_count: int = 0
    milli_gpu: int = 0
    models: tuple[str, ...] = ()
    #: seconds the pod ran in the trace (None: unknown - never scheduled, or still running at the trace's end)
    duration: int | None = None

    @property
    def total_milli_gpu(self) -> int:
        return self.gpu_count * self.milli_gpu

    def shape(self) -> PodShape:
        """The pod as fragmentation sees it (CPU counted at least 100m, as scoring does)."""
        return PodShape(self.milli_cpu or DEFAULT_MILLI_CPU, self.gpu_count, self.milli_gpu, self.models)


def _rows(path: Path, columns: Iterable[str]) -> Iterable[tuple[int, dict]]:
    try:
        handle = path.open(newline="")
    except OSError as err:
        raise TraceError(f"{path}: {err.strerror or err}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
        for number, row in enumerate(reader, start=2):
            yield number, row


def _int(path: Path, number: int, row: dict, column: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = int(float(text)) if text else 0
    except ValueError:
        raise TraceError(f"{path}: line {number}: {column}: not a number: {text!r}") from None
    if value < 0:
        raise TraceError(f"{path}: line {number}: {column}: must not be negative: {value}")
    return value


def read_nodes(path: str | Path) -> list[TraceNode]:
    """The nodes of a node-list CSV (``sn, cpu_milli, memory_mib, gpu, model``)."""
    path = Path(path)
    nodes = []
    for number, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _int(path, number, row, "gpu")
        model = (row.get("model") or "").strip()
        if gpus and not model:
            raise TraceError(f"{path}: line {number}: model: required for a node with GPUs")
        nodes.append(TraceNode(row["sn"].strip(), _int(path, number, row, "cpu_milli"),
                               _int(path, number, row, "memory_mib"), gpus, model if gpus else ""))
    return nodes


def read_pods(path: str | Path) -> list[TracePod]:
    """The pods of a pod-list CSV (``name, cpu_milli, memory_mib, num_gpu,
    gpu_milli, gpu_spec``; other columns are ignored).  ``gpu_milli`` is clamped
    to 1000 as the paper's converter does."""
    path = Path(path)
    pods = []
    for number, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        count = _int(path, number, row, "num_gpu")
        milli = min(_int(path, number, row, "gpu_milli"), 1000) if count else 0
        if count and not milli:
            raise TraceError(f"{path}: line {number}: gpu_milli: must be positive when num_gpu is {count}")
        models = tuple(m for m in (row.get("gpu_spec") or "").strip().split("|") if m) if count else ()
        pods.append(TracePod(row["name"].strip(), _int(path, number, row, "cpu_milli"),
                             _int(path, number, row, "memory_mib"), count, milli, models,
                             _duration(path, number, row)))
    return pods


def _duration(path: Path, number: int, row: dict) -> int | None:
    """``deletion_time - scheduled_time`` (seconds) when the row has both (0 or empty: not known)."""
    if not (row.get("scheduled_time") or "").strip() or not (row.get("deletion_time") or "").strip():
        return None
    scheduled, deleted = _int(path, number, row, "scheduled_time"), _int(path, number, row, "deletion_time")
    if not scheduled or not deleted:
        return None
    if deleted < scheduled:
        raise TraceError(f"{path}: line {number}: deletion_time: {deleted} is before scheduled_time {scheduled}")
    return deleted - scheduled


def arrival_generator(seed: int, rng: str = "python") -> random.Random:
    """The generator the arrival order is drawn from (module docstring):
    ``random.Random(seed)``, or for ``rng`` "go" Go's source after
    ``rand.Seed(seed)`` and the simulator's one ``rand.Int()``.  Raises
    ValueError for another ``rng`` or (go) a seed outside int64."""
    if rng == "python":
        return random.Random(seed)
    if rng != "go":
        raise ValueError(f"rng: {rng!r} is not one of {', '.join(RNGS)}")
    generator = GoRand(seed)
    generator.int_()
    return generator


def arrival_order(pods: list[TracePod], gpu_capacity_milli: int, generator: random.Random,
                  arrival: float) -> list[TracePod]:
    """The paper's arrival order (module docstring) drawn from ``generator``
    (:func:`arrival_generator`): sorted by name and shuffled, then padded or
    thinned to ``arrival`` x ``gpu_capacity_milli`` of GPU demand
    (``arrival`` <= 0: no padding)."""
    by_name = sorted(pods, key=lambda p: p.name)
    order = list(by_name)
    generator.shuffle(order)
    if arrival <= 0 or not order:
        return order
    demand = sum(p.total_milli_gpu for p in order)
    target = arrival * gpu_capacity_milli
    if demand < target:
        draw = 0
        while True:
            pod = by_name[generator.randrange(len(by_name))]
            # the paper's simulator compares the per-GPU request here, not the pod's total
            if demand + pod.milli_gpu > target:
                break
            demand += pod.total_milli_gpu
            order.append(evolve(pod, name=f"{pod.name}-tuned-{draw}"))
            draw += 1
        return order
    while demand > target and order:
        demand -= order.pop(generator.randrange(len(order))).total_milli_gpu
    return order


def device_class() -> dict:
    """The DeviceClass manifest selecting every device of the trace's GPU driver."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


def node_manifest(node: TraceNode) -> dict:
    """The trace node as a core/v1 Node manifest: its milli-CPU and memory (MiB) as capacity and allocatable, 1001
    pods, Ready, labelled with its hostname and GPU model."""
    resources = {"cpu": f"{node.milli_cpu}m", "memory": f"{node.memory_mib}Mi", "pods": str(MAX_PODS)}
    labels = {"kubernetes.io/hostname": node.name}
    if node.model:
        labels["alibabacloud.com/gpu-card-model"] = node.model
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name, "labels": labels},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def slice_manifest(node: TraceNode) -> dict:
    """The node's GPUs: ``gpu-0`` ... with the model and a shareable compute of 1 GPU."""
    memory = GPU_MEMORY_MIB.get(node.model)
    capacity: dict = {COMPUTE: {"value": "1"}}
    if memory is not None:
        capacity["memory"] = {"value": f"{memory}Mi", "requestPolicy": {"default": "0"}}
    devices = [{"name": f"gpu-{index}", "allowMultipleAllocations": True,
                "attributes": {MODEL: {"string": node.model}}, "capacity": capacity}
               for index in range(node.gpus)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node.name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node.name,
                     "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def claim_manifest(pod: TracePod) -> dict:
    """Whole GPUs by count; part of one GPU as a ``compute`` request; models as a selector."""
    exactly: dict = {"deviceClassName": DRIVER, "count": pod.gpu_count}
    if pod.models:
        names = ", ".join(json.dumps(m) for m in pod.models)
        exactly["selectors"] = [{"cel": {"expression": f"device.attributes[{json.dumps(DRIVER)}].{MODEL} in [{names}]"}}]
    if pod.milli_gpu < 1000:
        exactly["capacity"] = {"requests": {COMPUTE: f"{pod.milli_gpu}m"}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{pod.name}-gpu", "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def pod_manifest(pod: TracePod) -> dict:
    """The trace pod as a core/v1 Pod manifest: one pause container requesting (and limited to) its milli-CPU and
    memory (MiB), with the ResourceClaim ``<pod>-gpu`` when it asks for GPUs and its run duration when known."""
    requests = {"cpu": f"{pod.milli_cpu}m", "memory": f"{pod.memory_mib}Mi"}
    container: dict = {"name": "main", "image": "registry.k8s.io/pause:3.10.1",
                       "resources": {"requests": requests, "limits": dict(requests)}}
    spec: dict = {"containers": [container]}
    if pod.gpu_count:
        container["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{pod.name}-gpu"}]
    metadata: dict = {"name": pod.name, "namespace": NAMESPACE}
    if pod.duration is not None:
        metadata["annotations"] = {RUN_DURATION_ANNOTATION: f"{pod.duration}s"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def convert(nodes_csv: str | Path, pods_csv: str | Path, out: str | Path, seed: int = 42,
            arrival: float = 1.3, rng: str = "python") -> dict:
    """Write the trace as manifests into directory ``out`` (module docstring),
    the arrival order drawn from generator ``rng`` (:data:`RNGS`).  Returns
    what the ConfigMap records (seed, generator, arrival, counts, capacity).
    Raises :class:`TraceError` for unreadable input and ValueError for an
    unknown ``rng`` (or a Go seed outside int64)."""
    generator = arrival_generator(seed, rng)
    nodes = read_nodes(nodes_csv)
    pods = read_pods(pods_csv)
    capacity = sum(n.gpus for n in nodes) * 1000
    if not capacity:
        raise TraceError(f"{nodes_csv}: no node has GPUs")
    typical = typical_pods(p.shape() for p in pods)
    order = arrival_order(pods, capacity, generator, arrival)
    info = {
        "source": f"alibaba-openb: {Path(nodes_csv).name}, {Path(pods_csv).name}",
        "seed": str(seed),
        "rng": rng,
        **({"rng-draws": str(generator.draws)} if isinstance(generator, GoRand) else {}),
        "arrival": repr(float(arrival)),
        "gpu-capacity-milli": str(capacity),
        "pods": str(len(order)),
        "gpu-demand-milli": str(sum(p.total_milli_gpu for p in order)),
        "driver": DRIVER,
        "typical-pods.yaml": typical_pods_yaml(typical),
    }
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": TRACE_CONFIGMAP, "namespace": NAMESPACE}, "data": info}
    cluster = [device_class(), configmap]
    for node in nodes:
        cluster.append(node_manifest(node))
        if node.gpus:
            cluster.append(slice_manifest(node))
    workload = []
    for pod in order:
        if pod.gpu_count:
            workload.append(claim_manifest(pod))
        workload.append(pod_manifest(pod))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, items in (("cluster.json", cluster), ("pods.json", workload)):
        with (out / name).open("w") as handle:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, handle, separators=(",", ":"))
            handle.write("\n")
    return info
