"""Replaying converted traces: one attempt per pod, the curves, the commands."""

from __future__ import annotations

import gc
import json

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.gpu.gpus import NodeGpus
from kubesched.drivers.batch_gc import BATCH_THRESHOLDS, batch_collection
from kubesched.drivers.harness import Harness
from kubesched.testing import config, device, device_class, node, pod, resource_claim, resource_slice
from kubesched.trace.gorand import GoRand
from kubesched.trace.openb import convert
from kubesched.trace.replay import INFORMER_DRAWS, claim_demand, go_node_ranks, node_ranks, replay

from .helpers import small_trace, write_nodes, write_pods

runner = CliRunner()
#: MostAllocated bin-packing, so that the small trace fills up
PACKING = {**config(), "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}


@pytest.fixture
def trace(tmp_path):
    nodes, pods = small_trace(tmp_path)
    convert(nodes, pods, tmp_path / "trace", seed=42, arrival=1.3)
    return tmp_path / "trace"


def test_every_pod_is_tried_once_and_the_curves_are_recorded(trace):
    result = replay(trace, PACKING)
    converted = json.loads((trace / "pods.json").read_text())["items"]
    assert result.pods == sum(1 for d in converted if d["kind"] == "Pod")
    assert result.bound + result.failed == result.pods and result.failed > 0  # 130 % cannot all fit
    assert result.gpus == 16 and result.seed == 42 and result.arrival == 1.3
    arrived = [point for point, _ in result.curve]
    assert arrived == sorted(arrived) and arrived[-1] in (129, 130, 131)
    allocated = [value for _, value in result.curve]
    assert allocated == sorted(allocated) and 0 < allocated[-1] <= 100
    assert result.gpu_allocation_ratio == pytest.approx(allocated[-1], abs=1)
    assert [point for point, _ in result.fragmentation] == arrived
    assert len(result.heatmap) == len(result.heatmap_arrived) and len(result.heatmap[0]) == len(result.nodes) == 4


def test_the_json_object_has_the_documented_keys_first(trace):
    data = replay(trace, PACKING, limit=5).to_json()
    assert list(data)[:6] == ["seed", "rng", "arrival", "gpu_allocation_ratio", "curve", "wall_seconds"]
    assert data["rng"] == "python"
    assert data["pods"] == 5


def test_replays_are_reproducible(trace):
    first, second = replay(trace, PACKING), replay(trace, PACKING)
    assert first.curve == second.curve and first.fragmentation == second.fragmentation
    assert replay(trace, PACKING, tie_break="random").pods == first.pods
    with pytest.raises(ValueError, match="tie_break: 'first' is not one of ranked, random"):
        replay(trace, PACKING, tie_break="first")


def test_replays_one_after_another_in_one_process_keep_nothing_of_the_earlier_ones(trace):
    # a sweep worker replays cell after cell: memory must not grow with each one
    from kubesched.core.api.resource_v1 import ResourceSlice

    def live_slices() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, ResourceSlice))

    replay(trace, PACKING, limit=5)
    after_one = live_slices()
    for _ in range(3):
        replay(trace, PACKING, limit=5)
    assert live_slices() == after_one


def test_a_replay_collects_garbage_in_larger_batches_and_then_puts_the_process_s_thresholds_back(trace, monkeypatch):
    seen = []
    original = Harness.start

    def start(self):
        seen.append(gc.get_threshold())  # what the replay runs with
        original(self)

    monkeypatch.setattr(Harness, "start", start)
    before = gc.get_threshold()
    replay(trace, PACKING, limit=5)
    assert seen == [BATCH_THRESHOLDS] and gc.get_threshold() == before


