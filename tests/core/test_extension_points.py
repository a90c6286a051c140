"""The extension points are listed once, in the hookspecs: every other list in the project is read from there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import attrs

from kubesched.core.framework.config import POINT_KEYS, Plugins
from kubesched.core.framework.hookspecs import EXTENSION_POINTS

SRC = Path(__file__).resolve().parents[2] / "src"
HOOKSPECS = SRC / "core/framework/hookspecs.py"
#: A literal naming this many extension points is a list of them (a chosen few, such as the points whose
#: queueing hints requeue pods, stay allowed).
LIST_SIZE = 6
NAMES = set(EXTENSION_POINTS) | set(POINT_KEYS)


def _own_lists(source: str) -> list[int]:
    """Lines of the literals (list, tuple, set, dict keys) in Python ``source`` naming LIST_SIZE or more
    extension points (config keys or Plugins fields)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(
            node, (ast.List, ast.Tuple, ast.Set)) else []
        names = {item.value for item in items if isinstance(item, ast.Constant) and item.value in NAMES}
        if len(names) >= LIST_SIZE:
            found.append(node.lineno)
    return found


def test_the_detector_finds_a_list_like_the_one_the_config_diff_page_kept():
    kept = ('POINTS = ["preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",\n'
            '          "reserve", "permit", "preBind", "bind", "postBind"]\n')
    assert _own_lists(kept) == [1]
    assert _own_lists('ENQUEUE_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")') == []


def test_no_module_or_page_lists_the_extension_points_but_the_hookspecs():
    offenders = [f"{path.relative_to(SRC)}:{line}" for path in sorted(SRC.rglob("*.py")) if path != HOOKSPECS
                 for line in _own_lists(path.read_text())]
    for page in sorted([*SRC.rglob("*.html"), *SRC.rglob("*.js")]):
        if "vendor" not in page.parts and len(set(re.findall(r"\w+", page.read_text())) & NAMES) >= LIST_SIZE:
            offenders.append(str(page.relative_to(SRC)))
    assert offenders == []


def test_the_configurations_plugin_sets_are_the_hookspecs_points():
    assert list(POINT_KEYS.values()) == list(EXTENSION_POINTS)
    assert [f.name for f in attrs.fields(Plugins)] == [*POINT_KEYS, "multi_point"]
