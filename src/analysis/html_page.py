"""The HTML report of a simulation (``simulate --html``) or of a decisions
file (``kubesched report --decisions``): one self-contained file.

Sections, each a page of the same file (the address's ``#fragment`` picks
one; a few lines of inline script show it and hide the others, no server,
no external file):

- ``#summary``: counts, per-node utilisation of CPU, memory and every
  extended resource (GPUs), the devices that ResourceClaims hold (which
  claim, which pods), pending pods with kube-scheduler's reason, and the
  placements, each pod linking to its page;
- ``#pod-<namespace>-<name>``: why the pod is where it is, or Pending - the
  latest attempt's record (:mod:`kubesched.analysis.explain`): Filter groups, the
  score breakdown of the best nodes, PostFilter's victims, the binding
  cycle, and what would make it fit;
- ``#timeline``: the run's Events in simulated time (with ``--at`` changes
  applied on the way), each attempt's outcome beside them.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

from kubesched.analysis.explain import explain, extender_lines, quantity
from kubesched.analysis.explain_podgroup import explain_pod_group
from kubesched.core.api.resource_v1 import ResourceClaim
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED, pod_group_key

#: Events listed on the timeline (the latest ones when there are more).
MAX_TIMELINE_ROWS = 2000

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
nav a{margin-right:1em}
table{border-collapse:collapse;margin:1em 0}th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right}
.bar{display:inline-block;height:10px;background:#4c78a8;vertical-align:middle}
.track{display:inline-block;width:120px;height:10px;background:#eee;vertical-align:middle}
.pending{color:#b33}.chosen{font-weight:bold}
"""

# Shows the page the address's fragment names (the summary by default).
_SCRIPT = """
function show(){
  var id = location.hash.slice(1) || "summary";
  var pages = document.querySelectorAll("section.page");
  var found = false;
  for (var i = 0; i < pages.length; i++) { if (pages[i].id === id) { found = true; } }
  if (!found) { id = "summary"; }
  for (var j = 0; j < pages.length; j++) { pages[j].hidden = pages[j].id !== id; }
  document.title = document.querySelector("h1").textContent + (id === "summary" ? "" : " - " + id);
}
window.addEventListener("hashchange", show);
show();
"""


def page_id(pod_key: str) -> str:
    """The fragment of a pod's page: ``pod-<namespace>-<name>``."""
    return "pod-" + re.sub(r"[^A-Za-z0-9_.-]", "-", pod_key)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _bar(used: int, total: int) -> str:
    fraction = used / total if total else 0.0
    width = int(round(120 * min(max(fraction, 0.0), 1.0)))
    return (f'<span class="track"><span class="bar" style="width:{width}px"></span></span> '
            f"{100 * fraction:.0f}%")


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A table of already escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def html_report(sim, records: list[dict[str, Any]] | None = None, title: str = "kubesched simulation") -> str:
    """The report of a finished :class:`~kubesched.drivers.simulation.Simulation`;
    ``records``: its decision records (the pod pages need them; without,
    the pages show the pod's status only)."""
    records = records or []
    pods = sim.pods()
    nodes = sim.cluster.list("Node").items
    sections = [_summary(sim, pods), _timeline(sim, records)]
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_pod.setdefault(record.get("pod", ""), []).append(record)
    for pod in pods:
        sections.append(_pod_page(pod.key, explain(by_pod.get(pod.key, []), pod.key, pod, nodes)))
    for group in sorted(sim.cluster.list("PodGroup").items, key=lambda g: g.key):
        sections.append(_pod_group_page(explain_pod_group(records, group.key, group, pods)))
    return _document(title, sections)


