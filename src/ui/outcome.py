"""One finished run, read once for every page, and the difference between two runs.

An :class:`Outcome` keeps the simulation (its cluster holds the final
objects), the decision records grouped by pod, per node the allocatable and
requested amount of every resource as numpy columns (a 5,000-node table is
sorted and paged without a loop over nodes), each Pending pod's reason
summed up from its latest attempt's Filter groups, and the
:class:`~kubesched.ui.timeline.Timeline`.  :func:`placement_diff` is the
What-if panel: pods moved, newly pending, newly scheduled, newly preempted
and utilisation deltas, from :func:`kubesched.analysis.compare.compare`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from kubesched.analysis.compare import compare, summarize
from kubesched.analysis.explain import attempts_of
from kubesched.analysis.explain_podgroup import explain_pod_group
from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.scheduling_v1beta1 import pod_group_key
from kubesched.core.framework.resources import CPU, MEMORY

from .device_columns import PREFIX as DEVICES
from .device_columns import class_devices, device_columns
from .timeline import PlacementLog, Timeline

#: Rows of a per-node table in the diff (the largest changes).
DIFF_NODES_SHOWN = 20


def reason_summary(groups: list[dict[str, Any]]) -> str:
    """A Filter attempt's rejected groups as one line, the largest first:
    ``4,812 nodes: Insufficient nvidia.com/gpu · 150: untolerated taint``."""
    parts = []
    for i, group in enumerate(groups):
        count = f"{group['count']:,}"
        parts.append(f"{count} node{'s' if group['count'] != 1 else ''}: {group['reason']}" if i == 0
                     else f"{count}: {group['reason']}")
    return " · ".join(parts)


def group_verdict(verdict: dict[str, Any]) -> str:
    """A PodGroup's explanation (:func:`~kubesched.analysis.explain_podgroup.explain_pod_group`) in one line, as
    every waiting member reads it: ``PodGroup NS/NAME (0 of minCount 4 placed): <its latest attempt's message>``;
    "" when the group was never attempted (its members wait at PreEnqueue, each saying so)."""
    last = verdict.get("last")
    if not last:
        return ""
    placed = sum(1 for node in verdict.get("members", {}).values() if node)
    count = f"{placed} of minCount {verdict['minCount']} placed" if "minCount" in verdict else f"{placed} placed"
    return f"PodGroup {verdict['podGroup']} ({count}): {last.get('message') or last.get('result', '')}"


def pending_reason(pod: Pod, attempts: list[dict[str, Any]], gated: str = "", group: str = "") -> str:
    """Why ``pod`` is Pending, in one line: for a member of a PodGroup that was attempted, the group's verdict
    (``group``, :func:`group_verdict`: all its members tell the same story, as ``kubesched explain`` does); else
    its latest attempt's Filter groups (:func:`reason_summary`), or the attempt's message, or the PreEnqueue
    plugin that keeps it out of the queue (``gated``: "plugin: message", as the scheduling queue holds it), or
    its PodScheduled condition."""
    if group:
        return group
    if attempts:
        last = attempts[-1]
        groups = (last.get("filter") or {}).get("rejected") or []
        if groups:
            return reason_summary(groups)
        if last.get("message"):
            return str(last["message"])
    if gated:
        return f"waits at PreEnqueue: {gated}"
    if pod.spec.scheduling_gates:
        gates = ", ".join(gate.name for gate in pod.spec.scheduling_gates)
        return f"waits for its scheduling gates ({gates}): PreEnqueue keeps it out of the queue"
    condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    if condition is not None and condition.message:
        return f"{condition.reason}: {condition.message}"
    return "not attempted yet"


class Outcome:
    """A finished run of one scenario (see the module docstring).

    ``key``: the scenario's identity (:meth:`History.key`); ``sim``: the
    :class:`~kubesched.drivers.simulation.Simulation`; ``records``: its
    decision records; ``log``: the :class:`PlacementLog` filled while it ran;
    ``marks``: (seconds since the start, label) of timed changes;
    ``wall_seconds``: how long the run took.  Arrays are indexed like
    :attr:`node_names` (sorted) and :attr:`resources` (cpu, memory, then
    every extended resource some node has, sorted; amounts in scheduler
    units: milli-CPU, bytes, counts).
    """

    def __init__(self, key: tuple, sim: Any, records: list[dict[str, Any]], log: PlacementLog,
                 marks: list[tuple[float, str]], wall_seconds: float):
        self.key = key
        self.sim = sim
        self.records = records
        self.wall_seconds = wall_seconds
        #: scheduling attempts the run made
        self.cycles = sim.scheduler.stats.cycles
        self.by_pod: dict[str, list[dict[str, Any]]] = {}
        #: PodGroup key -> the group's attempts (``phase: podgroup`` lines), oldest first
        self.by_group: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            if "podGroup" in record:
                self.by_group.setdefault(record["podGroup"], []).append(record)
            else:
                self.by_pod.setdefault(record.get("pod", ""), []).append(record)
        self.nodes = {node.metadata.name: node for node in sim.cluster.list("Node").items}
        infos = sorted(sim.scheduler.node_infos(), key=lambda info: info.name)
        self.node_names = [info.name for info in infos]
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        extended = sorted({r for info in infos for r, amount in info.allocatable.items() if amount and "/" in r})
        self.resources = [CPU, MEMORY, *extended]
        self.allocatable = np.array([[info.allocatable.get(r, 0) for r in self.resources] for info in infos],
                                    dtype=np.int64).reshape(len(infos), len(self.resources))
        self.requested = np.array([[info.requested.get(r, 0) for r in self.resources] for info in infos],
                                  dtype=np.int64).reshape(len(infos), len(self.resources))
        slices, classes = sim.cluster.list("ResourceSlice").items, sim.cluster.list("DeviceClass").items
        devices = device_columns(slices, classes, sim.cluster.list("ResourceClaim").items, self.node_index)
        if devices:
            self.resources += list(devices)
            self.allocatable = np.hstack([self.allocatable, np.stack([t for t, _ in devices.values()], axis=1)])
            self.requested = np.hstack([self.requested, np.stack([h for _, h in devices.values()], axis=1)])
        with np.errstate(divide="ignore", invalid="ignore"):
            self.percent = np.where(self.allocatable > 0, 100.0 * self.requested / np.maximum(self.allocatable, 1),
                                    np.nan)
        self.pod_counts = np.array([len(info.pods) for info in infos], dtype=np.int64)
        self.cordoned = np.array([self.nodes[n].spec.unschedulable if n in self.nodes else False
                                  for n in self.node_names], dtype=bool)
        self.taints = [", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}"
                                 for t in self.nodes[n].spec.taints) if n in self.nodes else ""
                       for n in self.node_names]
        self.pods = sim.pods()
        self.pod_by_key = {pod.key: pod for pod in self.pods}
        self.pending = [pod for pod in self.pods
                        if not pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed")]
        #: PodGroup key -> its explanation (the one ``kubesched explain podgroup/KEY`` prints)
        self.group_verdicts = {group.key: explain_pod_group(self.by_group.get(group.key, []), group.key, group,
                                                            self.pods)
                               for group in sim.cluster.list("PodGroup").items}
        group_lines = {pod.key: group_verdict(self.group_verdicts.get(pod_group_key(pod) or "", {}))
                       for pod in self.pending}
        #: the Pending pods whose reason is their PodGroup's verdict
        self.explained_by_group = {key for key, line in group_lines.items() if line}
        self.pending_reasons = {pod.key: pending_reason(pod, self.attempts(pod.key), _gated(sim, pod),
                                                        group_lines[pod.key])
                                for pod in self.pending}
        #: victim -> its preemption (the latest), from the Preempted events
        self.preemptions = {p.victim: p for p in sim.preemptions()}
        #: pod key -> its PodGroup's key, for every pod the run created (deleted ones too)
        self.member_of = log.groups
        self.preempted = set(self.preemptions)
        # the timeline follows pods' requests, and the claims' allocations for the device columns
        capacity = {r: int(self.allocatable[:, i].sum()) for i, r in enumerate(self.resources)
                    if not r.startswith(DEVICES)}
        self.timeline = Timeline(log, sim.start_time, sim.clock.now(), capacity, marks,
                                 class_devices(slices, classes, self.node_index))

    def attempts(self, pod_key: str) -> list[dict[str, Any]]:
        """The scheduling attempts of a pod, oldest first (each with its binding line)."""
        return attempts_of(self.by_pod.get(pod_key, []), pod_key)

    @property
    def bound(self) -> int:
        return len(self.pods) - len(self.pending)

    def reasons_across_pending(self) -> list[tuple[str, int]]:
        """(Filter reason, how many Pending pods it rejects on some node) over
        every Pending pod's latest attempt, the most common first; a PodGroup's members count once each under
        their group's verdict (their own Filter results are those of one placement of the group's attempt)."""
        counts: Counter[str] = Counter()
        for pod in self.pending:
            attempts = self.attempts(pod.key)
            grouped = pod.key in self.explained_by_group
            groups = (attempts[-1].get("filter") or {}).get("rejected", []) if attempts and not grouped else []
            if groups:
                counts.update({group["reason"] for group in groups})
            else:
                counts[self.pending_reasons[pod.key]] += 1
        return counts.most_common()

    def utilisation(self) -> dict[str, float | None]:
        """resource -> % of the cluster's allocatable requested (None: no node has it)."""
        out: dict[str, float | None] = {}
        for i, r in enumerate(self.resources):
            total = int(self.allocatable[:, i].sum())
            out[r] = round(100.0 * int(self.requested[:, i].sum()) / total, 1) if total else None
        return out

    def summary(self, label: str):
        """This run as :func:`kubesched.analysis.compare.summarize` sees it."""
        return summarize(label, self.pods, self.nodes.values())


