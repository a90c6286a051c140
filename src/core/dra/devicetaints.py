"""Device taints (KEP-5055): which taints a device has, and whether a request
tolerates them.

Shared by the structured allocator, the DynamicResources plugin and the
DeviceTaintEviction controller.  A device's taints are the ``taints`` listed for
it in its ResourceSlice plus the ``spec.taint`` of every DeviceTaintRule whose
``spec.deviceSelector`` selects it (upstream's ResourceSlice tracker merges
those into the slices the scheduler sees).

Decision on the rule selector (the API documentation and upstream's scheduler
disagree): a rule **without** ``deviceSelector`` (None) selects *no*
device, as the API documentation says and as upstream's eviction controller
does; an *empty* selector (``deviceSelector: {}``) selects every device.
Upstream's scheduler-side slice tracker applies a nil selector to every device;
we do not.

For allocation only the effects NoSchedule and NoExecute matter: each such
taint must be tolerated by one of the request's tolerations.  ``None`` and
unknown effects never prevent anything.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from kubesched.core.api.resource_v1 import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    Device,
    DeviceTaint,
    DeviceTaintRule,
    DeviceToleration,
)

#: Effects that keep a device from being allocated unless tolerated.
SCHEDULING_EFFECTS = frozenset({TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE})


def rule_selects(rule: DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    """True when ``rule.spec.deviceSelector`` selects the device ``driver/pool/device``:
    every field it sets must be equal.  A rule without a selector selects nothing
    (module docstring)."""
    selector = rule.spec.device_selector
    return selector is not None and selector.matches(driver, pool, device)


def rule_taints(rules: Iterable[DeviceTaintRule], driver: str, pool: str, device: str) -> list[DeviceTaint]:
    """The taints that ``rules`` put on the device ``driver/pool/device``, in rule order."""
    return [rule.spec.taint for rule in rules if rule_selects(rule, driver, pool, device)]


def device_taints(
    driver: str, pool: str, device: Device, rules: Sequence[DeviceTaintRule] = ()
) -> tuple[DeviceTaint, ...]:
    """Every taint of ``device`` (published in pool ``pool`` of ``driver``): its own
    ``taints`` first, then those of the matching DeviceTaintRules."""
    if not rules:
        return device.taints
    return device.taints + tuple(rule_taints(rules, driver, pool, device.name))


def affects_scheduling(taint: DeviceTaint) -> bool:
    """True for NoSchedule and NoExecute taints; ``None`` and unknown effects are ignored."""
    return taint.effect in SCHEDULING_EFFECTS


def tolerated(taint: DeviceTaint, tolerations: Iterable[DeviceToleration]) -> bool:
    """True when one of ``tolerations`` tolerates ``taint`` (upstream ``ToleratesTaint``)."""
    return any(toleration.tolerates(taint) for toleration in tolerations)


def untolerated(taints: Iterable[DeviceTaint], tolerations: Sequence[DeviceToleration]) -> list[DeviceTaint]:
    """The NoSchedule/NoExecute taints in ``taints`` that no toleration tolerates;
    an allocation may use the device only when this is empty (upstream's
    ``taintPreventsAllocation``; admin access does not bypass it)."""
    return [taint for taint in taints if affects_scheduling(taint) and not tolerated(taint, tolerations)]
