"""The scheduler's side of decision records: what Filter, PostFilter and the
binding cycle did, added to the attempt's
:class:`~kubesched.core.framework.attempt_record.AttemptRecord` and written to the
:class:`~kubesched.core.observability.decision_log.DecisionLog`.

Everything here runs only when a DecisionLog is set and wants the pod.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..api.scheduling_v1beta1 import pod_group_key
from ..dra.claims import ClaimNameError, pod_claims
from ..dra.manager import DRAManager
from ..framework.attempt_record import MAX_NODES_PER_GROUP, AttemptRecord, group_statuses, status_json
from ..framework.cycle_state import CycleState
from ..framework.nodeinfo import NodeInfo
from ..framework.podgroups import PodGroupManager
from ..framework.resources import pod_requests
from ..framework.runtime import Framework
from ..framework.snapshot import Snapshot
from ..framework.status import Status
from ..observability.decision_log import DecisionLog

#: The Filter plugins whose rejections :func:`resource_shortfall` and :func:`device_shortfall` explain.
FIT_PLUGIN = "NodeResourcesFit"
DRA_PLUGIN = "DynamicResources"
#: Nodes rejected by NodeResourcesFit that are checked against the other
#: Filter plugins, smallest shortfall first, when explaining a Pending pod.
MAX_SHORTFALL_CHECKS = 100


def record_feasible(record: AttemptRecord, fwk: Framework, state: Any, pod: Any, snapshot: Snapshot,
                    evaluated: np.ndarray, feasible: np.ndarray) -> None:
    """Filter found ``feasible`` among the ``evaluated`` rows: group what the
    plugins said of the others."""
    rejected: list[tuple[str, Status]] = []
    if len(feasible) < len(evaluated):
        left = np.zeros(len(snapshot), dtype=bool)
        left[evaluated] = True
        left[feasible] = False
        rejected_rows = np.flatnonzero(left)
        statuses = fwk.filter_statuses(state, pod, snapshot, rejected_rows)
        rejected = [(snapshot.nodes[row].name, status) for row in rejected_rows.tolist()
                    if (status := statuses[row]) is not None]
    record.filtered(len(evaluated), len(feasible), rejected)


def record_unschedulable(record: AttemptRecord, fwk: Framework, state: Any, pod: Any, snapshot: Snapshot,
                         node_status: Mapping[str, Status]) -> None:
    """No node fits: every node's status, grouped, and the resources missing on
    the nodes that only NodeResourcesFit rejected."""
    rejected = sorted(node_status.items())
    record.filtered(len(snapshot), 0, rejected, resource_shortfall(fwk, state, pod, snapshot, node_status),
                    resources_lacking(pod, snapshot, node_status))


def resources_lacking(pod: Any, snapshot: Snapshot, node_status: Mapping[str, Status]) -> dict[str, list[str]]:
    """For up to :data:`MAX_NODES_PER_GROUP` nodes that NodeResourcesFit
    rejected: the resources the pod requests that the node does not have at
    all (none allocatable), which no amount of freeing would give it."""
    requests = pod_requests(pod)
    out: dict[str, list[str]] = {}
    for name, status in sorted(node_status.items()):
        info = snapshot.get(name) if status.plugin == FIT_PLUGIN else None
        absent = [r for r, amount in requests.items() if amount and info is not None and not info.allocatable.get(r)]
        if absent:
            out[name] = absent
            if len(out) >= MAX_NODES_PER_GROUP:
                break
    return out


def resource_shortfall(fwk: Framework, state: Any, pod: Any, snapshot: Snapshot,
                       node_status: Mapping[str, Status]) -> dict[str, dict[str, int]]:
    """For up to :data:`MAX_NODES_PER_GROUP` nodes that NodeResourcesFit
    rejected and every other Filter plugin accepts, and that have some of
    every resource they lack (:func:`resources_lacking` names the others):
    resource -> how much more the pod requests than the node has free
    (scheduler units: milli-CPU, bytes, counts), the nodes needing the least first."""
    requests = pod_requests(pod)
    shortfalls: list[tuple[tuple[int, float], str, dict[str, int]]] = []
    for name, status in node_status.items():
        if status.plugin != FIT_PLUGIN:
            continue
        info = snapshot.get(name)
        if info is None:
            continue
        missing = _missing(info, requests)
        if missing and all(info.allocatable.get(r, 0) for r in missing):  # not one it has none of
            allocatable = info.allocatable
            relative = sum(amount / max(allocatable.get(resource, 0), 1) for resource, amount in missing.items())
            shortfalls.append(((len(missing), relative), name, missing))
    shortfalls.sort(key=lambda item: (item[0], item[1]))
    out: dict[str, dict[str, int]] = {}
    others = [(plugin, method) for plugin, method in fwk.filter_plugins
              if plugin != FIT_PLUGIN and plugin not in state.skip_filter_plugins]
    for _, name, missing in shortfalls[:MAX_SHORTFALL_CHECKS]:
        info = snapshot.get(name)
        if info is not None and all(_passes(method(state, pod, info)) for _, method in others):
            out[name] = missing
            if len(out) >= MAX_NODES_PER_GROUP:
                break
    return out


def _missing(info: NodeInfo, requests: Mapping[str, int]) -> dict[str, int]:
    allocatable = info.allocatable
    requested = info.requested
    missing = {}
    for resource, amount in requests.items():
        free = allocatable.get(resource, 0) - requested.get(resource, 0)
        if amount > free:
            missing[resource] = amount - max(free, 0)
    pods = allocatable.get("pods")
    if pods is not None and len(info.pods) + 1 > pods:
        missing["pods"] = len(info.pods) + 1 - pods
    return missing


def _passes(status: Status | None) -> bool:
    return status is None or status.is_success()


def write_attempt(decisions: DecisionLog | None, state: CycleState, result: str, message: str, node_name: str = "",
                  failed_at: tuple[str, Status] | None = None, nominated: str | None = None) -> None:
    """Finish the scheduling attempt's record in ``state`` (when it is
    recorded): its ``result`` (``Scheduled``, ``Unschedulable``, ...),
    message, node, the extension point and status that failed it, the node
    PostFilter nominated; and hand it to ``decisions``."""
    record = state.record
    if record is None or decisions is None:
        return
    record.result, record.message, record.node = result, message, node_name
    if failed_at is not None:
        record.failed_at = {"extensionPoint": failed_at[0], **(status_json(failed_at[1]) or {})}
    if nominated:
        record.post_filter = {**(record.post_filter or {}), "nominatedNodeName": nominated}
    decisions.write(record.to_json())


def binding_record(record: AttemptRecord, now: float, node_name: str, status: Status | None) -> dict[str, Any]:
    """The binding cycle's line (at time ``now``) for the attempt ``record`` describes."""
    out: dict[str, Any] = {"pod": record.pod, "uid": record.uid, "attempt": record.attempt, "time": now,
                           "profile": record.profile, "phase": "binding", "node": node_name, "result": "Bound" if status is None else "BindingFailed"}
    if status is not None:
        out["message"] = status.message()
        out["failedAt"] = status_json(status)
    return out


