"""The Config diff page: two configurations as their effective profiles, and what each does to the placements.

A profile's effective form is what the framework built from it after
defaulting - upstream's default plugins merged with the file's
enabled/disabled lists, multiPoint expanded - read from the frameworks of a
:class:`~kubesched.core.scheduler.scheduler.Scheduler` made over an empty
cluster, as ``kubesched config validate`` does: the plugins per extension
point in the order they run, the Score weights, and every plugin's args
with their defaults filled in.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Iterable

import attrs

from kubesched.analysis.compare import profile_as_default
from kubesched.core.api.convert import unstructure
from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, decode, read_file_bytes
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.framework.config import ConfigError, KubeSchedulerConfiguration
from kubesched.core.framework.hookspecs import EXTENSION_POINTS
from kubesched.core.framework.registry import Registry, build_args, extension_points
from kubesched.core.scheduler.scheduler import Scheduler
from kubesched.drivers.harness import scheduler_configuration


def effective_profiles(config: KubeSchedulerConfiguration, registry: Registry) -> dict[str, dict[str, Any]]:
    """schedulerName -> ``{"points": {point: [(plugin, weight or None)]},
    "args": {plugin: args as in a file, defaults filled}}``.  Raises
    ``ConfigError``/``PluginError`` as building the scheduler does."""
    clock = FakeClock()
    scheduler = Scheduler(MemoryCluster(clock), config, registry, clock)
    by_name = {profile.scheduler_name: profile for profile in config.profiles}
    out = {}
    for name, framework in scheduler.profiles.items():
        profile = by_name.get(name)
        points = {}
        for point in EXTENSION_POINTS:
            plugins = framework.points.get(point) or []
            points[point] = [(p, framework.score_weights.get(p) if point == "score" else None) for p in plugins]
        args = {}
        for plugin in sorted({p for plugins in points.values() for p, _ in plugins}):
            cls = registry.get(plugin)
            if cls is None or getattr(cls, "args_class", None) is None:
                continue
            built = build_args(cls, profile.args_for(plugin) if profile is not None else None)
            args[plugin] = unstructure(built) if attrs.has(type(built)) else built
        out[name] = {"points": points, "args": args}
    return out


def offered_side(side: str, offered: Iterable[str]) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:PROFILE`` -> (path, profile or None) when FILE is one
    of the configuration files ``offered`` (as ``kubesched ui`` was given
    them: ``--config``, ``--compare``); nothing else is ever opened, and the
    refusal says nothing about the file system.  Raises ``ConfigError``."""
    offered = set(offered)
    if side in offered:
        return Path(side), None
    path, _, profile = side.rpartition(":")
    if path in offered and profile:
        return Path(path), profile
    raise ConfigError(f"B: {side!r} is not a configuration this UI was given (kubesched ui --config FILE or "
                      f"--compare FILE; FILE:PROFILE for one profile)")


def other_configuration(side: str, offered: Iterable[str]) -> tuple[KubeSchedulerConfiguration, str]:
    """The configuration ``FILE`` or ``FILE:PROFILE`` (that profile alone, as
    the default scheduler: ``kubesched compare``'s sides), loaded, and its
    text; FILE must be one of ``offered`` (:func:`offered_side`).  Raises
    ``ConfigError`` naming the file."""
    path, profile = offered_side(side, offered)
    with tempfile.TemporaryDirectory() as scratch:
        chosen = profile_as_default(path, profile, Path(scratch))
        config = scheduler_configuration(chosen)
        try:
            return config, decode(read_file_bytes(chosen, MAX_CONFIG_BYTES), str(path))
        except InvalidManifest as err:
            raise ConfigError(str(err)) from None


def side_by_side(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the two :func:`effective_profiles`: per profile and extension
    point (every one the hookspecs define, in their order; then per plugin's args), A's and B's value and whether they differ."""
    rows = []
    for profile in sorted(set(a) | set(b)):
        pa, pb = a.get(profile), b.get(profile)
        for point in EXTENSION_POINTS:
            va = _plugins_text(pa["points"].get(point, [])) if pa else "(no such profile)"
            vb = _plugins_text(pb["points"].get(point, [])) if pb else "(no such profile)"
            rows.append({"profile": profile, "what": point, "a": va, "b": vb, "differs": va != vb})
        for plugin in sorted(set(pa["args"] if pa else {}) | set(pb["args"] if pb else {})):
            va = _args_text((pa or {}).get("args", {}).get(plugin))
            vb = _args_text((pb or {}).get("args", {}).get(plugin))
            rows.append({"profile": profile, "what": f"{plugin} args", "a": va, "b": vb, "differs": va != vb})
    return rows


def plugin_catalogue(registry: Registry) -> list[tuple[str, str, str]]:
    """(plugin, extension points, distribution) of every plugin announced
    through ``kubesched.plugins``, for the configuration editor."""
    return [(name, ", ".join(extension_points(cls)), registry.origin.get(name, "")) for name, cls in registry.items()]


def _plugins_text(plugins: list[tuple[str, int | None]]) -> str:
    return ", ".join(f"{p} ×{w}" if w is not None else p for p, w in plugins) or "-"


def _args_text(args: Any) -> str:
    if args is None:
        return "-"
    return ", ".join(f"{k}: {v}" for k, v in args.items()) if isinstance(args, dict) else str(args)
