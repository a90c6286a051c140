#!/usr/bin/env python3
"""Does the leader keep its lease under its own burst?  (issue 36, item 6)

    python benchmarks/lease_burst.py            # 10 runs of 320 pods
    python benchmarks/lease_burst.py --runs 3 --pods 160

Per run: the fake API server of the tests (tests/fake_apiserver.py, in this
process, 20 ms on every pods/binding call), a daemon whose client has
``qps`` 50 / ``burst`` 100 with 16 binding workers, leader election with a
2 s lease, 1.5 s renew deadline and 250 ms retry period.  Once it leads,
``--pods`` pods are created at once; the run ends when all are bound or the
daemon exits.  Every binding, Scheduled event and claim write competes for
the scheduler client's tokens; the lease has a client of its own
(kube-scheduler's leader election client), so its renewals never wait for
them.  A run passes when the daemon kept the lease (did not exit, the lease
still names it with no transition) and bound every pod exactly once.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from pathlib import Path

from machine_speed import factor_note, machine_factor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

LEASE = {"leaseDuration": "2s", "renewDeadline": "1500ms", "retryPeriod": "250ms"}


def one_run(scratch: Path, pods: int) -> dict:
    from fake_apiserver import FakeAPIServer
    from kubesched.core.cluster.kube import KubernetesCluster
    from kubesched.core.framework.config import API_VERSION, KIND, load_config
    from kubesched.drivers.daemon import Daemon
    from kubesched.plugins import DEFAULT_PLUGINS
    from kubesched.testing import node, pod

    document = {"apiVersion": API_VERSION, "kind": KIND,
                "leaderElection": {"leaderElect": True, "resourceName": "kubesched",
                                   "resourceNamespace": "kube-system", **LEASE},
                "clientConnection": {"qps": 50, "burst": 100},
                "profiles": [{"schedulerName": "kubesched"}]}
    with FakeAPIServer() as server:
        for i in range(4):
            server.cluster.create(node(f"n{i}", cpu="200", pods="200"))
        server.delay("POST", r"/binding$", 0.02)
        cluster = KubernetesCluster.from_kubeconfig(server.kubeconfig(scratch / "kubeconfig"), qps=50, burst=100)
        daemon = Daemon(cluster, load_config(document, DEFAULT_PLUGINS), embedded=False, identity="leader",
                        port=None, binding_workers=16, takeover_grace=0.0)
        code: list[int] = []

        def run() -> None:
            code.append(daemon.run())
            server.changed.set()  # the wait below looks again

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        server.wait_until(lambda: daemon.is_leader(), timeout=30)
        names = [f"p{i}" for i in range(pods)]
        started = time.monotonic()
        for name in names:
            server.cluster.create(pod(name, cpu="100m", scheduler_name="kubesched"))

        def done() -> bool:
            return bool(code) or all(server.cluster.get("Pod", n, "default").spec.node_name for n in names)

        server.wait_until(done, timeout=300)
        took = time.monotonic() - started
        lease = server.cluster.get("Lease", "kubesched", "kube-system").spec
        bound = sum(bool(server.cluster.get("Pod", n, "default").spec.node_name) for n in names)
        bindings = server.count("POST", r"/binding$")
        kept = not code and lease.holder_identity == "leader" and lease.lease_transitions == 0
        daemon.stop()
        thread.join(30)
    return {"seconds": took, "bound": bound, "bindings": bindings, "kept": kept,
            "exit": code[0] if code else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pods", type=int, default=320)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    print(factor_note(machine_factor(3)))
    print("| run | seconds | pods bound | binding calls | lease kept |")
    print("|---|---|---|---|---|")
    kept = 0
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as scratch:
            outcome = one_run(Path(scratch), args.pods)
        ok = outcome["kept"] and outcome["bound"] == args.pods and outcome["bindings"] == args.pods
        kept += ok
        print(f"| {run} | {outcome['seconds']:.1f} | {outcome['bound']}/{args.pods} | {outcome['bindings']} | "
              f"{'yes' if outcome['kept'] else 'NO (exit %s)' % outcome['exit']} |")
    print(f"{kept}/{args.runs} runs kept the lease and bound every pod once")
    return 0 if kept == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
