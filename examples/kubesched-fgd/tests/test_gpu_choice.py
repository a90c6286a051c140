"""Which GPU a pod that shares one gets: the policy chooses, DynamicResources allocates it.

The node has GPU 0 free and 600m of GPU 1 in use; the pod asks for 300m.  The
paper's policies take the fullest GPU that fits (GPU 1); FGD the GPU whose use
fragments least (GPU 1 too: 100 left instead of 400 that no typical half-GPU
pod could use); without a policy, DRA takes the first GPU that fits (GPU 0).
"""

from __future__ import annotations

import pytest

from conftest import HALF, used
from kubesched.testing import config, gpu_class, gpu_node, gpu_pod


def chosen_gpu(simulate, score: dict | None, args: dict | None = None, seed: int = 0) -> str:
    sim = simulate(gpu_class(), *gpu_node("n1"), used("n1", 1, 600), *gpu_pod("new", milli=300),
                   config=config(score=score, args=args) if score else None, seed=seed)
    assert sim.placements() == {"default/new": "n1"}
    (result,) = sim.get("ResourceClaim", "default/new-gpu").status.allocation.devices.results
    return result.device


@pytest.mark.parametrize("policy", ["BestFit", "Packing", "Clustering", "DotProd"])
def test_the_fullest_gpu_that_fits(simulate, policy):
    assert chosen_gpu(simulate, {policy: 1}) == "gpu-1"


def test_fgd_takes_the_gpu_that_fragments_least(simulate):
    assert chosen_gpu(simulate, {"FGD": 1}, {"FGD": {"typicalPods": HALF}}) == "gpu-1"


def test_random_takes_any_gpu_that_fits(simulate):
    assert {chosen_gpu(simulate, {"Random": 1}, seed=seed) for seed in range(12)} == {"gpu-0", "gpu-1"}


def test_without_a_policy_the_first_gpu_that_fits(simulate):
    assert chosen_gpu(simulate, None) == "gpu-0"


def test_whole_gpus_are_the_free_ones_with_the_lowest_index(simulate):
    sim = simulate(gpu_class(), *gpu_node("n1", gpus=4), used("n1", 0, 300), *gpu_pod("two", count=2),
                   config=config(score={"FGD": 1}, args={"FGD": {"typicalPods": HALF}}))
    results = sim.get("ResourceClaim", "default/two-gpu").status.allocation.devices.results
    assert [r.device for r in results] == ["gpu-1", "gpu-2"]
