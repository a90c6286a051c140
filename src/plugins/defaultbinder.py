"""DefaultBinder: binds a pod through the API (POST pods/binding), upstream plugins/defaultbinder."""

from __future__ import annotations

from kubesched import Status, hookimpl
from kubesched.core.cluster.client import ApiError


class DefaultBinder:
    """The Bind plugin of the default profile: asks the cluster to set the
    pod's ``spec.nodeName``.  An API error fails the binding cycle."""

    name = "DefaultBinder"

    def __init__(self, args, handle):
        self.cluster = handle.cluster

    @hookimpl
    def bind(self, state, pod, node_name):
        meta = pod.metadata
        try:
            self.cluster.bind(meta.namespace, meta.name, meta.uid, node_name)
        except ApiError as err:
            return Status.as_error(err)
        return None
