"""The selector of a pod's "workload": what the Services, ReplicationControllers,
ReplicaSets and StatefulSets selecting the pod select (upstream
``plugins/helper.DefaultSelector``).

PodTopologySpread's default constraints spread a pod against the other pods
of the workloads it belongs to; a pod that no such object selects gets an
empty selector and no default constraints.  :class:`WorkloadIndex` keeps
those objects by namespace and by a label their selector requires, so a
pod's candidates are found from its labels, not by matching every workload.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any, Hashable, Iterable

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.meta import LabelSelector, LabelSelectorRequirement
from kubesched.core.cluster.informer import Informers
from kubesched.core.framework.pod_counts import label_tags, selector_tag

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


def _required_tag(selector: Any) -> tuple[bool, Hashable | None]:
    """(whether ``selector`` can select any pod, a tag every pod it selects carries or None): a label map's first
    entry; a LabelSelector's :func:`selector_tag`; an empty or missing selector selects nothing."""
    if isinstance(selector, dict):
        return bool(selector), next(iter(selector.items()), None)
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return False, None
    return True, selector_tag(selector)


class WorkloadIndex:
    """The objects of :data:`WORKLOAD_KINDS` an informer set holds, by namespace and by a tag (``(key, value)`` or
    ``(key,)``) every pod their selector selects carries, kept current by the informers' handlers (register it
    before they start).  :meth:`selecting` gives the candidates for a pod in O(its labels + the candidates), in the
    order of the informers' stores (kind by kind, then as stored), so :func:`default_selector` over them gives what
    it gives over every object.  ``version`` grows with every change (for caches of a pod's default selector)."""

    def __init__(self, informers: Informers):
        self.version = 0
        self._positions = itertools.count()
        #: namespace -> tag -> (kind, object key) -> (position, object)
        self._index: dict[str, dict[Hashable | None, dict[tuple[str, str], tuple[tuple[int, int], Any]]]] = {}
        #: (kind, object key) -> where it is indexed: (namespace, tag, position)
        self._where: dict[tuple[str, str], tuple[str, Hashable | None, tuple[int, int]]] = {}
        for rank, kind in enumerate(WORKLOAD_KINDS):
            informers.add_handlers(kind, partial(self._add, rank, kind), partial(self._update, rank, kind),
                                   partial(self._delete, kind))

    @staticmethod
    def _key(obj: Any) -> str:
        return f"{obj.metadata.namespace}/{obj.metadata.name}"

    def _add(self, rank: int, kind: str, obj: Any, position: tuple[int, int] | None = None) -> None:
        self.version += 1
        selects, tag = _required_tag(obj.spec.selector)
        if not selects:
            return
        key = (kind, self._key(obj))
        if position is None:
            position = (rank, next(self._positions))
        namespace = obj.metadata.namespace
        self._index.setdefault(namespace, {}).setdefault(tag, {})[key] = (position, obj)
        self._where[key] = (namespace, tag, position)

    def _update(self, rank: int, kind: str, old: Any, new: Any) -> None:
        where = self._where.get((kind, self._key(old)))
        self._delete(kind, old)
        self._add(rank, kind, new, where[2] if where is not None else None)  # an update keeps its place in the store

    def _delete(self, kind: str, obj: Any) -> None:
        self.version += 1
        key = (kind, self._key(obj))
        where = self._where.pop(key, None)
        if where is None:
            return
        namespace, tag, _ = where
        by_tag = self._index[namespace]
        del by_tag[tag][key]
        if not by_tag[tag]:
            del by_tag[tag]
            if not by_tag:
                del self._index[namespace]

    def selecting(self, pod: Pod) -> list[Any]:
        """The objects in ``pod``'s namespace whose selector may select it (to be matched by
        :func:`default_selector`: the tag is necessary, not sufficient), in store order."""
        by_tag = self._index.get(pod.metadata.namespace)
        if not by_tag:
            return []
        found = [entry for tag in (None, *label_tags(pod.metadata.labels)) for entry in by_tag.get(tag, {}).values()]
        found.sort(key=lambda entry: entry[0])
        return [obj for _, obj in found]
