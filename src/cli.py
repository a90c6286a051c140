"""The ``kubesched`` command (typer + rich).

- ``kubesched simulate -f PATH ...``: schedule a directory of manifests on the embedded cluster;
- ``kubesched run``: the scheduler and controllers as a daemon, embedded or against an API server;
- ``kubesched perf CONFIG``: run kube-scheduler's scheduler_perf workloads;
- ``kubesched explain POD -f DIR | --from RECORD``: why a pod is where it is, or Pending (:mod:`kubesched.explain`);
- ``kubesched compare --config A --config B -f DIR | --perf FILE:TEST/WORKLOAD``: two configurations side by side;
- ``kubesched snapshot --kubeconfig K -o DIR``: a real cluster's state as manifests for ``simulate``;
- ``kubesched sweep SPEC.yaml``: an experiment grid, resumable, locally or on Ray (:mod:`kubesched.sweep`);
- ``kubesched plugins``: the discovered plugins and their extension points;
- ``kubesched config validate FILE``: check a KubeSchedulerConfiguration;
- ``kubesched trace ...``: convert a production trace and replay it (:mod:`kubesched.trace.commands`);
- ``kubesched report RESULTS...``: plots of replay results (matplotlib).

Invalid input exits with status 2 and one line ``FILE: KIND/NAME: FIELD: problem``.
"""

from __future__ import annotations

import enum
import json
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

import typer
import yaml
from rich.console import Console
from rich.table import Table

from kubesched.core.api.manifests import InvalidManifest, dump_yaml
from kubesched.core.observability.decisions import (
    DECISION_ANNOTATION,
    DecisionFileError,
    DecisionLog,
    DecisionPublisher,
    read_decisions,
)

from .core.api import to_manifest
from .core.clock import FakeClock
from .core.cluster.memory import MemoryCluster
from .core.framework.config import ConfigError, load_config, parse_duration
from .core.framework.registry import PluginError, Registry, extension_points
from .core.scheduler.scheduler import Scheduler
from .plugins import DEFAULT_PLUGINS
from .simulation import DEFAULT_START, Simulation, parse_start_time
from .trace.commands import trace_app

app = typer.Typer(help="kubesched: the Kubernetes scheduling framework in Python.", no_args_is_help=True,
                  add_completion=False)
config_app = typer.Typer(help="KubeSchedulerConfiguration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(trace_app, name="trace")

INVALID_INPUT = 2


class LogFormat(str, enum.Enum):
    text = "text"
    json = "json"


class Output(str, enum.Enum):
    table = "table"
    yaml = "yaml"
    json = "json"


def _refuse(message: str) -> None:
    typer.echo(message, err=True)
    raise typer.Exit(INVALID_INPUT)


@app.command()
def simulate(
    filename: List[Path] = typer.Option(..., "-f", "--filename", help="Manifest file or directory (repeatable)."),
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration file."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table, or the final state as yaml/json."),
    start_time: Optional[str] = typer.Option(None, "--start-time", help="Simulated start, RFC 3339."),
    until: Optional[str] = typer.Option(None, "--until", help="Run this long in simulated time (90s, 5m, 1h30m)."),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking between equal nodes and generated names."),
    html: Optional[Path] = typer.Option(
        None, "--html", help="Also write a self-contained HTML report here: summary, a page per pod (why it is "
                             "where it is), devices, timeline."),
    record: Optional[Path] = typer.Option(
        None, "--record", help="Write the record of every scheduling attempt here (JSON Lines; "
                               "`kubesched explain POD --from FILE` reads it)."),
    at: List[str] = typer.Option(
        [], "--at", metavar="OFFSET=FILE",
        help="At simulated time --start-time + OFFSET (90s, 5m, 1h30m) create the objects in FILE, or replace "
             "the stored ones of the same name (metadata, spec, status; uid kept; status fields the file "
             "leaves out keep their values). Repeatable."),
    delete_at: List[str] = typer.Option(
        [], "--delete-at", metavar="OFFSET=FILE",
        help="At simulated time --start-time + OFFSET delete the objects FILE names (missing ones are skipped). "
             "Repeatable."),
) -> None:
    """Schedule the objects in PATHs on the embedded cluster until nothing more can happen."""
    try:
        start = parse_start_time(start_time) if start_time else DEFAULT_START
    except ValueError as err:
        _refuse(f"--start-time: {err}")
    try:
        horizon = parse_duration(until, "--until") if until else None
        decisions = _decision_log(record)
        if decisions is None and html is not None:
            decisions = DecisionLog()  # the report's pod pages need the records: kept in memory
        sim = Simulation.from_paths(filename, config=config, start=start, seed=seed, decisions=decisions)
        for option, values in (("--at", at), ("--delete-at", delete_at)):
            for value in values:
                offset, _, file = value.partition("=")
                if not offset or not file:
                    raise ConfigError(f"{option}: expected OFFSET=FILE, got {value!r}")
                sim.change_at(parse_duration(offset, option), [file], delete=option == "--delete-at")
        sim.run(until=start + horizon if horizon is not None else None)
    except (InvalidManifest, ConfigError, PluginError) as err:
        _refuse(str(err))
    if decisions is not None:
        decisions.close()
    if html is not None:
        from .html_report import html_report

        records = decisions.records if decisions is not None and decisions.path is None else (
            list(read_decisions(record)) if record is not None else [])
        html.write_text(html_report(sim, records, title=f"kubesched simulate {' '.join(str(f) for f in filename)}"))
    if output is Output.yaml:
        sys.stdout.write(dump_yaml(sim.cluster.objects()))
    elif output is Output.json:
        items = [to_manifest(obj) for obj in sim.cluster.objects()]
        sys.stdout.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n")
    else:
        _print_placements(sim)


