"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's ``leaderelection``.

kube-scheduler replicas agree on one leader through a Lease object: the
leader renews ``spec.renewTime`` every ``retryPeriod``; the others wait until
the lease has not changed for ``leaseDurationSeconds`` (measured on their own
clock from when they last saw it change, so clock skew does not matter) and
then take it over.  A leader that could not renew for ``renewDeadline`` stops
leading; on shutdown it releases the lease (an empty holder) so that another
replica takes over at once.

Written over :class:`ClusterClient` and the :class:`Clock` rather than taken
from ``kubernetes.leaderelection``: that one sleeps in wall time on its own
thread (so it cannot be tested on a fake clock), cannot release the lease on
shutdown, and only talks to a real API server.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Callable

import attrs

from kubesched.core.api.coordination_v1 import Lease, LeaseSpec
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.clock import Clock
from kubesched.core.cluster.client import ApiError, ClusterClient, NotFound

log = logging.getLogger(__name__)

#: client-go's JitterFactor for the acquire loop: a follower waits retryPeriod * (1 + up to 1.2).
JITTER_FACTOR = 1.2


@attrs.define
class LeaderElectionConfig:
    """``leaderElection`` of the configuration, durations in seconds.

    ``lease_duration`` > ``renew_deadline`` > ``retry_period`` (upstream's
    validation); ``identity`` is this replica's holder name."""

    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: after taking the lease over from another holder, how long past its expiry writes of the new term wait:
    #: the previous holder's client request timeout, so that a write it sent before losing the lease has
    #: landed or failed (see :attr:`LeaderElector.writes_from`); 0: none
    takeover_grace: float = 0.0

    def __attrs_post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("leaderElection: leaseDuration must be greater than renewDeadline")
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError("leaderElection: renewDeadline must be greater than retryPeriod*1.2")
        if self.retry_period <= 0:
            raise ValueError("leaderElection: retryPeriod must be greater than zero")
        if self.takeover_grace < 0:
            raise ValueError("--takeover-grace: zero or more seconds")


