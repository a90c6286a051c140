"""``kubesched run``: the scheduler and the controllers as a daemon, embedded or against an API server."""

from __future__ import annotations

import enum
import signal
import tempfile
from pathlib import Path
from typing import List, Optional

import typer

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.clock import RealClock
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.core.observability.decision_log import DecisionPublisher
from kubesched.drivers.harness import scheduler_configuration

from .common import EMULATED_VERSION_HELP, FEATURE_GATES_HELP, feature_gates, kube_cluster, print_feature_notes, refuse


class LogFormat(str, enum.Enum):
    """``--log-format``: klog text or component-base JSON (see :mod:`kubesched.core.observability.logs`)."""

    text = "text"
    json = "json"



def run(
    ctx: typer.Context,
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
    takeover_grace: Optional[float] = typer.Option(
        None, "--takeover-grace", metavar="SECONDS",
        help="After taking the lease over from another replica, wait this long past its expiry before scheduling, "
             "so that a write the deposed leader sent before losing the lease has landed or failed (default 0: "
             "the PreBind check of a device in two claims is the safety net; N costs every takeover N seconds)."),
    record_decisions: Optional[Path] = typer.Option(
        None, "--record-decisions", help="Write the record of every scheduling attempt here (JSON Lines) and "
                                         "publish each pod's latest one in its annotation "
                                         "scheduling.kubesched.io/last-decision (kubesched explain --kubeconfig)."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...", help=FEATURE_GATES_HELP),
    emulated_version: Optional[str] = typer.Option(None, "--emulated-version", metavar="1.MINOR",
                                                   help=EMULATED_VERSION_HELP),
) -> None:
    """Run the scheduler and the controllers until SIGTERM (exit 0) or a lost lease (exit 1)."""
    from kubesched.core.observability.logs import configure_logging
    from kubesched.drivers.daemon import BINDING_WORKERS, TAKEOVER_GRACE_SECONDS, Daemon
    from kubesched.drivers.simulation import load_paths

    ctx.call_on_close(  # an in-process run (tests) leaves the root logger as it found it
        configure_logging(log_format.value, verbosity))
    sources = [name for name, on in (("--embedded", embedded), ("--in-cluster", in_cluster),
                                     ("--kubeconfig", kubeconfig is not None)) if on]
    if len(sources) > 1:
        refuse(f"{' and '.join(sources)}: choose one")
    if filename and not embedded:
        refuse("-f: manifests are only loaded with --embedded")
    if binding_workers is not None and (embedded or binding_workers < 0):
        refuse("--binding-workers: zero or more, against an API server (the embedded cluster binds at once)")
    features = feature_gates(emulated_version, gates)
    try:
        loaded = scheduler_configuration(config)
        cluster = _run_cluster(loaded, embedded, in_cluster, kubeconfig, features)
        if embedded:
            load_paths(cluster, filename)
        decisions = DecisionPublisher(cluster, record_decisions) if record_decisions is not None else None
        tls = _serving_cert(tls_cert_file, tls_private_key_file, cert_dir, insecure_serving)
        daemon = Daemon(cluster, loaded, embedded=embedded, bind_address=bind_address, port=port,
                        decisions=decisions, tls=tls, metrics_auth=not metrics_without_auth,
                        binding_workers=BINDING_WORKERS if binding_workers is None else binding_workers,
                        takeover_grace=TAKEOVER_GRACE_SECONDS if takeover_grace is None else takeover_grace,
                        features=features)
    except (InvalidManifest, ConfigError, PluginError, ValueError) as err:
        refuse(str(err))
    except OSError as err:
        refuse(f"--bind-address/--port: {err}")
    print_feature_notes(features)
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
            refuse("--insecure-serving: no --tls-cert-file/--tls-private-key-file then")
        return None
    if (cert is None) != (key is None):
        refuse("--tls-cert-file and --tls-private-key-file go together")
    if cert is not None and key is not None:
        for option, path in (("--tls-cert-file", cert), ("--tls-private-key-file", key)):
            if not path.is_file():
                refuse(f"{option}: {path}: no such file")
        return cert, key
    try:
        return self_signed(cert_dir)
    except OSError as err:
        refuse(f"--cert-dir: {cert_dir}: {err.strerror or err}")
        raise  # not reached: _refuse exits


def _run_cluster(config, embedded: bool, in_cluster: bool, kubeconfig: Optional[Path], features):
    """The cluster ``kubesched run`` talks to (the embedded one serves by ``features``); the kubeconfig may
    also come from the configuration's ``clientConnection.kubeconfig``."""
    if embedded:
        return MemoryCluster(RealClock(), features=features)
    path = str(kubeconfig) if kubeconfig else config.client_connection.kubeconfig
    if not in_cluster and not path:
        refuse("kubesched run: give --embedded, --in-cluster or --kubeconfig (or clientConnection.kubeconfig)")
    return kube_cluster("", path, in_cluster=in_cluster, qps=config.client_connection.qps,
                        burst=config.client_connection.burst)