def first_unplaced(fwk: Framework, state: Any, pod: Any, snapshot: Snapshot, fit: Any,
                   dra: DRAManager | None = None, group: Any = None) -> dict[str, Any]:
    """The first member of a PodGroup that did not fit in a placement, as its
    group's record keeps it: the pod, upstream's FitError message, the
    rejected nodes grouped, and what is missing on the nodes that only one
    plugin rejected: resources (NodeResourcesFit) or free devices of a
    claim's DeviceClass (DynamicResources, with the scheduler's ``dra``
    manager; ``group``: the pod's PodGroup, for the claims it shares) - taken
    while the members before it are assumed."""
    node_status = fit.diagnosis.node_status
    out: dict[str, Any] = {"pod": pod.key, "message": fit.message(),
                           "rejected": group_statuses(sorted(node_status.items()))}
    shortfall = resource_shortfall(fwk, state, pod, snapshot, node_status)
    if dra is not None:
        for name, missing in device_shortfall(fwk, state, pod, snapshot, node_status, dra, group).items():
            if len(shortfall) < MAX_NODES_PER_GROUP or name in shortfall:
                shortfall.setdefault(name, {}).update(missing)
    if shortfall:
        out["shortfall"] = shortfall
    return out


def device_shortfall(fwk: Framework, state: Any, pod: Any, snapshot: Snapshot, node_status: Mapping[str, Status],
                     dra: DRAManager, group: Any = None) -> dict[str, dict[str, int]]:
    """For up to :data:`MAX_NODES_PER_GROUP` nodes that DynamicResources rejected
    and every other Filter plugin accepts: ``"<DeviceClass> devices"`` -> how
    many more free devices of that class the pod's unallocated claims ask
    for than the node has (a class's own selectors, not the request's)."""
    try:
        claims = pod_claims(pod, dra.get_claim, group)
    except ClaimNameError:
        return {}
    wanted: dict[str, int] = {}
    for _, claim in claims:
        if claim.status.allocation is not None:
            continue
        for request in claim.spec.devices.requests:
            exact = request.exactly if request.exactly is not None else (
                request.first_available[0] if request.first_available else None)
            if exact is not None and exact.device_class_name:
                wanted[exact.device_class_name] = wanted.get(exact.device_class_name, 0) + max(exact.count, 1)
    if not wanted:
        return {}
    others = [(plugin, method) for plugin, method in fwk.filter_plugins
              if plugin != DRA_PLUGIN and plugin not in state.skip_filter_plugins]
    out: dict[str, dict[str, int]] = {}
    for name, status in node_status.items():
        if status.plugin != DRA_PLUGIN:
            continue
        info = snapshot.get(name)
        if info is None or info.node is None:
            continue
        missing = {}
        for class_name, count in wanted.items():
            devices = dra.class_devices(class_name, info.node)
            free = sum(1 for device in devices if not dra.allocated.is_allocated(device))
            if count > free:
                missing[f"{class_name} devices"] = count - free
        if missing and all(_passes(method(state, pod, info)) for _, method in others):
            out[name] = missing
            if len(out) >= MAX_NODES_PER_GROUP:
                break
    return out


