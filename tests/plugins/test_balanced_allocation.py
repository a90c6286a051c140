"""NodeResourcesBalancedAllocation: score = (1 - std of requested/allocatable fractions) x 100,
with the pod on the node and real requests; best-effort pods are skipped."""

from __future__ import annotations

import pytest

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import PodInfo
from kubesched.core.framework.registry import PluginError, build_args
from kubesched.core.framework.status import Code
from kubesched.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.testing import node, pod

from .helpers import config, info, make, on, score_all, simulate

GPU = "example.com/gpu"
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}


def balanced(p, infos, args=None) -> list[int]:
    plugin = make(NodeResourcesBalancedAllocation, args)
    state = CycleState()
    assert plugin.pre_score(state, p, infos) is None
    return score_all(plugin, state, p, infos)


def n48(name="n", **extra):
    return node(name, cpu="4", memory="8Gi", **extra)


def test_two_resources_use_half_the_difference():
    infos = [
        info(n48("even"), on(pod("e", cpu="1", memory="1Gi"), "even")),
        info(n48("empty")),
    ]
    assert balanced(pod("p", cpu="1", memory="3Gi"), infos) == [
        100,  # cpu 2/4 = 0.5, memory 4/8 = 0.5: std 0
        93,   # cpu 0.25, memory 3/8 = 0.375: std |0.25-0.375|/2 = 0.0625 -> 93.75
    ]


def test_scores_kept_for_a_pod_shape_follow_the_nodes_that_change():
    plugin = make(NodeResourcesBalancedAllocation)
    p = pod("p", cpu="1", memory="3Gi")
    infos = [info(n48("a")), info(n48("b")), info(n48("c"))]
    state = CycleState()
    assert plugin.pre_score(state, p, infos) is None
    assert score_all(plugin, state, p, infos) == [93, 93, 93]
    infos[1].add_pod(PodInfo(on(pod("e", cpu="1", memory="1Gi"), "b")))  # b: as "even" above
    assert score_all(plugin, state, p, infos) == [93, 100, 93]


def test_real_requests_not_the_non_zero_defaults():
    # the request-less pod on the node counts 0 here (LeastAllocated would count 100m/200Mi):
    # cpu 1/4 = 0.25, memory 2/8 = 0.25 -> 100 (with 100m/200Mi it would be 99)
    infos = [info(n48(), on(pod("e"), "n"))]
    assert balanced(pod("p", cpu="1", memory="2Gi"), infos) == [100]


def test_fraction_is_capped_at_one():
    # cpu 2/1 capped to 1, memory 4/8 = 0.5: std 0.25 -> 75 (uncapped it would be 25)
    assert balanced(pod("p", cpu="2", memory="4Gi"), [info(node("n", cpu="1", memory="8Gi"))]) == [75]


def test_pod_asking_only_cpu():
    # cpu 2/4 = 0.5, memory 0/8 = 0: std 0.25 -> 75
    assert balanced(pod("p", cpu="2"), [info(n48())]) == [75]


def test_three_resources_use_the_standard_deviation():
    infos = [info(n48("gpu", extra_resources={GPU: "4"})), info(n48("plain"))]
    p = pod("p", cpu="1", memory="2Gi", extra_resources={GPU: "3"})
    assert balanced(p, infos, WITH_GPU) == [
        76,   # 0.25, 0.25, 0.75: mean 5/12, variance (2*(1/6)^2 + (1/3)^2)/3 = 1/18, std 0.2357 -> 76.43
        100,  # no gpu on the node: left out; cpu 0.25, memory 0.25
    ]


def test_extended_resource_the_pod_does_not_ask_for_is_left_out():
    infos = [info(n48("gpu", extra_resources={GPU: "4"}), on(pod("e", extra_resources={GPU: "4"}), "gpu"))]
    # gpu would be 4/4 = 1 if counted; it is not: cpu 0.25, memory 0.375 -> 93
    assert balanced(pod("p", cpu="1", memory="3Gi"), infos, WITH_GPU) == [93]


