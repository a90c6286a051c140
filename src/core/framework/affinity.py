"""A pod's inter-pod affinity terms, parsed once (upstream ``framework.AffinityTerm``
and the term lists of ``framework.PodInfo``).

A term selects pods by labels (``selector``) in a set of namespaces
(``namespaces`` by name, or ``namespace_selector`` over the Namespace objects'
labels), within the topology domain ``topology_key``.  A missing labelSelector
selects no pod; a term with neither namespaces nor a namespaceSelector means
the owning pod's own namespace; an empty namespaceSelector means every
namespace, as upstream.
"""

from __future__ import annotations

from typing import Callable, Iterable

from attrs import field, frozen

from kubesched.core.api.core_v1 import Pod, PodAffinityTerm, WeightedPodAffinityTerm
from kubesched.core.api.meta import LabelSelector, selector_key


def _empty(selector: LabelSelector) -> bool:
    return not selector.match_labels and not selector.match_expressions


@frozen
class AffinityTerm:
    """One term, ready to match pods.  ``selector``/``namespace_selector``: None
    selects nothing; ``key`` is a canonical text of the term."""

    topology_key: str
    selector: LabelSelector | None
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    #: a canonical text of the term (equal terms, equal keys), for caches
    key: str = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self):
        object.__setattr__(self, "key", repr((self.topology_key, selector_key(self.selector), sorted(self.namespaces),
                                              selector_key(self.namespace_selector))))

    @classmethod
    def of(cls, owner: Pod, term: PodAffinityTerm) -> "AffinityTerm":
        """``term`` of pod ``owner`` (upstream ``newAffinityTerm``)."""
        namespaces = frozenset(term.namespaces)
        if not namespaces and term.namespace_selector is None:
            namespaces = frozenset((owner.metadata.namespace,))
        return cls(term.topology_key, term.label_selector, namespaces, term.namespace_selector)

    def matches(self, pod: Pod, namespace_labels: dict[str, str] | None) -> bool:
        """Whether ``pod`` is one of the pods this term selects; ``namespace_labels``
        are the labels of ``pod``'s Namespace (None: not looked up)."""
        meta = pod.metadata
        if meta.namespace not in self.namespaces:
            selector = self.namespace_selector
            if selector is None or not selector.matches(namespace_labels or {}):
                return False
        return self.selector is not None and self.selector.matches(meta.labels)

    def resolve_namespaces(self, namespaces_matching: Callable[[LabelSelector], Iterable[str]]) -> "AffinityTerm":
        """This term with a non-empty namespaceSelector replaced by the names of
        the namespaces it selects now (upstream ``mergeAffinityTermNamespacesIfNotEmpty``):
        the incoming pod's terms are matched without looking up namespace labels."""
        selector = self.namespace_selector
        if selector is None or _empty(selector):
            return self
        return AffinityTerm(self.topology_key, self.selector,
                            self.namespaces | frozenset(namespaces_matching(selector)), None)


@frozen
class WeightedAffinityTerm:
    """A preferred pod (anti-)affinity term with its ``weight`` (1-100) (upstream
    ``framework.WeightedAffinityTerm``)."""

    weight: int
    term: AffinityTerm

    @classmethod
    def of(cls, owner: Pod, weighted: WeightedPodAffinityTerm) -> "WeightedAffinityTerm":
        """``weighted`` of pod ``owner``; raises ValueError when it has no ``podAffinityTerm`` (only a hand-built term
        can lack it)."""
        term = weighted.pod_affinity_term
        if term is None:  # the API types refuse this at load; only a hand-built term can lack it
            raise ValueError("a weighted pod affinity term needs podAffinityTerm")
        return cls(weighted.weight, AffinityTerm.of(owner, term))


@frozen
class AffinityTerms:
    """All inter-pod affinity terms of one pod."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()

    @classmethod
    def of(cls, pod: Pod) -> "AffinityTerms":
        """The required and preferred affinity and anti-affinity terms of ``pod`` (:data:`NO_TERMS` when it has none),
        as upstream's ``NewPodInfo`` parses them."""
        affinity = pod.spec.affinity
        if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
            return NO_TERMS
        positive, negative = affinity.pod_affinity, affinity.pod_anti_affinity
        return cls(
            tuple(AffinityTerm.of(pod, t) for t in positive.required_during_scheduling_ignored_during_execution)
            if positive else (),
            tuple(AffinityTerm.of(pod, t) for t in negative.required_during_scheduling_ignored_during_execution)
            if negative else (),
            tuple(WeightedAffinityTerm.of(pod, t) for t in positive.preferred_during_scheduling_ignored_during_execution)
            if positive else (),
            tuple(WeightedAffinityTerm.of(pod, t) for t in negative.preferred_during_scheduling_ignored_during_execution)
            if negative else (),
        )

    @property
    def any(self) -> bool:
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity)


NO_TERMS = AffinityTerms()


def has_pod_affinity(pod: Pod) -> bool:
    """The pod has pod affinity or anti-affinity (upstream ``NodeInfo.PodsWithAffinity``)."""
    affinity = pod.spec.affinity
    return affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None)


def has_required_anti_affinity(pod: Pod) -> bool:
    """The pod has required anti-affinity terms (upstream ``NodeInfo.PodsWithRequiredAntiAffinity``)."""
    affinity = pod.spec.affinity
    anti = affinity.pod_anti_affinity if affinity is not None else None
    return anti is not None and bool(anti.required_during_scheduling_ignored_during_execution)
