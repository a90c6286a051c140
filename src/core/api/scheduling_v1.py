"""scheduling.k8s.io/v1: PriorityClass."""

from __future__ import annotations

from attrs import frozen

from .meta import ObjectMeta


@frozen
class PriorityClass:
    """Maps ``pod.spec.priorityClassName`` to an integer priority (higher is more important)."""

    metadata: ObjectMeta = ObjectMeta()
    value: int = 0
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""
