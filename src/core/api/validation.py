"""The API server's validation of the fields the scheduler reads.

kube-apiserver refuses objects that kubesched would otherwise schedule
silently: names that are not DNS names, malformed label keys and values,
toleration operators and effects that do not exist, negative requests or
requests above limits, pods without containers or with two of one name,
node affinity operators that do not exist, priorities beyond int32.
:func:`problems` lists them with upstream's field paths and messages; the
embedded cluster (:class:`~kubesched.core.cluster.memory.MemoryCluster`)
refuses such objects as the API server does (422 Invalid).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .core_v1 import Container, Namespace, Pod

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


def _q(value: Any) -> str:
    """A value quoted as the API server's messages quote it (Go's %q)."""
    return json.dumps(value)


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
    if isinstance(obj, Pod):
        found += _pod(obj)
    return found


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


def _pod(pod: Pod) -> list[str]:
    spec = pod.spec
    out = labels("spec.nodeSelector", spec.node_selector)
    if not spec.containers:
        out.append("spec.containers: Required value")
    seen: set[str] = set()
    for field, containers in (("spec.initContainers", spec.init_containers), ("spec.containers", spec.containers)):
        for i, container in enumerate(containers):
            where = f"{field}[{i}]"
            if container.name in seen:
                out.append(f"{where}.name: Duplicate value: {_q(container.name)}")
            seen.add(container.name)
            out += _resources(where, container)
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


def _resources(where: str, container: Container) -> list[str]:
    out = []
    requests, limits = container.resources.requests, container.resources.limits
    for kind, amounts in (("requests", requests), ("limits", limits)):
        for name, amount in amounts.items():
            if amount < 0:
                out.append(f"{where}.resources.{kind}[{name}]: Invalid value: {amount}: must be greater than or "
                           "equal to 0")
    for name, amount in requests.items():
        limit = limits.get(name)
        if limit is not None and amount > limit:
            out.append(f"{where}.resources.requests: Invalid value: {amount}: must be less than or equal to "
                       f"{name} limit of {limit}")
    return out

