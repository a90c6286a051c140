"""GPU fragmentation as the FGD paper measures it (Weng et al., ATC'23, section 3).

A node's idle GPU compute is *fragmented* for a pod shape when that shape
cannot use it: the node cannot host the shape at all (too little CPU, too few
GPUs with enough compute left, or the wrong GPU model), then all of its idle
GPU compute counts; or it can, and then the GPUs with less compute left than
the shape needs per GPU count.  Pods that ask for no GPU find every idle GPU
fragmented.  The fragmentation of a node is the expectation of that amount
over the workload's *typical pods* (the most common shapes, weighted by how
often they occur); the cluster's is the sum over nodes.

Everything is vectorised over nodes: ``left`` is an ``(nodes, gpus)`` array of
GPU compute left in milli-GPU (0 for missing GPUs), ``cpu_left`` milli-CPU per
node, ``models`` the GPU model per node.  The sums are accumulated in the
same order as the paper's simulator (per quadrant, typical pods in order), so
scores derived from them match it to the last bit.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import yaml
from attrs import frozen

#: Requests without CPU count as this much when shapes are compared (kube-scheduler's non-zero default).
DEFAULT_MILLI_CPU = 100
#: Share of the pods whose shapes are typical (the paper's popularity threshold).
POPULARITY_THRESHOLD = 95
#: Node states whose fragmentation a Workload remembers (~150 bytes each) before it starts afresh.
MAX_REMEMBERED_STATES = 1_000_000
#: Workloads (typical pods and models) whose remembered states are kept, the least recently made dropped first.
MAX_REMEMBERED_WORKLOADS = 4
#: Name (namespace default) of the ConfigMap describing a converted trace; it holds the typical pods
#: (:func:`typical_pods_yaml`) under ``typical-pods.yaml``.
TRACE_CONFIGMAP = "kubesched-trace"
NAMESPACE = "default"


@frozen
class PodShape:
    """What fragmentation looks at of a pod: ``milli_cpu``, ``gpu_count``,
    ``milli_gpu`` per GPU (0-1000; 0 for CPU-only pods) and ``models`` (the GPU
    models it accepts; empty: any)."""

    milli_cpu: int
    gpu_count: int = 0
    milli_gpu: int = 0
    models: tuple[str, ...] = ()

    @property
    def total_milli_gpu(self) -> int:
        return self.gpu_count * self.milli_gpu

    @property
    def shares_gpu(self) -> bool:
        """One GPU, part of it."""
        return self.gpu_count == 1 and self.milli_gpu < 1000

    def sort_key(self) -> tuple:
        return (self.milli_cpu, self.milli_gpu, self.gpu_count, "|".join(self.models))


@frozen
class TypicalPod:
    """A typical pod shape and its ``weight`` (the weights of a workload sum to 1)."""

    shape: PodShape
    weight: float


def typical_pods(shapes: Iterable[PodShape], threshold: int = POPULARITY_THRESHOLD) -> list[TypicalPod]:
    """The most common shapes that together make up ``threshold`` % of the
    pods, most common first (ties: larger shapes first), weights renormalised
    to sum to 1 - the paper's ``GetTypicalPods`` with CPU pods included."""
    counts = Counter(shapes)
    total = sum(counts.values())
    if not total:
        return []
    ordered = sorted(counts.items(), key=lambda item: (item[1], item[0].sort_key()), reverse=True)
    wanted = threshold * total / 100
    chosen: list[tuple[PodShape, int]] = []
    covered = 0
    for shape, count in ordered:
        if covered >= wanted:
            break
        chosen.append((shape, count))
        covered += count
    # The paper normalises by the total, then by the share covered: keep its arithmetic.
    if len(chosen) == len(ordered):
        return [TypicalPod(shape, count / total) for shape, count in chosen]
    share = covered / total
    return [TypicalPod(shape, (count / total) / share) for shape, count in chosen]


def typical_pods_yaml(typical: list[TypicalPod]) -> str:
    """The typical pods as the ConfigMap holds them."""
    return yaml.safe_dump([
        {"milliCPU": t.shape.milli_cpu, "gpuCount": t.shape.gpu_count, "milliGPU": t.shape.milli_gpu,
         "models": list(t.shape.models), "weight": t.weight}
        for t in typical
    ], sort_keys=False)


