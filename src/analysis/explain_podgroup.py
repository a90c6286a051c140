"""Why a PodGroup waits, or where it went: ``kubesched explain podgroup/NS/NAME``.

kube-scheduler says of a waiting gang one line ("minCount (8) cannot be
satisfied: 6 scheduled, 0 remaining").  This reads the PodGroup's decision
records (``phase: podgroup``, written by the PodGroup cycle) and answers with
its latest attempt: each placement tried (a rack, say) with how many members
it placed against ``minCount``, the first member that did not fit there and
the reasons per group of nodes, and what would make the group fit - the
placement that came closest and the resources its next member lacked on the
nodes that fail only on them.
"""

from __future__ import annotations

from typing import Any, Iterable

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED, PodGroup, pod_group_key

from .explain import NODES_SHOWN, held_after_last_attempt, held_message, quantity

#: The prefix that names a PodGroup where ``kubesched explain`` takes a pod.
PREFIX = "podgroup/"


def pod_group_arg(name: str) -> str | None:
    """``NS/NAME`` of ``podgroup/NS/NAME``, ``NAME`` of ``podgroup/NAME`` (the caller looks the name up: in the
    default namespace, else the one namespace holding it); None for anything else (a pod)."""
    if not name.startswith(PREFIX):
        return None
    return name[len(PREFIX):]


def group_attempts(records: Iterable[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The PodGroup cycle records of group ``key``, oldest first."""
    return [r for r in records if r.get("phase") == "podgroup" and r.get("podGroup") == key]


def explain_pod_group(records: Iterable[dict[str, Any]], key: str, pod_group: PodGroup | None = None,
                      pods: Iterable[Pod] = ()) -> dict[str, Any]:
    """The explanation of PodGroup ``key`` (JSON-ready): ``status`` (Scheduled
    once its condition says so, Pending, NotAttempted), ``minCount``,
    ``members`` (pod -> node, "" while waiting), ``attempts``, ``last`` (the
    latest group record), ``preemption`` (the latest attempt that preempted:
    its number, the plugin, the placement and the victims), ``placements``
    (per placement tried: name, placed of minCount, feasible, the first member
    that did not fit and why) and ``suggestions``."""
    members = {p.key: p.spec.node_name for p in pods if pod_group_key(p) == key}
    out: dict[str, Any] = {"podGroup": key, "members": dict(sorted(members.items()))}
    if pod_group is not None:
        out["minCount"] = pod_group.min_count
        if pod_group.topology_key:
            out["topologyKey"] = pod_group.topology_key
        condition = pod_group.condition(POD_GROUP_INITIALLY_SCHEDULED)
        if condition is not None:
            out["condition"] = {"status": condition.status, "reason": condition.reason, "message": condition.message}
    records = list(records)
    attempts = group_attempts(records, key)
    out["attempts"] = len(attempts)
    if not attempts:
        out["status"] = "NotAttempted"
        held = [(member, hold) for member in sorted(members)
                if (hold := held_after_last_attempt(records, member)) is not None]
        if held:
            member, hold = held[0]
            out["message"] = f"no attempt of this group was recorded: {member} {held_message(hold)}" + (
                f" (and {len(held) - 1} more member(s) held)" if len(held) > 1 else "")
        else:
            out["message"] = "no attempt of this group was recorded (its members may still be held by PreEnqueue: " \
                             "`kubesched explain` of a member tells why)"
        return out
    last = attempts[-1]
    out["last"] = last
    out["status"] = "Scheduled" if last.get("result") == "Scheduled" else "Pending"
    placed = sum(1 for node in members.values() if node)
    if pod_group is not None and pod_group.is_gang and condition_true(pod_group) and placed < pod_group.min_count:
        out["status"] = "Stranded"
        out["message"] = (f"the gang ran, and now {placed} of its minCount {pod_group.min_count} pods do: "
                          "its replacements go ahead of new work of its priority (PrioritySort strandedGangsFirst)")
    preempted = next(((number, a["postFilter"]) for number, a in reversed(list(enumerate(attempts, 1)))
                      if a.get("postFilter")), None)
    if preempted is not None:
        out["preemption"] = {"attempt": preempted[0], **preempted[1]}
    out["placements"] = [_placement(entry, last.get("minCount", 0), last.get("scheduledBefore", 0))
                         for entry in last.get("placements", [])]
    if out["status"] != "Scheduled":
        out["suggestions"] = suggestions(last)
    return out


def condition_true(pod_group: PodGroup) -> bool:
    """Was the group placed once (PodGroupInitiallyScheduled=True)?"""
    condition = pod_group.condition(POD_GROUP_INITIALLY_SCHEDULED)
    return condition is not None and condition.status == "True"


def _placement(entry: dict[str, Any], min_count: int, before: int) -> dict[str, Any]:
    out = {"name": entry.get("name") or "all nodes", "nodes": entry.get("nodes", 0), "feasible": entry.get("feasible"),
           "placed": before + entry.get("placed", 0), "minCount": min_count, "tried": entry.get("tried", 0)}
    status = entry.get("status")
    if status:
        out["message"] = "; ".join(status.get("reasons", []))
    first = entry.get("firstUnplaced")
    if first:
        out["firstUnplaced"] = first
    return out


def suggestions(record: dict[str, Any]) -> list[str]:
    """What would make the group of ``record`` fit: for the placements that
    came closest, the resources their next member lacked on the nodes that
    fail only on resources."""
    out = []
    min_count = record.get("minCount", 0)
    before = record.get("scheduledBefore", 0)
    tried = sorted(record.get("placements", []), key=lambda p: -p.get("placed", 0))
    for entry in tried[:NODES_SHOWN]:
        first = entry.get("firstUnplaced") or {}
        shortfall = first.get("shortfall") or {}
        name = entry.get("name") or "the cluster"
        placed = before + entry.get("placed", 0)
        if not shortfall:
            continue
        need = max(min_count - placed, 1)
        for node, missing in list(shortfall.items())[:1]:
            wants = ", ".join(f"{quantity(resource, amount)} more {resource}" for resource, amount in missing.items())
            out.append(f"{name} would fit {placed + 1} of {min_count} members with {wants} free on node {node}"
                       + (f" (and room for {need - 1} more member(s) like {first.get('pod')})" if need > 1 else ""))
    return out
