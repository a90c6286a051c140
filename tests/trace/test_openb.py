"""Converting the openb trace: CSV reading, the paper's arrival order, the manifests."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import ConfigMap, Node, Pod
from kubesched.core.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.core.gpu.fragmentation import PodShape, parse_typical_pods
from kubesched.trace.gorand import GoRand
from kubesched.trace.openb import (
    TraceError,
    TracePod,
    arrival_generator,
    arrival_order,
    convert,
    read_nodes,
    read_pods,
)

from .helpers import small_trace, write_nodes, write_pods


def pods(*specs) -> list[TracePod]:
    """``(name, gpu_count, milli_gpu)`` each, 1000m CPU."""
    return [TracePod(name, 1000, 1024, count, milli) for name, count, milli in specs]


def test_reads_nodes_and_pods(tmp_path):
    nodes, pod_list = small_trace(tmp_path)
    read = read_nodes(nodes)
    assert read[2].name == "node-v100" and read[2].gpus == 4 and read[2].model == "V100M16"
    trace = read_pods(pod_list)
    assert trace[0] == TracePod("pod-000", 8000, 16384, 1, 1000, ())
    assert trace[3] == TracePod("pod-003", 6000, 12288, 0, 0, ())
    assert trace[-1].models == ("V100M16", "V100M32")


@pytest.mark.parametrize("row, problem", [
    (("pod-x", "lots", 1, 0, 0, ""), "line 2: cpu_milli: not a number: 'lots'"),
    (("pod-x", 1000, 1, 1, 0, ""), "line 2: gpu_milli: must be positive when num_gpu is 1"),
    (("pod-x", -5, 1, 0, 0, ""), "line 2: cpu_milli: must not be negative: -5"),
])
def test_bad_rows_are_named(tmp_path, row, problem):
    path = write_pods(tmp_path / "bad.csv", [row])
    with pytest.raises(TraceError, match=f"bad.csv: {problem}"):
        read_pods(path)


def test_missing_columns_and_files_are_named(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli\nn1,1000\n")
    with pytest.raises(TraceError, match="nodes.csv: missing column\\(s\\) memory_mib, gpu, model"):
        read_nodes(path)
    with pytest.raises(TraceError, match="nope.csv: No such file"):
        read_nodes(tmp_path / "nope.csv")


def test_arrival_order_shuffles_reproducibly_and_pads_to_the_arrival():
    trace = pods(*((f"p{i}", 1, 500) for i in range(10)))  # 5 GPUs asked
    first = arrival_order(trace, 4000, arrival_generator(7), arrival=2.0)
    assert first == arrival_order(list(reversed(trace)), 4000, arrival_generator(7), arrival=2.0)
    assert first != arrival_order(trace, 4000, arrival_generator(8), arrival=2.0)
    assert {p.name for p in first[:10]} == {p.name for p in trace}
    assert sum(p.total_milli_gpu for p in first) == 8000  # padded to 2 x 4 GPUs exactly
    assert all(p.name.rsplit("-tuned-", 1)[1] == str(i) for i, p in enumerate(first[10:]))


def test_padding_checks_the_per_gpu_request_as_the_paper_does():
    # the demand may pass the target by a multi-GPU pod: the check uses the per-GPU request
    trace = pods(("big", 4, 1000))
    order = arrival_order(trace, 4000, arrival_generator(1), arrival=1.5)
    assert [p.total_milli_gpu for p in order] == [4000, 4000]  # 8000 > 6000, but 4000 + 1000 <= 6000 was checked


def test_thinning_removes_random_pods_until_the_demand_fits():
    trace = pods(*((f"p{i}", 1, 1000) for i in range(10)))
    order = arrival_order(trace, 4000, arrival_generator(3), arrival=1.0)
    assert len(order) == 4 and len({p.name for p in order}) == 4
    unpadded = arrival_order(trace, 4000, arrival_generator(3), arrival=0)
    assert unpadded == arrival_order(trace, 4000, arrival_generator(3), arrival=-1) and len(unpadded) == 10


def test_go_order_is_the_go_simulators_draws_from_go_s_source():
    # after rand.Seed: one Int (the log call), Shuffle of the pods sorted by name, one Intn per padding draw
    trace = pods(*((f"p{i}", 1, 500) for i in reversed(range(10))))
    order = arrival_order(trace, 4000, arrival_generator(42, "go"), arrival=2.0)
    go = GoRand(42)
    go.int_()
    expected = [f"p{i}" for i in range(10)]
    go.shuffle(expected)
    padding = []
    while 5000 + 500 * len(padding) + 500 <= 8000:
        padding.append(f"p{go.intn(10)}-tuned-{len(padding)}")
    go.intn(10)  # the draw that ends the padding
    assert [p.name for p in order] == expected + padding and len(padding) == 6
    generator = arrival_generator(42, "go")
    assert arrival_order(trace, 4000, generator, arrival=2.0) == order
    assert generator.getstate() == go.getstate() and generator.draws == 1 + 9 + 7
    with pytest.raises(ValueError, match="rng: 'java' is not one of python, go"):
        arrival_generator(42, "java")


def test_convert_writes_dra_manifests(tmp_path):
    nodes, pod_list = small_trace(tmp_path)
    info = convert(nodes, pod_list, tmp_path / "out", seed=42, arrival=1.3)
    cluster = [from_manifest(d) for d in json.loads((tmp_path / "out/cluster.json").read_text())["items"]]
    workload = [from_manifest(d) for d in json.loads((tmp_path / "out/pods.json").read_text())["items"]]
    assert info["gpu-capacity-milli"] == "16000" and info["seed"] == "42" and info["arrival"] == "1.3"
    assert info["rng"] == "python" and "rng-draws" not in info
    assert int(info["gpu-demand-milli"]) <= 1.3 * 16000 + 1000

    kinds = [type(o) for o in cluster]
    assert kinds.count(Node) == 4 and kinds.count(ResourceSlice) == 4 and DeviceClass in kinds
    slices = {o.spec.node_name: o for o in cluster if isinstance(o, ResourceSlice)}
    g2 = slices["node-g2"].spec
    assert [d.name for d in g2.devices] == [f"gpu-{i}" for i in range(8)]
    gpu = g2.devices[0]
    assert gpu.allow_multiple_allocations and gpu.attributes["model"].value == "G2"
    assert gpu.capacity["compute"].value == 1 and gpu.capacity["memory"].value == 20000 * 2**20
    assert gpu.capacity["memory"].request_policy.default == 0  # claims consume memory only when they ask

    claims = {o.metadata.name: o for o in workload if isinstance(o, ResourceClaim)}
    share = claims["pod-001-gpu"].spec.devices.requests[0].exactly
    assert share.count == 1 and share.capacity.requests == {"compute": Fraction(1, 2)}
    whole = claims["pod-two-gpu"].spec.devices.requests[0].exactly
    assert whole.count == 2 and whole.capacity is None
    pinned = claims["pod-v100-gpu"].spec.devices.requests[0].exactly
    assert pinned.selectors[0].expression == 'device.attributes["gpu.example.com"].model in ["V100M16", "V100M32"]'
    pod = next(o for o in workload if isinstance(o, Pod) and o.metadata.name == "pod-001")
    assert pod.spec.resource_claims[0].resource_claim_name == "pod-001-gpu"
    cpu_only = next(o for o in workload if isinstance(o, Pod) and o.metadata.name == "pod-003")
    assert not cpu_only.spec.resource_claims
    # every claim comes right before its pod
    for index, obj in enumerate(workload):
        if isinstance(obj, ResourceClaim):
            assert workload[index + 1].metadata.name + "-gpu" == obj.metadata.name

    configmap = next(o for o in cluster if isinstance(o, ConfigMap))
    typical = parse_typical_pods(configmap.data["typical-pods.yaml"])
    assert abs(sum(t.weight for t in typical) - 1) < 1e-9
    assert typical[0].shape in {PodShape(8000, 1, 1000), PodShape(4000, 1, 500), PodShape(2000, 1, 250),
                                PodShape(6000, 0, 0), PodShape(4000, 1, 460)}


def test_convert_refuses_a_cluster_without_gpus(tmp_path):
    nodes = write_nodes(tmp_path / "nodes.csv", [("cpu-only", 32000, 65536, 0, "")])
    pod_list = write_pods(tmp_path / "pods.csv", [("p", 1000, 1024, 0, 0, "")])
    with pytest.raises(TraceError, match="nodes.csv: no node has GPUs"):
        convert(nodes, pod_list, tmp_path / "out")


def test_typical_pods_text_errors_name_the_source():
    with pytest.raises(ValueError, match="ConfigMap x: expected a list"):
        parse_typical_pods("- {milliCPU: 1}", "ConfigMap x")
