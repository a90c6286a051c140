"""PodInfo and NodeInfo: the scheduler's per-pod and per-node aggregates.

Mirrors upstream's ``framework.PodInfo``/``NodeInfo``: a NodeInfo holds the
node, the pods on it (bound and assumed), the sum of their requests, the
non-zero requests scoring uses, the host ports in use, and a generation that
changes on every modification (the snapshot copies only what changed).
"""

from __future__ import annotations

import itertools
from typing import Iterable

from ..api.core_v1 import Node, Pod
from .affinity import AffinityTerms, has_pod_affinity, has_required_anti_affinity
from .resources import non_zero_requests, pod_requests

_generation = itertools.count(1)
_new_pod_info = object.__new__


def next_generation() -> int:
    """A process-wide, strictly increasing generation number (upstream ``nextGeneration``)."""
    return next(_generation)


def host_ports(pod: Pod) -> tuple[tuple[str, str, int], ...]:
    """The (host IP, protocol, host port) triples the pod's containers claim on
    their node (IP defaults to 0.0.0.0, protocol to TCP; ports without a
    hostPort are left out), as upstream's NodePorts ``getContainerPorts``."""
    return tuple((port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)
                 for container in pod.spec.containers for port in container.ports if port.host_port > 0)


class PodInfo:
    """A pod plus what the scheduler derives from it once: ``requests`` (dict in
    scheduler units), ``non_zero_cpu`` (milli-CPU), ``non_zero_memory`` (bytes),
    ``host_ports`` ((ip, protocol, port) triples), ``with_affinity`` (it has pod
    affinity or anti-affinity: :attr:`NodeInfo.pods_with_affinity` lists it),
    ``with_required_anti_affinity`` (it has required anti-affinity terms);
    :attr:`affinity_terms` its inter-pod affinity terms, parsed on first use."""

    __slots__ = ("pod", "requests", "non_zero_cpu", "non_zero_memory", "host_ports", "with_affinity",
                 "with_required_anti_affinity", "_affinity_terms")

    def __init__(self, pod: Pod):
        self.pod = pod
        self.requests = pod_requests(pod)
        self.non_zero_cpu, self.non_zero_memory = non_zero_requests(pod)
        self.host_ports = host_ports(pod)
        self.with_affinity = has_pod_affinity(pod)
        self.with_required_anti_affinity = self.with_affinity and has_required_anti_affinity(pod)
        self._affinity_terms: AffinityTerms | None = None

    @property
    def affinity_terms(self) -> AffinityTerms:
        terms = self._affinity_terms
        if terms is None:
            terms = self._affinity_terms = AffinityTerms.of(self.pod)
        return terms

    def with_pod(self, pod: Pod) -> "PodInfo":
        """This info for a newer copy of the same pod whose spec did not change but for
        ``spec.nodeName`` (and whose status reports no other resources)."""
        copy = _new_pod_info(PodInfo)
        copy.pod = pod
        copy.requests = self.requests
        copy.non_zero_cpu = self.non_zero_cpu
        copy.non_zero_memory = self.non_zero_memory
        copy.host_ports = self.host_ports
        copy.with_affinity = self.with_affinity
        copy.with_required_anti_affinity = self.with_required_anti_affinity
        copy._affinity_terms = self._affinity_terms
        return copy

    @property
    def key(self) -> str:
        return f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"


def ports_conflict(used: Iterable[tuple[str, str, int]], wanted: Iterable[tuple[str, str, int]]) -> bool:
    """True when a wanted host port is taken: same protocol and port, and the
    same IP or either side on 0.0.0.0 (upstream ``HostPortInfo.CheckConflict``)."""
    used = list(used)
    for ip, protocol, port in wanted:
        for used_ip, used_protocol, used_port in used:
            if port == used_port and protocol == used_protocol and (
                ip == used_ip or ip == "0.0.0.0" or used_ip == "0.0.0.0"
            ):
                return True
    return False


def _pop_by_uid(infos: list[PodInfo], uid: str) -> PodInfo | None:
    """Remove and return the PodInfo of pod ``uid`` from ``infos`` (searched from
    the end: the pod removed is most often the one added last, as when an
    assumed pod's binding is confirmed), or None."""
    for index in range(len(infos) - 1, -1, -1):
        if infos[index].pod.metadata.uid == uid:
            return infos.pop(index)
    return None


