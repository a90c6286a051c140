#!/usr/bin/env python3
"""How long a standby replica takes to lead after the leader is SIGKILLed,
with deploy/configmap.yaml's leader election settings (leaseDuration 15s,
renewDeadline 10s, retryPeriod 2s), against the fake API server of the
tests (tests/fake_apiserver.py) in this process.

    python benchmarks/takeover.py            # 3 runs
    python benchmarks/takeover.py --runs 5

Per run: the time from the SIGKILL to the standby holding the lease, and to
the first pod created after the kill being bound by it.  A killed leader
cannot release its lease, so the standby waits for the lease to run out
(leaseDuration after the last renewal it saw) plus up to one jittered
retry period: the expected bound is 15 + 2 x 1.2 = 17.4 s to hold the lease.
It then waits the takeover grace (``--takeover-grace``, default 0) before
it schedules: the first binding comes about 16 s after the kill (measured
15.7 and 16.4 s at machine factor 2.92; ``--grace 30``: about 46 s).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from machine_speed import factor_note, machine_factor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def one_run(scratch: Path, grace: float | None = None) -> tuple[float, float]:
    from fake_apiserver import FakeAPIServer
    from kubesched.testing import node, pod

    config = yaml.safe_load((ROOT / "deploy/configmap.yaml").read_text())["data"]["config.yaml"]
    document = yaml.safe_load(config)
    document.pop("clientConnection", None)
    path = scratch / "config.yaml"
    path.write_text(yaml.safe_dump(document))
    name = document["profiles"][0]["schedulerName"]
    with FakeAPIServer() as server:
        server.cluster.create(node("n1", cpu="64"))

        def holder() -> str:
            try:
                return server.cluster.get("Lease", document["leaderElection"].get("resourceName", "kubesched"),
                                          document["leaderElection"].get("resourceNamespace", "kube-system")
                                          ).spec.holder_identity
            except Exception:  # noqa: BLE001 - not created yet
                return ""

        def start(identity: str) -> subprocess.Popen:
            kubeconfig = server.kubeconfig(scratch / f"{identity}.kubeconfig")
            extra = [] if grace is None else ["--takeover-grace", str(grace)]
            return subprocess.Popen([sys.executable, "-m", "kubesched.cli", "run", *extra, "--config", str(path),
                                     "--kubeconfig", kubeconfig, "--port", "0", "--insecure-serving"],
                                    stderr=subprocess.DEVNULL)

        first = start("first")
        server.wait_until(lambda: holder() != "", timeout=60)
        leader = holder()
        second = start("second")
        time.sleep(3)  # the standby has seen the lease
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        first.wait(10)
        server.cluster.create(pod("after-kill", cpu="1", scheduler_name=name))
        server.wait_until(lambda: holder() not in ("", leader), timeout=60)
        lead = time.monotonic() - killed
        server.wait_until(lambda: bool(server.cluster.get("Pod", "after-kill", "default").spec.node_name), timeout=60)
        bound = time.monotonic() - killed
        second.send_signal(signal.SIGTERM)
        second.wait(30)
    return lead, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grace", type=float, default=None, help="--takeover-grace (default: the daemon's)")
    args = parser.parse_args()
    print(factor_note(machine_factor()))
    print(f"{'run':>4} {'leads after (s)':>16} {'binds after (s)':>16}")
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as scratch:
            lead, bound = one_run(Path(scratch), args.grace)
        print(f"{run:>4} {lead:16.1f} {bound:16.1f}")


if __name__ == "__main__":
    main()
