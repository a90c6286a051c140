"""coordination.k8s.io/v1: Lease (leader election)."""

from __future__ import annotations

from attrs import field, frozen

from .meta import ObjectMeta


@frozen
class LeaseSpec:
    """Times are float seconds since the epoch (``MicroTime`` on the wire);
    ``lease_duration_seconds`` is how long a candidate waits, after it last saw
    the lease change, before taking it over."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = field(default=None, metadata={"kind": "microtime"})
    renew_time: float | None = field(default=None, metadata={"kind": "microtime"})
    lease_transitions: int = 0


@frozen
class Lease:
    """coordination.k8s.io/v1 Lease: the lock of leader election."""

    metadata: ObjectMeta = ObjectMeta()
    spec: LeaseSpec = LeaseSpec()
