"""Finding an object by the name a person typed (core/cluster/lookup): nearest names on a miss, unique
unqualified names accepted."""

from __future__ import annotations

import pytest

from kubesched.core.cluster.lookup import NoSuchName, resolve

PODS = ["ml/train-llm", "ml/train-resnet", "shop/web-1", "default/web-1", "shop/api-1"]


def test_a_qualified_name_is_itself_and_an_unqualified_one_prefers_the_default_namespace():
    assert resolve("pod", "shop/web-1", PODS) == "shop/web-1"
    assert resolve("pod", "web-1", PODS) == "default/web-1"
    assert resolve("pod", "api-1", PODS) == "shop/api-1"


def test_a_miss_names_the_nearest_names_best_first():
    with pytest.raises(NoSuchName) as err:
        resolve("pod", "ml/train-lm", PODS, where="in examples/cluster")
    assert err.value.message == "no pod ml/train-lm in examples/cluster; did you mean ml/train-llm?"


def test_a_name_in_several_namespaces_is_not_guessed():
    with pytest.raises(NoSuchName, match=r"^pod web-1 is in 2 namespaces"):
        resolve("pod", "web-1", ["a/web-1", "b/web-1"])


def test_cluster_scoped_names_have_no_namespace():
    assert resolve("node", "gpu-a1", ["gpu-a1", "gpu-b3"], namespaced=False) == "gpu-a1"
    with pytest.raises(NoSuchName, match=r"^no node gpu-b4; did you mean gpu-b3\?$"):
        resolve("node", "gpu-b4", ["gpu-a1", "gpu-b3"], namespaced=False)
    with pytest.raises(NoSuchName, match=r"^no namespace prod; there are default, ml$"):
        resolve("namespace", "prod", ["default", "ml"], namespaced=False)