def records_report(records: list[dict[str, Any]], title: str = "kubesched decisions") -> str:
    """The report of a decisions file alone (``kubesched report --decisions``):
    each recorded pod's outcome and page, and the timeline of attempts; node
    utilisation and devices need the simulation (``simulate --html``)."""
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_pod.setdefault(record.get("pod", ""), []).append(record)
    answers = {key: explain(pod_records, key) for key, pod_records in sorted(by_pod.items())}
    rows = []
    for key, answer in answers.items():
        last = answer.get("last", {})
        node = answer.get("node")
        outcome = _e(node) if node else f'<span class="pending">{_e(last.get("message") or answer["status"])}</span>'
        rows.append([_link(key), _e(answer["status"]), outcome])
    start = min((r.get("time", 0.0) for r in records), default=0.0)
    summary = "\n".join([
        '<section class="page" id="summary">',
        f"<p>{len(records)} record line(s) about {len(answers)} pod(s): "
        f"{sum(a['status'] == 'Scheduled' for a in answers.values())} scheduled, "
        f"{sum(a['status'] == 'Pending' for a in answers.values())} pending, "
        f"{sum('heldBy' in a for a in answers.values())} held at PreEnqueue.</p>",
        _table(["pod", "status", "node or reason"], rows), "</section>"])
    pages = [_pod_page(key, answer) for key, answer in answers.items()]
    return _document(title, [summary, _timeline_rows(start, [], records), *pages])


def _document(title: str, sections: list[str]) -> str:
    return "\n".join([
        "<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">", f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style></head><body>", f"<h1>{_e(title)}</h1>",
        '<nav><a href="#summary">Summary</a><a href="#timeline">Timeline</a></nav>',
        *sections, f"<script>{_SCRIPT}</script>", "</body></html>"]) + "\n"


def _summary(sim, pods: list) -> str:
    bound = [p for p in pods if p.spec.node_name]
    pending = [p for p in pods if not p.spec.node_name]
    infos = sim.scheduler.node_infos()
    extended = sorted({name for info in infos for name, amount in info.allocatable.items() if amount and "/" in name})
    node_rows = []
    stored = {node.metadata.name: node for node in sim.cluster.list("Node").items}
    for info in infos:
        allocatable, requested = info.allocatable, info.requested
        cells = [_e(info.name), _node_state(stored.get(info.name)), str(len(info.pods)),
                 _bar(requested.get("cpu", 0), allocatable.get("cpu", 0)),
                 _bar(requested.get("memory", 0), allocatable.get("memory", 0))]
        cells += [f"{requested.get(name, 0)} / {allocatable.get(name, 0)}" if allocatable.get(name) else "-"
                  for name in extended]
        node_rows.append(cells)
    stats = sim.scheduler.stats
    parts = [
        '<section class="page" id="summary">',
        f"<p>{len(bound)} pod(s) scheduled, {len(pending)} pending, {len(infos)} node(s); "
        f"{stats.cycles} scheduling attempt(s), {sim.clock.now() - sim.start_time:g}s simulated, "
        f"{sim.changes} object(s) changed by --at/--delete-at.</p>",
        "<h2>Nodes</h2>",
        _table(["node", "state", "pods", "CPU requested", "memory requested",
                *(f"{_e(n)} used / allocatable" for n in extended)], node_rows),
    ]
    devices = _device_rows(sim.cluster.list("ResourceClaim").items)
    if devices:
        parts += ["<h2>Devices held by ResourceClaims</h2>",
                  _table(["pool (node)", "device", "driver", "claim", "reserved for"], devices)]
    if pending:
        rows = []
        for pod in pending:
            condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
            reason = f"{condition.reason}: {condition.message}" if condition is not None else "Pending"
            rows.append([_link(pod.key), f'<span class="pending">{_e(reason)}</span>'])
        parts += ["<h2>Pending pods</h2>", _table(["pod", "why"], rows)]
    groups = sorted(sim.cluster.list("PodGroup").items, key=lambda g: g.key)
    if groups:
        rows = []
        for group in groups:
            members = [p for p in pods if pod_group_key(p) == group.key]
            condition = group.condition(POD_GROUP_INITIALLY_SCHEDULED)
            rows.append([_group_link(group.key), str(group.min_count),
                         f"{sum(1 for p in members if p.spec.node_name)} of {len(members)}",
                         _e(f"{condition.reason}: {condition.message}".rstrip(": ") if condition else "not attempted")])
        parts += ["<h2>PodGroups</h2>", _table(["pod group", "minCount", "placed", "condition"], rows)]
    parts += ["<h2>Placements</h2>", _table(["pod", "node"], [[_link(p.key), _e(p.spec.node_name)] for p in bound]),
              "</section>"]
    return "\n".join(parts)