def parse_typical_pods(text: str, where: str = "typical pods") -> list[TypicalPod]:
    """The inverse of :func:`typical_pods_yaml`; raises ValueError naming ``where``."""
    try:
        items = yaml.safe_load(text) or []
        return [TypicalPod(PodShape(int(i.get("milliCPU", 0)), int(i.get("gpuCount", 0)), int(i.get("milliGPU", 0)),
                                    tuple(i.get("models") or ())), float(i["weight"])) for i in items]
    except (yaml.YAMLError, AttributeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: expected a list of {{milliCPU, gpuCount, milliGPU, models, weight}}: {err}") from None


class Workload:
    """Typical pods prepared for :func:`node_fragmentation`.

    ``model_names``: the GPU models nodes may have; nodes give theirs as
    codes (:meth:`model_code`), 0 meaning no GPU model (CPU-only).
    """

    def __init__(self, typical: Sequence[TypicalPod], model_names: Iterable[str] = ()):
        self.typical = list(typical)
        self.model_names = ["", *sorted(set(model_names) - {""})]
        self._codes = {name: code for code, name in enumerate(self.model_names)}
        #: per typical pod (axis 0): weight, milli-CPU, milli-GPU per GPU, GPUs
        self.weight = np.array([t.weight for t in self.typical], dtype=float)
        self.cpu = np.array([t.shape.milli_cpu for t in self.typical], dtype=np.int64)
        self.milli = np.array([t.shape.milli_gpu for t in self.typical], dtype=np.int64)
        self.count = np.array([t.shape.gpu_count for t in self.typical], dtype=np.int64)
        self._cpu_ascending = np.sort(self.cpu)
        self._cpu_list = self._cpu_ascending.tolist()
        #: node state (see :meth:`fragmentation`) -> its fragmentation, shared by the workloads of these
        #: typical pods and models (the replay's bookkeeping and a policy's scores, replays of one trace)
        self._states = _remembered_states((tuple(self.typical), tuple(self.model_names)))
        self._columns: dict[int, tuple[np.ndarray, ...]] = {}
        #: (typical pod, model code): may the pod use that model
        self.access = np.array([[not t.shape.models or name in t.shape.models for name in self.model_names]
                                for t in self.typical], dtype=bool).reshape(len(self.typical), len(self.model_names))

    def cpu_fits(self, milli_cpu: np.ndarray | int) -> np.ndarray:
        """How many of the typical pods' CPU requests ``milli_cpu`` (free CPU
        of one node, or an array of them) covers, of the same shape:
        :func:`node_fragmentation` depends on a node's free CPU through this
        number alone, so nodes alike in it (and in GPUs and model) fragment alike."""
        return np.searchsorted(self._cpu_ascending, milli_cpu, side="right")

    def columns(self, axes: int) -> tuple[np.ndarray, ...]:
        """(weight, milli-CPU, milli-GPU, GPU count, CPU-only or not, the six quadrant numbers) of the
        typical pods shaped to broadcast against ``axes`` node axes (:func:`node_fragmentation`)."""
        shaped = self._columns.get(axes)
        if shaped is None:
            extra = (1,) * axes
            shaped = self._columns[axes] = (
                self.weight.reshape(-1, *extra), self.cpu.reshape(-1, *extra), self.milli.reshape(-1, *extra, 1),
                self.count.reshape(-1, *extra), (self.milli > 0).reshape(-1, *extra),
                np.arange(6).reshape(-1, 1, *extra))
        return shaped

    def fragmentation(self, left: np.ndarray, cpu_left: np.ndarray, models: np.ndarray) -> np.ndarray:
        """:func:`node_fragmentation` of nodes given as rows - ``left`` ``(n,
        gpus)``, ``cpu_left`` and ``models`` ``(n,)`` - remembered per node
        state: a node's fragmentation depends only on its GPUs' compute left
        in any order, the typical pods its free CPU covers (:meth:`cpu_fits`)
        and its model, and nodes of one type keep passing through the same
        few states (at most :data:`MAX_REMEMBERED_STATES`, then it starts afresh)."""
        known = self._states
        if len(known) > MAX_REMEMBERED_STATES:
            known.clear()
        if len(left) == 1:  # one node (the replay's bookkeeping after each binding): no arrays of keys
            key = (np.sort(left[0]).tobytes(), bisect.bisect_right(self._cpu_list, int(cpu_left[0])), int(models[0]))
            value = known.get(key)
            if value is None:
                value = known[key] = float(node_fragmentation(self, left, np.asarray(cpu_left), np.asarray(models))[0])
            return np.array([value])
        keys = list(zip([row.tobytes() for row in np.sort(left, axis=1)], self.cpu_fits(cpu_left).tolist(),
                        np.asarray(models).tolist()))
        missing: dict[tuple[bytes, int, int], int] = {}
        for position, key in enumerate(keys):
            if key not in known and key not in missing:
                missing[key] = position
        if missing:
            at = np.fromiter(missing.values(), dtype=np.int64, count=len(missing))
            values = node_fragmentation(self, left[at], np.asarray(cpu_left)[at], np.asarray(models)[at])
            known.update(zip(missing, values.tolist()))
        return np.array([known[key] for key in keys], dtype=float)

    def model_code(self, model: str) -> int:
        """The code of GPU model ``model`` (0 for one not given at construction)."""
        return self._codes.get(model, 0)


_STATES: dict[tuple, dict[tuple[bytes, int, int], float]] = {}


def _remembered_states(workload_key: tuple) -> dict[tuple[bytes, int, int], float]:
    """The node states remembered for workloads of ``workload_key`` (typical pods, model names)."""
    states = _STATES.pop(workload_key, None)
    if states is None:
        states = {}
        if len(_STATES) >= MAX_REMEMBERED_WORKLOADS:
            del _STATES[next(iter(_STATES))]
    _STATES[workload_key] = states
    return states


def node_fragmentation(workload: Workload, left: np.ndarray, cpu_left: np.ndarray, models: np.ndarray) -> np.ndarray:
    """Expected fragmented GPU compute (milli-GPU, float) of each node.

    ``left``: ``(..., gpus)`` compute left per GPU (0 for GPUs a node lacks;
    extra leading axes are allowed, e.g. one per candidate placement);
    ``cpu_left`` (milli-CPU) and ``models`` (model codes, see
    :meth:`Workload.model_code`) broadcast against ``left.shape[:-1]``.

    Every typical pod puts its weighted amount into one quadrant (Q1 lack
    both, Q2 lack GPU - including the too-small GPUs of a node that can host
    it -, Q4 lack CPU, X CPU-only pods, no access); each quadrant is summed in
    typical-pod order (a cumulative sum, which is sequential; all six at once)
    and the quadrants are added in the paper's order.
    """
    shape = left.shape[:-1]
    w, cpu, milli, count, gpu_pod, quadrants = workload.columns(len(shape))
    total = left.sum(axis=-1)
    cpu_ok = np.asarray(cpu_left)[None] >= cpu                     # (typical, ...)
    enough = left[None] >= milli                                   # (typical, ..., gpus)
    hosts = enough.sum(axis=-1) >= count
    reachable = workload.access[:, np.asarray(models)]
    # the quadrant of each (typical pod, node), in the order the quadrants are added:
    # 0 Q1, 1 Q2, 2 Q4, 3 X (CPU-only pod, CPU fits), 4 X (CPU-only pod, CPU short), 5 no access
    quadrant = np.where(cpu_ok, 1, np.where(hosts, 2, 0))
    quadrant = np.where(gpu_pod, np.where(reachable, quadrant, 5), np.where(cpu_ok, 3, 4))
    # what it puts there: in Q2 a node that can host the pod loses only its too-small GPUs
    amount = np.where(gpu_pod & reachable & hosts & cpu_ok, w * np.where(enough, 0, left[None]).sum(axis=-1),
                      w * total)
    if amount.shape != quadrant.shape:
        amount = np.broadcast_to(amount, quadrant.shape)
    if not len(amount):
        return np.zeros(shape)
    sums = np.cumsum(np.where(quadrant[None] == quadrants, amount[None], 0.0), axis=1)[:, -1]
    return sums[0] + sums[1] + sums[2] + sums[3] + sums[4] + sums[5]
