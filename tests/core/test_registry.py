"""Plugins are found through the entry-point group ``kubesched.plugins``, built-in or not."""

from __future__ import annotations

import sys
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from kubesched import hookimpl, to_manifest
from kubesched.cli import app
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import (
    ENTRY_POINT_GROUP,
    PluginError,
    Registry,
    build_args,
    extension_points,
    implemented_hooks,
)
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

BUILT_IN = {
    "PrioritySort", "SchedulingGates", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
    "NodePorts", "NodeResourcesFit", "NodeResourcesBalancedAllocation", "DefaultBinder",
}

PLUGIN_MODULE = '''
from kubesched import hookimpl, Status


class MyPlugin:
    """Keeps pods off nodes labelled ``avoid``; prefers nodes in the zone named by its args."""

    name = "MyPlugin"

    def __init__(self, args, handle):
        self.zone = args["zone"]
        self.avoid = args.get("avoidLabel", "avoid")
        self.filtered = []

    @hookimpl
    def filter(self, state, pod, node_info):
        self.filtered.append(node_info.name)
        if node_info.node.metadata.labels.get(self.avoid) == "true":
            return Status.unschedulable("node(s) are avoided by MyPlugin")
        return None

    @hookimpl
    def score(self, state, pod, node_info):
        return 100 if node_info.node.metadata.labels.get("zone") == self.zone else 0
'''


def installed(tmp_path, monkeypatch, dist: str, entry: str, module: str = "", source: str = "") -> None:
    """A distribution ``dist`` in ``tmp_path`` (on sys.path) announcing ``entry``
    (``Name = module:Class``) in the entry-point group; ``source`` is ``module``'s code."""
    if module:
        (tmp_path / f"{module}.py").write_text(source)
        monkeypatch.delitem(sys.modules, module, raising=False)
    info = tmp_path / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """A tiny installed distribution ``my-plugin`` announcing MyPlugin in the entry-point group."""
    (tmp_path / "mymod.py").write_text(PLUGIN_MODULE)
    info = tmp_path / "my_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nMyPlugin = mymod:MyPlugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mymod", raising=False)
    yield tmp_path
    sys.modules.pop("mymod", None)


def test_discover_finds_the_built_in_plugins():
    registry = Registry.discover()
    assert BUILT_IN <= set(registry.names())
    assert registry.origin["NodeResourcesFit"] == "kubesched"
    assert "NodeName" in registry and "Nope" not in registry
    assert registry.get("Nope") is None
    assert extension_points(registry.get("NodeResourcesFit")) == ["preFilter", "filter", "preScore", "score", "placementScore"]
    assert extension_points(registry.get("DefaultBinder")) == ["bind"]


def test_discover_finds_a_third_party_plugin(third_party):
    registry = Registry.discover()
    assert "MyPlugin" in registry.names()
    assert registry.origin["MyPlugin"] == "my-plugin"
    assert extension_points(registry.get("MyPlugin")) == ["filter", "score"]
    assert BUILT_IN <= set(registry.names())


def test_a_third_party_plugin_enabled_in_a_profile_changes_placement(third_party):
    profile = third_party / "scheduler.yaml"
    profile.write_text(textwrap.dedent("""\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
        - schedulerName: default-scheduler
          plugins:
            multiPoint:
              enabled:
              - name: MyPlugin
                weight: 10
          pluginConfig:
          - name: MyPlugin
            args:
              zone: b
              avoidLabel: draining
        """))
    objects = [
        node("big-a", cpu="64", memory="256Gi", labels={"zone": "a"}),
        node("huge-b", cpu="128", memory="512Gi", labels={"zone": "b", "draining": "true"}),
        node("small-b", cpu="8", memory="16Gi", labels={"zone": "b"}),
        pod("web", cpu="1", memory="1Gi"),
    ]

    # without the plugin the roomiest node wins
    plain = Simulation()
    plain.create(objects)
    plain.run()
    assert plain.pod("web").spec.node_name == "huge-b"

    sim = Simulation(config=str(profile))  # the registry comes from the entry points
    fw = sim.scheduler.profiles["default-scheduler"]
    assert fw.points["filter"][-1] == "MyPlugin" and fw.points["score"][-1] == "MyPlugin"
    assert fw.score_weights["MyPlugin"] == 10
    sim.create(objects)
    sim.run()
    assert sim.pod("web").spec.node_name == "small-b"
    assert sorted(fw.plugins["MyPlugin"].filtered) == ["big-a", "huge-b", "small-b"]


def test_a_third_party_plugin_that_fails_to_import(tmp_path, monkeypatch):
    installed(tmp_path, monkeypatch, "broken", "Broken = no_such_module_here:Broken")
    registry = Registry.discover()  # found, not imported
    with pytest.raises(PluginError, match=r"entry point Broken = no_such_module_here:Broken: cannot load: "):
        registry.get("Broken")


def test_entry_point_name_must_match_the_class_name(tmp_path, monkeypatch):
    installed(tmp_path, monkeypatch, "named", "Wanted = namedmod:Other", "namedmod",
              "class Other:\n    name = 'Other'\n    def __init__(self, args, handle): pass\n")
    registry = Registry.discover()
    with pytest.raises(PluginError, match="plugin Wanted: its class says name = 'Other'"):
        registry.get("Wanted")
    assert registry.broken()["Wanted"] == "plugin Wanted: its class says name = 'Other'"
    sys.modules.pop("namedmod", None)


