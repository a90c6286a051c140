"""`kubesched run`: the daemon embedded, against the fake API server, with leader election and SIGTERM.

Real threads and a real HTTP server are involved here, so the tests wait on
conditions (checked whenever the cluster or the server sees a change) with
timeouts, never for fixed times.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import pytest
import yaml

from fake_apiserver import TOKEN, FakeAPIServer, wait_until
from kubesched.core.api.manifests import load_objects
from kubesched.core.api.meta import Condition
from kubesched.core.api.resource_v1 import AllocatedDeviceStatus
from kubesched.core.clock import RealClock
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.framework.config import API_VERSION, KIND, load_config
from kubesched.core.framework.hookspecs import hookimpl
from kubesched.core.framework.registry import Registry
from kubesched.core.framework.status import Code, Status
from kubesched.drivers.daemon import Daemon
from kubesched.drivers.simulation import load_paths
from kubesched.plugins import DEFAULT_PLUGINS
from kubesched.testing import node, pod

ROOT = Path(__file__).resolve().parents[1]
LEASE = {"leaseDuration": "2s", "renewDeadline": "1500ms", "retryPeriod": "250ms"}


def scheduler_config(path: Path | None = None, leader_elect: bool = True, scheduler_name: str = "kubesched",
                     **profile) -> dict:
    doc = {"apiVersion": API_VERSION, "kind": KIND,
           "leaderElection": {"leaderElect": leader_elect, "resourceName": "kubesched",
                              "resourceNamespace": "kube-system", **LEASE},
           "clientConnection": {"qps": 0},
           "profiles": [{"schedulerName": scheduler_name, **profile}]}
    if path is not None:
        path.write_text(yaml.safe_dump(doc))
    return doc


class Running:
    """A Daemon on its own thread; :meth:`stop` stops it and returns run()'s exit code."""

    started: list["Running"] = []

    def __init__(self, daemon: Daemon):
        self.daemon = daemon
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        Running.started.append(self)

    def _run(self) -> None:
        self.code = self.daemon.run()

    def stop(self) -> int:
        self.daemon.stop()
        self.thread.join(30)
        assert not self.thread.is_alive()
        return self.code


@pytest.fixture(autouse=True)
def stop_daemons_left_running(request):
    """A daemon that a failed test left running would go on writing to the
    closed fake server and logging into the output of the tests after it:
    each is stopped when its test ends, before the test's fake server."""
    if "apiserver" in request.fixturenames:
        request.getfixturevalue("apiserver")  # set up before this fixture, so torn down after it
    yield
    while Running.started:
        running = Running.started.pop()
        if running.thread.is_alive():
            running.daemon.stop()
            running.thread.join(30)


def cluster_changes(cluster: MemoryCluster, *kinds: str) -> threading.Event:
    """An Event set on every change of ``kinds`` in ``cluster``."""
    changed = threading.Event()
    for kind in kinds:
        cluster.watch(kind, cluster.resource_version(), lambda _event: changed.set())
    return changed


def get(url: str, token: str | None = None, ca: Path | None = None) -> tuple[int, str]:
    """GET ``url``; over HTTPS the server's certificate is checked against ``ca``
    (the self-signed certificate the daemon wrote) when given."""
    context = None
    if url.startswith("https:"):
        context = ssl.create_default_context(cafile=str(ca) if ca else None)
        if ca is None:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text format."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        sample, _, value = line.rpartition(" ")
        sample_name, _, sample_labels = sample.partition("{")
        got = ",".join(sorted(sample_labels.rstrip("}").split(","))) if sample_labels else ""
        if sample_name == name and got == wanted:
            return float(value)
    raise AssertionError(f"no sample {name}{{{wanted}}}")


def bound(cluster: MemoryCluster, *names: str) -> bool:
    return all(cluster.get("Pod", name, "default").spec.node_name for name in names)


def bound_in(cluster: MemoryCluster, name: str) -> bool:
    """Whether the pod ``name`` (in any namespace) is bound."""
    return any(p.spec.node_name for p in cluster.list("Pod").items if p.metadata.name == name)


# --- embedded -----------------------------------------------------------------------------


