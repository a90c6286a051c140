"""NodeDeclaredFeatures: keep a pod off nodes that lack a feature it needs (KEP-5328; upstream
plugins/nodedeclaredfeatures).

PreFilter infers, from the pod's spec, the node features it needs
(:mod:`kubesched.core.api.node_features`: e.g. a container restart rule that
restarts all containers); a pod that needs none skips the plugin.  Filter
rejects a node whose ``status.declaredFeatures`` does not hold them all,
UnschedulableAndUnresolvable with upstream's reason "node(s) didn't match
Pod's required features" (so preemption does not try).  A node added, or
whose declared features changed, may help; a pod update that changes what it
needs is handled as any pod update.
"""

from __future__ import annotations

from kubesched import (
    FEATURES_SIGNER,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    hookimpl,
)
from kubesched.core.api.node_features import Version, default_registry, parse_version
from kubesched.core.api.resource_helpers import is_pod_resize_deferred

REASON = "node(s) didn't match Pod's required features"
STATE_KEY = "PreFilterNodeDeclaredFeatures"
GATE = "NodeDeclaredFeatures"


class NodeDeclaredFeatures:
    """PreFilter + Filter (batch too) on ``Node.status.declaredFeatures``; args: none.  Does nothing while
    the NodeDeclaredFeatures gate is off (read each cycle: a Node declaring features may switch it on).
    Features are inferred for the scheduler's emulated version."""

    name = "NodeDeclaredFeatures"

    def __init__(self, args, handle):
        self.registry = default_registry()
        self.features = handle.features
        self.version: Version = parse_version(handle.features.emulated_version)

    def required(self, pod) -> frozenset[str]:
        """The features ``pod`` needs its node to declare: none while the gate is off, and none for a pod
        queued for its deferred resize (InPlacePodVerticalScalingSchedulerPreemption: it stays on its node)."""
        if not self.features.enabled(GATE):
            return frozenset()
        if self.features.enabled("InPlacePodVerticalScalingSchedulerPreemption") and is_pod_resize_deferred(pod):
            return frozenset()
        return self.registry.infer_for_pod_scheduling(pod.spec, self.version)

    @hookimpl
    def sign_pod(self, pod):
        """Filter reads the features the pod needs."""
        return [(FEATURES_SIGNER, tuple(sorted(self.required(pod))))]

    @hookimpl
    def pre_filter(self, state, pod, nodes):
        needed = self.required(pod)
        if not needed:
            return Status.skip()
        state.write(STATE_KEY, needed)
        return None

    def _needed(self, state, pod) -> frozenset[str]:
        """What PreFilter wrote; computed here for a Filter called without it (upstream reports an error then,
        kubesched's explain and what-if paths call Filter alone)."""
        needed = state.get(STATE_KEY)
        return self.required(pod) if needed is None else needed

    @hookimpl
    def filter(self, state, pod, node_info):
        if self._needed(state, pod) <= frozenset(node_info.require_node().status.declared_features):
            return None
        return Status.unresolvable(REASON)

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        needed = self._needed(state, pod)
        key = "declared-features/" + ",".join(sorted(needed))
        return table.column(key, lambda info: needed <= frozenset(info.require_node().status.declared_features),
                            bool, evictable=True, of_node=True)[rows]

    @hookimpl
    def events_to_register(self):
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                                     self._after_node_change)]

    @staticmethod
    def _after_node_change(pod, old, new):
        """Only a new node, or one whose declared features changed, may help."""
        if old is not None and old.status.declared_features == new.status.declared_features:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
