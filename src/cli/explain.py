"""``kubesched explain``: why a pod is on its node or Pending, from a simulation, a decisions file
or a live pod's published decision, printed as tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.analysis.explain import explain as explain_pod
from kubesched.analysis.explain import extender_lines, node_names
from kubesched.analysis.explain_podgroup import PREFIX, explain_pod_group, pod_group_arg
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.api.scheduling_v1beta1 import pod_group_key
from kubesched.core.cluster.client import ApiError, NotFound
from kubesched.core.cluster.lookup import NoSuchName, resolve
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.core.observability.decision_log import (
    DECISION_ANNOTATION,
    DecisionFileError,
    DecisionLog,
    read_decisions,
)
from kubesched.drivers.simulation import Simulation

from .common import Output, TimedChange, configuration, emit, kube_cluster, refuse, timed_changes


def explain(
    pod: str = typer.Argument(..., help="The pod: NAMESPACE/NAME, or NAME in the default namespace; or a PodGroup: "
                                        "podgroup/NAMESPACE/NAME."),
    filename: List[Path] = typer.Option([], "-f", "--filename",
                                        help="Simulate these manifests (file or directory, repeatable) and explain."),
    config: Optional[str] = typer.Option(
        None, "--config", metavar="FILE[:PROFILE]",
        help="KubeSchedulerConfiguration file (with -f); FILE:PROFILE runs that profile as the default scheduler."),
    at: List[str] = typer.Option(
        [], "--at", metavar="OFFSET=FILE", help="With -f: at OFFSET create or replace the objects in FILE, as "
                                                "simulate --at does. Repeatable."),
    delete_at: List[str] = typer.Option(
        [], "--delete-at", metavar="OFFSET=FILE", help="With -f: at OFFSET delete the objects FILE names, as "
                                                       "simulate --delete-at does. Repeatable."),
    from_record: Optional[Path] = typer.Option(
        None, "--from", help="Explain from a decisions file (simulate --record, run --record-decisions)."),
    kubeconfig: Optional[Path] = typer.Option(
        None, "--kubeconfig", help="Explain a live pod: the latest attempt that `kubesched run --record-decisions` "
                                   "published in its annotation."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulation (with -f)."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json."),
) -> None:
    """Why POD is on its node, or why it is Pending: every rejected node's plugin
    and reason, the best nodes' score breakdown, and what would make it fit;
    for a PodGroup, the placements tried and how far each got."""
    group_key = pod_group_arg(pod)
    key = pod if group_key is None else ""
    if [bool(filename), from_record is not None, kubeconfig is not None].count(True) != 1:
        refuse("explain: give either -f DIR (simulate and explain), --from RECORD or --kubeconfig K")
    if not filename and (config is not None or seed != 0 or at or delete_at):
        refuse("explain: --config, --seed, --at and --delete-at shape a simulation: they go with -f only")
    changes = _changes(at, delete_at)
    if group_key is not None:
        if kubeconfig is not None:
            refuse("explain: a PodGroup's attempts are not published on the cluster: give -f DIR or --from RECORD")
        _explain_group(group_key, filename, config, seed, changes, from_record, output)
        return
    pod_object: Any = None
    nodes: list = []
    if kubeconfig is not None:
        records, pod_object, nodes = _published_decision(kubeconfig, key)
        key = pod_object.key
    elif from_record is not None:
        try:
            records = list(read_decisions(from_record))
        except DecisionFileError as err:
            refuse(str(err))
    else:
        log = DecisionLog(keep=lambda name: _may_be(name, key) or name.startswith(PREFIX))
        sim = _simulate(filename, config, seed, changes, log)
        records = log.records
        stored = {p.key: p for p in sim.pods()}
        key = _resolve("pod", key, stored.keys() | _recorded_pods(records), f"in {_names(filename)}")
        pod_object = stored.get(key)
        nodes = sim.cluster.list("Node").items
    if from_record is not None:
        key = _resolve("pod", key, _recorded_pods(records), f"attempted in {from_record}")
    answer = explain_pod(records, key, pod_object, nodes)
    if filename and pod_object is None:
        preempted = [p for p in sim.preemptions() if p.victim == key]
        answer["deleted"] = (f"preempted at +{preempted[-1].time:g}s by {preempted[-1].preemptor or 'a pod now gone'}"
                             if preempted else "deleted before the simulation ended")
    group = pod_group_key(pod_object) if pod_object is not None else None
    if group is not None and filename:
        answer["podGroup"] = explain_pod_group(records, group, _stored(sim, "PodGroup", group), sim.pods())
    emit(answer, output, render)


def _recorded_pods(records: list[dict]) -> set[str]:
    """The pods ``records`` hold attempts of."""
    return {r["pod"] for r in records if r.get("phase") != "podgroup" and isinstance(r.get("pod"), str)}


def _may_be(recorded: str, given: str) -> bool:
    """Whether pod ``recorded`` (``namespace/name``) may be the one ``given`` names (its name alone: any namespace)."""
    return recorded == given if "/" in given else recorded.rpartition("/")[2] == given


def _names(paths: List[Path]) -> str:
    return ", ".join(map(str, paths))


def _resolve(kind: str, given: str, keys: Iterable[str], where: str) -> str:
    """The key ``given`` names among ``keys`` (see :func:`~kubesched.core.cluster.lookup.resolve`), or the
    refusal (exit 2) in one line with the nearest names, saying ``where`` the names were looked for."""
    try:
        return resolve(kind, given, keys, where=where)
    except NoSuchName as err:
        refuse(f"explain: {err.message}")


def _changes(at: List[str], delete_at: List[str]) -> list[TimedChange]:
    try:
        return timed_changes(at, delete_at)
    except ConfigError as err:
        refuse(str(err))


def _simulate(filename: List[Path], config: Optional[str], seed: int, changes: list[TimedChange],
              log: DecisionLog) -> Simulation:
    try:
        with configuration(config) as config_path:
            sim = Simulation.from_paths(filename, config=config_path, seed=seed, decisions=log)
        for change in changes:
            sim.change_at(change.offset, [change.file], delete=change.delete)
        sim.run()
    except (InvalidManifest, ConfigError, PluginError) as err:
        refuse(str(err))
    return sim


def _stored(sim: Simulation, kind: str, key: str) -> Any:
    try:
        return sim.get(kind, key)
    except NotFound:
        return None


def _explain_group(key: str, filename: List[Path], config: Optional[str], seed: int, changes: list[TimedChange],
                   from_record: Optional[Path], output: Output) -> None:
    """``kubesched explain podgroup/NS/NAME``: from a simulation or a decisions file."""
    pod_group: Any = None
    pods: list = []
    if from_record is not None:
        try:
            records = list(read_decisions(from_record))
        except DecisionFileError as err:
            refuse(str(err))
    else:
        log = DecisionLog(keep=lambda name: name.startswith(PREFIX) and _may_be(name[len(PREFIX):], key))
        sim = _simulate(filename, config, seed, changes, log)
        records = log.records
        key = _resolve("PodGroup", key, (g.key for g in sim.cluster.list("PodGroup").items),
                       f"in {_names(filename)}")
        pod_group = _stored(sim, "PodGroup", key)
        pods = sim.pods()
    if from_record is not None:
        recorded = {r["podGroup"] for r in records if r.get("phase") == "podgroup" and isinstance(r.get("podGroup"), str)}
        key = _resolve("PodGroup", key, recorded, f"attempted in {from_record}")
    emit(explain_pod_group(records, key, pod_group, pods), output, render_pod_group)


def _published_decision(kubeconfig: Path, key: str) -> tuple[list[dict], Any, list]:
    """The latest attempt of live pod ``key`` as the daemon published it, the pod and the nodes."""
    cluster = kube_cluster("explain", kubeconfig)
    try:
        namespace, _, name = key.rpartition("/")
        try:
            pod = cluster.get("Pod", name, namespace or "default")
        except NotFound:
            key = _resolve("pod", key, (p.key for p in cluster.list("Pod").items), "on the cluster")
            namespace, _, name = key.rpartition("/")
            pod = cluster.get("Pod", name, namespace)
        key = pod.key
        nodes = cluster.list("Node").items
    except NotFound:
        refuse(f"explain: no pod {key} on the cluster")
    except ApiError as err:
        typer.echo(f"explain: the API server refused: {err}", err=True)
        raise typer.Exit(1) from None
    text = pod.metadata.annotations.get(DECISION_ANNOTATION)
    if text is None:
        return [], pod, nodes
    try:
        attempt = json.loads(text)
    except json.JSONDecodeError as err:
        refuse(f"explain: pod {key}: annotation {DECISION_ANNOTATION}: not JSON: {err.msg}")
    if not isinstance(attempt, dict) or attempt.get("pod") != key:
        refuse(f"explain: pod {key}: annotation {DECISION_ANNOTATION}: not a scheduling decision of this pod")
    binding = attempt.pop("binding", None)
    return [attempt, *([binding] if isinstance(binding, dict) else [])], pod, nodes


def render(explanation: dict[str, Any], console: Console) -> None:
    """Print an :func:`explain` answer as rich tables."""
    key = explanation["pod"]
    if explanation.get("deleted"):
        console.print(f"[bold]{key}[/] is no longer in the cluster: {explanation['deleted']}; its last attempt:")
    if explanation["status"] == "NotAttempted":
        console.print(f"[bold]{key}[/]: {explanation['message']}")
    else:
        _render_attempt(explanation, console)
        if explanation.get("held"):
            console.print(f"since its last attempt: {explanation['held']}")
    if explanation.get("podGroup"):
        console.print(f"{key} is a member of PodGroup {explanation['podGroup']['podGroup']}, scheduled as one:")
        render_pod_group(explanation["podGroup"], console)


def _render_attempt(explanation: dict[str, Any], console: Console) -> None:
    key = explanation["pod"]
    last = explanation["last"]
    headline = {"Scheduled": f"scheduled on [bold]{explanation.get('node')}[/]",
                "Binding": f"assumed on [bold]{explanation.get('node')}[/], binding cycle not over",
                }.get(explanation["status"], f"Pending ({last.get('result', '')})")
    console.print(f"[bold]{key}[/]: {headline} after {explanation['attempts']} attempt(s); "
                  f"profile {last.get('profile', '')}"
                  + (f"; moved to the active queue by {last['movedBy']}" if last.get("movedBy") else ""))
    if last.get("message"):
        console.print(last["message"])
    for answer in last.get("preFilter", []):
        detail = f"narrowed to {answer['nodes']} node(s)" if "nodes" in answer else "; ".join(answer["reasons"])
        console.print(f"PreFilter {answer['plugin']}: {answer['code']} {detail}")
    _render_filter(last.get("filter"), console)
    for line in extender_lines(last):
        console.print(line)
    _render_score(last.get("score"), last.get("node", ""), console)
    post = last.get("postFilter")
    if post:
        victims = ", ".join(post.get("victims", [])) or "none"
        console.print(f"PostFilter: nominated node {post.get('nominatedNodeName') or '-'}; victims: {victims}")
    if last.get("failedAt"):
        failed = last["failedAt"]
        console.print(f"{failed['extensionPoint']} failed ({failed['plugin']}): {'; '.join(failed['reasons'])}")
    binding = last.get("binding")
    if binding is not None:
        console.print(f"binding cycle on {binding['node']}: {binding['result']}"
                      + (f": {binding['message']}" if binding.get("message") else ""))
    if explanation.get("suggestions"):
        console.print("[bold]What would make it fit[/]")
        for line in explanation["suggestions"]:
            console.print(f"  - {line}")


def _render_filter(filtered: dict[str, Any] | None, console: Console) -> None:
    if not filtered:
        return
    table = Table(title=f"Filter: {filtered['evaluated']} node(s) evaluated, {filtered['feasible']} feasible")
    for column in ("PLUGIN", "REASON", "NODES"):
        table.add_column(column)
    for group in filtered["rejected"]:
        table.add_row(group["plugin"], group["reason"], node_names(group))
    if filtered["rejected"]:
        console.print(table)


def _render_score(score: dict[str, Any] | None, chosen: str, console: Console) -> None:
    if not score:
        return
    table = Table(title=f"Score: the best {len(score['nodes'])} of {score['scored']} scored node(s) "
                        "(raw -> normalized x weight = weighted)")
    table.add_column("NODE")
    for plugin in score["plugins"]:
        table.add_column(f"{plugin['plugin']} (x{plugin['weight']})", justify="right")
    table.add_column("TOTAL", justify="right")
    for i, node in enumerate(score["nodes"]):
        cells = [f"{p['raw'][i]} -> {p['normalized'][i]} = {p['weighted'][i]}" for p in score["plugins"]]
        table.add_row(node + (" *" if node == chosen else ""), *cells, str(score["total"][i]))
    console.print(table)


def render_pod_group(explanation: dict[str, Any], console: Console) -> None:
    """Print an :func:`~kubesched.analysis.explain_podgroup.explain_pod_group` answer."""
    key = explanation["podGroup"]
    members = explanation.get("members", {})
    placed = sum(1 for node in members.values() if node)
    headline = f"[bold]podgroup/{key}[/]: {explanation['status']}"
    if "minCount" in explanation:
        headline += f"; minCount {explanation['minCount']}, {placed} of {len(members)} member(s) placed"
    if explanation.get("topologyKey"):
        headline += f"; all in one domain of {explanation['topologyKey']}"
    console.print(headline + f" after {explanation['attempts']} attempt(s)")
    if explanation.get("message"):
        console.print(explanation["message"])
    condition = explanation.get("condition")
    if condition:
        console.print(f"PodGroupInitiallyScheduled={condition['status']} ({condition['reason']})"
                      + (f": {condition['message']}" if condition.get("message") else ""))
    preemption = explanation.get("preemption")
    if preemption:
        where = f" in {preemption['placement']}" if preemption.get("placement") else ""
        console.print(f"Attempt {preemption['attempt']} preempted{where} ({preemption['plugin']}): "
                      f"{len(preemption['victims'])} victim(s): {', '.join(preemption['victims'])}")
    placements = explanation.get("placements") or []
    if placements:
        table = Table(title=f"Placements tried in the latest attempt ({len(placements)})")
        for column in ("PLACEMENT", "NODES", "PLACED", "RESULT", "FIRST MEMBER THAT DID NOT FIT"):
            table.add_column(column)
        for entry in placements:
            first = entry.get("firstUnplaced")
            table.add_row(entry["name"], str(entry["nodes"]), f"{entry['placed']} of {entry['minCount']}",
                          "feasible" if entry["feasible"] else entry.get("message", "infeasible"),
                          f"{first['pod']}: {first['message']}" if first else "-")
        console.print(table)
    if explanation.get("suggestions"):
        console.print("[bold]What would make the group fit[/]")
        for line in explanation["suggestions"]:
            console.print(f"  - {line}")
    if members:
        table = Table(title="Members")
        table.add_column("POD")
        table.add_column("NODE")
        for pod, node in members.items():
            table.add_row(pod, node or "(waiting)")
        console.print(table)
