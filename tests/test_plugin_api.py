"""The plugin API's face: an out-of-tree plugin and its tests need only ``kubesched`` (and
``kubesched.gpu`` for GPUs) and ``kubesched.testing``; examples/kubesched-fgd, our own, is held
to it, and so are the in-tree plugins (no import of the framework's or the scheduler's modules)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path
from typing import Any

import numpy as np

import kubesched
import kubesched.gpu
import kubesched.preemption
import kubesched.testing
from kubesched.core.framework.hookspecs import EXTENSION_POINTS, ExtensionPoints

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "kubesched-fgd"
#: The public modules of kubesched and the names each offers.
FACES = {module.__name__: set(module.__all__) for module in (kubesched, kubesched.gpu, kubesched.preemption)}
#: The modules a plugin package may import of kubesched.
FACE = {"kubesched", "kubesched.gpu", "kubesched.testing"}


def kubesched_imports(path: Path, module_name: str = "") -> list[tuple[int, str, tuple[str, ...]]]:
    """``(line, module, names)`` of every import of kubesched in ``path``, those inside functions
    included; relative imports are resolved against ``module_name`` (the file's dotted name) when given."""
    package = module_name.split(".")[:-1] if path.name != "__init__.py" else module_name.split(".")
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names if alias.name.split(".")[0] == "kubesched"]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level and module_name:
                module = ".".join(package[:len(package) - node.level + 1] + ([module] if module else []))
            elif node.level:
                continue
            if module.split(".")[0] == "kubesched":
                found.append((node.lineno, module, tuple(alias.name for alias in node.names)))
    return found


def test_the_fgd_example_imports_only_kubesched_kubesched_gpu_and_kubesched_testing():
    files = sorted((EXAMPLE / "src").rglob("*.py")) + sorted((EXAMPLE / "tests").rglob("*.py"))
    seen: set[str] = set()
    outside = []
    for path in files:
        for line, module, names in kubesched_imports(path):
            seen.add(module)
            if module not in FACE:
                outside.append(f"{path.relative_to(EXAMPLE)}:{line}: {module}")
            elif module in FACES:
                outside += [f"{path.relative_to(EXAMPLE)}:{line}: {module}.{name}" for name in names
                            if name not in FACES[module] and name not in ("gpu", "testing")]
    assert not outside, "the FGD example reaches past the plugin API:\n" + "\n".join(outside)
    assert seen == FACE  # both faces are in use, so the walk above saw the example's imports


def test_the_plugins_of_each_kind_in_tests_use_only_kubesched_and_kubesched_testing():
    path = ROOT / "tests" / "test_plugin_kinds.py"  # Filter+Score, PreEnqueue, PlacementGenerate, PlacementScore
    found = kubesched_imports(path)
    assert {module for _line, module, _names in found} == {"kubesched", "kubesched.testing"}
    assert all(name in FACES["kubesched"] for _line, module, names in found if module == "kubesched" for name in names)


def test_in_tree_plugins_take_the_framework_from_the_faces_only():
    # lint-imports holds the same (pyproject's forbidden contract) but skips typing-only imports
    plugins = ROOT / "src" / "plugins"
    reaching = []
    for path in sorted(plugins.rglob("*.py")):
        if path == plugins / "__init__.py":
            continue  # the default profile: configuration, not a plugin
        dotted = "kubesched." + ".".join(path.relative_to(ROOT / "src").with_suffix("").parts)
        for line, module, names in kubesched_imports(path, dotted.removesuffix(".__init__")):
            if module.startswith(("kubesched.core.framework", "kubesched.core.scheduler")):
                reaching.append(f"{path.relative_to(ROOT)}:{line}: {module}")
            elif module in FACES:
                reaching += [f"{path.relative_to(ROOT)}:{line}: {module}.{name}" for name in names
                             if name not in FACES[module]]
    assert not reaching, "in-tree plugins reach past the plugin API:\n" + "\n".join(reaching)


def test_every_type_a_hook_signature_names_is_in_the_plugin_api():
    """Each hookspec's annotations resolve with nothing but kubesched's names (and numpy's, typing's Any)."""
    names = {name: getattr(kubesched, name) for name in kubesched.__all__} | {"np": np, "Any": Any}
    hooks = {name: hook for name, hook in vars(ExtensionPoints).items() if callable(hook) and not name.startswith("_")}
    # + events_to_register and sign_pod, which are not configured points
    assert len(hooks) == sum(len(points) for points in EXTENSION_POINTS.values()) + 2
    unresolved = {}
    for name, hook in hooks.items():
        try:
            typing.get_type_hints(hook, globalns=names)
        except NameError as err:
            unresolved[name] = str(err)
    assert not unresolved, f"hook signatures name types the plugin API lacks: {unresolved}"


def test_the_gpu_toolkit_is_its_own_module_not_the_plugin_api():
    assert FACES["kubesched.gpu"] >= {"NodeGpus", "PodShape", "node_fragmentation", "GPU_DRIVER"}
    assert not FACES["kubesched"] & FACES["kubesched.gpu"]


def test_every_name_the_faces_list_is_there():
    for module in (kubesched, kubesched.gpu, kubesched.preemption, kubesched.testing):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ lists missing names: {missing}"
