"""Soak benchmark of `kubesched run`: pods created in bursts, against the embedded daemon and through an API server.

    python benchmarks/soak.py                          # both modes, 10,000 pods each
    python benchmarks/soak.py --mode apiserver --pods 2000 --burst 200 --interval 0.2
    python benchmarks/soak.py -o json
    python benchmarks/soak.py --mode apiserver --pods 1000 --latency 0.05 --binding-workers 0   # before/after

- ``embedded``: a Daemon on the in-memory cluster in this process (real clock,
  threads, HTTP endpoints); a producer thread creates the pods.
- ``apiserver``: ``kubesched run --kubeconfig`` in a subprocess against the
  fake API server of the tests (tests/fake_apiserver.py) in this process: every
  list, watch, binding and event goes over HTTP through the Kubernetes client.

Pods (100m CPU, 128Mi) are created ``--burst`` at a time every ``--interval``
seconds on ``--nodes`` nodes that hold them all.  Reported: pods/s from the
first creation to the last binding, the scheduling latency per pod (creation to
binding, as the cluster sees it) p50/p99, the daemon's peak RSS, and how many
pods are left pending (must be 0: they all fit).  ``SOAK_PROFILE="-m cProfile
-o daemon.prof"`` runs the apiserver mode's daemon under a profiler.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from machine_speed import factor_note, machine_factor

ROOT = Path(__file__).resolve().parents[1]
#: Extra interpreter arguments for the daemon subprocess, e.g. SOAK_PROFILE="-m cProfile -o daemon.prof".
PROFILE = os.environ.get("SOAK_PROFILE", "").split()
sys.path.insert(0, str(ROOT / "tests"))

from kubesched.core.clock import RealClock  # noqa: E402
from kubesched.core.cluster.client import MODIFIED  # noqa: E402
from kubesched.core.cluster.memory import MemoryCluster  # noqa: E402
from kubesched.testing import device, device_class, node, pod, resource_claim, resource_slice  # noqa: E402


class Tracker:
    """Creation and binding times (monotonic seconds) per pod, from the cluster's own watch."""

    def __init__(self, cluster: MemoryCluster):
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.done = threading.Event()
        self.expected = 0
        cluster.watch("Pod", cluster.resource_version(), self._on_event)

    def _on_event(self, event) -> None:
        if event.type == MODIFIED and event.obj.spec.node_name and event.obj.metadata.name not in self.bound:
            self.bound[event.obj.metadata.name] = time.monotonic()
            if len(self.bound) >= self.expected:
                self.done.set()

    def produce(self, cluster: MemoryCluster, count: int, burst: int, interval: float, claims: bool = False) -> None:
        """Create ``count`` pods, ``burst`` at a time, one burst every ``interval`` seconds;
        ``claims``: each with a ResourceClaim of its own for one device."""
        self.expected = count
        start = time.monotonic()
        for first in range(0, count, burst):
            for i in range(first, min(first + burst, count)):
                name = f"soak-{i:05d}"
                if claims:
                    cluster.create(resource_claim(f"{name}-gpu"))
                self.created[name] = time.monotonic()
                cluster.create(pod(name, cpu="100m", memory="128Mi", scheduler_name="kubesched",
                                   claims=[f"{name}-gpu"] if claims else ()))
            pause = start + (first // burst + 1) * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)  # pacing the bursts is the point of a soak

    def report(self, mode: str, count: int, timeout_hit: bool, peak_rss_kib: int) -> dict:
        latencies = sorted(self.bound[n] - self.created[n] for n in self.bound if n in self.created)
        first, last = min(self.created.values()), max(self.bound.values(), default=0.0)

        def pct(p: float) -> float:
            return latencies[min(len(latencies) - 1, max(0, int(len(latencies) * p / 100 + 0.999999) - 1))]

        return {
            "mode": mode, "pods": count, "bound": len(self.bound), "pending": count - len(self.bound),
            "seconds": round(last - first, 2), "pods_per_second": round(len(self.bound) / (last - first), 1),
            "latency_p50_ms": round(pct(50) * 1000, 1), "latency_p99_ms": round(pct(99) * 1000, 1),
            "latency_max_ms": round(latencies[-1] * 1000, 1), "peak_rss_mib": round(peak_rss_kib / 1024, 1),
            "timed_out": timeout_hit,
        }


def nodes(cluster: MemoryCluster, count: int, devices: int = 0) -> None:
    """``count`` nodes; ``devices``: that many DRA devices on each (a DeviceClass and a ResourceSlice per node)."""
    if devices:
        cluster.create(device_class())
    for i in range(count):
        cluster.create(node(f"node-{i:04d}", cpu="32", memory="256Gi", pods=110))
        if devices:
            cluster.create(resource_slice(f"node-{i:04d}", [device(f"gpu-{d}") for d in range(devices)]))


def config_doc(leader_elect: bool) -> dict:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": leader_elect, "resourceName": "kubesched"},
            "clientConnection": {"qps": 0, "burst": 0},
            "profiles": [{"schedulerName": "kubesched"}]}


