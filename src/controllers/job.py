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
run until it succeeds, lowest first.  ``podFailurePolicy``: the first rule
matching a failed pod (a container's non-zero exit code ``In``/``NotIn`` a
set, or a pod condition such as ``DisruptionTarget``) decides: ``FailJob``
fails the Job at once (reason ``PodFailurePolicy``), ``Ignore`` neither
counts the failure nor delays the replacement, ``Count`` (and no match)
counts it.  ``successPolicy`` (Indexed Jobs): the Job succeeds (reason
``SuccessPolicy``, its running pods deleted) once a rule's
``succeededIndexes``/``succeededCount`` are met.  Pods without a controller that the
Job's selector matches are adopted, running or finished (upstream
``getPodsForJob``'s ``ClaimPods``); pods it controls that no longer match are
released.

A failed pod counts in ``status.failed``; its replacement waits upstream's
backoff (10 s doubling per failure, at most 6 minutes), and past
``backoffLimit`` failures the Job fails (``BackoffLimitExceeded``) and its
running pods are deleted; so it does after ``activeDeadlineSeconds``
(``DeadlineExceeded``).  ``suspend`` deletes the running pods and makes none.
A finished Job has the conditions ``SuccessCriteriaMet``/``Complete`` (or
``FailureTarget``/``Failed``) and is deleted with its pods
``ttlSecondsAfterFinished`` later.  Pods succeed when the simulated kubelet
finishes them (``kubesched.io/run-duration``).

