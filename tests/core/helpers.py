"""Shared pieces for the core tests: configuration documents, registries, call logs."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.core.framework.config import API_VERSION, KIND
from kubesched.core.framework.registry import Registry
from kubesched.drivers.simulation import Simulation

DEFAULT = "default-scheduler"


def config(*profiles: dict, **top: Any) -> dict:
    """A KubeSchedulerConfiguration document with ``profiles`` and top-level fields."""
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, **top}
    if profiles:
        doc["profiles"] = list(profiles)
    return doc


def from_yaml(text: str) -> dict:
    return yaml.safe_load(text)


def registry(*plugins: type) -> Registry:
    """The plugins installed (entry points) plus test plugin classes."""
    reg = Registry.discover()
    for plugin in plugins:
        reg.add(plugin)
    return reg


def simulation(cfg: dict | None = None, *plugins: type, **kwargs: Any) -> Simulation:
    return Simulation(config=cfg, registry=registry(*plugins), **kwargs)


def framework(sim: Simulation, name: str = DEFAULT):
    return sim.scheduler.profiles[name]


def plugin(sim: Simulation, name: str, profile: str = DEFAULT):
    """The instance of plugin ``name`` in ``profile``."""
    return sim.scheduler.profiles[profile].plugins[name]


def condition(pod, type_: str = "PodScheduled"):
    found = [c for c in pod.status.conditions if c.type == type_]
    return found[0] if found else None
