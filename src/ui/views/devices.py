"""The Devices page (DRA): ResourceSlices by node, pool and driver; which claim holds which device for
which pods; for a claim still unallocated, why no device matched.

The "why" is computed the way the allocator looks at a device, request by
request: the device's driver must be the one of a DeviceClass selector's
world (every device of every slice is tried), the class's selectors and then
the request's own CEL selectors must hold (the first that does not is
named, or its evaluation error), and the device must not be held by another
claim.  Devices are counted per verdict, with a few names each.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kubesched.core.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.core.cel import CelRuntimeError
from kubesched.core.dra.selectors import DeviceView

from ..device_columns import failing_selector, holders_of
from ..outcome import Outcome
from .cluster import paged, pages_of

#: Device names listed per verdict.
NAMES_SHOWN = 8


def claim_verdicts(claim: ResourceClaim, slices: list[ResourceSlice], classes: dict[str, DeviceClass],
                   holders: dict[tuple[str, str, str], ResourceClaim],
                   memo: dict[tuple, dict[str, list[str]]] | None = None) -> list[dict[str, Any]]:
    """Per request of an unallocated ``claim``: its device class, count and
    the devices by verdict (``matches, free``; ``held by <claim>``; ``class
    selector is false: ...``; ``request selector is false: ...``).  ``memo``
    keeps the verdicts of a (class, selectors) pair for the next claim (the
    claims of one template ask the same)."""
    memo = {} if memo is None else memo
    out = []
    for request in claim.spec.devices.requests:
        subrequests: list[tuple[str, Any]] = (
            [(request.name, request.exactly)] if request.exactly is not None
            else [(f"{request.name}/{sub.name}", sub) for sub in request.first_available])
        for label, sub in subrequests:
            device_class = classes.get(sub.device_class_name)
            memo_key = (sub.device_class_name, tuple(s.cel.expression for s in sub.selectors if s.cel))
            verdicts: dict[str, list[str]] = defaultdict(list)
            if memo_key in memo:
                verdicts = memo[memo_key]
            elif device_class is None:
                verdicts[f"DeviceClass {sub.device_class_name!r} does not exist"] = []
            else:
                expressions = [("class", s.cel.expression) for s in device_class.spec.selectors if s.cel]
                expressions += [("request", s.cel.expression) for s in sub.selectors if s.cel]
                for resource_slice in slices:
                    spec = resource_slice.spec
                    for device in spec.devices:
                        name = f"{spec.node_name or spec.pool.name}/{device.name}"
                        try:
                            failing = failing_selector(expressions, DeviceView.from_device(spec.driver, device))
                        except CelRuntimeError as err:
                            failing = f"attributes cannot be read: {err}"
                        holder = holders.get((spec.driver, spec.pool.name, device.name))
                        if failing:
                            verdicts[failing].append(name)
                        elif holder is not None:
                            verdicts[f"matches, held by claim {holder.key}"].append(name)
                        else:
                            verdicts["matches, free"].append(name)
                memo[memo_key] = verdicts
            out.append({"request": label,
                        "deviceClass": sub.device_class_name, "count": sub.count,
                        "mode": sub.allocation_mode,
                        "verdicts": sorted(((verdict, len(names), names[:NAMES_SHOWN])
                                            for verdict, names in verdicts.items()),
                                           key=lambda v: (not v[0].startswith("matches"), -v[1]))})
    return out


def devices_page(outcome: Outcome, page: int = 1, claims_page: int = 1) -> dict[str, Any]:
    """The Devices page's data: one page of ``devices`` (node, pool, driver,
    device, its holder claim and that claim's pods) and one page of
    ``claims`` (unallocated ones first: the pods waiting for them and
    :func:`claim_verdicts`; then allocated ones with their devices)."""
    cluster = outcome.sim.cluster
    slices = sorted(cluster.list("ResourceSlice").items,
                    key=lambda s: (s.spec.node_name or "", s.spec.pool.name, s.spec.driver, s.metadata.name))
    claims = sorted(cluster.list("ResourceClaim").items, key=lambda c: c.key)
    classes = {c.metadata.name: c for c in cluster.list("DeviceClass").items}
    holders = holders_of(claims)
    pods_of = {claim.key: [f"{claim.metadata.namespace}/{ref.name}" for ref in claim.status.reserved_for]
               for claim in claims}
    waiting: dict[str, list[str]] = defaultdict(list)
    for pod in outcome.pending:
        for status in pod.status.resource_claim_statuses:
            if status.resource_claim_name:
                waiting[f"{pod.metadata.namespace}/{status.resource_claim_name}"].append(pod.key)
        for ref in pod.spec.resource_claims:
            if ref.resource_claim_name:
                waiting[f"{pod.metadata.namespace}/{ref.resource_claim_name}"].append(pod.key)
    claims.sort(key=lambda c: (c.status.allocation is not None, c.key))
    claims_page, low, high = paged(len(claims), claims_page)
    claim_rows: list[dict[str, Any]] = []
    memo: dict[tuple, dict[str, list[str]]] = {}
    for claim in claims[low:high]:
        allocation = claim.status.allocation
        row: dict[str, Any] = {"key": claim.key, "pods": pods_of[claim.key], "allocated": allocation is not None,
                               "waiting": sorted(set(waiting.get(claim.key, [])))}
        if allocation is not None:
            row["devices"] = [f"{r.driver} {r.pool}/{r.device} ({r.request})" for r in allocation.devices.results]
        else:
            row["requests"] = claim_verdicts(claim, slices, classes, holders, memo)
        claim_rows.append(row)
    devices = [(resource_slice, device) for resource_slice in slices for device in resource_slice.spec.devices]
    page, low, high = paged(len(devices), page)
    rows = []
    for resource_slice, device in devices[low:high]:
        spec = resource_slice.spec
        holder = holders.get((spec.driver, spec.pool.name, device.name))
        rows.append({"node": spec.node_name or "", "pool": spec.pool.name, "driver": spec.driver,
                     "slice": resource_slice.metadata.name, "device": device.name,
                     "attributes": ", ".join(f"{k}={_attribute_text(v)}" for k, v in device.attributes.items()),
                     "claim": holder.key if holder is not None else "",
                     "pods": pods_of.get(holder.key, []) if holder is not None else []})
    return {"devices": rows, "page": page, "pages": pages_of(len(devices)), "device_count": len(devices),
            "claims": claim_rows, "claims_page": claims_page, "claims_pages": pages_of(len(claims)),
            "claim_count": len(claims)}


def _attribute_text(value: Any) -> str:
    for name in ("string_value", "int_value", "bool_value", "version_value"):
        found = getattr(value, name, None)
        if found is not None:
            return str(found).lower() if isinstance(found, bool) else str(found)
    return str(value)
