"""Taints and tolerations: the matching rules every taint-aware component shares.

Used by the TaintToleration and NodeUnschedulable plugins and by taint-based
eviction; upstream ``v1helper.TolerationsTolerateTaint`` and
``FindMatchingUntoleratedTaint``.
"""

from __future__ import annotations

from typing import Callable, Iterable

from kubesched.core.api.core_v1 import Taint, Toleration

#: The taint a node with ``spec.unschedulable: true`` behaves as having.
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """True when any toleration tolerates ``taint``."""
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], include: Callable[[Taint], bool]
) -> Taint | None:
    """The first taint selected by ``include`` that no toleration tolerates, or None."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if include(taint) and not tolerates(tolerations, taint):
            return taint
    return None


def is_hard(taint: Taint) -> bool:
    """NoSchedule and NoExecute taints keep pods off; PreferNoSchedule only scores."""
    return taint.effect in ("NoSchedule", "NoExecute")
