"""The Job controller of the embedded cluster.

Stands in for kube-controller-manager's ``job-controller``
(``pkg/controller/job``): a Job runs ``parallelism`` pods at once until
``completions`` of them have succeeded (with ``completions`` unset, until one
has succeeded and none is left running).  Pods are named ``<job>-<5 characters>``
(``<job>-<index>-<5 characters>`` for ``completionMode: Indexed``), carry the
template's labels (the API server added ``batch.kubernetes.io/job-name`` and
``batch.kubernetes.io/controller-uid``) and are controlled by the Job; an
Indexed Job's pod ``i`` carries the ``batch.kubernetes.io/job-completion-index``
annotation and label ``i`` and the hostname ``<job>-<i>``, and every index is
run until it succeeds, lowest first.

A failed pod counts in ``status.failed``; its replacement waits upstream's
backoff (10 s doubling per failure, at most 6 minutes), and past
``backoffLimit`` failures the Job fails (``BackoffLimitExceeded``) and its
running pods are deleted; so it does after ``activeDeadlineSeconds``
(``DeadlineExceeded``).  ``suspend`` deletes the running pods and makes none.
A finished Job has the conditions ``SuccessCriteriaMet``/``Complete`` (or
``FailureTarget``/``Failed``) and is deleted with its pods
``ttlSecondsAfterFinished`` later.  Pods succeed when the simulated kubelet
finishes them (``kubesched.io/run-duration``).
"""

from __future__ import annotations

from typing import Any

import attrs

from kubesched.core.api.batch_v1 import COMPLETION_INDEX, Job
from kubesched.core.api.convert import format_time, parse_time
from kubesched.core.api.core_v1 import Pod
from kubesched.core.cluster.client import NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import OwnedPods, job_finished, pod_active, pod_from_template, pod_ready

#: upstream ``DefaultJobPodFailureBackOff`` and ``MaxJobPodFailureBackOff``, seconds
BACKOFF_BASE, BACKOFF_MAX = 10.0, 360.0


def completion_index(pod: Pod) -> int | None:
    """An Indexed Job's pod's completion index (its annotation), None when it has none."""
    text = pod.metadata.annotations.get(COMPLETION_INDEX, "")
    return int(text) if text.isdigit() else None


def index_ranges(indexes: set[int]) -> str:
    """``status.completedIndexes`` text: sorted ranges, ``0-3,5``."""
    ranges: list[list[int]] = []
    for index in sorted(indexes):
        if ranges and ranges[-1][1] == index - 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


