"""FGD (Fragmentation Gradient Descent): place the pod where GPU fragmentation grows least.

A node's fragmentation is the GPU compute its idle GPUs cannot give to the
workload's typical pods (:func:`kubesched.gpu.node_fragmentation`).  The score of
a node is sigmoid((fragmentation before - after placing the pod) / 1000) x
100, truncated; a pod that shares a GPU is tried on each GPU that fits and
the node scores its best GPU, which is also the GPU it gets (the first of
equally good ones).  Whole GPUs go to the free GPUs with the lowest index.

The typical pods come from the plugin args (``typicalPods``: a list of
``{milliCPU, gpuCount, milliGPU, models, weight}``) or from the ConfigMap
``typicalPodsConfigMap`` (``namespace/name``, key ``typical-pods.yaml``; by
default the one ``kubesched trace alibaba-openb`` writes).

Scores are cached per pod shape and node, and recomputed only for nodes whose
GPUs or CPU changed since that shape was last scored, and then only for node
states (GPUs, CPU, model) no node was scored in before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import yaml
from attrs import frozen

from kubesched import NotFound, Status, hookimpl
from kubesched.gpu import TRACE_CONFIGMAP, TRACE_NAMESPACE, PodShape, Workload, parse_typical_pods

from .gpuscore import MAX_NODE_SCORE, GpuArgs, GpuScore, NodeView

#: Distinct (shape, node state) scores kept before the cache starts over (~150 bytes each).
MAX_REMEMBERED_STATES = 1_000_000

#: The ConfigMap key holding the typical pods.
TYPICAL_PODS_KEY = "typical-pods.yaml"


@frozen
class FGDArgs(GpuArgs):
    """``typicalPods`` (inline) or ``typicalPodsConfigMap`` (``namespace/name``)."""

    typical_pods: tuple[dict[str, Any], ...] = ()
    typical_pods_config_map: str = f"{TRACE_NAMESPACE}/{TRACE_CONFIGMAP}"


def sigmoid_score(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The paper's score of a fragmentation change (milli-GPU): sigmoid(delta / 1000) x 100, truncated."""
    return np.trunc(1.0 / (1.0 + np.exp(-((before - after) / 1000))) * MAX_NODE_SCORE).astype(np.int64)


def place_whole(left: np.ndarray, shape: PodShape) -> np.ndarray:
    """``left`` (rows, G) after taking ``gpu_count`` GPUs of ``milli_gpu`` each,
    fullest fitting GPUs first (the paper's ``NodeResource.Sub``)."""
    after = left.copy()
    if not shape.gpu_count:
        return after
    order = np.argsort(left, axis=1, kind="stable")
    ordered = np.take_along_axis(left, order, axis=1)
    fits = ordered >= shape.milli_gpu
    taken = fits & (np.cumsum(fits, axis=1) <= shape.gpu_count)
    np.put_along_axis(after, order, ordered - np.where(taken, shape.milli_gpu, 0), axis=1)
    return after


class _Memo:
    """Per row: the versions of its inputs a value was computed at (the node's
    GPUs, :attr:`NodeGpus.versions`; its NodeInfo's generation, which every
    change of its pods or allocatable CPU moves)."""

    def __init__(self, rows: int):
        self.gpus = np.full(rows, -1, dtype=np.int64)
        self.generation = np.full(rows, -1, dtype=np.int64)

    def stale(self, rows: np.ndarray, gpus: np.ndarray, generation: np.ndarray) -> np.ndarray:
        """Positions (into ``rows``) whose inputs changed."""
        return np.flatnonzero((self.gpus[rows] != gpus) | (self.generation[rows] != generation))

    def remember(self, rows: np.ndarray, gpus: np.ndarray, generation: np.ndarray) -> None:
        self.gpus[rows] = gpus
        self.generation[rows] = generation


def _generation(info) -> int:
    return info.generation


