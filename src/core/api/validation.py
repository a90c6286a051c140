"""The API server's validation of the fields the scheduler reads.

kube-apiserver refuses objects that kubesched would otherwise schedule
silently: names that are not DNS names, malformed label keys and values,
toleration operators and effects that do not exist, negative requests or
requests above limits, pods without containers or with two of one name,
node affinity operators that do not exist, priorities beyond int32; and the
``scheduling.k8s.io`` workload kinds' declarative rules (unions, limits,
formats, and on update their immutability: :func:`update_problems`).
:func:`problems` lists them with upstream's field paths and messages; the
embedded cluster (:class:`~kubesched.core.cluster.memory.MemoryCluster`)
refuses such objects as the API server does (422 Invalid).
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from ..clock import go_duration
from ..quantity import format_quantity
from .batch_v1 import CronJob, Job, JobSpec
from .convert import printable
from .core_v1 import RUN_DURATION_ANNOTATION, Container, Namespace, Node, Pod, PodSpec, ResourceRequirements
from .resource_helpers import (
    HUGEPAGES_PREFIX,
    is_supported_pod_level_resource,
    pod_level_requests,
    pod_limits,
    pod_requests,
)
from .resource_v1 import ResourceClaim
from .scheduling_v1beta1 import WORKLOAD_MAX_TREE_DEPTH, CompositePodGroup, PodGroup, Workload
from .workload_validation import workload_problems

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_TEXT = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character")
LABEL_TEXT = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character")
NAME_PART_TEXT = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character")
VALUE_TEXT = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
              "and must start and end with an alphanumeric character")

TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
INT32 = (-(2**31), 2**31 - 1)


#: metadata.annotations: the most bytes of keys and values together (upstream TotalAnnotationSizeLimitB)
ANNOTATIONS_MAX_BYTES = 256 * 1024
PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")
PORT_RANGE = "must be between 1 and 65535, inclusive"


def _q(value: Any) -> str:
    """A value quoted as the API server's messages quote it (Go's %q: control
    characters escaped, ``"\\x1b"``, so that no message can drive a terminal)."""
    return printable(value, quoted=True) if isinstance(value, str) else json.dumps(value)


def problems(obj: Any) -> list[str]:
    """``field: message`` for every rule ``obj`` breaks (empty: valid): the
    metadata rules for every kind, the spec rules for Pods."""
    found: list[str] = []
    meta = obj.metadata
    if meta.name:
        pattern, text = (DNS1123_LABEL, LABEL_TEXT) if isinstance(obj, Namespace) else (DNS1123_SUBDOMAIN,
                                                                                         SUBDOMAIN_TEXT)
        if len(meta.name) > 253 or not pattern.match(meta.name):
            found.append(f"metadata.name: Invalid value: {_q(meta.name)}: {text}")
    if meta.namespace and (len(meta.namespace) > 63 or not DNS1123_LABEL.match(meta.namespace)):
        found.append(f"metadata.namespace: Invalid value: {_q(meta.namespace)}: {LABEL_TEXT}")
    found += labels("metadata.labels", meta.labels)
    found += annotation_problems(meta.annotations)
    if isinstance(obj, Pod):
        found += _pod(obj) + _scheduling_group(obj)
    elif isinstance(obj, Node):
        found += _node(obj)
    elif isinstance(obj, PodGroup):
        found += _pod_group(obj)
    elif isinstance(obj, CompositePodGroup):
        found += _composite_pod_group(obj)
    elif isinstance(obj, Workload):
        found += _workload(obj)
    else:
        found += workload_problems(obj, _pod_template_rules)
        if isinstance(obj, Job):
            found += _job_scheduling("spec", obj.spec)
        elif isinstance(obj, CronJob):
            found += _job_scheduling("spec.jobTemplate.spec", obj.spec.job_template.spec)
    return found


def _job_scheduling(path: str, spec: JobSpec) -> list[str]:
    """A Job's ``spec.scheduling`` (KEP-5547, 1.37): the Workload building blocks as a PodGroup template's, a
    policy union when given (omitted: Basic), ``gang.minCount`` at least 1 and at most ``parallelism``."""
    config = spec.scheduling
    if config is None:
        return []
    where = f"{path}.scheduling"
    out: list[str] = []
    policy = config.scheduling_policy
    basic = policy is None or policy.gang is None
    if policy is not None:
        out += _union(f"{where}.schedulingPolicy", {"basic": policy.basic, "gang": policy.gang})
        count = policy.gang.min_count if policy.gang is not None else None
        if count is not None:
            if count < 1:
                out.append(f"{where}.schedulingPolicy.gang.minCount: Invalid value: {count}: must be greater than "
                           "or equal to 1")
            elif spec.parallelism is not None and count > spec.parallelism:
                out.append(f"{where}.schedulingPolicy.gang.minCount: Invalid value: {count}: must be less than or "
                           f"equal to spec.parallelism ({spec.parallelism})")
    return (out + _constraints(where, config.scheduling_constraints)
            + _disruption(where, config.disruption_mode, basic) + _claims(where, config.resource_claims))


def _pod_template_rules(pod: Pod) -> list[str]:
    """The rules of a workload's pod template: its labels and its pod spec (paths relative to the template)."""
    return labels("metadata.labels", pod.metadata.labels) + _pod(pod)


