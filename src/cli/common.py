"""What every command shares: the exit code and one-line refusal of bad input,
output formats, printing an answer for a person or a program, and reaching a
real API server through the Kubernetes client."""

from __future__ import annotations

import contextlib
import enum
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, NoReturn

import typer
import yaml

from kubesched.core.api.convert import printable
from kubesched.core.features import NEWEST, RELEASES, FeatureGateError, FeatureGates, parse_feature_gates
from kubesched.core.framework.config import ConfigError, parse_duration

if TYPE_CHECKING:
    from rich.console import Console

#: Exit status of every command for invalid input (a bad file, field, option).
INVALID_INPUT = 2


class Output(str, enum.Enum):
    """``-o/--output`` of the reporting commands: a rich table, YAML or JSON."""

    table = "table"
    yaml = "yaml"
    json = "json"


def refuse(message: str) -> NoReturn:
    """Print ``message`` (one line: FILE: KIND/NAME: FIELD: problem) on stderr and exit with :data:`INVALID_INPUT`.
    Newlines and control characters are shown escaped (``\\x1b``): the line is one line and cannot drive the
    terminal, whatever a file held."""
    typer.echo(printable(message), err=True)
    raise typer.Exit(INVALID_INPUT)


def emit(answer: dict, output: Output, render: Callable[[dict, Console], None]) -> None:
    """``answer`` as JSON or YAML on stdout, or as ``render`` prints it for a person."""
    if output is Output.json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    elif output is Output.yaml:
        sys.stdout.write(yaml.safe_dump(answer, sort_keys=False))
    else:
        from rich.console import Console

        render(answer, Console(width=200))


def kube_cluster(command: str, kubeconfig: Path | str | None, context: str | None = None, *,
                 in_cluster: bool = False, **limits: Any) -> Any:
    """A :class:`~kubesched.core.cluster.kube.KubernetesCluster` for ``command``
    (named in errors when not empty): from ``kubeconfig`` (None: $KUBECONFIG or ~/.kube/config)
    and ``context``, or the pod's service account with ``in_cluster``; refuses
    (exit 2) when the Kubernetes client is not installed or the kubeconfig
    cannot be read."""
    try:
        from kubernetes.config import ConfigException

        from kubesched.core.cluster.kube import KubernetesCluster
    except ImportError:
        needs = "talking to an API server needs the Kubernetes client: pip install 'kubesched[kube]'"
        refuse(f"{command}: {needs}" if command else needs)
    try:
        if in_cluster:
            return KubernetesCluster.in_cluster(**limits)
        return KubernetesCluster.from_kubeconfig(str(kubeconfig) if kubeconfig else None, context, **limits)
    except (ConfigException, OSError) as err:
        source = "--in-cluster" if in_cluster else f"--kubeconfig {kubeconfig or '(default)'}"
        refuse(f"{command}: {source}: {err}" if command else f"{source}: {err}")


#: ``--feature-gates`` and ``--emulated-version``, the same on every command that runs a scheduler
FEATURE_GATES_HELP = ("Feature gates to set, Name=true|false,... (repeatable), over the defaults of "
                      "--emulated-version; upstream's names, refused in upstream's words when unknown or locked.")
EMULATED_VERSION_HELP = (f"Behave as kube-scheduler {'|'.join(RELEASES)} does: every feature gate at its default "
                         f"in that release (default {NEWEST}).")


def feature_gates(emulated_version: str | None, gates: list[str]) -> FeatureGates:
    """The :class:`FeatureGates` of ``--emulated-version`` and ``--feature-gates``; refuses (exit 2) in
    component-base's words (``--feature-gates: unrecognized feature gate: X``)."""
    try:
        overrides = parse_feature_gates(gates)
    except FeatureGateError as err:
        refuse(f"--feature-gates: {err}")
    try:
        return FeatureGates(emulated_version, overrides)
    except FeatureGateError as err:
        option = "--emulated-version" if str(err).startswith("emulation version") else "--feature-gates"
        refuse(f"{option}: {err}")


def print_feature_notes(features: FeatureGates, seen: int = 0) -> int:
    """Print ``features``' notes after the first ``seen`` on stderr (gates kubesched switched on, fields the
    API server dropped), one line each; returns how many there are now."""
    for note in features.notes[seen:]:
        typer.echo(printable(f"note: {note}"), err=True)
    return len(features.notes)
@contextlib.contextmanager
def configuration(side: str | None) -> Iterator[Path | None]:
    """``--config FILE`` or ``FILE:PROFILE`` as the path a Simulation loads, while the ``with`` lasts: FILE:PROFILE
    is that profile of FILE alone, as the default scheduler (as ``compare`` runs a side); None stays None.
    Raises ``ConfigError`` (a PROFILE FILE does not have, a FILE that cannot be read)."""
    if side is None:
        yield None
        return
    from kubesched.analysis.compare import profile_as_default, split_side  # with a --config only: it loads perf

    path, profile = split_side(side)
    with tempfile.TemporaryDirectory() as scratch:
        yield profile_as_default(path, profile, Path(scratch))


class TimedChange(NamedTuple):
    """One ``--at OFFSET=FILE`` (``delete``: ``--delete-at``): ``offset`` seconds after the start."""

    offset: float
    file: Path
    delete: bool


def timed_changes(at: list[str], delete_at: list[str]) -> list[TimedChange]:
    """The ``--at`` then the ``--delete-at`` values (``OFFSET=FILE``, OFFSET a duration like ``90s``, ``1h30m``), in
    the order given.  Raises ``ConfigError`` naming the option and the value."""
    changes = []
    for option, values in (("--at", at), ("--delete-at", delete_at)):
        for value in values:
            offset, _, file = value.partition("=")
            if not offset or not file:
                raise ConfigError(f"{option}: expected OFFSET=FILE, got {value!r}")
            changes.append(TimedChange(parse_duration(offset, option), Path(file), option == "--delete-at"))
    return changes
