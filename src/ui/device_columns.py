"""Devices (DRA) as per-node columns beside cpu and memory: per DeviceClass, how many of a node's devices
(its ResourceSlices') the class selects and how many of those claims hold.

The cluster page's grid and table, a node's page and the sort by share read these columns like any
resource: ``devices/<class>``, allocatable = devices of the class on the node, requested = those allocated.
A device is of a class when its driver publishes it in a slice of that node and every CEL selector of the
class holds (as the allocator decides; a selector that fails on a device does not select it).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from kubesched.core.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.core.cel import CelCompileError, CelRuntimeError, compile
from kubesched.core.dra.selectors import DeviceView

#: The prefix of a device column's resource name.
PREFIX = "devices/"


def holders_of(claims: Iterable[ResourceClaim]) -> dict[tuple[str, str, str], ResourceClaim]:
    """(driver, pool, device) -> the claim whose allocation holds it."""
    out = {}
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for result in allocation.devices.results:
            out[(result.driver, result.pool, result.device)] = claim
    return out


def failing_selector(expressions: list[tuple[str, str]], view: DeviceView) -> str:
    """The first (where, expression) that the device does not satisfy, as text ("" when all hold)."""
    for where, expression in expressions:
        try:
            if not compile(expression).matches(view):
                return f"{where} selector is false: {expression}"
        except (CelRuntimeError, CelCompileError) as err:
            return f"{where} selector fails: {err}"
    return ""


def class_devices(slices: Iterable[ResourceSlice], classes: Iterable[DeviceClass],
                  node_index: dict[str, int]) -> dict[str, dict[tuple[str, str, str], int]]:
    """``devices/<class>`` -> {(driver, pool, device): node row} of the devices of nodes in ``node_index`` the
    class selects, classes sorted by name; classes selecting no device of any node are left out."""
    per_node = [(s.spec.driver, s.spec.pool.name, node_index[s.spec.node_name], s.spec.devices)
                for s in slices if s.spec.node_name in node_index]
    out = {}
    for device_class in sorted(classes, key=lambda c: c.metadata.name):
        expressions = [("class", s.cel.expression) for s in device_class.spec.selectors if s.cel]
        selected: dict[tuple[str, str, str], int] = {}
        for driver, pool, row, devices in per_node:
            for device in devices:
                try:
                    if not failing_selector(expressions, DeviceView.from_device(driver, device)):
                        selected[(driver, pool, device.name)] = row
                except CelRuntimeError:
                    pass
        if selected:
            out[PREFIX + device_class.metadata.name] = selected
    return out


def device_columns(slices: Iterable[ResourceSlice], classes: Iterable[DeviceClass], claims: Iterable[ResourceClaim],
                   node_index: dict[str, int]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``devices/<class>`` -> (devices of the class per node, of which held by a claim), int64 arrays indexed
    like ``node_index`` (node name -> row); classes selecting no device of any node are left out."""
    holders = holders_of(claims)
    out = {}
    for column, selected in class_devices(slices, classes, node_index).items():
        total = np.zeros(len(node_index), dtype=np.int64)
        held = np.zeros(len(node_index), dtype=np.int64)
        for device, row in selected.items():
            total[row] += 1
            held[row] += device in holders
        out[column] = (total, held)
    return out
