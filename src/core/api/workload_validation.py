"""The API server's validation of the workload kinds: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet and
batch/v1 Job, CronJob.

Upstream ``pkg/apis/apps/validation`` and ``pkg/apis/batch/validation``, for
the fields the controllers read: a selector that is required and must select
the template's labels, non-negative counts, the restart policies each kind
allows, the enumerations (strategy type, ``podManagementPolicy``,
``completionMode``, ``concurrencyPolicy``), a CronJob's schedule, and the pod
template's own spec (the pod rules of :mod:`.validation`, under
``spec.template.spec``).  Messages and field paths are upstream's.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from croniter import croniter

from .apps_v1 import DaemonSet, Deployment, PodTemplateSpec, ReplicaSet, StatefulSet
from .batch_v1 import CronJob, Job, JobSpec
from .core_v1 import Pod
from .meta import LabelSelector

NONNEGATIVE = "must be greater than or equal to 0"
#: An Indexed Job's most completions (upstream ``completionsHardLimit``).
INDEXED_COMPLETIONS_LIMIT = 100_000
_PERCENT = re.compile(r"^(\d+)%$")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _nonnegative(path: str, value: int | None) -> list[str]:
    return [f"{path}: Invalid value: {value}: {NONNEGATIVE}"] if value is not None and value < 0 else []


def _not_supported(path: str, value: str, supported: tuple[str, ...]) -> list[str]:
    allowed = ", ".join(f'"{v}"' for v in supported)
    return [f'{path}: Unsupported value: {_json(value)}: supported values: {allowed}']


#: The pod rules (:func:`~.validation.problems` of a Pod: ``metadata.labels: ...``, ``spec.containers: ...``).
PodRules = Callable[[Pod], list[str]]


def template_problems(template: PodTemplateSpec, path: str, pod_rules: PodRules) -> list[str]:
    """A pod template as upstream ``ValidatePodTemplateSpec`` checks it: ``pod_rules`` with their paths under
    ``path`` (``spec.template``)."""
    return [f"{path}.{problem}" for problem in pod_rules(Pod(metadata=template.metadata, spec=template.spec))]


def _selector(path: str, selector: LabelSelector | None, template: PodTemplateSpec, what: str) -> list[str]:
    """The selector is required and non-empty (``empty selector is invalid for <what>``) and selects the
    template's labels."""
    if selector is None:
        return [f"{path}.selector: Required value"]
    if not selector.match_labels and not selector.match_expressions:
        return [f"{path}.selector: Invalid value: {{}}: empty selector is invalid for {what}"]
    if not selector.matches(template.metadata.labels):
        return [f"{path}.template.metadata.labels: Invalid value: {_json(template.metadata.labels)}: "
                "`selector` does not match template `labels`"]
    return []


def _restart_policy(template: PodTemplateSpec) -> str:
    return template.spec.extra.get("restartPolicy", "Always")


def _apps_template(spec: Any, what: str, pod_rules: PodRules) -> list[str]:
    """What every apps/v1 kind shares: selector, template and restart policy Always."""
    out = _selector("spec", spec.selector, spec.template, what) + template_problems(spec.template, "spec.template", pod_rules)
    policy = _restart_policy(spec.template)
    if policy != "Always":
        out += _not_supported("spec.template.spec.restartPolicy", policy, ("Always",))
    return out


