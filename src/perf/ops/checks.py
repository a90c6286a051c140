"""What makes a workload unsupported before it runs: kinds kubesched does not
model, and objects the configured profiles would not schedule as kube-scheduler does.

Each check raises :class:`~kubesched.perf.errors.Unsupported` with the op, the
object and the reason, so the workload is reported rather than run with a
result that would not be kube-scheduler's.
"""

from __future__ import annotations

from typing import Any

from ...core.api import RESOURCES
from ...core.api.core_v1 import Pod
from ...core.api.scheduling_v1beta1 import PodGroup
from ..errors import Unsupported
from .base import Executor

#: The plugin that schedules the pods of a PodGroup together (kube-scheduler 1.37's PodGroup cycle).
GANG_PLUGIN = "GangScheduling"
#: The plugin that places a PodGroup inside one domain of its topology constraint.
TOPOLOGY_PLUGIN = "TopologyPlacementGenerator"


def check_kind(code: str, doc: dict[str, Any], where: str) -> dict[str, Any]:
    """``doc`` (a manifest dict from ``where``) if kubesched models its kind and apiVersion."""
    kind = doc.get("kind")
    resource = RESOURCES.get(kind) if isinstance(kind, str) else None
    if resource is None:
        raise Unsupported(f"unsupported op: {code} of a {kind} ({doc.get('apiVersion')}; "
                          "kubesched does not model that kind yet)")
    if doc.get("apiVersion") != resource.api_version and doc.get("apiVersion") not in resource.older_versions:
        raise Unsupported(f"unsupported op: {code} of {kind} {doc.get('apiVersion')} "
                          f"(kubesched reads {resource.api_version})")
    return doc


def check_pod(executor: Executor, code: str, doc: dict[str, Any], pod: Pod) -> None:
    """Pods kubesched's profiles cannot schedule as upstream would: claims without
    DynamicResources, pod (anti-)affinity without InterPodAffinity, spread
    constraints without PodTopologySpread, priorities (preemption) without
    DefaultPreemption, members of a PodGroup without GangScheduling (they
    would be scheduled one at a time)."""
    pod_spec = doc.get("spec")
    spec = pod_spec if isinstance(pod_spec, dict) else {}
    if spec.get("resourceClaims") and not executor.enabled_everywhere("DynamicResources"):
        raise Unsupported(f"unsupported op: {code} of pods with resourceClaims (the DynamicResources "
                          "plugin is not enabled)")
    affinity = pod.spec.affinity
    constraints = {
        "InterPodAffinity": "pod affinity" if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None) else "",
        "PodTopologySpread": "topologySpreadConstraints" if pod.spec.topology_spread_constraints else "",
    }
    for plugin, what in constraints.items():
        if what and not executor.enabled_everywhere(plugin):
            raise Unsupported(f"unsupported op: {code} of pods with {what} (the {plugin} plugin that "
                              "enforces it is not enabled, so the result would not be kube-scheduler's)")
    priority = pod.spec.priority or 0
    if (priority > 0 or pod.spec.priority_class_name) and not executor.enabled_everywhere("DefaultPreemption"):
        raise Unsupported(f"unsupported op: {code} of pods with priority {priority} (they exercise "
                          "preemption; DefaultPreemption is not enabled)")
    group = pod.spec.scheduling_group
    if group is not None and not executor.enabled_everywhere(GANG_PLUGIN):
        raise Unsupported(f"{code} of pods in PodGroup {group.pod_group_name!r} (spec.schedulingGroup): the "
                          f"{GANG_PLUGIN} plugin is not enabled, so kubesched would schedule them one at a "
                          "time instead of as a group in kube-scheduler's PodGroup cycle")


def check_pod_group(executor: Executor, code: str, group: PodGroup) -> None:
    """A PodGroup with a topology constraint needs TopologyPlacement (else it
    would not be kept inside one domain)."""
    key = group.topology_key
    if key is not None and not executor.enabled_everywhere(TOPOLOGY_PLUGIN):
        raise Unsupported(f"{code} of PodGroups constrained to one {key} domain "
                          f"(schedulingConstraints.topology): the {TOPOLOGY_PLUGIN} plugin is not enabled")
