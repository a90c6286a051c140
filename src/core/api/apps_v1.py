"""apps/v1: Deployment, ReplicaSet, StatefulSet and DaemonSet, with the API server's defaults.

The scheduler reads their ``spec.selector`` (PodTopologySpread's system
default constraints spread the pods a ReplicaSet or StatefulSet selects,
upstream ``helper.DefaultSelector``); the workload controllers
(:mod:`kubesched.controllers`) read the rest: replicas, the pod template,
the StatefulSet's ``podManagementPolicy``, ``ordinals.start``,
``volumeClaimTemplates`` and ``updateStrategy``, the rollout strategies.  Field defaults are those of
upstream ``pkg/apis/apps/v1/defaults.go`` (replicas 1, RollingUpdate with 25%
surge and unavailability, OrderedReady, ...); what no controller reads is kept
in ``extra``.  The API server's validation of these kinds is
:mod:`.workload_validation`.
"""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .core_v1 import PersistentVolumeClaim, PodSpec
from .meta import LabelSelector, ObjectMeta


def _extra():
    return field(factory=dict, eq=False)


@frozen
class PodTemplateSpec:
    """core/v1 PodTemplateSpec: the metadata (labels, annotations) and spec every pod of a workload is made from."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()


@frozen
class RollingUpdateDeployment:
    """``spec.strategy.rollingUpdate``: ``max_surge`` / ``max_unavailable`` are an int or a percentage text
    (IntOrString), default ``25%`` each."""

    max_unavailable: Any = "25%"
    max_surge: Any = "25%"


@frozen
class DeploymentStrategy:
    """``spec.strategy``: ``RollingUpdate`` (default) or ``Recreate``."""

    type: str = "RollingUpdate"
    rolling_update: RollingUpdateDeployment | None = None


@frozen
class DeploymentSpec:
    """apps/v1 DeploymentSpec (``selector`` is required, as the API server requires it)."""

    selector: LabelSelector | None = None
    template: PodTemplateSpec = PodTemplateSpec()
    replicas: int = 1
    strategy: DeploymentStrategy = DeploymentStrategy()
    min_ready_seconds: int = 0
    revision_history_limit: int = 10
    paused: bool = False
    progress_deadline_seconds: int = 600
    extra: dict[str, Any] = _extra()

    def rolling(self) -> RollingUpdateDeployment:
        """The rolling update parameters with their defaults filled in."""
        return self.strategy.rolling_update or RollingUpdateDeployment()


@frozen
class Deployment:
    """apps/v1 Deployment: the deployment-controller keeps one ReplicaSet per pod template revision."""

    metadata: ObjectMeta = ObjectMeta()
    spec: DeploymentSpec = DeploymentSpec()
    status: dict[str, Any] = field(factory=dict)


@frozen
class ReplicaSetSpec:
    """apps/v1 ReplicaSetSpec: ``replicas`` copies of ``template`` selected by ``selector`` (required)."""

    selector: LabelSelector | None = None
    template: PodTemplateSpec = PodTemplateSpec()
    replicas: int = 1
    min_ready_seconds: int = 0
    extra: dict[str, Any] = _extra()


@frozen
class ReplicaSet:
    """apps/v1 ReplicaSet: the replicaset-controller keeps ``spec.replicas`` pods of its template."""

    metadata: ObjectMeta = ObjectMeta()
    spec: ReplicaSetSpec = ReplicaSetSpec()
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = _extra()


@frozen
class StatefulSetOrdinals:
    """``spec.ordinals``: the first ordinal of the set's pods (default 0)."""

    start: int = 0


@frozen
class RollingUpdateStatefulSetStrategy:
    """``spec.updateStrategy.rollingUpdate``: pods with an ordinal below ``start + partition`` keep the current
    revision; ``max_unavailable`` (an IntOrString, MaxUnavailableStatefulSet) None means one at a time."""

    partition: int = 0
    max_unavailable: Any = None


@frozen
class StatefulSetUpdateStrategy:
    """``spec.updateStrategy``: ``RollingUpdate`` (default; its ``rollingUpdate`` defaulted to partition 0, as
    upstream ``SetDefaults_StatefulSet``) or ``OnDelete``."""

    type: str = "RollingUpdate"
    rolling_update: RollingUpdateStatefulSetStrategy | None = None

    def __attrs_post_init__(self):
        if self.type == "RollingUpdate" and self.rolling_update is None:
            object.__setattr__(self, "rolling_update", RollingUpdateStatefulSetStrategy())


@frozen
class StatefulSetSpec:
    """apps/v1 StatefulSetSpec.  ``pod_management_policy``: ``OrderedReady`` (default: pod N+1 is made once pod N
    is Running and Ready) or ``Parallel``; ``volume_claim_templates``: one PVC per pod and template, named
    ``<template>-<pod>``."""

    selector: LabelSelector | None = None
    template: PodTemplateSpec = PodTemplateSpec()
    replicas: int = 1
    service_name: str = ""
    pod_management_policy: str = "OrderedReady"
    volume_claim_templates: tuple[PersistentVolumeClaim, ...] = ()
    ordinals: StatefulSetOrdinals | None = None
    min_ready_seconds: int = 0
    revision_history_limit: int = 10
    update_strategy: StatefulSetUpdateStrategy = StatefulSetUpdateStrategy()
    extra: dict[str, Any] = _extra()

    @property
    def start_ordinal(self) -> int:
        """The first ordinal (``ordinals.start``, default 0)."""
        return self.ordinals.start if self.ordinals is not None else 0


@frozen
class StatefulSet:
    """apps/v1 StatefulSet: the statefulset-controller keeps pods ``<name>-<ordinal>`` with stable claims."""

    metadata: ObjectMeta = ObjectMeta()
    spec: StatefulSetSpec = StatefulSetSpec()
    status: dict[str, Any] = field(factory=dict)
    extra: dict[str, Any] = _extra()


@frozen
class DaemonSetSpec:
    """apps/v1 DaemonSetSpec: one pod of ``template`` per eligible node."""

    selector: LabelSelector | None = None
    template: PodTemplateSpec = PodTemplateSpec()
    min_ready_seconds: int = 0
    revision_history_limit: int = 10
    extra: dict[str, Any] = _extra()


@frozen
class DaemonSet:
    """apps/v1 DaemonSet: the daemonset-controller runs one pod per node the pod's node selector, affinity and
    tolerations allow."""

    metadata: ObjectMeta = ObjectMeta()
    spec: DaemonSetSpec = DaemonSetSpec()
    status: dict[str, Any] = field(factory=dict)