class NodeInfo:
    """Node-level aggregate information.

    ``requested`` sums the pods' requests (scheduler units); ``non_zero_cpu``
    / ``non_zero_memory`` sum their non-zero requests; ``used_ports`` lists the
    host ports in use; ``allocatable`` is the node's allocatable resources;
    ``pods_with_affinity`` / ``pods_with_required_anti_affinity`` the pods with
    pod (anti-)affinity / with required anti-affinity (so that a cluster
    without them costs InterPodAffinity nothing).  Mutated only by the
    scheduler cache (and on clones, by dry runs).
    """

    __slots__ = ("node", "pods", "requested", "non_zero_cpu", "non_zero_memory", "used_ports", "generation",
                 "pods_with_affinity", "pods_with_required_anti_affinity")

    def __init__(self, node: Node | None = None, pods: Iterable[Pod | PodInfo] = ()):
        self.node = node
        self.pods: list[PodInfo] = []
        self.requested: dict[str, int] = {}
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.used_ports: list[tuple[str, str, int]] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.generation = next_generation()
        for pod in pods:
            self.add_pod(pod)

    @property
    def name(self) -> str:
        return self.node.metadata.name if self.node is not None else ""

    @property
    def allocatable(self) -> dict[str, int]:
        return self.node.allocatable if self.node is not None else {}

    @property
    def labels(self) -> dict[str, str]:
        """The node's labels ({} while the cache knows only pods for it)."""
        return self.node.metadata.labels if self.node is not None else {}

    def require_node(self) -> Node:
        """The Node.  Raises :class:`LookupError` ("node not found", upstream's
        message) for an entry the cache holds only for pods; snapshot entries
        always have their Node."""
        if self.node is None:
            raise LookupError("node not found")
        return self.node

    def set_node(self, node: Node) -> None:
        """Replace the Node object and bump the generation (upstream ``NodeInfo.SetNode``)."""
        self.node = node
        self.generation = next_generation()

    def add_pod(self, pod: Pod | PodInfo) -> PodInfo:
        """Account for a pod on this node; returns its PodInfo."""
        info = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        self.pods.append(info)
        requested = self.requested
        for name, amount in info.requests.items():
            requested[name] = requested.get(name, 0) + amount
        self.non_zero_cpu += info.non_zero_cpu
        self.non_zero_memory += info.non_zero_memory
        if info.host_ports:
            self.used_ports.extend(info.host_ports)
        if info.with_affinity:
            self.pods_with_affinity.append(info)
            if info.with_required_anti_affinity:
                self.pods_with_required_anti_affinity.append(info)
        self.generation = next(_generation)
        return info

    def remove_pod(self, pod: Pod) -> bool:
        """Stop accounting for the pod with ``pod``'s UID; False if it was not here."""
        pods = self.pods
        # the pod added last, as held (an assumed pod forgotten), else searched by UID
        info = pods.pop() if pods and pods[-1].pod is pod else _pop_by_uid(pods, pod.metadata.uid)
        if info is None:
            return False
        if info.with_affinity:
            uid = pod.metadata.uid
            _pop_by_uid(self.pods_with_affinity, uid)
            if info.with_required_anti_affinity:
                _pop_by_uid(self.pods_with_required_anti_affinity, uid)
        requested = self.requested
        for name, amount in info.requests.items():
            requested[name] = requested.get(name, 0) - amount
        self.non_zero_cpu -= info.non_zero_cpu
        self.non_zero_memory -= info.non_zero_memory
        for port in info.host_ports:
            self.used_ports.remove(port)
        self.generation = next(_generation)
        return True

    def replace_pod(self, old: Pod, new: Pod, counts_same: bool) -> PodInfo:
        """Count ``new``, a newer copy of ``old`` (same UID), instead of it, as :meth:`remove_pod` then
        :meth:`add_pod` would (the pod goes to the end of :attr:`pods`, a new generation); returns its PodInfo.
        With ``counts_same`` (``new`` counts what ``old`` does: the same spec, no resources in its status) the
        PodInfo held for ``old`` is kept for ``new`` (:meth:`PodInfo.with_pod`) and the sums are left as they
        are, in one pass over the pods."""
        pods = self.pods
        if counts_same:
            uid = old.metadata.uid
            for index in range(len(pods) - 1, -1, -1):
                held = pods[index]
                if held.pod is old:
                    info = held.with_pod(new)
                    del pods[index]
                    pods.append(info)
                    if self.pods_with_affinity and _pop_by_uid(self.pods_with_affinity, uid) is not None:
                        self.pods_with_affinity.append(info)
                        if _pop_by_uid(self.pods_with_required_anti_affinity, uid) is not None:
                            self.pods_with_required_anti_affinity.append(info)
                    self.generation = next_generation()
                    return info
        self.remove_pod(old)
        return self.add_pod(new)

    def restore(self, copy: "NodeInfo") -> None:
        """Take back the pods and sums of ``copy`` (a :meth:`clone` of this
        NodeInfo made earlier), as a change: a new generation."""
        self.pods = copy.pods
        self.requested = copy.requested
        self.non_zero_cpu = copy.non_zero_cpu
        self.non_zero_memory = copy.non_zero_memory
        self.used_ports = copy.used_ports
        self.pods_with_affinity = copy.pods_with_affinity
        self.pods_with_required_anti_affinity = copy.pods_with_required_anti_affinity
        self.generation = next_generation()

    def clone(self) -> "NodeInfo":
        """An independent copy (for dry runs); PodInfos are shared, not copied."""
        copy = NodeInfo.__new__(NodeInfo)
        copy.node = self.node
        copy.pods = list(self.pods)
        copy.requested = dict(self.requested)
        copy.non_zero_cpu = self.non_zero_cpu
        copy.non_zero_memory = self.non_zero_memory
        copy.used_ports = list(self.used_ports)
        copy.pods_with_affinity = list(self.pods_with_affinity)
        copy.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        copy.generation = self.generation
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)}, requested={self.requested})"
