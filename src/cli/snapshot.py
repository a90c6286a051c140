"""``kubesched snapshot``: a real cluster's scheduling-relevant state as manifests for ``simulate``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.core.cluster.client import ApiError
from kubesched.core.cluster.snapshot import take_snapshot

from .common import kube_cluster, refuse


def snapshot(
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="kubeconfig of the cluster (default: "
                                                                          "$KUBECONFIG or ~/.kube/config)."),
    context: Optional[str] = typer.Option(None, "--context", help="kubeconfig context."),
    output_dir: Path = typer.Option(..., "-o", "--output-dir", help="Directory for the manifests (created)."),
) -> None:
    """Write a real cluster's scheduling-relevant state as manifests that
    `kubesched simulate -f DIR` loads: bound pods in place, Pending pods
    pending; no Secrets, ConfigMaps or container env/command/args."""
    cluster = kube_cluster("snapshot", kubeconfig, context)
    try:
        written = take_snapshot(cluster, output_dir)
    except ApiError as err:
        typer.echo(f"snapshot: the API server refused: {err}", err=True)
        raise typer.Exit(1) from None
    except OSError as err:
        refuse(f"snapshot: {output_dir}: {err.strerror}")
    table = Table(title=f"Snapshot in {output_dir}")
    table.add_column("KIND")
    table.add_column("OBJECTS", justify="right")
    for kind, count in written.items():
        table.add_row(kind, str(count))
    Console().print(table)
