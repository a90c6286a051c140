"""`simulate --html`: the self-contained report, also as a real headless Chromium renders it.

The browser test drives Debian's Chromium through its own command line
(``--headless --dump-dom``: the DOM after the page's script ran;
``--enable-logging=stderr``: console messages appear as ``CONSOLE`` lines),
so it needs no browser-automation package.  It is skipped where Chromium is
not installed (the README's test command needs only Python and pip) unless
``KUBESCHED_REQUIRE_BROWSER=1``, which .ci/run sets after installing it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def _report(tmp_path: Path, example: str = "cluster") -> Path:
    page = tmp_path / "report.html"
    done = CliRunner().invoke(app, ["simulate", "-f", str(ROOT / "examples" / example), "--html", str(page)])
    assert done.exit_code == 0, done.output
    return page


def _visible_sections(dom: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r'<section class="page" id="([^"]+)"(?! hidden)>', dom)]


def test_the_report_is_one_file_with_a_page_per_pod(tmp_path):
    text = _report(tmp_path).read_text()
    assert text.startswith("<!DOCTYPE html>") and "http" not in text and "<script src" not in text
    assert "9 pod(s) scheduled, 2 pending, 6 node(s)" in text
    pods = re.findall(r'<section class="page" id="pod-([^"]+)"', text)
    assert len(pods) == 11 and "ml-train-llm" in pods
    assert 'href="#pod-ml-train-llm"' in text  # the pending pod links to its page
    page = text[text.index('id="pod-ml-train-llm"'):]
    page = page[:page.index("</section>")]
    assert "Filter: 6 node(s) evaluated, 0 feasible" in page and "What would make it fit" in page
    assert "8 nvidia.com/gpu, 26Gi memory" in page  # what gpu-b3 lacks


def test_the_report_shows_which_claims_hold_which_devices(tmp_path):
    text = _report(tmp_path, "dra").read_text()
    assert "Devices held by ResourceClaims" in text
    devices = text[text.index("Devices held by ResourceClaims"):]
    assert re.search(r"<td>[^<]+</td><td>gpu-\d+</td>", devices)


@pytest.mark.skipif(CHROMIUM is None and os.environ.get("KUBESCHED_REQUIRE_BROWSER") != "1",
                    reason="Chromium is not installed")
def test_chromium_renders_the_summary_and_opens_a_pods_page_without_console_errors(tmp_path):
    assert CHROMIUM is not None, "KUBESCHED_REQUIRE_BROWSER=1 but no chromium on PATH"
    page = _report(tmp_path)

    def render(fragment: str) -> tuple[str, str]:
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / ('profile' + fragment)}",
                               "--dump-dom", page.as_uri() + fragment],
                              capture_output=True, text=True, timeout=120, check=True)
        return done.stdout, done.stderr

    dom, log = render("")
    assert _visible_sections(dom) == ["summary"]
    assert "<title>kubesched simulate" in dom
    dom, log_pod = render("#pod-ml-train-llm")
    assert _visible_sections(dom) == ["pod-ml-train-llm"]
    assert "Insufficient memory, Insufficient nvidia.com/gpu" in dom
    assert re.search(r"<title>[^<]* - pod-ml-train-llm</title>", dom)
    console = [line for line in (log + log_pod).splitlines() if ":CONSOLE" in line]
    assert console == []


def test_kubesched_report_makes_the_pages_from_a_decisions_file_alone(tmp_path):
    record = tmp_path / "decisions.jsonl"
    done = CliRunner().invoke(app, ["simulate", "-f", str(ROOT / "examples/cluster"), "--record", str(record)])
    assert done.exit_code == 0, done.output
    done = CliRunner().invoke(app, ["report", "--decisions", str(record), "-o", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    text = (tmp_path / "out/decisions.html").read_text()
    # shop/canary-1 waits for its scheduling gate: PreEnqueue's line says so
    assert "about 11 pod(s): 9 scheduled, 1 pending, 1 held at PreEnqueue" in text
    assert "held at PreEnqueue by SchedulingGates" in text
    page = text[text.index('id="pod-ml-train-llm"'):]
    assert "Filter: 6 node(s) evaluated, 0 feasible" in page[:page.index("</section>")]


def test_the_node_table_marks_cordoned_and_tainted_nodes(tmp_path):
    text = _report(tmp_path).read_text()
    nodes = text[text.index("<h2>Nodes</h2>"):]
    rows = dict(re.findall(r"<tr><td>([\w-]+)</td><td>(.*?)</td>", nodes[:nodes.index("</table>")]))
    assert rows["big-b2"] == '<span class="pending">cordoned</span>'
    assert rows["gpu-a3"].startswith('<span class="pending">tainted nvidia.com/gpu')
    assert rows["worker-a1"] == "ready"
