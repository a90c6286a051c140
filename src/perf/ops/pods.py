"""Pods: createPods (at once, or in a steady state), createPodSets, deletePods."""

from __future__ import annotations

from typing import Any

import attrs

from ...core.api.core_v1 import Pod
from ...core.cluster.client import ApiError, NotFound
from ...core.cluster.patch import MERGE_PATCH
from ..errors import PerfConfigError, WorkloadFailed
from ..tracker import labels_match
from .base import Executor, PerfOp
from .checks import check_pod
from .sources import ObjectSource, default_pod_manifest
from .volumes import create_bound_volume, volume_sources


def create_pods(executor: Executor, source: ObjectSource, namespace: str, count: int, offset: int = 0,
                volumes: tuple[ObjectSource, ObjectSource] | None = None, signature_batch_size: int = 0,
                nominated_node_name: str = "") -> None:
    """Create pods ``offset`` .. ``offset+count-1`` of ``source`` in ``namespace``
    (each with its bound volume when ``volumes`` is given).  ``signature_batch_size``
    (upstream's signatureBatchSize, 0: none): each run of that many pods gets the
    label ``signature: signature-label-<index / size>``, so that only they share
    a scheduling signature.  ``nominated_node_name``: each pod gets
    ``status.nominatedNodeName`` and then loses its scheduling gates (see
    :func:`nominate`).  Raises :class:`WorkloadFailed` for a pod the cluster refuses."""
    create = executor.cluster.create
    fixed = None
    if source.static:
        pod = source.object()
        fixed = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace=namespace))
    for index in range(offset, offset + count):
        if fixed is not None:
            pod = fixed
        else:
            pod = source.object(index, count)
            pod = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace=namespace))
        if signature_batch_size:
            labels = {**pod.metadata.labels, "signature": f"signature-label-{index // signature_batch_size}"}
            pod = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, labels=labels))
        try:
            if volumes is not None:
                pod = create_bound_volume(executor.cluster, pod, volumes, namespace, index)
            created = create(pod)
            if nominated_node_name:
                nominate(executor, created, nominated_node_name)
        except ApiError as err:
            raise WorkloadFailed(f"creating pod {pod.metadata.name or pod.metadata.generate_name}: {err}") from None
        if index & 255 == 255:
            executor.tick()


def nominate(executor: Executor, pod: Any, node_name: str) -> None:
    """Write ``node_name`` into the created ``pod``'s ``status.nominatedNodeName``, then remove its scheduling
    gates (the template gates it, so that the scheduler first sees it nominated: the nnn_hint_fallback
    suite's pods nominated to a node that cannot take them)."""
    cluster = executor.cluster
    name, namespace = pod.metadata.name, pod.metadata.namespace
    cluster.patch("Pod", name, {"status": {"nominatedNodeName": node_name}}, namespace, subresource="status")
    if pod.spec.scheduling_gates:
        cluster.patch("Pod", name, {"spec": {"schedulingGates": None}}, namespace, patch_type=MERGE_PATCH)


