"""Manifest YAML read in one tight pass (or by yaml-rs) gives exactly what PyYAML's safe loader gives, errors
included; a key set twice in a mapping is refused."""

from __future__ import annotations

import datetime
import io
import itertools
import math

import pytest
import yaml

from kubesched.core.api.manifests import InvalidManifest, load_objects, measure
from kubesched.core.api.yaml_documents import (
    SAFE_DUMPER,
    SAFE_LOADER,
    DuplicateKey,
    documents,
    dump_documents,
    manifest_documents,
)

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
    "comment only, then documents": "# c\n---\na: 1\n---\n~\n---\n",
    "manifest": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web}}\nspec:\n  containers:\n"
                "  - {name: c, image: 'registry:5000/x:1.2', resources: {requests: {cpu: 100m, memory: 1e3}}}\n",
    "block scalars and flows over lines": "a: |\n  x\nb: >-\n\nc: [1,\n  2]\nd: \"\\t\"\n",
}


@pytest.mark.parametrize("text", CASES.values(), ids=list(CASES))
def test_documents_are_what_pyyaml_builds(text):
    expected = list(yaml.load_all(text, Loader=SAFE_LOADER))
    assert [doc for doc, _ in documents(text)] == expected
    assert [doc for doc, _, _ in manifest_documents(text)] == expected


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _read(read, text):
    try:
        return "built", [item[0] for item in read(text)]
    except Exception as err:  # noqa: BLE001 - PyYAML raises ValueError for some ints ("0x_")
        return "refused", str(err)


def test_plain_scalars_where_yaml_1_1_and_1_2_differ_read_as_pyyaml_reads_them():
    """Every plain scalar of up to two of the characters that make YAML 1.1 (PyYAML, Kubernetes) and YAML 1.2
    (yaml-rs) disagree - numbers, booleans, indicators - as a value, a key, a list item and in flow collections:
    the manifest reader gives PyYAML's objects or PyYAML's error."""
    contexts = ("k: {}\n", "- {}\n", "{}: v\n", "k: [{}]\n", "k: {{a: {}}}\n", "---\n{}\n")
    differing = []
    for size in (1, 2):
        for token in map("".join, itertools.product("0_9.e-+:x|?[}oN=", repeat=size)):
            for text in (context.format(token) for context in contexts):
                want, got = _read(documents, text), _read(manifest_documents, text)
                if want[0] != got[0] or not (_same(want[1], got[1]) if want[0] == "built" else want == got):
                    differing.append(text)
    assert differing == []
    assert _read(manifest_documents, "a: 0777\nb: yes\nc: 1:20\nd: 1e3\ne: 0o17\n") == (
        "built", [{"a": 511, "b": True, "c": 80, "d": "1e3", "e": "0o17"}])


@pytest.mark.parametrize("text, message", [
    ("a: 1\na: 2\n", 'line 2: mapping key "a" already defined at line 1'),
    ("a: {b: 1, c: 2, b: 3}\n", 'line 1: mapping key "b" already defined at line 1'),
    ("x: &x 1\ny:\n  p: *x\n  p: 2\n", 'line 4: mapping key "p" already defined at line 3'),
    ("a: 1\n---\nb: 1\nc:\n  d: 1\n  d: 1\n", 'line 6: mapping key "d" already defined at line 5'),
])
def test_a_key_set_twice_is_refused_with_its_lines(text, message):
    for read in (documents, manifest_documents):
        with pytest.raises(DuplicateKey) as refused:
            list(read(text))
        assert str(refused.value) == message


def test_a_manifest_setting_a_field_twice_is_refused_naming_the_file_and_the_lines(tmp_path):
    pods = tmp_path / "pods.yaml"
    pods.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\n"
                    "metadata:\n  name: b\n  name: c\n")
    with pytest.raises(InvalidManifest) as refused:
        load_objects([pods])
    assert str(refused.value) == f'{pods}: cannot parse: line 9: mapping key "name" already defined at line 8'


def test_shared_parts_and_non_string_keys_are_left_to_pyyaml_which_keeps_them_shared():
    (doc, plain), = documents(CASES["alias shared"])
    assert not plain and doc["first"] is doc["second"]
    assert [plain for _, plain in documents(CASES["integer and boolean keys"])] == [False]
    assert [plain for _, plain in documents(CASES["plain"])] == [True]
    assert [(plain, chars > 0) for _, plain, chars in manifest_documents(CASES["plain"])] == [(True, True)]
    assert [characters for _, _, characters in manifest_documents(CASES["alias shared"])] == [0]  # PyYAML's
    (doc, _), = documents(CASES["yaml 1.1 scalars"])
    assert doc[True] is True and doc["v"] is False and doc["n"] == 31 and doc["o"] == 8
    assert isinstance(doc["t"], datetime.datetime)


@pytest.mark.parametrize("text", ["a: !custom 1\n", "a: [1, 2\n", "a: {b: c}}\n"])
def test_errors_are_pyyaml_s(text):
    with pytest.raises(yaml.YAMLError) as expected:
        list(yaml.load_all(text, Loader=SAFE_LOADER))
    for read in (documents, manifest_documents):
        with pytest.raises(yaml.YAMLError) as got:
            list(read(text))
        assert str(got.value) == str(expected.value)


def test_an_error_in_a_later_document_names_the_line_of_the_whole_file():
    text = "a: 1\n---\nb: 2\n---\nc: [1, 2\n"
    with pytest.raises(yaml.YAMLError) as expected:
        list(yaml.load_all(text, Loader=SAFE_LOADER))
    with pytest.raises(yaml.YAMLError) as got:
        list(manifest_documents(text))
    assert str(got.value) == str(expected.value) and "line 5" in str(got.value)


def test_an_alias_bomb_in_a_manifest_is_still_measured_and_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(10))}]" for i in range(1, 8)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nkind: Pod\n")
    with pytest.raises(InvalidManifest, match="expands to .* values through YAML aliases"):
        load_objects([bomb])
    (doc, plain), = documents(bomb.read_text())
    assert not plain and measure(doc)[0] > 10**7


def test_documents_are_written_as_pyyaml_writes_them():
    """Plain documents go to the C emitter as events, the others through PyYAML's representer: the text is
    PyYAML's either way, byte for byte (quoted look-alikes, multi-line and non-ASCII strings, an anchor)."""
    shared = {"x": 1}
    docs = [{"a": [1, True, None, "yes", "0777", "x\ny", "", " lead", "it's", "é", 2**70], "b": {}, "c": []},
            {"kind": "Pod", "metadata": {"name": "p", "labels": {"app": "1.10"}}},
            [1, [2, {"b": "null"}]], "plain", 5, {"float": 1.5}, {"a": shared, "b": shared}]
    out = io.StringIO()
    dump_documents(docs, out)
    assert out.getvalue() == yaml.dump_all(docs, Dumper=SAFE_DUMPER, sort_keys=False, default_flow_style=False)
