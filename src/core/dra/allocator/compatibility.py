"""Device compatibility groups (DRADeviceCompatibilityGroups, KEP-5963, 1.37 alpha):
which devices may draw on one shared counter set together.

A device's ``consumesCounters[]`` entry may name ``compatibilityGroups``.  Two
devices consuming from the same counter set are allocated together only if
both name no group, or if the groups of every device on that counter set have
an element in common (the running intersection of the groups stays non-empty;
the relation is symmetric, not transitive: ``{a, b}`` and ``{b, c}`` go
together, ``{a}`` and ``{c}`` then do not join them).  Devices already allocated
count through the snapshot the scheduler recorded in their allocation result
(``compatibilityGroups``, per counter set), not the slice as it is now; an
allocated device without a snapshot entry counts as naming no group.

The state of one counter set is None (no device on it
yet: anything may join), :data:`UNGROUPED` (every device on it names no group:
only such devices may join) or the non-empty frozenset of the groups all its
devices share.  Upstream: ``compatibilityGroupIntersection`` in the structured
allocator's experimental variant.

With the gate off, a scheduler does not validate groups, so it leaves alone a
device that names groups and a device whose counter set holds an allocated
device that named some (upstream's skip during a version skew): such
allocations stay valid when the gate is turned on later.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from kubesched.core.api.resource_v1 import Device, ResourceSlice
from kubesched.core.dra.allocated_devices import AllocatedState, DeviceID


class _Ungrouped:
    """The state of a counter set whose devices all name no group."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNGROUPED"


UNGROUPED = _Ungrouped()


def admits(state, groups: frozenset[str]) -> bool:
    """Whether a device naming ``groups`` on a counter set in ``state`` may join it."""
    if state is None:
        return True
    if not groups:
        return state is UNGROUPED
    if state is UNGROUPED:
        return False
    return not state.isdisjoint(groups)


def joined(state, groups: frozenset[str]):
    """``state`` after a device naming ``groups`` joined (``admits`` was true)."""
    if state is None:
        return groups or UNGROUPED
    if state is UNGROUPED or not groups:
        return state
    return state & groups


def declared(device: Device) -> dict[str, frozenset[str]]:
    """The groups ``device`` names, per counter set it consumes from (empty sets included)."""
    return {consumption.counter_set: frozenset(consumption.compatibility_groups)
            for consumption in device.consumes_counters}


def snapshot(device: Device) -> dict[str, tuple[str, ...]]:
    """What an allocation result records of ``device``: its groups per counter set, only
    counter sets on which it names some (empty when it names none)."""
    return {consumption.counter_set: consumption.compatibility_groups
            for consumption in device.consumes_counters if consumption.compatibility_groups}


def names_groups(device: Device) -> bool:
    """Whether ``device`` names a compatibility group on any counter set."""
    return any(consumption.compatibility_groups for consumption in device.consumes_counters)


def baseline(driver: str, pool: str, slices: Iterable[ResourceSlice], allocated: AllocatedState) -> dict[str, object]:
    """Per counter set of the pool, the state the allocated devices leave (counter-set
    membership from the slices, the groups from the allocations' snapshots)."""
    states: dict[str, object] = {}
    for resource_slice in slices:
        for device in resource_slice.spec.devices:
            if not device.consumes_counters:
                continue
            device_id = DeviceID(driver, pool, device.name)
            if not allocated.is_allocated(device_id):
                continue
            recorded: Mapping[str, tuple[str, ...]] = allocated.compatibility_groups.get(device_id, {})
            for consumption in device.consumes_counters:
                name = consumption.counter_set
                states[name] = joined(states.get(name), frozenset(recorded.get(name, ())))
    return states


def grouped(states: Mapping[str, object]) -> bool:
    """Whether some allocated device on one of these counter sets named groups."""
    return any(state is not None and state is not UNGROUPED for state in states.values())
