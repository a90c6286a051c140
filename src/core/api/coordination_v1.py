"""coordination.k8s.io/v1: Lease (leader election)."""

from __future__ import annotations

from attrs import field, frozen

from .meta import ObjectMeta


@frozen
class LeaseSpec:
    """Times are float seconds since the epoch (``MicroTime`` on the wire)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = field(default=None, metadata={"kind": "time"})
    renew_time: float | None = field(default=None, metadata={"kind": "time"})
    lease_transitions: int = 0


@frozen
class Lease:
    metadata: ObjectMeta = ObjectMeta()
    spec: LeaseSpec = LeaseSpec()