def _node_state(node: Any) -> str:
    """``cordoned`` (spec.unschedulable) and each taint (``tainted key=value:Effect``), or ``ready``."""
    if node is None:
        return ""
    marks = ['<span class="pending">cordoned</span>'] if node.spec.unschedulable else []
    marks += [f'<span class="pending">tainted {_e(taint.key)}{"=" + _e(taint.value) if taint.value else ""}'
              f":{_e(taint.effect)}</span>" for taint in node.spec.taints]
    return ", ".join(marks) or "ready"


def _group_link(key: str) -> str:
    return f'<a href="#{page_id("podgroup/" + key)}">{_e(key)}</a>'


def _pod_group_page(answer: dict[str, Any]) -> str:
    """A PodGroup's page: its members, the placements its latest attempt
    tried (members placed of minCount, the first that did not fit) and what
    would make it fit."""
    key = answer["podGroup"]
    parts = [f'<section class="page" id="{page_id("podgroup/" + key)}" hidden>', f"<h2>PodGroup {_e(key)}</h2>",
             '<p><a href="#summary">back to the summary</a></p>']
    members = answer.get("members", {})
    parts.append(f"<p>{_e(answer['status'])}: minCount {answer.get('minCount', '-')}, "
                 f"{sum(1 for node in members.values() if node)} of {len(members)} member(s) placed, "
                 f"{answer['attempts']} attempt(s)"
                 + (f"; all in one domain of {_e(answer['topologyKey'])}" if answer.get("topologyKey") else "") + "</p>")
    condition = answer.get("condition")
    if condition:
        parts.append(f"<p>PodGroupInitiallyScheduled={_e(condition['status'])} ({_e(condition['reason'])})"
                     + (f": {_e(condition['message'])}" if condition.get("message") else "") + "</p>")
    placements = answer.get("placements") or []
    if placements:
        rows = []
        for entry in placements:
            first = entry.get("firstUnplaced")
            rows.append([_e(entry["name"]), str(entry["nodes"]), f"{entry['placed']} of {entry['minCount']}",
                         "feasible" if entry["feasible"] else f'<span class="pending">{_e(entry.get("message", ""))}</span>',
                         f"{_link(first['pod'])}: {_e(first['message'])}" if first else "-"])
        parts += [f"<h3>Placements tried ({len(placements)})</h3>",
                  _table(["placement", "nodes", "placed", "result", "first member that did not fit"], rows)]
    if answer.get("suggestions"):
        parts.append("<h3>What would make the group fit</h3><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in answer["suggestions"]) + "</ul>")
    parts += ["<h3>Members</h3>", _table(["pod", "node"], [[_link(pod), _e(node or "(waiting)")]
                                                            for pod, node in members.items()]), "</section>"]
    return "\n".join(parts)


def _link(pod_key: str) -> str:
    return f'<a href="#{page_id(pod_key)}">{_e(pod_key)}</a>'


def _device_rows(claims: list[ResourceClaim]) -> list[list[str]]:
    rows = []
    for claim in sorted(claims, key=lambda c: c.key):
        allocation = claim.status.allocation
        if allocation is None:
            continue
        holders = ", ".join(ref.name for ref in claim.status.reserved_for) or "-"
        for result in allocation.devices.results:
            rows.append([_e(result.pool), _e(result.device), _e(result.driver), _e(claim.key), _e(holders)])
    return sorted(rows)


def _timeline(sim, records: list[dict[str, Any]]) -> str:
    start = sim.start_time
    rows = []
    for event in sim.events():
        obj = event.involved_object
        rows.append((event.last_timestamp or start, f"{obj.kind} {obj.namespace + '/' if obj.namespace else ''}"
                     f"{obj.name}", event.type, event.reason, event.message))
    return _timeline_rows(start, rows, records)


def _timeline_rows(start: float, rows: list[tuple], records: list[dict[str, Any]]) -> str:
    """The timeline page: ``rows`` (time, object, type, reason, message) and each attempt's outcome."""
    for record in records:
        if record.get("phase") == "scheduling":
            rows.append((record.get("time", start), f"Pod {record['pod']}", "attempt",
                         f"#{record.get('attempt')} {record.get('result', '')}",
                         record.get("node") or record.get("message", "")))
    rows.sort(key=lambda row: row[0])
    rows = rows[-MAX_TIMELINE_ROWS:]
    return "\n".join([
        '<section class="page" id="timeline" hidden>', "<h2>Timeline</h2>",
        f"<p>Simulated seconds since the start; {len(rows)} entries.</p>",
        _table(["t (s)", "object", "type", "reason", "message"],
               [[f"{when - start:g}", _e(what), _e(kind), _e(reason), _e(message)]
                for when, what, kind, reason, message in rows]),
        "</section>"])


def _pod_page(key: str, answer: dict[str, Any]) -> str:
    parts = [f'<section class="page" id="{page_id(key)}" hidden>', f"<h2>Pod {_e(key)}</h2>",
             '<p><a href="#summary">back to the summary</a></p>']
    status = answer["status"]
    if status == "NotAttempted":
        parts.append(f"<p>{_e(answer['message'])}</p></section>")
        return "\n".join(parts)
    last = answer["last"]
    where = {"Scheduled": f"Scheduled on <b>{_e(answer.get('node'))}</b>",
             "Binding": f"assumed on <b>{_e(answer.get('node'))}</b>, binding not over"}.get(
        status, f'<span class="pending">Pending ({_e(last.get("result", ""))})</span>')
    parts.append(f"<p>{where} after {answer['attempts']} attempt(s); profile {_e(last.get('profile', ''))}"
                 + (f"; moved to the active queue by {_e(last['movedBy'])}" if last.get("movedBy") else "") + "</p>")
    if last.get("message"):
        parts.append(f"<p>{_e(last['message'])}</p>")
    filtered = last.get("filter")
    if filtered:
        parts.append(f"<h3>Filter: {filtered['evaluated']} node(s) evaluated, {filtered['feasible']} feasible</h3>")
        parts.append(_table(["plugin", "reason", "nodes"], [
            [_e(g["plugin"]), _e(g["reason"]), f"{g['count']}: " + _e(", ".join(g["nodes"]))
             + (" ..." if g["count"] > len(g["nodes"])else "")] for g in filtered["rejected"]]))
        shortfall = filtered.get("shortfall") or {}
        if shortfall:
            parts.append("<h3>Missing on nodes that fail only on resources</h3>")
            parts.append(_table(["node", "missing"], [
                [_e(node), _e(", ".join(f"{quantity(r, a)} {r}" for r, a in missing.items()))]
                for node, missing in shortfall.items()]))
    extenders = extender_lines(last)
    if extenders:
        parts.append("<h3>Scheduler extenders</h3><ul>" + "".join(f"<li>{_e(line)}</li>" for line in extenders)
                     + "</ul>")
    score = last.get("score")
    if score:
        parts.append(f"<h3>Score: the best {len(score['nodes'])} of {score['scored']} scored node(s)</h3>")
        headers = ["node", *(f"{_e(p['plugin'])} (raw / normalized x{p['weight']} = weighted)" for p in score["plugins"]),
                   "total"]
        rows = []
        for i, node in enumerate(score["nodes"]):
            name = f'<span class="chosen">{_e(node)} (chosen)</span>' if node == last.get("node") else _e(node)
            rows.append([name, *(f"{p['raw'][i]} / {p['normalized'][i]} = {p['weighted'][i]}" for p in score["plugins"]),
                         str(score["total"][i])])
        parts.append(_table(headers, rows))
    post = last.get("postFilter")
    if post:
        parts.append(f"<h3>PostFilter</h3><p>nominated node {_e(post.get('nominatedNodeName') or '-')}; victims: "
                     f"{_e(', '.join(post.get('victims', [])) or 'none')}</p>")
    binding = last.get("binding")
    if binding is not None:
        parts.append(f"<h3>Binding cycle</h3><p>{_e(binding['result'])} on {_e(binding['node'])}"
                     + (f": {_e(binding['message'])}" if binding.get("message") else "") + "</p>")
    if answer.get("suggestions"):
        parts.append("<h3>What would make it fit</h3><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in answer["suggestions"]) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)
