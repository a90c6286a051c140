"""Which nodes can go with every pod still fitting: cluster-autoscaler's scale-down simulation on kube-scheduler's decisions.

As cluster-autoscaler's ``simulator/`` (``FindNodesToRemove`` and the drainability
rules) with its default flags: a node is a candidate when the pods on it request
less than ``threshold`` (default 0.5, ``--scale-down-utilization-threshold``)
of its allocatable CPU and of its memory, and it does not carry
``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"``.  Candidates
are tried from the least used; one is kept when a pod on it cannot move:

- ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` on the pod;
- the pod has no controller (a bare pod is gone for good once evicted), unless
  it is annotated safe to evict ``"true"``;
- a kube-system pod that no PodDisruptionBudget covers;
- local storage (``emptyDir``, ``hostPath``), unless safe to evict ``"true"``;
- a PodDisruptionBudget of the pod allows fewer disruptions than the nodes
  removed so far and this one would take (``status.disruptionsAllowed``);
- the scheduler does not place every moved pod on the remaining nodes without
  preempting anything (the node is drained in a fork of the simulation: controllers
  recreate their pods, bare ones are created again, and kube-scheduler decides).

DaemonSet and mirror pods go with their node.  A removed node stays cordoned and
drained in the simulation, so the next candidate's pods cannot count on its room.
Utilization counts CPU and memory only (cluster-autoscaler's GPU threshold is not applied).
"""

from __future__ import annotations

from typing import Any, Sequence

import attrs

from kubesched.core.api.core_v1 import Node, ObjectMeta, Pod, PodStatus
from kubesched.core.api.policy_v1 import PodDisruptionBudget
from kubesched.core.api.resource_helpers import pod_requests
from kubesched.sim import Simulator

#: cluster-autoscaler's pod annotation: "true" moves a pod it would keep, "false" keeps its node.
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
#: cluster-autoscaler's node annotation: "true" keeps the node.
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
_MIRROR = "kubernetes.io/config.mirror"


@attrs.frozen
class Removal:
    """A node the plan removes: ``node``, ``utilization`` (0-1, the larger of CPU
    and memory), ``moved`` (pods that were on it, ``namespace/name``) and
    ``destinations`` (pods bound after the drain that were not before -> their
    node: the moved pods, or their controllers' replacements)."""

    node: str
    utilization: float
    moved: tuple[str, ...]
    destinations: dict[str, str]


@attrs.frozen
class ScaleDown:
    """A scale-down plan: ``removed`` (in order) and ``kept`` (node -> why it stays)."""

    removed: tuple[Removal, ...]
    kept: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        """The plan as plain data (``kubesched plan --scale-down -o json``, the UI's Plan page): ``remove``
        (node, utilization 0-1, moved pods, destinations), ``keep`` (node -> why)."""
        return {
            "remove": [{"node": r.node, "utilization": round(r.utilization, 4), "moved": list(r.moved),
                        "destinations": dict(r.destinations)} for r in self.removed],
            "keep": dict(self.kept),
        }


def plan_scale_down(sim: Simulator, threshold: float = 0.5) -> ScaleDown:
    """Find the nodes to remove (see the module's documentation); ``sim`` is left
    as it was (the drains happen in forks of it).  ``threshold``: utilization
    below which a node is a candidate (0-1)."""
    nodes = sim.nodes()
    pods = [pod for pod in sim.pods() if not pod.terminal]
    on_node: dict[str, list[Pod]] = {}
    for pod in pods:
        on_node.setdefault(pod.spec.node_name, []).append(pod)
    budgets = {pdb.metadata.namespace + "/" + pdb.metadata.name: (pdb, pdb.status.disruptions_allowed)
               for pdb in sim.simulation.cluster.list("PodDisruptionBudget").items}
    removed: list[Removal] = []
    kept: dict[str, str] = {}
    used = {node.metadata.name: utilization(node, on_node.get(node.metadata.name, [])) for node in nodes}
    for node in sorted(nodes, key=lambda n: (used[n.metadata.name], n.metadata.name)):
        name = node.metadata.name
        movable = [pod for pod in on_node.get(name, []) if not _goes_with_node(pod)]
        reason = _blocked(node, used[name], threshold, movable, budgets)
        drained, destinations, reason = (None, {}, reason) if reason else _drain(sim, name, movable)
        if drained is None:
            kept[name] = reason
            continue
        sim = drained
        for key, (pdb, allowed) in budgets.items():
            budgets[key] = (pdb, allowed - sum(1 for pod in movable if _covers(pdb, pod)))
        removed.append(Removal(name, used[name], tuple(p.key for p in movable), destinations))
    return ScaleDown(tuple(removed), kept)