def test_embedded_daemon_serves_probes_and_metrics_and_schedules_pods_created_later():
    cluster = MemoryCluster(RealClock())
    load_paths(cluster, [ROOT / "examples" / "cluster"])
    changed = cluster_changes(cluster, "Pod")
    daemon = Daemon(cluster, load_config(None, DEFAULT_PLUGINS), embedded=True, port=0)
    running = Running(daemon)
    assert daemon.ready.wait(10)
    base = f"http://127.0.0.1:{daemon.http.port}"
    assert get(base + "/healthz") == (200, "ok")
    assert get(base + "/readyz") == (200, "ok")
    assert get(base + "/nope")[0] == 404
    cluster.create(pod("later", cpu="100m"))
    wait_until(lambda: bound(cluster, "later"), changed)
    wait_until(lambda: daemon.scheduler.stats.bound == 10, changed)  # 9 of the examples fit, and the new one
    status, text = get(base + "/metrics")
    assert status == 200
    assert metric(text, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler") >= 10
    assert metric(text, "scheduler_pod_scheduling_attempts_count") >= 10
    assert "scheduler_pending_pods{queue=\"unschedulable\"}" in text
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in text
    # upstream's framework, queue and event metrics, with its labels
    assert metric(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Bind",
                  status="Success", profile="default-scheduler") >= 10
    assert metric(text, "scheduler_plugin_evaluation_total", plugin="NodeResourcesFit", extension_point="Filter",
                  profile="default-scheduler") >= 10
    assert metric(text, "scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") >= 10
    assert metric(text, "scheduler_event_handling_duration_seconds_count", event="NodeAdd") >= 1
    assert "# TYPE scheduler_plugin_execution_duration_seconds histogram" in text
    assert running.stop() == 0
    assert daemon.stopped.is_set() and not daemon.healthy()


def test_kubesched_run_embedded_serves_metrics_and_exits_0_on_sigterm(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "run", "--embedded", "-f", str(ROOT / "examples" / "cluster"),
         "--port", "0", "--log-format", "json", "--cert-dir", str(tmp_path / "certs")],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        lines = []
        port = None
        for line in process.stderr:  # the log: wait for the port, then for the caches
            lines.append(json.loads(line))
            port = port or lines[-1].get("port")
            if lines[-1]["msg"] == "caches synced":
                break
        assert port, lines
        # HTTPS with the self-signed certificate it wrote (valid for 127.0.0.1); the embedded
        # cluster has no API server to authenticate against, so /metrics is open there
        ca = tmp_path / "certs" / "kubesched.crt"
        status, text = get(f"https://127.0.0.1:{port}/metrics", ca=ca)
        assert status == 200 and "scheduler_schedule_attempts_total" in text
        assert get(f"https://127.0.0.1:{port}/healthz", ca=ca) == (200, "ok")
        # at the default verbosity, one record per bound pod (9 of the examples fit), with upstream's keys
        binds = [line for line in lines if line["msg"] == "Successfully bound pod to node"]
        guard = threading.Timer(60, process.kill)  # a missing record ends the log instead of hanging the test
        guard.start()
        for line in process.stderr:
            lines.append(json.loads(line))
            if lines[-1]["msg"] == "Successfully bound pod to node":
                binds.append(lines[-1])
            if len(binds) == 9:
                break
        guard.cancel()
        assert len({b["pod"] for b in binds}) == 9, binds
        assert all(b["v"] == 0 and b["node"] and 1 <= b["feasibleNodes"] <= b["evaluatedNodes"] for b in binds), binds
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        last = json.loads(process.stderr.readlines()[-1])
        assert last["msg"] == "stopped" and last["v"] == 0 and "ts" in last
    finally:
        if process.poll() is None:
            process.kill()


def test_kubesched_run_refuses_conflicting_sources(tmp_path):
    result = subprocess.run([sys.executable, "-m", "kubesched.cli", "run", "--embedded", "--in-cluster"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "--embedded and --in-cluster: choose one" in result.stderr


def test_kubesched_run_refuses_serving_files_it_cannot_use(tmp_path):
    from typer.testing import CliRunner

    from kubesched.cli import app

    missing = CliRunner().invoke(app, ["run", "--embedded", "--tls-cert-file", str(tmp_path / "no.crt"),
                                       "--tls-private-key-file", str(tmp_path / "no.key")])
    assert missing.exit_code == 2 and f"--tls-cert-file: {tmp_path / 'no.crt'}: no such file" in missing.output
    alone = CliRunner().invoke(app, ["run", "--embedded", "--tls-cert-file", str(tmp_path / "no.crt")])
    assert alone.exit_code == 2 and "--tls-cert-file and --tls-private-key-file go together" in alone.output


# --- against an API server ------------------------------------------------------------------


def kube_daemon(apiserver: FakeAPIServer, tmp_path: Path, name: str, registry: Registry | None = None,
                record: Path | None = None, token: str = TOKEN, request_timeout: float = 30.0,
                shutdown_grace: float = 10.0, takeover_grace: float = 0.0, **profile) -> Daemon:
    """A daemon on ``apiserver``; ``record``: with ``--record-decisions`` to that file;
    ``token``: how the server tells it apart (:meth:`FakeAPIServer.partition_when`);
    ``takeover_grace``: none unless given (as the daemon's default)."""
    from kubesched.core.observability.decision_log import DecisionPublisher

    cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / f"{name}.kubeconfig", token), qps=0,
                                                backoff_factor=0.01, watch_backoff=(0.01, 0.1),
                                                request_timeout=request_timeout)
    config = load_config(scheduler_config(**profile), DEFAULT_PLUGINS)
    return Daemon(cluster, config, embedded=False, registry=registry, identity=name, port=None,
                  decisions=DecisionPublisher(cluster, record) if record is not None else None,
                  shutdown_grace=shutdown_grace, takeover_grace=takeover_grace)


def lease_holder(apiserver: FakeAPIServer) -> str:
    try:
        return apiserver.cluster.get("Lease", "kubesched", "kube-system").spec.holder_identity
    except Exception:
        return ""


def scheduled_events(apiserver: FakeAPIServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in list(apiserver.events.values()):
        if event["reason"] == "Scheduled":
            counts[event["regarding"]["name"]] = counts.get(event["regarding"]["name"], 0) + 1
    return counts


def test_pods_of_our_profile_are_scheduled_and_bound_through_the_api(apiserver, tmp_path):
    for name in ("n1", "n2"):
        apiserver.cluster.create(node(name, cpu="2"))
    apiserver.cluster.create(pod("ours", cpu="1", scheduler_name="kubesched"))
    apiserver.cluster.create(pod("theirs", cpu="1"))  # default-scheduler's pod: not ours
    daemon = kube_daemon(apiserver, tmp_path, "only")
    running = Running(daemon)
    apiserver.wait_until(lambda: bound(apiserver.cluster, "ours"))
    apiserver.cluster.create(pod("later", cpu="1", scheduler_name="kubesched"))
    apiserver.cluster.create(pod("too-big", cpu="3", scheduler_name="kubesched"))
    apiserver.wait_until(lambda: bound(apiserver.cluster, "later") and scheduled_events(apiserver).get("later"))
    too_big = apiserver.cluster.get("Pod", "too-big", "default")
    apiserver.wait_until(lambda: any(e["reason"] == "FailedScheduling" for e in apiserver.events.values()))
    assert not apiserver.cluster.get("Pod", "theirs", "default").spec.node_name
    assert not too_big.spec.node_name
    assert lease_holder(apiserver) == "only"
    assert running.stop() == 0
    assert lease_holder(apiserver) == ""  # released on the way out
    condition = next(c for c in apiserver.cluster.get("Pod", "too-big", "default").status.conditions
                     if c.type == "PodScheduled")
    assert condition.reason == "Unschedulable" and "Insufficient cpu" in condition.message


def test_published_decisions_explain_a_live_pod_through_the_kubeconfig(apiserver, tmp_path):
    from typer.testing import CliRunner

    from kubesched.cli import app
    from kubesched.core.observability.decision_log import DECISION_ANNOTATION

    for name in ("n1", "n2"):
        apiserver.cluster.create(node(name, cpu="2"))
    apiserver.cluster.create(pod("fits", cpu="1", scheduler_name="kubesched"))
    apiserver.cluster.create(pod("too-big", cpu="3", scheduler_name="kubesched"))
    record = tmp_path / "decisions.jsonl"
    running = Running(kube_daemon(apiserver, tmp_path, "only", record=record))

    def annotated(name: str) -> bool:
        return DECISION_ANNOTATION in apiserver.cluster.get("Pod", name, "default").metadata.annotations

    apiserver.wait_until(lambda: bound(apiserver.cluster, "fits") and annotated("too-big")
                         and '"binding"' in apiserver.cluster.get("Pod", "fits", "default").metadata.annotations.get(
                             DECISION_ANNOTATION, ""))
    kubeconfig = apiserver.kubeconfig(tmp_path / "explain.kubeconfig")
    fits = json.loads(CliRunner().invoke(app, ["explain", "fits", "--kubeconfig", kubeconfig, "-o", "json"]).output)
    assert fits["status"] == "Scheduled" and fits["node"] == apiserver.cluster.get("Pod", "fits", "default").spec.node_name
    too_big = json.loads(CliRunner().invoke(app, ["explain", "too-big", "--kubeconfig", kubeconfig, "-o", "json"]).output)
    assert too_big["status"] == "Pending"
    assert {(g["plugin"], g["reason"], g["count"]) for g in too_big["last"]["filter"]["rejected"]} == {
        ("NodeResourcesFit", "Insufficient cpu", 2)}
    assert running.stop() == 0
    # the record file has every attempt, closed on the way out
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert {(line["pod"], line["phase"]) for line in lines} >= {("default/fits", "scheduling"),
                                                                ("default/fits", "binding"),
                                                                ("default/too-big", "scheduling")}


def test_metrics_need_a_token_the_api_server_authenticates_and_authorizes(apiserver, tmp_path):
    from fake_apiserver import METRICS_TOKEN
    from kubesched.core.observability.serving_cert import self_signed

    cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kubeconfig"), qps=0)
    config = load_config(scheduler_config(leader_elect=False), DEFAULT_PLUGINS)
    cert, key = self_signed(tmp_path / "certs")
    daemon = Daemon(cluster, config, embedded=False, port=0, tls=(cert, key))
    running = Running(daemon)
    apiserver.wait_until(lambda: daemon.ready.is_set())
    url = f"https://127.0.0.1:{daemon.http.port}"
    assert get(f"{url}/healthz", ca=cert) == (200, "ok")  # probes stay open
    assert get(f"{url}/metrics", ca=cert) == (401, "Unauthorized")
    assert get(f"{url}/metrics", token="not-a-token", ca=cert) == (401, "Unauthorized")
    status, text = get(f"{url}/metrics", token="denied-token", ca=cert)
    assert status == 403 and 'cannot get path "/metrics"' in text
    status, text = get(f"{url}/metrics", token=METRICS_TOKEN, ca=cert)
    assert status == 200 and "scheduler_schedule_attempts_total" in text
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # no plain HTTP on the secure port
        urllib.request.urlopen(f"http://127.0.0.1:{daemon.http.port}/healthz", timeout=5).read()
    assert running.stop() == 0


def test_binds_run_on_binding_workers_while_the_loop_schedules_on(apiserver, tmp_path):
    """With 300 ms on every pods/binding call, the Bind calls overlap (upstream's
    binding goroutines); with binding_workers=0 they go one at a time."""
    apiserver.cluster.create(node("n1", cpu="64"))
    apiserver.delay("POST", r"/binding$", 0.3)
    names = [f"p{i}" for i in range(12)]
    for name in names:
        apiserver.cluster.create(pod(name, cpu="1", scheduler_name="kubesched"))
    daemon = kube_daemon(apiserver, tmp_path, "async")
    running = Running(daemon)
    apiserver.wait_until(lambda: bound(apiserver.cluster, *names), timeout=30)
    assert apiserver.most_concurrent > 1
    assert running.stop() == 0 and daemon.scheduler.stats.bound == 12 and daemon.scheduler.in_flight() == 0
    assert scheduled_events(apiserver) == {name: 1 for name in names}


def test_preemption_evicts_its_victims_off_the_loop_and_waits_for_them(apiserver, tmp_path):
    apiserver.cluster.create(node("n1", cpu="4"))
    low = [f"low-{i}" for i in range(4)]
    for name in low:
        apiserver.cluster.create(pod(name, cpu="1", priority=1, scheduler_name="kubesched"))
    daemon = kube_daemon(apiserver, tmp_path, "preempting")
    running = Running(daemon)
    apiserver.wait_until(lambda: bound(apiserver.cluster, *low))
    apiserver.delay("DELETE", r"/pods/low-", 0.3)  # evictions take a while
    apiserver.cluster.create(pod("urgent", cpu="3", priority=100, scheduler_name="kubesched"))

    def evicted() -> bool:
        return sum(p.metadata.deletion_timestamp is not None for p in apiserver.cluster.list("Pod").items) == 3

    apiserver.wait_until(evicted, timeout=30)  # running victims terminate for their grace period
    assert apiserver.most_concurrent >= 2  # the three evictions overlapped, on API workers
    assert not bound(apiserver.cluster, "urgent")  # nominated: it waits for its victims to go
    apiserver.finish_terminating_pods()
    apiserver.wait_until(lambda: bound(apiserver.cluster, "urgent"), timeout=30)
    left = [p.metadata.name for p in apiserver.cluster.list("Pod").items if p.metadata.name.startswith("low-")]
    assert len(left) == 1
    preempted = [e for e in apiserver.events.values() if e["reason"] == "Preempted"]
    assert sorted(e["regarding"]["name"] for e in preempted) == sorted(set(low) - set(left))  # each evicted once
    assert running.stop() == 0


def test_without_binding_workers_binds_go_one_at_a_time(apiserver, tmp_path):
    apiserver.cluster.create(node("n1", cpu="64"))
    apiserver.delay("POST", r"/binding$", 0.1)
    names = [f"p{i}" for i in range(4)]
    for name in names:
        apiserver.cluster.create(pod(name, cpu="1", scheduler_name="kubesched"))
    cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "kubeconfig"), qps=0)
    daemon = Daemon(cluster, load_config(scheduler_config(), DEFAULT_PLUGINS), embedded=False, identity="sync",
                    port=None, binding_workers=0)
    running = Running(daemon)
    apiserver.wait_until(lambda: bound(apiserver.cluster, *names), timeout=30)
    assert apiserver.most_concurrent == 1
    assert running.stop() == 0


