"""The API server's validation of Workloads, PodGroups, CompositePodGroups and the pod's
spec.schedulingGroup: each rule refused by the embedded cluster with upstream's field path and message."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api import from_manifest, to_manifest
from kubesched.core.cluster.client import Invalid
from kubesched.core.cluster.memory import MemoryCluster

GANG = {"gang": {"minCount": 2}}
BASIC = {"basic": {}}
NAME_63 = "a" * 64


def group(**spec) -> object:
    spec.setdefault("schedulingPolicy", GANG)
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": "g", "namespace": "ml"}, "spec": spec})


def composite(**spec) -> object:
    spec.setdefault("schedulingPolicy", {"gang": {"minGroupCount": 2}})
    spec.setdefault("workloadRef", {"workloadName": "w", "templateName": "job"})
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                          "metadata": {"name": "c", "namespace": "ml"}, "spec": spec})


def workload(**spec) -> object:
    if "compositePodGroupTemplates" not in spec:
        spec.setdefault("podGroupTemplates", [{"name": "workers", "schedulingPolicy": GANG}])
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                          "metadata": {"name": "w", "namespace": "ml"}, "spec": spec})


def template(name: str = "t", **fields) -> dict:
    return {"name": name, "schedulingPolicy": GANG, **fields}


def member(**spec) -> object:
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
                          "spec": {"containers": [{"name": "c"}], **spec}})


def condition(**fields) -> dict:
    return {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
            "lastTransitionTime": "2026-01-02T03:04:05Z", **fields}


def with_status(obj, **status) -> object:
    return from_manifest({**to_manifest(obj), "status": status})


SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and " \
            "must start and end with an alphanumeric character"
LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start " \
        "and end with an alphanumeric character"

CREATE = [
    # PodGroup: the scheduling policy union and the gang's count
    (group(schedulingPolicy={}), 'spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'),
    (group(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}),
     'spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`'),
    (group(schedulingPolicy={"gang": {}}), "spec.schedulingPolicy.gang.minCount: Required value"),
    (group(schedulingPolicy={"gang": {"minCount": -3}}),
     "spec.schedulingPolicy.gang.minCount: Invalid value: -3: must be greater than or equal to 1"),
    # topology
    (group(schedulingConstraints={"topology": [{"key": "rack"}, {"key": "zone"}]}),
     "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item"),
    (group(schedulingConstraints={"topology": [{"key": "rack/"}]}),
     'spec.schedulingConstraints.topology[0].key: Invalid value: "rack/": name part must be non-empty'),
    (group(schedulingConstraints={"topology": [{}]}), "spec.schedulingConstraints.topology[0].key: Required value"),
    # claims
    (group(resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]),
     "spec.resourceClaims: Too many: 5: must have at most 4 items"),
    (group(resourceClaims=[{"name": "gpu", "resourceClaimName": "x"}, {"name": "gpu", "resourceClaimName": "y"}]),
     'spec.resourceClaims[1]: Duplicate value: "gpu"'),
    (group(resourceClaims=[{"name": "gpu"}]),
     'spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
     '`resourceClaimTemplateName`'),
    (group(resourceClaims=[{"name": "gpu", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]),
     'spec.resourceClaims[0]: Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must specify '
     "exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    (group(resourceClaims=[{"name": "GPU", "resourceClaimName": "x"}]),
     f'spec.resourceClaims[0].name: Invalid value: "GPU": {LABEL}'),
    (group(resourceClaims=[{"resourceClaimName": "x"}]), "spec.resourceClaims[0].name: Required value"),
    (group(resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "Bad_Name"}]),
     f'spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: "Bad_Name": {SUBDOMAIN}'),
    # disruption
    (group(disruptionMode={}), 'spec.disruptionMode: Invalid value: "": must specify one of: `single`, `all`'),
    (group(disruptionMode={"single": {}, "all": {}}),
     'spec.disruptionMode: Invalid value: "{single, all}": must specify exactly one of: `single`, `all`'),
    (group(schedulingPolicy=BASIC, disruptionMode={"all": {}}),
     'spec.disruptionMode.all: Invalid value: "": the disruptionMode `all` is not supported with the Basic '
     "scheduling policy"),
    # priority
    (group(priority=1_000_000_001),
     "spec.priority: Invalid value: 1000000001: must be less than or equal to 1000000000"),
    (group(priorityClassName="Gold"), f'spec.priorityClassName: Invalid value: "Gold": {SUBDOMAIN}'),
    (group(preemptionPolicy="Sometimes"),
     'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'),
    # references
    (group(parentCompositePodGroupName="job"),
     "spec.workloadRef: Required value: must be set when parentCompositePodGroupName is set"),
    (group(parentCompositePodGroupName="Job", workloadRef={"workloadName": "w", "templateName": "t"}),
     f'spec.parentCompositePodGroupName: Invalid value: "Job": {SUBDOMAIN}'),
    (group(workloadRef={"templateName": "t"}), "spec.workloadRef.workloadName: Required value"),
    (group(workloadRef={"workloadName": "w", "templateName": NAME_63}),
     f'spec.workloadRef.templateName: Invalid value: "{NAME_63}": must be no more than 63 characters'),
    # status
    (with_status(group(), conditions=[condition(), condition()]),
     'status.conditions[1].type: Duplicate value: "PodGroupInitiallyScheduled"'),
    (with_status(group(), conditions=[condition(status="Maybe")]),
     'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
    (with_status(group(), conditions=[condition(reason="")]), "status.conditions[0].reason: Required value: must be set"),
    (with_status(group(), conditions=[condition(reason="not scheduled")]),
     'status.conditions[0].reason: Invalid value: "not scheduled": a condition reason must start with alphabetic '
     "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
     "alphanumeric character or '_'"),
    (with_status(group(), conditions=[{k: v for k, v in condition().items() if k != "lastTransitionTime"}]),
     "status.conditions[0].lastTransitionTime: Required value: must be set"),
    (with_status(group(), resourceClaimStatuses=[{"name": f"c{i}"} for i in range(5)]),
     "status.resourceClaimStatuses: Too many: 5: must have at most 4 items"),
    # CompositePodGroup
    (composite(workloadRef=None), "spec.workloadRef: Required value"),
    (composite(schedulingPolicy={"gang": {"minGroupCount": 0}}), "spec.schedulingPolicy.gang.minGroupCount: Required value"),
    (composite(schedulingPolicy={}), 'spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'),
    (composite(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
     "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 item"),
    (composite(priority=2_000_000_000),
     "spec.priority: Invalid value: 2000000000: must be less than or equal to 1000000000"),
    # Workload
    (workload(podGroupTemplates=[]),
     'spec: Invalid value: "": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`'),
    (workload(compositePodGroupTemplates=[{"name": "job", "schedulingPolicy": BASIC}], podGroupTemplates=[template()]),
     'spec: Invalid value: "{podGroupTemplates, compositePodGroupTemplates}": must specify exactly one of: '
     "`podGroupTemplates`, `compositePodGroupTemplates`"),
    (workload(podGroupTemplates=[template(f"t{i}") for i in range(9)]),
     "spec.podGroupTemplates: Too many: 9: must have at most 8 items"),
    (workload(podGroupTemplates=[template("a"), template("a")]), 'spec.podGroupTemplates[1]: Duplicate value: "a"'),
    (workload(podGroupTemplates=[template("Workers")]), f'spec.podGroupTemplates[0].name: Invalid value: "Workers": {LABEL}'),
    (workload(podGroupTemplates=[{"schedulingPolicy": GANG}]), "spec.podGroupTemplates[0].name: Required value"),
    (workload(podGroupTemplates=[template(schedulingPolicy={"gang": {"minCount": 0}})]),
     "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"),
    (workload(podGroupTemplates=[template(schedulingPolicy=BASIC, disruptionMode={"all": {}})]),
     'spec.podGroupTemplates[0].disruptionMode.all: Invalid value: "": the disruptionMode `all` is not supported '
     "with the Basic scheduling policy"),
    (workload(podGroupTemplates=[template(resourceClaims=[{"name": "x"}])]),
     'spec.podGroupTemplates[0].resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, '
     '`resourceClaimTemplateName`'),
    (workload(compositePodGroupTemplates=[{"name": "job", "schedulingPolicy": BASIC,
                                           "podGroupTemplates": [template(f"t{i}") for i in range(9)]}]),
     "spec.compositePodGroupTemplates[0].podGroupTemplates: Too many: 9: must have at most 8 items"),
    (workload(compositePodGroupTemplates=[{"name": "job", "schedulingPolicy": {"gang": {"minGroupCount": -1}}}]),
     "spec.compositePodGroupTemplates[0].schedulingPolicy.gang.minGroupCount: Invalid value: -1: must be greater "
     "than or equal to 1"),
    (workload(controllerRef={"kind": "Job", "name": "a/b"}),
     "spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/'"),
    (workload(controllerRef={"kind": "..", "name": "j"}), "spec.controllerRef.kind: Invalid value: \"..\": may not be '..'"),
    (workload(controllerRef={"kind": "Job"}), "spec.controllerRef.name: Required value"),
    (workload(controllerRef={"apiGroup": "Batch", "kind": "Job", "name": "j"}),
     f'spec.controllerRef.apiGroup: Invalid value: "Batch": {SUBDOMAIN}'),
    # the pod's group
    (member(schedulingGroup={"podGroupName": "Trainer_0"}),
     f'spec.schedulingGroup.podGroupName: Invalid value: "Trainer_0": {SUBDOMAIN}'),
    (member(schedulingGroup={}), 'spec.schedulingGroup: Invalid value: "": must specify one of: `podGroupName`'),
]


@pytest.mark.parametrize("obj, problem", CREATE, ids=[problem.split(":")[0] + f"-{i}" for i, (_, problem)
                                                      in enumerate(CREATE)])
def test_the_embedded_api_server_refuses_what_kube_apiserver_refuses(obj, problem):
    with pytest.raises(Invalid) as refused:
        MemoryCluster().create(obj)
    kind = type(obj).__name__
    assert str(refused.value).startswith(f'{kind} "') and problem in str(refused.value).split(": ", 1)[1].split("; ")


def test_valid_groups_workloads_and_members_are_stored():
    cluster = MemoryCluster()
    stored = [cluster.create(group(schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
                                   resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
                                   disruptionMode={"all": {}}, priority=1_000_000_000,
                                   workloadRef={"workloadName": "w", "templateName": "workers"})),
              cluster.create(with_status(composite(parentCompositePodGroupName="root"),
                                         conditions=[condition(type="CompositePodGroupInitiallyScheduled")])),
              cluster.create(workload(controllerRef={"apiGroup": "batch", "kind": "Job", "name": "train"})),
              cluster.create(member(schedulingGroup={"podGroupName": "g"}))]
    assert [type(o).__name__ for o in stored] == ["PodGroup", "CompositePodGroup", "Workload", "Pod"]


def evolve_spec(obj, **changes):
    return attrs.evolve(obj, spec=attrs.evolve(obj.spec, **changes))


def gang(min_count: int) -> object:
    return group(schedulingPolicy={"gang": {"minCount": min_count}}).spec.scheduling_policy


UPDATE = [
    (group(), lambda g: evolve_spec(g, scheduling_policy=group(schedulingPolicy=BASIC).spec.scheduling_policy),
     ['spec.schedulingPolicy.basic: Forbidden: field is immutable',
      'spec.schedulingPolicy.gang: Invalid value: "null": field cannot be cleared once set']),
    (group(schedulingPolicy=BASIC), lambda g: evolve_spec(g, scheduling_policy=gang(3)),
     ['spec.schedulingPolicy.basic: Forbidden: field is immutable',
      'spec.schedulingPolicy.gang: Invalid value: "null": field cannot be set once created']),
    (group(), lambda g: evolve_spec(g, scheduling_policy=gang(0)), ["spec.schedulingPolicy.gang.minCount: Required value"]),
    (group(), lambda g: evolve_spec(g, priority=7), ["spec.priority: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, priority_class_name="other"), ["spec.priorityClassName: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, preemption_policy="Never"), ["spec.preemptionPolicy: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, disruption_mode=group(disruptionMode={"all": {}}).spec.disruption_mode),
     ["spec.disruptionMode: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, scheduling_constraints=group(
        schedulingConstraints={"topology": [{"key": "zone"}]}).spec.scheduling_constraints),
     ["spec.schedulingConstraints: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, resource_claims=group(
        resourceClaims=[{"name": "gpu", "resourceClaimName": "x"}]).spec.resource_claims),
     ["spec.resourceClaims: Forbidden: field is immutable"]),
    (group(), lambda g: evolve_spec(g, workload_ref=group(
        workloadRef={"workloadName": "w", "templateName": "t"}).spec.workload_ref),
     ["spec.workloadRef: Forbidden: field is immutable"]),
    (composite(), lambda c: evolve_spec(c, scheduling_policy=composite(
        schedulingPolicy={"gang": {"minGroupCount": 3}}).spec.scheduling_policy),
     ["spec.schedulingPolicy: Forbidden: field is immutable"]),
    (composite(), lambda c: evolve_spec(c, parent_composite_pod_group_name="root"),
     ["spec.parentCompositePodGroupName: Forbidden: field is immutable"]),
    (workload(), lambda w: evolve_spec(w, pod_group_templates=w.spec.pod_group_templates + workload(
        podGroupTemplates=[template("more")]).spec.pod_group_templates),
     ["spec.podGroupTemplates[1]: Forbidden: item may not be added"]),
    (workload(podGroupTemplates=[template("a"), template("b")]),
     lambda w: evolve_spec(w, pod_group_templates=w.spec.pod_group_templates[:1]),
     ["spec.podGroupTemplates: Forbidden: item may not be removed"]),
    (workload(podGroupTemplates=[template("a", priority=5)]), lambda w: workload(podGroupTemplates=[template("a")]),
     ["spec.podGroupTemplates[0].priority: Forbidden: field is immutable"]),
    (workload(controllerRef={"kind": "Job", "name": "a"}),
     lambda w: evolve_spec(w, controller_ref=attrs.evolve(w.spec.controller_ref, name="b")),
     ["spec.controllerRef: Forbidden: field is immutable"]),
    (member(schedulingGroup={"podGroupName": "g"}),
     lambda p: evolve_spec(p, scheduling_group=attrs.evolve(p.spec.scheduling_group, pod_group_name="h")),
     ["spec.schedulingGroup: Forbidden: field is immutable"]),
    (member(), lambda p: evolve_spec(p, scheduling_group=member(
        schedulingGroup={"podGroupName": "g"}).spec.scheduling_group),
     ["spec.schedulingGroup: Forbidden: field is immutable"]),
]


@pytest.mark.parametrize("original, change, problems", UPDATE,
                         ids=[f"{type(o).__name__}-{i}" for i, (o, _, _) in enumerate(UPDATE)])
def test_updates_keep_what_upstream_makes_immutable(original, change, problems):
    cluster = MemoryCluster()
    stored = cluster.create(original)
    changed = change(stored)
    changed = attrs.evolve(changed, metadata=stored.metadata)
    with pytest.raises(Invalid) as refused:
        cluster.update(changed)
    assert str(refused.value).split(": ", 1)[1].split("; ") == problems
    assert cluster.get(type(original).__name__, stored.metadata.name, "ml") == stored


def test_a_gang_may_change_its_min_count_and_templates_their_count():
    cluster = MemoryCluster()
    stored = cluster.create(group())
    grown = cluster.update(evolve_spec(stored, scheduling_policy=gang(5)))
    assert grown.min_count == 5
    flow = cluster.create(workload())
    scaled = evolve_spec(flow, pod_group_templates=(attrs.evolve(
        flow.spec.pod_group_templates[0], scheduling_policy=gang(9)),))
    assert cluster.update(scaled).template("workers").scheduling_policy.gang.min_count == 9