class JobController(Controller):
    """Work items are Job keys ``namespace/name``."""

    name = "job-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.owned = OwnedPods(self.informers, "Job", lambda ns, name: self.queue.add(f"{ns}/{name}"))
        self.informers.add_handlers("Job", self._changed, lambda old, new: self._changed(new), self._deleted)
        #: Job uid -> (failures seen, when the last one was seen): the backoff before a replacement
        self._failures: dict[str, tuple[int, float]] = {}

    def _changed(self, job: Job) -> None:
        self.queue.add(f"{job.metadata.namespace}/{job.metadata.name}")

    def _deleted(self, job: Job) -> None:
        for pod in self.owned.pods(job):
            self._delete_pod(job, pod)
        self.owned.forget(job.metadata.uid)
        self._failures.pop(job.metadata.uid, None)

    def _delete_pod(self, job: Job, pod: Pod) -> None:
        self.owned.expect_delete(job, pod)
        try:
            self.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid)
        except NotFound:
            pass

    def sync(self, item: str) -> float | None:
        """Run Job ``item`` one step (upstream ``syncJob``): count its pods, finish it, or create and delete pods
        toward ``parallelism``; returns the seconds until a backoff, deadline or TTL is due."""
        job = self.informers.get("Job", item)
        if job is None or job.metadata.deletion_timestamp is not None or not self.owned.satisfied(job):
            return None
        now = self.clock.now()
        if job_finished(job):
            return self._expire(job, now)
        pods = self.owned.pods(job)
        active = [pod for pod in pods if pod_active(pod)]
        succeeded = [pod for pod in pods if pod.status.phase == "Succeeded"]
        failed = sum(1 for pod in pods if pod.status.phase == "Failed")
        status: dict[str, Any] = {"startTime": job.status.get("startTime") or format_time(now)}
        again: float | None = None
        spec = job.spec
        done = {i for i in map(completion_index, succeeded) if i is not None} if spec.indexed else set()
        if spec.indexed:
            status["completedIndexes"] = index_ranges(done)
        complete = (len(done) >= (spec.completions or 0) if spec.indexed
                    else len(succeeded) >= spec.completions if spec.completions is not None
                    else bool(succeeded) and not active)
        deadline = (parse_time(status["startTime"]) or now) + spec.active_deadline_seconds \
            if spec.active_deadline_seconds is not None else None
        if complete:
            for pod in active:
                self._delete_pod(job, pod)
            active = []
            status["conditions"] = self._finish("Complete", "SuccessCriteriaMet", "CompletionsReached",
                                                "Reached expected number of succeeded pods", now)
            status["completionTime"] = format_time(now)
        elif failed > spec.backoff_limit or (deadline is not None and now >= deadline):
            for pod in active:
                self._delete_pod(job, pod)
            active = []
            reason, message = (("BackoffLimitExceeded", "Job has reached the specified backoff limit")
                               if failed > spec.backoff_limit else
                               ("DeadlineExceeded", "Job was active longer than specified deadline"))
            status["conditions"] = self._finish("Failed", "FailureTarget", reason, message, now)
        elif spec.suspend:
            for pod in active:
                self._delete_pod(job, pod)
            active = []
            status["conditions"] = [{"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                     "message": "Job suspended", "lastProbeTime": format_time(now),
                                     "lastTransitionTime": format_time(now)}]
        else:
            again = self._run(job, active, succeeded, done, failed, now)
            if deadline is not None:
                again = min(again or deadline - now, deadline - now)
        status.update({"active": len(active), "ready": sum(1 for pod in active if pod_ready(pod)),
                       "succeeded": len(succeeded), "failed": failed})
        status = {key: value for key, value in status.items() if value or key == "ready"}
        if status != job.status:
            self.cluster.update_status(attrs.evolve(job, status=status))
        return again

    def _run(self, job: Job, active: list[Pod], succeeded: list[Pod], done: set[int], failed: int,
             now: float) -> float | None:
        """Create the pods the Job lacks (after the failure backoff); returns seconds until the backoff ends."""
        spec = job.spec
        seen, since = self._failures.get(job.metadata.uid, (0, now))
        if failed != seen:
            seen, since = failed, now
            self._failures[job.metadata.uid] = (seen, since)
        if failed:
            ready_at = since + min(BACKOFF_BASE * 2 ** (failed - 1), BACKOFF_MAX)
            if now < ready_at:
                return ready_at - now
        parallelism = spec.parallelism or 0
        if spec.indexed:
            running = {completion_index(pod) for pod in active}
            missing = [i for i in range(spec.completions or 0) if i not in done and i not in running]
            for index in missing[:max(parallelism - len(active), 0)]:
                self._create(job, index)
            return None
        if spec.completions is None:
            wanted = 0 if succeeded else parallelism
        else:
            wanted = min(parallelism, spec.completions - len(succeeded))
        for _ in range(wanted - len(active)):
            self._create(job, None)
        for pod in active[wanted:] if len(active) > wanted else ():
            self._delete_pod(job, pod)
        return None

    def _create(self, job: Job, index: int | None) -> None:
        name = job.metadata.name
        if index is None:
            pod = pod_from_template(job.spec.template, job, generate_name=f"{name}-")
        else:
            pod = pod_from_template(job.spec.template, job, generate_name=f"{name}-{index}-",
                                    labels={COMPLETION_INDEX: str(index)},
                                    annotations={COMPLETION_INDEX: str(index)},
                                    spec_changes={"extra": {**job.spec.template.spec.extra,
                                                            "hostname": f"{name}-{index}"}})
        self.owned.expect_create(job, self.cluster.create(pod))

    def _finish(self, final: str, interim: str, reason: str, message: str, now: float) -> list[dict[str, Any]]:
        stamp = format_time(now)
        return [{"type": kind, "status": "True", "reason": reason, "message": message, "lastProbeTime": stamp,
                 "lastTransitionTime": stamp} for kind in (interim, final)]

    def _expire(self, job: Job, now: float) -> float | None:
        """Delete a finished Job ``ttlSecondsAfterFinished`` after it finished (upstream's ttl-after-finished
        controller); returns the seconds until then."""
        ttl = job.spec.ttl_seconds_after_finished
        if ttl is None:
            return None
        stamps = [parse_time(c.get("lastTransitionTime")) for c in job.status.get("conditions", ())
                  if c.get("type") == job_finished(job)]
        due = (stamps[0] if stamps and stamps[0] is not None else now) + ttl
        if now < due:
            return due - now
        try:
            self.cluster.delete("Job", job.metadata.name, job.metadata.namespace, uid=job.metadata.uid)
        except NotFound:
            pass
        return None
