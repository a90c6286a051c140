"""scheduler_perf's opportunistic batching suites (batching/, nnn_hint_fallback/) run unchanged: createPods'
signatureBatchSize labels runs of pods alike, nominatedNodeName nominates each pod before it is queued, and
the scheduler batches them (KEP-5598)."""

from __future__ import annotations

from collections import Counter

from .helpers import DATA, executor_for


def batched(executor) -> int:
    return sum(batch.batched_pods for batch in executor.scheduler.pods.batches.values())


def test_host_port_conflict_batches_the_pods_of_one_signature():
    executor = executor_for(DATA / "batching/performance-config.yaml", "HostPortConflict", "10Nodes_10Pods_10BatchSize",
                            fake_clock=True)
    pods = executor.cluster.list("Pod").items
    assert len(pods) == 10 and len({p.spec.node_name for p in pods}) == 10  # one pod per node (host port 80)
    assert Counter(p.metadata.labels["signature"] for p in pods) == {"signature-label-0": 10}
    assert batched(executor) == 9  # the first pod ran the full cycle


def test_resource_saturation_with_the_gate_off_batches_nothing(tmp_path):
    import yaml

    cases = yaml.safe_load((DATA / "batching/performance-config.yaml").read_text())
    case = next(c for c in cases if c["name"] == "ResourceSaturation")
    case["schedulerConfigPath"] = str(DATA / "batching" / case["schedulerConfigPath"])
    case["defaultPodTemplatePath"] = str(DATA / "templates/pod-saturation.yaml")
    case["workloadTemplate"][0]["nodeTemplatePath"] = str(DATA / "templates/node-default.yaml")
    case["workloads"] = [{"name": "off", "featureGates": {"OpportunisticBatching": False},
                          "params": {"signatureBatchSize": 2, "initNodes": 6, "measurePods": 6}}]
    path = tmp_path / "performance-config.yaml"
    path.write_text(yaml.safe_dump([case]))
    executor = executor_for(path, "ResourceSaturation", "off", fake_clock=True)
    pods = executor.cluster.list("Pod").items
    assert sorted(Counter(p.metadata.labels["signature"] for p in pods).values()) == [2, 2, 2]
    assert all(p.spec.node_name for p in pods) and batched(executor) == 0
    assert not executor.scheduler.pods.batches


def test_nnn_miss_falls_back_to_the_batch_hint():
    executor = executor_for(DATA / "nnn_hint_fallback/performance-config.yaml", "NNNMiss", "500Nodes",
                            fake_clock=True)
    pods = executor.cluster.list("Pod").items
    assert len(pods) == 499
    assert all(p.spec.node_name and p.spec.node_name != "scheduler-perf-blocked" for p in pods)
    assert all(not p.spec.scheduling_gates for p in pods)
    assert batched(executor) > 400
