"""Manifest YAML read in one tight pass gives exactly what PyYAML's safe loader gives, errors included."""

from __future__ import annotations

import datetime

import pytest
import yaml

from kubesched.core.api.manifests import InvalidManifest, load_objects, measure
from kubesched.core.api.yaml_documents import SAFE_LOADER, documents

CASES = {
    "plain": "a: 1\nb: [x, 'y', 2.5, true, null, ~]\nc: {d: e}\n",
    "yaml 1.1 scalars": "on: yes\nv: off\nn: 0x1F\no: 010\nt: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\ne: .inf\n",
    "quoted look-alikes": "a: '1'\nb: \"true\"\nc: 'null'\n",
    "integer and boolean keys": "1: a\ntrue: b\n",
    "alias shared": "base: &b {x: 1}\nfirst: *b\nsecond: *b\n",
    "merge key": "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
    "binary": "data: !!binary aGVsbG8=\n",
    "several documents": "a: 1\n---\n---\n- x\n- y\n---\nplain text\n",
    "empty": "",
    "duplicate keys": "a: 1\na: 2\n",
}


@pytest.mark.parametrize("text", CASES.values(), ids=list(CASES))
def test_documents_are_what_pyyaml_builds(text):
    built = [doc for doc, _ in documents(text)]
    assert built == list(yaml.load_all(text, Loader=SAFE_LOADER))


def test_shared_parts_and_non_string_keys_are_left_to_pyyaml_which_keeps_them_shared():
    (doc, plain), = documents(CASES["alias shared"])
    assert not plain and doc["first"] is doc["second"]
    assert [plain for _, plain in documents(CASES["integer and boolean keys"])] == [False]
    assert [plain for _, plain in documents(CASES["plain"])] == [True]
    (doc, _), = documents(CASES["yaml 1.1 scalars"])
    assert doc[True] is True and doc["v"] is False and doc["n"] == 31 and doc["o"] == 8
    assert isinstance(doc["t"], datetime.datetime)


@pytest.mark.parametrize("text", ["a: !custom 1\n", "a: [1, 2\n", "a: {b: c}}\n"])
def test_errors_are_pyyaml_s(text):
    with pytest.raises(yaml.YAMLError) as expected:
        list(yaml.load_all(text, Loader=SAFE_LOADER))
    with pytest.raises(yaml.YAMLError) as got:
        list(documents(text))
    assert str(got.value) == str(expected.value)


def test_an_alias_bomb_in_a_manifest_is_still_measured_and_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(10))}]" for i in range(1, 8)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nkind: Pod\n")
    with pytest.raises(InvalidManifest, match="expands to .* values through YAML aliases"):
        load_objects([bomb])
    (doc, plain), = documents(bomb.read_text())
    assert not plain and measure(doc)[0] > 10**7
