"""Each policy's scores on a small cluster, computed by hand from the paper's definitions.

Three nodes with two T4 each and 32 cores: ``free`` (both GPUs free), ``shared``
(600m of GPU 0 used by a sharing pod), ``whole`` (GPU 0 used whole).  The pod
asks for 300m of one GPU and 4 cores.
"""

from __future__ import annotations

import pytest
import yaml

from conftest import CONFIGS, HALF, POLICIES, used
from kubesched.testing import config, gpu_class, gpu_node, gpu_pod, node_scores


@pytest.fixture
def three_nodes(simulate):
    def run(policy: str, args: dict | None = None):
        sim = simulate(gpu_class(), *gpu_node("free"), *gpu_node("shared"), *gpu_node("whole"),
                       used("shared", 0, 600), used("whole", 0),
                       config=config(score={policy: 1}, args=args))
        (_, pod) = sim.create(gpu_pod("new", milli=300))
        return {node: scores[policy] for node, scores in node_scores(sim, pod).items()}
    return run


def test_bestfit(three_nodes):
    # (1 - 0.5 x (32000 - 4000) / 128000 - 0.5 x (GPU left - 300) / 8000) x 100 = 78, 82, 84; then min-max
    assert three_nodes("BestFit") == {"free": 0, "shared": 400 // 6, "whole": 100}


def test_packing(three_nodes):
    # free: every GPU free, 33 - 2; shared: the used GPU, 100 - 40 % free / 10; whole: opens a free GPU, 50 - 1
    assert three_nodes("Packing") == {"free": 31, "shared": 96, "whole": 49}


def test_clustering(three_nodes):
    # 25 x (8000 - GPU left) / 8000 = 18, 20, 21, plus 25 (no GPU pod), 75 (only sharing pods), 0 (other kinds)
    assert three_nodes("Clustering") == {"free": 43, "shared": 95, "whole": 21}


def test_dotprod(three_nodes):
    # 100 x (1 - (CPU left/128 cores x 4/128 + GPU left/8 GPUs x 0.3/8) / 2): 99.14, 99.28, 99.38
    assert three_nodes("DotProd") == {"free": 99, "shared": 99, "whole": 99}


def test_fgd(three_nodes):
    # a half GPU fits nowhere less than on "shared": 400 fragmented before, 100 after -> sigmoid(0.3) = 57
    assert three_nodes("FGD", args={"FGD": {"typicalPods": HALF}}) == {"free": 50, "shared": 57, "whole": 50}


def test_random(three_nodes):
    scores = three_nodes("Random")
    assert sorted(scores.values()) == [0, 0, 100]


@pytest.mark.parametrize("policy", POLICIES)
def test_each_config_scores_with_its_policy_alone(policy, simulate):
    body = yaml.safe_load((CONFIGS / f"{policy}.yaml").read_text())
    sim = simulate(gpu_class(), *gpu_node("n1"), config=body)
    framework = sim.scheduler.profiles["default-scheduler"]
    (name,) = framework.points["score"]
    assert name.lower() == policy and framework.score_weights[name] == 1000
    assert name in framework.points["preFilter"] and "DynamicResources" in framework.points["filter"]
