"""The distribution: every sub-package of src/ is listed in pyproject.toml, and every
third-party module that src/ imports is a declared dependency."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

#: Import name -> distribution name, where they differ.
DISTRIBUTION_OF = {"yaml": "PyYAML", "re2": "google-re2", "celpy": "cel-python", "prometheus_client": "prometheus-client",
                   "json_merge_patch": "json-merge-patch", "yaml_rs": "yaml-rs"}


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0]
        for stop in "<>=![ ":
            name = name.split(stop)[0]
        names.add(name.strip().lower())
    return names


def test_every_subpackage_of_src_is_in_the_package_list():
    found = {
        ".".join(("kubesched", *init.parent.relative_to(SRC).parts))
        for init in SRC.rglob("__init__.py")
    }
    assert found == set(PYPROJECT["tool"]["setuptools"]["packages"])


def test_every_imported_third_party_module_is_declared():
    project = PYPROJECT["project"]
    declared = _requirement_names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= _requirement_names(extra)
    imported = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    # _typeshed: typeshed's typing-only stdlib helpers (under TYPE_CHECKING, never imported at run time)
    third_party = {name for name in imported
                   if name not in sys.stdlib_module_names and name not in ("kubesched", "_typeshed")}
    missing = {name for name in third_party if DISTRIBUTION_OF.get(name, name).lower() not in declared}
    assert not missing, f"imported but not declared in pyproject.toml: {sorted(missing)}"
