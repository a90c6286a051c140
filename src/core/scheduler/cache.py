"""The scheduler cache: NodeInfo per node, assumed pods, and the cycle snapshot.

Mirrors upstream's ``internal/cache``: bound pods arrive from the informer;
a pod the scheduler has placed is *assumed* (counted on its node before the
API says so) until the informer confirms it, or forgotten when binding fails;
an assumed pod whose binding finished but is never confirmed expires after
``ttl`` seconds (0 = never, upstream's current default).
"""

from __future__ import annotations

from typing import Any

from ..api.core_v1 import Node, Pod
from ..api.resource_helpers import status_counts
from ..clock import Clock
from ..framework.nodeinfo import NodeInfo, PodInfo
from ..framework.snapshot import Snapshot


class CacheError(RuntimeError):
    """An inconsistent cache operation (assuming a pod twice, forgetting one never assumed)."""


class _PodState:
    __slots__ = ("pod", "node_name", "assumed", "deadline")

    def __init__(self, pod: Pod, assumed: bool, node_name: str | None = None):
        self.pod = pod
        self.node_name = pod.spec.node_name if node_name is None else node_name
        self.assumed = assumed
        self.deadline: float | None = None


class Cache:
    """Nodes and the pods on them.  Only the scheduler loop thread touches it."""

    def __init__(self, clock: Clock, ttl: float = 0.0):
        self.clock = clock
        self.ttl = ttl
        self.nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._dirty: set[str] = set()
        self._membership_changed = True

    # --- pods ----------------------------------------------------------------------------

    def is_assumed(self, pod: Pod) -> bool:
        """Whether ``pod`` (by UID) is assumed and not yet confirmed by the informer (upstream ``IsAssumedPod``)."""
        state = self._pods.get(pod.metadata.uid)
        return state is not None and state.assumed

    def pod_state(self, pod: Pod) -> Pod | None:
        """The pod as the cache holds it (bound or assumed), or None."""
        state = self._pods.get(pod.metadata.uid)
        return state.pod if state is not None else None

    def assumed_node(self, pod: Pod) -> str | None:
        """The node ``pod`` is assumed on, or None when it is not assumed."""
        state = self._pods.get(pod.metadata.uid)
        return state.node_name if state is not None and state.assumed else None

    def assumed_pods(self) -> list[Pod]:
        """The pods assumed and not yet confirmed, as assumed."""
        return [s.pod for s in self._pods.values() if s.assumed]

    def pod_count(self) -> int:
        """How many pods the cache holds, bound and assumed (upstream ``PodCount``)."""
        return len(self._pods)

    def _node(self, name: str) -> NodeInfo:
        info = self.nodes.get(name)
        if info is None:
            info = self.nodes[name] = NodeInfo()
        return info

    def _add_to_node(self, info: PodInfo) -> None:
        name = info.pod.spec.node_name
        self._node(name).add_pod(info)
        self._dirty.add(name)

    def _remove_from_node(self, pod: Pod, node_name: str) -> None:
        info = self.nodes.get(node_name)
        if info is None:
            return
        info.remove_pod(pod)
        self._dirty.add(node_name)
        if info.node is None and not info.pods:
            del self.nodes[node_name]

    def assume_pod(self, pod: Pod, pod_info: PodInfo | None = None) -> None:
        """Count ``pod`` (with ``spec.node_name`` set) on its node before binding.
        Raises :class:`CacheError` when it is already in the cache."""
        uid = pod.metadata.uid
        node_name = pod.spec.node_name
        info = PodInfo(pod) if pod_info is None else pod_info.with_pod(pod)
        state = _PodState(pod, True, node_name)
        if self._pods.setdefault(uid, state) is not state:  # one lookup: the check and the entry
            raise CacheError(f"pod {pod.key} (uid {uid}) is in the cache, so can't be assumed")
        self._add_to_node(info)

    def finish_binding(self, pod: Pod) -> None:
        """Binding was sent; start the expiry clock of the assumed pod (when ttl > 0)."""
        state = self._pods.get(pod.metadata.uid)
        if state is not None and state.assumed and self.ttl > 0:
            state.deadline = self.clock.now() + self.ttl
            self.clock.call_at(state.deadline, self.cleanup_expired)

    def forget_pod(self, pod: Pod) -> None:
        """Undo :meth:`assume_pod`.  Raises :class:`CacheError` for a pod that is
        not assumed (or assumed on another node)."""
        uid = pod.metadata.uid
        state = self._pods.get(uid)
        if state is None:
            return
        if not state.assumed:
            raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
        node_name = state.node_name
        if pod.spec.node_name and node_name != pod.spec.node_name:
            raise CacheError(f"pod {pod.key} was assumed on {node_name} but assigned to {pod.spec.node_name}")
        del self._pods[uid]
        self._remove_from_node(state.pod, node_name)

    def add_pod(self, pod: Pod) -> None:
        """A bound pod arrived from the informer: confirm the assumed copy or add it."""
        uid = pod.metadata.uid
        state = self._pods.get(uid)
        if state is not None and state.assumed:
            if state.node_name != pod.spec.node_name:
                self._remove_from_node(state.pod, state.node_name)
                self._add_to_node(PodInfo(pod))
            else:
                self._replace_on_node(state.pod, pod)
            state.pod, state.node_name, state.assumed, state.deadline = pod, pod.spec.node_name, False, None
            return
        if state is not None:
            self.update_pod(state.pod, pod)
            return
        self._add_to_node(PodInfo(pod))
        self._pods[uid] = _PodState(pod, assumed=False)

    def _replace_on_node(self, old: Pod, new: Pod) -> None:
        info = self.nodes.get(old.spec.node_name)
        if info is None:
            self._add_to_node(PodInfo(new))
            return
        # a binding confirmed or a status written (the kubelet's Running): what the pod counts is unchanged
        info.replace_pod(old, new, _same_footprint(old, new))
        self._dirty.add(new.spec.node_name)

    def update_pod(self, old: Pod, new: Pod) -> None:
        """The informer's update of a pod to ``new``: replace the cached pod, moving it between nodes if its node
        changed; it counts as confirmed (upstream ``UpdatePod``)."""
        state = self._pods.get(new.metadata.uid)
        if state is None:
            self.add_pod(new)
            return
        if state.node_name != new.spec.node_name:
            self._remove_from_node(state.pod, state.node_name)
            self._add_to_node(PodInfo(new))
        else:
            self._replace_on_node(state.pod, new)
        state.pod, state.node_name, state.assumed = new, new.spec.node_name, False

    def remove_pod(self, pod: Pod) -> None:
        """The informer deleted ``pod``: take it off its node (unknown pods are ignored) (upstream ``RemovePod``)."""
        state = self._pods.pop(pod.metadata.uid, None)
        if state is not None:
            self._remove_from_node(state.pod, state.node_name)

    def cleanup_expired(self) -> list[Pod]:
        """Forget assumed pods whose binding finished more than ``ttl`` ago; returns them."""
        now = self.clock.now()
        expired = [s.pod for s in self._pods.values() if s.assumed and s.deadline is not None and s.deadline <= now]
        for pod in expired:
            self.forget_pod(pod)
        return expired

    # --- nodes ---------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Set the Node on its NodeInfo, creating one if needed (upstream ``AddNode``)."""
        self._node(node.metadata.name).set_node(node)
        self._membership_changed = True

    def update_node(self, old: Node, new: Node) -> None:
        """Replace the Node on its NodeInfo (upstream ``UpdateNode``)."""
        self._node(new.metadata.name).set_node(new)
        self._dirty.add(new.metadata.name)

    def remove_node(self, node: Node) -> None:
        """Remove the node; while pods still point at it, its NodeInfo stays without a Node (upstream
        ``RemoveNode``)."""
        info = self.nodes.get(node.metadata.name)
        if info is None:
            return
        if info.pods:
            info.node = None  # pods still reference it until they are deleted, as upstream
        else:
            del self.nodes[node.metadata.name]
        self._membership_changed = True

    def node_count(self) -> int:
        """How many nodes the cache holds (entries kept only for pods excluded) (upstream ``NodeCount``)."""
        return sum(1 for info in self.nodes.values() if info.node is not None)

    # --- snapshot ------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date: rebuild it when nodes came or went,
        otherwise refresh the rows of the nodes that changed."""
        if self._membership_changed:
            snapshot.rebuild([info for info in self.nodes.values() if info.node is not None])
            self._membership_changed = False
        else:
            snapshot.refresh(self._dirty)
        self._dirty.clear()

    def dump(self) -> dict[str, Any]:
        """Nodes -> names of their pods (assumed ones marked with ``*``), for debugging."""
        return {
            name: [p.key + ("*" if self.is_assumed(p.pod) else "") for p in info.pods]
            for name, info in self.nodes.items()
        }


def _same_footprint(old: Pod, new: Pod) -> bool:
    """Whether ``new`` counts on its node exactly what ``old`` does (its :class:`PodInfo` would be equal): the same
    namespace and spec, and none of the status fields ``pod_requests`` reads changed (the conditions only count
    for a pod whose status reports resources: a resize found infeasible)."""
    before, after = old.status, new.status
    if old.metadata.namespace != new.metadata.namespace or (old.spec is not new.spec and old.spec != new.spec):
        return False
    if not (status_counts(before) or status_counts(after)):
        return True
    return (before.container_statuses == after.container_statuses
            and before.init_container_statuses == after.init_container_statuses
            and before.allocated_resources == after.allocated_resources and before.resources == after.resources
            and before.conditions == after.conditions)