def _int_or_percent(path: str, value: Any) -> tuple[list[str], int | None]:
    """(problems, the value when it is a plain number or a percentage's number)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return [f"{path}: Invalid value: {_json(value)}: must be an integer or percentage (e.g '5%')"], None
    if isinstance(value, int):
        return _nonnegative(path, value), value
    match = _PERCENT.match(value)
    if match is None:
        return [f"{path}: Invalid value: {_json(value)}: a valid percent string must be a numeric string followed "
                "by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"], None
    percent = int(match[1])
    if percent > 100:
        return [f"{path}: Invalid value: {_json(value)}: must not be greater than 100%"], percent
    return [], percent


def _deployment(deployment: Deployment, pod_rules: PodRules) -> list[str]:
    """Upstream ``ValidateDeploymentSpec``."""
    spec = deployment.spec
    out = _nonnegative("spec.replicas", spec.replicas) + _apps_template(spec, "deployment", pod_rules)
    strategy = spec.strategy
    if strategy.type not in ("Recreate", "RollingUpdate"):
        out += _not_supported("spec.strategy.type", strategy.type, ("Recreate", "RollingUpdate"))
    elif strategy.type == "Recreate" and strategy.rolling_update is not None:
        out.append("spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
                   "'Recreate'")
    elif strategy.type == "RollingUpdate":
        rolling = spec.rolling()
        base = "spec.strategy.rollingUpdate"
        unavailable_problems, unavailable = _int_or_percent(f"{base}.maxUnavailable", rolling.max_unavailable)
        surge_problems, surge = _int_or_percent(f"{base}.maxSurge", rolling.max_surge)
        out += unavailable_problems + surge_problems
        if unavailable == 0 and surge == 0:
            out.append(f"{base}.maxUnavailable: Invalid value: {_json(rolling.max_unavailable)}: may not be 0 "
                       "when `maxSurge` is 0")
    out += _nonnegative("spec.minReadySeconds", spec.min_ready_seconds)
    out += _nonnegative("spec.revisionHistoryLimit", spec.revision_history_limit)
    return out


def _stateful_set(sts: StatefulSet, pod_rules: PodRules) -> list[str]:
    """Upstream ``ValidateStatefulSetSpec``."""
    spec = sts.spec
    out = []
    if not spec.pod_management_policy:
        out.append("spec.podManagementPolicy: Required value")
    elif spec.pod_management_policy not in ("OrderedReady", "Parallel"):
        out.append(f"spec.podManagementPolicy: Invalid value: {_json(spec.pod_management_policy)}: must be "
                   "'OrderedReady' or 'Parallel'")
    out += _nonnegative("spec.replicas", spec.replicas)
    if spec.ordinals is not None:
        out += _nonnegative("spec.ordinals.start", spec.ordinals.start)
    for i, claim in enumerate(spec.volume_claim_templates):
        if not claim.metadata.name:
            out.append(f"spec.volumeClaimTemplates[{i}].metadata.name: Required value: name or generateName is "
                       "required")
    return out + _update_strategy(spec.update_strategy) + _apps_template(spec, "statefulset", pod_rules)


def _update_strategy(strategy: Any) -> list[str]:
    """Upstream ``ValidateStatefulSetSpec``'s updateStrategy: ``RollingUpdate`` (a non-negative partition, a
    positive maxUnavailable) or ``OnDelete`` (without ``rollingUpdate``)."""
    path, rolling = "spec.updateStrategy", strategy.rolling_update
    if not strategy.type:
        return [f"{path}: Required value"]
    if strategy.type == "OnDelete":
        if rolling is None:
            return []
        shown = {"partition": rolling.partition, **({"maxUnavailable": rolling.max_unavailable}
                                                    if rolling.max_unavailable is not None else {})}
        return [f"{path}.rollingUpdate: Invalid value: {_json(shown)}: only allowed for updateStrategy "
                "'RollingUpdate'"]
    if strategy.type != "RollingUpdate":
        return [f"{path}: Invalid value: {_json({'type': strategy.type})}: must be 'RollingUpdate' or 'OnDelete'"]
    out = _nonnegative(f"{path}.rollingUpdate.partition", rolling.partition)
    if rolling.max_unavailable is not None:
        problems, value = _int_or_percent(f"{path}.rollingUpdate.maxUnavailable", rolling.max_unavailable)
        out += problems
        if not problems and value == 0:
            out.append(f"{path}.rollingUpdate.maxUnavailable: Invalid value: {_json(rolling.max_unavailable)}: "
                       "must be greater than 0")
    return out


def _job_spec(spec: JobSpec, path: str, pod_rules: PodRules) -> list[str]:
    """Upstream ``validateJobSpec``: counts, completion mode, restart policy OnFailure or Never, the template."""
    out = []
    for key, value in (("parallelism", spec.parallelism), ("completions", spec.completions),
                       ("activeDeadlineSeconds", spec.active_deadline_seconds), ("backoffLimit", spec.backoff_limit),
                       ("ttlSecondsAfterFinished", spec.ttl_seconds_after_finished)):
        out += _nonnegative(f"{path}.{key}", value)
    if spec.completion_mode not in ("NonIndexed", "Indexed"):
        out += _not_supported(f"{path}.completionMode", spec.completion_mode, ("NonIndexed", "Indexed"))
    elif spec.indexed:
        if spec.completions is None:
            out.append(f"{path}.completions: Required value: when completion mode is Indexed")
        elif spec.completions > INDEXED_COMPLETIONS_LIMIT:
            out.append(f"{path}.completions: Invalid value: {spec.completions}: must be less than or equal to "
                       f"{INDEXED_COMPLETIONS_LIMIT} when completion mode is Indexed")
    out += template_problems(spec.template, f"{path}.template", pod_rules)
    policy = _restart_policy(spec.template)
    if policy not in ("OnFailure", "Never"):
        out += _not_supported(f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
    return out


def _job(job: Job, pod_rules: PodRules) -> list[str]:
    """Upstream ``ValidateJob``: the spec, a selector (generated by the API server unless manual) that selects the
    template's labels."""
    out = _job_spec(job.spec, "spec", pod_rules)
    selector = job.spec.selector
    if selector is None:
        out.append("spec.selector: Required value")
    elif not selector.matches(job.spec.template.metadata.labels):
        out.append(f"spec.template.metadata.labels: Invalid value: {_json(job.spec.template.metadata.labels)}: "
                   "`selector` does not match template `labels`")
    return out


