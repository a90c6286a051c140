"""scheduling.k8s.io/v1beta1 Workload and PodGroup, and v1alpha3 CompositePodGroup: workload-aware scheduling.

Upstream's newest API (Kubernetes 1.37, ``GenericWorkload`` beta; KEP-4671,
KEP-5710, KEP-5729, KEP-5732, KEP-6012):

- a **Workload** holds templates (``podGroupTemplates``, or a tree of
  ``compositePodGroupTemplates``) that controllers copy into runtime groups;
- a **PodGroup** is one runtime group: its pods name it in
  ``spec.schedulingGroup.podGroupName`` and are scheduled together, either
  one by one (``basic: {}``) or all-or-nothing (``gang: {minCount: N}``),
  optionally inside one topology domain, at the group's own priority;
- a **CompositePodGroup** (``scheduling.k8s.io/v1alpha3``, its only version)
  is an inner node of a group tree: its children (PodGroups or composite
  groups) name it in ``parentCompositePodGroupName``; a gang composite needs
  ``minGroupCount`` children placed together.

PodGroup and Workload manifests are also read as ``scheduling.k8s.io/v1alpha3``
(:data:`UPGRADES`; upstream's perf templates use it) and written back as
v1beta1.  The structure is checked here; the API server's rules (names,
unions, limits, immutability) are in :mod:`kubesched.core.api.validation`,
defaulting and priority admission in the embedded cluster.

Helpers for the scheduler: :func:`pod_group_name` (the group a pod names),
:func:`pod_group_key`, and the PodGroup properties :attr:`PodGroup.min_count`,
:attr:`PodGroup.is_gang`, :attr:`PodGroup.priority_value`,
:attr:`PodGroup.topology_key`, :attr:`PodGroup.disrupts_all`,
:meth:`PodGroup.condition`.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from attrs import field, frozen

from .core_v1 import Pod, PodResourceClaim
from .meta import Condition, ObjectMeta

API_VERSION = "scheduling.k8s.io/v1beta1"
#: The version CompositePodGroup is served as (it has no other).
ALPHA_API_VERSION = "scheduling.k8s.io/v1alpha3"

#: Upstream limits (WorkloadMaxPodGroupTemplates, MaxPodGroupResourceClaims, WorkloadMaxTreeDepth).
WORKLOAD_MAX_POD_GROUP_TEMPLATES = 8
MAX_POD_GROUP_RESOURCE_CLAIMS = 4
WORKLOAD_MAX_TREE_DEPTH = 4
#: ``schedulingConstraints.topology`` holds at most this many constraints.
MAX_TOPOLOGY_CONSTRAINTS = 1

#: The finalizer the API server puts on every new PodGroup (upstream's PodGroupProtection admission plugin);
#: kube-controller-manager's podgroup-protection-controller removes it from a PodGroup being deleted once no
#: active (not Succeeded or Failed) pod names the group.
POD_GROUP_PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
#: ``status.conditions[].type`` of a PodGroup (terminal once True) and of a CompositePodGroup.
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED = "CompositePodGroupInitiallyScheduled"
#: The group (or composite group) is about to be terminated by a disruption such as preemption.
DISRUPTION_TARGET = "DisruptionTarget"
#: Condition reasons.
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_INVALID = "Invalid"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _extra():
    return field(factory=dict, eq=False)


# --- parts shared by templates, groups and composite groups ----------------------------------


@frozen
class TypedLocalObjectReference:
    """``spec.controllerRef`` of a Workload: the object (a Job, a JobSet...) it was made for."""

    api_group: str = ""
    kind: str = ""
    name: str = ""


@frozen
class WorkloadReference:
    """``spec.workloadRef``: the Workload and the template the group was created from."""

    workload_name: str = ""
    template_name: str = ""


@frozen
class BasicSchedulingPolicy:
    """``schedulingPolicy.basic: {}``: members are scheduled one by one (a group
    cycle that is feasible from one pod)."""

    extra: dict[str, Any] = _extra()


@frozen
class GangSchedulingPolicy:
    """``schedulingPolicy.gang``: all or nothing, ``min_count`` pods (>= 1) at
    once.  The only mutable part of a PodGroup's spec."""

    min_count: int = field(default=0, metadata={"always": True, "kind": "int32"})
    extra: dict[str, Any] = _extra()


@frozen
class PodGroupSchedulingPolicy:
    """A union: exactly one of ``basic`` and ``gang`` is set (validation refuses
    anything else); the choice is fixed at creation."""

    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None
    extra: dict[str, Any] = _extra()


@frozen
class CompositeGangSchedulingPolicy:
    """``gang.minGroupCount``: child groups (>= 1) that must be placed together."""

    min_group_count: int = field(default=0, metadata={"always": True, "kind": "int32"})
    extra: dict[str, Any] = _extra()


