"""TopologyPlacementGenerator: one placement per topology domain of a PodGroup's constraint
(upstream plugins/topologyaware, KEP-5732).

A PodGroup with ``schedulingConstraints.topology: [{key: K}]`` must have all
its pods on nodes that share one value of node label K.  The placements are
the parent placement's nodes partitioned by their value of K (nodes without
the label take no part); members already running or assumed lock the group
to their domain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched import Code, Placement, Status, hookimpl

NAME = "TopologyPlacementGenerator"


class TopologyPlacementGenerator:
    """PlacementGenerate: no constraint -> the parent placement; else one
    placement per value of the key (named by the value), only the locked one
    when members are placed; Error "more than 1 domain found for pod group"
    when placed members span several domains or sit on a node without the
    label."""

    name = NAME

    def __init__(self, args: Any, handle: Any):
        self.handle = handle

    @hookimpl
    def placement_generate(self, state, group, parent):
        key = group.pod_group.topology_key
        if key is None or not self.handle.features.enabled("TopologyAwareWorkloadScheduling"):
            return [parent]
        snapshot = self.handle.snapshot
        table = snapshot.table
        ids = table.domain_ids(key)
        values = table.domain_values(key)
        locked: set[int] = set()
        for node in self.handle.pod_groups.state(group.key).scheduled_nodes():
            row = snapshot.index.get(node)
            locked.add(int(ids[row]) if row is not None else -1)
        if len(locked) > 1 or -1 in locked:
            return Status(Code.ERROR, ("more than 1 domain found for pod group",))
        # the parent's rows grouped by domain in one stable sort (each domain's rows keep the parent's order)
        parent_ids = ids[parent.rows]
        order = np.argsort(parent_ids, kind="stable")
        domains, starts = np.unique(parent_ids[order], return_index=True)
        ends = [*starts[1:].tolist(), len(order)]
        rows_of = {domain: parent.rows[order[start:end]]
                   for domain, start, end in zip(domains.tolist(), starts.tolist(), ends) if domain != -1}
        return [Placement(values[domain], rows_of[domain]) for domain in sorted(rows_of, key=lambda d: values[d])
                if not locked or domain in locked]
