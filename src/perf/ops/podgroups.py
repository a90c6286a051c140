"""PodGroups (workload-aware scheduling): createPodGroups, createCompositePodGroups, waitForPodGroups.

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
from ..errors import PerfConfigError, Unsupported, WorkloadFailed
from .base import Executor, PerfOp
from .checks import check_kind, check_pod_group
from .sources import ObjectSource, require_template_path

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


def create_group(executor: Executor, source: ObjectSource, index: int, count: int, namespace: str) -> None:
    """Create object ``index`` of ``count`` from ``source`` (a PodGroup or CompositePodGroup template) in
    ``namespace``; an API server refusal fails the workload (WorkloadFailed naming the template and object)."""
    group = source.object(index, count)
    group = attrs.evolve(group, metadata=attrs.evolve(group.metadata, namespace=namespace))
    try:
        executor.cluster.create(group)
    except ApiError as err:
        raise WorkloadFailed(f"{source.where}: creating {source.kind} {namespace}/{group.metadata.name}: "
                             f"{err}") from None


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
        require_template_path(fields, where)
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
            create_group(executor, source, index, count, namespace)
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


class CreateCompositePodGroups(PerfOp):
    """The inner levels of CompositePodGroup trees from ``templatePath`` in ``namespace`` (upstream's
    createCompositePodGroups op, cpg/ suite): ``rootCount`` roots at level 1, and for a ``depth`` of 3 or
    more, ``childrenCompositePodGroupsPerCPG`` children per CompositePodGroup at each level below, down to
    level ``depth - 1``; the leaf PodGroups (level ``depth``) come from a createPodGroups op after it.  The
    template sees ``.Index`` (within its level), ``.Level``, ``.ParentLevel``, ``.ParentIndex`` (the
    parent's index, ``Index / childrenCompositePodGroupsPerCPG``) and ``.ChildrenCount``
    (``childrenCompositePodGroupsPerCPG`` above the last inner level, ``childrenPodGroupsPerCPG`` at it)
    beside ``templateParams``.  Waits until the scheduler's informer cache holds them all."""

    FIELDS = ("namespace", "templatePath", "templateParams", "rootCount", "rootCountParam", "depth",
              "childrenPodGroupsPerCPG", "childrenPodGroupsPerCPGParam", "childrenCompositePodGroupsPerCPG",
              "childrenCompositePodGroupsPerCPGParam")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses a missing ``templatePath``, ``namespace`` or ``depth`` below 2."""
        require_template_path(fields, where)
        if not fields.get("namespace"):
            raise PerfConfigError(f"{where}: namespace must be set (CompositePodGroups are namespaced)")
        depth = fields.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
            raise PerfConfigError(f"{where}: depth: expected an integer of at least 2 (roots and leaf PodGroups), "
                                  f"got {depth!r}")

    @classmethod
    def validate_resolved(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses a tree whose counts are missing: ``childrenCompositePodGroupsPerCPG`` for a depth above 2."""
        if fields["depth"] > 2 and not fields.get("childrenCompositePodGroupsPerCPG"):
            raise PerfConfigError(f"{where}: childrenCompositePodGroupsPerCPG must be set for a depth of "
                                  f"{fields['depth']}")

    def levels(self) -> list[tuple[int, int, int]]:
        """(level, CompositePodGroups at it, children of each) from the root level down to ``depth - 1``."""
        fields = self.fields
        depth, count = fields["depth"], fields.get("rootCount", 0)
        per_cpg = fields.get("childrenCompositePodGroupsPerCPG", 0)
        out = []
        for level in range(1, depth):
            children = per_cpg if level < depth - 1 else fields.get("childrenPodGroupsPerCPG", 0)
            out.append((level, count, children))
            count *= per_cpg
        return out

    def source(self, level: int, children: int) -> ObjectSource:
        """The template expanded for ``level`` (its ``.Level``, ``.ParentLevel``, ``.ChildrenCount``)."""
        params = {**(self.fields.get("templateParams") or {}), "Level": level, "ParentLevel": level - 1,
                  "ChildrenCount": children}
        return ObjectSource(self.executor.path(self.fields["templatePath"]), "CompositePodGroup", params)

    def check(self) -> None:
        """Refuses a template of another kind, and a tree created while pods run (upstream's cpg preemption
        cases: the tree would have to preempt them, and kubesched's CompositePodGroup cycle does not preempt);
        makes the informers watch PodGroups and CompositePodGroups."""
        if any(op.opcode == "createPods" for op in self.executor.ops[:self.executor.ops.index(self)]):
            raise Unsupported("createCompositePodGroups after createPods: a CompositePodGroup tree that has to "
                              "preempt running pods (kubesched's CompositePodGroup cycle has no PodGroupPostFilter "
                              "for trees)")
        source = self.source(1, 1)
        source.params["ParentIndex"] = 0
        check_kind("createCompositePodGroups", source.document(0, 1), source.where)
        watch_pod_groups(self.executor)
        self.executor.informers.store("CompositePodGroup")

    def run(self) -> None:
        executor = self.executor
        namespace = self.fields["namespace"]
        executor.ensure_namespace(namespace)
        per_cpg = max(self.fields.get("childrenCompositePodGroupsPerCPG", 0), 1)
        total = 0
        for level, count, children in self.levels():
            source = self.source(level, children)
            for index in range(count):
                source.params["ParentIndex"] = index // per_cpg
                create_group(executor, source, index, count, namespace)
            total += count
            executor.tick()
        prefix = f"{namespace}/"
        store = executor.informers.store("CompositePodGroup")
        executor.loop(lambda: sum(1 for key in store.keys() if key.startswith(prefix)) >= total,
                      f"{total} CompositePodGroups of namespace {namespace} in the scheduler's informer cache",
                      deadline=executor.clock.now() + CACHE_TIMEOUT)
