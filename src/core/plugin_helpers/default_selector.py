"""The selector of a pod's "workload": what the Services, ReplicationControllers,
ReplicaSets and StatefulSets selecting the pod select (upstream
``plugins/helper.DefaultSelector``).

PodTopologySpread's default constraints spread a pod against the other pods
of the workloads it belongs to; a pod that no such object selects gets an
empty selector and no default constraints.
"""

from __future__ import annotations

from typing import Any, Iterable

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.meta import LabelSelector, LabelSelectorRequirement

#: The kinds whose selectors make up a pod's default selector.
WORKLOAD_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def _map_selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """A label-map selector (Service, ReplicationController) selects ``labels``;
    an empty map selects nothing, as upstream."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def default_selector(pod: Pod, objects: Iterable[Any]) -> LabelSelector:
    """The AND of every selector in ``objects`` (Services, ReplicationControllers,
    ReplicaSets, StatefulSets of any namespace; others are ignored) that selects
    ``pod`` in its namespace.  Services' and ReplicationControllers' label maps
    are merged (a later one's value of a key wins, as upstream's ``labels.Set``
    merge); ReplicaSets' and StatefulSets' selectors add their requirements.
    An empty LabelSelector means "no workload selects the pod"."""
    namespace, labels = pod.metadata.namespace, pod.metadata.labels
    merged: dict[str, str] = {}
    requirements: list[LabelSelectorRequirement] = []
    for obj in objects:
        if obj.metadata.namespace != namespace:
            continue
        selector = obj.spec.selector
        if isinstance(selector, dict):
            if _map_selects(selector, labels):
                merged.update(selector)
        elif selector is not None and (selector.match_labels or selector.match_expressions) \
                and selector.matches(labels):
            requirements.extend(LabelSelectorRequirement(k, "In", (v,)) for k, v in sorted(selector.match_labels.items()))
            requirements.extend(selector.match_expressions)
    return LabelSelector(match_labels=merged, match_expressions=tuple(requirements))


def is_empty(selector: LabelSelector) -> bool:
    """True when ``selector`` has no requirement at all."""
    return not selector.match_labels and not selector.match_expressions
