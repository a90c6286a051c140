"""``kubesched ui -f DIR``: the scheduler simulator in a browser (needs the extra ``kubesched[ui]``)."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import List, Optional

import typer

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError
from kubesched.drivers.simulation import DEFAULT_START, parse_start_time

from .common import EMULATED_VERSION_HELP, FEATURE_GATES_HELP, feature_gates, refuse, timed_changes


def ui(
    filename: List[Path] = typer.Option(..., "-f", "--filename",
                                        help="Manifest file or directory (repeatable), or a bundle exported by the UI."),
    config: Optional[Path] = typer.Option(None, "--config", help="KubeSchedulerConfiguration file."),
    compare: List[Path] = typer.Option(
        [], "--compare", metavar="FILE",
        help="A KubeSchedulerConfiguration the Config diff page may compare with (repeatable; it opens no other)."),
    at: List[str] = typer.Option(
        [], "--at", metavar="OFFSET=FILE",
        help="At simulated time OFFSET (90s, 5m) create or replace the objects in FILE (as simulate --at). Repeatable."),
    delete_at: List[str] = typer.Option(
        [], "--delete-at", metavar="OFFSET=FILE", help="At OFFSET delete the objects FILE names. Repeatable."),
    port: int = typer.Option(8080, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser."),
    seed: int = typer.Option(0, "--seed", help="Seed for tie-breaking between equal nodes and generated names."),
    start_time: Optional[str] = typer.Option(None, "--start-time", help="Simulated start, RFC 3339."),
    gates: List[str] = typer.Option([], "--feature-gates", metavar="NAME=BOOL,...", help=FEATURE_GATES_HELP),
    emulated_version: Optional[str] = typer.Option(None, "--emulated-version", metavar="1.MINOR",
                                                   help=EMULATED_VERSION_HELP),
) -> None:
    """Serve the simulator on 127.0.0.1: the cluster, every pod's decisions, devices, pod groups, a timeline,
    what-if edits re-simulated in the background, two configurations side by side; the files are watched."""
    try:
        from kubesched.drivers.harness import scheduler_configuration
        from kubesched.ui.bundle import read_bundle
        from kubesched.ui.runs import Runs
        from kubesched.ui.scenario import TimedChange
        from kubesched.ui.server import UiServer
    except ImportError as err:
        refuse(f"kubesched ui needs its extra ({err.name} is missing): pip install 'kubesched[ui]'")
    features = feature_gates(emulated_version, gates)
    try:
        start = parse_start_time(start_time) if start_time else DEFAULT_START
    except ValueError as err:
        refuse(str(err))
    try:
        paths: list[Path] = list(filename)
        changes: list[TimedChange] = []
        if len(filename) == 1 and filename[0].is_dir():
            bundle = read_bundle(filename[0])
            if bundle is not None:
                paths, bundled_config, changes = bundle
                config = config or bundled_config
        changes += [TimedChange(*change) for change in timed_changes(at, delete_at)]
        for file in compare:
            scheduler_configuration(file)  # refuses a bad file now, naming it
        runs = Runs(paths, config, changes, seed=seed, start=start, features=features, compare=compare)
    except (InvalidManifest, ConfigError, PluginError, ValueError) as err:
        refuse(str(err))
    try:
        server = UiServer(runs, port=port, title=f"kubesched ui {' '.join(str(f) for f in filename)}")
    except OSError as err:
        refuse(f"--port {port}: cannot listen on 127.0.0.1: {err.strerror}")
    runs.start()
    typer.echo(f"kubesched ui: {server.url} (Ctrl-C to stop)")
    if not no_open:
        webbrowser.open(server.url)
    try:
        server.run()
    finally:
        runs.close()
