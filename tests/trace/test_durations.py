"""The trace's run times: the conversion writes them as ``kubesched.io/run-duration`` (the simulated kubelet's
annotation), the paper's replay ignores them (same numbers), ``--durations`` lets pods end through the kubelet."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.trace.openb import TraceError, convert, read_pods
from kubesched.trace.replay import replay

from .helpers import POD_HEADER, write_nodes

runner = CliRunner()


def write_timed_pods(path, rows):
    """Rows ``(name, cpu_milli, num_gpu, gpu_milli, scheduled_time, deletion_time)``."""
    lines = [POD_HEADER]
    lines += [f"{name},{cpu},4096,{gpus},{milli},,LS,Running,{scheduled},{deleted},{scheduled}"
              for name, cpu, gpus, milli, scheduled, deleted in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def timed(tmp_path):
    """One node with 2 GPUs; four 1-GPU pods that ran 100 s each, and a CPU pod never scheduled."""
    nodes = write_nodes(tmp_path / "nodes.csv", [("node-a", 32000, 131072, 2, "T4")])
    pods = write_timed_pods(tmp_path / "pods.csv", [(f"p{i}", 1000, 1, 1000, 1000, 1100) for i in range(4)]
                            + [("pending", 1000, 0, 0, "", 1200)])
    convert(nodes, pods, tmp_path / "trace", seed=1, arrival=0)
    return tmp_path / "trace"


def pods_json(trace):
    return [d for d in json.loads((trace / "pods.json").read_text())["items"] if d["kind"] == "Pod"]


def test_the_conversion_writes_each_pods_run_time_as_the_kubelets_annotation(timed):
    durations = {d["metadata"]["name"]: d["metadata"].get("annotations", {}).get("kubesched.io/run-duration")
                 for d in pods_json(timed)}
    assert durations == {"p0": "100s", "p1": "100s", "p2": "100s", "p3": "100s", "pending": None}


def test_a_deletion_before_the_scheduling_is_refused(tmp_path):
    pods = write_timed_pods(tmp_path / "pods.csv", [("p", 1000, 0, 0, 500, 400)])
    with pytest.raises(TraceError, match="line 2: deletion_time: 400 is before scheduled_time 500"):
        read_pods(pods)


def test_the_papers_replay_never_ends_a_pod_whatever_the_annotations(timed, tmp_path):
    """The published protocol: no controller runs; pods p2 and p3 find both GPUs taken - the numbers are those
    of the same trace without the annotations."""
    result = replay(timed)
    stripped = tmp_path / "stripped"
    stripped.mkdir()
    (stripped / "cluster.json").write_text((timed / "cluster.json").read_text())
    data = json.loads((timed / "pods.json").read_text())
    for item in data["items"]:
        item["metadata"].pop("annotations", None)
    (stripped / "pods.json").write_text(json.dumps(data))
    again = replay(stripped)
    assert (result.bound, result.failed) == (3, 2) and result.interval is None  # p0, p1 and the CPU pod
    assert (again.bound, again.curve, again.fragmentation) == (result.bound, result.curve, result.fragmentation)
    assert "interval" not in result.to_json() and "finished" not in result.to_json()


def test_with_durations_pods_end_through_the_kubelet_and_free_their_gpus(timed):
    """Arrivals 150 s apart, each pod runs 100 s: every pod finds the GPUs of the ones before it free again."""
    result = replay(timed, durations=True, interval=150)
    last_holds_a_gpu = pods_json(timed)[-1]["metadata"]["name"] != "pending"  # the last pod is still running
    assert (result.bound, result.failed, result.finished) == (5, 0, 3 if last_holds_a_gpu else 4)
    assert result.interval == 150 and result.to_json()["finished"] == result.finished
    assert result.gpu_allocation_ratio == (50 if last_holds_a_gpu else 0)  # only the last pod's GPU, if any
    slow = replay(timed, durations=True, interval=10)  # pods still run when the next ones arrive
    assert (slow.bound, slow.failed) == (3, 2)


def test_the_replay_command_takes_durations_and_an_interval(timed):
    done = runner.invoke(app, ["trace", "replay", str(timed), "--durations", "--interval", "150s"])
    assert done.exit_code == 0, done.output
    assert "5 scheduled, 0 failed, " in done.output and " ended (arrivals 150s apart)" in done.output
    bad = runner.invoke(app, ["trace", "replay", str(timed), "--durations", "--interval", "soon"])
    assert bad.exit_code == 2 and "--interval: invalid duration 'soon'" in bad.output
