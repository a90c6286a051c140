"""PodGroups (workload-aware scheduling): createPodGroups, waitForPodGroups.

Upstream's executor watches PodGroups with the scheduler's informer factory
and waits until the groups it created are in that cache, so that the pods
created next never name a group the scheduler has not seen.  Here the
scheduler's informers are the harness's: both ops make sure PodGroups are
watched from the start and count the PodGroups in that store.
"""

from __future__ import annotations

from typing import Any

import attrs

from ...core.cluster.client import ApiError
from ..errors import PerfConfigError, WorkloadFailed
from .base import Executor, PerfOp
from .checks import check_kind, check_pod_group
from .sources import ObjectSource

#: How long the PodGroups may take to reach the scheduler's informer cache (upstream: 10 s), seconds.
CACHE_TIMEOUT = 10.0


def watch_pod_groups(executor: Executor) -> None:
    """Make the scheduler's informers watch PodGroups from the start (before the harness starts)."""
    executor.informers.store("PodGroup")


def cached_pod_groups(executor: Executor, namespace: str) -> int:
    """PodGroups of ``namespace`` (every namespace when empty) in the scheduler's informer cache."""
    keys = executor.informers.store("PodGroup").keys()
    if not namespace:
        return len(keys)
    prefix = f"{namespace}/"
    return sum(1 for key in keys if key.startswith(prefix))


def wait_for_cached_pod_groups(executor: Executor, namespace: str, count: int) -> None:
    """Drive the scheduler until at least ``count`` PodGroups of ``namespace``
    are in its informer cache; :class:`WorkloadFailed` after :data:`CACHE_TIMEOUT`
    or when nothing more can arrive."""
    where = f"namespace {namespace}" if namespace else "all namespaces"
    try:
        executor.loop(lambda: cached_pod_groups(executor, namespace) >= count,
                      f"{count} PodGroups of {where} in the scheduler's informer cache",
                      deadline=executor.clock.now() + CACHE_TIMEOUT)
    except WorkloadFailed as err:
        raise WorkloadFailed(f"{err} ({cached_pod_groups(executor, namespace)} there)") from None


class CreatePodGroups(PerfOp):
    """``count`` PodGroups from ``templatePath`` (expanded with ``.Index``
    0..count-1 and ``templateParams``; ``scheduling.k8s.io/v1beta1``, or
    ``v1alpha3`` as some upstream templates are) in ``namespace`` (created and
    registered when needed), then waits until the scheduler's informer cache
    holds at least ``count`` PodGroups there (upstream's runCreatePodGroupsOp).
    A template of another kind is refused; a group the API server refuses
    (a bad ``minCount``, an existing name) fails the workload."""

    FIELDS = ("namespace", "templatePath", "count", "countParam", "templateParams")
    DEFAULT_COUNT = 0

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a missing ``templatePath`` or ``namespace``."""
        if not fields.get("templatePath"):
            raise PerfConfigError(f"{where}: templatePath must be set")
        if not fields.get("namespace"):
            raise PerfConfigError(f"{where}: namespace must be set (PodGroups are namespaced)")

    def source(self) -> ObjectSource:
        """The PodGroup template at ``templatePath``, expanded with ``templateParams``."""
        return ObjectSource(self.executor.path(self.fields["templatePath"]), "PodGroup",
                            self.fields.get("templateParams"))

    def check(self) -> None:
        """Refuses another kind and a topology-constrained group without TopologyPlacement (Unsupported); also makes
        the scheduler's informers watch PodGroups from the start."""
        source = self.source()
        count = max(self.fields["count"], 1)
        check_kind("createPodGroups", source.document(0, count), source.where)
        check_pod_group(self.executor, "createPodGroups", source.object(0, count))
        watch_pod_groups(self.executor)

    def run(self) -> None:
        executor = self.executor
        namespace = self.fields["namespace"]
        count = self.fields["count"]
        executor.ensure_namespace(namespace)
        source = self.source()
        for index in range(count):
            group = source.object(index, count)
            group = attrs.evolve(group, metadata=attrs.evolve(group.metadata, namespace=namespace))
            try:
                executor.cluster.create(group)
            except ApiError as err:
                raise WorkloadFailed(f"{source.where}: creating PodGroup {namespace}/{group.metadata.name}: "
                                     f"{err}") from None
            if index & 255 == 255:
                executor.tick()
        wait_for_cached_pod_groups(executor, namespace, count)


class WaitForPodGroups(PerfOp):
    """Waits until the scheduler's informer cache holds at least ``count``
    PodGroups in ``namespace`` (every namespace when empty), at most
    :data:`CACHE_TIMEOUT` (upstream's runWaitForPodGroupsOp)."""

    FIELDS = ("namespace", "count", "countParam")
    DEFAULT_COUNT = 0

    def check(self) -> None:
        """Makes the scheduler's informers watch PodGroups from the start (nothing to refuse)."""
        watch_pod_groups(self.executor)

    def run(self) -> None:
        wait_for_cached_pod_groups(self.executor, self.fields.get("namespace", ""), self.fields["count"])