class HoldAtPermit:
    """Makes every pod wait at Permit (for a minute) and records Unreserve."""

    name = "HoldAtPermit"
    unreserved: list[str] = []

    def __init__(self, args, handle):
        pass

    @hookimpl
    def reserve(self, state, pod, node_name):
        return None

    @hookimpl
    def unreserve(self, state, pod, node_name):
        HoldAtPermit.unreserved.append(pod.metadata.name)

    @hookimpl
    def permit(self, state, pod, node_name):
        return Status(Code.WAIT), 60


def test_a_stop_mid_run_rolls_back_binding_cycles_in_flight(apiserver, tmp_path):
    registry = Registry.discover()
    registry.add(HoldAtPermit)
    HoldAtPermit.unreserved = []
    apiserver.cluster.create(node("n1"))
    for name in ("a", "b"):
        apiserver.cluster.create(pod(name, cpu="1", scheduler_name="kubesched"))
    daemon = kube_daemon(apiserver, tmp_path, "stopping", registry=registry,
                         plugins={"reserve": {"enabled": [{"name": "HoldAtPermit"}]},
                                  "permit": {"enabled": [{"name": "HoldAtPermit"}]}})
    running = Running(daemon)
    apiserver.wait_until(lambda: len(daemon.scheduler.waiting_pods) == 2)
    assert len(daemon.scheduler.cache.assumed_pods()) == 2
    assert running.stop() == 0  # what SIGTERM does
    assert daemon.scheduler.cache.assumed_pods() == []
    assert daemon.scheduler.waiting_pods == {}
    assert sorted(HoldAtPermit.unreserved) == ["a", "b"]
    assert not bound(apiserver.cluster, "a") and not bound(apiserver.cluster, "b")
    assert apiserver.count("POST", r"/binding$") == 0
    assert lease_holder(apiserver) == ""


