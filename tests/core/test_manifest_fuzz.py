"""Fuzzing manifests: every example object with one field replaced by a value
of another shape is either accepted or refused with InvalidManifest (file,
object, field named) - never a traceback, and the embedded API server then
accepts or refuses it with an ApiError.  Derandomised, so CI sees the same
cases every run."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.core.api.manifests import InvalidManifest, manifest_files, parse_document, read_documents
from kubesched.core.cluster.client import ApiError
from kubesched.core.cluster.memory import MemoryCluster

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [doc for example in sorted((ROOT / "examples").iterdir()) if example.is_dir()
             and example.name != "kubesched-fgd" for file in manifest_files(example) for doc in read_documents(file)]

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
                    st.sampled_from(["", "-1", "1e309", "0x10", "1Gi", "NaN", "Pod", "v1", "a" * 300]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in ``doc`` (keys and list indices)."""
    found = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += paths(value, prefix + (index,))
    return found


def replaced(doc: dict, path: tuple, value: Any) -> dict:
    out = copy.deepcopy(doc)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_manifest_with_any_field_of_the_wrong_shape_is_accepted_or_refused_cleanly(data):
    doc = data.draw(st.sampled_from(DOCUMENTS))
    path = data.draw(st.sampled_from(paths(doc)))
    mutated = replaced(doc, path, data.draw(values))
    try:
        obj = parse_document(mutated, "fuzz.yaml")
    except InvalidManifest as err:
        assert str(err).startswith("fuzz.yaml: ")
        return
    try:
        MemoryCluster().create(obj)
    except ApiError:
        pass
