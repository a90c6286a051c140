"""NodeResourcesBalancedAllocation: prefer nodes whose resources stay evenly used
(upstream plugins/noderesources/balanced_allocation.go).

Score = (1 - standard deviation of requested/allocatable over the configured
resources) x 100, with the pod counted on the node and real (not non-zero)
requests; best-effort pods (no requests of those resources) are skipped.
"""

from __future__ import annotations

import numpy as np
from attrs import field, frozen

from kubesched import MAX_NODE_SCORE, NATIVE_RESOURCES, NodeTable, Status, hookimpl, resources_fragment
from kubesched.core.api.convert import ManifestError

from .resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    RowReader,
    allocatable_and_requested,
    device_counts,
    dra_manager,
    kept_scores,
    resource_names,
    resources_or_default,
    scoring_requests,
)


@frozen
class NodeResourcesBalancedAllocationArgs:
    """``resources``: the resources to balance (empty means cpu and memory); names must be unique and every weight 1,
    else ManifestError (upstream NodeResourcesBalancedAllocationArgs and its validation)."""

    resources: tuple[ResourceSpec, ...] = field(default=DEFAULT_RESOURCES, converter=resources_or_default)

    def __attrs_post_init__(self):
        # upstream ValidateNodeResourcesBalancedAllocationArgs: unique names, every weight 1
        seen = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                raise ManifestError(f"resources[{i}].name", f'Duplicate value: "{spec.name}"')
            seen.add(spec.name)
            if spec.weight != 1:
                raise ManifestError(f"resources[{i}].weight", "must be 1")


#: CycleState key of what PreScore computed: the pod's requests (upstream ``balancedAllocationPreScoreState``).
STATE_KEY = "PreScoreNodeResourcesBalancedAllocation"


class NodeResourcesBalancedAllocation:
    """PreScore (Skip for pods requesting none of the resources) and Score: 0-100, higher where the
    requested/allocatable fractions of the configured resources stay closest together with the pod placed (upstream
    plugin NodeResourcesBalancedAllocation)."""

    name = "NodeResourcesBalancedAllocation"
    args_class = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs, handle):
        self.resources = args.resources
        self._row = RowReader(resource_names(self.resources), use_requested=True)
        self.handle = handle
        #: configured extended resources a DeviceClass might serve (DRAExtendedResource)
        self._extended = [spec.name for spec in self.resources if spec.name not in NATIVE_RESOURCES]

    def _requests(self, state, pod) -> dict[str, int] | None:
        """The pod's requests (scheduler units), or None when it asks for none of the configured resources."""
        requests = scoring_requests(state.pod_info_of(pod), use_requested=True)
        return requests if any(requests.get(spec.name, 0) for spec in self.resources) else None

    @hookimpl
    def sign_pod(self, pod):
        """Score reads what the pod requests."""
        fragment = resources_fragment(pod, self.handle.features)
        return fragment if isinstance(fragment, Status) else [fragment]

    @hookimpl
    def pre_score(self, state, pod, nodes):
        requests = self._requests(state, pod)
        if requests is None:
            return Status.skip()
        state.write(STATE_KEY, requests)
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        return int(self.score_batch(state, pod, NodeTable([node_info]), np.zeros(1, dtype=np.int64))[0])

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        requests = state.get(STATE_KEY)
        if requests is None:  # PreScore is disabled in the profile
            requests = self._requests(state, pod)
            if requests is None:  # upstream scores a pod that asks for none of the resources 0
                return np.zeros(len(rows), dtype=np.int64)
        devices = None
        dra = dra_manager(self.handle) if self._extended else None
        if dra is not None:
            backed = dra.device_backed(self._extended)
            devices = device_counts(dra, backed, table) if backed else None
        if devices is not None:  # devices' allocations are not the table's: scored afresh
            return self._scores(table, rows, requests, devices)
        score_row = (lambda row: self.score_row(state, pod, table, row)) if len(self.resources) == 2 else None
        return kept_scores(self, table, rows, requests, self._row.names,
                           lambda some: self._scores(table, some, requests, None), score_row)

    @hookimpl
    def score_row(self, state, pod, table, row):
        """:meth:`score_batch` of the one ``row`` for two resources that the node both has, in Python arithmetic
        on float64 values (the same answer); None otherwise (not two resources, a resource the node lacks,
        device-backed extended resources, values too large for it: the array path decides)."""
        if len(self.resources) != 2:
            return None
        if self._extended:
            dra = dra_manager(self.handle)
            if dra is not None and dra.device_backed(self._extended):
                return None
        requests = state.get(STATE_KEY)
        if requests is None:  # PreScore is disabled in the profile
            requests = self._requests(state, pod)
            if requests is None:  # upstream scores a pod that asks for none of the resources 0
                return 0
        counted = self._row.read(table, row, requests)
        if counted is None:
            return None
        (alloc0, alloc1), (asked0, asked1) = counted
        if not (alloc0 and alloc1):
            return None
        std = abs(min(float(asked0) / float(alloc0), 1.0) - min(float(asked1) / float(alloc1), 1.0)) / 2
        return int((1 - std) * MAX_NODE_SCORE)

    def _scores(self, table: NodeTable, rows: np.ndarray, requests: dict[str, int], devices) -> np.ndarray:
        """The scores of ``rows`` (int64) for a pod of ``requests`` (``devices``: the device counts of
        device-backed extended resources, or None)."""
        alloc, requested, _ = allocatable_and_requested(table, rows, self.resources, requests, use_requested=True,
                                                        devices=devices)
        resources, n = alloc.shape
        if not resources:
            return np.full(n, MAX_NODE_SCORE, dtype=np.int64)
        # (resources, nodes): each resource's requested fraction, where the node has it
        if resources == 2 and np.count_nonzero(alloc) == alloc.size:  # the default (cpu, memory) on nodes that
            f = requested / alloc                                       # have both: |f1 - f2| / 2
            np.minimum(f, 1.0, out=f)
            std = np.subtract(f[0], f[1])
            np.abs(std, out=std)
            std /= 2
            return _score(std)
        p = alloc != 0
        f = np.where(p, np.minimum(requested / np.maximum(alloc, 1), 1.0), 0.0)
        if resources == 2:  # |f1 - f2| / 2 where both count, else 0
            return _score(np.where(p[0] & p[1], np.abs(f[0] - f[1]) / 2, 0.0))
        count = p.sum(axis=0)
        mean = np.where(count > 0, f.sum(axis=0) / np.maximum(count, 1), 0.0)
        variance = np.where(p, (f - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1)
        std = np.sqrt(variance)
        if resources >= 2:
            # upstream computes the two-resource case as |f1 - f2| / 2
            first = np.argmax(p, axis=0)
            second = resources - 1 - np.argmax(p[::-1], axis=0)
            cols = np.arange(n)
            two = np.abs(f[first, cols] - f[second, cols]) / 2
            std = np.where(count == 2, two, std)
        std = np.where(count <= 1, 0.0, std)
        return _score(std)


def _score(std: np.ndarray) -> np.ndarray:
    """(1 - ``std``) x MAX_NODE_SCORE, truncated to int64 (``std`` is written into)."""
    np.subtract(1, std, out=std)
    std *= MAX_NODE_SCORE
    return std.astype(np.int64)