class Alpha:
    name = "Alpha"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def reserve(self, state, pod, node_name):
        return None

    @hookimpl
    def unreserve(self, state, pod, node_name):
        pass


def test_add_registers_a_class_directly():
    registry = Registry([Alpha])
    assert registry.names() == ["Alpha"]
    assert registry.get("Alpha") is Alpha
    registry.add(Alpha)  # the same class again is harmless
    assert implemented_hooks(Alpha) == {"reserve", "unreserve"}
    assert extension_points(Alpha) == ["reserve"]


def test_add_refuses_duplicates_and_non_classes():
    registry = Registry([Alpha])

    class Impostor:
        name = "Alpha"

    with pytest.raises(PluginError, match="plugin Alpha is registered twice"):
        registry.add(Impostor)
    with pytest.raises(PluginError, match="expected a class"):
        registry.add(Alpha(None, None), name="Instance")
    with pytest.raises(PluginError, match="its class says name = 'Alpha'"):
        registry.add(Alpha, name="Beta")


def test_build_args_without_an_args_class_passes_raw_args():
    assert build_args(Alpha, {"a": [1, 2]}) == {"a": [1, 2]}
    assert build_args(Alpha, None) == {}


def test_a_broken_plugin_package_is_reported_and_not_fatal_unless_a_profile_names_it(tmp_path, monkeypatch):
    installed(tmp_path, monkeypatch, "broken_plugin", "Broken = brokenmod:Broken", "brokenmod",
              "raise ImportError('this package is broken')\n")
    registry = Registry.discover()
    assert "Broken" in registry.names()
    # the default profile does not name it: scheduling works
    sim = Simulation(registry=registry)
    sim.create([node("n1"), pod("web", cpu="1")])
    sim.run()
    assert sim.pod("web").spec.node_name == "n1"
    assert registry.broken() == {"Broken": "entry point Broken = brokenmod:Broken: cannot load: this package is broken"}
    assert "Broken" not in dict(registry.items())
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"filter": {"enabled": [{"name": "Broken"}]}}}]}
    with pytest.raises(ConfigError, match="plugin 'Broken': entry point Broken = brokenmod:Broken: cannot load"):
        Simulation(config, registry=registry)
    listed = CliRunner().invoke(app, ["plugins"])
    assert listed.exit_code == 0 and "NodeResourcesFit" in listed.output
    assert "cannot be used: entry point Broken" in listed.output


ZONED_MODULE = '''
from typing import ClassVar

from attrs import frozen

from kubesched import MAX_NODE_SCORE, hookimpl


@frozen
class Preference:
    zone: str = ""
    weight: int = 1


@frozen
class ZonedArgs:
    preferred: tuple[Preference, ...] = ()


@frozen
class LenientArgs:
    STRICT: ClassVar[bool] = False
    zone: str = ""


class Zoned:
    name = "Zoned"
    args_class = ZonedArgs

    def __init__(self, args, handle):
        self.preferred = {p.zone: p.weight for p in args.preferred}

    @hookimpl
    def score(self, state, pod, node_info):
        return MAX_NODE_SCORE if node_info.node.metadata.labels.get("zone") in self.preferred else 0


class Lenient(Zoned):
    name = "Lenient"
    args_class = LenientArgs

    def __init__(self, args, handle):
        self.preferred = {args.zone: 1}
'''


@pytest.mark.parametrize("plugin, args, refused", [
    ("Zoned", {"preferred": [{"zone": "b"}, {"zone": "c", "wieght": 2}]},
     "pluginConfig Zoned: args.preferred[1].wieght: unknown field"),
    ("Zoned", {"prefered": [{"zone": "b"}]}, "pluginConfig Zoned: args.prefered: unknown field"),
    ("Lenient", {"zone": "b", "colour": "blue"}, None),
], ids=["nested-misspelling", "misspelling", "lenient-args-class"])
def test_a_plugins_args_are_decoded_strictly_unless_its_args_class_says_otherwise(
        tmp_path, monkeypatch, plugin, args, refused):
    """kube-scheduler's strict decoding: an unknown pluginConfig field of a third-party plugin is refused
    in one line naming the plugin and the field path (exit 2, no traceback), unless its args class sets
    ``STRICT = False``."""
    installed(tmp_path, monkeypatch, "zoned", f"{plugin} = zonedmod:{plugin}", "zonedmod", ZONED_MODULE)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"score": {"enabled": [{"name": plugin, "weight": 5}]}},
                      "pluginConfig": [{"name": plugin, "args": args}]}]}))
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all([to_manifest(obj) for obj in (
        node("a", cpu="8", labels={"zone": "a"}), node("b", cpu="4", labels={"zone": "b"}), pod("web", cpu="1"))]))
    result = CliRunner().invoke(app, ["simulate", "-f", str(objects), "--config", str(config), "-o", "json"])
    sys.modules.pop("zonedmod", None)
    if refused:
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert result.output.strip() == f"{config}: profile 'default-scheduler': {refused}"
    else:
        assert result.exit_code == 0, result.output
        web = next(item for item in yaml.safe_load(result.output)["items"] if item["metadata"]["name"] == "web")
        assert web["spec"]["nodeName"] == "b"  # the plugin took its zone, the unknown field let through
