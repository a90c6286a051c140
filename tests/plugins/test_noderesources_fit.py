"""NodeResourcesFit: the Filter (reasons, codes, init containers, sidecars, overhead,
extended and ignored resources), the three scoring strategies and the args."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import PodInfo
from kubesched.core.framework.registry import PluginError, build_args
from kubesched.core.framework.status import Code
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.testing import node, pod

from .helpers import (
    code,
    condition,
    config,
    failure,
    filter_all,
    info,
    make,
    on,
    reasons,
    run_pre_filter,
    score_all,
    simulate,
)

GPU = "example.com/gpu"
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def fit_filter(p, n, *existing, args=None):
    """(code, reasons) of Filter after PreFilter, for ``p`` on node ``n`` running ``existing``."""
    plugin = make(NodeResourcesFit, args)
    infos = [info(n, *[on(e, n.metadata.name) for e in existing])]
    state, result, status = run_pre_filter(plugin, p, infos)
    assert (result, status) == (None, None)
    (status,) = filter_all(plugin, state, p, infos)
    return code(status), reasons(status)


def container(name: str, cpu: str, restart_policy: str | None = None) -> dict:
    c = {"name": name, "resources": {"requests": {"cpu": cpu}}}
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


# --- Filter: cpu, memory, pods -------------------------------------------------------------


def test_fits_exactly():
    assert fit_filter(pod("p", cpu="1"), node("n", cpu="4"), pod("e", cpu="3")) == (Code.SUCCESS, ())


def test_insufficient_cpu_is_resolvable_when_the_node_could_hold_it():
    # 4000m - 3500m = 500m free < 1000m; 1000m <= 4000m allocatable
    assert fit_filter(pod("p", cpu="1"), node("n", cpu="4"), pod("e", cpu="3500m")) == (U, ("Insufficient cpu",))


def test_request_beyond_the_whole_allocatable_is_unresolvable():
    assert fit_filter(pod("p", cpu="5"), node("n", cpu="4")) == (UU, ("Insufficient cpu",))
    assert fit_filter(pod("p", memory="9Gi"), node("n", memory="8Gi")) == (UU, ("Insufficient memory",))


def test_cpu_and_memory_reasons_in_order():
    n = node("n", cpu="4", memory="8Gi")
    # free: 1 cpu, 1Gi; asks 2 cpu, 2Gi, both within the allocatable
    assert fit_filter(pod("p", cpu="2", memory="2Gi"), n, pod("e", cpu="3", memory="7Gi")) == (
        U, ("Insufficient cpu", "Insufficient memory"))
    # one reason unresolvable (9Gi > 8Gi) makes the whole status unresolvable
    assert fit_filter(pod("p", cpu="2", memory="9Gi"), n, pod("e", cpu="3")) == (
        UU, ("Insufficient cpu", "Insufficient memory"))


def test_too_many_pods():
    n = node("n", cpu="4", pods=2)
    full = [pod("e1"), pod("e2")]
    assert fit_filter(pod("p"), n, *full) == (U, ("Too many pods",))
    assert fit_filter(pod("p", cpu="1"), n, *full) == (U, ("Too many pods",))
    # "Too many pods" alone is resolvable; with a request beyond the allocatable it is not
    assert fit_filter(pod("p", cpu="5"), n, *full) == (UU, ("Too many pods", "Insufficient cpu"))
    assert fit_filter(pod("p"), n, pod("e1")) == (Code.SUCCESS, ())


def test_pod_without_requests_only_needs_a_pod_slot():
    # the node's cpu is fully requested, but a pod asking nothing still fits
    assert fit_filter(pod("p"), node("n", cpu="1"), pod("e", cpu="1")) == (Code.SUCCESS, ())


def test_ephemeral_storage():
    n = node("n", extra_resources={"ephemeral-storage": "10Gi"})
    assert fit_filter(pod("p", extra_resources={"ephemeral-storage": "4Gi"}), n,
                      pod("e", extra_resources={"ephemeral-storage": "7Gi"})) == (U, ("Insufficient ephemeral-storage",))
    assert fit_filter(pod("p", extra_resources={"ephemeral-storage": "20Gi"}), n) == (
        UU, ("Insufficient ephemeral-storage",))


def test_limits_stand_in_for_missing_requests():
    p = pod("p", containers=[{"name": "c", "resources": {"limits": {"cpu": "2"}}}])
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="2500m")) == (U, ("Insufficient cpu",))
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="2")) == (Code.SUCCESS, ())


# --- Filter: extended resources and ignored resources -------------------------------------


def test_extended_resource():
    n = node("n", extra_resources={GPU: "2"})
    used = pod("e", extra_resources={GPU: "1"})
    assert fit_filter(pod("p", extra_resources={GPU: "1"}), n, used) == (Code.SUCCESS, ())
    assert fit_filter(pod("p", extra_resources={GPU: "2"}), n, used) == (U, (f"Insufficient {GPU}",))
    assert fit_filter(pod("p", extra_resources={GPU: "3"}), n, used) == (UU, (f"Insufficient {GPU}",))
    # a node without the resource at all
    assert fit_filter(pod("p", extra_resources={GPU: "1"}), node("m")) == (UU, (f"Insufficient {GPU}",))


def test_reasons_order_native_first_then_extended_by_name():
    n = node("n", cpu="1", extra_resources={"ephemeral-storage": "1Gi"})
    p = pod("p", cpu="2", extra_resources={"ephemeral-storage": "2Gi", "zz.io/b": "1", GPU: "1"})
    assert fit_filter(p, n) == (UU, ("Insufficient cpu", "Insufficient ephemeral-storage",
                                     f"Insufficient {GPU}", "Insufficient zz.io/b"))


def test_ignored_resources_and_groups():
    n = node("n", cpu="4")
    p = pod("p", cpu="1", extra_resources={GPU: "1", "other.io/fpga": "1"})
    assert fit_filter(p, n) == (UU, (f"Insufficient {GPU}", "Insufficient other.io/fpga"))
    assert fit_filter(p, n, args={"ignoredResources": [GPU]}) == (UU, ("Insufficient other.io/fpga",))
    assert fit_filter(p, n, args={"ignoredResourceGroups": ["example.com"]}) == (UU, ("Insufficient other.io/fpga",))
    assert fit_filter(p, n, args={"ignoredResources": ["other.io/fpga"], "ignoredResourceGroups": ["example.com"]}) == (
        Code.SUCCESS, ())


def test_only_extended_resources_can_be_ignored():
    # cpu and hugepages are not extended resources: ignoring them has no effect
    n = node("n", cpu="1")
    assert fit_filter(pod("p", cpu="2"), n, args={"ignoredResources": ["cpu"]}) == (UU, ("Insufficient cpu",))
    huge = pod("p", extra_resources={"hugepages-2Mi": "4Mi"})
    assert fit_filter(huge, n, args={"ignoredResources": ["hugepages-2Mi"]}) == (UU, ("Insufficient hugepages-2Mi",))
    # a group matches the whole prefix before "/", not a part of it
    assert fit_filter(pod("p", extra_resources={GPU: "1"}), n, args={"ignoredResourceGroups": ["example"]}) == (
        UU, (f"Insufficient {GPU}",))


# --- Filter: init containers, sidecars, overhead -------------------------------------------


def test_init_container_needs_its_own_peak():
    # max(containers 1 cpu, init 3 cpu) = 3 cpu
    p = pod("p", cpu="1", initContainers=[container("init", "3")])
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="1500m")) == (U, ("Insufficient cpu",))  # 2.5 free
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="1")) == (Code.SUCCESS, ())               # 3 free


def test_sidecars_add_up_and_their_order_matters():
    # sidecar (1) then init (2): the init runs beside the sidecar, peak 1+2 = 3; running 1+1 = 2 -> 3
    sidecar_first = pod("a", cpu="1", initContainers=[container("side", "1", "Always"), container("init", "2")])
    # init (2) then sidecar (1): peak 2; running 1+1 = 2 -> 2
    init_first = pod("b", cpu="1", initContainers=[container("init", "2"), container("side", "1", "Always")])
    n, used = node("n", cpu="4"), pod("e", cpu="1500m")  # 2.5 free
    assert fit_filter(sidecar_first, n, used) == (U, ("Insufficient cpu",))
    assert fit_filter(init_first, n, used) == (Code.SUCCESS, ())


def test_sidecar_counts_with_the_app_containers():
    # app 2 + sidecar 1 = 3 > the init peak of 2 + 0
    p = pod("p", cpu="2", initContainers=[container("init", "2"), container("side", "1", "Always")])
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="1500m")) == (U, ("Insufficient cpu",))
    assert fit_filter(p, node("n", cpu="3")) == (Code.SUCCESS, ())


def test_overhead_is_added():
    # 1 cpu + 250m overhead = 1250m
    p = pod("p", cpu="1", overhead={"cpu": "250m"})
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="2800m")) == (U, ("Insufficient cpu",))  # 1200m free
    assert fit_filter(p, node("n", cpu="4"), pod("e", cpu="2750m")) == (Code.SUCCESS, ())           # 1250m free


def test_requests_of_existing_pods_include_their_init_containers_and_overhead():
    existing = pod("e", cpu="1", overhead={"cpu": "500m"}, initContainers=[container("init", "2")])
    # existing counts max(1, 2) + 0.5 = 2.5 cpu: 1.5 free
    assert fit_filter(pod("p", cpu="1500m"), node("n", cpu="4"), existing) == (Code.SUCCESS, ())
    assert fit_filter(pod("p", cpu="1600m"), node("n", cpu="4"), existing) == (U, ("Insufficient cpu",))


def test_filter_batch_agrees_on_a_mixed_cluster():
    plugin = make(NodeResourcesFit)
    p = pod("p", cpu="1", memory="1Gi", extra_resources={GPU: "1"})
    infos = [
        info(node("ok", extra_resources={GPU: "1"})),
        info(node("nogpu")),
        info(node("busy", cpu="2", extra_resources={GPU: "4"}), on(pod("e", cpu="1500m"), "busy")),
        info(node("full", pods=1, extra_resources={GPU: "4"}), on(pod("e2"), "full")),
        info(node("mem", memory="512Mi", extra_resources={GPU: "4"})),
    ]
    state, _, _ = run_pre_filter(plugin, p, infos)
    statuses = filter_all(plugin, state, p, infos)
    assert [reasons(s) for s in statuses] == [
        (), (f"Insufficient {GPU}",), ("Insufficient cpu",), ("Too many pods",), ("Insufficient memory",)]
    # the batch answer kept for pods of these requests follows the nodes that change: "ok" fills up, "busy" empties
    infos[0].add_pod(PodInfo(on(pod("e3", extra_resources={GPU: "1"}), "ok")))
    infos[2].remove_pod(infos[2].pods[0].pod)
    statuses = filter_all(plugin, state, p, infos)
    assert [reasons(s) for s in statuses] == [
        (f"Insufficient {GPU}",), (f"Insufficient {GPU}",), (), ("Too many pods",), ("Insufficient memory",)]


# --- Score ---------------------------------------------------------------------------------


def fit_scores(args, p, infos) -> list[int]:
    plugin = make(NodeResourcesFit, args)
    return score_all(plugin, CycleState(), p, infos)


def strategy(type_: str, resources=None, shape=None) -> dict:
    s: dict = {"type": type_}
    if resources:
        s["resources"] = [{"name": n, "weight": w} for n, w in resources]
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": v} for u, v in shape]}
    return {"scoringStrategy": s}


def n48(name="n", **extra):
    return node(name, cpu="4", memory="8Gi", **extra)


def test_least_allocated_default():
    infos = [
        info(n48("half"), on(pod("e", cpu="1", memory="2Gi"), "half")),
        info(n48("defaults"), on(pod("e"), "defaults")),
        info(n48("empty")),
    ]
    assert fit_scores(None, pod("p", cpu="1", memory="2Gi"), infos) == [
        50,  # cpu (4000-2000)*100/4000 = 50, memory (8-4)/8 = 50
        72,  # the request-less pod counts 100m/200Mi: cpu 2900*100//4000 = 72, memory 5944Mi*100//8192Mi = 72
        75,  # cpu 3000*100//4000 = 75, memory 6Gi*100//8Gi = 75
    ]


@pytest.mark.parametrize("args, before, after", [
    (None, [75, 75], [50, 75]),
    (strategy("MostAllocated"), [25, 25], [50, 25]),
    (strategy("RequestedToCapacityRatio", shape=[(0, 0), (100, 10)]), [25, 25], [50, 25]),
])
def test_scores_kept_for_a_pod_shape_follow_the_nodes_that_change(args, before, after):
    plugin = make(NodeResourcesFit, args)
    p = pod("p", cpu="1", memory="2Gi")
    infos = [info(n48("a")), info(n48("b"))]
    assert score_all(plugin, CycleState(), p, infos) == before  # the batch form agrees with Score on each node
    infos[0].add_pod(PodInfo(on(pod("e", cpu="1", memory="2Gi"), "a")))
    assert score_all(plugin, CycleState(), p, infos) == after


def test_least_allocated_counts_a_request_less_incoming_pod_as_100m_200mi():
    n = node("n", cpu="2", memory="4Gi")
    # cpu (2000-100)*100//2000 = 95, memory (4096-200)*100//4096 = 95
    assert fit_scores(None, pod("p"), [info(n)]) == [95]


def test_least_and_most_allocated_with_weights():
    infos = [info(n48(), on(pod("e", cpu="3", memory="1Gi"), "n"))]
    p = pod("p", cpu="500m", memory="1Gi")  # cpu 3500/4000, memory 2Gi/8Gi
    assert fit_scores(strategy("LeastAllocated"), p, infos) == [43]  # (12 + 75) // 2
    assert fit_scores(strategy("LeastAllocated", [("cpu", 3), ("memory", 1)]), p, infos) == [27]  # (12*3 + 75) // 4
    assert fit_scores(strategy("MostAllocated"), p, infos) == [56]  # (87 + 25) // 2
    assert fit_scores(strategy("MostAllocated", [("cpu", 3), ("memory", 1)]), p, infos) == [71]  # (87*3 + 25) // 4


def test_over_capacity_scores():
    # two request-less pods: cpu 200m of 100m (over), memory 400Mi of 1Gi
    infos = [info(node("tiny", cpu="100m", memory="1Gi"), on(pod("e"), "tiny"))]
    assert fit_scores(strategy("LeastAllocated"), pod("p"), infos) == [30]  # (0 + 624*100//1024=60) // 2
    assert fit_scores(strategy("MostAllocated"), pod("p"), infos) == [69]   # (100 + 400*100//1024=39) // 2


def test_extended_resource_scored_only_when_the_pod_asks_for_it():
    args = strategy("LeastAllocated", [("cpu", 1), (GPU, 2)])
    infos = [
        info(n48("gpu", extra_resources={GPU: "4"}), on(pod("e", cpu="1", extra_resources={GPU: "1"}), "gpu")),
        info(n48("plain"), on(pod("e", cpu="1"), "plain")),
    ]
    # gpu node: cpu 2000/4000 -> 50, gpu 3/4 -> 25: (50 + 25*2) // 3 = 33; plain node: no gpu, cpu only: 50
    assert fit_scores(args, pod("p", cpu="1", extra_resources={GPU: "2"}), infos) == [33, 50]
    # a pod without the gpu: cpu only everywhere
    assert fit_scores(args, pod("p", cpu="1"), infos) == [50, 50]
    # MostAllocated: (50 + 75*2) // 3 = 66
    assert fit_scores(strategy("MostAllocated", [("cpu", 1), (GPU, 2)]),
                      pod("p", cpu="1", extra_resources={GPU: "2"}), infos) == [66, 50]


LINEAR = [(0, 0), (100, 10)]


def test_requested_to_capacity_ratio_rounds_the_weighted_average():
    infos = [info(n48(), on(pod("e", cpu="1", memory="1Gi"), "n"))]
    p = pod("p", cpu="1", memory="1Gi")  # utilisation cpu 50, memory 25
    assert fit_scores(strategy("RequestedToCapacityRatio", shape=LINEAR), p, infos) == [38]  # round(37.5)
    assert fit_scores(strategy("RequestedToCapacityRatio", [("cpu", 2), ("memory", 1)], LINEAR), p, infos) == [
        42]  # round((50*2 + 25) / 3) = round(41.67)


def test_requested_to_capacity_ratio_broken_linear_shape():
    infos = [info(n48(), on(pod("e", cpu="1", memory="1Gi"), "n"))]
    p = pod("p", cpu="1", memory="1Gi")
    # shape x10: (0,100) (50,20) (100,0); cpu 50 -> 20; memory 25 -> 100 + (-80*25)/50 = 60; (20+60)/2 = 40
    assert fit_scores(strategy("RequestedToCapacityRatio", shape=[(0, 10), (50, 2), (100, 0)]), p, infos) == [40]


def test_requested_to_capacity_ratio_truncates_like_go_and_is_flat_outside():
    args = strategy("RequestedToCapacityRatio", [("cpu", 1)], [(0, 10), (30, 3)])
    infos = [info(node("four", cpu="4")), info(node("two", cpu="2"))]
    # four: utilisation 25 -> 100 + (30-100)*25/30 = 100 + trunc(-58.3) = 42; two: 50 is past the last point -> 30
    assert fit_scores(args, pod("p", cpu="1"), infos) == [42, 30]
    # below the first point: the first score
    assert fit_scores(strategy("RequestedToCapacityRatio", [("cpu", 1)], [(50, 5), (100, 0)]),
                      pod("p", cpu="1"), infos) == [50, 50]


def test_requested_to_capacity_ratio_leaves_zero_scores_out_of_the_average():
    # cpu utilisation 50 -> 50; memory explicitly 0 -> utilisation 0 -> score 0, which upstream drops
    # from the weighted average (only positive resource scores count): 50, not round(50/2) = 25
    infos = [info(n48())]
    p = pod("p", cpu="2", memory="0")
    assert fit_scores(strategy("RequestedToCapacityRatio", shape=LINEAR), p, infos) == [50]
    # every resource at 0: 0
    assert fit_scores(strategy("RequestedToCapacityRatio", shape=LINEAR), pod("p", cpu="0", memory="0"), infos) == [0]


def test_score_batch_on_many_nodes():
    # score_all checks batch == per node, in order and reversed
    infos = [info(node(f"n{i}", cpu=str(i + 1), memory=f"{i + 1}Gi"), *[on(pod(f"e{j}", cpu="500m"), f"n{i}")
                                                                       for j in range(i)]) for i in range(6)]
    for args in (None, strategy("MostAllocated"), strategy("RequestedToCapacityRatio", shape=[(0, 2), (60, 9), (100, 4)])):
        scores = fit_scores(args, pod("p", cpu="300m", memory="300Mi"), infos)
        assert all(0 <= s <= 100 for s in scores)


# --- args ----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, message", [
    ({"scoringStrategy": {"type": "Fewest"}},
     r"^args\.scoringStrategy\.type: Unsupported value: 'Fewest'"),
    ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}},
     r"^args\.scoringStrategy\.resources\[0\]\.weight: resource weight of cpu not in valid range"),
    ({"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "memory", "weight": -1}]}},
     r"^args\.scoringStrategy\.resources\[1\]\.weight: resource weight of memory not in valid range"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio: Required value"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio\.shape: at least one point must be specified"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio\.shape\[1\]\.utilization: values must be sorted in increasing order"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 60, "score": 1}, {"utilization": 40, "score": 2}]}}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio\.shape\[1\]\.utilization: values must be sorted"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 11}]}}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio\.shape\[0\]\.score: not in valid range \[0, 10\]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 101, "score": 1}]}}},
     r"^args\.scoringStrategy\.requestedToCapacityRatio\.shape\[0\]\.utilization: not in valid range \[0, 100\]"),
    ({"ignoredResourceGroups": ["example.com/gpu"]},
     r"^args\.ignoredResourceGroups\[0\]: resource group name can't contain '/'"),
    ({"ignoredResource": ["x"]}, r"^args\.ignoredResource: unknown field"),
    ({"scoringStrategy": {"typ": "MostAllocated"}}, r"^args\.scoringStrategy\.typ: unknown field"),
])
def test_wrong_args_are_refused_naming_the_field(raw, message):
    with pytest.raises(PluginError, match=message):
        build_args(NodeResourcesFit, raw)


def test_args_defaults():
    args = build_args(NodeResourcesFit, None)
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    assert args.ignored_resources == () and args.ignored_resource_groups == ()


def test_weight_zero_and_empty_resources_take_upstream_defaults():
    # kube-scheduler's v1 defaulting: a resource weight of 0 (or unset) becomes 1, and an empty
    # resources list becomes cpu and memory with weight 1
    args = build_args(NodeResourcesFit, {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}]}})
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    args = build_args(NodeResourcesFit, {"scoringStrategy": {"type": "MostAllocated", "resources": []}})
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    infos = [info(n48(), on(pod("e", cpu="3", memory="1Gi"), "n"))]
    assert fit_scores({"scoringStrategy": {"type": "MostAllocated", "resources": []}},
                      pod("p", cpu="500m", memory="1Gi"), infos) == [56]


def test_profile_with_wrong_args_does_not_start():
    with pytest.raises(ConfigError, match=r"NodeResourcesFit: args\.scoringStrategy\.type: Unsupported value"):
        Simulation(config({"NodeResourcesFit": {"scoringStrategy": {"type": "Fewest"}}}))


# --- end to end ----------------------------------------------------------------------------


def test_failed_scheduling_message_mixes_fit_reasons():
    sim = simulate([
        node("full", cpu="8", pods=1), on(pod("e"), "full"),
        node("small1", cpu="1"), node("small2", cpu="1", memory="1Gi"),
        pod("p", cpu="2", memory="2Gi"),
    ])
    assert sim.placements()["default/p"] == ""
    # only "full" could make room (its pod has the same priority, so no victim); the others are too small
    message = ("0/3 nodes are available: 1 Insufficient memory, 1 Too many pods, 2 Insufficient cpu. "
               "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
               "2 Preemption is not helpful for scheduling.")
    assert failure(sim) == message
    cond = condition(sim, "p")
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", message)


def test_least_allocated_spreads_and_most_allocated_packs():
    pods = [pod(f"p{i}", cpu="1", memory="1Gi") for i in range(2)]
    for seed in range(3):
        sim = simulate([node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"), *pods], seed=seed)
        assert sorted(sim.placements().values()) == ["a", "b"]
        packing = config({"NodeResourcesFit": strategy("MostAllocated")})
        sim = simulate([node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"), *pods], packing, seed=seed)
        assert len(set(sim.placements().values())) == 1


def test_extended_resource_end_to_end():
    sim = simulate([
        node("cpu-only", cpu="8"),
        node("gpu", cpu="8", extra_resources={GPU: "1"}),
        pod("train-1", cpu="1", extra_resources={GPU: "1"}),
        pod("train-2", cpu="1", extra_resources={GPU: "1"}, priority=-1),
    ])
    assert sim.placements() == {"default/train-1": "gpu", "default/train-2": ""}
    assert failure(sim) == (f"0/2 nodes are available: 2 Insufficient {GPU}. preemption: 0/2 nodes are available: "
                            "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")


def test_ignored_resource_group_end_to_end():
    cfg = config({"NodeResourcesFit": {"ignoredResourceGroups": ["example.com"]}})
    sim = simulate([node("n"), pod("p", cpu="1", extra_resources={GPU: "1"})], cfg)
    assert sim.placements() == {"default/p": "n"}


def test_sidecar_pod_end_to_end():
    p = pod("p", cpu="1", initContainers=[container("side", "1", "Always"), container("init", "2")])  # needs 3
    sim = simulate([node("two", cpu="2"), node("three", cpu="3"), p])
    assert sim.placements() == {"default/p": "three"}


def test_deleting_a_pod_frees_room():
    sim = simulate([node("n", cpu="2"), on(pod("big", cpu="2"), "n"), pod("p", cpu="1")])
    assert failure(sim) == "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    sim.cluster.delete("Pod", "big", "default")
    sim.run()
    assert sim.placements() == {"default/p": "n"}


def test_growing_a_node_releases_the_pod():
    sim = simulate([node("n", cpu="1"), pod("p", cpu="2")])
    assert sim.placements() == {"default/p": ""}
    n = sim.get("Node", "n")
    bigger = node("n", cpu="4")
    sim.cluster.update_status(attrs.evolve(n, status=bigger.status))
    sim.run()
    assert sim.placements() == {"default/p": "n"}


# upstream's fit_test.go tables: test_noderesources_fit_upstream.py


# --- PreScore ----------------------------------------------------------------------------------------------


def test_pre_score_computes_the_scoring_requests_once_and_score_agrees_without_it():
    """Upstream's PreScore (preScoreState): the pod's requests with the non-zero defaults, computed once; a
    profile that leaves PreScore out scores the same."""
    plugin = make(NodeResourcesFit)
    infos = [info(node("a", cpu="4", memory="8Gi"), on(pod("e", cpu="3"), "a")), info(node("b", cpu="4", memory="8Gi"))]
    p = pod("p", cpu="1", memory="1Gi")
    with_pre = CycleState()
    assert plugin.pre_score(with_pre, p, []) is None
    assert with_pre.get("PreScoreNodeResourcesFit") == {"cpu": 1000, "memory": 1024**3}
    assert score_all(plugin, with_pre, p, infos) == score_all(plugin, CycleState(), p, infos)


def test_a_profile_may_list_node_resources_fit_under_pre_score():
    cfg = config(plugins={"preScore": {"enabled": [{"name": "NodeResourcesFit"}]}})
    sim = simulate([node("a", cpu="4"), node("b", cpu="4"), pod("e", cpu="3", node_name="a"), pod("p", cpu="1")], cfg)
    assert "NodeResourcesFit" in sim.scheduler.profiles["default-scheduler"].points["preScore"]
    assert sim.pod("p").spec.node_name == "b"