def _decision_log(path: Optional[Path]) -> DecisionLog | None:
    if path is None:
        return None
    try:
        return DecisionLog(path)
    except OSError as err:
        _refuse(f"--record: {path}: {err.strerror}")
        raise  # not reached: _refuse exits


@app.command()
def explain(
    pod: str = typer.Argument(..., help="The pod: NAMESPACE/NAME, or NAME in the default namespace."),
    filename: List[Path] = typer.Option([], "-f", "--filename",
                                        help="Simulate these manifests (file or directory, repeatable) and explain."),
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration file (with -f)."),
    from_record: Optional[Path] = typer.Option(
        None, "--from", help="Explain from a decisions file (simulate --record, run --record-decisions)."),
    kubeconfig: Optional[Path] = typer.Option(
        None, "--kubeconfig", help="Explain a live pod: the latest attempt that `kubesched run --record-decisions` "
                                   "published in its annotation."),
    seed: int = typer.Option(0, "--seed", help="Seed of the simulation (with -f)."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json."),
) -> None:
    """Why POD is on its node, or why it is Pending: every rejected node's plugin
    and reason, the best nodes' score breakdown, and what would make it fit."""
    from .explain import explain as explain_pod
    from .explain import pod_key, render

    key = pod_key(pod)
    if [bool(filename), from_record is not None, kubeconfig is not None].count(True) != 1:
        _refuse("explain: give either -f DIR (simulate and explain), --from RECORD or --kubeconfig K")
    if not filename and (config is not None or seed != 0):
        _refuse("explain: --config and --seed shape a simulation: they go with -f only")
    pod_object: Any = None
    nodes: list = []
    if kubeconfig is not None:
        records, pod_object, nodes = _published_decision(kubeconfig, key)
    elif from_record is not None:
        try:
            records = list(read_decisions(from_record))
        except DecisionFileError as err:
            _refuse(str(err))
    else:
        log = DecisionLog(keep=lambda name: name == key)
        try:
            sim = Simulation.from_paths(filename, config=config, seed=seed, decisions=log)
            sim.run()
        except (InvalidManifest, ConfigError, PluginError) as err:
            _refuse(str(err))
        records = log.records
        try:
            pod_object = sim.pod(key)
        except KeyError:
            _refuse(f"explain: pod {key} is not among the objects in {', '.join(map(str, filename))}")
        nodes = sim.cluster.list("Node").items
    answer = explain_pod(records, key, pod_object, nodes)
    _emit(answer, output, render)


def _published_decision(kubeconfig: Path, key: str) -> tuple[list[dict], Any, list]:
    """The latest attempt of live pod ``key`` as the daemon published it, the pod and the nodes."""
    from .core.cluster.client import ApiError, NotFound

    try:
        from kubernetes.config import ConfigException

        from .core.cluster.kube import KubernetesCluster
    except ImportError:
        _refuse("explain --kubeconfig: talking to an API server needs the Kubernetes client: "
                "pip install 'kubesched[kube]'")

    try:
        cluster = KubernetesCluster.from_kubeconfig(str(kubeconfig))
    except (ConfigException, OSError) as err:
        _refuse(f"explain: --kubeconfig {kubeconfig}: {err}")
    try:
        namespace, _, name = key.partition("/")
        pod = cluster.get("Pod", name, namespace)
        nodes = cluster.list("Node").items
    except NotFound:
        _refuse(f"explain: pod {key} not found")
    except ApiError as err:
        typer.echo(f"explain: the API server refused: {err}", err=True)
        raise typer.Exit(1) from None
    text = pod.metadata.annotations.get(DECISION_ANNOTATION)
    if text is None:
        return [], pod, nodes
    try:
        attempt = json.loads(text)
    except json.JSONDecodeError as err:
        _refuse(f"explain: pod {key}: annotation {DECISION_ANNOTATION}: not JSON: {err.msg}")
    if not isinstance(attempt, dict) or attempt.get("pod") != key:
        _refuse(f"explain: pod {key}: annotation {DECISION_ANNOTATION}: not a scheduling decision of this pod")
    binding = attempt.pop("binding", None)
    return [attempt, *([binding] if isinstance(binding, dict) else [])], pod, nodes


@app.command()
def compare(
    config: List[str] = typer.Option(..., "--config", metavar="FILE[:PROFILE]",
                                     help="KubeSchedulerConfiguration of side a, then of side b (exactly two); "
                                          ":PROFILE runs that profile of FILE as the default scheduler."),
    filename: List[Path] = typer.Option([], "-f", "--filename", help="Manifests to simulate (file or directory)."),
    perf_workload: Optional[str] = typer.Option(
        None, "--perf", metavar="FILE:TEST/WORKLOAD", help="A scheduler_perf workload instead of manifests."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="A converted trace (kubesched trace alibaba-openb) "
                                                               "to replay instead of manifests."),
    seed: int = typer.Option(0, "--seed", help="Seed of both runs."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json."),
) -> None:
    """Run the same input with two configurations: placements that differ,
    pending pods, per-node utilisation and fragmentation side by side."""
    from .compare import compare as compare_runs
    from .compare import compare_replays, render, render_replays, run_manifests, run_trace, run_workload
    from .perf.config import PerfConfigError
    from .perf.ops import Unsupported, WorkloadFailed

    if len(config) != 2:
        _refuse(f"compare: give --config exactly twice (got {len(config)})")
    if [bool(filename), perf_workload is not None, trace is not None].count(True) != 1:
        _refuse("compare: give either -f DIR, --perf FILE:TEST/WORKLOAD or --trace DIR")
    if trace is not None and seed != 0:
        _refuse("compare: --seed does not apply to --trace (a converted trace carries its seed)")
    try:
        if trace is not None:
            replays = [run_trace(trace, side) for side in config]
            _emit(compare_replays(*replays), output, render_replays)
            return
        if perf_workload is not None:
            file, _, name = perf_workload.rpartition(":")
            test, _, workload = name.partition("/")
            if not file or not test or not workload:
                _refuse(f"--perf: expected FILE:TEST/WORKLOAD, got {perf_workload!r}")
            sides = [run_workload(Path(file), test, workload, side, seed) for side in config]
        else:
            sides = [run_manifests(filename, side, seed) for side in config]
    except (InvalidManifest, ConfigError, PluginError, PerfConfigError, Unsupported, WorkloadFailed,
            ValueError) as err:
        _refuse(str(err))
    result = compare_runs(*sides)
    _emit(result, output, render)


def _emit(answer: dict, output: Output, render) -> None:
    """``answer`` as JSON or YAML on stdout, or as ``render`` prints it for a person."""
    if output is Output.json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    elif output is Output.yaml:
        sys.stdout.write(yaml.safe_dump(answer, sort_keys=False))
    else:
        render(answer, Console(width=200))


@app.command()
def snapshot(
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="kubeconfig of the cluster (default: "
                                                                          "$KUBECONFIG or ~/.kube/config)."),
    context: Optional[str] = typer.Option(None, "--context", help="kubeconfig context."),
    output_dir: Path = typer.Option(..., "-o", "--output-dir", help="Directory for the manifests (created)."),
) -> None:
    """Write a real cluster's scheduling-relevant state as manifests that
    `kubesched simulate -f DIR` loads: bound pods in place, Pending pods
    pending; no Secrets, ConfigMaps or container env/command/args."""
    from .core.cluster.client import ApiError
    from .snapshot import take_snapshot

    try:
        from kubernetes.config import ConfigException

        from .core.cluster.kube import KubernetesCluster
    except ImportError:
        _refuse("kubesched snapshot: talking to an API server needs the Kubernetes client: "
                "pip install 'kubesched[kube]'")
    try:
        cluster = KubernetesCluster.from_kubeconfig(str(kubeconfig) if kubeconfig else None, context)
    except (ConfigException, OSError) as err:
        _refuse(f"snapshot: --kubeconfig {kubeconfig or '(default)'}: {err}")
    try:
        written = take_snapshot(cluster, output_dir)
    except ApiError as err:
        typer.echo(f"snapshot: the API server refused: {err}", err=True)
        raise typer.Exit(1) from None
    except OSError as err:
        _refuse(f"snapshot: {output_dir}: {err.strerror}")
    table = Table(title=f"Snapshot in {output_dir}")
    table.add_column("KIND")
    table.add_column("OBJECTS", justify="right")
    for kind, count in written.items():
        table.add_row(kind, str(count))
    Console().print(table)


def _print_placements(sim: Simulation) -> None:
    console = Console()
    table = Table(title="Placements")
    for column in ("POD", "PRIORITY", "NODE", "STATUS"):
        table.add_column(column)
    bound = pending = 0
    for pod in sim.pods():
        if pod.spec.node_name:
            bound += 1
            table.add_row(pod.key, str(pod.spec.priority or 0), pod.spec.node_name, "Scheduled")
            continue
        pending += 1
        condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
        queued = sim.scheduler.queued(pod)
        if condition is not None:
            reason = f"{condition.reason}: {condition.message}"
        elif queued is not None and queued.gating_status is not None:
            reason = f"Gated by {queued.gating_plugin}: {queued.gating_status.message()}"
        else:
            reason = "Pending"
        table.add_row(pod.key, str(pod.spec.priority or 0), "-", reason)
    console.print(table)
    _print_preemptions(sim, console)
    console.print(
        f"{bound} pod(s) scheduled, {pending} pending, {sim.scheduler.cache_sizes()['nodes']} node(s); "
        f"{sim.scheduler.stats.cycles} scheduling attempt(s), {sim.clock.now() - sim.start_time:g}s simulated",
        soft_wrap=True,
    )


def _print_preemptions(sim: Simulation, console: Console) -> None:
    """The Preempted events (victim, the preemptor by name, upstream's message), if any."""
    events = sim.events("Preempted")
    if not events:
        return
    names = {pod.metadata.uid: pod.key for pod in sim.pods()}
    table = Table(title="Preemptions (Preempted events)")
    for column in ("TIME", "VICTIM", "PREEMPTOR", "MESSAGE"):
        table.add_column(column)
    for event in events:
        victim = event.involved_object
        preemptor = next((key for uid, key in names.items() if uid in event.message), "-")
        table.add_row(f"+{event.first_timestamp - sim.start_time:g}s", f"{victim.namespace}/{victim.name}",
                      preemptor, event.message)
    console.print(table)


@app.command()
def run(
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration file."),
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="Talk to the API server of this kubeconfig."),
    in_cluster: bool = typer.Option(False, "--in-cluster", help="Talk to the API server with the pod's service account."),
    embedded: bool = typer.Option(False, "--embedded", help="Run on the embedded in-memory cluster."),
    filename: List[Path] = typer.Option([], "-f", "--filename", help="With --embedded: manifests to load (repeatable)."),
    bind_address: str = typer.Option("127.0.0.1", "--bind-address", help="Address of /healthz, /readyz, /metrics."),
    port: int = typer.Option(10259, "--port", help="Secure port of /healthz, /readyz, /metrics (0: any free port)."),
    tls_cert_file: Optional[Path] = typer.Option(None, "--tls-cert-file", help="Serving certificate (PEM)."),
    tls_private_key_file: Optional[Path] = typer.Option(None, "--tls-private-key-file", help="Its key (PEM)."),
    cert_dir: Path = typer.Option(Path(tempfile.gettempdir()) / "kubesched-serving-cert", "--cert-dir",
                                  help="Where a self-signed serving certificate is kept when none is given."),
    insecure_serving: bool = typer.Option(False, "--insecure-serving",
                                          help="Serve plain HTTP instead of HTTPS (e.g. behind a TLS proxy)."),
    metrics_without_auth: bool = typer.Option(
        False, "--metrics-without-auth", help="Serve /metrics to anyone; by default a request needs a bearer token "
                                              "the API server authenticates and authorizes for get /metrics."),
    log_format: LogFormat = typer.Option(LogFormat.text, "--log-format", help="text or json."),
    verbosity: int = typer.Option(0, "-v", "--v", help="Log verbosity (klog's -v; 2 logs every binding)."),
    binding_workers: Optional[int] = typer.Option(
        None, "--binding-workers", help="Threads that run PreBind and Bind (claim and volume writes, the pods/binding "
                                        "call) and preemption's evictions off the scheduling loop against an API server "
                                        "(default 16; 0: on the loop)."),
    record_decisions: Optional[Path] = typer.Option(
        None, "--record-decisions", help="Write the record of every scheduling attempt here (JSON Lines) and "
                                         "publish each pod's latest one in its annotation "
                                         "scheduling.kubesched.io/last-decision (kubesched explain --kubeconfig)."),
) -> None:
    """Run the scheduler and the controllers until SIGTERM (exit 0) or a lost lease (exit 1)."""
    from kubesched.core.observability.logs import configure_logging

    from .daemon import BINDING_WORKERS, Daemon
    from .simulation import load_paths

    configure_logging(log_format.value, verbosity)
    sources = [name for name, on in (("--embedded", embedded), ("--in-cluster", in_cluster),
                                     ("--kubeconfig", kubeconfig is not None)) if on]
    if len(sources) > 1:
        _refuse(f"{' and '.join(sources)}: choose one")
    if filename and not embedded:
        _refuse("-f: manifests are only loaded with --embedded")
    if binding_workers is not None and (embedded or binding_workers < 0):
        _refuse("--binding-workers: zero or more, against an API server (the embedded cluster binds at once)")
    try:
        loaded = load_config(config, DEFAULT_PLUGINS)
        cluster = _run_cluster(loaded, embedded, in_cluster, kubeconfig)
        if embedded:
            load_paths(cluster, filename)
        decisions = DecisionPublisher(cluster, record_decisions) if record_decisions is not None else None
        tls = _serving_cert(tls_cert_file, tls_private_key_file, cert_dir, insecure_serving)
        daemon = Daemon(cluster, loaded, embedded=embedded, bind_address=bind_address, port=port,
                        decisions=decisions, tls=tls, metrics_auth=not metrics_without_auth,
                        binding_workers=BINDING_WORKERS if binding_workers is None else binding_workers)
    except (InvalidManifest, ConfigError, PluginError, ValueError) as err:
        _refuse(str(err))
    except OSError as err:
        _refuse(f"--bind-address/--port: {err}")
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.stop())
    raise typer.Exit(daemon.run())


