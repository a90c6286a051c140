"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity
an allocation takes, and whether it still fits.

Mirrors upstream ``structured/internal/incubating/consumable_capacity.go``.  For
every capacity the device publishes, an allocation consumes:

- what the request asks for, rounded up by the capacity's ``requestPolicy``:
  to ``validRange.min`` when below it, else up to the next ``min + n*step``;
  or to the first of the (sorted) ``validValues`` that is at least the request;
- when the request does not name the capacity: the policy's ``default``, or
  else the whole capacity.

The amount must satisfy the policy (equal to the default, or within
``validRange.max`` and on a step, or one of ``validValues``), and together with
what is already consumed (by allocated claims and earlier picks of the same
attempt) it must not exceed the capacity's ``value``.  A request naming a
capacity the device does not have never fits.  All amounts are exact
:class:`~fractions.Fraction` base units.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Mapping

from kubesched.core.api.resource_v1 import CapacityRequestPolicy, Device, DeviceCapacity
from kubesched.core.dra.allocated_devices import add_amounts as add  # noqa: F401 (re-exported)
from kubesched.core.dra.allocated_devices import subtract_amounts as subtract  # noqa: F401 (re-exported)

Amounts = Mapping[str, Fraction]


def _round_up(requested: Fraction, capacity: DeviceCapacity) -> Fraction:
    policy = capacity.request_policy
    if policy is None:
        return requested
    valid_range = policy.valid_range
    if valid_range is not None and valid_range.min is not None:
        if requested < valid_range.min:
            return valid_range.min
        if not valid_range.step:
            return requested
        steps = math.ceil((requested - valid_range.min) / valid_range.step)
        return valid_range.min + steps * valid_range.step
    for value in policy.valid_values:
        if requested <= value:
            return value
    return requested


def _violates(amount: Fraction, policy: CapacityRequestPolicy | None) -> bool:
    if policy is None or (policy.default is not None and amount == policy.default):
        return False
    valid_range = policy.valid_range
    if valid_range is not None:
        if valid_range.max is not None and amount > valid_range.max:
            return True
        if valid_range.step and valid_range.min is not None:
            return (amount - valid_range.min) % valid_range.step != 0
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def consumption(device: Device, driver: str, requests: Amounts | None) -> dict[str, Fraction] | None:
    """What allocating ``device`` (of ``driver``) for a request with capacity
    ``requests`` consumes, keyed by the device's capacity names; None when a
    requested capacity does not exist or an amount violates the request policy.
    Request names may be qualified or not (:meth:`Device.lookup_capacity`)."""
    asked: dict[str, Fraction] = {}
    for name, amount in (requests or {}).items():
        key = name if name in device.capacity else _capacity_key(device, name, driver)
        if key is None:
            return None
        asked[key] = amount
    consumed: dict[str, Fraction] = {}
    for name, capacity in device.capacity.items():
        requested = asked.get(name)
        if requested is None:
            policy = capacity.request_policy
            amount = policy.default if policy is not None and policy.default is not None else capacity.value
        else:
            amount = _round_up(requested, capacity)
        if _violates(amount, capacity.request_policy):
            return None
        consumed[name] = amount
    return consumed


def _capacity_key(device: Device, name: str, driver: str) -> str | None:
    found = device.lookup_capacity(name, driver)
    if found is None:
        return None
    return next(key for key, value in device.capacity.items() if value is found)


def fits(device: Device, consumed: Amounts, *already: Amounts | None) -> bool:
    """Whether ``consumed`` plus every mapping in ``already`` stays within each
    capacity's ``value``."""
    for name, amount in consumed.items():
        for used in already:
            if used:
                amount += used.get(name, 0)
        if amount > device.capacity[name].value:
            return False
    return True