def test_dra_claims_are_allocated_through_the_api_despite_a_conflicting_status_update(apiserver, tmp_path):
    load_paths(apiserver.cluster, [ROOT / "examples" / "dra"])
    apiserver.fail("PUT", r"/resourceclaims/[^/]+/status$", code=409, times=1)
    daemon = kube_daemon(apiserver, tmp_path, "dra", scheduler_name="default-scheduler")
    running = Running(daemon)
    pods = [p.metadata.name for p in apiserver.cluster.list("Pod").items]
    apiserver.wait_until(lambda: sum(1 for n in pods if bound_in(apiserver.cluster, n)) >= len(pods) - 1)
    claims = [c for c in apiserver.cluster.list("ResourceClaim").items if c.status.allocation is not None]
    assert claims and all(c.status.reserved_for for c in claims)
    assert apiserver.count("PUT", r"/resourceclaims/[^/]+/status$") > len(claims)  # the conflict was retried
    assert running.stop() == 0


def test_claim_writes_of_prebind_run_on_binding_workers_and_no_device_is_given_twice(apiserver, tmp_path):
    """With 300 ms on every claim status write, PreBind's writes of several
    pods overlap (PreBind runs on binding workers, as upstream's binding
    goroutines); the DRA manager's bookkeeping stays on the loop, so every
    device is still in at most one claim."""
    load_paths(apiserver.cluster, [ROOT / "examples" / "dra"])
    apiserver.delay("PUT", r"/resourceclaims/[^/]+/status$", 0.3)
    daemon = kube_daemon(apiserver, tmp_path, "dra-async", scheduler_name="default-scheduler")
    running = Running(daemon)
    pods = [p.metadata.name for p in apiserver.cluster.list("Pod").items]
    apiserver.wait_until(lambda: sum(1 for n in pods if bound_in(apiserver.cluster, n)) >= len(pods) - 1, timeout=30)
    assert apiserver.most_concurrent > 1
    claims = [c for c in apiserver.cluster.list("ResourceClaim").items if c.status.allocation is not None]
    devices = [(r.driver, r.pool, r.device) for c in claims for r in c.status.allocation.devices.results
               if not r.share_id]
    assert claims and len(devices) == len(set(devices))
    assert running.stop() == 0 and daemon.scheduler.in_flight() == 0


