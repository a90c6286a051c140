"""The README's "Write your first plugin" walk-through works as written.

Its code blocks are taken from README.md (each names its file on its first
line), written to a directory and run: the plugin's tests with pytest (which
finds the ``simulate`` fixture through kubesched's pytest11 entry point), the
configuration with ``kubesched simulate`` on the example cluster, the entry
point as TOML.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from kubesched.core.framework.registry import Registry
from kubesched.drivers.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Write your first plugin"


def section_files() -> dict[str, str]:
    """``{name on the first line: code}`` for the section's fenced blocks that name a file."""
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    files = {}
    for block in re.findall(r"```[a-z]*\n(.*?)```", text[start:end], flags=re.S):
        first = block.splitlines()[0]
        if first.startswith("# "):
            files[first[2:].strip()] = block
    return files


def test_the_section_names_its_files():
    assert set(section_files()) == {"my_plugins.py", "test_my_plugins.py", "pyproject.toml of your package",
                                    "prefer-premium.yaml"}


def test_the_plugin_tests_pass_with_the_simulate_fixture(tmp_path):
    files = section_files()
    for name in ("my_plugins.py", "test_my_plugins.py"):
        (tmp_path / name).write_text(files[name])
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_plugins.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_entry_point_and_the_profile_work(tmp_path):
    files = section_files()
    entry_points = tomllib.loads(files["pyproject.toml of your package"])["project"]["entry-points"]
    assert entry_points["kubesched.plugins"] == {"PreferLabel": "my_plugins:PreferLabel"}
    (tmp_path / "my_plugins.py").write_text(files["my_plugins.py"])
    spec = importlib.util.spec_from_file_location("my_plugins", tmp_path / "my_plugins.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registry = Registry.discover()
    registry.add(module.PreferLabel)
    profile = yaml.safe_load(files["prefer-premium.yaml"])
    sim = Simulation.from_paths([ROOT / "examples/cluster"], config=profile, registry=registry)
    sim.run()
    framework = sim.scheduler.profiles["default-scheduler"]
    assert framework.score_weights["PreferLabel"] == 2
    assert sim.scheduler.stats.bound > 0 and sim.scheduler.stats.errors == 0
