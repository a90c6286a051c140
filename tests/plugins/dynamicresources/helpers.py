"""Builders for allocator tests: DRA objects from short manifest fragments, in the
shape of upstream's allocator test table (drivers driver-a/driver-b, classes
class-a/class-b selecting by driver, nodes node-1/node-2 in region-1/region-2)."""

from __future__ import annotations

import itertools
from typing import Any, Iterable

import attrs

from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.core.api.resource_v1 import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    DeviceToleration,
    OpaqueDeviceConfiguration,
)
from kubesched.core.dra.allocator import AllocatedState, Allocator, DeviceID
from kubesched.core.dra.selectors import SelectorCache
from kubesched.testing import node as make_node

API = "resource.k8s.io/v1"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
NODE_1, NODE_2 = "node-1", "node-2"

_uids = itertools.count(1)

#: A selector for driver-a devices with at least that much ``memory`` capacity (format with a quantity).
MEMORY_AT_LEAST = 'device.capacity["driver-a"].memory.compareTo(quantity("{}")) >= 0'


def node(name: str = NODE_1, region: str = "region-1"):
    return make_node(name, labels={"region": region, "planet": "earth"})


def device_class(name: str = CLASS_A, driver: str = DRIVER_A, *selectors: str, config: Iterable[dict] = ()):
    """A DeviceClass selecting ``driver`` (plus ``selectors``); ``config`` are opaque parameter dicts."""
    expressions = [f'device.driver == "{driver}"', *selectors]
    return from_manifest({
        "apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {
            "selectors": [{"cel": {"expression": e}} for e in expressions],
            "config": [{"opaque": {"driver": driver, "parameters": p}} for p in config],
        },
    })


def classes(*items) -> dict:
    items = items or (device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B))
    return {c.metadata.name: c for c in items}


def _attribute(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": value}


def device(name: str, attributes: dict | None = None, capacity: dict | None = None, **fields: Any) -> dict:
    """A device manifest: ``attributes`` values are Python scalars (or raw
    ``{"version": ...}`` dicts), ``capacity`` values quantities or raw dicts; other
    camelCase fields pass through (``taints``, ``consumesCounters``, ``nodeName``...)."""
    out: dict[str, Any] = {"name": name, **fields}
    if attributes:
        out["attributes"] = {k: _attribute(v) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}
    return out


def devices(count: int, start: int = 0) -> list[dict]:
    return [device(f"device-{i}") for i in range(start, start + count)]


def counters(counter_set: str, **amounts: str) -> dict:
    """One ``consumesCounters`` entry."""
    return {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in amounts.items()}}


def counter_set(name: str, **amounts: str) -> dict:
    """One ``sharedCounters`` entry."""
    return {"name": name, "counters": {k: {"value": v} for k, v in amounts.items()}}