def test_a_binding_waits_for_the_drivers_report_arriving_through_the_watch(apiserver, tmp_path, monkeypatch):
    """Binding conditions in the daemon: the pod binds once the driver's report
    reaches the scheduler through its watch (the first PreBind poll after it:
    every 0.2 s here, not 5 s, as the daemon runs on the wall clock)."""
    monkeypatch.setattr("kubesched.plugins.dynamicresources.binding.BINDING_POLL_INTERVAL", 0.2)
    for obj in load_objects([ROOT / "examples" / "binding-conditions" / "cluster"]):
        apiserver.cluster.create(obj)
    daemon = kube_daemon(apiserver, tmp_path, "binding", scheduler_name="default-scheduler")
    running = Running(daemon)

    def claim():
        return apiserver.cluster.get("ResourceClaim", "fabric-gpu", "default")

    apiserver.wait_until(lambda: bool(claim().status.reserved_for))
    assert not bound_in(apiserver.cluster, "trainer")  # waiting in PreBind
    (result,) = claim().status.allocation.devices.results
    report = AllocatedDeviceStatus(driver=result.driver, pool=result.pool, device=result.device,
                                   conditions=(Condition(type="DeviceAttached", status="True", reason="Attached"),))
    current = claim()
    apiserver.cluster.update_status(attrs.evolve(current, status=attrs.evolve(current.status, devices=(report,))))
    apiserver.wait_until(lambda: bound_in(apiserver.cluster, "trainer"), timeout=15)
    assert running.stop() == 0


