"""Why a pod is where it is, or why it is Pending: ``kubesched explain``.

It reads the records the scheduler made of the pod's attempts
(:mod:`kubesched.core.framework.attempt_record`; from a simulation run for the
purpose or a decisions file) and answers with the latest attempt: the
plugin and reason that rejected each group of nodes, the best nodes' score
breakdown side by side, PostFilter's outcome, the binding cycle's result,
and for a Pending pod the smallest changes that would make it fit where
they can be computed - the nodes that fail only on resources and by how
much, the taint to tolerate, the labels to add, the node to uncordon.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Iterable

from kubesched.core.api.core_v1 import Node, Pod
from kubesched.core.quantity import MILLI_RESOURCES, format_quantity

#: Nodes per suggestion named in full.
NODES_SHOWN = 5
#: The decision record line of a pod PreEnqueue holds.
PRE_ENQUEUE = "preEnqueue"

_TAINT = re.compile(r"untolerated taint (\{.*\})")


def pod_key(name: str) -> str:
    """``namespace/name`` of a pod named ``name`` or ``namespace/name`` (default namespace)."""
    return name if "/" in name else f"default/{name}"


def attempts_of(records: Iterable[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The scheduling attempts of pod ``key``, oldest first, each with its
    binding cycle's line under ``"binding"`` when there is one."""
    attempts: list[dict[str, Any]] = []
    by_attempt: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        if record.get("pod") != key or record.get("phase") == PRE_ENQUEUE:
            continue
        ident = (record.get("uid", ""), record.get("attempt", 0))
        if record.get("phase") == "binding":
            attempt = by_attempt.get(ident)
            if attempt is not None:
                attempt["binding"] = record
            continue
        attempt = dict(record)
        attempts.append(attempt)
        by_attempt[ident] = attempt
    return attempts


def explain(records: Iterable[dict[str, Any]], key: str, pod: Pod | None = None,
            nodes: Iterable[Node] = ()) -> dict[str, Any]:
    """The explanation of pod ``key`` (JSON-ready): ``status`` (Scheduled;
    Binding: its binding cycle has not ended; Pending; NotAttempted), ``node``, ``attempts`` (how many), ``last`` (the
    latest attempt's record) and ``suggestions`` (for a Pending pod; label
    suggestions need the ``pod`` and the ``nodes`` as they are now).  A pod PreEnqueue held after its last
    attempt (or before any) says so: ``held`` ("held at PreEnqueue by PLUGIN: message (N of M present),
    since TIME"), and ``message`` when it was never attempted."""
    records = list(records)
    attempts = attempts_of(records, key)
    held = held_after_last_attempt(records, key)
    if held is not None and not attempts:
        return {"pod": key, "status": "NotAttempted", "attempts": 0, "message": held_message(held),
                "heldBy": held.get("plugin", ""), "since": held.get("since")}
    if not attempts:
        message = "no scheduling attempt of this pod was recorded"
        if pod is not None and pod.spec.scheduling_gates:
            gates = ", ".join(gate.name for gate in pod.spec.scheduling_gates)
            message = f"the pod waits for its scheduling gates ({gates}): PreEnqueue keeps it out of the queue"
        elif pod is not None and pod.spec.node_name:
            message = f"the pod was bound to {pod.spec.node_name} before the scheduler saw it"
        return {"pod": key, "status": "NotAttempted", "attempts": 0, "message": message}
    last = attempts[-1]
    binding = last.get("binding")
    out: dict[str, Any] = {"pod": key, "status": "Pending", "attempts": len(attempts), "last": last}
    if binding is not None and binding.get("result") == "Bound":
        out["status"], out["node"] = "Scheduled", binding["node"]
    elif binding is None and last.get("result") in ("Scheduled", "WaitingOnPermit"):
        out["status"], out["node"] = "Binding", last.get("node", "")
    else:
        out["suggestions"] = suggestions(last, pod, {n.metadata.name: n for n in nodes})
    if held is not None:
        out["held"] = held_message(held)
    return out


