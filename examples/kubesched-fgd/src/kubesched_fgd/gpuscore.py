"""What the six policies share: the pod's GPU request, the nodes' GPUs, and GPU choice.

The policies are the Score plugins of the FGD paper (Weng et al., ATC'23) as
its simulator (hkust-adsl/kubernetes-scheduler-simulator) defines them, with
GPUs coming from Dynamic Resource Allocation instead of node annotations:

- a pod's GPU request is read from its ResourceClaims (requests of the GPU
  DeviceClass): ``count`` GPUs of ``compute`` each (a whole GPU without a
  capacity request) - :func:`pod_shape`;
- a node's GPUs and how much compute each has left come from its
  ResourceSlices and the DRA manager's allocated state
  (:class:`kubesched.gpu.NodeGpus`), lined up with the NodeTable;
- which GPU a pod that shares one gets is the policy's choice too (the paper's
  "GPU selection"): the plugin registers a device preference with
  :func:`kubesched.prefer_devices` in PreFilter (so that it
  holds even when a single feasible node skips scoring) and DynamicResources
  allocates in that order when Reserve commits the node.  Whole GPUs are
  taken lowest index first, as in the paper.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from attrs import frozen

from kubesched import MAX_NODE_SCORE, ClaimNameError, hookimpl, non_zero_requests, pod_claims, prefer_devices
from kubesched.gpu import GPU_COMPUTE, GPU_DRIVER, GPU_MODEL, MILLI, NodeGpus, PodShape

#: The paper's normalisation constants: the largest node (128 cores, 8 GPUs).
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000


@frozen
class GpuArgs:
    """``deviceClass``: the DeviceClass GPU requests name; ``driver``,
    ``compute``, ``model``: the DRA driver of the GPUs, their shareable
    capacity and their model attribute."""

    device_class: str = GPU_DRIVER
    driver: str = GPU_DRIVER
    compute: str = GPU_COMPUTE
    model: str = GPU_MODEL


def pod_shape(pod, claims, device_class: str, compute: str) -> PodShape:
    """The pod's CPU (non-zero, as scoring counts it) and GPU request from its
    ``claims``: ``gpu_count`` = the devices its requests of ``device_class``
    ask for, ``milli_gpu`` = each one's ``compute`` request (1000 without one)."""
    count = 0
    milli = 0
    for claim in claims:
        for request in claim.spec.devices.requests:
            exactly = request.exactly
            if exactly is None or exactly.device_class_name != device_class:
                continue
            count += exactly.count
            per_gpu = MILLI
            if exactly.capacity is not None and compute in exactly.capacity.requests:
                per_gpu = int(Fraction(exactly.capacity.requests[compute]) * MILLI)
            milli = max(milli, per_gpu)
    return PodShape(non_zero_requests(pod)[0], count, milli if count else 0)


class NodeView:
    """The scored nodes (NodeTable ``rows`` of ``table``) as arrays, each
    taken on first use: ``left``/``capacity`` ((rows, G) milli-GPU),
    ``count``, ``cpu_left``/``cpu_capacity`` (milli-CPU); ``gpus`` is the
    :class:`NodeGpus` they come from."""

    __slots__ = ("rows", "gpus", "table", "_left", "_capacity", "_count", "_cpu_capacity", "_cpu_left")

    def __init__(self, gpus: NodeGpus, table, rows: np.ndarray):
        self.rows = rows
        self.gpus = gpus
        self.table = table
        self._left = self._capacity = self._count = self._cpu_capacity = self._cpu_left = None

    @property
    def left(self) -> np.ndarray:
        if self._left is None:
            self._left = self.gpus.left[self.rows]
        return self._left

    @property
    def capacity(self) -> np.ndarray:
        if self._capacity is None:
            self._capacity = self.gpus.capacity[self.rows]
        return self._capacity

    @property
    def count(self) -> np.ndarray:
        if self._count is None:
            self._count = self.gpus.count[self.rows]
        return self._count

    @property
    def cpu_capacity(self) -> np.ndarray:
        if self._cpu_capacity is None:
            self._cpu_capacity = self.table.allocatable("cpu")[self.rows]
        return self._cpu_capacity

    @property
    def cpu_left(self) -> np.ndarray:
        if self._cpu_left is None:
            self._cpu_left = self.cpu_capacity - self.table.requested("cpu")[self.rows]
        return self._cpu_left

    @property
    def total_left(self) -> np.ndarray:
        return self.left.sum(axis=1)


class GpuScore:
    """Base class of the policies: PreFilter reads the pod's GPU request and
    registers the GPU choice; subclasses implement :meth:`scores`.

    ``gpu_selection``: how a GPU is chosen for a pod that shares one: "best"
    (the GPU with the least compute left that fits, lowest index on ties) or
    "random" (any that fits).  FGD overrides :meth:`device_order`.
    """

    args_class = GpuArgs
    gpu_selection: ClassVar[str] = "best"

    def __init__(self, args: GpuArgs, handle):
        self.args = args
        self.handle = handle
        self.gpus = NodeGpus(handle.dra, args.driver, args.compute, args.model)
        self.state_key = f"kubesched-fgd/{self.name}"

    # --- hooks ---------------------------------------------------------------------------

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        try:
            claims = [claim for _, claim in pod_claims(pod, self.handle.dra.get_claim)]
        except ClaimNameError:
            claims = []  # DynamicResources reports it
        shape = pod_shape(pod, claims, self.args.device_class, self.args.compute)
        state.write(self.state_key, shape)
        if shape.shares_gpu:
            prefer_devices(state, self.device_order(shape))
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        table = self.handle.snapshot.table
        row = self.handle.snapshot.index[node_info.name]
        return int(self.score_batch(state, pod, table, np.array([row], dtype=np.int64))[0])

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        self.gpus.sync(table)
        return self.scores(state.read(self.state_key), NodeView(self.gpus, table, np.asarray(rows)), state)

    # --- for subclasses ------------------------------------------------------------------

    def scores(self, shape: PodShape, nodes: NodeView, state) -> np.ndarray:
        """int64 scores of ``nodes`` for a pod of ``shape``."""
        raise NotImplementedError

    def device_order(self, shape: PodShape):
        """``key(DeviceID)`` (ascending) choosing the GPU a sharing pod gets."""
        gpus = self.gpus
        if self.gpu_selection == "random":
            rng = self.handle.rng
            return lambda device: rng.random()

        def least_left_first(device) -> Any:
            gpus.sync(self.handle.snapshot.table)
            slot = gpus.slot.get(device)
            return gpus.left[slot] if slot is not None else MAX_SPEC_GPU + 1

        return least_left_first


def min_max_normalize(scores: np.ndarray) -> np.ndarray:
    """The simulator's NormalizeScore: lowest -> 0, highest -> 100 (integer
    arithmetic); all 0 when every node scores the same."""
    if not len(scores):
        return scores
    highest, lowest = int(scores.max()), int(scores.min())
    if highest == lowest:
        return np.zeros_like(scores)
    return (scores - lowest) * MAX_NODE_SCORE // (highest - lowest)
