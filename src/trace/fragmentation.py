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

from collections import Counter
from typing import Iterable, Sequence

import numpy as np
from attrs import frozen

#: Requests without CPU count as this much when shapes are compared (kube-scheduler's non-zero default).
DEFAULT_MILLI_CPU = 100
#: Share of the pods whose shapes are typical (the paper's popularity threshold).
POPULARITY_THRESHOLD = 95


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


class Workload:
    """Typical pods prepared for :func:`node_fragmentation`.

    ``model_names``: the GPU models nodes may have; nodes give theirs as
    codes (:meth:`model_code`), 0 meaning no GPU model (CPU-only).
    """

    def __init__(self, typical: Sequence[TypicalPod], model_names: Iterable[str] = ()):
        self.typical = list(typical)
        self.weights = [t.weight for t in self.typical]
        self.cpu = [t.shape.milli_cpu for t in self.typical]
        self.milli = [t.shape.milli_gpu for t in self.typical]
        self.count = [t.shape.gpu_count for t in self.typical]
        self.model_names = ["", *sorted(set(model_names) - {""})]
        codes = {name: code for code, name in enumerate(self.model_names)}
        self._codes = codes
        #: per typical pod: which model codes it may use (None: any)
        self.access = [
            None if not t.shape.models else np.array([name in t.shape.models for name in self.model_names])
            for t in self.typical
        ]

    def model_code(self, model: str) -> int:
        """The code of GPU model ``model`` (0 for one not given at construction)."""
        return self._codes.get(model, 0)


def node_fragmentation(workload: Workload, left: np.ndarray, cpu_left: np.ndarray, models: np.ndarray) -> np.ndarray:
    """Expected fragmented GPU compute (milli-GPU, float) of each node.

    ``left``: ``(..., gpus)`` compute left per GPU (0 for GPUs a node lacks;
    extra leading axes are allowed, e.g. one per candidate placement);
    ``cpu_left`` (milli-CPU) and ``models`` (model codes, see
    :meth:`Workload.model_code`) broadcast against ``left.shape[:-1]``.
    """
    total = left.sum(axis=-1)
    shape = total.shape
    q1, q2, q4, xl, xr, na = (np.zeros(shape) for _ in range(6))
    for index, weight in enumerate(workload.weights):
        milli, cpu, count = workload.milli[index], workload.cpu[index], workload.count[index]
        cpu_ok = cpu_left >= cpu
        amount = weight * total
        if milli == 0:
            xl += np.where(cpu_ok, amount, 0.0)
            xr += np.where(cpu_ok, 0.0, amount)
            continue
        enough = left >= milli
        hosts = enough.sum(axis=-1) >= count
        fragment = weight * np.where(enough, 0, left).sum(axis=-1)
        table = workload.access[index]
        if table is None:
            reachable = np.True_
        else:
            reachable = table[models]
            na += np.where(reachable, 0.0, amount)
        q2 += np.where(reachable & hosts & cpu_ok, fragment, 0.0)
        q4 += np.where(reachable & hosts & ~cpu_ok, amount, 0.0)
        q2 += np.where(reachable & ~hosts & cpu_ok, amount, 0.0)
        q1 += np.where(reachable & ~hosts & ~cpu_ok, amount, 0.0)
    return q1 + q2 + q4 + xl + xr + na
