"""The PodGroups page: every PodGroup (scheduling.k8s.io/v1beta1) with its members in a zone -> rack -> node
tree, minCount vs placed vs waiting, and why the group waits.

Members are the pods whose ``spec.schedulingGroup.podGroupName`` names the
group (same namespace).  A gang's minCount is ``schedulingPolicy.gang.minCount``
(a basic group places members one by one: no minimum).  The rack level is
the group's topology constraint key when it has one (the label every member
must share), else the ``topology`` asked for (default
:data:`DEFAULT_RACK_KEY`); the zone is ``topology.kubernetes.io/zone``.
Why a group waits: its conditions (PodGroupInitiallyScheduled ...), its
latest group attempt's record (every placement tried - a rack of the
topology constraint, say - with how many members it placed, the status
that rejected it and the first member that did not fit there and why) and
each waiting member's latest decision record.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kubesched.analysis.explain import quantity

from ..outcome import Outcome, reason_summary

ZONE_KEY = "topology.kubernetes.io/zone"
#: The rack level when a group names no topology constraint.
DEFAULT_RACK_KEY = "topology.kubernetes.io/rack"


def podgroups_page(outcome: Outcome, topology: str = "") -> dict[str, Any]:
    """``groups``: per PodGroup its policy, minCount, placed and waiting
    members, the topology key, ``tree`` (zone -> rack -> node -> members),
    the waiting members with their reasons, and its conditions."""
    groups = sorted(outcome.sim.cluster.list("PodGroup").items, key=lambda g: g.key)
    members: dict[str, list] = defaultdict(list)
    for pod in outcome.pods:
        group = pod.spec.scheduling_group
        if group is not None and group.pod_group_name:
            members[f"{pod.metadata.namespace}/{group.pod_group_name}"].append(pod)
    out = []
    for group in groups:
        policy = group.spec.scheduling_policy
        constraints = group.spec.scheduling_constraints
        keys = [c.key for c in constraints.topology] if constraints is not None else []
        rack_key = keys[0] if keys else (topology or DEFAULT_RACK_KEY)
        pods = sorted(members.get(group.key, []), key=lambda p: p.key)
        placed = [p for p in pods if p.spec.node_name]
        waiting = [p for p in pods if not p.spec.node_name]
        tree: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(lambda: defaultdict(dict))
        for pod in placed:
            node = outcome.nodes.get(pod.spec.node_name)
            labels = node.metadata.labels if node is not None else {}
            zone = labels.get(ZONE_KEY, "(no zone)")
            rack = labels.get(rack_key, f"(no {rack_key})")
            tree[zone][rack].setdefault(pod.spec.node_name, []).append(pod.key)
        out.append({
            "key": group.key,
            "policy": "gang" if policy.gang is not None else "basic",
            "minCount": policy.gang.min_count if policy.gang is not None else None,
            "members": len(pods), "placed": len(placed), "waiting": [
                {"key": p.key, "reason": outcome.pending_reasons.get(p.key, "")} for p in waiting],
            "rackKey": rack_key, "constrained": bool(keys),
            "tree": {zone: {rack: dict(sorted(nodes.items())) for rack, nodes in sorted(racks.items())}
                     for zone, racks in sorted(tree.items())},
            "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                           for c in group.status.conditions],
            "priority": group.spec.priority,
            "attempts": len(outcome.by_group.get(group.key, [])),
            "last": _attempt(outcome.by_group.get(group.key, []), len(pods)),
            "preempting": _preempting(outcome, group.key),
            "preempted": sorted(({"pod": victim, "time": p.time, "preemptor": p.preemptor}
                                 for victim, p in outcome.preemptions.items()
                                 if outcome.member_of.get(victim) == group.key), key=lambda v: (v["time"], v["pod"])),
        })
    return {"groups": out, "topology": topology or DEFAULT_RACK_KEY}


def _preempting(outcome: Outcome, key: str) -> dict[str, Any] | None:
    """The latest attempt of PodGroup ``key`` that preempted (as ``kubesched explain podgroup/...`` names it):
    attempt number, seconds after the start, plugin, placement and victims; None when it never preempted."""
    preemption = outcome.group_verdicts.get(key, {}).get("preemption")
    if preemption is None:
        return None
    records = outcome.by_group.get(key, [])
    attempt = records[preemption["attempt"] - 1] if 0 < preemption["attempt"] <= len(records) else {}
    return {**preemption, "time": attempt.get("time", outcome.sim.start_time) - outcome.sim.start_time}


def gloss(name: str, placed: int, min_count: int | None, first: str, untried: int) -> str:
    """Upstream's placement verdict (``minCount (4) cannot be satisfied: 2 scheduled, 1 remaining``: scheduled
    counts the members placed, remaining those never tried after the first that did not fit) in plain words."""
    needed = f" of the {min_count} needed" if min_count is not None else ""
    if not first:
        return f"{placed}{needed} fit in {name}"
    return (f"{placed} member(s) placed in {name}, then {first} did not fit"
            + (f" and {untried} more were not tried" if untried > 0 else "") + f": {placed}{needed}")


def _attempt(records: list[dict[str, Any]], members: int) -> dict[str, Any] | None:
    """The group's latest attempt as the page shows it (None: never attempted as a group); ``members``: how
    many pods the group has.  A placement's members placed count those already running (as ``kubesched explain
    podgroup/...`` does: placed of minCount)."""
    if not records:
        return None
    last = records[-1]
    before = last.get("scheduledBefore", 0)
    placements = []
    for placement in last.get("placements", []):
        first = placement.get("firstUnplaced")
        status = placement.get("status") or {}
        placed = before + placement["placed"]
        placements.append({
            "name": placement["name"], "nodes": placement["nodes"], "feasible": placement["feasible"],
            "placed": placed, "minCount": last.get("minCount"), "tried": placement["tried"],
            "gloss": gloss(placement["name"] or "the cluster", placed, last.get("minCount"),
                           first["pod"] if first else "", members - before - placement["tried"]),
            "status": f"{status.get('plugin', '')}: {', '.join(status.get('reasons', []))}" if status else "",
            "chosen": placement["name"] == last.get("placement"),
            "firstUnplaced": None if first is None else {
                "pod": first["pod"], "reason": reason_summary(first.get("rejected", [])) or first.get("message", ""),
                "shortfall": [(node, ", ".join(f"{quantity(r, amount)} {r}" for r, amount in missing.items()))
                              for node, missing in list((first.get("shortfall") or {}).items())[:5]]}})
    return {"attempt": last.get("attempt"), "result": last.get("result", ""), "message": last.get("message", ""),
            "minCount": last.get("minCount"), "scheduledBefore": last.get("scheduledBefore", 0),
            "placement": last.get("placement", ""), "placements": placements}