def test_a_replica_that_cannot_renew_its_lease_stops_and_exits_1(apiserver, tmp_path):
    apiserver.cluster.create(node("n1"))
    daemon = kube_daemon(apiserver, tmp_path, "unlucky")
    running = Running(daemon)
    apiserver.wait_until(lambda: daemon._leading)
    apiserver.fail("PUT", r"/leases/kubesched$", code=500, times=10_000)
    apiserver.wait_until(lambda: not daemon.is_leader())
    running.thread.join(30)
    assert running.code == 1
    apiserver.cluster.create(pod("orphan", cpu="1", scheduler_name="kubesched"))
    assert not daemon.is_leader() and not bound(apiserver.cluster, "orphan")


def test_a_partitioned_leader_sends_no_write_once_its_term_is_over(apiserver, tmp_path):
    """The leader is cut off from the API server in the middle of a binding cycle
    (writing a claim's allocation); the standby takes over once the lease runs
    out and allocates the devices itself.  When the partition heals, the old
    leader's retries and queued writes (the binding cycle's, its rollback's)
    must not reach the server: its term is over."""
    load_paths(apiserver.cluster, [ROOT / "examples" / "dra"])
    pods = [p.metadata.name for p in apiserver.cluster.list("Pod").items]
    old = "fake-token-old-leader"
    apiserver.partition_when("PUT", r"/resourceclaims/[^/]+/status$", old)
    leader = Running(kube_daemon(apiserver, tmp_path, "old", token=old, request_timeout=1.0,
                                 scheduler_name="default-scheduler"))
    apiserver.wait_until(lambda: apiserver.partitioned(old))
    standby = Running(kube_daemon(apiserver, tmp_path, "new", token="fake-token-new-leader",
                                  scheduler_name="default-scheduler"))
    apiserver.wait_until(lambda: lease_holder(apiserver) == "new", timeout=20)
    apiserver.heal(old)  # what the old leader still tries from now on gets through, unless fenced
    leader.thread.join(60)
    assert leader.code == 1  # it lost its lease
    apiserver.wait_until(lambda: sum(1 for n in pods if bound_in(apiserver.cluster, n)) >= len(pods) - 1)
    late = [(method, path) for token, method, path in apiserver.processed[apiserver.cut_at[old]:]
            if token == old and method != "GET" and "/leases/" not in path and "/events" not in path]
    assert late == []
    devices = [(r.pool, r.device) for c in apiserver.cluster.list("ResourceClaim").items
               if c.status.allocation is not None for r in c.status.allocation.devices.results]
    assert devices and len(devices) == len(set(devices))  # no device in two claims
    assert standby.stop() == 0


