"""The DaemonSet controller of the embedded cluster.

Stands in for kube-controller-manager's ``daemonset-controller``
(``pkg/controller/daemon``): one pod of the template per node that should run
it, ``<daemonset>-<5 characters>``, controlled by the DaemonSet and labelled
``controller-revision-hash`` and ``pod-template-generation``.  As upstream
(since ScheduleDaemonSetPods) the pod is not bound by the controller: its
required node affinity is replaced by a single ``matchFields`` term
``metadata.name In [<node>]`` (upstream ``ReplaceDaemonSetPodNodeNameNodeAffinity``)
and the scheduler places it.  The pod tolerates what upstream's
``AddOrUpdateDaemonPodTolerations`` adds: ``not-ready`` and ``unreachable``
(NoExecute), ``disk-pressure``, ``memory-pressure``, ``pid-pressure`` and
``unschedulable`` (NoSchedule), and ``network-unavailable`` for a host-network
pod.  A node should run the pod when the template's node selector and required
node affinity match it and its NoSchedule/NoExecute taints are tolerated
(upstream ``NodeShouldRunDaemonPod``); a pod on a node that should not run it,
or a second one on a node, is deleted, and a failed one replaced.
"""

from __future__ import annotations

import attrs

from kubesched.core.api.apps_v1 import DaemonSet
from kubesched.core.api.core_v1 import (
    Affinity,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Toleration,
)
from kubesched.core.api.nodeaffinity import RequiredNodeAffinity
from kubesched.core.api.taints import find_untolerated_taint, is_hard
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import OwnedPods, pod_active, pod_from_template, template_hash

#: upstream's daemon pod tolerations: (taint key, effect), operator Exists
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"))
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def daemon_tolerations(pod_tolerations: tuple[Toleration, ...], host_network: bool) -> tuple[Toleration, ...]:
    """The template's tolerations plus upstream's daemon pod tolerations it lacks."""
    wanted = DAEMON_TOLERATIONS + ((NETWORK_UNAVAILABLE,) if host_network else ())
    have = {(t.key, t.effect) for t in pod_tolerations}
    return pod_tolerations + tuple(Toleration(key=key, operator="Exists", effect=effect)
                                   for key, effect in wanted if (key, effect) not in have)


def node_pinned(pod_affinity: Affinity | None, node_name: str) -> Affinity:
    """``pod_affinity`` with its required node affinity replaced by ``metadata.name In [node_name]``."""
    term = NodeSelectorTerm(match_fields=(NodeSelectorRequirement(key="metadata.name", operator="In",
                                                                  values=(node_name,)),))
    affinity = pod_affinity or Affinity()
    node_affinity = affinity.node_affinity or NodeAffinity()
    node_affinity = attrs.evolve(node_affinity, required_during_scheduling_ignored_during_execution=NodeSelector(
        node_selector_terms=(term,)))
    return attrs.evolve(affinity, node_affinity=node_affinity)


def should_run(ds: DaemonSet, node: Node) -> bool:
    """The node matches the template's node selector and required node affinity and every NoSchedule or
    NoExecute taint is tolerated (with the daemon tolerations)."""
    spec = ds.spec.template.spec
    if not RequiredNodeAffinity(Pod(spec=spec)).matches(node):
        return False
    tolerations = daemon_tolerations(spec.tolerations, bool(spec.extra.get("hostNetwork")))
    return find_untolerated_taint(node.spec.taints, tolerations, is_hard) is None


class DaemonSetController(Controller):
    """Work items are DaemonSet keys ``namespace/name``."""

    name = "daemonset-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.owned = OwnedPods(self.informers, "DaemonSet", lambda ns, name: self.queue.add(f"{ns}/{name}"))
        self.sets = self.informers.store("DaemonSet")
        self.nodes = self.informers.store("Node")
        self.informers.add_handlers("DaemonSet", self._changed, lambda old, new: self._changed(new), self._deleted)
        self.informers.add_handlers("Node", self._node_changed, lambda old, new: self._node_changed(new),
                                    self._node_changed)

    def _changed(self, ds: DaemonSet) -> None:
        self.queue.add(f"{ds.metadata.namespace}/{ds.metadata.name}")

    def _node_changed(self, _node: Node) -> None:
        for key in self.sets.keys():
            self.queue.add(key)

    def _deleted(self, ds: DaemonSet) -> None:
        for pod in self.owned.pods(ds):
            self._delete(ds, pod)
        self.owned.forget(ds.metadata.uid)

    def _delete(self, ds: DaemonSet, pod: Pod) -> None:
        self.owned.expect_delete(ds, pod)
        try:
            self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
        except NotFound:
            pass

    def new_pod(self, ds: DaemonSet, node_name: str) -> Pod:
        """The daemon pod of ``ds`` for node ``node_name`` (to be placed there by the scheduler)."""
        spec = ds.spec.template.spec
        return pod_from_template(
            ds.spec.template, ds, generate_name=f"{ds.metadata.name}-",
            labels={"controller-revision-hash": template_hash(ds.spec.template),
                    "pod-template-generation": str(ds.metadata.generation)},
            spec_changes={"affinity": node_pinned(spec.affinity, node_name),
                          "tolerations": daemon_tolerations(spec.tolerations, bool(spec.extra.get("hostNetwork")))})

    def sync(self, item: str) -> None:
        """One daemon pod on each node that should run it, none elsewhere (upstream ``manage``), then the
        status counts."""
        ds = self.sets.get(item)
        if ds is None or ds.metadata.deletion_timestamp is not None or not self.owned.satisfied(ds):
            return
        by_node: dict[str, list[Pod]] = {}
        for pod in self.owned.pods(ds):
            if pod.status.phase == "Failed" and pod.metadata.deletion_timestamp is None:
                self._delete(ds, pod)
            elif pod_active(pod):
                by_node.setdefault(pinned_node(pod), []).append(pod)
        eligible = [node for node in sorted(self.nodes.values(), key=lambda n: n.metadata.name)
                    if should_run(ds, node)]
        names = {node.metadata.name for node in eligible}
        for node in eligible:
            if node.metadata.name not in by_node:
                self.owned.expect_create(ds, self.cluster.create(self.new_pod(ds, node.metadata.name)))
        for node_name, pods in by_node.items():
            for pod in (pods if node_name not in names else pods[1:]):
                self._delete(ds, pod)
        status = {"currentNumberScheduled": sum(1 for n in by_node if n in names and by_node[n][0].spec.node_name),
                  "desiredNumberScheduled": len(names), "numberMisscheduled": len(set(by_node) - names),
                  "numberReady": sum(1 for n in by_node if n in names and by_node[n][0].status.phase == "Running"),
                  "observedGeneration": ds.metadata.generation}
        if status != ds.status:
            self.cluster.update_status(attrs.evolve(ds, status=status))


def pinned_node(pod: Pod) -> str:
    """The node a daemon pod is for: where it is bound, else its ``matchFields metadata.name`` term's node."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity is not None else None
    for term in required.node_selector_terms if required is not None else ():
        for field in term.match_fields:
            if field.key == "metadata.name" and field.values:
                return field.values[0]
    return ""