def utilization(node: Node, pods: Sequence[Pod]) -> float:
    """The larger of the CPU and the memory share of ``node``'s allocatable that ``pods`` request (0-1+)."""
    requests = [pod_requests(pod) for pod in pods]
    shares = []
    for resource in ("cpu", "memory"):
        allocatable = node.status.allocatable.get(resource, 0)
        if allocatable:
            shares.append(sum(r.get(resource, 0) for r in requests) / allocatable)
    return max(shares, default=0.0)


def _goes_with_node(pod: Pod) -> bool:
    return (_MIRROR in pod.metadata.annotations
            or any(ref.kind == "DaemonSet" and ref.controller for ref in pod.metadata.owner_references))


def _blocked(node: Node, used: float, threshold: float, pods: list[Pod],
             budgets: dict[str, tuple[PodDisruptionBudget, int]]) -> str:
    """Why ``node`` cannot be a candidate ("" when it can), in cluster-autoscaler's terms."""
    if node.metadata.annotations.get(SCALE_DOWN_DISABLED) == "true":
        return f"scale-down disabled by the annotation {SCALE_DOWN_DISABLED}"
    if used >= threshold:
        return f"utilization {used:.0%} is not below the threshold {threshold:.0%}"
    for pod in pods:
        safe = pod.metadata.annotations.get(SAFE_TO_EVICT)
        covered = [key for key, (pdb, _) in budgets.items() if _covers(pdb, pod)]
        if safe == "false":
            return f"pod {pod.key} is annotated {SAFE_TO_EVICT}: \"false\""
        if safe != "true" and not any(ref.controller for ref in pod.metadata.owner_references):
            return f"pod {pod.key} is not replicated (no controller would recreate it)"
        if pod.metadata.namespace == "kube-system" and not covered:
            return f"pod {pod.key} is a kube-system pod without a PodDisruptionBudget"
        if safe != "true" and any("emptyDir" in v.extra or "hostPath" in v.extra for v in pod.spec.volumes):
            return f"pod {pod.key} has local storage (emptyDir or hostPath)"
    for key, (pdb, allowed) in budgets.items():
        taken = sum(1 for pod in pods if _covers(pdb, pod))
        if taken > allowed:
            return (f"not enough pod disruption budget: {key} allows {max(allowed, 0)} more disruption(s), "
                    f"the node's pods would take {taken}")
    return ""


def _covers(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    selector = pdb.spec.selector
    return (pdb.metadata.namespace == pod.metadata.namespace and selector is not None
            and selector.matches(pod.metadata.labels))


def _drain(sim: Simulator, node: str, movable: list[Pod]) -> tuple[Simulator | None, dict[str, str], str]:
    """Drain ``node`` in a fork of ``sim``: (the fork, pods newly bound -> their node, "") when every pod found
    a place without preempting, else (None, {}, why not)."""
    before = sim.placements()
    bound = sum(1 for n in before.values() if n)
    trial = sim.fork()
    trial.drain(node)
    controlled = {pod.key for pod in movable if any(ref.controller for ref in pod.metadata.owner_references)}
    trial.create([_again(pod) for pod in movable if pod.key not in controlled])
    after = trial.placements()
    waiting = sorted(key for key, n in after.items() if not n and before.get(key, "x"))
    if waiting:
        return None, {}, f"pod {waiting[0]} would not fit elsewhere"
    if sum(1 for n in after.values() if n) < bound:
        return None, {}, "its pods would fit only by preempting others"
    return trial, {key: n for key, n in after.items() if n and before.get(key) != n}, ""


def _again(pod: Pod) -> Pod:
    """``pod`` as it would be created again: same name, labels and spec, no node, no status."""
    meta = ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace, labels=dict(pod.metadata.labels),
                      annotations=dict(pod.metadata.annotations))
    return attrs.evolve(pod, metadata=meta, spec=attrs.evolve(pod.spec, node_name=""), status=PodStatus())
