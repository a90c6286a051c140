"""batch/v1: Job and CronJob, with the API server's defaults.

Defaults as upstream ``pkg/apis/batch/v1/defaults.go``: a Job with neither
``completions`` nor ``parallelism`` runs one pod to one completion; with
``parallelism`` alone it is a work queue (completions unset); ``backoffLimit``
6, ``completionMode`` NonIndexed.  The API server also gives a Job whose
``manualSelector`` is not true its selector and template labels from its uid
(:func:`with_generated_selector`).  Validation: :mod:`.workload_validation`.
"""

from __future__ import annotations

from typing import Any

import attrs
from attrs import field, frozen

from .apps_v1 import PodTemplateSpec
from .meta import LabelSelector, ObjectMeta, evolve
from .scheduling_v1beta1 import BasicSchedulingPolicy, DisruptionMode, PodGroupResourceClaim, SchedulingConstraints

#: The labels the API server puts on a Job's pod template and selector (upstream ``batch.ControllerUidLabel``,
#: ``batch.JobNameLabel``, and the legacy unprefixed pair it still sets).
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
#: An Indexed Job's pod: its completion index (annotation and label, upstream ``batch.JobCompletionIndexAnnotation``).
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


@frozen
class WorkloadPodGroupGangSchedulingPolicy:
    """``spec.scheduling.schedulingPolicy.gang`` (scheduling.k8s.io/v1alpha3's building block): ``min_count``
    pods at once; None: the job-controller uses the Job's ``parallelism``."""

    min_count: int | None = None


@frozen
class WorkloadPodGroupSchedulingPolicy:
    """``spec.scheduling.schedulingPolicy``: at most one of ``basic`` and ``gang`` (neither: Basic)."""

    basic: BasicSchedulingPolicy | None = None
    gang: WorkloadPodGroupGangSchedulingPolicy | None = None


@frozen
class JobSchedulingConfiguration:
    """batch/v1 ``spec.scheduling`` (1.37, WorkloadWithJob, KEP-5547): what the job-controller compiles into the
    Job's Workload and PodGroup - the policy, a topology constraint and the disruption mode."""

    scheduling_policy: WorkloadPodGroupSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()


@frozen
class PodFailurePolicyOnExitCodesRequirement:
    """``onExitCodes``: a container (``container_name``, None: any) terminated with a non-zero exit code
    ``In`` / ``NotIn`` ``values``."""

    operator: str = ""
    values: tuple[int, ...] = ()
    container_name: str | None = None


@frozen
class PodFailurePolicyOnPodConditionsPattern:
    """``onPodConditions[]``: the failed pod has condition ``type`` with ``status`` (default True)."""

    type: str = ""
    status: str = "True"


@frozen
class PodFailurePolicyRule:
    """``podFailurePolicy.rules[]``: ``action`` (FailJob, Ignore, Count, FailIndex) when exactly one of
    ``on_exit_codes`` and ``on_pod_conditions`` matches a failed pod."""

    action: str = ""
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: tuple[PodFailurePolicyOnPodConditionsPattern, ...] = ()


@frozen
class PodFailurePolicy:
    """``spec.podFailurePolicy``: the first rule matching a failed pod decides what its failure does."""

    rules: tuple[PodFailurePolicyRule, ...] = ()


@frozen
class SuccessPolicyRule:
    """``successPolicy.rules[]``: the Job succeeds once ``succeeded_count`` of ``succeeded_indexes``
    (``"0-3,5"``; None: any index) succeeded - all of them when the count is None."""

    succeeded_indexes: str | None = None
    succeeded_count: int | None = None


@frozen
class SuccessPolicy:
    """``spec.successPolicy`` (Indexed Jobs): the Job succeeds when any rule is met."""

    rules: tuple[SuccessPolicyRule, ...] = ()


@frozen
class JobSpec:
    """batch/v1 JobSpec.  ``parallelism`` and ``completions`` are defaulted after decoding (see the module);
    ``completions`` None means "until one pod succeeds and the rest finish" (a work queue)."""

    template: PodTemplateSpec = PodTemplateSpec()
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str = "NonIndexed"
    backoff_limit: int = 6
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    suspend: bool = False
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    scheduling: JobSchedulingConfiguration | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: SuccessPolicy | None = None
    extra: dict[str, Any] = field(factory=dict, eq=False)

    def __attrs_post_init__(self):
        if self.parallelism is None:  # upstream SetDefaults_Job: both unset -> 1 and 1; parallelism unset -> 1
            if self.completions is None:
                object.__setattr__(self, "completions", 1)
            object.__setattr__(self, "parallelism", 1)

    @property
    def indexed(self) -> bool:
        """``completionMode: Indexed``: pod i carries completion index i."""
        return self.completion_mode == "Indexed"


@frozen
class Job:
    """batch/v1 Job: the job-controller runs its pods until ``completions`` succeeded."""

    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()
    status: dict[str, Any] = field(factory=dict)


def with_generated_selector(job: Job) -> Job:
    """``job`` as the API server stores it on create (upstream ``jobStrategy.PrepareForCreate`` /
    ``generateSelector``): unless ``manualSelector`` is true, its selector is ``controller-uid=<uid>`` and its
    template carries the controller-uid and job-name labels, both prefixed and legacy."""
    if job.spec.manual_selector:
        return job
    uid, name = job.metadata.uid, job.metadata.name
    added = {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name, LEGACY_CONTROLLER_UID_LABEL: uid,
             LEGACY_JOB_NAME_LABEL: name}
    template = job.spec.template
    labels = {**template.metadata.labels, **added}
    spec = evolve(job.spec, selector=LabelSelector(match_labels={CONTROLLER_UID_LABEL: uid}),
                  template=attrs.evolve(template, metadata=evolve(template.metadata, labels=labels)))
    return evolve(job, spec=spec)


@frozen
class JobTemplateSpec:
    """``spec.jobTemplate``: the metadata and spec of each Job a CronJob creates."""

    metadata: ObjectMeta = ObjectMeta()
    spec: JobSpec = JobSpec()


@frozen
class CronJobSpec:
    """batch/v1 CronJobSpec: ``schedule`` in cron syntax (five fields, or a ``@hourly``-style macro), evaluated in
    ``time_zone`` (default UTC here: the simulated controller manager's zone); ``concurrency_policy`` ``Allow``,
    ``Forbid`` or ``Replace``."""

    schedule: str = ""
    job_template: JobTemplateSpec = JobTemplateSpec()
    time_zone: str | None = None
    concurrency_policy: str = "Allow"
    suspend: bool = False
    starting_deadline_seconds: int | None = None
    successful_jobs_history_limit: int = 3
    failed_jobs_history_limit: int = 1
    extra: dict[str, Any] = field(factory=dict, eq=False)


@frozen
class CronJob:
    """batch/v1 CronJob: the cronjob-controller creates a Job at each schedule time."""

    metadata: ObjectMeta = ObjectMeta()
    spec: CronJobSpec = CronJobSpec()
    status: dict[str, Any] = field(factory=dict)