def test_sigterm_during_a_partition_exits_within_the_request_timeout_and_the_grace(apiserver, tmp_path):
    for obj in load_objects([ROOT / "examples" / "binding-conditions" / "cluster"]):
        apiserver.cluster.create(obj)  # a pod that waits in PreBind: the shutdown has a binding cycle to roll back
    token = "fake-token-cut-off"
    daemon = kube_daemon(apiserver, tmp_path, "cut", token=token, request_timeout=1.0, shutdown_grace=1.5,
                         scheduler_name="default-scheduler")
    running = Running(daemon)
    apiserver.wait_until(lambda: bool(apiserver.cluster.get("ResourceClaim", "fabric-gpu", "default")
                                      .status.reserved_for))
    apiserver.partition_when("PUT", r"/leases/kubesched$", token)  # the next renewal and everything after it hang
    apiserver.wait_until(lambda: apiserver.partitioned(token))
    asked = time.monotonic()
    daemon.stop()
    running.thread.join(30)
    took = time.monotonic() - asked
    assert not running.thread.is_alive()
    assert took <= 1.0 + 1.5 + 2.0  # one request timeout, the grace, slack for a busy machine
    apiserver.heal(token)


@pytest.mark.long
def test_two_replicas_only_the_leader_binds_and_the_other_takes_over_when_it_is_killed(apiserver, tmp_path):
    for name in ("n1", "n2", "n3"):
        apiserver.cluster.create(node(name, cpu="10"))
    config = tmp_path / "config.yaml"
    scheduler_config(config)
    first = subprocess.Popen([sys.executable, "-m", "kubesched.cli", "run", "--config", str(config),
                              "--kubeconfig", apiserver.kubeconfig(tmp_path / "first.kubeconfig"), "--port", "0"],
                             stderr=subprocess.DEVNULL)
    try:
        apiserver.wait_until(lambda: lease_holder(apiserver) != "", timeout=60)
        second = kube_daemon(apiserver, tmp_path, "second")
        running = Running(second)
        before = [f"before-{i}" for i in range(10)]
        for name in before:
            apiserver.cluster.create(pod(name, cpu="1", scheduler_name="kubesched"))
        apiserver.wait_until(lambda: bound(apiserver.cluster, *before) and len(scheduled_events(apiserver)) == 10)
        assert lease_holder(apiserver) != "second"
        assert second.scheduler.stats.bound == 0 and not second.is_leader()
        first.send_signal(signal.SIGKILL)  # no release: the lease must run out
        killed = time.monotonic()
        first.wait(10)
        after = [f"after-{i}" for i in range(10)]
        for name in after:
            apiserver.cluster.create(pod(name, cpu="1", scheduler_name="kubesched"))
        apiserver.wait_until(lambda: lease_holder(apiserver) == "second")
        took_over = time.monotonic() - killed
        apiserver.wait_until(lambda: bound(apiserver.cluster, *after) and len(scheduled_events(apiserver)) == 20)
        # the lease duration, counted from when the follower saw the last renewal (at most one jittered
        # retry period late), plus the follower's own next try, plus slack for a busy machine
        assert took_over <= 2.0 + 2 * 0.25 * 2.2 + 0.5
        assert scheduled_events(apiserver) == {name: 1 for name in before + after}  # nothing bound twice
        assert second.scheduler.stats.bound == len(after)
        assert running.stop() == 0
    finally:
        if first.poll() is None:
            first.kill()


