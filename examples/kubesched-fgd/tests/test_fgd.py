"""FGD's typical pods (args or ConfigMap), its cache, and what it does with CPU-only pods."""

from __future__ import annotations

from conftest import HALF, used
from kubesched.testing import config, gpu_class, gpu_node, gpu_pod, node_scores

FGD = {"FGD": 1}


def test_typical_pods_come_from_the_trace_configmap(simulate, half_gpus):
    sim = simulate(gpu_class(), half_gpus, *gpu_node("free"), *gpu_node("shared"), used("shared", 0, 600),
                   *gpu_pod("new", milli=300), config=config(score=FGD))
    assert sim.placements() == {"default/new": "shared"}


def test_without_typical_pods_the_pod_fails_with_the_reason(simulate):
    sim = simulate(gpu_class(), *gpu_node("n1"), *gpu_pod("new", milli=300), config=config(score=FGD))
    (condition,) = [c for c in sim.pod("new").status.conditions if c.type == "PodScheduled"]
    assert condition.reason == "SchedulerError"
    assert "FGD: ConfigMap default/kubesched-trace not found: give args.typicalPods or args.typicalPodsConfigMap" \
        in condition.message


def test_cpu_pods_go_where_their_cpu_fragments_no_gpu(simulate):
    # "big" has cores to spare; on "small" 30 cores would leave 2, too few for a typical pod's 4
    typical = [{"milliCPU": 4000, "gpuCount": 1, "milliGPU": 1000, "weight": 1.0}]
    sim = simulate(gpu_class(), *gpu_node("small", cores=32), *gpu_node("big", cores=96),
                   config=config(score=FGD, args={"FGD": {"typicalPods": typical}}))
    (pod,) = sim.create(gpu_pod("cpu-only", count=0, cores=30))
    scores = {node: s["FGD"] for node, s in node_scores(sim, pod).items()}
    # small: 2000 milli-GPU idle become fragmented -> sigmoid(-2) x 100 = 11; big: no change -> 50
    assert scores == {"small": 11, "big": 50}


def test_scores_are_computed_once_per_node_state_and_again_only_for_nodes_that_changed(simulate):
    sim = simulate(gpu_class(), *gpu_node("a"), *gpu_node("b"),
                   config=config(score=FGD, args={"FGD": {"typicalPods": HALF}}))
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["FGD"]
    calls = []
    original = plugin._score
    plugin._score = lambda shape, rows, left, cpu: calls.append(list(rows)) or original(shape, rows, left, cpu)
    for index in range(3):
        sim.create(gpu_pod(f"p{index}", milli=250))
        sim.run()
    # a and b start in one state: scored once for both; then only the node the last pod changed
    assert calls[0] == [0] and calls[1:] and all(len(rows) == 1 for rows in calls[1:])
    assert len(calls) <= 3
