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
    elif spec.pod_failure_policy is not None and policy != "Never":
        out += _not_supported(f"{path}.template.spec.restartPolicy", policy, ("Never",))
    if spec.pod_failure_policy is not None:
        out += _pod_failure_policy(spec, f"{path}.podFailurePolicy")
    if spec.success_policy is not None:
        out += _success_policy(spec, f"{path}.successPolicy")
    out += _unsimulated_job_fields(spec, path)
    return out


def _unsimulated_job_fields(spec: JobSpec, path: str) -> list[str]:
    """Job fields kubesched's job-controller does not simulate, refused rather than kept unused:
    per-index backoff (``backoffLimitPerIndex``, ``maxFailedIndexes``) and ``podReplacementPolicy: Failed``
    (pods deleted in the simulation are gone at once, so only the default ``TerminatingOrFailed`` holds)."""
    out = []
    for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
        if spec.extra.get(key) is not None:
            out.append(f"{path}.{key}: Unsupported value: {_json(spec.extra[key])}: "
                       "kubesched's job-controller does not simulate per-index backoff")
    replacement = spec.extra.get("podReplacementPolicy")
    if replacement not in (None, "TerminatingOrFailed"):
        out.append(f"{path}.podReplacementPolicy: Unsupported value: {_json(replacement)}: "
                   "kubesched's job-controller replaces pods as TerminatingOrFailed does")
    return out


#: upstream ``validPodFailurePolicyAction`` (sorted, as its messages list them)
POD_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")


def _pod_failure_policy(spec: JobSpec, path: str) -> list[str]:
    """Upstream ``validatePodFailurePolicy``: at most 20 rules, each with a known action and exactly one of
    ``onExitCodes`` (In/NotIn, 1-255 ordered unique values, no 0 for In, a template container) and
    ``onPodConditions`` (at most 20, a condition type, status True/False/Unknown)."""
    rules = spec.pod_failure_policy.rules if spec.pod_failure_policy is not None else ()
    out = [f"{path}.rules: Too many: {len(rules)}: must have at most 20 items"] if len(rules) > 20 else []
    containers = {c.name for c in (*spec.template.spec.containers, *spec.template.spec.init_containers)}
    for i, rule in enumerate(rules):
        where = f"{path}.rules[{i}]"
        if not rule.action:
            out.append(f"{where}.action: Required value: valid values: {_json(list(POD_FAILURE_ACTIONS))}")
        elif rule.action == "FailIndex":
            out.append(f"{where}.action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set "
                       "(kubesched does not simulate backoffLimitPerIndex)")
        elif rule.action not in POD_FAILURE_ACTIONS:
            out += _not_supported(f"{where}.action", rule.action, POD_FAILURE_ACTIONS)
        codes = rule.on_exit_codes
        if codes is not None:
            out += _exit_codes(codes, f"{where}.onExitCodes", containers)
        if len(rule.on_pod_conditions) > 20:
            out.append(f"{where}.onPodConditions: Too many: {len(rule.on_pod_conditions)}: must have at most 20 items")
        for j, pattern in enumerate(rule.on_pod_conditions):
            if not pattern.type:
                out.append(f"{where}.onPodConditions[{j}].type: Required value")
            if pattern.status not in ("True", "False", "Unknown"):
                out += _not_supported(f"{where}.onPodConditions[{j}].status", pattern.status,
                                      ("False", "True", "Unknown"))
        if codes is not None and rule.on_pod_conditions:
            out.append(f"{where}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported")
        elif codes is None and not rule.on_pod_conditions:
            out.append(f"{where}: Invalid value: specifying one of OnExitCodes and OnPodConditions is required")
    return out