class FGD(GpuScore):
    """The paper's FGD score plugin (and GPU choice)."""

    name = "FGD"
    args_class = FGDArgs

    def __init__(self, args: FGDArgs, handle):
        super().__init__(args, handle)
        self.workload: Workload | None = None
        self._layout = None  # (table, slice generation) the memos are laid out for
        self._models = np.zeros(0, dtype=np.int64)
        self._shapes: dict[tuple, tuple[_Memo, np.ndarray, np.ndarray]] = {}
        #: (shape, GPU compute left bytes, typical pods covered by the CPU left before and after placing the
        #: pod (Workload.cpu_fits), model code) -> (score, chosen GPU)
        self._states: dict[tuple, tuple[int, int]] = {}

    # --- typical pods --------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        if self.workload is None:
            problem = self._load_typical_pods()
            if problem:
                return Status.as_error(f"FGD: {problem}")
        return super().pre_filter(state, pod, nodes)

    def _load_typical_pods(self) -> str:
        """Load the typical pods; a problem description, or "" when loaded."""
        if self.args.typical_pods:
            text, where = yaml.safe_dump(list(self.args.typical_pods)), "args.typicalPods"
        else:
            namespace, _, name = self.args.typical_pods_config_map.rpartition("/")
            try:
                configmap = self.handle.cluster.get("ConfigMap", name, namespace or TRACE_NAMESPACE)
            except NotFound:
                return (f"ConfigMap {self.args.typical_pods_config_map} not found: give args.typicalPods "
                        f"or args.typicalPodsConfigMap")
            text = configmap.data.get(TYPICAL_PODS_KEY)
            where = f"ConfigMap {self.args.typical_pods_config_map}: data.{TYPICAL_PODS_KEY}"
            if text is None:
                return f"{where}: missing"
        try:
            typical = parse_typical_pods(text, where)
        except ValueError as err:
            return str(err)
        if not typical:
            return f"{where}: no typical pods"
        self.workload = Workload(typical)
        self._layout = None
        return ""

    # --- scoring -------------------------------------------------------------------------

    def _lay_out(self) -> None:
        """(Re)build the memos when the nodes or their GPUs changed."""
        layout = (self.gpus.table, self.handle.dra.slice_generation)
        if layout == self._layout:
            return
        self._layout = layout
        models = {m for m in self.gpus.models if m} - set(self.workload.model_names)
        if models:
            self.workload = Workload(self.workload.typical, [*self.workload.model_names, *models])
        self._models = self.gpus.model_codes(self.workload.model_code)
        self._shapes = {}
        self._states = {}

    def scores(self, shape: PodShape, nodes: NodeView, state) -> np.ndarray:
        self._lay_out()
        key = (shape.milli_cpu, shape.gpu_count, shape.milli_gpu)
        entry = self._shapes.get(key)
        if entry is None:
            count = len(self.gpus.left)
            entry = self._shapes[key] = (_Memo(count), np.zeros(count, dtype=np.int64),
                                         np.full(count, -1, dtype=np.int64))
        memo, scores, best = entry
        rows, table = nodes.rows, nodes.table
        versions = self.gpus.versions[rows]
        generations = table.column("generation", _generation)[rows]
        stale = memo.stale(rows, versions, generations)
        if len(stale):
            changed = rows[stale]
            left = self.gpus.left[changed]
            cpu = table.allocatable("cpu")[changed] - table.requested("cpu")[changed]
            new_scores, new_best = self._score_by_state(shape, key, changed, left, cpu)
            scores[changed], best[changed] = new_scores, new_best
            memo.remember(changed, versions[stale], generations[stale])
        return scores[rows]

    def _score_by_state(self, shape: PodShape, key: tuple, rows: np.ndarray, left: np.ndarray, cpu: np.ndarray):
        """:meth:`_score`, computed once per distinct node state (GPU compute
        left, the typical pods its free CPU covers before and after placing the
        pod, GPU model) and shape: nodes of one type keep passing through the
        same states, so most answers are looked up."""
        states = self._states
        if len(states) > MAX_REMEMBERED_STATES:
            states.clear()
        # the score sees a node's free CPU before and after placing the pod only through the typical pods it covers
        covered_before = self.workload.cpu_fits(cpu).tolist()
        covered_after = self.workload.cpu_fits(cpu - shape.milli_cpu).tolist()
        keys = [(key, gpus.tobytes(), before, after, model) for gpus, before, after, model
                in zip(left, covered_before, covered_after, self._models[rows].tolist())]
        todo: dict[tuple, int] = {}
        for position, state_key in enumerate(keys):
            if state_key not in states and state_key not in todo:
                todo[state_key] = position
        if todo:
            positions = np.fromiter(todo.values(), dtype=np.int64, count=len(todo))
            new_scores, new_best = self._score(shape, rows[positions], left[positions], cpu[positions])
            for state_key, score, best in zip(todo, new_scores.tolist(), new_best.tolist()):
                states[state_key] = (score, best)
        answers = [states[state_key] for state_key in keys]
        return (np.fromiter((score for score, _ in answers), dtype=np.int64, count=len(answers)),
                np.fromiter((best for _, best in answers), dtype=np.int64, count=len(answers)))

    def _score(self, shape: PodShape, rows: np.ndarray, left: np.ndarray, cpu: np.ndarray):
        """Scores and chosen GPU (-1: lowest free ones) of ``rows`` with these inputs."""
        models = self._models[rows]
        cpu_after = cpu - shape.milli_cpu
        if not shape.shares_gpu:
            after_left, after_cpu, after_models = place_whole(left, shape), cpu_after, models
        else:
            # Fragmentation ignores the order of a node's GPUs, so GPUs with the same compute left make the
            # same candidate: each distinct (node, compute left) that fits is placed once.
            width = left.shape[1]
            same = left[:, :, None] == left[:, None, :]                       # (rows, G, G)
            first = same.argmax(axis=2)                                        # first GPU with the same compute left
            tried = (first == np.arange(width)) & (left >= shape.milli_gpu)
            at_row, at_gpu = np.nonzero(tried)
            after_left = left[at_row].copy()
            after_left[np.arange(len(at_row)), at_gpu] -= shape.milli_gpu
            after_cpu, after_models = cpu_after[at_row], models[at_row]
        # the nodes' fragmentation now and after placing the pod (the workload remembers it per node state)
        both = self.workload.fragmentation(np.concatenate((left, after_left)), np.concatenate((cpu, after_cpu)),
                                           np.concatenate((models, after_models)))
        before, after = both[:len(rows)], both[len(rows):]
        if not shape.shares_gpu:
            return sigmoid_score(before, after), np.full(len(rows), -1, dtype=np.int64)
        distinct = np.full(left.shape, -1, dtype=np.int64)
        distinct[at_row, at_gpu] = sigmoid_score(before[at_row], after)
        per_gpu = np.where(left >= shape.milli_gpu, distinct[np.arange(len(rows))[:, None], first], -1)
        chosen = per_gpu.argmax(axis=1)
        return per_gpu[np.arange(len(rows)), chosen], chosen

    def device_order(self, shape: PodShape):
        """The GPU FGD scores its node with goes first; the others keep their order."""

        chosen: dict[int, tuple[Any, int, int]] = {}  # row -> (table, its GPUs' version, the GPU it scores with)

        def best_gpu_first(device) -> int:
            table = self.handle.snapshot.table
            self.gpus.sync(table)
            slot = self.gpus.slot.get(device)
            if slot is None:
                return 1
            row = slot[0]
            version = int(self.gpus.versions[row])
            known = chosen.get(row)
            if known is None or known[0] is not table or known[1] != version:
                # a node's devices are sorted together: it is scored once for all of them
                self.scores(shape, NodeView(self.gpus, table, np.array([row], dtype=np.int64)), None)
                best = self._shapes[(shape.milli_cpu, shape.gpu_count, shape.milli_gpu)][2]
                known = chosen[row] = (table, version, int(best[row]))
            return 0 if known[2] == slot[1] else 1

        return best_gpu_first