def _gated(sim: Any, pod: Pod) -> str:
    """"plugin: message" of the PreEnqueue plugin holding ``pod`` out of the active queue ("" if none)."""
    queued = sim.scheduler.queued(pod)
    if queued is None or queued.gating_status is None:
        return ""
    return f"{queued.gating_plugin}: {queued.gating_status.message()}"


def placement_diff(before: Outcome, after: Outcome) -> dict[str, Any]:
    """What changed from ``before`` (the files as they are) to ``after`` (with
    the edits), JSON-ready: ``moved`` (pod, node before, node after),
    ``newlyPending`` and ``newlyScheduled`` (pod, node), ``newlyPreempted``,
    ``added``/``removed`` pods, ``utilisation`` (resource -> before, after,
    delta in points) and ``nodes``: the :data:`DIFF_NODES_SHOWN` nodes whose
    requested share changed most (node, resource, before %, after %)."""
    differences = compare(before.summary("before"), after.summary("after"))
    moved, newly_pending, newly_scheduled = [], [], []
    for row in differences["moved"]:
        pod, a, b = row["pod"], row["a"], row["b"]
        if pod not in before.pod_by_key or pod not in after.pod_by_key:
            continue
        if a and b:
            moved.append((pod, a, b))
        elif a:
            newly_pending.append((pod, a, after.pending_reasons.get(pod, "")))
        else:
            newly_scheduled.append((pod, b))
    usage_before, usage_after = before.utilisation(), after.utilisation()
    utilisation = []
    for r in sorted(set(usage_before) | set(usage_after), key=lambda r: (r not in (CPU, MEMORY), r)):
        a, b = usage_before.get(r), usage_after.get(r)
        utilisation.append((r, a, b, round((b or 0) - (a or 0), 1)))
    nodes = []
    for row in differences["nodes"]:
        for r in differences["resources"]:
            a = (row["a"] or {}).get(r)
            b = (row["b"] or {}).get(r)
            if a != b:
                nodes.append((row["node"], r, a, b))
    nodes.sort(key=lambda n: -abs((n[3] or 0) - (n[2] or 0)))
    return {"moved": moved, "newlyPending": newly_pending, "newlyScheduled": newly_scheduled,
            "newlyPreempted": sorted(after.preempted - before.preempted),
            "added": sorted(set(after.pod_by_key) - set(before.pod_by_key)),
            "removed": sorted(set(before.pod_by_key) - set(after.pod_by_key)),
            "utilisation": utilisation, "nodes": nodes[:DIFF_NODES_SHOWN], "nodesChanged": len(nodes)}