def _exit_codes(codes: Any, path: str, containers: set) -> list[str]:
    out = []
    if codes.container_name is not None and codes.container_name not in containers:
        out.append(f"{path}.containerName: Invalid value: {_json(codes.container_name)}: must be one of the "
                   "container or initContainer names in the pod template")
    if not codes.operator:
        out.append(f"{path}.operator: Required value: valid values: [\"In\",\"NotIn\"]")
    elif codes.operator not in ("In", "NotIn"):
        out += _not_supported(f"{path}.operator", codes.operator, ("In", "NotIn"))
    if not codes.values:
        out.append(f"{path}.values: Required value: at least one value is required")
    elif len(codes.values) > 255:
        out.append(f"{path}.values: Too many: {len(codes.values)}: must have at most 255 items")
    seen: set[int] = set()
    for k, value in enumerate(codes.values):
        if value in seen:
            out.append(f"{path}.values[{k}]: Duplicate value: {value}")
        elif k and value < codes.values[k - 1]:
            out.append(f"{path}.values[{k}]: Invalid value: {value}: must be ordered")
        if codes.operator == "In" and value == 0:
            out.append(f"{path}.values[{k}]: Invalid value: 0: must not be 0 for the In operator")
        seen.add(value)
    return out


def parse_indexes(text: str, completions: int) -> set[int]:
    """``"0-3,5"`` as a set of indexes (``completedIndexes``' syntax); raises ValueError with upstream's words
    for a malformed, unordered or out-of-range interval."""
    indexes: set[int] = set()
    last = -1
    for part in text.split(","):
        first, _, end = part.partition("-")
        try:
            low, high = int(first), int(end) if end else int(first)
        except ValueError:
            raise ValueError(f"cannot convert string to integer for index: {part!r}") from None
        if low > high or low <= last:
            raise ValueError(f"non-increasing order, previous: {last}, current: {low}")
        if high >= completions:
            raise ValueError(f"too large index: {high}")
        indexes.update(range(low, high + 1))
        last = high
    return indexes


def _success_policy(spec: JobSpec, path: str) -> list[str]:
    """Upstream ``validateSuccessPolicy``: Indexed Jobs only, 1-20 rules, each with ``succeededIndexes`` (within
    the completions) or ``succeededCount`` (at most the completions and the indexes named)."""
    policy = spec.success_policy
    rules = policy.rules if policy is not None else ()
    if not spec.indexed:
        shown = {"rules": [{k: v for k, v in (("succeededIndexes", r.succeeded_indexes),
                                              ("succeededCount", r.succeeded_count)) if v is not None}
                           for r in rules]}
        return [f"{path}: Invalid value: {_json(shown)}: requires indexed completion mode"]
    if not rules:
        return [f"{path}.rules: Required value: at least one rules must be specified when the successPolicy is "
                "specified"]
    out = [f"{path}.rules: Too many: {len(rules)}: must have at most 20 items"] if len(rules) > 20 else []
    completions = spec.completions or 0
    for i, rule in enumerate(rules):
        where = f"{path}.rules[{i}]"
        if rule.succeeded_indexes is None and rule.succeeded_count is None:
            out.append(f"{where}: Required value: at least one of succeededCount or succeededIndexes must be "
                       "specified")
        named = None
        if rule.succeeded_indexes is not None:
            try:
                named = len(parse_indexes(rule.succeeded_indexes, completions))
            except ValueError as err:
                out.append(f"{where}.succeededIndexes: Invalid value: {_json(rule.succeeded_indexes)}: error "
                           f"parsing succeededIndexes: {err}")
        count = rule.succeeded_count
        if count is not None:
            if count < 0:
                out.append(f"{where}.succeededCount: Invalid value: {count}: must be greater than or equal to 0")
            elif count > completions:
                out.append(f"{where}.succeededCount: Invalid value: {count}: must be less than or equal to "
                           f"{completions} (the number of specified completions)")
            elif named is not None and count > named:
                out.append(f"{where}.succeededCount: Invalid value: {count}: must be less than or equal to {named} "
                           "(the number of indexes in the specified succeededIndexes field)")
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
    from croniter import croniter  # here: only a CronJob needs it (~0.02 s of imports)

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
