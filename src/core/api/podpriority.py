"""Pod priority and importance: who may preempt whom, and who goes first.

Mirrors ``k8s.io/component-helpers/scheduling/corev1.PodPriority`` and
``pkg/scheduler/util`` (``GetPodStartTime``, ``MoreImportantPod``,
``GetEarliestPodStartTime``), plus the names of ``scheduling.k8s.io``
priorities the API server knows without a stored PriorityClass.
"""

from __future__ import annotations

from typing import Iterable

from kubesched.core.api.core_v1 import Pod

#: ``spec.preemptionPolicy`` values.
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"

#: Priority classes every cluster has (the API server creates them at start-up).
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
#: The largest ``value`` a user-defined PriorityClass may have.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
#: Priority of a pod without a class when no class is the global default.
DEFAULT_PRIORITY = 0


def pod_priority(pod: Pod) -> int:
    """``spec.priority``, or 0 when unset (a pod created before priorities existed)."""
    priority = pod.spec.priority
    return priority if priority is not None else DEFAULT_PRIORITY


def pod_start_time(pod: Pod, now: float) -> float:
    """``status.startTime`` in seconds since the epoch, or ``now`` for a pod that
    has not started (assumed, or bound without a kubelet to start it)."""
    start = pod.status.start_time
    return start if start is not None else now


def importance_key(pod: Pod, now: float) -> tuple[int, float]:
    """A sort key putting the most important pod first: the higher priority,
    then the earlier start (upstream's ``MoreImportantPod``)."""
    return -pod_priority(pod), pod_start_time(pod, now)


def earliest_start_time_of_highest_priority(pods: Iterable[Pod], now: float) -> float | None:
    """The earliest start time among the pods of the highest priority in
    ``pods`` (seconds); None for no pods."""
    best: tuple[int, float] | None = None
    for pod in pods:
        key = (pod_priority(pod), -pod_start_time(pod, now))
        if best is None or key > best:
            best = key
    return None if best is None else -best[1]
