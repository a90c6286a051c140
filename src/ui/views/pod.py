"""A pod's page: every scheduling attempt from its decision records, and what would make it fit.

Each attempt shows what the framework recorded as it ran
(:mod:`kubesched.core.framework.attempt_record`): PreFilter answers, the Filter
groups (plugin, reason, how many nodes, their names), nodes examined k of N,
the score breakdown of the best nodes (raw, normalized, weighted per plugin;
the chosen node marked), PostFilter's nominated node and victims, where the
cycle failed (Reserve, Permit) and the binding cycle's PreBind/Bind outcome.
"""

from __future__ import annotations

from typing import Any

from kubesched.analysis.explain import explain, quantity
from kubesched.core.api.scheduling_v1beta1 import pod_group_key

from ..outcome import Outcome


def attempt_view(record: dict[str, Any], total_nodes: int) -> dict[str, Any]:
    """One attempt's record as the template shows it."""
    filtered = record.get("filter") or {}
    groups = [{**group, "more": group["count"] - len(group["nodes"])} for group in filtered.get("rejected", [])]
    shortfall = [(node, ", ".join(f"{quantity(r, amount)} {r}" for r, amount in missing.items()))
                 for node, missing in (filtered.get("shortfall") or {}).items()]
    score = record.get("score")
    table = None
    if score:
        table = {"scored": score["scored"], "plugins": [{"plugin": p["plugin"], "weight": p["weight"]}
                                                       for p in score["plugins"]], "rows": []}
        for i, node in enumerate(score["nodes"]):
            table["rows"].append({"node": node, "chosen": node == record.get("node"), "total": score["total"][i],
                                  "cells": [(p["raw"][i], p["normalized"][i], p["weighted"][i])
                                            for p in score["plugins"]]})
    binding = record.get("binding")
    return {"attempt": record.get("attempt"), "time": record.get("time", 0.0), "result": record.get("result", ""),
            "node": record.get("node", ""), "message": record.get("message", ""),
            "movedBy": record.get("movedBy", ""), "profile": record.get("profile", ""),
            "preFilter": record.get("preFilter", []), "preFilterSkipped": record.get("preFilterSkipped", []),
            "evaluated": filtered.get("evaluated"), "feasible": filtered.get("feasible"), "total_nodes": total_nodes,
            "groups": groups, "shortfall": shortfall, "score": table, "postFilter": record.get("postFilter"),
            "failedAt": record.get("failedAt"), "binding": binding}


def pod_page(outcome: Outcome, key: str) -> dict[str, Any] | None:
    """The page of pod ``key`` (``namespace/name``): status, node, every
    attempt (latest first) and, when Pending, the suggestions of
    :func:`kubesched.analysis.explain.explain`; for a pod the run deleted (a preemption's victim, a pod evicted)
    its attempts as recorded, with ``gone`` saying what happened; None when the run never had such a pod."""
    pod = outcome.pod_by_key.get(key)
    records = outcome.by_pod.get(key, [])
    if pod is None and not records:
        return None
    answer = explain(records, key, pod, outcome.nodes.values())
    start = outcome.sim.start_time
    attempts = [attempt_view(record, len(outcome.node_names)) for record in outcome.attempts(key)]
    for attempt in attempts:
        attempt["time"] = attempt["time"] - start
    group_key = pod_group_key(pod) if pod is not None else None
    verdict = outcome.group_verdicts.get(group_key or "")
    group = None if verdict is None else {
        "key": group_key, "status": verdict["status"], "minCount": verdict.get("minCount"),
        "members": len(verdict["members"]), "placed": sum(1 for node in verdict["members"].values() if node)}
    preemption = outcome.preemptions.get(key)
    gone = ""
    if pod is None:
        gone = (f"preempted at +{preemption.time:g}s by {preemption.preemptor or 'a pod now gone'}"
                if preemption is not None else "deleted during the run")
    status = answer["status"]
    if status == "NotAttempted" and key in outcome.explained_by_group:
        status = "Pending"  # never tried alone: its group's attempts speak for it
    return {"key": key, "pod": pod, "status": status,
            "node": (pod.spec.node_name if pod is not None else "") or answer.get("node", ""),
            "message": answer.get("message", ""), "reason": outcome.pending_reasons.get(key, ""),
            "priority": pod.spec.priority or 0 if pod is not None else "-",
            "suggestions": (verdict.get("suggestions", []) if verdict is not None and verdict.get("last")
                            else answer.get("suggestions", []) if pod is not None else []),
            "attempts": attempts[::-1], "preempted": key in outcome.preempted, "gone": gone, "group": group,
            "preemptor": preemption.preemptor if preemption is not None else "",
            "nominated": pod.status.nominated_node_name if pod is not None else ""}