class LeaderElector:
    """One candidate.

    :meth:`tick` makes one acquire-or-renew attempt and updates
    :attr:`leading`; :meth:`run` ticks every ``retry_period`` on a thread until
    stopped (the daemon); tests call :meth:`tick` on a fake clock.
    ``on_started_leading`` / ``on_stopped_leading`` are called from the
    ticking thread.  :meth:`is_leader` is safe from any thread and turns
    False as soon as the renew deadline has passed, even if the ticking
    thread is stuck in a slow request.
    """

    def __init__(self, cluster: ClusterClient, clock: Clock, config: LeaderElectionConfig,
                 on_started_leading: Callable[[], None] = lambda: None,
                 on_stopped_leading: Callable[[], None] = lambda: None):
        self.cluster = cluster
        self.clock = clock
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.leading = False
        #: when this replica last acquired or renewed the lease (clock seconds)
        self.renewed_at: float | None = None
        self._observed: LeaseSpec | None = None
        self._observed_at = 0.0
        self._lease: Lease | None = None
        #: when this term may start writing (clock seconds): after a takeover from another holder, that
        #: holder's last renewal (as observed) + leaseDuration + ``takeover_grace``; else at once
        self.writes_from = 0.0

    # --- state ---------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while this replica holds the lease and renewed it within the renew deadline."""
        renewed = self.renewed_at
        return self.leading and renewed is not None and self.clock.now() - renewed < self.config.renew_deadline

    def may_write(self) -> bool:
        """True while leading and past the takeover grace (:attr:`writes_from`): a write the previous
        holder sent before it lost the lease has landed or failed by then."""
        return self.is_leader() and self.clock.now() >= self.writes_from

    @property
    def holder(self) -> str:
        """The holder of the lease as last seen ("" when none)."""
        return self._observed.holder_identity if self._observed is not None else ""

    # --- one attempt ---------------------------------------------------------------------

    def tick(self) -> bool:
        """One attempt to acquire or renew; starts or stops leading accordingly.
        Returns whether the attempt succeeded.

        While leading, the attempt's requests are bounded by the renew
        deadline (client-go's renew context: :meth:`ClusterClient.bound`), and
        leadership is lost on the attempt's outcome: it failed and the renew
        deadline has passed since the last successful write.  A success counts
        from when its write was sent (:attr:`renewed_at`), not from when the
        attempt started."""
        renewed_at = self.renewed_at
        bounded = self.leading and renewed_at is not None
        if bounded and renewed_at is not None:
            self.cluster.bound(max(renewed_at + self.config.renew_deadline - self.clock.now(), 0.0))
        try:
            written = self.try_acquire_or_renew()
        finally:
            if bounded:
                self.cluster.bound(None)
        ok = written is not None
        now = self.clock.now()
        if written is not None:
            self.renewed_at = written
            if not self.leading:
                self.leading = True
                log.info("successfully acquired lease %s/%s", self.config.namespace, self.config.name,
                         extra={"identity": self.config.identity})
                self.on_started_leading()
        elif self.leading and (self.renewed_at is None or now - self.renewed_at >= self.config.renew_deadline):
            self.leading = False
            log.error("leader election lost: failed to renew lease %s/%s within %gs", self.config.namespace,
                      self.config.name, self.config.renew_deadline)
            self.on_stopped_leading()
        return ok

    def try_acquire_or_renew(self) -> float | None:
        """client-go's ``tryAcquireOrRenew``: create the lease, renew our own,
        or take over one that has not changed for its lease duration.
        Returns when the successful write was sent (clock seconds; the
        lease's new renewTime), None when the attempt failed."""
        cfg = self.config
        now = self.clock.now()
        try:
            lease = self.cluster.get("Lease", cfg.name, cfg.namespace)
        except NotFound:
            now = self.clock.now()  # the write is sent now
            spec = LeaseSpec(holder_identity=cfg.identity, lease_duration_seconds=int(cfg.lease_duration),
                             acquire_time=now, renew_time=now, lease_transitions=0)
            try:
                created = self.cluster.create(Lease(ObjectMeta(name=cfg.name, namespace=cfg.namespace), spec))
            except ApiError as err:
                log.info("creating lease %s/%s failed: %s", cfg.namespace, cfg.name, err)
                return None
            self._observe(created, now)
            return now
        except ApiError as err:
            log.info("reading lease %s/%s failed: %s", cfg.namespace, cfg.name, err)
            return None
        if self._observed != lease.spec:
            self._observe(lease, now)
        record = lease.spec
        held_by_other = record.holder_identity and record.holder_identity != cfg.identity
        if held_by_other and self._observed_at + record.lease_duration_seconds > now:
            return None
        now = self.clock.now()  # the write is sent now: others see it change no earlier
        mine = record.holder_identity == cfg.identity
        if held_by_other:  # taking over: its last renewal is no later than when we saw the lease change
            self.writes_from = self._observed_at + record.lease_duration_seconds + cfg.takeover_grace
        spec = LeaseSpec(
            holder_identity=cfg.identity,
            lease_duration_seconds=int(cfg.lease_duration),
            acquire_time=record.acquire_time if mine else now,
            renew_time=now,
            lease_transitions=record.lease_transitions if mine else record.lease_transitions + 1,
        )
        try:
            updated = self.cluster.update(attrs.evolve(lease, spec=spec))
        except ApiError as err:
            log.info("updating lease %s/%s failed: %s", cfg.namespace, cfg.name, err)
            return None
        self._observe(updated, now)
        return now

    def _observe(self, lease: Lease, now: float) -> None:
        self._lease = lease
        self._observed = lease.spec
        self._observed_at = now

    def release(self) -> bool:
        """Give the lease up (client-go's ReleaseOnCancel): an empty holder
        and a one-second duration, so a follower takes over at its next try.
        Stops leading.  Returns whether the lease was released."""
        was_leading, self.leading = self.leading, False
        lease = self._lease
        if not was_leading or lease is None or lease.spec.holder_identity != self.config.identity:
            return False
        now = self.clock.now()
        spec = LeaseSpec(holder_identity="", lease_duration_seconds=1, acquire_time=now, renew_time=now,
                         lease_transitions=lease.spec.lease_transitions)
        try:
            self._observe(self.cluster.update(attrs.evolve(lease, spec=spec)), now)
        except ApiError as err:
            log.info("releasing lease %s/%s failed: %s", self.config.namespace, self.config.name, err)
            return False
        return True

    # --- the daemon's thread -------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop`` is set: every ``retry_period`` while leading,
        with client-go's jitter while following.  Uses the clock's wait."""
        while not stop.is_set():
            self.tick()
            period = self.config.retry_period
            if not self.leading:
                period *= 1 + random.random() * JITTER_FACTOR
            self.clock.wait(period, stop)
