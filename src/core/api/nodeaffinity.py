"""Node selectors and required node affinity: does a node match?

Shared by NodeAffinity (pods), VolumeBinding (PV node affinity) and DRA
(ResourceSlice node selectors); upstream ``component-helpers/scheduling/corev1/nodeaffinity``.
Terms are ORed, requirements within a term ANDed; an empty term matches
nothing; ``matchFields`` supports ``metadata.name``.
"""

from __future__ import annotations

import re

from kubesched.core.api.core_v1 import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
)

NAME_FIELD = "metadata.name"
_INT64 = re.compile(r"[+-]?[0-9]+")


def _parse_int64(text: str) -> int:
    """Go's ``strconv.ParseInt(text, 10, 64)``: Python's int() also takes "1_0" and " 7 "."""
    if not _INT64.fullmatch(text) or not -(2 ** 63) <= int(text) < 2 ** 63:
        raise ValueError(text)
    return int(text)


def _requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(req.values) != 1:
            return False
        try:
            have, want = _parse_int64(value), _parse_int64(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def term_matches(term: NodeSelectorTerm, labels: dict[str, str], name: str) -> bool:
    """True when every expression matches ``labels`` and every field matches ``name``."""
    if not term.match_expressions and not term.match_fields:
        return False
    for req in term.match_expressions:
        if not _requirement_matches(req, labels.get(req.key)):
            return False
    for req in term.match_fields:
        if req.key != NAME_FIELD or not _requirement_matches(req, name):
            return False
    return True


def selector_matches(selector: NodeSelector, node: Node) -> bool:
    """True when any term of ``selector`` matches ``node``."""
    labels, name = node.metadata.labels, node.metadata.name
    return any(term_matches(term, labels, name) for term in selector.node_selector_terms)


class RequiredNodeAffinity:
    """A pod's hard node constraints: ``spec.nodeSelector`` AND the required
    node affinity (upstream ``GetRequiredNodeAffinity``)."""

    __slots__ = ("node_selector", "required")

    def __init__(self, pod: Pod):
        self.node_selector = pod.spec.node_selector
        affinity = pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity else None
        self.required = node_affinity.required_during_scheduling_ignored_during_execution if node_affinity else None

    @property
    def is_empty(self) -> bool:
        """No nodeSelector and no required node affinity: every node matches."""
        return not self.node_selector and self.required is None

    @property
    def key(self) -> str:
        """A canonical text of the constraints (equal constraints, equal keys), for caches."""
        return repr((sorted(self.node_selector.items()), self.required))

    def matches(self, node: Node) -> bool:
        """Whether ``node`` has every ``spec.nodeSelector`` label and matches a required node affinity term
        (upstream ``RequiredNodeAffinity.Match``)."""
        labels = node.metadata.labels
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False
        return self.required is None or selector_matches(self.required, node)