def held_after_last_attempt(records: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The latest PreEnqueue hold of pod ``key`` when no attempt came after it, else None."""
    held = None
    for record in records:
        if record.get("pod") == key and record.get("phase") != "binding":
            held = record if record.get("phase") == PRE_ENQUEUE else None
    return held


def held_message(record: dict[str, Any]) -> str:
    """``held at PreEnqueue by PLUGIN: MESSAGE`` with, for a gang's member, how many of its pods are present
    against minCount, and since when (RFC 3339)."""
    out = f"held at PreEnqueue by {record.get('plugin', '')}: {record.get('message', '')}"
    gang = record.get("gang")
    if isinstance(gang, dict):
        out += f" ({gang.get('present')} of {gang.get('minCount')} present)"
    since = record.get("since")
    if isinstance(since, (int, float)):
        out += ", since " + _dt.datetime.fromtimestamp(since, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def suggestions(record: dict[str, Any], pod: Pod | None = None, nodes: dict[str, Node] | None = None) -> list[str]:
    """What would make the pod of ``record`` fit, where it can be computed from
    the Filter groups: resources missing on nodes that fail only on them,
    taints to tolerate, node labels to add, nodes to uncordon.  Only fixes a
    node could ever provide: freeing resources only where the node has some
    of each (the record's shortfall); a node with none of a requested resource
    "does not have" it (the record's lacking)."""
    out = []
    filtered = record.get("filter") or {}
    for node_name, missing in list((filtered.get("shortfall") or {}).items())[:NODES_SHOWN]:
        wants = ", ".join(f"{quantity(resource, amount)} more {resource}" for resource, amount in missing.items())
        out.append(f"node {node_name} would fit with {wants} free (no other Filter plugin rejects it)")
    for node_name, absent in list((filtered.get("lacking") or {}).items())[:NODES_SHOWN]:
        out.append(f"node {node_name} does not have {', '.join(absent)}")
    for group in filtered.get("rejected", []):
        plugin, names = group["plugin"], node_names(group)
        if plugin == "TaintToleration":
            taint = _TAINT.search(group["reason"])
            if taint:
                out.append(f"tolerate the taint {taint.group(1)} to pass TaintToleration on {names}")
        elif plugin == "NodeUnschedulable":
            out.append(f"uncordon {names} (then the other Filter plugins judge them)")
        elif plugin == "NodeAffinity" and pod is not None and nodes:
            out.extend(_label_suggestions(pod, group["nodes"], nodes))
    return out


def _label_suggestions(pod: Pod, names: list[str], nodes: dict[str, Node]) -> list[str]:
    """The ``nodeSelector`` labels each node lacks (required node affinity
    terms are matched by expressions: named, not solved)."""
    out = []
    for name in names[:NODES_SHOWN]:
        node = nodes.get(name)
        if node is None:
            continue
        labels = node.metadata.labels
        missing = {k: v for k, v in pod.spec.node_selector.items() if labels.get(k) != v}
        if missing:
            out.append(f"label node {name} with " + ", ".join(f"{k}={v}" for k, v in sorted(missing.items())))
        elif pod.spec.affinity is not None and pod.spec.affinity.node_affinity is not None:
            out.append(f"node {name} does not match the pod's required node affinity terms")
    return out


def extender_lines(record: dict[str, Any]) -> list[str]:
    """The scheduler extenders' answers in an attempt's record, one line each: ``rejected by extender URL:
    <its message> (N node(s): ...)``, ``extender URL kept N node(s)``, its prioritize scores, or the error it
    failed with (and whether it was skipped)."""
    out = []
    for answer in record.get("extenders", []):
        name, verb = answer["extender"], answer["verb"]
        if "error" in answer:
            skipped = " (skipped: ignorable)" if answer.get("ignored") and verb == "filter" else \
                " (no scores from it)" if answer.get("ignored") else ""
            out.append(f"extender {name} failed {verb}: {answer['error']}{skipped}")
        elif verb == "filter":
            out.extend(f"rejected by extender {name}: {group['reason']} ({node_names(group)})"
                       for group in answer.get("rejected", []))
            out.append(f"extender {name} kept {answer.get('kept', 0)} node(s)")
        elif verb == "prioritize":
            scores = ", ".join(f"{node} {score}" for node, score in answer.get("scores", {}).items())
            out.append(f"extender {name} (weight {answer.get('weight')}) scored: {scores or 'no node'}")
    return out


def node_names(group: dict[str, Any]) -> str:
    """"N node(s): a, b and M more": a rejected-node group of the decision record (``nodes``, ``count``), at most
    :data:`NODES_SHOWN` names."""
    shown = group["nodes"][:NODES_SHOWN]
    more = group["count"] - len(shown)
    return f"{group['count']} node(s): " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def quantity(resource: str, amount: int) -> str:
    """``amount`` of ``resource`` in scheduler units, as a person reads it
    (milli-CPU as ``250m``/``2``; bytes as ``512Mi``/``26Gi``)."""
    if resource in MILLI_RESOURCES:
        return format_quantity(resource, amount)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= size:
                value = amount / size
                return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
        return str(amount)
    return str(amount)


