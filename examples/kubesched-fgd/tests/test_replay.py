"""A short replay of a converted trace with each policy (a few hundred pods)."""

from __future__ import annotations

import random

import pytest

from conftest import CONFIGS, POLICIES
from kubesched.testing import convert, replay


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """24 nodes of the trace's kinds and 300 pods of its usual shapes, converted at 130 % arrival."""
    rng = random.Random(7)
    base = tmp_path_factory.mktemp("openb")
    kinds = [(96000, 393216, 8, "G2"), (32000, 131072, 2, "T4"), (64000, 262144, 2, "P100"), (64000, 262144, 4, "V100M16")]
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"]
    nodes += [f"node-{i:02d},{','.join(str(v) for v in kinds[i % len(kinds)])}" for i in range(24)]
    shapes = [(3152, 1, 810), (11300, 1, 1000), (11908, 1, 470), (12500, 0, 0), (4000, 1, 320), (8000, 2, 1000)]
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    for i in range(300):
        cpu, count, milli = rng.choice(shapes)
        spec = "V100M16" if i % 40 == 0 and count else ""
        pods.append(f"pod-{i:03d},{cpu},{cpu * 2},{count},{milli},{spec}")
    (base / "nodes.csv").write_text("\n".join(nodes) + "\n")
    (base / "pods.csv").write_text("\n".join(pods) + "\n")
    convert(base / "nodes.csv", base / "pods.csv", base / "trace", seed=42, arrival=1.3)
    return base / "trace"


@pytest.mark.parametrize("policy", POLICIES)
def test_each_policy_replays_the_trace(trace, policy):
    result = replay(trace, CONFIGS / f"{policy}.yaml")
    assert result.bound + result.failed == result.pods > 100
    assert 60 < result.gpu_allocation_ratio <= 100
    assert result.curve[-1][0] >= 120