def _serving_cert(cert: Optional[Path], key: Optional[Path], cert_dir: Path,
                  insecure: bool) -> tuple[Path, Path] | None:
    """The secure port's certificate and key: the given ones, a self-signed
    pair in ``cert_dir``, or None with --insecure-serving."""
    from kubesched.core.observability.serving_cert import self_signed

    if insecure:
        if cert or key:
            _refuse("--insecure-serving: no --tls-cert-file/--tls-private-key-file then")
        return None
    if (cert is None) != (key is None):
        _refuse("--tls-cert-file and --tls-private-key-file go together")
    if cert is not None and key is not None:
        for option, path in (("--tls-cert-file", cert), ("--tls-private-key-file", key)):
            if not path.is_file():
                _refuse(f"{option}: {path}: no such file")
        return cert, key
    try:
        return self_signed(cert_dir)
    except OSError as err:
        _refuse(f"--cert-dir: {cert_dir}: {err.strerror or err}")
        raise  # not reached: _refuse exits


def _run_cluster(config, embedded: bool, in_cluster: bool, kubeconfig: Optional[Path]):
    """The cluster ``kubesched run`` talks to; the kubeconfig may also come
    from the configuration's ``clientConnection.kubeconfig``."""
    if embedded:
        from .core.clock import RealClock

        return MemoryCluster(RealClock())
    path = str(kubeconfig) if kubeconfig else config.client_connection.kubeconfig
    if not in_cluster and not path:
        _refuse("kubesched run: give --embedded, --in-cluster or --kubeconfig (or clientConnection.kubeconfig)")
    try:
        from kubernetes.config import ConfigException

        from .core.cluster.kube import KubernetesCluster
    except ImportError:
        _refuse("kubesched run: talking to an API server needs the Kubernetes client: pip install 'kubesched[kube]'")
    limits = {"qps": config.client_connection.qps, "burst": config.client_connection.burst}
    try:
        if in_cluster:
            return KubernetesCluster.in_cluster(**limits)
        return KubernetesCluster.from_kubeconfig(path, **limits)
    except (ConfigException, OSError) as err:
        _refuse(f"{'--in-cluster' if in_cluster else path}: {err}")


