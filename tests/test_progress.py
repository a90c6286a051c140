"""Progress of long runs: the drivers report through callbacks, the CLI draws a bar on a terminal and a
plain line every few seconds elsewhere."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubesched.cli.progress import Reporter
from kubesched.drivers import harness
from kubesched.drivers.simulation import Simulation

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"}}}


def pods(count: int) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}
            for i in range(count)]


def test_a_simulation_reports_reading_creating_and_scheduling(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(harness, "PROGRESS_STEPS", 5)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump_all([NODE, *pods(1200)]))
    seen: list[tuple[str, int, int]] = []
    sim = Simulation.from_paths([manifest], progress=lambda *report: seen.append(report))
    sim.run(progress=lambda *report: seen.append(report))
    phases = [phase for phase, _, _ in seen]
    assert phases.index("reading") < phases.index("creating") < phases.index("scheduling")
    assert ("reading", 1000, 0) in seen and ("creating", 500, 1201) in seen
    scheduling = [(done, total) for phase, done, total in seen if phase == "scheduling"]
    assert scheduling == sorted(scheduling) and {total for _, total in scheduling} == {1200}
    assert scheduling[-1][0] >= 1000  # every pod is attempted; 10 fit on the one node
    assert sim.scheduler.stats.bound == 10


def test_elsewhere_than_a_terminal_a_line_now_and_then_and_one_at_the_end(capsys):
    with Reporter("simulate", unit="pods", terminal=False, period=0) as progress:
        progress.update(500, 2000, "simulate: scheduling attempts")
        progress.update(2000, 2000)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("simulate: scheduling attempts: 500/2,000 pods (")
    assert lines[-1].startswith("simulate: scheduling attempts: 2,000/2,000 pods (") and len(lines) == 3
    with Reporter("perf", terminal=False, period=3600) as progress:
        progress.status("SchedulingBasic/500Nodes: 120 pods scheduled")
    assert capsys.readouterr().err == ""  # a short run prints nothing


def test_on_a_terminal_a_bar_is_drawn_and_cleared(capsys):
    with Reporter("trace replay", unit="pods", terminal=True) as progress:
        progress.update(100, 8152)
        progress.status("loading")
    assert "Traceback" not in capsys.readouterr().err
