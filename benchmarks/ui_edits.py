#!/usr/bin/env python3
"""What an edit costs `kubesched ui` after many: N edits posted to a running server, as its pages post them.

    python benchmarks/ui_edits.py                # 1,000 edits of examples/cluster
    python benchmarks/ui_edits.py --edits 3000

`kubesched ui -f examples/cluster` runs in its own process; the script
takes the token from a page and posts N edits of one node's allocatable CPU
(each starts a re-simulation, which the next edit cancels), then undoes as
far as the history allows.  The table: seconds for all edits, the median
milliseconds of an edit among the first, the middle and the last 100
(the history's cost is flat; what grows at first is the server's
background re-simulation sharing the process), the edits the history
keeps for undo, and the server's peak RSS (VmHWM).  Issue 36 measured 76 s
for 1,000 edits, the last at 123 ms each, before the history was bounded.
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
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Origin": f"http://127.0.0.1:{port}"}
        body = None
        if fields is not None:
            body = urllib.parse.urlencode({"token": token, **fields}).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=1000)
    args = parser.parse_args()
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
