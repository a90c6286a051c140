"""Lease leader election on the fake clock and the in-memory cluster."""

from __future__ import annotations

import pytest

from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import ApiError
from kubesched.core.cluster.leaderelection import LeaderElectionConfig, LeaderElector
from kubesched.core.cluster.memory import MemoryCluster


def candidates(*names: str, clock: FakeClock | None = None):
    clock = clock or FakeClock(1000.0)
    cluster = MemoryCluster(clock)
    log: list[str] = []
    electors = [
        LeaderElector(cluster, clock, LeaderElectionConfig("kubesched", "kube-system", name, 15, 10, 2),
                      on_started_leading=lambda n=name: log.append(f"{n} started"),
                      on_stopped_leading=lambda n=name: log.append(f"{n} stopped"))
        for name in names
    ]
    return clock, cluster, log, electors


def lease(cluster):
    return cluster.get("Lease", "kubesched", "kube-system").spec


def test_the_first_candidate_creates_the_lease_and_the_other_follows():
    clock, cluster, log, (a, b) = candidates("a", "b")
    assert a.tick() and a.is_leader()
    assert not b.tick() and not b.is_leader()
    assert b.holder == "a"
    spec = lease(cluster)
    assert (spec.holder_identity, spec.lease_duration_seconds, spec.renew_time, spec.lease_transitions) == ("a", 15, 1000.0, 0)
    clock.advance(2)
    assert a.tick() and lease(cluster).renew_time == 1002.0 and lease(cluster).acquire_time == 1000.0
    assert log == ["a started"]


def test_a_follower_takes_over_a_lease_unchanged_for_its_duration():
    clock, cluster, log, (a, b) = candidates("a", "b")
    a.tick()
    clock.advance(1)
    b.tick()  # b first sees the lease at 1001: it waits until 1016
    clock.advance(14)
    assert not b.tick()
    clock.advance(1)
    assert b.tick() and b.is_leader()
    assert (lease(cluster).holder_identity, lease(cluster).lease_transitions) == ("b", 1)
    assert log == ["a started", "b started"]
    # a still believes it leads until its renew deadline, then its renewals fail
    assert not a.is_leader()  # 16 s since its last renewal > renew deadline 10 s
    assert not a.tick()
    assert log[-1] == "a stopped"


def test_renewals_keep_followers_out():
    clock, _, _, (a, b) = candidates("a", "b")
    for _ in range(20):
        assert a.tick()
        assert not b.tick()
        clock.advance(2)
    assert a.is_leader() and not b.is_leader()


def test_a_leader_that_cannot_renew_stops_at_the_renew_deadline():
    clock, cluster, log, (a,) = candidates("a")
    a.tick()

    def fail(verb, kind, obj):
        if kind == "Lease":
            raise ApiError("etcd is down")

    cluster.fail_hook = fail
    clock.advance(2)
    assert not a.tick() and a.is_leader()  # still within the renew deadline
    clock.advance(8)
    assert not a.is_leader()  # the deadline passed: no more scheduling, even before the next tick
    assert log == ["a started"]
    a.tick()
    assert log == ["a started", "a stopped"] and not a.leading


def test_release_hands_the_lease_over_at_once():
    clock, cluster, log, (a, b) = candidates("a", "b")
    a.tick()
    b.tick()
    assert a.release() and not a.is_leader()
    spec = lease(cluster)
    assert (spec.holder_identity, spec.lease_duration_seconds) == ("", 1)
    clock.advance(1)
    assert b.tick() and b.is_leader()
    assert not a.release()  # not leading: nothing to release


def test_two_candidates_racing_for_an_expired_lease_get_one_leader():
    clock, cluster, _, (a, b, c) = candidates("a", "b", "c")
    a.tick()
    b.tick()
    c.tick()
    clock.advance(16)  # a died; b and c both find the lease expired

    def b_writes_first(verb, kind, obj):
        if kind == "Lease" and verb == "update" and obj.spec.holder_identity == "c":
            cluster.fail_hook = None
            assert b.tick()

    cluster.fail_hook = b_writes_first
    assert not c.tick()  # c's write was based on the version b replaced: Conflict
    assert b.is_leader() and not c.is_leader()
    assert lease(cluster).holder_identity == "b"


