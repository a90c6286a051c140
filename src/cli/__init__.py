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
Adding a command: a module here with one function, named in :data:`COMMANDS`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from typer._click import Command  # typer's own click, as TyperGroup names it

#: Every command, in the order ``kubesched --help`` lists them, as ``MODULE:ATTRIBUTE`` of this package (the
#: function, or the Typer of subcommands, named as the attribute without ``_app``); a bare name is the function of
#: that name in the module of that name.  A command's module is imported when that command runs (or the help
#: lists them all), so ``kubesched simulate`` does not load what compare, perf, plan or trace need.
_SPECS = ("simulate", "explain", "compare", "snapshot", "run", "perf", "sweep", "config:plugins", "report", "ui", "plan",
          "config:config_app", "trace:trace_app")


def _command(spec: str) -> tuple[str, tuple[str, str]]:
    """``MODULE[:ATTRIBUTE]`` -> (command name, (module, attribute))."""
    module, _, attribute = spec.partition(":")
    attribute = attribute or module
    return attribute.removesuffix("_app"), (f".{module}", attribute)


#: command name -> (module, attribute), in the help's order
COMMANDS = dict(_command(spec) for spec in _SPECS)


class _Commands(MutableMapping[str, "Command"]):
    """The ``kubesched`` group's commands by name, in :data:`COMMANDS`' order: each built from its module when
    first looked up (to run it, or for the help listing them all); the names alone (a typo's "Did you mean")
    import nothing."""

    def __init__(self) -> None:
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            module, attribute = COMMANDS[name]  # KeyError for a name that is no command, as a dict's
            target = getattr(import_module(module, __name__), attribute)
            if isinstance(target, typer.Typer):
                command: Command = typer.main.get_group(target)
            else:
                single = typer.Typer(add_completion=False)
                single.command()(target)
                command = typer.main.get_command(single)
            command.name = name
            self._built[name] = command
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("kubesched's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS


class _Group(TyperGroup):
    """The ``kubesched`` group, its commands in a :class:`_Commands`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands()


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


app = _Command(cls=_Group, help="kubesched: the Kubernetes scheduling framework in Python.",
               no_args_is_help=True, add_completion=False)


@app.callback()
def _kubesched() -> None:
    """(The group's own step before any command: none.)"""
