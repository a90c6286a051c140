"""``kubesched config validate`` and ``kubesched plugins``: configurations and the plugins they can name."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml
from rich.console import Console
from rich.table import Table

from kubesched.controllers import CONTROLLERS
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError, Registry, extension_points
from kubesched.drivers.harness import check_configuration

from .common import refuse

config_app = typer.Typer(help="KubeSchedulerConfiguration files.", no_args_is_help=True)



def plugins() -> None:
    """List the plugins found through the entry-point group kubesched.plugins."""
    try:
        registry = Registry.discover()
    except PluginError as err:
        refuse(str(err))
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
    controllers = Table(title="Controllers (kube-controller-manager's names; simulate, ui and run start them)")
    controllers.add_column("CONTROLLER")
    controllers.add_column("RUNS ON")
    for name, cls in CONTROLLERS.items():
        controllers.add_row(name, "the embedded cluster" if cls.embedded_only else "any cluster")
    Console(width=200).print(controllers)
    if broken:
        typer.echo(f"{len(broken)} plugin(s) cannot be used; profiles that do not name them work", err=True)


@config_app.command("validate")
def validate(file: Path = typer.Argument(..., help="KubeSchedulerConfiguration file.")) -> None:
    """Load a configuration and build every profile's plugins; report the first problem."""
    try:
        scheduler = check_configuration(file)
    except (ConfigError, PluginError) as err:
        refuse(str(err) if str(err).startswith(str(file)) else f"{file}: {err}")
    for name, framework in scheduler.profiles.items():
        points = {point: names for point, names in framework.points.items() if names}
        typer.echo(f"profile {name}:")
        typer.echo(yaml.safe_dump(points, sort_keys=False, default_flow_style=None).rstrip())
    typer.echo(f"{file}: valid")
