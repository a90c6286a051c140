"""The daemon behind ``kubesched run``: the scheduler and the controllers as one long-lived process.

Like kube-scheduler: the informers list and watch at once (``/readyz`` turns
ready when their caches are synced); with ``leaderElection.leaderElect`` the
replica only schedules and runs controller workers while it holds the Lease,
and stops scheduling the moment it cannot renew it (then exits 1, as
upstream's "leaderelection lost"); ``/healthz`` and ``/metrics`` are served
throughout.  :meth:`Daemon.stop` (SIGTERM) stops taking pods, rolls back every
binding cycle still in flight (pods waiting at Permit or at a PreBind wait are
unreserved, forgotten and requeued, so no assumed pod is left behind),
releases the lease and makes :meth:`Daemon.run` return 0.

One thread runs the loop (informer events, timers, one scheduling cycle at a
time, each with its binding cycle); controller workers, the leader elector,
the watches and the HTTP server have their own threads.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from kubesched.core.clock import RealClock
from kubesched.core.cluster.client import ApiError, ClusterClient
from kubesched.core.cluster.delegated_auth import DelegatedAuth
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.kube import KubernetesCluster
from kubesched.core.cluster.leaderelection import LeaderElectionConfig, LeaderElector
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import KubeSchedulerConfiguration, parse_duration
from kubesched.core.framework.registry import Registry
from kubesched.core.observability import metrics
from kubesched.core.observability.decision_log import DecisionPublisher
from kubesched.core.observability.health import HealthServer
from kubesched.drivers.harness import Harness

log = logging.getLogger(__name__)

#: Seconds a new leader waits past the previous holder's lease expiry before it schedules, by default: none.
#: Measured (benchmarks/takeover.py, benchmarks/late_write.py): with 0 a standby binds ~16 s after the leader
#: is SIGKILLed (deploy/'s 15 s lease) instead of ~46 s with a 30 s grace, and in 10 of 10 runs where the
#: deposed leader's claim write was held by the network and landed after the takeover, no device ended under
#: two pods and no pod was bound twice: the PreBind check of a device in two claims and the ResourceClaim
#: controller's withdrawal (Event DeviceAllocatedTwice) are the safety net; a grace only spares that withdrawal
#: when such a late write lands within it.  A killed leader's writes land within the API server's latency.
TAKEOVER_GRACE_SECONDS = 0.0
#: kube-scheduler's secure port.
DEFAULT_PORT = 10259
#: /healthz fails when the loop has not come round for this long (seconds).
LOOP_STALL_SECONDS = 60.0
#: How often the pending-pods and cache-size gauges are refreshed (seconds).
METRICS_REFRESH_SECONDS = 1.0
#: The loop sleeps at most this long without an event or a due timer (seconds).
IDLE_WAIT_SECONDS = 1.0
#: Backoff between attempts to list the cluster at start-up (seconds: first, cap).
START_BACKOFF = (0.5, 30.0)
SHUTDOWN_MESSAGE = "the scheduler is shutting down"
#: Threads that run Bind plugins (the pods/binding API call) off the scheduling loop.
BINDING_WORKERS = 16
#: After SIGTERM, how long API calls may still take in all (the rollback, the lease release).
SHUTDOWN_GRACE_SECONDS = 10.0
#: Why a write is refused once this replica's leadership term is over.
FENCED = "this replica's leadership term is over (it could not renew the lease within renewDeadline)"


class _WakingClock(RealClock):
    """The real clock, whose new timers also wake the loop (a controller
    worker's delayed retry is set from its own thread)."""

    def __init__(self, wakeup: threading.Event):
        super().__init__()
        self.wakeup = wakeup

    def call_at(self, when: float, callback: Callable[[], object], background: bool = False):
        timer = super().call_at(when, callback, background)
        self.wakeup.set()
        return timer


def default_identity() -> str:
    """kube-scheduler's lease holder identity: ``<hostname>_<uuid>``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Daemon:
    """``kubesched run`` over ``cluster``.

    ``config`` is the loaded configuration (its ``leaderElection`` is used
    unless ``embedded``); ``embedded`` also starts the controllers that stand
    in for a real cluster's components; ``registry`` the plugins (default:
    entry points); ``identity`` the lease holder name; ``bind_address`` /
    ``port`` the secure port's endpoints (``port=None``: none; 0: any free
    port), served over HTTPS with ``tls`` (certificate, key) or plain HTTP
    without; against an API server ``/metrics`` needs delegated
    authentication and authorization unless ``metrics_auth`` is False (the
    embedded cluster has no API server to ask: open there);
    ``decisions``: records every scheduling attempt and publishes each pod's
    latest one in its annotation (``--record-decisions``); ``shutdown_grace``:
    seconds API calls may still take after :meth:`stop` (default
    :data:`SHUTDOWN_GRACE_SECONDS`); ``binding_workers``: threads that run
    the Bind plugins against an API server (0: on the scheduling loop);
    ``takeover_grace``: after taking the lease over from another replica,
    seconds past its expiry before this one schedules (default
    :data:`TAKEOVER_GRACE_SECONDS`, 0), so that a write the deposed leader
    sent before losing the lease has landed or failed first - the cost: a
    takeover takes that much longer; ``features``: the scheduler's feature gates (default: the embedded cluster's, or every
    gate at its default in the newest release).  Raises ``ConfigError`` for a bad configuration and
    ValueError for bad leader election durations.
    """

    def __init__(self, cluster: ClusterClient, config: KubeSchedulerConfiguration, *, embedded: bool,
                 registry: Registry | None = None, identity: str | None = None,
                 bind_address: str = "127.0.0.1", port: int | None = DEFAULT_PORT, seed: int = 0,
                 decisions: DecisionPublisher | None = None, shutdown_grace: float = SHUTDOWN_GRACE_SECONDS,
                 tls: tuple[Path, Path] | None = None, metrics_auth: bool = True,
                 binding_workers: int = BINDING_WORKERS, takeover_grace: float = TAKEOVER_GRACE_SECONDS,
                 features: FeatureGates | None = None):
        self.cluster = cluster
        self.config = config
        self.embedded = embedded
        self.informers = Informers(cluster)
        self.clock = _WakingClock(self.informers.wakeup)
        self.bind_pool: ThreadPoolExecutor | None = None
        if isinstance(cluster, KubernetesCluster) and binding_workers > 0:
            # PreBind, Bind and preemption's evictions off the scheduling loop, as upstream's binding goroutines
            self.bind_pool = ThreadPoolExecutor(binding_workers, thread_name_prefix="binding")
        self.harness = Harness(cluster, self.clock, config, registry, seed=seed, embedded=embedded,
                               informers=self.informers, decisions=decisions, bind_pool=self.bind_pool,
                               bind_wakeup=self.informers.wakeup.set if self.bind_pool is not None else None,
                               features=features)
        self.scheduler = self.harness.scheduler
        self.scheduler.on_activate(self.informers.wakeup.set)
        self.controllers = self.harness.controllers
        self.decisions = decisions
        self.shutdown_grace = shutdown_grace
        if decisions is not None:
            self.informers.add_handlers("Pod", on_delete=lambda pod: decisions.forget(pod.key))
        self.elector: LeaderElector | None = None
        #: the elector's client (a KubernetesCluster of its own against an API server)
        self.lease_client: ClusterClient | None = None
        election = config.leader_election
        if election.leader_elect and not embedded:
            if election.resource_lock != "leases":
                raise ValueError(f"leaderElection.resourceLock: only 'leases' is supported, got {election.resource_lock!r}")
            renew_deadline = parse_duration(election.renew_deadline, "leaderElection.renewDeadline")
            # the lease on a client of its own (own rate limiter and connections), as kube-scheduler's
            # leader election client: renewals never wait behind bindings and events
            self.lease_client = (cluster.leader_election_client(renew_deadline)
                                 if isinstance(cluster, KubernetesCluster) else cluster)
            self.elector = LeaderElector(self.lease_client, self.clock, LeaderElectionConfig(
                name=election.resource_name,
                namespace=election.resource_namespace,
                identity=identity or default_identity(),
                lease_duration=parse_duration(election.lease_duration, "leaderElection.leaseDuration"),
                renew_deadline=renew_deadline,
                retry_period=parse_duration(election.retry_period, "leaderElection.retryPeriod"),
                takeover_grace=takeover_grace,
            ), on_started_leading=self.informers.wakeup.set, on_stopped_leading=self.informers.wakeup.set)
            if isinstance(cluster, KubernetesCluster):
                elector = self.elector
                cluster.fence = lambda: None if elector.is_leader() else FENCED
        self.ready = threading.Event()
        self.stopped = threading.Event()
        self.exit_code = 0
        self._stopping = threading.Event()
        self._workers_stop = threading.Event()
        self._elector_stop = threading.Event()
        self._elector_thread: threading.Thread | None = None
        self._leading = False
        #: the lease was lost: the shutdown waits for nothing the API server may still be holding
        self._deposed = False
        self._heartbeat = time.monotonic()
        self._loop_alive = False
        authorize = None
        if metrics_auth and isinstance(cluster, KubernetesCluster):
            authorize = DelegatedAuth(cluster).check
        self.http = HealthServer(bind_address, port, self.healthy, self.ready.is_set, tls=tls,
                                 authorize=authorize) if port is not None else None

    # --- probes --------------------------------------------------------------------------

    def healthy(self) -> bool:
        """/healthz: the loop is running and came round within ``LOOP_STALL_SECONDS``."""
        return self._loop_alive and time.monotonic() - self._heartbeat < LOOP_STALL_SECONDS

    def is_leader(self) -> bool:
        """Whether this replica holds the lease (always, without leader election)."""
        return self.elector is None or self.elector.is_leader()

    def may_schedule(self) -> bool:
        """Whether this replica may schedule now: it leads, past the takeover grace."""
        return self.elector is None or self.elector.may_write()

    # --- lifecycle -----------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to shut down (what SIGTERM does); safe from any thread or a
        signal handler.  API calls get ``shutdown_grace`` seconds more (no
        retries after that), so the daemon exits in bounded time even when
        the API server does not answer: at most one request timeout plus the grace."""
        self._stopping.set()
        for client in (self.cluster, self.lease_client):
            if isinstance(client, KubernetesCluster):
                client.close(self.shutdown_grace)
        self.informers.wakeup.set()

    def run(self) -> int:
        """Serve until :meth:`stop` or a lost lease; returns the exit code
        (0 after a stop, 1 after a lost lease or an unexpected error)."""
        if self.http is not None:
            self.http.start()
            log.info("serving /healthz, /readyz and /metrics", extra={"port": self.http.port,
                                                                       "scheme": self.http.scheme})
        self._loop_alive = True
        try:
            if self._start_informers():
                self._loop()
        except Exception:
            log.exception("the scheduler loop failed")
            self.exit_code = 1
        finally:
            self._shutdown()
        return self.exit_code

    def _start_informers(self) -> bool:
        """List and watch every kind, retrying with backoff until it works or a stop."""
        delay = START_BACKOFF[0]
        while not self._stopping.is_set():
            try:
                self.informers.start()
            except ApiError as err:
                log.warning("listing the cluster failed; retrying", extra={"err": str(err), "retryIn": delay})
                self.informers.stop()
                self._stopping.wait(delay)
                delay = min(delay * 2, START_BACKOFF[1])
                continue
            self.informers.pump()
            self.ready.set()
            log.info("caches synced", extra={"nodes": self.scheduler.cache_sizes()["nodes"],
                                             "pending": len(self.scheduler.pending_pods())})
            if self.elector is not None:
                self._elector_thread = threading.Thread(target=self.elector.run, args=(self._elector_stop,),
                                                        name="leader-elector", daemon=True)
                self._elector_thread.start()
            self._refresh_metrics()
            return True
        return False

    def _loop(self) -> None:
        scheduler = self.scheduler
        while not self._stopping.is_set():
            self._heartbeat = time.monotonic()
            leader = self.is_leader()
            if leader and not self._leading and self.may_schedule():
                self._start_leading()
            elif self._leading and self.elector is not None and not self.elector.leading:
                # decided on the renewal's outcome (a renewal in flight at the renew deadline is cut there
                # and fails); meanwhile, past the deadline, nothing is scheduled and writes are fenced
                log.error("leader election lost: stopping")
                self.exit_code = 1
                self._deposed = True
                if isinstance(self.cluster, KubernetesCluster):
                    self.cluster.close(0.0)  # nothing more is sent, nothing retried: the term is over
                return
            if self._leading and leader:
                if scheduler.step():
                    continue
            else:
                self.informers.pump()
                self.clock.run_due()
            deadline = self.clock.next_deadline()
            wait = IDLE_WAIT_SECONDS if deadline is None else min(IDLE_WAIT_SECONDS, deadline - self.clock.now())
            if self._leading and self.elector is not None and self.elector.renewed_at is not None:
                # wake when the renew deadline passes (scheduling pauses), and while paused look again
                # every retry period: the renewal in flight may still succeed
                lost_at = self.elector.renewed_at + self.elector.config.renew_deadline
                wait = min(wait, max(lost_at - self.clock.now(), 0.001) if leader
                           else self.elector.config.retry_period)
            elif leader and self.elector is not None:  # in the takeover grace: start when it ends
                wait = min(wait, max(self.elector.writes_from - self.clock.now(), 0.001))
            if wait > 0 and not self.informers.pending() and not scheduler.binding.results:
                self.clock.wait(wait, self.informers.wakeup)

    def _start_leading(self) -> None:
        self._leading = True
        if self.elector is not None:
            metrics.LEADER_ELECTION_MASTER_STATUS.labels(self.elector.config.name).set(1)
            log.info("started leading", extra={"identity": self.elector.config.identity})
        self.controllers.run_workers(self._workers_stop)

    def _refresh_metrics(self) -> None:
        metrics.refresh(self.scheduler)
        if not self._stopping.is_set():
            self.clock.call_later(METRICS_REFRESH_SECONDS, self._refresh_metrics, background=True)

    def _shutdown(self) -> None:
        """Roll back in-flight binding cycles, stop the workers, release the lease."""
        self._loop_alive = False
        rolled_back = self.rollback_in_flight(SHUTDOWN_MESSAGE)
        # a deposed leader waits for nothing it sent: what is in flight ends within one request timeout
        # (the client refuses every retry), and none of it may change the cluster now
        timeout = getattr(self.cluster, "request_timeout", None) if self._deposed else None
        ends = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if ends is None else max(ends - time.monotonic(), 0.0)

        if self.bind_pool is not None:
            self.bind_pool.shutdown(wait=not self._deposed, cancel_futures=self._deposed)
            self.scheduler.binding.finish_binds()
            rolled_back += self.rollback_in_flight(SHUTDOWN_MESSAGE)  # a PreBind wait that came back meanwhile
        self._workers_stop.set()
        self.controllers.stop()
        self._elector_stop.set()
        if self.elector is not None:
            if self._elector_thread is not None:
                self._elector_thread.join(left())
            if not self._deposed and self.elector.release():
                log.info("released the lease", extra={"lease": self.elector.config.name})
            metrics.LEADER_ELECTION_MASTER_STATUS.labels(self.elector.config.name).set(0)
        self.informers.stop()
        if self.decisions is not None:
            self.decisions.close()
        remaining = left()
        if remaining is None:
            self.cluster.flush()
        else:
            self.cluster.flush(remaining)
        if self.http is not None:
            self.http.stop()
        log.info("stopped", extra={"rolledBack": rolled_back, "bound": self.scheduler.stats.bound})
        self.stopped.set()

    def rollback_in_flight(self, message: str) -> int:
        """Fail every binding cycle that has not finished (pods waiting at
        Permit or at a PreBind wait): Unreserve, forget the assumed pod,
        requeue it.  Returns how many there were."""
        return self.scheduler.abort_in_flight(message)
