"""Which devices ResourceClaims already use: :class:`DeviceID` and :class:`AllocatedState`.

Upstream keeps this in the scheduler's DRA manager (``SharedDRAManager``'s
claim tracker, ``GatherAllocatedState``): the structured allocator reads it to
skip devices in use, and Score plugins may read it to see how full a node's
devices are.  :class:`~kubesched.core.dra.manager.DRAManager` keeps one
current (allocated and in-flight claims); a preemption dry run works on a copy.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Mapping, NamedTuple

from attrs import define, field

from kubesched.core.api.resource_v1 import (
    AllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)


class DeviceID(NamedTuple):
    """A device: ``driver``, ``pool`` and ``device`` name (immutable and
    hashable); ``str()`` gives ``driver/pool/device`` as in upstream's messages.
    A named tuple rather than an attrs class: the allocator tests membership
    of device IDs in sets in its innermost loop, and tuples compare in C."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"

    @classmethod
    def of(cls, result: DeviceRequestAllocationResult) -> DeviceID:
        """The device of one allocation result."""
        return cls(result.driver, result.pool, result.device)


def occupying(allocation: AllocationResult) -> Iterable[tuple[DeviceID, DeviceRequestAllocationResult]]:
    """The results of ``allocation`` that occupy their device (all but admin access)."""
    for result in allocation.devices.results:
        if not result.admin_access:
            yield DeviceID.of(result), result


def conflicting_claims(claim: ResourceClaim, others: Iterable[ResourceClaim]) -> list[tuple[ResourceClaim, DeviceID]]:
    """The other allocated claims among ``others`` holding a device that
    ``claim``'s allocation also holds, with that device, where the device
    cannot be shared: neither result is for admin access and not both carry a
    ``shareID`` (a device that allows multiple allocations: consumable
    capacity).  Devices drawing on one shared counter set are distinct devices,
    never a conflict here.  What a late write of a deposed leader can leave
    behind (the API server knows nothing of leases): one device in two claims."""
    if claim.status.allocation is None:
        return []
    mine = {device: result for device, result in occupying(claim.status.allocation)}
    found = []
    for other in others:
        if other.metadata.uid == claim.metadata.uid or other.status.allocation is None:
            continue
        for device, result in occupying(other.status.allocation):
            held = mine.get(device)
            if held is not None and not (held.share_id and result.share_id):
                found.append((other, device))
    return found


def add_amounts(total: dict[str, Fraction], amounts: Mapping[str, Fraction]) -> None:
    """``total += amounts`` per capacity name."""
    for name, amount in amounts.items():
        total[name] = total.get(name, Fraction(0)) + amount


def subtract_amounts(total: dict[str, Fraction], amounts: Mapping[str, Fraction]) -> None:
    """``total -= amounts`` per capacity name (names missing from ``total`` are ignored)."""
    for name, amount in amounts.items():
        if name in total:
            total[name] -= amount


@define
class AllocatedState:
    """What claims already use (upstream ``AllocatedState``).

    ``devices``: exclusively allocated devices (results without admin access and
    without a share ID); ``shared``: ``(device, shareID)`` of the allocations of
    devices that allow multiple allocations; ``consumed_capacity``: per shared
    device, the capacity consumed by all its allocations (exact base units).
    ``compatibility_groups``: per allocated device, the compatibility groups its
    allocation result recorded per counter set (DRADeviceCompatibilityGroups;
    upstream ``AllocatedCompatibilityGroups``), devices that recorded none left out.
    Admin-access results are not counted: they never block other claims.
    Counters consumed by partitionable devices are not stored here; the
    allocator derives them from the slices of the devices that are in use.
    """

    devices: set[DeviceID] = field(factory=set)
    shared: set[tuple[DeviceID, str]] = field(factory=set)
    consumed_capacity: dict[DeviceID, dict[str, Fraction]] = field(factory=dict)
    compatibility_groups: dict[DeviceID, Mapping[str, tuple[str, ...]]] = field(factory=dict)
    _shares: dict[DeviceID, int] = field(init=False, factory=dict, repr=False, eq=False)
    #: how many allocations hold each exclusive device: more than one only after a late write of a deposed
    #: leader (:func:`conflicting_claims`), and the device stays in use until the last one goes
    _holders: dict[DeviceID, int] = field(init=False, factory=dict, repr=False, eq=False)

    def __attrs_post_init__(self):
        for device, _ in self.shared:
            self._shares[device] = self._shares.get(device, 0) + 1
        self._holders = dict.fromkeys(self.devices, 1)

    @classmethod
    def from_claims(cls, claims: Iterable[ResourceClaim]) -> AllocatedState:
        """The state of every allocated claim in ``claims`` (unallocated ones are ignored)."""
        state = cls()
        for claim in claims:
            if claim.status.allocation is not None:
                state.add(claim.status.allocation)
        return state

    def copy(self) -> AllocatedState:
        """An independent copy (a preemption dry run changes it)."""
        copied = AllocatedState(set(self.devices), set(self.shared),
                                {device: dict(used) for device, used in self.consumed_capacity.items()},
                                dict(self.compatibility_groups))
        copied._holders = dict(self._holders)
        return copied

    def add(self, allocation: AllocationResult) -> None:
        """Count the devices of ``allocation`` as in use (an in-flight or newly allocated claim)."""
        for device, result in occupying(allocation):
            if result.compatibility_groups:
                self.compatibility_groups[device] = result.compatibility_groups
            if result.share_id is None:
                self.devices.add(device)
                self._holders[device] = self._holders.get(device, 0) + 1
                continue
            if (device, result.share_id) not in self.shared:
                self.shared.add((device, result.share_id))
                self._shares[device] = self._shares.get(device, 0) + 1
            if result.consumed_capacity:
                add_amounts(self.consumed_capacity.setdefault(device, {}), result.consumed_capacity)

    def remove(self, allocation: AllocationResult) -> None:
        """Undo :meth:`add` (a deallocated claim, a preemption victim in a dry run)."""
        for device, result in occupying(allocation):
            if result.share_id is None:
                holders = self._holders.pop(device, 1) - 1
                if holders > 0:
                    self._holders[device] = holders
                else:
                    self.devices.discard(device)
                    self.compatibility_groups.pop(device, None)
                continue
            if (device, result.share_id) in self.shared:
                self.shared.discard((device, result.share_id))
                self._shares[device] -= 1
                if not self._shares[device]:
                    del self._shares[device]
                    self.compatibility_groups.pop(device, None)
            used = self.consumed_capacity.get(device)
            if used is not None and result.consumed_capacity:
                subtract_amounts(used, result.consumed_capacity)
                if not any(used.values()):
                    del self.consumed_capacity[device]

    def contended(self, allocation: AllocationResult) -> bool:
        """Whether another allocation counted here may hold a device of
        ``allocation`` (itself counted here) that the two cannot share: an
        exclusive device with more than one holder or also held with a share
        ID, a shared device also held exclusively.  False rules out what
        :func:`conflicting_claims` looks for without reading every claim."""
        for device, result in occupying(allocation):
            if result.share_id is None:
                if self._holders.get(device, 0) > 1 or device in self._shares:
                    return True
            elif device in self.devices:
                return True
        return False

    def allocated_ids(self) -> set[DeviceID]:
        """Every device some claim uses, exclusively or as a share (what :meth:`is_allocated` answers, at once)."""
        return self.devices | self._shares.keys() | self.consumed_capacity.keys()

    def is_allocated(self, device: DeviceID) -> bool:
        """True when some claim uses ``device``, exclusively or as a share."""
        return device in self.devices or device in self._shares or device in self.consumed_capacity
