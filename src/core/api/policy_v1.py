"""policy/v1: PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .meta import LabelSelector, ObjectMeta


@frozen
class PodDisruptionBudgetSpec:
    """``min_available``/``max_unavailable`` are an int or a percentage string ("50%")."""

    min_available: Any = None
    max_unavailable: Any = None
    selector: LabelSelector | None = None
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class PodDisruptionBudgetStatus:
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class PodDisruptionBudget:
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()