def qualified_name(field: str, key: str) -> list[str]:
    """Upstream ``IsQualifiedName``: ``[prefix/]name``, prefix a DNS subdomain, name at most 63 characters."""
    prefix, slash, name = key.rpartition("/")
    out = []
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        out.append(f"{field}: Invalid value: {_q(key)}: prefix part {SUBDOMAIN_TEXT}")
    if not name:
        out.append(f"{field}: Invalid value: {_q(key)}: name part must be non-empty")
    elif len(name) > 63:
        out.append(f"{field}: Invalid value: {_q(key)}: name part must be no more than 63 characters")
    elif not QUALIFIED_NAME_PART.match(name):
        out.append(f"{field}: Invalid value: {_q(key)}: {NAME_PART_TEXT}")
    return out


def labels(field: str, values: dict[str, str]) -> list[str]:
    """Label (or node selector) keys and values as upstream validates them."""
    out = []
    for key, value in values.items():
        out += qualified_name(field, key)
        if not isinstance(value, str) or len(value) > 63:
            out.append(f"{field}: Invalid value: {_q(value)}: must be no more than 63 characters")
        elif not LABEL_VALUE.match(value):
            out.append(f"{field}: Invalid value: {_q(value)}: {VALUE_TEXT}")
    return out


def annotation_problems(values: dict[str, str]) -> list[str]:
    """Upstream ``ValidateAnnotations``: qualified-name keys, at most
    :data:`ANNOTATIONS_MAX_BYTES` of keys and values together."""
    out = []
    total = 0
    for key, value in values.items():
        out += qualified_name("metadata.annotations", key.lower())
        total += len(key.encode()) + len(value.encode())
    if total > ANNOTATIONS_MAX_BYTES:
        out.append(f"metadata.annotations: Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes")
    return out


def _node(node: Node) -> list[str]:
    """Upstream ``ValidateNode``'s taints and resource amounts."""
    out = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(node.spec.taints):
        where = f"spec.taints[{i}]"
        out += qualified_name(f"{where}.key", taint.key)
        if taint.value and (len(taint.value) > 63 or not LABEL_VALUE.match(taint.value)):
            out.append(f"{where}.value: Invalid value: {_q(taint.value)}: {VALUE_TEXT}")
        if not taint.effect:
            out.append(f"{where}.effect: Required value")
        elif taint.effect not in TAINT_EFFECTS:
            out.append(f"{where}.effect: Unsupported value: {_q(taint.effect)}: supported values: "
                       '"NoSchedule", "PreferNoSchedule", "NoExecute"')
        elif (taint.key, taint.effect) in seen:
            out.append(f"{where}: Duplicate value: {_q(taint.key)}: taints must be unique by key and effect pair")
        seen.add((taint.key, taint.effect))
    for kind, amounts in (("capacity", node.status.capacity), ("allocatable", node.status.allocatable)):
        for name, amount in amounts.items():
            if amount < 0:
                out.append(f"status.{kind}[{name}]: Invalid value: {_q(format_quantity(name, amount))}: "
                           "must be greater than or equal to 0")
    return out


