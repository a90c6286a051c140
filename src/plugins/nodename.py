"""NodeName: a pod that names its node (``spec.nodeName``) fits only there (upstream plugins/nodename)."""

from __future__ import annotations

import numpy as np

from kubesched import NODE_NAME_SIGNER, Status, hookimpl

REASON = "node(s) didn't match the requested node name"


class NodeName:
    """Filter (and filter_batch): a pod with ``spec.nodeName`` fits only the node of that name, else
    UnschedulableAndUnresolvable "node(s) didn't match the requested node name" (upstream plugin NodeName)."""

    name = "NodeName"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads spec.nodeName."""
        return [(NODE_NAME_SIGNER, pod.spec.node_name)]

    @hookimpl
    def filter(self, state, pod, node_info):
        wanted = pod.spec.node_name
        if wanted and wanted != node_info.name:
            return Status.unresolvable(REASON)
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        wanted = pod.spec.node_name
        if not wanted:
            return np.ones(len(rows), dtype=bool)
        return table.names[np.asarray(rows, dtype=np.intp)] == wanted
