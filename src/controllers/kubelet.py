"""The simulated kubelet of the embedded cluster: bound pods start, run and finish.

A real cluster's kubelets report each pod they run; on the embedded cluster
nothing would, so a bound pod would stay Pending for ever and nothing that
waits for a pod to be Running and Ready (a StatefulSet's next ordinal, a
Deployment's rollout) or to finish (a Job's completions, freed capacity) could
be seen.  This controller stands in for every node's kubelet:

- ``startDelay`` seconds (option, default 0) after a pod is bound it is
  ``Running`` with ``status.startTime`` and the conditions the kubelet sets
  (``PodReadyToStartContainers``, ``Initialized``, ``ContainersReady``,
  ``Ready`` True);
- a pod annotated ``kubesched.io/run-duration: 10m`` (a Go duration) then
  ``Succeeded`` that long after its start: ``Ready`` and ``ContainersReady``
  turn False with reason ``PodCompleted``, and the scheduler, the DRA claim
  controller and the owners see a finished pod (its resources, devices and
  claims released).  Without the annotation a pod runs until deleted.

A pod whose manifest already reports a ``Ready`` condition (a snapshot of a
live cluster) keeps the status it was given.

Options (``controller_options["kubelet"]``): ``startDelay`` (seconds or a Go duration).
"""

from __future__ import annotations

import functools
from typing import Any

from kubesched.core.api.core_v1 import RUN_DURATION_ANNOTATION, Pod, PodCondition
from kubesched.core.api.meta import evolve
from kubesched.core.clock import go_duration
from kubesched.core.cluster.client import NotFound
from kubesched.core.cluster.patch import patch_status
from kubesched.core.controller.base import Controller, ControllerContext

#: the conditions a started pod reports, in the kubelet's order
_STARTED = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


def run_duration(pod: Pod) -> float | None:
    """Seconds the pod runs before it Succeeds (its ``kubesched.io/run-duration``), None: until deleted.  The API
    server's validation has refused a bad value."""
    text = pod.metadata.annotations.get(RUN_DURATION_ANNOTATION)
    return None if text is None else go_duration(text)


@functools.lru_cache(maxsize=64)
def _conditions(now: float, status: str, reason: str, types: tuple[str, ...]) -> tuple[PodCondition, ...]:
    """The conditions ``types`` set to ``status`` at ``now``: frozen, so every pod started or finished at that
    time shares them (pods start in bursts at one simulated time)."""
    return tuple(PodCondition(type=name, status=status, reason=reason, last_transition_time=now) for name in types)


def _with_conditions(pod: Pod, now: float, status: str, reason: str = "", types=_STARTED) -> tuple:
    kept = tuple(c for c in pod.status.conditions if c.type not in types)
    return kept + _conditions(now, status, reason, types)


class KubeletController(Controller):
    """Work items are pod keys ``namespace/name``."""

    name = "kubelet"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        options: dict[str, Any] = ctx.options.get(self.name, {})
        self.start_delay = go_duration(options.get("startDelay", 0))
        #: when each bound pod was first seen bound (its start is due start_delay later)
        self._bound_at: dict[str, float] = {}
        self.pods = self.informers.store("Pod")
        self.informers.add_handlers("Pod", self._changed, lambda old, new: self._changed(new), self._deleted)

    def _changed(self, pod: Pod) -> None:
        if not pod.spec.node_name or pod.terminal or pod.metadata.deletion_timestamp is not None:
            return
        if pod.status.phase == "Running" and run_duration(pod) is None:
            return
        if pod.status.phase != "Running" and any(c.type == "Ready" for c in pod.status.conditions):
            return  # a status the manifest gave (a snapshot's pod, a test's): the kubelet reported it already
        self._bound_at.setdefault(pod.key, self.clock.now())
        self.queue.add(pod.key)

    def _deleted(self, pod: Pod) -> None:
        self._bound_at.pop(pod.key, None)

    def sync(self, item: str) -> float | None:
        """Start pod ``item`` when its start is due, finish it when its run duration is over; returns the seconds
        until the next of these."""
        pod = self.pods.get(item)
        if pod is None or pod.terminal or pod.metadata.deletion_timestamp is not None or not pod.spec.node_name:
            self._bound_at.pop(item, None)
            return None
        now = self.clock.now()
        if pod.status.phase != "Running":
            due = self._bound_at.setdefault(item, now) + self.start_delay
            if now < due:
                return due - now
            status = evolve(pod.status, phase="Running", start_time=now,
                                  conditions=_with_conditions(pod, now, "True"))
            self._write(pod, status)
            duration = run_duration(pod)
            return duration or None  # the Running pod's update brings it back here too
        duration = run_duration(pod)
        if duration is None:
            return None
        ends = (pod.status.start_time or now) + duration
        if now < ends:
            return ends - now
        status = evolve(pod.status, phase="Succeeded",
                              conditions=_with_conditions(pod, now, "False", "PodCompleted",
                                                          ("ContainersReady", "Ready")))
        self._write(pod, status)
        self._bound_at.pop(item, None)
        return None

    def _write(self, pod: Pod, status: Any) -> None:
        try:
            patch_status(self.cluster, pod, status)  # the kubelet's status manager patches, as upstream's
        except NotFound:
            pass