def run_embedded(args) -> dict:
    from kubesched.core.framework.config import load_config
    from kubesched.drivers.daemon import Daemon
    from kubesched.plugins import DEFAULT_PLUGINS

    cluster = MemoryCluster(RealClock())
    nodes(cluster, args.nodes)
    tracker = Tracker(cluster)
    daemon = Daemon(cluster, load_config(config_doc(False), DEFAULT_PLUGINS), embedded=True, port=0)
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    daemon.ready.wait(60)
    tracker.produce(cluster, args.pods, args.burst, args.interval)
    finished = tracker.done.wait(args.timeout)
    daemon.stop()
    thread.join(60)
    return tracker.report("embedded", args.pods, not finished, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def run_apiserver(args) -> dict:
    from fake_apiserver import FakeAPIServer

    with FakeAPIServer() as server, tempfile.TemporaryDirectory() as tmp:
        if args.latency:
            for method in ("POST", "PUT", "DELETE"):
                server.delay(method, r".", args.latency)
        nodes(server.cluster, args.nodes, devices=8 if args.claims else 0)
        tracker = Tracker(server.cluster)
        config = Path(tmp) / "config.yaml"
        config.write_text(yaml.safe_dump(config_doc(True)))
        daemon = subprocess.Popen(
            [sys.executable, *PROFILE, "-m", "kubesched.cli", "run", "--config", str(config),
             "--kubeconfig", server.kubeconfig(Path(tmp) / "kubeconfig"), "--port", "0", "--log-format", "json",
             "--insecure-serving", "--binding-workers", str(args.binding_workers)],
            stderr=subprocess.PIPE, text=True)
        try:
            for line in daemon.stderr:  # wait until its caches are synced
                if json.loads(line).get("msg") == "caches synced":
                    break
            threading.Thread(target=lambda: [None for _ in daemon.stderr], daemon=True).start()
            tracker.produce(server.cluster, args.pods, args.burst, args.interval, claims=args.claims)
            finished = tracker.done.wait(args.timeout)
            peak = peak_rss_kib(daemon.pid)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)
        finally:
            if daemon.poll() is None:
                daemon.kill()
        return tracker.report("apiserver", args.pods, not finished, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("embedded", "apiserver", "both"), default="both")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--burst", type=int, default=1000, help="pods per burst")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between bursts")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=600.0, help="give up this long after the last burst")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every write (apiserver mode)")
    parser.add_argument("--binding-workers", type=int, default=16, help="kubesched run --binding-workers")
    parser.add_argument("--claims", action="store_true",
                        help="apiserver mode: each pod with a ResourceClaim for one of 8 devices per node")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    args = parser.parse_args()
    factor = machine_factor()
    results = []
    if args.mode in ("embedded", "both"):
        results.append(run_embedded(args))
    if args.mode in ("apiserver", "both"):
        results.append(run_apiserver(args))
    if args.output == "json":
        print(json.dumps([{**row, "machine_factor": round(factor, 3)} for row in results], indent=2))
        return
    print(factor_note(factor))
    columns = ("mode", "pods", "bound", "pending", "seconds", "pods_per_second", "latency_p50_ms",
               "latency_p99_ms", "latency_max_ms", "peak_rss_mib")
    print("  ".join(f"{c:>15}" for c in columns))
    for row in results:
        print("  ".join(f"{row[c]!s:>15}" for c in columns))


if __name__ == "__main__":
    main()
