"""Objects and fields the embedded API server serves only while a feature gate is on.

kube-apiserver serves ``workloads`` and ``podgroups`` only with GenericWorkload
on and ``compositepodgroups`` only with CompositePodGroup on, and drops a
gated field of a new object when its gate is off (a pod's
``spec.schedulingGroup``, its pod-level ``spec.resources`` without
PodLevelResources, a Node's ``status.declaredFeatures`` without
NodeDeclaredFeatures, a PodGroup's gated fields, a Job's ``spec.scheduling``
without WorkloadWithJob).  The embedded cluster does
the same against its :class:`~kubesched.core.features.FeatureGates`, with one
convenience: a gate that is off only by default (the user did not turn it off)
is switched on with a note (:meth:`FeatureGates.require`), so manifests that use
PodGroups run without flags.
"""

from __future__ import annotations

from typing import Any

from ..api.batch_v1 import CronJob, Job
from ..api.core_v1 import Event, Node, Pod
from ..api.meta import evolve
from ..api.resource_v1 import DeviceTaintRule, ResourceSlice
from ..api.scheduling_v1beta1 import CompositePodGroup, PodGroup, Workload
from ..features import FeatureGates
from .client import BadRequest, NotFound

#: gate a kind needs: the API server serves it only while the gate is on
KIND_GATES = {Workload: ("GenericWorkload",), PodGroup: ("GenericWorkload",),
              CompositePodGroup: ("GenericWorkload", "CompositePodGroup"), DeviceTaintRule: ("DRADeviceTaintRules",)}

#: a ResourceSlice's device fields and the gate each needs; the API server drops them (no gate is switched
#: on for them: a driver publishes them whatever the cluster's release, and the release decides)
DEVICE_FIELD_GATES = (
    ("taints", "DRADeviceTaints", ()),
    ("consumes_counters", "DRAPartitionableDevices", ()),
    ("binding_conditions", "DRADeviceBindingConditions", ()),
    ("binding_failure_conditions", "DRADeviceBindingConditions", ()),
    ("binds_to_node", "DRADeviceBindingConditions", None),
    ("allow_multiple_allocations", "DRAConsumableCapacity", None),
)


def admit_gated(obj: Any, features: FeatureGates) -> Any:
    """``obj`` (about to be created) as an API server with ``features`` takes it.

    Raises :class:`NotFound` (``the server could not find the requested resource``)
    for a kind that is not served, :class:`BadRequest` (strict decoding: unknown
    field) for a field the emulated release does not have; returns ``obj``
    without the gated fields whose gate the user turned off, noting each drop in
    ``features.notes``."""
    if not _may_be_gated(obj):
        return obj
    kind = type(obj).__name__
    name = _name(obj)
    for gate in KIND_GATES.get(type(obj), ()):
        refused = features.require(gate, name)
        if refused is not None:
            raise NotFound(f"the server could not find the requested resource ({kind}: {refused})")
    if isinstance(obj, ResourceSlice):
        obj = _drop_device_fields(obj, features)
    for gate, field, present, drop in _gated_fields(obj):
        if not present:
            continue
        since = FIELD_SINCE.get(field)
        if since is not None and _release(features.emulated_version) < _release(since):
            raise BadRequest(f'{kind} "{obj.metadata.name}": strict decoding error: unknown field "{field}" '
                             f"(a {since} field, emulated version {features.emulated_version})")
        refused = features.require(gate, f"{name} ({field})")
        if refused is None:
            continue
        if not features.exists(gate):
            raise BadRequest(f'{kind} "{obj.metadata.name}": strict decoding error: unknown field "{field}" '
                             f"({refused})")
        features.note(f"{name}: {field} dropped by the API server: {refused}")
        obj = drop(obj)
    return obj


#: gated fields added to a kind after their gate existed: the release that has them (before: an unknown field)
FIELD_SINCE = {"spec.scheduling": "1.37", "spec.jobTemplate.spec.scheduling": "1.37"}


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _drop_device_fields(slice_: ResourceSlice, features: FeatureGates) -> ResourceSlice:
    """``slice_`` without the device fields (and ``sharedCounters``) whose gate is off - list-typed
    attributes without DRAListTypeAttributes, counter consumptions' ``compatibilityGroups`` without
    DRADeviceCompatibilityGroups among them - each dropped field noted once per slice, as the API
    server's dropDisabledFields does (silently, upstream)."""
    spec = slice_.spec
    dropped: dict[str, str] = {}
    devices = []
    for device in spec.devices:
        changes: dict[str, Any] = {}
        for attr, gate, empty in DEVICE_FIELD_GATES:
            if getattr(device, attr) not in ((), None, False) and not features.enabled(gate):
                changes[attr] = empty
                dropped[f"spec.devices[].{_camel(attr)}"] = gate
        if not features.enabled("DRAListTypeAttributes") and any(a.is_list for a in device.attributes.values()):
            changes["attributes"] = {k: a for k, a in device.attributes.items() if not a.is_list}
            dropped["spec.devices[].attributes (list-typed values)"] = "DRAListTypeAttributes"
        consumptions = changes.get("consumes_counters", device.consumes_counters)
        if not features.enabled("DRADeviceCompatibilityGroups") and any(c.compatibility_groups for c in consumptions):
            changes["consumes_counters"] = tuple(evolve(c, compatibility_groups=()) for c in consumptions)
            dropped["spec.devices[].consumesCounters[].compatibilityGroups"] = "DRADeviceCompatibilityGroups"
        devices.append(evolve(device, **changes) if changes else device)
    shared = spec.shared_counters
    if shared and not features.enabled("DRAPartitionableDevices"):
        shared = ()
        dropped["spec.sharedCounters"] = "DRAPartitionableDevices"
    if not dropped:
        return slice_
    for field, gate in dropped.items():  # one note per field and run, not one per slice
        features.note(f"ResourceSlice {field} dropped by the API server: feature gate {gate} is off in "
                      f"{features.emulated_version}")
    return evolve(slice_, spec=evolve(spec, devices=tuple(devices), shared_counters=shared))


