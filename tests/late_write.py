"""The late write of a deposed leader, against the fake API server (issue 29's case).

Replica A, leader, sends ``PUT resourceclaims/c1/status`` (gpu-0 for pod1); the network holds it and
its retries (:meth:`FakeAPIServer.hold_when`); then A stalls past its renew deadline (as a process
paused that long: A's clock jumps by ``renewDeadline``), so A loses the lease and stops; pod2 arrives;
B takes over once it has seen the lease unchanged for ``leaseDuration`` (B's clock jumps by it), gives
gpu-0 to claim c2 and binds pod2; then A's held request is delivered and accepted (c1 unchanged since A
read it), while B's own write of c1 is slowed down so that A's lands first.  Whatever the order, no
device may end under two running pods and no pod may be bound twice.  The lease is kube-scheduler's
default (15 s, renew deadline 10 s): a loaded machine's pauses never cost a replica its lease before the
test takes it away.  :func:`late_write_run` is one run; tests/test_late_write.py runs it once, and
benchmarks/late_write.py 20 times in a row.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml

from fake_apiserver import FakeAPIServer
from kubesched.core.api import from_manifest
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.framework.config import load_config
from kubesched.drivers.daemon import Daemon
from kubesched.plugins import DEFAULT_PLUGINS

GPUS = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "leaderElection": {"leaderElect": True, "resourceName": "kubesched", "resourceNamespace": "kube-system",
                             "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "250ms"},
          "clientConnection": {"qps": 0}, "podMaxBackoffSeconds": 1,  # pod1 retried 1 s after its allocation is withdrawn
          "profiles": [{"schedulerName": "default-scheduler"}]}


def _claim(name: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def _pod(name: str, claim: str, priority: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}}


def _daemon(server: FakeAPIServer, scratch: Path, name: str, token: str) -> Daemon:
    cluster = KubernetesCluster.from_kubeconfig(server.kubeconfig(scratch / f"{name}.kubeconfig", token), qps=0,
                                                backoff_factor=0.01, watch_backoff=(0.01, 0.1), request_timeout=1.0)
    return Daemon(cluster, load_config(CONFIG, DEFAULT_PLUGINS), embedded=False, identity=name, port=None,
                  takeover_grace=0.0)  # no grace: the late write meets the new leader's work


def _jumping_clock(daemon: Daemon) -> Callable[[float], None]:
    """Make ``daemon``'s clock (its elector's, scheduler's and timers') jumpable; returns ``jump(seconds)``,
    which moves that clock forward at once, as if the replica had been paused that long."""
    offset = [0.0]
    daemon.clock.now = lambda: time.time() + offset[0]  # type: ignore[method-assign]

    def jump(seconds: float) -> None:
        offset[0] += seconds
        daemon.informers.wakeup.set()
    return jump


def _running(daemon: Daemon):
    import threading

    result: dict[str, int] = {}
    thread = threading.Thread(target=lambda: result.setdefault("code", daemon.run()), daemon=True)
    thread.start()
    return thread, result


def late_write_run() -> dict[str, object]:
    """One run; returns what it ended with: ``devices`` (claim -> devices of claims reserved for a bound
    pod), ``shared`` (devices under two running pods), ``bindings`` (pods bound more than once: Scheduled
    events),
    ``conflict_events`` (DeviceAllocatedTwice events), ``old_exit`` (A's exit code)."""
    with tempfile.TemporaryDirectory() as scratch, FakeAPIServer() as server:
        for doc in yaml.safe_load_all(GPUS):
            server.cluster.create(from_manifest(doc))
        for doc in (_claim("c1"), _claim("c2"), _pod("pod1", "c1", 1)):
            server.cluster.create(from_manifest(doc))
        old, new = "fake-token-a", "fake-token-b"
        server.hold_when("PUT", r"/resourceclaims/c1/status$", old)
        a = _daemon(server, Path(scratch), "a", old)
        a_jump = _jumping_clock(a)
        a_thread, a_result = _running(a)
        server.wait_until(lambda: server.holding(old), timeout=30)
        # A stalled: its next renewal is past the deadline, so A loses its lease and stops.  The jump moves
        # A's clock alone, not the real-time bound of a renewal already under way: one that reads the clock
        # after the jump still succeeds (a paused process's would have timed out), so A stalls again
        for _ in range(30):
            a_jump(a.elector.config.renew_deadline)
            a_thread.join(1.0)
            if not a_thread.is_alive():
                break
        server.cluster.create(from_manifest(_pod("pod2", "c2", 100)))
        server.delay("PUT", r"/resourceclaims/c1/status$", 0.5)  # B's write of c1 comes after A's
        b = _daemon(server, Path(scratch), "b", new)
        b_jump = _jumping_clock(b)
        b_thread, _ = _running(b)
        server.wait_until(lambda: b.elector.holder == "a", timeout=30)  # B saw A's lease...
        b_jump(a.elector.config.lease_duration)  # ...and then saw it unchanged for its whole duration
        server.wait_until(lambda: bool(server.cluster.get("Pod", "pod2", "default").spec.node_name), timeout=30)
        server.deliver(old)  # A's write lands now, accepted
        server.wait_until(lambda: bool(server.cluster.get("Pod", "pod1", "default").spec.node_name), timeout=30)
        b.stop()
        b_thread.join(30)
        running = {p.metadata.name for p in server.cluster.list("Pod").items if p.spec.node_name}
        devices: dict[str, list[str]] = {}
        for claim in server.cluster.list("ResourceClaim").items:
            users = {ref.name for ref in claim.status.reserved_for} & running
            if claim.status.allocation is not None and users:
                devices[claim.metadata.name] = [r.device for r in claim.status.allocation.devices.results]
        held = [d for names in devices.values() for d in names]
        bindings: dict[str, int] = {}  # a Scheduled event per binding the API server accepted
        for event in list(server.events.values()):
            if event["reason"] == "Scheduled":
                pod = event["regarding"]["name"]
                bindings[pod] = bindings.get(pod, 0) + 1
        return {"devices": devices, "shared": sorted({d for d in held if held.count(d) > 1}),
                "bindings": {pod: n for pod, n in bindings.items() if n > 1},
                "conflict_events": [e.message for e in server.cluster.list("Event").items
                                    if e.reason == "DeviceAllocatedTwice"]
                + [e["note"] for e in server.events.values() if e.get("reason") == "DeviceAllocatedTwice"],
                "old_exit": a_result.get("code")}