def test_blocks_of_two_runs_that_interleave_put_the_thresholds_back_when_the_last_one_ends():
    # a UI's background run beside a request's run, on two threads: the first ends while the second runs
    before = gc.get_threshold()
    first, second = batch_collection(), batch_collection()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == BATCH_THRESHOLDS  # the second still runs in batches
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_ranked_tie_break_is_a_seeded_permutation():
    ranks = node_ranks(["b", "a", "c"], seed=1)
    assert sorted(ranks.values()) == [0, 1, 2] and ranks == node_ranks(["c", "b", "a"], seed=1)


def test_go_ranking_is_go_s_perm_over_the_nodes_sorted_by_name():
    ranks = go_node_ranks(["b", "a", "c"], GoRand(1))
    assert ranks == dict(zip("abc", GoRand(1).perm(3)))
    # past 9999 the simulator's "%04d-" prefix is wider and sorts as text: "10000-" between "1000-" and "1001-"
    names = [f"n{i:05d}" for i in range(10001)]
    perm = GoRand(3).perm(10001)
    ranks = go_node_ranks(names, GoRand(3))
    assert ranks[names[perm.index(10000)]] == 1001 and ranks[names[perm.index(1001)]] == 1002
    assert ranks[names[perm.index(999)]] == 999


def test_a_go_trace_ranks_nodes_where_the_conversion_left_go_s_source(tmp_path, monkeypatch):
    nodes, pods = small_trace(tmp_path)
    info = convert(nodes, pods, tmp_path / "trace", seed=42, arrival=1.3, rng="go")
    drawn = []
    monkeypatch.setattr("kubesched.trace.replay.go_node_ranks",
                        lambda names, generator: drawn.append(generator.getstate()) or go_node_ranks(names, generator))
    result = replay(tmp_path / "trace", PACKING)
    assert result.rng == "go" and result.to_json()["rng"] == "go"
    expected = GoRand(42)
    expected.advance(int(info["rng-draws"]) + INFORMER_DRAWS)  # Float64 takes one value (but once in 2**53)
    assert drawn == [expected.getstate()]
    again = replay(tmp_path / "trace", PACKING)
    assert again.curve == result.curve and again.fragmentation == result.fragmentation


def test_a_trace_with_an_unknown_generator_is_refused(trace):
    cluster = json.loads((trace / "cluster.json").read_text())
    configmap = next(item for item in cluster["items"] if item["kind"] == "ConfigMap")
    configmap["data"]["rng"] = "perl"
    (trace / "cluster.json").write_text(json.dumps(cluster))
    with pytest.raises(InvalidManifest, match="data.rng: 'perl' is not one of python, go"):
        replay(trace)


def test_a_directory_that_is_not_a_trace_is_refused(tmp_path):
    with pytest.raises(InvalidManifest, match="cluster.json: not found"):
        replay(tmp_path)


def test_claim_demand_counts_milli_gpus():
    assert claim_demand(resource_claim("c", count=2), "gpu.example.com") == 2000
    assert claim_demand(resource_claim("c", capacity={"compute": "250m"}), "gpu.example.com") == 250
    assert claim_demand(resource_claim("c", device_class_name="other"), "gpu.example.com") == 0


def test_node_gpus_follow_allocations(simulate):
    gpus = [device(f"gpu-{i}", attributes={"model": "T4"}, capacity={"compute": "1"}, shared=True) for i in range(2)]
    sim = simulate(
        node("n1", cpu="8"), device_class(), resource_slice("n1", gpus),
        resource_claim("quarter", capacity={"compute": "250m"}), pod("a", cpu="1", claims=["quarter"]),
        resource_claim("whole"), pod("b", cpu="1", claims=["whole"]),
    )
    assert sim.scheduler.stats.bound == 2
    view = NodeGpus(sim.scheduler.dra_manager())
    view.sync(sim.scheduler.snapshot.table)
    assert view.models == ["T4"] and view.count.tolist() == [2]
    assert sorted(view.left[0].tolist()) == [0, 750] and view.capacity[0].tolist() == [1000, 1000]


