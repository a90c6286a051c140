"""policy/v1: PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .convert import ManifestError
from .meta import Condition, LabelSelector, ObjectMeta

#: ``status.conditions[].type`` the disruption controller maintains, and its reasons.
DISRUPTION_ALLOWED_CONDITION = "DisruptionAllowed"
SUFFICIENT_PODS_REASON = "SufficientPods"
INSUFFICIENT_PODS_REASON = "InsufficientPods"


def scaled_value(value: Any, total: int, field_name: str) -> int:
    """An int-or-percentage (``2`` or ``"50%"``) of ``total``, percentages rounded
    up (upstream ``intstr.GetScaledValueFromIntOrPercent(..., true)``).  Raises
    :class:`ManifestError` naming ``field_name`` for anything else."""
    if isinstance(value, bool):
        raise ManifestError(field_name, f"invalid value {value!r}: must be an integer or a percentage")
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            raise ManifestError(field_name, f"invalid value for IntOrString: invalid value {text!r}") from None
        return -(-percent * total // 100)
    try:
        return int(text)
    except ValueError:
        raise ManifestError(field_name, f"invalid value for IntOrString: invalid value {text!r}") from None


@frozen
class PodDisruptionBudgetSpec:
    """``min_available``/``max_unavailable`` are an int or a percentage string ("50%");
    at most one may be set.  ``selector`` None matches no pod."""

    min_available: Any = None
    max_unavailable: Any = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str = ""
    extra: dict[str, Any] = field(factory=dict, eq=False)

    def __attrs_post_init__(self):
        if self.min_available is not None and self.max_unavailable is not None:
            raise ManifestError("minAvailable", "minAvailable and maxUnavailable cannot be both set")
        for name, value in (("minAvailable", self.min_available), ("maxUnavailable", self.max_unavailable)):
            if value is not None and scaled_value(value, 100, name) < 0:
                raise ManifestError(name, "must be greater than or equal to 0")


@frozen
class PodDisruptionBudgetStatus:
    """What the disruption controller computed: ``disruptions_allowed`` is how many
    selected pods may be disrupted now; ``disrupted_pods`` maps pod names to the
    time (seconds) an eviction was admitted."""

    observed_generation: int = 0
    disrupted_pods: dict[str, Any] = field(factory=dict)
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: tuple[Condition, ...] = ()
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget: preemption avoids, where it can, evicting more of the selected pods than
    ``status.disruptionsAllowed``."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()