@app.command()
def perf(
    config: Path = typer.Argument(..., help="A scheduler_perf performance-config.yaml."),
    test: Optional[str] = typer.Option(None, "--test", help="Only this test case."),
    workload: Optional[str] = typer.Option(None, "--workload", help="Only this workload."),
    output: Output = typer.Option(Output.table, "-o", "--output", help="table or json (upstream DataItems)."),
) -> None:
    """Run kube-scheduler's scheduler_perf workloads and report SchedulingThroughput."""
    from .perf import perf_command

    raise typer.Exit(perf_command(config, test, workload, output.value))


@app.command()
def sweep(
    spec: Path = typer.Argument(..., help="The sweep file (traces, configs, seeds, arrivals, record)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Results directory (default: NAME-results "
                                                                 "beside the sweep file)."),
    engine: str = typer.Option("local", "--engine", help="local (a process pool) or ray."),
    workers: int = typer.Option(0, "--workers", help="Local processes (default: the core count)."),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: the cluster "
                                                                  "(ray start --head prints it)."),
    rerun: bool = typer.Option(False, "--rerun", help="Compute every cell again, even those already done."),
    export: Optional[str] = typer.Option(None, "--export", help="Also write the table as csv or json."),
) -> None:
    """Run every cell of a sweep (trace x config x seed x arrival) not already
    done; one row per run in NAME.parquet in the results directory."""
    import os

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    try:
        from .sweep.engines import ENGINES
        from .sweep.results import EXPORTS
        from .sweep.runner import run_sweep
        from .sweep.spec import SweepError, load_spec
    except ImportError as err:
        _refuse(f"kubesched sweep needs pyarrow ({err.name} is missing): pip install 'kubesched[sweep]'")

    if engine not in ENGINES:
        _refuse(f"--engine: one of {', '.join(ENGINES)}, got {engine!r}")
    if export is not None and export not in EXPORTS:
        _refuse(f"--export: one of {', '.join(EXPORTS)}, got {export!r}")
    if workers < 0:
        _refuse(f"--workers: zero (the core count) or more, got {workers}")
    if engine == "ray" and workers:
        _refuse("--workers: the local engine's; with --engine ray the Ray cluster's CPUs decide")
    if engine == "local" and address is not None:
        _refuse("--address: the Ray cluster's; give --engine ray with it")
    try:
        loaded = load_spec(spec)
    except SweepError as err:
        _refuse(str(err))
    directory = out or spec.parent / f"{loaded.name}-results"
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(loaded.name, total=None)

        def progress(done: int, total: int, cell) -> None:
            if cell is None:
                bar.update(task, total=total, completed=done)
                bar.reset(task, total=total, completed=done)  # the ETA counts only what is computed now
            else:
                bar.update(task, completed=done, description=f"{loaded.name}: {cell.id}")

        try:
            outcome = run_sweep(loaded, directory, engine=engine, workers=workers or os.cpu_count() or 1,
                                address=address, rerun=rerun, export=export, progress=progress)
        except KeyboardInterrupt:
            typer.echo("interrupted: the finished cells are kept; run the same command to go on", err=True)
            raise typer.Exit(130) from None
        except (OSError, RuntimeError, ConfigError, InvalidManifest, ValueError) as err:
            _refuse(f"sweep: {err}")
    typer.echo(f"{len(outcome.computed)} cell(s) computed, {len(outcome.skipped)} already done")
    for path in outcome.files:
        typer.echo(str(path))


