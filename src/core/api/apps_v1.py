"""apps/v1: ReplicaSet and StatefulSet, for their pod selectors only.

kubesched runs no workload controllers: these objects matter to the scheduler
because PodTopologySpread's system default constraints (and the
``SelectorSpread``-style defaulting upstream keeps in ``helper.DefaultSelector``)
spread the pods that a Service, ReplicationController, ReplicaSet or
StatefulSet selects.  Everything but ``spec.selector`` is kept in ``extra``.
"""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .convert import ManifestError
from .meta import LabelSelector, ObjectMeta


@frozen
class WorkloadSpec:
    """``selector`` is required, as the API server requires it for apps/v1 workloads."""

    selector: LabelSelector | None = None
    replicas: int | None = None
    extra: dict[str, Any] = field(factory=dict, eq=False)

    def __attrs_post_init__(self):
        if self.selector is None:
            raise ManifestError("selector", "Required value")


@frozen
class ReplicaSet:
    """apps/v1 ReplicaSet: read for its ``spec.selector`` (PodTopologySpread's default constraints); the rest kept
    as given."""

    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = field(factory=lambda: WorkloadSpec(LabelSelector()))
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class StatefulSet:
    """apps/v1 StatefulSet: read for its ``spec.selector`` (PodTopologySpread's default constraints); the rest kept
    as given."""

    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = field(factory=lambda: WorkloadSpec(LabelSelector()))
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = field(factory=dict, eq=False)
