"""The CronJob controller of the embedded cluster.

Stands in for kube-controller-manager's ``cronjob-controller``
(``pkg/controller/cronjob``, the v2 controller): at each time of a CronJob's
``schedule`` in simulated time (in ``timeZone``, default UTC) it creates the Job
``<cronjob>-<scheduled time in minutes since the epoch>`` from
``jobTemplate``, controlled by the CronJob and annotated
``batch.kubernetes.io/cronjob-scheduled-timestamp``.  ``concurrencyPolicy``:
``Allow`` runs Jobs side by side, ``Forbid`` skips a time while one is still
active, ``Replace`` deletes the active ones first; ``suspend`` skips every
time.  Only the most recent missed time is run (as upstream, which runs the
last one); finished Jobs beyond ``successfulJobsHistoryLimit`` /
``failedJobsHistoryLimit`` are deleted, oldest first.
"""

from __future__ import annotations

import datetime as _dt
from zoneinfo import ZoneInfo

import attrs

from kubesched.core.api.batch_v1 import CronJob, Job
from kubesched.core.api.convert import format_time, parse_time
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.cluster.client import AlreadyExists, NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import controller_of, controller_ref, job_finished

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def schedule_times(cron_job: CronJob, after: float, until: float) -> list[float]:
    """The schedule's times in (``after``, ``until``], seconds since the epoch; at most the last 100 (upstream
    stops counting missed times at 100)."""
    from croniter import croniter  # here: only a CronJob needs it (~0.02 s of imports)

    zone = ZoneInfo(cron_job.spec.time_zone or "UTC")
    start = _dt.datetime.fromtimestamp(after, zone)
    times: list[float] = []
    for moment in croniter(cron_job.spec.schedule, start).all_next(_dt.datetime):
        stamp = moment.timestamp()
        if stamp > until:
            break
        times = (times + [stamp])[-100:]
    return times


class CronJobController(Controller):
    """Work items are CronJob keys ``namespace/name``."""

    name = "cronjob-controller"
    embedded_only = True

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        self.jobs = self.informers.store("Job")
        self.informers.add_handlers("CronJob", self._changed, lambda old, new: self._changed(new))
        self.informers.add_handlers("Job", self._job_changed, lambda old, new: self._job_changed(new),
                                    self._job_changed)

    def _changed(self, cron_job: CronJob) -> None:
        self.queue.add(f"{cron_job.metadata.namespace}/{cron_job.metadata.name}")

    def _job_changed(self, job: Job) -> None:
        ref = controller_of(job)
        if ref is not None and ref.kind == "CronJob":
            self.queue.add(f"{job.metadata.namespace}/{ref.name}")

    def _owned(self, cron_job: CronJob) -> list[Job]:
        uid = cron_job.metadata.uid
        owned = [job for job in self.jobs.values() if (ref := controller_of(job)) is not None and ref.uid == uid]
        return sorted(owned, key=lambda job: (job.metadata.creation_timestamp or 0.0, job.metadata.name))

    def sync(self, item: str) -> None:
        """Create the Job of the latest schedule time passed since the last one (upstream ``syncCronJob``),
        clean up history, write the status, and look again at the next schedule time (a background wait: a
        simulation without ``--until`` does not run on for future times)."""
        cron_job = self.informers.get("CronJob", item)
        if cron_job is None or cron_job.metadata.deletion_timestamp is not None:
            return None
        now = self.clock.now()
        jobs = self._owned(cron_job)
        active = [job for job in jobs if not job_finished(job)]
        last = parse_time(cron_job.status.get("lastScheduleTime")) or cron_job.metadata.creation_timestamp or now
        due = schedule_times(cron_job, last, now)
        status = dict(cron_job.status)
        if due and not cron_job.spec.suspend:
            when = due[-1]
            policy = cron_job.spec.concurrency_policy
            if policy == "Replace":
                for job in active:
                    self._delete(job)
                active = []
            if policy != "Forbid" or not active:
                created = self._create(cron_job, when)
                if created is not None:
                    active.append(created)
            status["lastScheduleTime"] = format_time(when)
        elif due:
            status["lastScheduleTime"] = format_time(due[-1])
        self._trim_history(cron_job, jobs)
        status["active"] = [{"kind": "Job", "namespace": job.metadata.namespace, "name": job.metadata.name,
                             "uid": job.metadata.uid, "apiVersion": "batch/v1"} for job in active]
        if not status["active"]:
            del status["active"]
        if status != cron_job.status:
            self.cluster.update_status(attrs.evolve(cron_job, status=status))
        from croniter import croniter

        upcoming = croniter(cron_job.spec.schedule, _dt.datetime.fromtimestamp(
            now, ZoneInfo(cron_job.spec.time_zone or "UTC"))).get_next(_dt.datetime).timestamp()
        self.queue.add_after(item, max(upcoming - now, 1e-3), background=True)

    def _create(self, cron_job: CronJob, when: float) -> Job | None:
        template = cron_job.spec.job_template
        meta = ObjectMeta(name=f"{cron_job.metadata.name}-{int(when // 60)}", namespace=cron_job.metadata.namespace,
                          labels=dict(template.metadata.labels),
                          annotations={**template.metadata.annotations, SCHEDULED_TIMESTAMP: format_time(when) or ""},
                          owner_references=(controller_ref(cron_job),))
        try:
            return self.cluster.create(Job(metadata=meta, spec=template.spec))
        except AlreadyExists:
            return None

    def _delete(self, job: Job) -> None:
        try:
            self.cluster.delete("Job", job.metadata.name, job.metadata.namespace, uid=job.metadata.uid)
        except NotFound:
            pass

    def _trim_history(self, cron_job: CronJob, jobs: list[Job]) -> None:
        for outcome, limit in (("Complete", cron_job.spec.successful_jobs_history_limit),
                               ("Failed", cron_job.spec.failed_jobs_history_limit)):
            done = [job for job in jobs if job_finished(job) == outcome]
            for job in done[:max(0, len(done) - limit)]:
                self._delete(job)