def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(part.title() for part in rest)


def follow_served(obj: Any, features: FeatureGates) -> None:
    """An API server served ``obj`` (a scheduler's informer delivered it): the gates its kind and its set
    fields need are on there, so they are switched on here too (with a note) unless the user turned them
    off - a scheduler pointed at a cluster that serves PodGroups schedules them as groups without flags."""
    if not _may_be_gated(obj):
        return
    for gate in KIND_GATES.get(type(obj), ()):
        if not features.enabled(gate):
            features.require(gate, _name(obj))
    for gate, field, present, _ in _gated_fields(obj):
        if present and not features.enabled(gate):
            features.require(gate, f"{_name(obj)} ({field})")


def _name(obj: Any) -> str:
    return f"{type(obj).__name__} {obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _may_be_gated(obj: Any) -> bool:
    """False when ``obj`` is certainly neither of a gated kind nor holding a gated field - an Event, a Pod or a
    Node without one, the objects written and delivered most - judged without building :func:`_gated_fields`;
    True for every other kind (the full check decides)."""
    kind = type(obj)
    if kind is Pod:
        return obj.spec.scheduling_group is not None or obj.spec.resources is not None
    if kind is Node:
        return bool(obj.status.declared_features)
    return kind is not Event


def _gated_fields(obj: Any) -> list[tuple[str, str, bool, Any]]:
    """(gate, field path, set on ``obj``, ``obj`` without it) for each gated field of ``obj``."""
    if isinstance(obj, Pod):
        return [("GenericWorkload", "spec.schedulingGroup", obj.spec.scheduling_group is not None,
                 lambda o: evolve(o, spec=evolve(o.spec, scheduling_group=None))),
                ("PodLevelResources", "spec.resources", obj.spec.resources is not None,
                 lambda o: evolve(o, spec=evolve(o.spec, resources=None)))]
    if isinstance(obj, Node):
        return [("NodeDeclaredFeatures", "status.declaredFeatures", bool(obj.status.declared_features),
                 lambda o: evolve(o, status=evolve(o.status, declared_features=())))]
    if isinstance(obj, PodGroup):
        spec = obj.spec

        def without(**fields: Any) -> Any:
            return lambda o: evolve(o, spec=evolve(o.spec, **fields))

        return [
            ("CompositePodGroup", "spec.parentCompositePodGroupName", bool(spec.parent_composite_pod_group_name),
             without(parent_composite_pod_group_name=None)),
            ("TopologyAwareWorkloadScheduling", "spec.schedulingConstraints", spec.scheduling_constraints is not None,
             without(scheduling_constraints=None)),
            ("DRAWorkloadResourceClaims", "spec.resourceClaims", bool(spec.resource_claims),
             without(resource_claims=())),
            ("PodGroupPreemptionPolicy", "spec.preemptionPolicy", spec.preemption_policy is not None,
             without(preemption_policy=None)),
        ]
    if isinstance(obj, Job):
        return [("WorkloadWithJob", "spec.scheduling", obj.spec.scheduling is not None,
                 lambda o: evolve(o, spec=evolve(o.spec, scheduling=None)))]
    if isinstance(obj, CronJob):
        return [("WorkloadWithJob", "spec.jobTemplate.spec.scheduling", obj.spec.job_template.spec.scheduling
                 is not None, lambda o: evolve(o, spec=evolve(o.spec, job_template=evolve(
                     o.spec.job_template, spec=evolve(o.spec.job_template.spec, scheduling=None)))))]
    if isinstance(obj, Workload):
        return [("CompositePodGroup", "spec.compositePodGroupTemplates",
                 bool(obj.spec.composite_pod_group_templates),
                 lambda o: evolve(o, spec=evolve(o.spec, composite_pod_group_templates=())))]
    return []