class CreatePods(PerfOp):
    """``count`` pods (``countParam``, times ``countMultiplierParam`` when
    given: pods per group times groups) from ``podTemplatePath`` (else the
    test case's ``defaultPodTemplatePath``, else a 100m / 500Mi pod) in
    ``namespace`` (default ``namespace-<opIndex>``); then waits until they are
    scheduled.  ``skipWaitToCompletion`` records them for a later ``barrier``
    instead; ``signatureBatchSize`` labels runs of that many pods alike (their
    scheduling signatures differ from the next run's); ``nominatedNodeName`` nominates
    each pod to that node before it is queued; ``steadyState`` keeps ``count`` pods pending for ``duration``,
    deleting each scheduled batch and creating the next.  ``collectMetrics``
    measures SchedulingThroughput of that namespace from the moment the pods
    exist until the last is scheduled.  With ``persistentVolumeTemplatePath``
    and ``persistentVolumeClaimTemplatePath`` each pod gets its own bound
    claim and PV (:func:`~kubesched.perf.ops.volumes.create_bound_volume`)."""

    FIELDS = ("count", "countParam", "countMultiplierParam", "steadyState", "steadyStateParam", "duration",
              "durationParam", "collectMetrics", "namespace", "podTemplatePath", "skipWaitToCompletion",
              "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath", "templateParams",
              "signatureBatchSize", "signatureBatchSizeParam", "nominatedNodeName")
    DEFAULT_COUNT = 0

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) ``collectMetrics`` or ``steadyState`` together with ``skipWaitToCompletion``."""
        if fields.get("collectMetrics") and fields.get("skipWaitToCompletion"):
            raise PerfConfigError(f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time")
        if fields.get("skipWaitToCompletion") and fields.get("steadyState"):
            raise PerfConfigError(f"{where}: skipWaitToCompletion and steadyState cannot be true at the same time")

    @classmethod
    def validate_resolved(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses a ``steadyState`` whose given ``duration`` is not positive; without a duration the pods are
        created once and not waited for."""
        # steadyState without any duration (upstream's DRABindingConditions tests): the pods are
        # created once and not waited for; a duration that is given must be positive
        if fields.get("steadyState") and "duration" in fields and fields["duration"] <= 0:
            raise PerfConfigError(f"{where}: when creating pods in a steady state, the test duration must be > 0")
        if fields.get("steadyState") and fields.get("skipWaitToCompletion"):
            raise PerfConfigError(f"{where}: skipWaitToCompletion and steadyState cannot be true at the same time")

    @classmethod
    def collects_metrics(cls, fields: dict[str, Any]) -> bool:
        """Whether ``collectMetrics`` is set."""
        return bool(fields.get("collectMetrics"))

    def source(self) -> ObjectSource:
        """The pod template: ``podTemplatePath``, else the test case's ``defaultPodTemplatePath``, else upstream's
        default pod."""
        path = self.fields.get("podTemplatePath")
        params = self.fields.get("templateParams")
        if path is not None:
            return ObjectSource(self.executor.path(path), "Pod", params)
        default = self.executor.default_pod_template_path
        if default is not None:
            return ObjectSource(default, "Pod", params)
        return ObjectSource(None, "Pod", manifest=default_pod_manifest())

    def check(self) -> None:
        """Unsupported for pods kubesched's profiles cannot schedule as upstream would; loads the volume
        templates now."""
        volumes = volume_sources(self.executor, self.fields)
        if volumes is not None:
            volumes[0].object(), volumes[1].object()
        source = self.source()
        count = max(self.fields["count"], 1)
        check_pod(self.executor, "createPods", source.document(0, count), source.object(0, count))

    def run(self) -> None:
        """Raises WorkloadFailed when a collector already runs and ``collectMetrics`` is set, when the pods are not
        scheduled in time, and when a steady state scheduled no pod at all."""
        executor = self.executor
        fields = self.fields
        namespace = fields.get("namespace") or f"namespace-{self.index}"
        count = fields["count"]
        executor.ensure_namespace(namespace)
        source = self.source()
        collect = bool(fields.get("collectMetrics"))
        if collect and executor.collecting:
            raise WorkloadFailed("metrics collection is overlapping: a second collector was started "
                                 "before the previous one stopped")
        if fields.get("steadyState") and "duration" in fields:
            self._steady_state(source, namespace, count, fields["duration"], collect)
            return
        if fields.get("steadyState"):  # without a duration: create them and go on (see validate_resolved)
            create_pods(executor, source, namespace, count)
            if collect:
                executor.start_collecting([namespace], None)
            executor.namespaces[namespace] += count
            return
        create_pods(executor, source, namespace, count, volumes=volume_sources(executor, fields),
                    signature_batch_size=fields.get("signatureBatchSize", 0),
                    nominated_node_name=fields.get("nominatedNodeName", ""))
        if collect:
            executor.start_collecting([namespace], None)
        if fields.get("skipWaitToCompletion"):
            executor.namespaces[namespace] += count
            return
        tracker = executor.tracker
        try:
            executor.loop(lambda: tracker.scheduled[namespace] >= count,
                          f"{count} pods in namespace {namespace} to be scheduled")
        except WorkloadFailed as err:
            raise WorkloadFailed(f"{err}{executor.pending_hint(namespace)}") from None
        if collect:
            executor.finish_collecting()

    def _steady_state(self, source: ObjectSource, namespace: str, count: int, duration: float,
                      collect: bool) -> None:
        executor = self.executor
        cluster = executor.cluster
        counter = executor.tracker.counter([namespace])
        create_pods(executor, source, namespace, count)
        if collect:
            executor.start_collecting([namespace], None)
        batch = {"start": 0, "created": count}
        end = executor.clock.now() + duration

        def refill() -> None:
            if count and counter.value - batch["start"] >= count:
                for pod in cluster.list("Pod", namespace).items:
                    try:
                        cluster.delete("Pod", pod.metadata.name, namespace)
                    except NotFound:
                        pass
                batch["start"] = counter.value
                create_pods(executor, source, namespace, count, offset=batch["created"])
                batch["created"] += count

        try:
            executor.loop(lambda: executor.clock.now() >= end, f"the steady state of namespace {namespace}",
                          deadline=end, on_step=refill, until_time=True)
        finally:
            executor.tracker.release(counter)
        if collect:
            executor.finish_collecting()
        if counter.value == 0:
            raise WorkloadFailed("no pod at all got scheduled, either because of a problem or because "
                                 "the test interval was too small")


