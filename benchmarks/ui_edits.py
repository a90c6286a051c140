#!/usr/bin/env python3
"""What an edit costs `kubesched ui` after many: N edits posted to a running server, as its pages post them.

    python benchmarks/ui_edits.py                # 1,000 edits of examples/cluster
    python benchmarks/ui_edits.py --edits 3000
    python benchmarks/ui_edits.py --now 5000:10000   # "What if, now" node edits on a generated cluster

`kubesched ui -f examples/cluster` runs in its own process; the script
takes the token from a page and posts N edits of one node's allocatable CPU
(each starts a re-simulation, which the next edit cancels), then undoes as
far as the history allows.  The table: seconds for all edits, the median
milliseconds of an edit among the first, the middle and the last 100
(the history's cost is flat; what grows at first is the server's
background re-simulation sharing the process), the edits the history
keeps for undo, and the server's peak RSS (VmHWM).  Issue 36 measured 76 s
for 1,000 edits, the last at 123 ms each, before the history was bounded.

``--now NODES:PODS``: the "What if, now" panel's node edits instead, on
``ui_speed.py``'s generated cluster (simulated once, the server in this
process): each row is a node what-if posted as the node page posts it and
the /now page it leads to (the application's milliseconds from
``Server-Timing``, both requests summed; median of ``--repeat``, each
undone after), beside issue 39's target (a UI node edit answered <= 200 ms
at factor 1.0 on 5,000 nodes / 10,000 pods).  The first row is the run's
first what-if, posted right after the first page (no fork: answered on the
run's own end state and rolled back); the last two rows are a **Keep** (the
run's first forks its end state, O(cluster), and applies the what-if there
again: POST /now/keep + the page) and a what-if on that fork after it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import factor_note, machine_factor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def request(port: int, method: str, path: str, fields: dict | None = None, token: str = "") -> tuple[int, str]:
    """(status, body) of one request (see :func:`timed`)."""
    return timed(port, method, path, fields, token)[1:]


def timed(port: int, method: str, path: str, fields: dict | None = None, token: str = "") -> tuple[float, int, str]:
    """(the application's milliseconds from ``Server-Timing``, status, body) of one request."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        headers = {"Origin": f"http://127.0.0.1:{port}"}
        body = None
        if fields is not None:
            body = urllib.parse.urlencode({"token": token, **fields}).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        found = re.search(r"dur=([0-9.]+)", response.getheader("server-timing") or "")
        return float(found.group(1)) if found else float("nan"), response.status, text
    finally:
        connection.close()


#: issue 39's target: a UI node edit answered, milliseconds at factor 1.0 on 5,000 nodes / 10,000 pods
NOW_TARGET_MS = 200.0


def now_edits(nodes: int, pods: int, repeat: int) -> int:
    """The "What if, now" rows (see the module docstring)."""
    import tempfile

    from ui_speed import generate, serve

    factor = machine_factor()
    with tempfile.TemporaryDirectory() as scratch:
        generate(Path(scratch), nodes, pods)
        runs, outcome, server, _ = serve(Path(scratch))
        port = int(urllib.parse.urlsplit(server.url).port or 0)
        try:
            token = re.search(r'name="token" value="([^"]+)"', timed(port, "GET", "/now")[2]).group(1)
            busiest = outcome.node_names[int(outcome.pod_counts.argmax())]

            def answer(fields: dict, node: str = busiest) -> float:
                post_ms, status, _ = timed(port, "POST", f"/now/node/{node}", fields, token)
                assert status == 303, status
                page_ms, status, page = timed(port, "GET", "/now")
                assert status == 200 and 'id="now-applied"' in page, page[:300]
                timed(port, "POST", "/now/undo", {}, token)
                return post_ms + page_ms

            rows = [("the run's first what-if, posted as the page shows: cordon", [answer({"action": "cordon"})])]
            for label, fields in (("cordon", {"action": "cordon"}), ("drain (busiest node)", {"action": "drain"}),
                                  ("delete the node", {"action": "delete"}),
                                  ("add 10 nodes like it", {"action": "add", "count": "10"})):
                rows.append((label, [answer(fields) for _ in range(repeat)]))
            timed(port, "POST", f"/now/node/{busiest}", {"action": "cordon"}, token)
            keep_ms, status, _ = timed(port, "POST", "/now/keep", {}, token)
            assert status == 303, status
            rows.append(("keep it (the run's first Keep: forks the end state; not an edit)",
                         [keep_ms + timed(port, "GET", "/now")[0]]))
            rows.append(("after a Keep, on the fork: drain (busiest node)",
                         [answer({"action": "drain"}) for _ in range(repeat)]))
        finally:
            server.stop()
            runs.close()
    print(f"What if, now on {len(outcome.node_names):,} nodes / {len(outcome.pods):,} pods "
          f"({outcome.bound:,} scheduled); the run {outcome.wall_seconds:.1f} s; {factor_note(factor)}")
    print("| node what-if | server ms (POST + /now) | at factor 1.0 | target | met |")
    print("|---|---:|---:|---:|---|")
    for label, costs in rows:
        ms = statistics.median(costs)
        if label.startswith("keep"):  # not an edit: no target
            print(f"| {label} | {ms:.1f} | {ms / factor:.1f} | - | - |")
            continue
        print(f"| {label} | {ms:.1f} | {ms / factor:.1f} | {NOW_TARGET_MS:.0f} | "
              f"{'yes' if ms / factor <= NOW_TARGET_MS else 'NO'} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--now", default="", metavar="NODES:PODS")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.now:
        nodes, _, pods = args.now.partition(":")
        return now_edits(int(nodes), int(pods or 2 * int(nodes)), args.repeat)
    factor = machine_factor()
    process = subprocess.Popen([sys.executable, "-m", "kubesched.cli", "ui", "-f", str(ROOT / "examples/cluster"),
                                "--no-open", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(urllib.parse.urlsplit(process.stdout.readline().split()[2]).port or 0)
        token = re.search(r'name="token" value="([^"]+)"', request(port, "GET", "/whatif")[1]).group(1)
        costs = []
        started = time.perf_counter()
        for i in range(args.edits):
            before = time.perf_counter()
            status, _ = request(port, "POST", "/edit/node/worker-a1", {"allocatable.cpu": str(4 + i % 7)}, token)
            assert status == 303, status
            costs.append(time.perf_counter() - before)
        total = time.perf_counter() - started
        kept = json.loads(request(port, "GET", "/api/status")[1])["edits"]
        peak = int(re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{process.pid}/status").read_text()).group(1))
    finally:
        process.terminate()
        process.wait(timeout=60)
    middle = len(costs) // 2
    print("| edits | seconds | ms/edit, first 100 | middle 100 | last 100 | kept for undo | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.edits} | {total:.1f} | {1000 * statistics.median(costs[:100]):.1f} | "
          f"{1000 * statistics.median(costs[middle - 50:middle + 50]):.1f} | "
          f"{1000 * statistics.median(costs[-100:]):.1f} | {kept} | {peak / 1024:.0f} |")
    print(factor_note(factor))
    return 0


if __name__ == "__main__":
    sys.exit(main())