def test_trace_commands(tmp_path):
    nodes, pods = small_trace(tmp_path)
    out = tmp_path / "openb"
    done = runner.invoke(app, ["trace", "alibaba-openb", "--nodes", str(nodes), "--pods", str(pods),
                               "-o", str(out), "--seed", "7", "--replay", "--format", "json"])
    assert done.exit_code == 0, done.output
    assert "on 16 GPUs (seed 7, arrival 1.3, rng python)" in done.output
    data = json.loads(done.output.splitlines()[-1])
    assert data["seed"] == 7 and data["rng"] == "python" and data["pods"] > 0 and len(data["curve"]) > 10
    csv = runner.invoke(app, ["trace", "replay", str(out), "-o", "csv", "--limit", "10"])
    assert csv.exit_code == 0, csv.output
    assert csv.output.splitlines()[0] == "arrived_pct,allocated_pct,fragmented_pct"
    table = runner.invoke(app, ["trace", "replay", str(out), "--limit", "10", "--save", str(tmp_path / "r.json")])
    assert table.exit_code == 0 and "10 pod(s) arrived" in table.output
    assert json.loads((tmp_path / "r.json").read_text())["pods"] == 10

    go = runner.invoke(app, ["trace", "alibaba-openb", "--nodes", str(nodes), "--pods", str(pods),
                             "-o", str(tmp_path / "go"), "--seed", "7", "--rng", "go"])
    assert go.exit_code == 0 and "(seed 7, arrival 1.3, rng go)" in go.output
    replayed = runner.invoke(app, ["trace", "replay", str(tmp_path / "go"), "--limit", "10", "-o", "json"])
    assert replayed.exit_code == 0 and json.loads(replayed.output)["rng"] == "go"
    table = runner.invoke(app, ["trace", "replay", str(tmp_path / "go"), "--limit", "10"])
    assert "seed 7 (go rng)" in table.output


def test_trace_commands_refuse_bad_input_with_one_line(tmp_path):
    nodes = write_nodes(tmp_path / "nodes.csv", [("n1", "x", 1, 1, "T4")])
    pods = write_pods(tmp_path / "pods.csv", [("p", 1000, 1024, 0, 0, "")])
    done = runner.invoke(app, ["trace", "alibaba-openb", "--nodes", str(nodes), "--pods", str(pods), "-o", str(tmp_path)])
    assert done.exit_code == 2 and "nodes.csv: line 2: cpu_milli: not a number: 'x'" in done.output
    missing = runner.invoke(app, ["trace", "replay", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "cluster.json: not found" in missing.output
    huge = runner.invoke(app, ["trace", "alibaba-openb", "--nodes", str(nodes), "--pods", str(pods),
                               "-o", str(tmp_path / "go"), "--rng", "go", "--seed", str(2**63)])
    assert huge.exit_code == 2 and "--seed: a Go seed is an int64" in huge.output
    unknown = runner.invoke(app, ["trace", "alibaba-openb", "--nodes", str(nodes), "--pods", str(pods),
                                  "-o", str(tmp_path / "go"), "--rng", "java"])
    assert unknown.exit_code == 2 and "'java' is not one of 'python', 'go'" in unknown.output


def test_report_draws_the_plots(trace, tmp_path):
    results = []
    for name in ("packing", "default"):
        path = tmp_path / f"{name}.json"
        profile = PACKING if name == "packing" else None
        path.write_text(json.dumps({**replay(trace, profile).to_json(), "config": f"{name}.yaml"}))
        results.append(str(path))
    done = runner.invoke(app, ["report", *results, "-o", str(tmp_path / "plots")])
    assert done.exit_code == 0, done.output
    for name in ("allocation.png", "fragmentation.png", "heatmap.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    refused = runner.invoke(app, ["report", str(bad), "-o", str(tmp_path / "plots")])
    assert refused.exit_code == 2 and "bad.json: not a replay result" in refused.output