def test_pre_score_skips_best_effort_pods():
    plugin = make(NodeResourcesBalancedAllocation)
    assert plugin.pre_score(CycleState(), pod("p"), []).code == Code.SKIP
    # a gpu request alone is best effort for the default cpu/memory resources ...
    assert plugin.pre_score(CycleState(), pod("p", extra_resources={GPU: "1"}), []).code == Code.SKIP
    # ... but not when gpu is one of the configured resources
    with_gpu = make(NodeResourcesBalancedAllocation, WITH_GPU)
    assert with_gpu.pre_score(CycleState(), pod("p", extra_resources={GPU: "1"}), []) is None
    assert plugin.pre_score(CycleState(), pod("p", memory="1Mi"), []) is None


def test_score_without_prescore_gives_best_effort_pods_zero():
    # a profile may disable PreScore for the plugin; upstream's Score then returns 0 for a best-effort pod
    plugin = make(NodeResourcesBalancedAllocation)
    infos = [info(n48("busy"), on(pod("e", cpu="3"), "busy")), info(n48("empty"))]
    assert score_all(plugin, CycleState(), pod("p"), infos, normalize=False) == [0, 0]
    # cpu 1/4 = 0.25, memory 0: std 0.125 -> 87 (87.5)
    assert score_all(plugin, CycleState(), pod("p", cpu="1"), infos[1:], normalize=False) == [87]


def test_batch_on_many_nodes():
    infos = [info(node(f"n{i}", cpu=str(i + 1), memory=f"{2 * i + 1}Gi"),
                  *[on(pod(f"e{j}", cpu="300m", memory="700Mi"), f"n{i}") for j in range(i)]) for i in range(7)]
    scores = balanced(pod("p", cpu="500m", memory="256Mi"), infos)
    assert all(0 <= s <= 100 for s in scores)


# --- args ----------------------------------------------------------------------------------


def test_args_defaults_and_upstream_defaulting():
    for raw in (None, {"resources": []}):
        args = build_args(NodeResourcesBalancedAllocation, raw)
        assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]
    args = build_args(NodeResourcesBalancedAllocation, {"resources": [{"name": "cpu", "weight": 0}, {"name": GPU}]})
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), (GPU, 1)]


@pytest.mark.parametrize("raw, message", [
    ({"resources": [{"name": "cpu"}, {"name": "memory", "weight": 2}]}, r"^args\.resources\[1\]\.weight: must be 1"),
    ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, r"^args\.resources\[1\]\.name: Duplicate value: \"cpu\""),
    ({"resources": [{"name": "cpu", "weight": 101}]}, r"^args\.resources\[0\]\.weight: "),
    ({"resource": []}, r"^args\.resource: unknown field"),
])
def test_wrong_args_are_refused_naming_the_field(raw, message):
    with pytest.raises(PluginError, match=message):
        build_args(NodeResourcesBalancedAllocation, raw)


# --- end to end ----------------------------------------------------------------------------


def _cluster():
    return [
        n48("cpu-heavy"), on(pod("c", cpu="3", memory="1Gi"), "cpu-heavy"),
        n48("mem-heavy"), on(pod("m", cpu="1", memory="6Gi"), "mem-heavy"),
        pod("p", cpu="1", memory="1Gi"),
    ]


def test_balanced_allocation_prefers_the_node_it_evens_out():
    # cpu-heavy after: cpu 1.0, memory 0.25 -> Fit (0 + 75)//2 = 37, Balanced 62: 99
    # mem-heavy after: cpu 0.5, memory 0.875 -> Fit (50 + 12)//2 = 31, Balanced 81: 112
    sim = simulate(_cluster())
    assert sim.placements()["default/p"] == "mem-heavy"


def test_without_balanced_allocation_the_freer_node_wins():
    cfg = config(plugins={"multiPoint": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}})
    sim = simulate(_cluster(), cfg)
    assert sim.placements()["default/p"] == "cpu-heavy"
