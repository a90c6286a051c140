"""Pods a Permit plugin told to wait (upstream ``framework/runtime/waiting_pods_map.go``).

A :class:`WaitingPod` sits in the scheduler's map of waiting pods (which
plugins reach as ``handle.waiting_pods``) until every waiting plugin allows
it, one rejects it, or a plugin's timeout (a timer on the clock) rejects it;
then the binding cycle resumes with the outcome.
"""

from __future__ import annotations

import functools
from typing import Callable

from kubesched.core.observability import metrics

from ..api.core_v1 import Pod
from ..clock import Clock, Timer
from .status import Code, Status


class WaitingPod:
    """A pod waiting at Permit.  ``waits``: plugin -> timeout (seconds);
    ``waiting_pods``: the map (pod UID -> WaitingPod) it is kept in while it
    waits; ``resume(status)``: the binding cycle, called once with None (every
    plugin allowed) or the rejection.  ``allow(plugin)`` / ``reject(plugin,
    message)`` / ``preempt(plugin, message)`` as upstream's ``WaitingPod``."""

    def __init__(self, pod: Pod, waits: dict[str, float], clock: Clock, waiting_pods: dict[str, "WaitingPod"],
                 resume: Callable[[Status | None], None]):
        self.pod = pod
        self._clock = clock
        self._waiting_pods = waiting_pods
        self._resume = resume
        self.pending: dict[str, Timer] = {}
        self.started = clock.now()
        for plugin, timeout in waits.items():
            message = f"rejected due to timeout after waiting {timeout:g}s at plugin {plugin}"
            self.pending[plugin] = clock.call_later(timeout, functools.partial(self.reject, plugin, message))
        waiting_pods[pod.metadata.uid] = self

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod through, cancelling its timer; once no plugin is pending the binding cycle resumes
        (upstream ``WaitingPod.Allow``)."""
        timer = self.pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self.pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        """``plugin`` rejects the pod: every timer is cancelled and the binding cycle resumes with Unschedulable
        ``message`` (upstream ``WaitingPod.Reject``)."""
        self._stop(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def preempt(self, plugin: str, message: str) -> None:
        """Preemption took the pod's place: it fails with an Error status, so it
        is retried after backoff rather than parked as unschedulable (upstream
        ``WaitingPod.Preempt``)."""
        self._stop(Status(Code.ERROR, (message,), plugin))

    def _stop(self, status: Status) -> None:
        for timer in self.pending.values():
            timer.cancel()
        self.pending.clear()
        self._finish(status)

    def _finish(self, status: Status | None) -> None:
        result = "Success" if status is None else status.code.name.title().replace("_", "")
        metrics.PERMIT_WAIT_DURATION.labels(result).observe(self._clock.now() - self.started)
        self._waiting_pods.pop(self.pod.metadata.uid, None)
        self._resume(status)
