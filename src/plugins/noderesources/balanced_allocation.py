"""NodeResourcesBalancedAllocation: prefer nodes whose resources stay evenly used
(upstream plugins/noderesources/balanced_allocation.go).

Score = (1 - standard deviation of requested/allocatable over the configured
resources) x 100, with the pod counted on the node and real (not non-zero)
requests; best-effort pods (no requests of those resources) are skipped.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from attrs import frozen

from kubesched.core.framework.hookspecs import hookimpl
from kubesched.core.framework.resources import pod_requests
from kubesched.core.framework.snapshot import NodeTable
from kubesched.core.framework.status import Status

from .resource_allocation import DEFAULT_RESOURCES, ResourceSpec, allocatable_and_requested

MAX_NODE_SCORE = 100


@frozen
class NodeResourcesBalancedAllocationArgs:
    STRICT: ClassVar[bool] = True
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"
    args_class = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs, handle):
        self.resources = args.resources

    @hookimpl
    def pre_score(self, state, pod, nodes):
        requests = pod_requests(pod)
        if not any(requests.get(spec.name, 0) for spec in self.resources):
            return Status.skip()
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        return int(self.score_batch(state, pod, NodeTable([node_info]), np.zeros(1, dtype=np.int64))[0])

    @hookimpl
    def score_batch(self, state, pod, table, rows):
        allocs, requests, _ = allocatable_and_requested(table, rows, self.resources, pod, use_requested=True)
        n = len(rows)
        fractions = []
        present = []
        for alloc, requested in zip(allocs, requests):
            has = alloc != 0
            fractions.append(np.where(has, np.minimum(requested / np.maximum(alloc, 1), 1.0), 0.0))
            present.append(has)
        if not fractions:
            return np.full(n, MAX_NODE_SCORE, dtype=np.int64)
        f = np.vstack(fractions)
        p = np.vstack(present)
        count = p.sum(axis=0)
        mean = np.where(count > 0, f.sum(axis=0) / np.maximum(count, 1), 0.0)
        variance = np.where(p, (f - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1)
        std = np.sqrt(variance)
        if len(fractions) >= 2:
            # upstream computes the two-resource case as |f1 - f2| / 2
            first = np.argmax(p, axis=0)
            second = len(fractions) - 1 - np.argmax(p[::-1], axis=0)
            cols = np.arange(n)
            two = np.abs(f[first, cols] - f[second, cols]) / 2
            std = np.where(count == 2, two, std)
        std = np.where(count <= 1, 0.0, std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