def _pod(pod: Pod) -> list[str]:
    spec = pod.spec
    out = labels("spec.nodeSelector", spec.node_selector)
    if not spec.containers:
        out.append("spec.containers: Required value")
    seen: set[str] = set()
    for field, containers in (("spec.initContainers", spec.init_containers), ("spec.containers", spec.containers)):
        for i, container in enumerate(containers):
            where = f"{field}[{i}]"
            if not container.name:
                out.append(f"{where}.name: Required value")
            elif len(container.name) > 63 or not DNS1123_LABEL.match(container.name):
                out.append(f"{where}.name: Invalid value: {_q(container.name)}: {LABEL_TEXT}")
            elif container.name in seen:
                out.append(f"{where}.name: Duplicate value: {_q(container.name)}")
            seen.add(container.name)
            out += _resources(where, container) + _ports(where, container)
    if spec.resources is not None:
        out += _pod_level_resources(pod)
    for i, toleration in enumerate(spec.tolerations):
        where = f"spec.tolerations[{i}]"
        if toleration.key:
            out += qualified_name(f"{where}.key", toleration.key)
        if toleration.operator and toleration.operator not in TOLERATION_OPERATORS:
            out.append(f"{where}.operator: Unsupported value: {_q(toleration.operator)}: supported values: "
                       '"Equal", "Exists"')
        if toleration.operator == "Exists" and toleration.value:
            out.append(f"{where}.operator: Invalid value: {_q(toleration.value)}: value must be empty when "
                       "`operator` is 'Exists'")
        if not toleration.key and toleration.operator != "Exists":
            out.append(f"{where}.operator: Invalid value: {_q(toleration.operator)}: operator must be Exists when "
                       "`key` is empty, which means \"match all values and all keys\"")
        if toleration.effect and toleration.effect not in TAINT_EFFECTS:
            out.append(f"{where}.effect: Unsupported value: {_q(toleration.effect)}: supported values: "
                       '"NoSchedule", "PreferNoSchedule", "NoExecute"')
    out += _run_duration(pod)
    if spec.priority is not None and not INT32[0] <= spec.priority <= INT32[1]:
        out.append(f"spec.priority: Invalid value: {spec.priority}: must be a 32-bit integer")
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    if affinity is not None:
        base = "spec.affinity.nodeAffinity"
        required = affinity.required_during_scheduling_ignored_during_execution
        terms = [(f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", t)
                 for i, t in enumerate(required.node_selector_terms if required is not None else ())]
        terms += [(f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference", p.preference)
                  for i, p in enumerate(affinity.preferred_during_scheduling_ignored_during_execution)]
        for where, term in terms:
            for j, requirement in enumerate(term.match_expressions):
                out += _requirement(f"{where}.matchExpressions[{j}]", requirement)
    return out


def _run_duration(pod: Pod) -> list[str]:
    """kubesched's ``kubesched.io/run-duration`` annotation must be a non-negative Go duration."""
    text = pod.metadata.annotations.get(RUN_DURATION_ANNOTATION)
    if text is None:
        return []
    try:
        if go_duration(text) >= 0:
            return []
    except ValueError:
        pass
    return [f"metadata.annotations[{RUN_DURATION_ANNOTATION}]: Invalid value: {_q(text)}: must be a duration "
            "such as 90s, 10m or 1h30m"]


def _requirement(where: str, requirement: Any) -> list[str]:
    """Upstream ``ValidateNodeSelectorRequirement``."""
    operator, values = requirement.operator, requirement.values
    if operator not in SELECTOR_OPERATORS:
        return [f"{where}.operator: Invalid value: {_q(operator)}: not a valid selector operator"]
    out = qualified_name(f"{where}.key", requirement.key)
    if operator in ("In", "NotIn") and not values:
        out.append(f"{where}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist") and values:
        out.append(f"{where}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1 or not re.fullmatch(r"-?\d+", values[0]):
            out.append(f"{where}.values: Required value: must be specified single value when `operator` is "
                       "'Lt' or 'Gt'")
    return out


def _ports(where: str, container: Container) -> list[str]:
    """Upstream ``validateContainerPorts``: port numbers and protocols."""
    out = []
    for i, port in enumerate(container.ports):
        at = f"{where}.ports[{i}]"
        if not port.container_port:
            out.append(f"{at}.containerPort: Required value")
        elif not 1 <= port.container_port <= 65535:
            out.append(f"{at}.containerPort: Invalid value: {port.container_port}: {PORT_RANGE}")
        if port.host_port and not 1 <= port.host_port <= 65535:
            out.append(f"{at}.hostPort: Invalid value: {port.host_port}: {PORT_RANGE}")
        if port.protocol not in PORT_PROTOCOLS:
            out.append(f"{at}.protocol: Unsupported value: {_q(port.protocol)}: supported values: "
                       '"SCTP", "TCP", "UDP"')
    return out


def _resources(where: str, container: Container) -> list[str]:
    out = []
    requests, limits = container.resources.requests, container.resources.limits
    for kind, amounts in (("requests", requests), ("limits", limits)):
        for name, amount in amounts.items():
            if amount < 0:
                out.append(f"{where}.resources.{kind}[{name}]: Invalid value: {_q(format_quantity(name, amount))}: "
                           "must be greater than or equal to 0")
    for name, amount in requests.items():
        limit = limits.get(name)
        if limit is not None and amount > limit:
            out.append(f"{where}.resources.requests: Invalid value: {_q(format_quantity(name, amount))}: "
                       f"must be less than or equal to {name} limit of {format_quantity(name, limit)}")
    return out


def _pod_level_resources(pod: Pod) -> list[str]:
    """Upstream ``validatePodResources`` (KEP-2837): only cpu, memory and
    hugepages-* at pod level, none negative, requests within limits (hugepages
    equal to them), hugepages only with a cpu or memory limit; the pod-level
    requests cover the containers' aggregate requests, a pod-level hugepages
    limit their aggregate limits, and no container limits more than the pod."""
    spec = pod.spec
    resources = spec.resources
    assert resources is not None
    path = "spec.resources"
    if str((spec.extra.get("os") or {}).get("name", "")).lower() == "windows":
        return [f"{path}: Forbidden: pod-level resources are not supported for Windows pods"]
    out = []
    requests, limits = resources.requests, resources.limits
    supported = ", ".join(_q(name) for name in sorted(("cpu", "memory", HUGEPAGES_PREFIX)))
    for kind, amounts in (("limits", limits), ("requests", requests)):
        for name, amount in sorted(amounts.items()):
            where = f"{path}.{kind}[{name}]"
            if not is_supported_pod_level_resource(name):
                out.append(f"{where}: Unsupported value: {_q(name)}: supported values: {supported}")
            if amount < 0:
                out.append(f"{where}: Invalid value: {_q(format_quantity(name, amount))}: "
                           "must be greater than or equal to 0")
    for name, amount in sorted(requests.items()):
        limit = limits.get(name)
        shown = _q(format_quantity(name, amount))
        if limit is None:
            if name.startswith(HUGEPAGES_PREFIX):
                out.append(f"{path}.limits: Required value: Limit must be set for non overcommitable resources")
        elif name.startswith(HUGEPAGES_PREFIX) and amount != limit:
            out.append(f"{path}.requests: Invalid value: {shown}: must be equal to {name} limit of "
                       f"{format_quantity(name, limit)}")
        elif amount > limit:
            out.append(f"{path}.requests: Invalid value: {shown}: must be less than or equal to {name} limit of "
                       f"{format_quantity(name, limit)}")
    if any(n.startswith(HUGEPAGES_PREFIX) for n in limits) and not ({"cpu", "memory"} & set(limits)):
        out.append(f"{path}.limits: Forbidden: HugePages require cpu or memory")
    effective = pod_level_requests(pod)
    for name, aggregate in sorted(pod_requests(pod, use_status=False, pod_level=False,
                                               exclude_overhead=True).items()):
        if name in effective and aggregate > effective[name]:
            out.append(f"{path}.requests[{name}]: Invalid value: {_q(format_quantity(name, effective[name]))}: "
                       f"must be greater than or equal to aggregate container requests of "
                       f"{format_quantity(name, aggregate)}")
    for name, aggregate in sorted(pod_limits(pod, pod_level=False).items()):
        if name.startswith(HUGEPAGES_PREFIX) and name in limits and aggregate > limits[name]:
            out.append(f"{path}.limits[{name}]: Invalid value: {_q(format_quantity(name, limits[name]))}: "
                       f"must be greater than or equal to aggregate container limits of "
                       f"{format_quantity(name, aggregate)}")
    for index, container in enumerate(spec.containers):
        for name, limit in sorted(container.resources.limits.items()):
            if name in limits and limit > limits[name]:
                out.append(f"{path}.containers[{index}][{name}].limits: Invalid value: "
                           f"{_q(format_quantity(name, limit))}: must be less than or equal to pod limits of "
                           f"{format_quantity(name, limits[name])}")
    return out


# --- scheduling.k8s.io Workload, PodGroup, CompositePodGroup (declarative +k8s: rules) -------------

UNION_EMPTY = "must specify one of: {}"
UNION_MANY = "must specify exactly one of: {}"
IMMUTABLE = "Forbidden: field is immutable"
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
CONDITION_STATUSES = ("False", "True", "Unknown")
CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
CONDITION_REASON_TEXT = ("a condition reason must start with alphabetic character, optionally followed by a string "
                         "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'")
BASIC_ALL_TEXT = "the disruptionMode `all` is not supported with the Basic scheduling policy"


def short_name(field: str, value: str) -> list[str]:
    """``+k8s:format=k8s-short-name`` (a DNS label); empty means unset (``Required value``)."""
    return _dns_name(field, value, DNS1123_LABEL, 63, LABEL_TEXT)


def long_name(field: str, value: str) -> list[str]:
    """``+k8s:format=k8s-long-name`` (a DNS subdomain); empty means unset (``Required value``)."""
    return _dns_name(field, value, DNS1123_SUBDOMAIN, 253, SUBDOMAIN_TEXT)


def _dns_name(field: str, value: str, pattern: re.Pattern, limit: int, text: str) -> list[str]:
    if not value:
        return [f"{field}: Required value"]
    out = []
    if len(value) > limit:
        out.append(f"{field}: Invalid value: {_q(value)}: must be no more than {limit} characters")
    if not pattern.match(value):
        out.append(f"{field}: Invalid value: {_q(value)}: {text}")
    return out


def _path_segment(field: str, value: str) -> list[str]:
    """``+k8s:format=k8s-path-segment-name``, required."""
    if not value:
        return [f"{field}: Required value"]
    if value in (".", ".."):
        return [f"{field}: Invalid value: {_q(value)}: may not be '{value}'"]
    return [f"{field}: Invalid value: {_q(value)}: may not contain '{c}'" for c in "/%" if c in value]


def _union(field: str, members: dict[str, Any]) -> list[str]:
    """``+k8s:unionMember``: exactly one of ``members`` (manifest name -> value, None or empty = unset)."""
    names = ", ".join(f"`{name}`" for name in members)
    given = [name for name, value in members.items() if value is not None and value != ()]
    if not given:
        return [f"{field}: Invalid value: \"\": {UNION_EMPTY.format(names)}"]
    if len(given) > 1:
        return [f"{field}: Invalid value: \"{{{', '.join(given)}}}\": {UNION_MANY.format(names)}"]
    return []


def _max_items(field: str, items: tuple, limit: int) -> list[str]:
    noun = "item" if limit == 1 else "items"
    return [f"{field}: Too many: {len(items)}: must have at most {limit} {noun}"] if len(items) > limit else []


def _unique_names(field: str, items: tuple) -> list[str]:
    """``+k8s:listType=map`` keyed by ``name``: a later item repeating a name is a duplicate."""
    seen: set[str] = set()
    out = []
    for i, item in enumerate(items):
        if item.name in seen:
            out.append(f"{field}[{i}]: Duplicate value: {_q(item.name)}")
        seen.add(item.name)
    return out


def _minimum_one(field: str, value: int) -> list[str]:
    """``+k8s:required`` and ``+k8s:minimum=1`` on an integer (0 is unset)."""
    if value == 0:
        return [f"{field}: Required value"]
    return [f"{field}: Invalid value: {value}: must be greater than or equal to 1"] if value < 0 else []


def _priority_fields(path: str, spec: Any) -> list[str]:
    """``priorityClassName`` (a long name), ``priority`` (at most 1e9), ``preemptionPolicy`` (an enum)."""
    out = long_name(f"{path}.priorityClassName", spec.priority_class_name) if spec.priority_class_name else []
    if spec.priority is not None and spec.priority > 1_000_000_000:
        out.append(f"{path}.priority: Invalid value: {spec.priority}: must be less than or equal to 1000000000")
    policy = spec.preemption_policy
    if policy is not None and policy not in PREEMPTION_POLICIES:
        out.append(f"{path}.preemptionPolicy: Unsupported value: {_q(policy)}: supported values: "
                   + ", ".join(_q(p) for p in PREEMPTION_POLICIES))
    return out


def _constraints(path: str, constraints: Any) -> list[str]:
    if constraints is None:
        return []
    where = f"{path}.schedulingConstraints.topology"
    out = _max_items(where, constraints.topology, 1)
    for i, constraint in enumerate(constraints.topology):
        key = f"{where}[{i}].key"
        out += qualified_name(key, constraint.key) if constraint.key else [f"{key}: Required value"]
    return out


def _disruption(path: str, mode: Any, basic: bool) -> list[str]:
    if mode is None:
        return []
    out = _union(f"{path}.disruptionMode", {"single": mode.single, "all": mode.all})
    if basic and mode.all is not None:  # KEP-5710: a basic group is not disrupted as a whole
        out.append(f"{path}.disruptionMode.all: Invalid value: \"\": {BASIC_ALL_TEXT}")
    return out


def _claims(path: str, claims: tuple) -> list[str]:
    where = f"{path}.resourceClaims"
    out = _max_items(where, claims, 4) + _unique_names(where, claims)
    for i, claim in enumerate(claims):
        item = f"{where}[{i}]"
        out += short_name(f"{item}.name", claim.name)
        out += _union(item, {"resourceClaimName": claim.resource_claim_name,
                             "resourceClaimTemplateName": claim.resource_claim_template_name})
        for key, value in (("resourceClaimName", claim.resource_claim_name),
                           ("resourceClaimTemplateName", claim.resource_claim_template_name)):
            if value is not None:
                out += long_name(f"{item}.{key}", value)
    return out


def _policy(path: str, policy: Any, count_key: str) -> list[str]:
    """A scheduling policy union (``basic: {}`` or ``gang: {<count_key>: >= 1}``)."""
    where = f"{path}.schedulingPolicy"
    out = _union(where, {"basic": policy.basic, "gang": policy.gang})
    if policy.gang is not None:
        count = policy.gang.min_count if count_key == "minCount" else policy.gang.min_group_count
        out += _minimum_one(f"{where}.gang.{count_key}", count)
    return out


def _workload_ref(path: str, ref: Any) -> list[str]:
    return long_name(f"{path}.workloadName", ref.workload_name) + short_name(f"{path}.templateName", ref.template_name)


def _group_fields(path: str, spec: Any, count_key: str) -> list[str]:
    """What PodGroups, CompositePodGroups and both kinds of template share."""
    basic = spec.scheduling_policy.basic is not None and spec.scheduling_policy.gang is None
    return (_policy(path, spec.scheduling_policy, count_key) + _constraints(path, spec.scheduling_constraints)
            + _disruption(path, spec.disruption_mode, basic) + _priority_fields(path, spec))


def _conditions(path: str, conditions: tuple) -> list[str]:
    """meta/v1 ``ValidateConditions``: one per type, each well formed."""
    out = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        where = f"{path}[{i}]"
        if condition.type in seen:
            out.append(f"{where}.type: Duplicate value: {_q(condition.type)}")
        seen.add(condition.type)
        out += qualified_name(f"{where}.type", condition.type)
        if condition.status not in CONDITION_STATUSES:
            out.append(f"{where}.status: Unsupported value: {_q(condition.status)}: supported values: "
                       + ", ".join(_q(s) for s in CONDITION_STATUSES))
        if condition.observed_generation < 0:
            out.append(f"{where}.observedGeneration: Invalid value: {condition.observed_generation}: must be "
                       "greater than or equal to zero")
        if condition.last_transition_time is None:
            out.append(f"{where}.lastTransitionTime: Required value: must be set")
        if not condition.reason:
            out.append(f"{where}.reason: Required value: must be set")
        elif not CONDITION_REASON.match(condition.reason):
            out.append(f"{where}.reason: Invalid value: {_q(condition.reason)}: {CONDITION_REASON_TEXT}")
        elif len(condition.reason) > 1024:
            out.append(f"{where}.reason: Too long: may not be more than 1024 bytes")
        if len(condition.message) > 32 * 1024:
            out.append(f"{where}.message: Too long: may not be more than 32768 bytes")
    return out


def _pod_group(group: Any) -> list[str]:
    spec = group.spec
    out = []
    if spec.parent_composite_pod_group_name is not None:
        out += long_name("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name)
        if spec.workload_ref is None:
            out.append("spec.workloadRef: Required value: must be set when parentCompositePodGroupName is set")
    if spec.workload_ref is not None:
        out += _workload_ref("spec.workloadRef", spec.workload_ref)
    out += _group_fields("spec", spec, "minCount") + _claims("spec", spec.resource_claims)
    out += _max_items("status.resourceClaimStatuses", group.status.resource_claim_statuses, 4)
    return out + _conditions("status.conditions", group.status.conditions)


def _composite_pod_group(group: Any) -> list[str]:
    spec = group.spec
    out = []
    if spec.parent_composite_pod_group_name is not None:
        out += long_name("spec.parentCompositePodGroupName", spec.parent_composite_pod_group_name)
    if spec.workload_ref is None:
        out.append("spec.workloadRef: Required value")
    else:
        out += _workload_ref("spec.workloadRef", spec.workload_ref)
    out += _group_fields("spec", spec, "minGroupCount")
    return out + _conditions("status.conditions", group.status.conditions)


def _templates(path: str, node: Any, level: int = 1) -> list[str]:
    """The ``podGroupTemplates`` and ``compositePodGroupTemplates`` lists of a
    Workload spec or a composite template (at most 8 each, unique names),
    recursively; the templates at ``level`` (the spec's are level 1) may be no
    deeper than upstream's WorkloadMaxTreeDepth (4)."""
    if level > WORKLOAD_MAX_TREE_DEPTH and (node.pod_group_templates or node.composite_pod_group_templates):
        key = "compositePodGroupTemplates" if node.composite_pod_group_templates else "podGroupTemplates"
        return [f"{path}.{key}: Too many: the template tree is deeper than {WORKLOAD_MAX_TREE_DEPTH} levels: "
                f"must have at most {WORKLOAD_MAX_TREE_DEPTH}"]
    out = []
    for key, items in (("podGroupTemplates", node.pod_group_templates),
                       ("compositePodGroupTemplates", node.composite_pod_group_templates)):
        where = f"{path}.{key}"
        out += _max_items(where, items, 8) + _unique_names(where, items)
        for i, template in enumerate(items):
            item = f"{where}[{i}]"
            out += short_name(f"{item}.name", template.name)
            if key == "podGroupTemplates":
                out += _group_fields(item, template, "minCount") + _claims(item, template.resource_claims)
            else:
                out += _group_fields(item, template, "minGroupCount") + _templates(item, template, level + 1)
    return out


def _workload(workload: Any) -> list[str]:
    spec = workload.spec
    out = []
    ref = spec.controller_ref
    if ref is not None:
        if ref.api_group:
            out += long_name("spec.controllerRef.apiGroup", ref.api_group)
        out += _path_segment("spec.controllerRef.kind", ref.kind) + _path_segment("spec.controllerRef.name", ref.name)
    out += _union("spec", {"podGroupTemplates": spec.pod_group_templates,
                           "compositePodGroupTemplates": spec.composite_pod_group_templates})
    return out + _templates("spec", spec)


def _scheduling_group(pod: Pod) -> list[str]:
    """``spec.schedulingGroup``: a union with one member, ``podGroupName`` (a long name)."""
    group = pod.spec.scheduling_group
    if group is None:
        return []
    if group.pod_group_name is None:
        return _union("spec.schedulingGroup", {"podGroupName": None})
    return long_name("spec.schedulingGroup.podGroupName", group.pod_group_name)


def _changed(path: str, old: Any, new: Any) -> list[str]:
    """``+k8s:immutable``: ``Forbidden: field is immutable`` when the value changed."""
    return [f"{path}: {IMMUTABLE}"] if old != new else []


def _policy_update(path: str, old: Any, new: Any) -> list[str]:
    """basic is immutable; gang may be neither set nor cleared (its count may change)."""
    where = f"{path}.schedulingPolicy"
    out = _changed(f"{where}.basic", old.basic, new.basic)
    if old.gang is None and new.gang is not None:
        out.append(f"{where}.gang: Invalid value: \"null\": field cannot be set once created")
    elif old.gang is not None and new.gang is None:
        out.append(f"{where}.gang: Invalid value: \"null\": field cannot be cleared once set")
    return out


_FROZEN = (("schedulingConstraints", "scheduling_constraints"), ("disruptionMode", "disruption_mode"),
           ("priorityClassName", "priority_class_name"), ("priority", "priority"),
           ("preemptionPolicy", "preemption_policy"))


def _group_update(path: str, old: Any, new: Any, extra: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """The immutable fields of a PodGroup (spec) or of a template."""
    out = []
    for key, name in _FROZEN + extra:
        out += _changed(f"{path}.{key}", getattr(old, name), getattr(new, name))
    return out


def _templates_update(path: str, old: Any, new: Any) -> list[str]:
    """``NoAddItem``/``NoRemoveItem`` on both template lists (matched by name), then each kept template."""
    out = []
    for key, name in (("podGroupTemplates", "pod_group_templates"),
                      ("compositePodGroupTemplates", "composite_pod_group_templates")):
        where = f"{path}.{key}"
        before = {t.name: t for t in getattr(old, name)}
        after = {t.name for t in getattr(new, name)}
        for i, template in enumerate(getattr(new, name)):
            previous = before.get(template.name)
            if previous is None:
                out.append(f"{where}[{i}]: Forbidden: item may not be added")
                continue
            item = f"{where}[{i}]"
            if key == "podGroupTemplates":
                out += _policy_update(item, previous.scheduling_policy, template.scheduling_policy)
                out += _group_update(item, previous, template, (("resourceClaims", "resource_claims"),))
            else:
                out += _group_update(item, previous, template) + _templates_update(item, previous, template)
        out += [f"{where}: Forbidden: item may not be removed" for t in getattr(old, name) if t.name not in after]
    return out


def update_problems(old: Any, new: Any) -> list[str]:
    """``field: message`` for every rule an update from ``old`` to ``new`` breaks
    (empty: allowed), for the kinds whose updates the embedded API server
    checks: Workload, PodGroup and CompositePodGroup (every rule of
    :func:`problems` on ``new``, plus upstream's immutability: templates may
    not be added or removed, a group's policy may not switch between basic
    and gang, and of a PodGroup's spec only ``gang.minCount`` may change) and
    Pod (``spec.schedulingGroup`` is immutable, and of the rest of the spec
    only what :data:`POD_UPDATE_FORBIDDEN` names may change).  Other kinds: empty."""
    if isinstance(new, Pod):
        return (_changed("spec.schedulingGroup", old.spec.scheduling_group, new.spec.scheduling_group)
                + _pod_spec_update(old, new))
    if not isinstance(new, (PodGroup, CompositePodGroup, Workload)):
        return []
    out = problems(new)
    if isinstance(new, Workload):
        out += _changed("spec.controllerRef", old.spec.controller_ref, new.spec.controller_ref)
        return out + _templates_update("spec", old.spec, new.spec)
    immutable: tuple[tuple[str, str], ...] = (("parentCompositePodGroupName", "parent_composite_pod_group_name"),
                                              ("workloadRef", "workload_ref"))
    if isinstance(new, PodGroup):
        out += _policy_update("spec", old.spec.scheduling_policy, new.spec.scheduling_policy)
        immutable += (("resourceClaims", "resource_claims"),)
    else:
        immutable += (("schedulingPolicy", "scheduling_policy"),)
    return out + _group_update("spec", old.spec, new.spec, immutable)


#: kube-apiserver's refusal of a pod update that changes more of the spec than it may.
POD_UPDATE_FORBIDDEN = ("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
                        "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
                        "to 1 if it was previously negative)")
#: What a pod's scheduling gates allow beyond that (upstream's mutable scheduling directives of a gated pod).
GATES_ONLY_REMOVED = "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate"
#: How many consumers a ResourceClaim may be reserved for.
RESERVED_FOR_MAX = 256


def _pod_spec_update(old: Pod, new: Pod) -> list[str]:
    """Upstream's ``ValidatePodUpdate``: the spec may change only in container
    and init-container images, added tolerations, removed scheduling gates
    and fields kubesched keeps unmodelled (``extra``: not compared, as
    ``activeDeadlineSeconds`` may change); ``spec.nodeName`` only through
    pods/binding.  A gated pod may also gain node selector entries and change
    its node affinity (mutable scheduling directives)."""
    before, after = old.spec, new.spec
    if before is after:  # a status write, a label change: the spec is the stored one
        return []
    out = []
    if not set(after.scheduling_gates) <= set(before.scheduling_gates):
        out.append(GATES_ONLY_REMOVED)
    if [c.name for c in after.containers] != [c.name for c in before.containers] \
            or [c.name for c in after.init_containers] != [c.name for c in before.init_containers]:
        return out + [POD_UPDATE_FORBIDDEN]
    masked = attrs.evolve(
        after,
        containers=tuple(attrs.evolve(c, image=b.image) for c, b in zip(after.containers, before.containers)),
        init_containers=tuple(attrs.evolve(c, image=b.image)
                              for c, b in zip(after.init_containers, before.init_containers)),
        tolerations=before.tolerations if set(before.tolerations) <= set(after.tolerations) else after.tolerations,
        scheduling_gates=before.scheduling_gates, scheduling_group=before.scheduling_group)
    if before.scheduling_gates and set(before.node_selector.items()) <= set(after.node_selector.items()):
        masked = attrs.evolve(masked, node_selector=before.node_selector, affinity=before.affinity)
    if masked != before:
        out.append(POD_UPDATE_FORBIDDEN)
    return out


def status_update_problems(old: Any, new: Any) -> list[str]:
    """``field: message`` for every rule a ``/status`` update from ``old`` to
    ``new`` breaks (empty: allowed).  ResourceClaim (upstream's
    ``validateResourceClaimStatusUpdate``): ``reservedFor`` holds at most
    :data:`RESERVED_FOR_MAX` consumers, each with resource, name and a unique
    uid, and only with an allocation (so a claim still reserved cannot be
    deallocated), and gains none once the claim is being deleted; an
    allocation, once set, is immutable (it may only be cleared); a device
    status must name an allocated device.  Other kinds: empty."""
    if not isinstance(new, ResourceClaim):
        return []
    status, before = new.status, old.status
    out = []
    reserved = status.reserved_for
    if len(reserved) > RESERVED_FOR_MAX:
        out.append(f"status.reservedFor: Too many: {len(reserved)}: must have at most {RESERVED_FOR_MAX} items")
    seen: set[str] = set()
    for index, ref in enumerate(reserved):
        where = f"status.reservedFor[{index}]"
        out += [f"{where}.{name}: Required value" for name in ("resource", "name", "uid") if not getattr(ref, name)]
        if ref.uid and ref.uid in seen:
            out.append(f"{where}: Duplicate value: {_q(ref.uid)}")
        seen.add(ref.uid)
    if reserved and status.allocation is None:
        out.append("status.reservedFor: Forbidden: may not be specified when `allocated` is not set")
    elif new.metadata.deletion_timestamp is not None and not set(reserved) <= set(before.reserved_for):
        out.append("status.reservedFor: Forbidden: new entries may not be added while `deallocationRequested` or "
                   "`deletionTimestamp` are set")
    if before.allocation is not None and status.allocation is not None and status.allocation != before.allocation:
        out.append("status.allocation: Invalid value: \"object\": field is immutable")
    allocated = set()
    if status.allocation is not None:
        allocated = {(r.driver, r.pool, r.device, r.share_id) for r in status.allocation.devices.results}
    for index, device in enumerate(status.devices):
        if (device.driver, device.pool, device.device, device.share_id) not in allocated:
            name = "/".join((device.driver, device.pool, device.device) + ((device.share_id,) if device.share_id else ()))
            out.append(f"status.devices[{index}]: Invalid value: {_q(name)}: must be an allocated device in the claim")
    return out


#: What pods/resize may change (upstream ``ValidatePodResize``): cpu and memory, nothing else.
RESIZABLE = ("cpu", "memory")


def resize_problems(old: Pod, new: Pod, pod_level: bool = True) -> list[str]:
    """``field: message`` for every rule of the API server's pods/resize
    subresource ``new`` breaks (upstream ``ValidatePodResize``): containers
    neither renamed nor reordered; cpu and memory requests and limits neither
    removed nor anything else changed, of the containers and sidecars (a
    non-sidecar init container's resources are immutable) and, with
    ``pod_level`` (InPlacePodLevelResourcesVerticalScaling), of the pod-level
    ``spec.resources``; the QoS class kept; the new resources valid (requests
    within limits, pod-level requests covering the containers')."""
    out: list[str] = []
    for group, path in (("containers", "spec.containers"), ("init_containers", "spec.initContainers")):
        before, after = getattr(old.spec, group), getattr(new.spec, group)
        if [c.name for c in before] != [c.name for c in after]:
            out.append(f"{path}: Forbidden: containers may not be renamed or reordered on resize")
            continue
        for index, (was, now) in enumerate(zip(before, after)):
            where = f"{path}[{index}].resources"
            if group == "init_containers" and was.restart_policy != "Always":
                if now.resources != was.resources:
                    out.append(f"{where}: Forbidden: resources for non-sidecar init containers are immutable")
                continue
            out += _resize_removals(where, was.resources, now.resources)
    if old.spec.resources is not None and pod_level:
        out += _resize_removals("spec.resources", old.spec.resources,
                                new.spec.resources or ResourceRequirements())
    if out:
        return out
    if _spec_beyond_cpu_memory(new, pod_level) != _spec_beyond_cpu_memory(old, pod_level):
        return ["spec: Forbidden: only cpu and memory resources are mutable"]
    before_qos, after_qos = qos_class(old), qos_class(new)
    if before_qos != after_qos:
        return [f"spec: Invalid value: {_q(before_qos)}: Pod QOS Class may not change as a result of resizing"]
    for group, path in (("containers", "spec.containers"), ("init_containers", "spec.initContainers")):
        for index, container in enumerate(getattr(new.spec, group)):
            out += _resources(f"{path}[{index}]", container)
    if new.spec.resources is not None:
        out += _pod_level_resources(new)
    return out


def _resize_removals(where: str, before: ResourceRequirements, after: ResourceRequirements) -> list[str]:
    out = []
    for kind in ("requests", "limits"):
        removed = [name for name in RESIZABLE if name in getattr(before, kind) and name not in getattr(after, kind)]
        if removed:
            out.append(f"{where}.{kind}: Forbidden: resource {kind} cannot be removed")
    return out


def _spec_beyond_cpu_memory(pod: Pod, pod_level: bool) -> PodSpec:
    """``pod``'s spec with the cpu and memory requests and limits that pods/resize may change taken out."""
    def strip(resources: ResourceRequirements) -> ResourceRequirements:
        return attrs.evolve(resources, requests={k: v for k, v in resources.requests.items() if k not in RESIZABLE},
                            limits={k: v for k, v in resources.limits.items() if k not in RESIZABLE})

    spec = pod.spec
    containers = tuple(attrs.evolve(c, resources=strip(c.resources)) for c in spec.containers)
    inits = tuple(attrs.evolve(c, resources=strip(c.resources)) if c.restart_policy == "Always" else c
                  for c in spec.init_containers)
    pod_resources = strip(spec.resources) if spec.resources is not None and pod_level else spec.resources
    return attrs.evolve(spec, containers=containers, init_containers=inits, resources=pod_resources)


def qos_class(pod: Pod) -> str:
    """The pod's QoS class as upstream's ``ComputePodQOS`` computes it:
    ``BestEffort`` without any non-zero cpu or memory request or limit,
    ``Guaranteed`` when cpu and memory limits are set and every request
    equals its limit (the pod-level ones when the pod sets them, else every
    container's, a missing request defaulting to its limit), else ``Burstable``."""
    if pod.spec.resources is not None and any(
            name in RESIZABLE for name in (*pod.spec.resources.requests, *pod.spec.resources.limits)):
        sets = [pod.spec.resources]
    else:
        sets = [c.resources for c in (*pod.spec.containers, *pod.spec.init_containers)]
    requested = limited = False
    guaranteed = True
    for resources in sets:
        requests = {k: v for k, v in resources.requests.items() if k in RESIZABLE and v}
        limits = {k: v for k, v in resources.limits.items() if k in RESIZABLE and v}
        requested, limited = requested or bool(requests), limited or bool(limits)
        if set(limits) != set(RESIZABLE) or any(limits[k] != v for k, v in requests.items()):
            guaranteed = False
    if not requested and not limited:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limited else "Burstable"
