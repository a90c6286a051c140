"""`kubesched sweep`: a grid of replays and simulations, resumable, on a process pool or Ray.

The Ray test runs on the cluster at $KUBESCHED_RAY_ADDRESS (.ci/run starts a
head on 127.0.0.1) or on a Ray started for the test (the test extra installs Ray).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.sweep.results import read_results
from kubesched.sweep.runner import run_sweep
from kubesched.sweep.spec import SweepError, load_spec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data/alibaba-gpu-v2023"
PACKING = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
               {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}
#: what may differ between two runs of one cell
RUN_SPECIFIC = {"wall_seconds", "host"}


def small_spec(tmp_path: Path, **changes) -> Path:
    """2 configs x 2 seeds on a thinned openb trace (every 50th GPU node) and on examples/cluster."""
    (tmp_path / "packing.yaml").write_text(yaml.safe_dump(PACKING))
    spec = {"name": "small",
            "traces": [{"name": "openb", "nodes": str(DATA / "openb_node_list_gpu_node.csv"),
                        "pods": str(DATA / "openb_pod_list_default.csv"), "thin": 50},
                       {"name": "cluster", "manifests": str(ROOT / "examples/cluster")}],
            "configs": [{"name": "default", "path": str(ROOT / "configs/default.yaml")},
                        {"name": "packing", "path": "packing.yaml"}],
            "seeds": [42, 43], **changes}
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def without_run_specifics(rows: list[dict]) -> dict[str, dict]:
    return {row["cell"]: {k: v for k, v in row.items() if k not in RUN_SPECIFIC} for row in rows}


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> Path:
    """The small sweep (:func:`small_spec`) computed once on one worker, for the tests that only read its
    results: its directory, holding ``small-results/``."""
    directory = tmp_path_factory.mktemp("small")
    assert "8 cell(s) computed" in runner_invoke("sweep", str(small_spec(directory)), "--workers", "1")
    return directory


@pytest.mark.long
def test_a_sweep_runs_every_cell_once_and_a_rerun_skips_them(tmp_path):
    spec = small_spec(tmp_path)
    first = runner_invoke("sweep", str(spec), "--workers", "2", "--export", "csv")
    assert "8 cell(s) computed, 0 already done" in first
    rows = read_results(tmp_path / "small-results/small.parquet")
    assert len(rows) == 8
    openb = [r for r in rows if r["trace"] == "openb"]
    assert {(r["config"], r["seed"]) for r in openb} == {(c, s) for c in ("default", "packing") for s in (42, 43)}
    for row in openb:
        assert row["pods"] == row["bound"] + row["failed"] and 80 < row["gpu_allocation_ratio"] <= 100
        assert row["curve_arrived"][-1] >= 129 and len(row["curve_allocated"]) == len(row["curve_arrived"])
        assert row["kubesched_version"] != "unknown" and "kubesched" in row["plugin_versions"]
    cluster = [r for r in rows if r["trace"] == "cluster"]
    assert {(r["pods"], r["bound"]) for r in cluster} == {(11, 9)}
    assert (tmp_path / "small-results/small.csv").read_text().startswith("trace,config,seed,arrival,cell")
    again = runner_invoke("sweep", str(spec))
    assert "0 cell(s) computed, 8 already done" in again
    assert "8 cell(s) computed, 0 already done" in runner_invoke("sweep", str(spec), "--rerun", "--workers", "1")
    assert without_run_specifics(read_results(tmp_path / "small-results")) == without_run_specifics(rows)


def test_a_changed_config_recomputes_only_its_cells(tmp_path):
    spec = small_spec(tmp_path, traces=[{"name": "cluster", "manifests": str(ROOT / "examples/cluster")}])
    outcome = run_sweep(load_spec(spec), tmp_path / "out")
    assert len(outcome.computed) == 4
    (tmp_path / "packing.yaml").write_text(yaml.safe_dump({**PACKING, "percentageOfNodesToScore": 50}))
    outcome = run_sweep(load_spec(spec), tmp_path / "out")
    assert sorted(outcome.computed) == ["cluster--packing--seed42--arrival1.3", "cluster--packing--seed43--arrival1.3"]


def test_the_go_generator_recomputes_the_openb_cells_and_is_recorded(tmp_path):
    python = small_spec(tmp_path, seeds=[42])
    assert "4 cell(s) computed, 0 already done" in runner_invoke("sweep", str(python))
    go = small_spec(tmp_path, seeds=[42], rng="go")
    assert "2 cell(s) computed, 2 already done" in runner_invoke("sweep", str(go))  # the manifests cells stay
    rows = {row["cell"]: row for row in read_results(tmp_path / "small-results")}
    assert {row["rng"] for row in rows.values() if row["trace"] == "openb"} == {"go"}
    assert rows["openb--packing--seed42--arrival1.3"]["pods"] > 0


def test_an_interrupted_sweep_computes_only_the_missing_cells_when_run_again(tmp_path):
    spec = load_spec(small_spec(tmp_path))

    def interrupt_after_three(done: int, total: int, cell) -> None:
        if cell is not None and done == 3:
            raise KeyboardInterrupt  # what Ctrl-C does between two cells

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path / "out", progress=interrupt_after_three)
    kept = sorted(p.stem for p in (tmp_path / "out/cells").glob("*.parquet"))
    assert len(kept) == 3
    outcome = run_sweep(spec, tmp_path / "out")
    assert sorted(outcome.skipped) == kept and len(outcome.computed) == 5
    assert not set(outcome.computed) & set(kept)


def test_a_results_directory_with_only_its_table_resumes(tmp_path):
    spec = load_spec(small_spec(tmp_path, traces=[{"name": "cluster", "manifests": str(ROOT / "examples/cluster")}]))
    first = run_sweep(spec, tmp_path / "here")
    assert len(first.computed) == 4
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (tmp_path / "here/small.parquet").rename(moved / "small.parquet")  # the table alone, no cells
    assert without_run_specifics(read_results(moved)) == without_run_specifics(read_results(tmp_path / "here"))
    again = run_sweep(spec, moved)
    assert again.computed == [] and len(again.skipped) == 4
    assert without_run_specifics(read_results(moved / "small.parquet")) == \
        without_run_specifics(read_results(tmp_path / "here"))


def test_an_unreadable_results_table_is_refused_and_left_alone(tmp_path):
    spec = small_spec(tmp_path, traces=[{"name": "cluster", "manifests": str(ROOT / "examples/cluster")}])
    table = tmp_path / "out/small.parquet"
    table.parent.mkdir()
    table.write_text("version https://git-lfs.github.com/spec/v1\n")  # e.g. a pointer where the table should be
    result = CliRunner().invoke(app, ["sweep", str(spec), "-o", str(tmp_path / "out"), "--workers", "1"])
    assert result.exit_code != 0
    assert f"{table}: not a sweep results table" in result.output
    assert table.read_text() == "version https://git-lfs.github.com/spec/v1\n"
    assert not list((tmp_path / "out/cells").glob("*.parquet"))


@pytest.fixture
def ray_leaves_the_process_as_it_was():
    """Ray's driver, started in this worker, sets environment variables, a SIGTERM handler and a sys.path entry
    that outlive ray.shutdown(): put back, so the tests after this one on the worker run as before."""
    environ, path, handler = dict(os.environ), list(sys.path), signal.getsignal(signal.SIGTERM)
    yield
    os.environ.clear()
    os.environ.update(environ)
    sys.path[:] = path
    if handler is not None:  # None: a handler not set from Python, left alone
        signal.signal(signal.SIGTERM, handler)


@pytest.mark.usefixtures("ray_leaves_the_process_as_it_was")
def test_the_ray_engine_gives_the_same_numbers_per_cell(tmp_path, small_results):
    spec = load_spec(small_spec(tmp_path))
    local = read_results(small_results / "small-results/small.parquet")  # the same grid on a local worker
    remote = run_sweep(spec, tmp_path / "ray", engine="ray", address=os.environ.get("KUBESCHED_RAY_ADDRESS"))
    assert len(local) == len(remote.computed) == 8
    assert without_run_specifics(local) == without_run_specifics(read_results(remote.files[0]))


@pytest.mark.parametrize("change, problem", [
    ({"seeds": "nine"}, "seeds: a list of integers or a range"),
    ({"configs": [{"name": "x", "path": "missing.yaml"}]}, "configs[0].path: missing.yaml: no such file"),
    ({"record": ["heatmap"]}, "record: a list of curve, fragmentation"),
    ({"traces": [{"name": "t", "manifests": ".", "thin": 2}]}, "traces[0]: give either manifests or nodes and pods"),
    ({"colour": "blue"}, "colour: unknown field"),
    ({"rng": "java"}, "rng: one of python, go, got 'java'"),
])
def test_a_bad_sweep_file_is_refused_naming_the_field(tmp_path, change, problem):
    spec = small_spec(tmp_path, **change)
    with pytest.raises(SweepError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        load_spec(spec)
    result = CliRunner().invoke(app, ["sweep", str(spec)])
    assert result.exit_code == 2 and problem in result.output and str(spec) in result.output


def runner_invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_the_report_draws_each_trace_and_sums_up_with_confidence_intervals(tmp_path, small_results):
    out = tmp_path / "report"
    runner_invoke("report", str(small_results / "small-results"), "-o", str(out),
                  "--published", str(DATA / "fgd-published-results"))
    for name in ("openb-allocation.png", "openb-fragmentation.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    page = (out / "sweep.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "http" not in page
    summary = (out / "summary.md").read_text()
    rows = read_results(small_results / "small-results")
    packing = [r["curve_allocated"][r["curve_arrived"].index(130)] for r in rows
               if r["trace"] == "openb" and r["config"] == "packing"]
    mean = sum(packing) / len(packing)
    # the packing config is named like the paper's GpuPacking policy, so its published mean (92.00) is beside ours
    assert f"| openb | packing | 2 | {mean:.2f} |" in summary and f"| 92.00 | {mean - 92.0:+.2f} |" in summary
    assert "- openb: " in summary