def resource_slice(
    name: str,
    pool: str = "pool-1",
    driver: str = DRIVER_A,
    devices: Iterable[dict] = (),
    *,
    node_name: str | None = NODE_1,
    node_selector: dict | None = None,
    all_nodes: bool = False,
    per_device: bool = False,
    generation: int = 1,
    count: int = 1,
    shared_counters: Iterable[dict] = (),
):
    """A ResourceSlice; by default node-local on node-1, one slice per pool."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
    }
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    elif all_nodes:
        spec["allNodes"] = True
    elif per_device:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_name
    if devices:
        spec["devices"] = list(devices)
    if shared_counters:
        spec["sharedCounters"] = list(shared_counters)
    return from_manifest({
        "apiVersion": API, "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": f"slice-uid-{next(_uids)}"},
        "spec": spec,
    })


def labels_in(key: str, *values: str) -> dict:
    """A one-term node selector manifest: label ``key`` In ``values``."""
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def request(name: str = "req-0", device_class: str = CLASS_A, count: int = 1, *selectors: str, **fields: Any) -> dict:
    """An ``exactly`` request; ``fields`` are raw ExactDeviceRequest fields
    (``allocationMode``, ``adminAccess``, ``tolerations``, ``capacity``)."""
    exactly: dict[str, Any] = {"deviceClassName": device_class, **fields}
    if fields.get("allocationMode") != "All":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def all_request(name: str = "req-0", device_class: str = CLASS_A, *selectors: str, **fields: Any) -> dict:
    return request(name, device_class, 1, *selectors, allocationMode="All", **fields)


def subrequest(name: str, device_class: str = CLASS_A, count: int = 1, *selectors: str, **fields: Any) -> dict:
    body = request(name, device_class, count, *selectors, **fields)["exactly"]
    return {"name": name, **body}


def first_available(name: str, *subrequests: dict) -> dict:
    return {"name": name, "firstAvailable": list(subrequests)}


def claim(name: str = "claim-0", *requests: dict, constraints: Iterable[dict] = (),
          config: Iterable[dict] = (), namespace: str = "default"):
    """A ResourceClaim with ``requests`` (default: one request for one device of class-a)."""
    return from_manifest({
        "apiVersion": API, "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {"devices": {
            "requests": list(requests or [request()]),
            "constraints": list(constraints),
            "config": list(config),
        }},
    })


def taint(key: str = "taint-key", value: str = "taint-value", effect: str = "NoSchedule") -> dict:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str = "taint-key", operator: str = "Exists", effect: str = "NoSchedule", value: str = "") -> dict:
    out = {"key": key, "operator": operator, "effect": effect}
    if value:
        out["value"] = value
    return out


def taint_rule(name: str, taint_: dict, **selector: str):
    """A DeviceTaintRule selecting ``driver``/``pool``/``device`` (none given: an empty selector)."""
    return from_manifest({
        "apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": name},
        "spec": {"deviceSelector": selector, "taint": taint_},
    })


# --- expected results ------------------------------------------------------------------------


def on_node(name: str = NODE_1) -> NodeSelector:
    """The node selector of an allocation with node-local devices."""
    requirement = NodeSelectorRequirement(key="metadata.name", operator="In", values=(name,))
    return NodeSelector(node_selector_terms=(NodeSelectorTerm(match_fields=(requirement,)),))


def result(request_: str, driver: str, pool: str, device_: str, admin: bool = False,
           tolerations: Iterable[dict] = (), **fields: Any) -> DeviceRequestAllocationResult:
    return DeviceRequestAllocationResult(
        request=request_, driver=driver, pool=pool, device=device_,
        admin_access=True if admin else None,
        tolerations=tuple(DeviceToleration(**_snake(t)) for t in tolerations),
        **fields,
    )


def _snake(toleration_: dict) -> dict:
    return {"toleration_seconds" if k == "tolerationSeconds" else k: v for k, v in toleration_.items()}


def allocation(node_selector: NodeSelector | None, *results: DeviceRequestAllocationResult,
               config: Iterable[tuple[str, tuple[str, ...], str, Any]] = ()) -> AllocationResult:
    """An AllocationResult; ``config`` entries are ``(source, requests, driver, parameters)``."""
    return AllocationResult(
        devices=DeviceAllocationResult(
            results=results,
            config=tuple(
                DeviceAllocationConfiguration(source=s, requests=r, opaque=OpaqueDeviceConfiguration(driver=d, parameters=p))
                for s, r, d, p in config
            ),
        ),
        node_selector=node_selector,
    )


def without_share_ids(allocations):
    """``allocations`` with every share ID blanked (they are checked separately)."""
    return [
        attrs.evolve(a, devices=attrs.evolve(a.devices, results=tuple(
            attrs.evolve(r, share_id=None) for r in a.devices.results)))
        for a in allocations
    ]


def allocator(slices: Iterable, classes_: dict | None = None, allocated: Iterable[DeviceID] = (),
              state: AllocatedState | None = None, rules: Iterable = (), cache: SelectorCache | None = None,
              now: float | None = None, **gates: bool) -> Allocator:
    """``gates``: the Allocator's gate options (``list_type_attributes``, ``compatibility_groups``)."""
    state = state if state is not None else AllocatedState(devices=set(allocated))
    return Allocator(list(slices), classes_ if classes_ is not None else classes(), state,
                     cache or SelectorCache(), rules, now, **gates)


def allocate(slices: Iterable, claims: Iterable, classes_: dict | None = None, on=None, **kwargs):
    """Allocate ``claims`` on ``on`` (default node-1)."""
    return allocator(slices, classes_, **kwargs).allocate(on or node(), list(claims))


def dev(driver: str, pool: str, name: str) -> DeviceID:
    return DeviceID(driver, pool, name)
