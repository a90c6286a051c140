#!/usr/bin/env python3
"""How fast `kubesched ui` answers on a big cluster: a generated 5,000-node / 10,000-pod scenario.

    python benchmarks/ui_speed.py                      # 5,000 nodes, 10,000 pods
    python benchmarks/ui_speed.py --nodes 500 --pods 1000

The cluster: nodes in 3 zones and racks of 40; every 10th node has 8 GPUs
and a NoSchedule taint, every 97th is cordoned.  Pods ask 0.5-4 CPUs and
1-16 GiB; every 20th wants 2 GPUs (tolerating the taint) and every 200th
16 GPUs, which no node has (they stay Pending with their reasons summed
per Filter group).  The scenario is simulated once (its wall time is
printed), then the server runs on loopback and each page is requested 5
times: the table gives the median of the application's own time (its
``Server-Timing`` header: routing, the page's data, the template), the
rows of the largest table on the page, and the targets of issue 31 at
factor 1.0 (cluster page under 1 s, a pod page under 200 ms, no table over
~200 rows) converted to this machine.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import factor_note, machine_factor  # noqa: E402

#: (page, address, target seconds at factor 1.0 or None)
REPEATS = 5
ROW_LIMIT = 200


def generate(directory: Path, nodes: int, pods: int) -> None:
    """Write nodes.yaml and pods.yaml (see the module docstring) into ``directory``."""
    items = []
    for i in range(nodes):
        gpu = i % 10 == 0
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": {
            "kubernetes.io/hostname": f"node-{i:05d}", "topology.kubernetes.io/zone": f"zone-{i % 3}",
            "topology.kubernetes.io/rack": f"rack-{i // 40:03d}"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110",
                                       **({"nvidia.com/gpu": "8"} if gpu else {})},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
        spec: dict = {}
        if i % 97 == 5:
            spec["unschedulable"] = True
        if gpu:
            spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        if spec:
            node["spec"] = spec
        items.append(node)
    (directory / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    items = []
    for j in range(pods):
        requests = {"cpu": f"{500 + (j % 8) * 500}m", "memory": f"{1 + j % 16}Gi"}
        spec = {"containers": [{"name": "main", "image": "registry.example.com/app:1", "resources": {"requests": requests}}]}
        if j % 20 == 0:
            requests["nvidia.com/gpu"] = "16" if j % 200 == 0 else "2"
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"pod-{j:05d}", "namespace": "default", "labels": {"app": f"app-{j % 50}"}}, "spec": spec})
    (directory / "pods.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))


def timed_get(url: str) -> tuple[float, str]:
    """(the application's seconds from its Server-Timing header, the page)."""
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read().decode()
        timing = re.search(r"dur=([0-9.]+)", response.headers.get("server-timing", ""))
    return float(timing.group(1)) / 1000 if timing else float("nan"), body


def largest_table(page: str) -> int:
    """Rows of the largest table on ``page``."""
    return max((table.count("<tr") for table in page.split("</table>")), default=0)


def serve(directory: Path) -> tuple[Any, Any, Any, float]:
    """The UI of ``directory``'s manifests, run once and served on loopback: ``(runs, the run's outcome, the
    started UiServer, seconds spent reading the files)``; the caller stops the server and closes the runs."""
    from kubesched.ui.runs import Runs
    from kubesched.ui.server import UiServer

    started = time.perf_counter()
    runs = Runs([directory])
    parsed = time.perf_counter() - started
    runs.start()
    runs.wait(0)
    outcome = runs.current()
    assert outcome is not None, runs.error()
    server = UiServer(runs, watch=False)
    server.start()
    return runs, outcome, server, parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    args = parser.parse_args()
    factor = machine_factor()
    with tempfile.TemporaryDirectory() as scratch:
        generate(Path(scratch), args.nodes, args.pods)
        runs, outcome, server, parsed = serve(Path(scratch))
        pending = outcome.pending[0].key
        bound = next(p.key for p in outcome.pods if p.spec.node_name)
        busiest = outcome.node_names[int(outcome.pod_counts.argmax())]
        pages = [
            ("cluster page", "", 1.0), ("cluster page sorted by cpu, page 20", "?sort=cpu&desc=1&page=20", 1.0),
            ("pod page (Pending)", f"pod/{pending}", 0.2), ("pod page (Scheduled)", f"pod/{bound}", 0.2),
            ("node page (busiest)", f"node/{busiest}", None), ("devices", "devices", None),
            ("timeline", "timeline", None), ("timeline at T", f"timeline/state?t={outcome.timeline.duration / 2}", None),
            ("changes panel", "panel/changes", None),
        ]
        rows = []
        for label, path, target in pages:
            times, body = [], ""
            for _ in range(REPEATS):
                seconds, body = timed_get(server.url + path)
                times.append(seconds)
            rows.append((label, statistics.median(times), largest_table(body), len(body), target))
        server.stop()
        runs.close()
    print(f"kubesched ui on {len(outcome.node_names):,} nodes, {len(outcome.pods):,} pods "
          f"({outcome.bound:,} scheduled, {len(outcome.pending):,} pending); {factor_note(factor)}")
    print(f"reading the files {parsed:.1f} s; the simulation (every decision recorded) {outcome.wall_seconds:.1f} s "
          f"({outcome.wall_seconds / factor:.1f} s at factor 1.0)")
    print()
    print(f"{'page':<38} {'server ms':>10} {'at 1.0':>8} {'target':>8} {'rows':>6} {'KiB':>6}  met")
    for label, seconds, table_rows, size, target in rows:
        at_one = seconds / factor
        met = (target is None or at_one < target) and table_rows <= ROW_LIMIT
        print(f"{label:<38} {1000 * seconds:>10.1f} {1000 * at_one:>8.1f} "
              f"{'-' if target is None else f'{1000 * target:.0f}':>8} {table_rows:>6} {size / 1024:>6.0f}  "
              f"{'yes' if met else 'NO'}")


if __name__ == "__main__":
    main()
