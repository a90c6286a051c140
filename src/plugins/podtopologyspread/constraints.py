"""A pod's topology spread constraints as PodTopologySpread evaluates them.

Upstream ``podtopologyspread/common.go``: the pod's own
``topologySpreadConstraints`` of one ``whenUnsatisfiable`` kind, with
``matchLabelKeys`` folded into the selector and the defaults of
``minDomains`` (1), ``nodeAffinityPolicy`` (Honor) and ``nodeTaintsPolicy``
(Ignore); or, for a pod without any, the profile's default constraints with
the selector of the workloads that select the pod.
"""

from __future__ import annotations

from typing import Hashable, Iterable

from attrs import frozen

from kubesched import NodeInfo, selector_tag
from kubesched.core.api.core_v1 import Node, Pod, TopologySpreadConstraint
from kubesched.core.api.meta import LabelSelector, LabelSelectorRequirement, selector_key
from kubesched.core.api.nodeaffinity import RequiredNodeAffinity
from kubesched.core.api.taints import find_untolerated_taint, is_hard

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"


@frozen
class Constraint:
    """One constraint, ready to evaluate: ``selector`` already includes the
    ``matchLabelKeys`` values; ``key`` is a stable text form of the selector
    (for caches of per-node counts) and ``tag`` a label every pod it selects
    carries (:func:`~kubesched.core.framework.pod_counts.selector_tag`, None
    when it requires none)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    key: str
    tag: Hashable | None
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False

    def includes(self, pod: Pod, node: Node, required: RequiredNodeAffinity) -> bool:
        """Whether ``node`` counts as a domain for ``pod`` under this constraint's
        node inclusion policies (upstream ``matchNodeInclusionPolicies``)."""
        if self.honor_node_affinity and not required.matches(node):
            return False
        if self.honor_node_taints and find_untolerated_taint(node.spec.taints, pod.spec.tolerations, is_hard):
            return False
        return True


def _with_match_label_keys(selector: LabelSelector, keys: Iterable[str], labels: dict[str, str]) -> LabelSelector:
    extra = tuple(LabelSelectorRequirement(k, "In", (labels[k],)) for k in keys if k in labels)
    if not extra:
        return selector
    return LabelSelector(match_labels=selector.match_labels, match_expressions=selector.match_expressions + extra)


def _build(spec: TopologySpreadConstraint, selector: LabelSelector) -> Constraint:
    return Constraint(
        max_skew=spec.max_skew,
        topology_key=spec.topology_key,
        selector=selector,
        key=selector_key(selector),
        tag=selector_tag(selector),
        min_domains=spec.min_domains or 1,
        honor_node_affinity=(spec.node_affinity_policy or HONOR) == HONOR,
        honor_node_taints=(spec.node_taints_policy or IGNORE) == HONOR,
    )


def pod_constraints(pod: Pod, action: str) -> list[Constraint]:
    """The pod's own constraints whose ``whenUnsatisfiable`` is ``action``.  A
    constraint without a labelSelector selects no pod (upstream turns a nil
    selector into labels.Nothing())."""
    labels = pod.metadata.labels
    result = []
    for spec in pod.spec.topology_spread_constraints:
        if spec.when_unsatisfiable != action:
            continue
        if spec.label_selector is None:
            selector = LabelSelector(match_expressions=(LabelSelectorRequirement("", "In", ()),))
        else:
            selector = _with_match_label_keys(spec.label_selector, spec.match_label_keys, labels)
        result.append(_build(spec, selector))
    return result


def default_constraints(defaults: Iterable[TopologySpreadConstraint], action: str,
                        selector: LabelSelector) -> list[Constraint]:
    """The profile's default constraints of kind ``action``, all with the pod's
    workload ``selector`` (see :func:`~kubesched.core.plugin_helpers.default_selector.default_selector`)."""
    return [_build(spec, selector) for spec in defaults if spec.when_unsatisfiable == action]


def has_all_keys(labels: dict[str, str], constraints: list[Constraint]) -> bool:
    """The node has every constraint's topology key (upstream ``nodeLabelsMatchSpreadConstraints``)."""
    return all(c.topology_key in labels for c in constraints)


def matches(pod: Pod, selector: LabelSelector, namespace: str) -> bool:
    """``pod`` is in ``namespace``, not terminating, and ``selector`` matches it (a pod
    upstream's ``countPodsMatchSelector`` counts)."""
    meta = pod.metadata
    return meta.namespace == namespace and meta.deletion_timestamp is None and selector.matches(meta.labels)


def count_matching(node_info: NodeInfo, selector: LabelSelector, namespace: str) -> int:
    """Pods on the node in ``namespace`` that ``selector`` matches, terminating
    pods left out (upstream ``countPodsMatchSelector``)."""
    return sum(1 for info in node_info.pods if matches(info.pod, selector, namespace))


#: How many distinct sets of pod constraints a :class:`ConstraintCache` keeps (it starts afresh when full).
MAX_CACHED_CONSTRAINT_SETS = 4096


def _spec_key(spec: TopologySpreadConstraint, labels: dict[str, str]) -> tuple:
    """What :func:`pod_constraints` reads of one spec and the pod's labels, as a hashable tuple."""
    selector = spec.label_selector
    keys = spec.match_label_keys
    return (spec.max_skew, spec.topology_key, spec.when_unsatisfiable, spec.min_domains, spec.node_affinity_policy,
            spec.node_taints_policy, keys,
            None if selector is None else tuple(selector.match_labels.items()),
            None if selector is None else selector.match_expressions,
            tuple(labels.get(key) for key in keys) if keys else ())


class ConstraintCache:
    """:func:`pod_constraints` of pods whose constraints (and the labels their ``matchLabelKeys`` name) are equal,
    built once: the pods of one workload share their read-only :class:`Constraint` lists.  Keeps at most
    :data:`MAX_CACHED_CONSTRAINT_SETS` pods' sets, then starts afresh (a miss builds the pod's constraints)."""

    __slots__ = ("_built",)

    def __init__(self) -> None:
        self._built: dict[tuple, dict[str, list[Constraint]]] = {}

    def of(self, pod: Pod) -> dict[str, list[Constraint]]:
        """``pod_constraints(pod, action)`` by action (``DoNotSchedule``, ``ScheduleAnyway``); read-only."""
        labels = pod.metadata.labels
        key = tuple(_spec_key(spec, labels) for spec in pod.spec.topology_spread_constraints)
        found = self._built.get(key)
        if found is None:
            if len(self._built) >= MAX_CACHED_CONSTRAINT_SETS:
                self._built.clear()
            found = self._built[key] = {action: pod_constraints(pod, action)
                                        for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}
        return found