@frozen
class CompositePodGroupSchedulingPolicy:
    """A union: exactly one of ``basic: {}`` (children independent) and ``gang``."""

    basic: BasicSchedulingPolicy | None = None
    gang: CompositeGangSchedulingPolicy | None = None
    extra: dict[str, Any] = _extra()


@frozen
class TopologyConstraint:
    """``key``: the node label whose value is one domain (``topology.kubernetes.io/rack``);
    every member is placed in nodes of one value."""

    key: str = ""


@frozen
class SchedulingConstraints:
    """``schedulingConstraints``: ``topology`` (at most one constraint today)."""

    topology: tuple[TopologyConstraint, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class SingleDisruptionMode:
    """``disruptionMode.single: {}``: members may be disrupted one at a time (the default)."""

    extra: dict[str, Any] = _extra()


@frozen
class AllDisruptionMode:
    """``disruptionMode.all: {}``: members are disrupted (preempted) together or not at all."""

    extra: dict[str, Any] = _extra()


@frozen
class DisruptionMode:
    """A union: exactly one of ``single`` and ``all``."""

    single: SingleDisruptionMode | None = None
    all: AllDisruptionMode | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PodGroupResourceClaim:
    """``spec.resourceClaims[]``: a claim shared by the group's pods.  ``name`` is
    unique in the group; exactly one of ``resource_claim_name`` and
    ``resource_claim_template_name`` is set.  A pod shares it by listing a
    claim equal in all three fields (:func:`shared_claim`)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@frozen
class PodGroupResourceClaimStatus:
    """``status.resourceClaimStatuses[]``: the claim generated for ``name`` (None: none was needed)."""

    name: str = ""
    resource_claim_name: str | None = None


# --- Workload ----------------------------------------------------------------------------------


@frozen
class PodGroupTemplate:
    """One ``podGroupTemplates[]`` entry: what a PodGroup made from it will say."""

    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    extra: dict[str, Any] = _extra()


@frozen
class CompositePodGroupTemplate:
    """One ``compositePodGroupTemplates[]`` entry: an inner node of a template
    tree, with its child templates (at most 8 of each kind)."""

    name: str = ""
    scheduling_policy: CompositePodGroupSchedulingPolicy = CompositePodGroupSchedulingPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    pod_group_templates: tuple[PodGroupTemplate, ...] = ()
    composite_pod_group_templates: tuple[CompositePodGroupTemplate, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class WorkloadSpec:
    """Exactly one of ``pod_group_templates`` (at most 8) and
    ``composite_pod_group_templates`` is set."""

    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: tuple[PodGroupTemplate, ...] = ()
    composite_pod_group_templates: tuple[CompositePodGroupTemplate, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class Workload:
    """scheduling.k8s.io/v1beta1 Workload (namespaced, no status)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def template(self, name: str) -> PodGroupTemplate | None:
        """The PodGroup template ``name`` anywhere in the tree, or None."""
        pending: list[Any] = [self.spec]
        while pending:
            node = pending.pop()
            for template in node.pod_group_templates:
                if template.name == name:
                    return template
            pending.extend(node.composite_pod_group_templates)
        return None


# --- PodGroup ----------------------------------------------------------------------------------


@frozen
class PodGroupSpec:
    """The runtime group.  ``priority`` is filled by priority admission from
    ``priority_class_name`` (or the global default class); ``preemption_policy``
    likewise; ``disruption_mode`` defaults to ``single``.  Everything but
    ``scheduling_policy.gang.min_count`` is immutable."""

    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: PodGroupSchedulingPolicy = PodGroupSchedulingPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: tuple[PodGroupResourceClaim, ...] = ()
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    extra: dict[str, Any] = _extra()


@frozen
class PodGroupStatus:
    """``conditions`` (PodGroupInitiallyScheduled, DisruptionTarget; one per type)
    and the claims generated for the group (``resource_claim_statuses``)."""

    conditions: tuple[Condition, ...] = ()
    resource_claim_statuses: tuple[PodGroupResourceClaimStatus, ...] = ()
    extra: dict[str, Any] = _extra()


class GroupReading:
    """What PodGroups and CompositePodGroups answer alike (their spec and
    status carry the same fields for it): ``key``, the policy, priority,
    topology constraint, disruption mode and status conditions."""

    metadata: ObjectMeta
    spec: Any
    status: Any

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def is_gang(self) -> bool:
        """True for ``schedulingPolicy.gang`` (all or nothing)."""
        return self.spec.scheduling_policy.gang is not None

    @property
    def priority_value(self) -> int:
        """``spec.priority`` (resolved at admission), 0 when unset."""
        return self.spec.priority if self.spec.priority is not None else 0

    @property
    def topology_key(self) -> str | None:
        """The node label key of the group's topology constraint (a rack, a block), or None."""
        constraints = self.spec.scheduling_constraints
        return constraints.topology[0].key if constraints is not None and constraints.topology else None

    @property
    def disrupts_all(self) -> bool:
        """``disruptionMode: {all: {}}``: members are preempted together."""
        mode = self.spec.disruption_mode
        return mode is not None and mode.all is not None

    def condition(self, type_: str) -> Condition | None:
        """The status condition of ``type_`` (e.g. :data:`POD_GROUP_INITIALLY_SCHEDULED`), or None."""
        return next((c for c in self.status.conditions if c.type == type_), None)


@frozen
class PodGroup(GroupReading):
    """scheduling.k8s.io/v1beta1 PodGroup (namespaced, with a status subresource)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus = PodGroupStatus()

    @property
    def min_count(self) -> int:
        """Pods that must be placed together: ``gang.minCount``, or 1 for a basic
        group (feasible from one pod, as upstream's group cycle treats it)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang is not None else 1


# --- CompositePodGroup (v1alpha3) ----------------------------------------------------------------


@frozen
class CompositePodGroupSpec:
    """An inner node of a group tree: ``workload_ref`` is required,
    ``parent_composite_pod_group_name`` None makes it a root."""

    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: CompositePodGroupSchedulingPolicy = CompositePodGroupSchedulingPolicy()
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    extra: dict[str, Any] = _extra()


@frozen
class CompositePodGroupStatus:
    """``conditions``: CompositePodGroupInitiallyScheduled (reasons Unschedulable,
    SchedulerError, Invalid), DisruptionTarget."""

    conditions: tuple[Condition, ...] = ()
    extra: dict[str, Any] = _extra()


@frozen
class CompositePodGroup(GroupReading):
    """scheduling.k8s.io/v1alpha3 CompositePodGroup (namespaced, with a status subresource)."""

    metadata: ObjectMeta = ObjectMeta()
    spec: CompositePodGroupSpec = CompositePodGroupSpec()
    status: CompositePodGroupStatus = CompositePodGroupStatus()

    @property
    def min_group_count(self) -> int:
        """Child groups that must be placed together: ``gang.minGroupCount``, or 1 for basic."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_group_count if gang is not None else 1

    @property
    def min_count(self) -> int:
        """What PlacementFeasible counts for a composite group: child groups (:attr:`min_group_count`)."""
        return self.min_group_count


# --- what the scheduler asks of pods ---------------------------------------------------------------


def pod_group_name(pod: Pod) -> str | None:
    """The name of the PodGroup ``pod`` belongs to (``spec.schedulingGroup.podGroupName``,
    in the pod's namespace), or None for a pod scheduled on its own."""
    group = pod.spec.scheduling_group
    return group.pod_group_name if group is not None else None


def pod_group_key(pod: Pod) -> str | None:
    """``namespace/name`` of the PodGroup ``pod`` names (the key of :attr:`PodGroup.key`), or None."""
    name = pod_group_name(pod)
    return f"{pod.metadata.namespace}/{name}" if name is not None else None


def shared_claim(claim: PodResourceClaim, group: PodGroup) -> PodGroupResourceClaim | None:
    """The group claim a pod claim stands for (equal name, claim name and template
    name, as upstream matches them), or None for a claim of the pod's own."""
    for group_claim in group.spec.resource_claims:
        if (group_claim.name == claim.name and group_claim.resource_claim_name == claim.resource_claim_name
                and group_claim.resource_claim_template_name == claim.resource_claim_template_name):
            return group_claim
    return None


# --- older apiVersions ----------------------------------------------------------------------------


def _pod_group_from_v1alpha3(body: dict) -> dict:
    """A v1alpha3 PodGroup has the v1beta1 shape; early v1alpha3 (and v1alpha2)
    named the template ``podGroupTemplateRef: {workload: {workloadName,
    podGroupTemplateName}}``, which becomes ``workloadRef``."""
    spec = body.get("spec")
    if not isinstance(spec, dict) or "podGroupTemplateRef" not in spec:
        return body
    body = copy.deepcopy(body)
    spec = body["spec"]
    ref = spec.pop("podGroupTemplateRef")
    workload = ref.get("workload") if isinstance(ref, dict) else None
    if isinstance(workload, dict):
        spec.setdefault("workloadRef", {"workloadName": workload.get("workloadName", ""),
                                        "templateName": workload.get("podGroupTemplateName", "")})
    else:
        spec["podGroupTemplateRef"] = ref  # not a shape we know: kept, and written back as given
    return body


def _same(body: dict) -> dict:
    return body


#: kind -> {older apiVersion -> function converting a manifest body to the v1beta1 shape}.
UPGRADES: dict[str, dict[str, Callable[[dict], dict]]] = {
    "Workload": {ALPHA_API_VERSION: _same},
    "PodGroup": {ALPHA_API_VERSION: _pod_group_from_v1alpha3},
}

#: ``(kind, apiVersion, class, plural)`` of every kind in this module, for registration (all namespaced).
KINDS = (
    ("Workload", API_VERSION, Workload, "workloads"),
    ("PodGroup", API_VERSION, PodGroup, "podgroups"),
    ("CompositePodGroup", ALPHA_API_VERSION, CompositePodGroup, "compositepodgroups"),
)