class CreatePodSets(PerfOp):
    """``count`` copies of ``createPodsOp``, the ``i``-th in namespace ``<namespacePrefix>-<i>``."""

    FIELDS = ("count", "countParam", "namespacePrefix", "createPodsOp")
    NESTED = {"createPodsOp": "createPods"}

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) neither ``count`` nor ``countParam`` (upstream's message)."""
        if "count" not in fields and "countParam" not in fields:
            raise PerfConfigError(f"{where}: invalid Count=0 / CountParam=\"\"")

    def check(self) -> None:
        """Checks the nested ``createPodsOp`` as a createPods op."""
        CreatePods(self.executor, self.index, "createPods", self.fields["createPodsOp"]).check()

    def run(self) -> None:
        nested: dict[str, Any] = self.fields["createPodsOp"]
        prefix = self.fields.get("namespacePrefix", "")
        for index in range(self.fields["count"]):
            CreatePods(self.executor, self.index, "createPods", {**nested, "namespace": f"{prefix}-{index}"}).run()


class DeletePods(PerfOp):
    """Deletes the pods of ``namespace`` matching ``labelSelector``, all at once
    or ``deletePodsPerSecond`` at a time; waits unless ``skipWaitToCompletion``."""

    FIELDS = ("namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a missing ``namespace``."""
        if not fields.get("namespace"):
            raise PerfConfigError(f"{where}: namespace: required")

    def run(self) -> None:
        executor = self.executor
        namespace = self.fields["namespace"]
        selector = self.fields.get("labelSelector")
        cluster = executor.cluster
        pods = [p for p in cluster.list("Pod", namespace).items if labels_match(p.metadata.labels, selector)]

        def delete(pod: Pod) -> None:
            try:
                cluster.delete("Pod", pod.metadata.name, namespace)
            except NotFound:
                pass

        task = executor.paced("deletePods", len(pods), self.fields.get("deletePodsPerSecond", 0),
                              lambda index: delete(pods[index]))
        if not self.fields.get("skipWaitToCompletion"):
            executor.wait_for(task, f"{len(pods)} pods of namespace {namespace} to be deleted")
