"""The ``kubesched`` command: one module per command, and all terminal rendering (typer + rich).

- ``kubesched simulate -f PATH ...``: schedule manifests on the embedded cluster (:mod:`.simulate`);
- ``kubesched run``: the scheduler and controllers as a daemon, embedded or against an API server (:mod:`.run`);
- ``kubesched perf CONFIG``: kube-scheduler's scheduler_perf workloads (:mod:`.perf`);
- ``kubesched explain POD -f DIR | --from RECORD | --kubeconfig K``: why a pod is where it is (:mod:`.explain`);
- ``kubesched compare --config A --config B -f DIR | --perf ... | --trace ...``: two configurations (:mod:`.compare`);
- ``kubesched snapshot --kubeconfig K -o DIR``: a real cluster's state as manifests (:mod:`.snapshot`);
- ``kubesched sweep SPEC.yaml``: an experiment grid, resumable, locally or on Ray (:mod:`.sweep`);
- ``kubesched report RESULTS...``: plots of replays and sweeps, the HTML page of decisions (:mod:`.report`);
- ``kubesched trace ...``: convert a production trace and replay it (:mod:`.trace`);
- ``kubesched ui -f DIR``: the simulator in a browser, on loopback (:mod:`.ui`; the extra ``kubesched[ui]``);
- ``kubesched plan -f DIR [--scale-down]``: the nodes to add (or remove) so every pod fits (:mod:`.plan`);
- ``kubesched plugins`` and ``kubesched config validate FILE`` (:mod:`.config`).

Invalid input exits with status 2 and one line ``FILE: KIND/NAME: FIELD: problem`` (:mod:`.common`).
Adding a command: a module here with one function, registered below.
"""

from __future__ import annotations

import gc
from typing import Any

import typer

from .compare import compare
from .config import config_app, plugins
from .explain import explain
from .perf import perf
from .plan import plan
from .report import report
from .run import run
from .simulate import simulate
from .snapshot import snapshot
from .sweep import sweep
from .trace import trace_app
from .ui import ui


class _Command(typer.Typer):
    """The ``kubesched`` process's entry point (``[project.scripts]``, ``python -m kubesched.cli``).

    Once the command is done the process only exits: every object the command kept (a simulation's whole
    cluster) is frozen out of the garbage collector first, so the interpreter's collection at exit does not
    walk them all (~0.3 s of CPU after a 10,000-pod ``simulate``) to free memory the process is about to give
    back anyway.  Output is unaffected: the commands close the files they write, and the interpreter flushes
    stdout and stderr at exit as always; the exit status is the command's.  Tests invoking the app through
    ``typer.testing.CliRunner`` do not come through here, so a long-lived process keeps collecting."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            gc.freeze()


app = _Command(help="kubesched: the Kubernetes scheduling framework in Python.", no_args_is_help=True,
                  add_completion=False)
for command in (simulate, explain, compare, snapshot, run, perf, sweep, plugins, report, ui, plan):
    app.command()(command)
app.add_typer(config_app, name="config")
app.add_typer(trace_app, name="trace")
