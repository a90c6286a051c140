"""Ops that wait: barrier, sleep, checkPodScheduled."""

from __future__ import annotations

from typing import Any

from ...core.api.core_v1 import Pod
from ..errors import PerfConfigError, WorkloadFailed
from .base import PerfOp, check_namespace_list

#: ``barrier``'s ``stageRequirement`` values: bound to a node, or through at least one scheduling cycle.
SCHEDULED = "Scheduled"
ATTEMPTED = "Attempted"


class Barrier(PerfOp):
    """Waits until the pods that earlier ops recorded (``skipWaitToCompletion``,
    ``createNamespaces``) in ``namespaces`` (default: every recorded one),
    matching ``labelSelector``, are at ``stageRequirement``: ``Scheduled``
    (the default: bound to a node; the namespaces are then forgotten, as
    upstream's barrier knows no pod is left pending there) or ``Attempted``
    (through at least one scheduling cycle: scheduled, unschedulable or
    gated).  A namespace no op recorded fails the workload."""

    FIELDS = ("namespaces", "labelSelector", "stageRequirement")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a ``namespaces`` that is not a list of names and a ``stageRequirement`` other
        than Scheduled or Attempted."""
        check_namespace_list(fields, where)
        if fields.get("stageRequirement", SCHEDULED) not in (SCHEDULED, ATTEMPTED):
            raise PerfConfigError(f"{where}: stageRequirement: invalid {fields.get('stageRequirement')!r} "
                                  f"({SCHEDULED} or {ATTEMPTED})")

    def run(self) -> None:
        executor = self.executor
        fields = self.fields
        namespaces = list(fields.get("namespaces") or executor.namespaces)
        for namespace in namespaces:
            if namespace not in executor.namespaces:
                raise WorkloadFailed(f"unknown namespace {namespace}")
        selector = fields.get("labelSelector")
        attempted = fields.get("stageRequirement", SCHEDULED) == ATTEMPTED
        source = executor.tracker.selected(selector) if selector else executor.tracker
        counts = source.attempted if attempted else source.scheduled
        stage = "attempted" if attempted else "scheduled"
        for namespace in namespaces:
            want = executor.namespaces[namespace]

            def done(ns: str = namespace, want: int = want) -> bool:
                return counts[ns] >= want
            try:
                executor.loop(done, f"{want} pods in namespace {namespace} to be {stage}")
            except WorkloadFailed as err:
                raise WorkloadFailed(f"{err}{executor.pending_hint(namespace)}") from None
        if not attempted:
            if fields.get("namespaces"):
                for namespace in namespaces:
                    executor.namespaces.pop(namespace, None)
            else:
                executor.namespaces.clear()


class Sleep(PerfOp):
    """Lets the scheduler run for ``duration`` (``durationParam``)."""

    FIELDS = ("duration", "durationParam")

    def run(self) -> None:
        clock = self.executor.clock
        end = clock.now() + self.fields.get("duration", 0.0)
        self.executor.loop(lambda: clock.now() >= end, "sleep", deadline=end, until_time=True)


class CheckPodScheduled(PerfOp):
    """``scheduled`` true: every pod of ``namespace`` must be scheduled within
    ``duration``; false: none may be, for all of ``duration``."""

    FIELDS = ("namespace", "scheduled", "ScheduledParam", "duration", "durationParam")

    def run(self) -> None:
        executor = self.executor
        namespace = self.fields["namespace"]
        duration = self.fields.get("duration", 0.0)
        end = executor.clock.now() + duration

        def pods() -> list[Pod]:
            return executor.cluster.list("Pod", namespace).items

        if self.fields.get("scheduled"):
            executor.loop(lambda: all(p.spec.node_name for p in pods()) or executor.clock.now() >= end,
                          f"the pods of namespace {namespace} to be scheduled", deadline=end, until_time=True)
            waiting = [p.key for p in pods() if not p.spec.node_name]
            if waiting:
                raise WorkloadFailed(f"checkPodScheduled: {len(waiting)} pod(s) of namespace {namespace} not "
                                     f"scheduled within {duration:g}s{executor.pending_hint(namespace)}")
            return
        executor.loop(lambda: any(p.spec.node_name for p in pods()) or executor.clock.now() >= end,
                      f"{duration:g}s", deadline=end, until_time=True)
        bound = [p.key for p in pods() if p.spec.node_name]
        if bound:
            raise WorkloadFailed(f"checkPodScheduled: pod {bound[0]} was scheduled, expected none of namespace "
                                 f"{namespace} to be")
