"""`kubesched compare`: two configurations on the same input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.drivers.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "examples/cluster"
DEFAULT = str(ROOT / "configs/default.yaml")
BIN_PACKING = str(ROOT / "configs/bin-packing.yaml") + ":bin-packing-scheduler"
runner = CliRunner()


def _compare(*args: str) -> dict:
    result = runner.invoke(app, ["compare", "--config", DEFAULT, "--config", BIN_PACKING, *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_bin_packing_against_the_default_profile_on_the_example_cluster():
    answer = _compare("-f", str(CLUSTER))
    a, b = answer["sides"]["a"], answer["sides"]["b"]
    assert (a["bound"], a["pending"]) == (b["bound"], b["pending"]) == (9, 2)
    assert (a["nodesInUse"], b["nodesInUse"]) == (5, 4)
    assert b["strandedFreePercent"]["cpu"] < a["strandedFreePercent"]["cpu"]
    # the moved pods are where a plain simulation with each configuration puts them
    on_a = Simulation.from_paths([CLUSTER], config=DEFAULT)
    on_a.run()
    assert answer["moved"] and all(on_a.pod(row["pod"]).spec.node_name == row["a"] for row in answer["moved"])
    per_node = {row["node"]: row for row in answer["nodes"]}
    assert per_node["gpu-b3"]["a"]["nvidia.com/gpu"] == 100.0 and per_node["gpu-b3"]["b"]["pods"] == 0


def test_on_a_scheduler_perf_workload_bin_packing_fills_one_node_first():
    answer = _compare("--perf", str(ROOT / "data/scheduler_perf/misc/performance-config.yaml") + ":SchedulingBasic/5Nodes")
    a, b = answer["sides"]["a"], answer["sides"]["b"]
    assert a["bound"] == b["bound"] == 15
    assert (a["nodesInUse"], b["nodesInUse"]) == (5, 1)
    assert len(answer["moved"]) > 0


def test_compare_refuses_what_it_cannot_run():
    once = runner.invoke(app, ["compare", "--config", DEFAULT, "-f", str(CLUSTER)])
    assert once.exit_code == 2 and "--config or --emulated-version twice" in once.output
    missing = runner.invoke(app, ["compare", "--config", DEFAULT, "--config", DEFAULT + ":no-such-profile",
                                  "-f", str(CLUSTER)])
    assert missing.exit_code == 2
    assert "default.yaml: profiles: no profile with schedulerName 'no-such-profile'" in missing.output


def test_two_configurations_on_a_converted_trace(tmp_path):
    from tests.trace.helpers import small_trace

    from kubesched.trace.openb import convert

    nodes, pods = small_trace(tmp_path)
    convert(nodes, pods, tmp_path / "trace", seed=42, arrival=1.3)
    answer = _compare("--trace", str(tmp_path / "trace"))
    a, b = answer["sides"]["a"], answer["sides"]["b"]
    assert a["pods"] == b["pods"] and a["pods"] >= 40 and a["config"] == DEFAULT and b["config"] == BIN_PACKING
    assert 0 < a["gpuAllocationRatio"] <= 100 and 0 < b["gpuAllocationRatio"] <= 100
    assert {row["node"] for row in answer["nodes"]} == {"node-t4-a", "node-t4-b", "node-v100", "node-g2"}
    differing = [row for row in answer["nodes"] if row["a"] != row["b"]]
    assert answer["nodesDiffering"] == len(differing) and answer["nodes"][:len(differing)] == differing
    assert answer["arrivedPercent"] >= 125 and answer["gpuUtilisationAt"] <= answer["arrivedPercent"]
    table = runner.invoke(app, ["compare", "--config", DEFAULT, "--config", BIN_PACKING, "--trace",
                                str(tmp_path / "trace")])
    assert table.exit_code == 0, table.output
    assert (f"at {answer['gpuUtilisationAt']} % arrival, the last sample of a replay to {answer['arrivedPercent']} %"
            in " ".join(table.output.split()))


def test_the_manifests_are_read_and_parsed_once_for_both_sides(monkeypatch):
    import importlib

    from kubesched.core.api import manifests

    command = importlib.import_module("kubesched.cli.compare")  # the package's name `compare` is the command

    reads = []

    def counted(paths, *args, **kwargs):
        reads.append(list(paths))
        return manifests.load_sourced_objects(paths, *args, **kwargs)

    monkeypatch.setattr(command, "load_sourced_objects", counted)
    answer = _compare("-f", str(CLUSTER))
    assert len(reads) == 1 and [str(p) for p in reads[0]] == [str(CLUSTER)], reads
    assert answer["sides"]["a"]["bound"] == answer["sides"]["b"]["bound"] == 9
