"""The FGD paper's fragmentation measure, on nodes small enough to count by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.core.gpu.fragmentation import PodShape, TypicalPod, Workload, node_fragmentation, typical_pods


def frag(typical, left, cpu_left, model="", models=()):
    workload = Workload(typical, models or [model])
    return float(node_fragmentation(workload, np.array([left]), np.array([cpu_left]),
                                    np.array([workload.model_code(model)]))[0])


HALF = TypicalPod(PodShape(1000, 1, 500), 1.0)


def test_gpus_too_small_for_the_pod_are_fragmented():
    # the pod fits (a GPU with 600 left): only the 300 left on the other GPU is fragmented
    assert frag([HALF], [600, 300], cpu_left=4000) == 300


def test_a_node_that_cannot_host_the_pod_is_all_fragmented():
    assert frag([HALF], [300, 200], cpu_left=4000) == 500            # no GPU with 500 left
    assert frag([HALF], [1000, 1000], cpu_left=500) == 2000          # not enough CPU
    two = TypicalPod(PodShape(1000, 2, 1000), 1.0)
    assert frag([two], [1000, 900], cpu_left=4000) == 1900           # needs two whole GPUs


def test_the_wrong_model_is_all_fragmented():
    pinned = TypicalPod(PodShape(1000, 1, 500, ("V100",)), 1.0)
    assert frag([pinned], [1000, 300], cpu_left=4000, model="T4", models=("T4", "V100")) == 1300
    assert frag([pinned], [1000, 300], cpu_left=4000, model="V100", models=("T4", "V100")) == 300


def test_cpu_pods_find_every_idle_gpu_fragmented():
    cpu_pod = TypicalPod(PodShape(2000), 1.0)
    assert frag([cpu_pod], [1000, 250], cpu_left=4000) == 1250
    assert frag([cpu_pod], [0, 0], cpu_left=4000) == 0


def test_the_expectation_over_typical_pods():
    typical = [TypicalPod(PodShape(1000, 1, 500), 0.75), TypicalPod(PodShape(1000, 1, 1000), 0.25)]
    # 0.75 x 600 (both 300 GPUs are too small for a half) + 0.25 x 1300 (no whole GPU at all)
    assert frag(typical, [700, 300, 300], cpu_left=8000) == pytest.approx(0.75 * 600 + 0.25 * 1300)


def test_vectorised_over_nodes_and_placements():
    workload = Workload([HALF])
    left = np.array([[[500, 1000], [1000, 500]], [[0, 1000], [1000, 0]]])  # (node, placement, gpu)
    out = node_fragmentation(workload, left, np.array([[4000], [4000]]), np.zeros((2, 1), dtype=np.int64))
    assert out.shape == (2, 2) and (out == 0).all()


def test_typical_pods_cover_the_popular_shapes():
    shapes = [PodShape(1000, 1, 500)] * 6 + [PodShape(2000)] * 3 + [PodShape(4000, 1, 1000)]
    typical = typical_pods(shapes, threshold=80)
    assert [t.shape for t in typical] == [PodShape(1000, 1, 500), PodShape(2000)]
    assert [t.weight for t in typical] == pytest.approx([6 / 9, 3 / 9])
    everything = typical_pods(shapes, threshold=100)
    assert [t.weight for t in everything] == pytest.approx([0.6, 0.3, 0.1])
    # equally common shapes: the larger first
    tie = typical_pods([PodShape(1000), PodShape(2000)], threshold=50)
    assert [t.shape for t in tie] == [PodShape(2000)]