@pytest.mark.parametrize("durations, problem", [
    ((10, 10, 2), "leaseDuration must be greater than renewDeadline"),
    ((15, 2, 2), "renewDeadline must be greater than retryPeriod"),
])
def test_inconsistent_durations_are_refused(durations, problem):
    with pytest.raises(ValueError, match=problem):
        LeaderElectionConfig("kubesched", "kube-system", "a", *durations)


def test_after_a_takeover_writes_wait_for_the_grace_a_clean_handover_does_not():
    """The previous holder may have sent a write just before its lease ran out; it lands or fails within
    its request timeout: the new term writes from lease expiry + that grace on (the takeover's cost)."""
    clock = FakeClock(1000.0)
    cluster = MemoryCluster(clock)
    a, b = (LeaderElector(cluster, clock, LeaderElectionConfig("kubesched", "kube-system", name, 15, 10, 2,
                                                               takeover_grace=30)) for name in ("a", "b"))
    assert a.tick() and a.may_write()  # a created the lease: nobody to wait for
    clock.advance(1)
    b.tick()  # b sees the lease at 1001
    clock.advance(15)
    assert b.tick() and b.is_leader()  # took over at 1016 ...
    assert b.writes_from == 1001 + 15 + 30 and not b.may_write()  # ... and writes from 1046 on
    for _ in range(14):  # renewing every 2 s meanwhile
        clock.advance(2)
        assert b.tick() and not b.may_write()
    clock.advance(1.9)
    assert not b.may_write()
    clock.advance(0.1)
    assert b.may_write()
    assert b.release()
    clock.advance(1)
    assert a.tick() and a.may_write()  # a released lease is handed over at once, no grace


class SlowLeaseClient:
    """The in-memory cluster behind a slow network: each lease read takes ``read_seconds`` of the fake
    clock (a request waiting for rate-limiter tokens, say); records the bounds the elector sets."""

    def __init__(self, cluster: MemoryCluster, clock: FakeClock, read_seconds: float):
        self.cluster, self.clock, self.read_seconds = cluster, clock, read_seconds
        self.bounds: list[float | None] = []
        self.deadline: float | None = None
        self.seen_leading: list[bool] = []
        self.elector: LeaderElector | None = None

    def bound(self, seconds):
        self.bounds.append(seconds)
        self.deadline = None if seconds is None else self.clock.now() + seconds

    def get(self, kind, name, namespace=""):
        self.clock.advance(self.read_seconds)
        if self.deadline is not None and self.clock.now() >= self.deadline:
            raise ApiError("GET lease: not sent: the request's deadline passed")
        if self.elector is not None and self.elector.leading:
            self.seen_leading.append(self.elector.is_leader())
        return self.cluster.get(kind, name, namespace)

    def create(self, obj):
        return self.cluster.create(obj)

    def update(self, obj):
        return self.cluster.update(obj)


def slow_leader(read_seconds: float):
    clock = FakeClock(1000.0)
    client = SlowLeaseClient(MemoryCluster(clock), clock, read_seconds)
    elector = LeaderElector(client, clock, LeaderElectionConfig("kubesched", "kube-system", "a", 2, 1.5, 0.25))
    client.elector = elector
    return clock, client, elector


def test_a_renewal_counts_from_its_write_so_slow_reads_before_it_do_not_cost_the_lease():
    # the burst: 2 s lease, 1.5 s renew deadline, 250 ms retry period, each read 0.8 s late; a
    # renewal's validity starts when its write is sent, not when its attempt started
    clock, client, elector = slow_leader(0.8)
    assert elector.tick()
    for _ in range(40):  # 40 renewals, 10 s of bursts
        clock.advance(0.25)
        assert elector.tick()
        assert elector.renewed_at == clock.now()  # the write right after the slow read
    assert len(client.seen_leading) == 40 and all(client.seen_leading)  # never fenced while renewing
    assert elector.leading and elector.is_leader()


def test_while_leading_a_renewal_is_bounded_by_the_renew_deadline_and_loss_is_decided_on_its_outcome():
    clock, client, elector = slow_leader(0.0)
    assert elector.tick() and client.bounds == []  # acquiring: no renew deadline yet
    clock.advance(0.25)
    elector.tick()
    assert client.bounds == [1.25, None]  # what was left of the 1.5 s since the last write, then lifted
    client.read_seconds = 2.0  # the next read hangs past the renew deadline: cut there, and then lost
    clock.advance(0.25)
    assert elector.is_leader()
    assert not elector.tick()
    assert client.bounds[-2:] == [1.25, None]
    assert not elector.leading and not elector.is_leader()