def cron_problem(schedule: str) -> str:
    """Why ``schedule`` is not a standard cron schedule (five fields or a ``@daily``-style macro), "" when it
    is; ``TZ=``/``CRON_TZ=`` prefixes are refused as upstream refuses them in ``spec.schedule``."""
    if "TZ=" in schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    fields = schedule.split()
    if not schedule.startswith("@") and len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: {schedule}"
    if not croniter.is_valid(schedule):
        return f"unrecognized schedule: {schedule}"
    return ""


def _cron_job(cron_job: CronJob, pod_rules: PodRules) -> list[str]:
    """Upstream ``ValidateCronJobSpec``."""
    spec = cron_job.spec
    out = []
    if not spec.schedule:
        out.append("spec.schedule: Required value")
    else:
        problem = cron_problem(spec.schedule)
        if problem:
            out.append(f"spec.schedule: Invalid value: {_json(spec.schedule)}: {problem}")
    out += _nonnegative("spec.startingDeadlineSeconds", spec.starting_deadline_seconds)
    if not spec.concurrency_policy:
        out.append("spec.concurrencyPolicy: Required value")
    elif spec.concurrency_policy not in ("Allow", "Forbid", "Replace"):
        out += _not_supported("spec.concurrencyPolicy", spec.concurrency_policy, ("Allow", "Forbid", "Replace"))
    out += _job_spec(spec.job_template.spec, "spec.jobTemplate.spec", pod_rules)
    if spec.job_template.spec.selector is not None:
        out.append("spec.jobTemplate.spec.selector: Invalid value: {}: `selector` will be auto-generated")
    return out


def workload_problems(obj: Any, pod_rules: PodRules) -> list[str]:
    """``field: message`` for every rule a workload object breaks (empty for valid ones and other kinds);
    ``pod_rules`` check its pod template."""
    if isinstance(obj, Deployment):
        return _deployment(obj, pod_rules)
    if isinstance(obj, ReplicaSet):
        return _nonnegative("spec.replicas", obj.spec.replicas) + _apps_template(obj.spec, "deployment", pod_rules)
    if isinstance(obj, StatefulSet):
        return _stateful_set(obj, pod_rules)
    if isinstance(obj, DaemonSet):
        return _apps_template(obj.spec, "daemonset", pod_rules)
    if isinstance(obj, Job):
        return _job(obj, pod_rules)
    if isinstance(obj, CronJob):
        return _cron_job(obj, pod_rules)
    return []
