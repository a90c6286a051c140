"""The plugin API's face: an out-of-tree plugin and its tests need only ``kubesched`` and
``kubesched.testing``; examples/kubesched-fgd, our own, is held to it."""

from __future__ import annotations

import ast
from pathlib import Path

import kubesched
import kubesched.testing

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "kubesched-fgd"
#: The modules a plugin package may import of kubesched.
FACE = {"kubesched", "kubesched.testing"}


def kubesched_imports(path: Path) -> list[tuple[int, str, tuple[str, ...]]]:
    """``(line, module, names)`` of every import of kubesched in ``path``, those inside functions included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names if alias.name.split(".")[0] == "kubesched"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "kubesched":
            found.append((node.lineno, node.module or "", tuple(alias.name for alias in node.names)))
    return found


def test_the_fgd_example_imports_only_kubesched_and_kubesched_testing():
    files = sorted((EXAMPLE / "src").rglob("*.py")) + sorted((EXAMPLE / "tests").rglob("*.py"))
    seen: set[str] = set()
    outside = []
    for path in files:
        for line, module, names in kubesched_imports(path):
            seen.add(module)
            if module not in FACE:
                outside.append(f"{path.relative_to(EXAMPLE)}:{line}: {module}")
            elif module == "kubesched":
                outside += [f"{path.relative_to(EXAMPLE)}:{line}: kubesched.{name}" for name in names
                            if name not in kubesched.__all__ and name != "testing"]
    assert not outside, "the FGD example reaches past the plugin API:\n" + "\n".join(outside)
    assert seen == FACE  # both faces are in use, so the walk above saw the example's imports


def test_every_name_the_faces_list_is_there():
    for module in (kubesched, kubesched.testing):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert not missing, f"{module.__name__}.__all__ lists missing names: {missing}"