Jobs as PodGroups (``WorkloadWithJob``, KEP-5547; upstream
``job_scheduling_manager.go``): before a new Job's first pod, the controller
creates a Workload (``<job>-<hash of its uid>``, controlled by the Job,
``spec.controllerRef`` the Job, one PodGroup template ``<job>-worker-0``) and
then its PodGroup (``<workload>-<template>-<hash>``, controlled by the Job, owned
also by the Workload, ``spec.workloadRef`` the template, the template's policy),
and every pod it creates carries ``spec.schedulingGroup.podGroupName``.  Which
Jobs, and which policy, depends on the emulated release: 1.36 infers a gang of
``minCount = parallelism`` for an Indexed Job whose ``completions`` equal its
``parallelism`` (> 1); 1.37 compiles every root Job's ``spec.scheduling``
(omitted: ``basic``; ``gang`` with ``minCount`` unset: ``parallelism``; its
topology constraint, disruption mode and shared claims).  A Job whose pod
template names a PodGroup itself, a Job that already has pods (or started, or
was suspended) and, in 1.37, a Job controlled by another workload than a
CronJob get none.  The objects are deleted with the Job (the garbage
collector's part).
"""

from __future__ import annotations

from typing import Any

import attrs

from kubesched.core.api.batch_v1 import COMPLETION_INDEX, Job
from kubesched.core.api.convert import format_time, parse_time
from kubesched.core.api.core_v1 import Pod, PodSchedulingGroup
from kubesched.core.api.meta import ObjectMeta, OwnerReference
from kubesched.core.api.scheduling_v1beta1 import (
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodGroupTemplate,
    TypedLocalObjectReference,
    Workload,
    WorkloadReference,
    WorkloadSpec,
)
from kubesched.core.api.workload_validation import parse_indexes
from kubesched.core.cluster.client import AlreadyExists, NotFound
from kubesched.core.controller.base import Controller, ControllerContext
from kubesched.core.controller.workloads import (
    OwnedPods,
    controller_of,
    controller_ref,
    job_finished,
    pod_active,
    pod_from_template,
    pod_ready,
    safe_hash,
)

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


def failure_action(job: Job, pod: Pod) -> tuple[str, str]:
    """What the failed ``pod``'s failure does under ``job``'s ``podFailurePolicy`` (upstream
    ``matchPodFailurePolicy``): the first matching rule's action (FailJob, Ignore, Count) and upstream's
    message for it; ``("Count", "")`` when no rule matches or there is no policy."""
    policy = job.spec.pod_failure_policy
    for index, rule in enumerate(policy.rules if policy is not None else ()):
        codes = rule.on_exit_codes
        if codes is not None:
            for status in (*pod.status.container_statuses, *pod.status.init_container_statuses):
                code = (status.extra.get("state") or {}).get("terminated", {}).get("exitCode")
                if not isinstance(code, int) or code == 0:
                    continue
                if codes.container_name not in (None, status.name):
                    continue
                if (code in codes.values) == (codes.operator == "In"):
                    return rule.action, (f"Container {status.name} for pod {pod.key} failed with exit code {code} "
                                         f"matching {rule.action} rule at index {index}")
        for pattern in rule.on_pod_conditions:
            if any(c.type == pattern.type and c.status == pattern.status for c in pod.status.conditions):
                return rule.action, (f"Pod {pod.key} has condition {pattern.type} matching {rule.action} rule at "
                                     f"index {index}")
    return "Count", ""


def matched_success_rule(job: Job, done: set[int]) -> int | None:
    """The index of the first ``successPolicy`` rule the succeeded indexes ``done`` meet (upstream
    ``matchSuccessPolicy``), None when none does (or there is no policy)."""
    policy = job.spec.success_policy
    for index, rule in enumerate(policy.rules if policy is not None and job.spec.indexed else ()):
        wanted = (parse_indexes(rule.succeeded_indexes, job.spec.completions or 0)
                  if rule.succeeded_indexes is not None else None)
        met = done if wanted is None else done & wanted
        if rule.succeeded_count is not None and len(met) >= rule.succeeded_count:
            return index
        if rule.succeeded_count is None and wanted is not None and wanted <= done:
            return index
    return None


#: the longest object name (a DNS-1123 subdomain)
NAME_MAX = 253


def workload_name(job: Job) -> str:
    """The Workload the job-controller makes for ``job`` (upstream ``computeWorkloadName``):
    ``<job name>-<hash of its uid>``, the name cut so the whole fits 253 characters."""
    suffix = safe_hash(job.metadata.uid.encode())
    return f"{job.metadata.name[:NAME_MAX - len(suffix) - 1]}-{suffix}"


def pod_group_name(workload: str, template: str) -> str:
    """The PodGroup made from ``template`` of Workload ``workload`` (upstream ``computePodGroupName``):
    ``<workload>-<template>-<hash of both>``; when too long, the longer part gives way first (each keeps
    at least half the room)."""
    suffix = safe_hash((workload + template).encode())
    room = NAME_MAX - len(suffix) - 2
    if len(workload) + len(template) > room:
        half = room // 2
        if len(workload) <= half:
            template = template[:room - len(workload)]
        elif len(template) <= half:
            workload = workload[:room - len(template)]
        else:
            workload, template = workload[:room - half], template[:half]
    return f"{workload}-{template}-{suffix}"


def inferred_gang(job: Job) -> bool:
    """1.36's qualifying Job (upstream ``isGangSchedulingEligible``): ``parallelism`` > 1, Indexed,
    ``completions`` equal to ``parallelism``, no ``schedulingGroup`` in its pod template."""
    spec = job.spec
    return ((spec.parallelism or 0) > 1 and spec.indexed and spec.completions == spec.parallelism
            and spec.template.spec.scheduling_group is None)


def pod_group_template(job: Job, release: str) -> PodGroupTemplate | None:
    """The one PodGroup template of ``job``'s Workload in ``release``, None when the job-controller makes no
    Workload for it (see the module)."""
    name = f"{job.metadata.name}-worker-0"
    parallelism = job.spec.parallelism or 0
    if tuple(map(int, release.split("."))) < (1, 37):
        if not inferred_gang(job):
            return None
        return PodGroupTemplate(name=name, scheduling_policy=PodGroupSchedulingPolicy(
            gang=GangSchedulingPolicy(min_count=parallelism)))
    owner = controller_of(job)
    if job.spec.template.spec.scheduling_group is not None or (owner is not None and owner.kind != "CronJob"):
        return None
    config = job.spec.scheduling
    if config is None:
        return PodGroupTemplate(name=name, scheduling_policy=PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy()))
    gang = config.scheduling_policy.gang if config.scheduling_policy is not None else None
    policy = (PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=gang.min_count or max(parallelism, 1)))
              if gang is not None else PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy()))
    return PodGroupTemplate(name=name, scheduling_policy=policy, scheduling_constraints=config.scheduling_constraints,
                            resource_claims=config.resource_claims, disruption_mode=config.disruption_mode)


def new_job(job: Job, pods: list[Pod]) -> bool:
    """``job`` never started (upstream ``isNewJob``): no pods, no ``startTime``, nothing succeeded or failed,
    never suspended - only such a Job gets a Workload and PodGroup."""
    status = job.status
    return (not pods and not status.get("startTime") and not status.get("succeeded") and not status.get("failed")
            and not any(c.get("type") == "Suspended" for c in status.get("conditions", ())))


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
        if self.ctx.features.enabled("WorkloadWithJob"):  # the garbage collector's part: what the Job controls
            for kind, name in (("PodGroup", self._pod_group_key(job)), ("Workload", workload_name(job))):
                obj = self._found(kind, job.metadata.namespace, name) if name else None
                ref = controller_of(obj) if obj is not None else None
                if obj is not None and ref is not None and ref.uid == job.metadata.uid:
                    try:
                        self.cluster.delete(kind, obj.metadata.name, obj.metadata.namespace, uid=obj.metadata.uid)
                    except NotFound:
                        pass
        self.owned.forget(job.metadata.uid)
        self._failures.pop(job.metadata.uid, None)

    def _pod_group_key(self, job: Job) -> str:
        template = pod_group_template(job, self.ctx.features.emulated_version)
        return pod_group_name(workload_name(job), template.name) if template is not None else ""

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
        pods = self.owned.claim(self.cluster, job, job.spec.selector)
        active = [pod for pod in pods if pod_active(pod)]
        succeeded = [pod for pod in pods if pod.status.phase == "Succeeded"]
        verdicts = [failure_action(job, pod) for pod in pods if pod.status.phase == "Failed"]
        failed = sum(1 for action, _ in verdicts if action != "Ignore")  # an ignored failure is not counted
        status: dict[str, Any] = {"startTime": job.status.get("startTime") or format_time(now)}
        again: float | None = None
        spec = job.spec
        done = {i for i in map(completion_index, succeeded) if i is not None} if spec.indexed else set()
        if spec.indexed:
            status["completedIndexes"] = index_ranges(done)
        deadline = (parse_time(status["startTime"]) or now) + spec.active_deadline_seconds \
            if spec.active_deadline_seconds is not None else None
        finished = self._finished(job, verdicts, failed, succeeded, active, done, deadline, now)
        if finished is not None:
            for pod in active:
                self._delete_pod(job, pod)
            active = []
            status["conditions"] = self._finish(*finished, now)
            if finished[0] == "Complete":
                status["completionTime"] = format_time(now)
        elif spec.suspend:
            for pod in active:
                self._delete_pod(job, pod)
            active = []
            status["conditions"] = [{"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                     "message": "Job suspended", "lastProbeTime": format_time(now),
                                     "lastTransitionTime": format_time(now)}]
        else:
            group = self._scheduling_group(job, pods)
            again = self._run(job, active, succeeded, done, failed, now, group)
            if deadline is not None:
                again = min(again or deadline - now, deadline - now)
        status.update({"active": len(active), "ready": sum(1 for pod in active if pod_ready(pod)),
                       "succeeded": len(succeeded), "failed": failed})
        status = {key: value for key, value in status.items() if value or key == "ready"}
        if status != job.status:
            self.cluster.update_status(attrs.evolve(job, status=status))
        return again

    @staticmethod
    def _finished(job: Job, verdicts: list[tuple[str, str]], failed: int, succeeded: list[Pod], active: list[Pod],
                  done: set[int], deadline: float | None, now: float) -> tuple[str, str, str, str] | None:
        """How ``job`` finishes now, as (final condition, interim condition, reason, message), or None: a pod
        failure policy's FailJob rule, the backoff limit, the deadline, then the success policy or the
        completions (upstream ``syncJob``'s order)."""
        spec = job.spec
        fail_job = next((message for action, message in verdicts if action == "FailJob"), None)
        if fail_job is not None:
            return "Failed", "FailureTarget", "PodFailurePolicy", fail_job
        if failed > spec.backoff_limit:
            return "Failed", "FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        if deadline is not None and now >= deadline:
            return "Failed", "FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"
        rule = matched_success_rule(job, done)
        if rule is not None:
            return "Complete", "SuccessCriteriaMet", "SuccessPolicy", f"Matched rules at index {rule}"
        complete = (len(done) >= (spec.completions or 0) if spec.indexed
                    else len(succeeded) >= spec.completions if spec.completions is not None
                    else bool(succeeded) and not active)
        if complete:
            return "Complete", "SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"
        return None

    def _scheduling_group(self, job: Job, pods: list[Pod]) -> str | None:
        """The PodGroup ``job``'s new pods join (upstream ``ensureWorkloadAndPodGroup``): found, or - for a new
        Job - created, Workload first; None with WorkloadWithJob off or for a Job that gets none."""
        features = self.ctx.features
        if not features.enabled("WorkloadWithJob"):
            return None
        template = pod_group_template(job, features.emulated_version)
        if template is None:
            return None
        namespace, fresh = job.metadata.namespace, new_job(job, pods)
        workload = self._found("Workload", namespace, workload_name(job))
        if workload is None:
            if not fresh:
                return None
            workload = self._create_workload(job, template)
        templates = workload.spec.pod_group_templates
        if len(templates) != 1:
            self.recorder.event(job, "Warning", "UnsupportedWorkloadStructure", "Create",
                                f"Workload {workload.metadata.name} has {len(templates)} PodGroupTemplates "
                                "(expected 1), falling back to normal scheduling")
            return None
        name = pod_group_name(workload.metadata.name, templates[0].name)
        if self._found("PodGroup", namespace, name) is None:
            if not fresh:
                return None
            self._create_pod_group(job, workload, templates[0], name)
        return name

    def _found(self, kind: str, namespace: str, name: str) -> Any:
        """``kind`` ``namespace/name`` from the informer, else from the API server (it may be newer)."""
        found = self.informers.get(kind, f"{namespace}/{name}")
        if found is None:
            try:
                found = self.cluster.get(kind, name, namespace)
            except NotFound:
                return None
        return found

    def _create_workload(self, job: Job, template: PodGroupTemplate) -> Workload:
        workload = Workload(
            metadata=ObjectMeta(name=workload_name(job), namespace=job.metadata.namespace,
                                owner_references=(controller_ref(job),)),
            spec=WorkloadSpec(controller_ref=TypedLocalObjectReference(api_group="batch", kind="Job",
                                                                       name=job.metadata.name),
                              pod_group_templates=(template,)))
        try:
            created = self.cluster.create(workload)
        except AlreadyExists:
            return self.cluster.get("Workload", workload.metadata.name, workload.metadata.namespace)
        gang = template.scheduling_policy.gang
        policy = f"gang scheduling (minCount={gang.min_count})" if gang is not None else "basic scheduling"
        self.recorder.event(job, "Normal", "WorkloadCreated", "Create",
                            f"Created Workload {created.metadata.name} with {policy}")
        return created

    def _create_pod_group(self, job: Job, workload: Workload, template: PodGroupTemplate, name: str) -> None:
        owners = (controller_ref(job), OwnerReference(api_version="scheduling.k8s.io/v1beta1", kind="Workload",
                                                      name=workload.metadata.name, uid=workload.metadata.uid))
        group = PodGroup(
            metadata=ObjectMeta(name=name, namespace=job.metadata.namespace, owner_references=owners),
            spec=PodGroupSpec(workload_ref=WorkloadReference(workload_name=workload.metadata.name,
                                                             template_name=template.name),
                              scheduling_policy=template.scheduling_policy,
                              scheduling_constraints=template.scheduling_constraints,
                              resource_claims=template.resource_claims, disruption_mode=template.disruption_mode))
        try:
            self.cluster.create(group)
        except AlreadyExists:
            return
        self.recorder.event(job, "Normal", "PodGroupCreated", "Create",
                            f"Created PodGroup {name} for Workload {workload.metadata.name}")

    def _run(self, job: Job, active: list[Pod], succeeded: list[Pod], done: set[int], failed: int,
             now: float, group: str | None) -> float | None:
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
                self._create(job, index, group)
            return None
        if spec.completions is None:
            wanted = 0 if succeeded else parallelism
        else:
            wanted = min(parallelism, spec.completions - len(succeeded))
        for _ in range(wanted - len(active)):
            self._create(job, None, group)
        for pod in active[wanted:] if len(active) > wanted else ():
            self._delete_pod(job, pod)
        return None

    def _create(self, job: Job, index: int | None, group: str | None) -> None:
        name = job.metadata.name
        changes: dict[str, Any] = {}
        if group is not None:
            changes["scheduling_group"] = PodSchedulingGroup(pod_group_name=group)
        if index is None:
            pod = pod_from_template(job.spec.template, job, generate_name=f"{name}-", spec_changes=changes)
        else:
            changes["extra"] = {**job.spec.template.spec.extra, "hostname": f"{name}-{index}"}
            pod = pod_from_template(job.spec.template, job, generate_name=f"{name}-{index}-",
                                    labels={COMPLETION_INDEX: str(index)},
                                    annotations={COMPLETION_INDEX: str(index)}, spec_changes=changes)
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
