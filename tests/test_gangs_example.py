"""examples/gangs: three training jobs as PodGroups on racks of DRA GPU nodes, as
a user runs them (simulate, explain, the HTML report in a real browser)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "gangs")
LATE = f"2m={ROOT / 'examples' / 'gangs-arrivals' / 'eval-worker-2.yaml'}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def invoke(*args: str) -> str:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout  # notes (feature gates switched on) go to stderr


def test_one_job_fits_one_waits_and_the_late_worker_completes_the_third():
    state = json.loads(invoke("simulate", "-f", EXAMPLE, "--at", LATE, "-o", "json"))
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in state["items"] if p["kind"] == "Pod"}
    pretrain = {node for name, node in pods.items() if name.startswith("llm-pretrain")}
    assert len(pretrain) == 2 and all(node.startswith("rack-a") for node in pretrain)  # one rack, all four
    assert not any(node for name, node in pods.items() if name.startswith("llm-finetune"))
    evals = {node.rsplit("-", 1)[0] for name, node in pods.items() if name.startswith("eval")}
    assert len(evals) == 1 and evals != {"rack-a"} and all(pods[f"eval-worker-{i}"] for i in range(3)), evals
    groups = {g["metadata"]["name"]: g["status"]["conditions"][0] for g in state["items"] if g["kind"] == "PodGroup"}
    assert groups["llm-finetune"]["reason"] == "Unschedulable"
    assert groups["llm-finetune"]["message"].startswith("0/3 placements are available")
    assert groups["eval"]["status"] == "True"


def test_the_late_worker_is_waited_for_without_it():
    state = json.loads(invoke("simulate", "-f", EXAMPLE, "-o", "json"))
    evals = [p for p in state["items"] if p["kind"] == "Pod" and p["metadata"]["name"].startswith("eval")]
    assert len(evals) == 2 and not any(p["spec"].get("nodeName") for p in evals)


def test_explain_names_the_rack_that_came_closest_and_what_it_lacks():
    answer = json.loads(invoke("explain", "podgroup/ml/llm-finetune", "-f", EXAMPLE, "-o", "json"))
    assert answer["status"] == "Pending" and answer["minCount"] == 4
    placements = {p["name"]: p for p in answer["placements"]}
    assert placements["rack-b"]["placed"] == 2 and not placements["rack-b"]["feasible"]
    assert answer["suggestions"][0].startswith(
        "rack-b would fit 3 of 4 members with 2 more gpu.example.com devices free on node rack-b-")
    text = invoke("explain", "ml/llm-finetune-worker-0", "-f", EXAMPLE)
    assert "member of PodGroup ml/llm-finetune" in text and "rack-b would fit" in text


@pytest.mark.skipif(CHROMIUM is None and os.environ.get("KUBESCHED_REQUIRE_BROWSER") != "1",
                    reason="Chromium is not installed")
def test_the_html_report_has_a_pod_group_page_that_chromium_renders(tmp_path):
    assert CHROMIUM is not None, "KUBESCHED_REQUIRE_BROWSER=1 but no chromium on PATH"
    page = tmp_path / "report.html"
    invoke("simulate", "-f", EXAMPLE, "--html", str(page))
    text = page.read_text()
    assert 'href="#pod-podgroup-ml-llm-finetune"' in text
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri() + "#pod-podgroup-ml-llm-finetune"],
                          capture_output=True, text=True, timeout=120, check=True)
    visible = re.findall(r'<section class="page" id="([^"]+)"(?! hidden)>', done.stdout)
    assert visible == ["pod-podgroup-ml-llm-finetune"]
    section = done.stdout[done.stdout.index('id="pod-podgroup-ml-llm-finetune"'):]
    assert "Placements tried (3)" in section and "rack-b would fit 3 of 4 members" in section


URGENT = f"5m={ROOT / 'examples' / 'gangs-arrivals' / 'urgent-pretrain.yaml'}"


def test_a_deadline_job_preempts_the_whole_pretrain_gang_and_takes_its_rack_and_gpus():
    """Only rack-a has room for four 24-CPU, 2-GPU workers, and llm-pretrain holds its CPUs and GPUs: the
    higher-priority PodGroup preempts it as a gang (its members' GPU claims count as freed in the dry run)."""
    state = json.loads(invoke("simulate", "-f", EXAMPLE, "--at", URGENT, "-o", "json"))
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in state["items"] if p["kind"] == "Pod"}
    assert not any(name.startswith("llm-pretrain") for name in pods)  # every member evicted
    urgent = [node for name, node in pods.items() if name.startswith("urgent-pretrain")]
    assert len(urgent) == 4 and all(node.startswith("rack-a-") for node in urgent), urgent
    claims = [c for c in state["items"] if c["kind"] == "ResourceClaim" and c["metadata"]["name"].startswith("urgent")]
    assert len(claims) == 4 and all(c["status"]["allocation"] for c in claims)
    table = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["simulate", "-f", EXAMPLE, "--at", URGENT]).output
    victims = [line for line in table.splitlines() if "llm-pretrain-worker" in line and "Preempted by podgroup" in line]
    assert len(victims) == 4 and all("podgroup/ml/urgent-pretrain" in line for line in victims)
    assert all("Preempted by podgroup ml/urgent-pretrain (uid " in line and "on node" not in line for line in victims)


def test_a_recorded_run_with_pod_groups_is_explained_and_reported_from_its_file(tmp_path):
    record, page = tmp_path / "decisions.jsonl", tmp_path / "run.html"
    invoke("simulate", "-f", EXAMPLE, "--record", str(record), "--html", str(page))
    assert page.stat().st_size > 0
    recorded = json.loads(invoke("explain", "podgroup/ml/llm-finetune", "--from", str(record), "-o", "json"))
    assert recorded["placements"] == json.loads(
        invoke("explain", "podgroup/ml/llm-finetune", "-f", EXAMPLE, "-o", "json"))["placements"]


def test_explain_names_the_attempt_that_preempted_and_its_victims(tmp_path):
    record = tmp_path / "decisions.jsonl"
    invoke("simulate", "-f", EXAMPLE, "--at", URGENT, "--record", str(record))
    answer = json.loads(invoke("explain", "podgroup/ml/urgent-pretrain", "--from", str(record), "-o", "json"))
    assert answer["status"] == "Scheduled" and answer["attempts"] == 2
    preemption = answer["preemption"]
    assert (preemption["attempt"], preemption["plugin"]) == (1, "DefaultPreemption")
    assert sorted(preemption["victims"]) == [f"ml/llm-pretrain-worker-{i}" for i in range(4)]
    text = invoke("explain", "podgroup/ml/urgent-pretrain", "--from", str(record))
    assert "Attempt 1 preempted (DefaultPreemption): 4 victim(s)" in text