@app.command()
def plugins() -> None:
    """List the plugins found through the entry-point group kubesched.plugins."""
    try:
        registry = Registry.discover()
    except PluginError as err:
        _refuse(str(err))
    table = Table(title="Plugins (entry-point group kubesched.plugins)")
    table.add_column("PLUGIN")
    table.add_column("EXTENSION POINTS")
    table.add_column("DISTRIBUTION")
    for name, plugin in registry.items():
        table.add_row(name, ", ".join(extension_points(plugin)), registry.origin.get(name, ""))
    broken = registry.broken()
    for name, why in broken.items():
        table.add_row(f"[red]{name}[/]", f"[red]cannot be used: {why}[/]", registry.origin.get(name, ""))
    Console(width=200).print(table)
    if broken:
        typer.echo(f"{len(broken)} plugin(s) cannot be used; profiles that do not name them work", err=True)


@app.command()
def report(
    results: List[Path] = typer.Argument(None, help="Replay results (kubesched trace replay -o json)."),
    out: Path = typer.Option(Path("."), "-o", "--out", help="Directory for the PNG / HTML files."),
    heatmap: Optional[Path] = typer.Option(None, "--heatmap", help="The result for the per-node heatmap (default: the first)."),
    decisions: Optional[Path] = typer.Option(
        None, "--decisions", help="A decisions file (simulate --record, run --record-decisions): writes "
                                  "decisions.html, a page per pod and the timeline of attempts."),
    published: Optional[Path] = typer.Option(
        None, "--published", help="With a sweep: the FGD paper's published results to overlay "
                                  "(data/alibaba-gpu-v2023/fgd-published-results)."),
) -> None:
    """Plot replay results: allocation.png (GPU allocation vs arrived demand, one
    line per policy), fragmentation.png and heatmap.png (per-node GPU use of one
    run); a sweep's results (its directory or .parquet table): per trace the
    allocation and fragmentation figures and a summary table with 95 %
    confidence intervals, as PNG, sweep.html and summary.md; or, with --decisions, the
    HTML report of a decision record."""
    from .report import ReportError, load_results, plot_allocation, plot_fragmentation, plot_heatmap

    if decisions is not None:
        from .html_report import records_report

        try:
            records = list(read_decisions(decisions))
            out.mkdir(parents=True, exist_ok=True)
            page = out / "decisions.html"
            page.write_text(records_report(records, title=f"kubesched decisions {decisions}"))
        except DecisionFileError as err:
            _refuse(str(err))
        except OSError as err:
            _refuse(f"{out}: {err.strerror}")
        typer.echo(str(page))
        if not results:
            if heatmap is not None or published is not None:
                _refuse("--heatmap/--published: replay or sweep results only, not --decisions alone")
            return
    if not results:
        _refuse("report: give replay results, a sweep's results, or --decisions FILE")
    if len(results) == 1 and (results[0].is_dir() or results[0].suffix == ".parquet"):
        if heatmap is not None:
            _refuse("--heatmap: replay results only (a sweep's report has no heatmap)")
        _report_sweep(results[0], out, published)
        return
    if published is not None:
        _refuse("--published: a sweep's results only (give its directory or .parquet table)")
    try:
        loaded = load_results(results)
        chosen = load_results([heatmap])[0] if heatmap is not None else loaded[0]
        out.mkdir(parents=True, exist_ok=True)
        written = [plot_allocation(loaded, out / "allocation.png"),
                   plot_fragmentation(loaded, out / "fragmentation.png"),
                   plot_heatmap(chosen, out / "heatmap.png")]
    except ReportError as err:
        _refuse(str(err))
    for path in written:
        typer.echo(str(path))