def test_the_deploy_manifests_agree_with_each_other():
    docs = {}
    for path in (ROOT / "deploy").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            docs[(doc["kind"], doc["metadata"]["name"])] = doc
    config = load_config(yaml.safe_load(docs[("ConfigMap", "kubesched-config")]["data"]["config.yaml"]),
                         DEFAULT_PLUGINS)
    assert [p.scheduler_name for p in config.profiles] == ["kubesched"]
    lease_rule = docs[("Role", "kubesched-leader-election")]["rules"][1]
    assert lease_rule["resourceNames"] == [config.leader_election.resource_name]
    deployment = docs[("Deployment", "kubesched")]["spec"]["template"]["spec"]
    assert deployment["serviceAccountName"] == docs[("ServiceAccount", "kubesched")]["metadata"]["name"]
    args = deployment["containers"][0]["args"]
    assert "--in-cluster" in args and "--config=/etc/kubesched/config.yaml" in args
    rules = docs[("ClusterRole", "kubesched")]["rules"]
    assert any("pods/binding" in r["resources"] and r["verbs"] == ["create"] for r in rules)


def test_kubesched_run_in_cluster_outside_a_pod_says_why():
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    result = subprocess.run([sys.executable, "-m", "kubesched.cli", "run", "--in-cluster"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("--in-cluster: ") and "not set" in result.stderr


def test_a_leader_deposed_in_a_5xx_storm_exits_within_the_renew_deadline_and_one_request_timeout(apiserver, tmp_path):
    """Every request answered 503 with Retry-After (the client would retry each for seconds): the leader
    stops at its renew deadline and is gone one request timeout later, without releasing the lease."""
    apiserver.cluster.create(node("n1"))
    daemon = kube_daemon(apiserver, tmp_path, "stormy", request_timeout=1.0)
    running = Running(daemon)
    apiserver.wait_until(lambda: daemon._leading)
    for method in ("GET", "PUT", "POST", "PATCH", "DELETE"):
        apiserver.fail(method, r".", code=503, times=10**6, retry_after=1)
    storm = time.monotonic()
    renewed = daemon.elector.renewed_at
    running.thread.join(30)
    took = time.monotonic() - storm
    assert running.code == 1 and not running.thread.is_alive()
    renew_deadline, request_timeout = 1.5, 1.0
    assert took <= renew_deadline + request_timeout + 1.0  # slack for a busy machine
    assert daemon.elector.renewed_at == renewed and lease_holder(apiserver) == "stormy"  # lost, not released


def test_a_new_leader_schedules_at_once_by_default_and_its_lease_has_a_client_of_its_own(apiserver, tmp_path):
    """No takeover grace unless asked for (the device-in-two-claims check is the safety net,
    benchmarks/late_write.py); the elector renews on its own client, never behind the bindings' tokens."""
    cluster = KubernetesCluster.from_kubeconfig(apiserver.kubeconfig(tmp_path / "k.kubeconfig"), qps=50, burst=100)
    daemon = Daemon(cluster, load_config(scheduler_config(), DEFAULT_PLUGINS), embedded=False, identity="a", port=None)
    assert daemon.elector is not None and daemon.elector.config.takeover_grace == 0.0
    assert daemon.lease_client is not cluster and daemon.lease_client.limiter is not cluster.limiter