class GroupAttemptNotes:
    """What a recorded PodGroup cycle's plugins add to its line, kept as the
    group CycleState's ``record``: ``post_filter``, PodGroupPostFilter's
    preemption (plugin, placement, victims), where a pod's attempt record
    keeps its PostFilter's."""

    __slots__ = ("post_filter",)

    def __init__(self) -> None:
        self.post_filter: dict[str, Any] | None = None


def group_record(key: str, attempt: int, now: float, profile: str, result: str, message: str, min_count: int,
                 scheduled_before: int, placements: list[dict[str, Any]], chosen: str | None = None,
                 assignments: dict[str, str] | None = None, post_filter: dict[str, Any] | None = None,
                 ) -> dict[str, Any]:
    """A PodGroup attempt's line (``phase: podgroup``): its result and message,
    ``minCount``, members placed before it, per placement tried (``placements``:
    name, nodes, feasible, placed, tried, status, firstUnplaced), when it
    was placed the ``chosen`` placement and each member's node, and when it
    preempted, ``postFilter`` (plugin, placement, victims)."""
    out: dict[str, Any] = {"podGroup": key, "attempt": attempt, "time": now, "profile": profile,
                           "phase": "podgroup", "result": result, "minCount": min_count,
                           "scheduledBefore": scheduled_before, "placements": placements}
    if message:
        out["message"] = message
    if chosen is not None:
        out["placement"] = chosen
        out["assignments"] = assignments or {}
    if post_filter is not None:
        out["postFilter"] = post_filter
    return out


def record_held(log: DecisionLog, pod: Any, status: Status, since: float, pod_groups: PodGroupManager) -> None:
    """The decision record line of a pod PreEnqueue holds (``phase: preEnqueue``): the plugin, its message,
    since when (seconds since the epoch) and, for a member of a gang, how many of its PodGroup's pods are
    present against ``minCount``.  Written when the hold starts or its reason changes."""
    key = f"{pod.metadata.namespace}/{pod.metadata.name}"
    group_key = pod_group_key(pod)
    # a member's hold is part of its PodGroup's story too (explain podgroup/NS/NAME)
    if not (log.wants(key) or (group_key is not None and log.wants(f"podgroup/{group_key}"))):
        return
    record: dict[str, Any] = {"pod": key, "uid": pod.metadata.uid, "time": since, "phase": "preEnqueue",
                              "result": "Held", "plugin": status.plugin, "message": status.message(),
                              "since": since}
    group = pod_groups.pod_group(group_key) if group_key is not None else None
    if group_key is not None and group is not None and group.is_gang:
        record["gang"] = {"podGroup": group_key, "present": len(pod_groups.state(group_key).all_pods),
                          "minCount": group.min_count}
    log.write(record)