def _report_sweep(results: Path, out: Path, published: Optional[Path]) -> None:
    from rich.table import Table as RichTable

    from .report import ReportError, load_published, plot_sweep_trace, sweep_html, sweep_markdown, sweep_summary
    from .sweep.results import read_results

    try:
        rows = read_results(results)
        paper = load_published(published) if published is not None else None
        summary = sweep_summary(rows, paper)
        out.mkdir(parents=True, exist_ok=True)
        images = [path for trace in sorted({r["trace"] for r in rows if r.get("kind") == "openb"})
                  for path in plot_sweep_trace(rows, trace, out, paper)]
        page = out / "sweep.html"
        page.write_text(sweep_html(summary, images, title=f"kubesched sweep {results}"))
        markdown = out / "summary.md"
        markdown.write_text(sweep_markdown(summary, title=f"kubesched sweep {results.name}"))
    except (ReportError, ValueError) as err:
        _refuse(str(err))
    except ImportError as err:
        _refuse(f"report: {err.name} is missing: pip install 'kubesched[report,sweep]'")
    table = RichTable(title="GPU allocation at 130 % arrival (mean over seeds, 95 % CI)")
    for column in ("TRACE", "RANK", "POLICY", "SEEDS", "MEAN", "±95%", "PAPER", "OURS-PAPER"):
        table.add_column(column)
    for entry in sorted(summary, key=lambda e: (e["trace"], e["rank"])):
        table.add_row(entry["trace"], str(entry["rank"]), entry["config"], str(entry["seeds"]), f"{entry['mean']:.2f}",
                      "-" if entry["ci95"] is None else f"{entry['ci95']:.2f}",
                      str(entry.get("paper", "-")), "-" if "diff" not in entry else f"{entry['diff']:+.2f}")
    Console(width=160).print(table)
    for path in [*images, page, markdown]:
        typer.echo(str(path))


@config_app.command("validate")
def validate(file: Path = typer.Argument(..., help="KubeSchedulerConfiguration file.")) -> None:
    """Load a configuration and build every profile's plugins; report the first problem."""
    try:
        config = load_config(file, DEFAULT_PLUGINS)
        clock = FakeClock()
        scheduler = Scheduler(MemoryCluster(clock), config, Registry.discover(), clock)
    except (ConfigError, PluginError) as err:
        _refuse(str(err) if str(err).startswith(str(file)) else f"{file}: {err}")
    for name, framework in scheduler.profiles.items():
        points = {point: names for point, names in framework.points.items() if names}
        typer.echo(f"profile {name}:")
        typer.echo(yaml.safe_dump(points, sort_keys=False, default_flow_style=None).rstrip())
    typer.echo(f"{file}: valid")


if __name__ == "__main__":
    app()
