"""scheduling.k8s.io Workload, PodGroup (v1beta1, read also as v1alpha3) and CompositePodGroup (v1alpha3):
manifest -> object -> manifest, and what the scheduler reads of them."""

from __future__ import annotations

import copy

import pytest

from kubesched.core.api import ManifestError, from_manifest, resource_of, to_manifest
from kubesched.core.api.core_v1 import PodResourceClaim
from kubesched.core.api.scheduling_v1beta1 import (
    POD_GROUP_INITIALLY_SCHEDULED,
    CompositePodGroup,
    PodGroup,
    Workload,
    pod_group_key,
    pod_group_name,
    shared_claim,
)

POD_GROUP = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "trainer-0", "namespace": "ml", "labels": {"job": "trainer"}},
    "spec": {
        "parentCompositePodGroupName": "trainer",
        "workloadRef": {"workloadName": "trainer", "templateName": "workers"},
        "schedulingPolicy": {"gang": {"minCount": 8}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
        "resourceClaims": [{"name": "nvlink", "resourceClaimTemplateName": "nvlink-domain"},
                           {"name": "dataset", "resourceClaimName": "imagenet"}],
        "disruptionMode": {"all": {}},
        "priorityClassName": "training",
        "priority": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
        "someFutureField": {"kept": True},
    },
    "status": {
        "conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                        "message": "8 pods", "observedGeneration": 1,
                        "lastTransitionTime": "2026-01-02T03:04:05Z"}],
        "resourceClaimStatuses": [{"name": "nvlink", "resourceClaimName": "trainer-0-nvlink-x7k2p"}],
    },
}

WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "trainer", "namespace": "ml"},
    "spec": {
        "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "trainer"},
        "compositePodGroupTemplates": [{
            "name": "job",
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/block"}]},
            "disruptionMode": {"all": {}},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 8}},
                                   "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}],
            "compositePodGroupTemplates": [{"name": "leaders", "schedulingPolicy": {"basic": {}},
                                            "podGroupTemplates": [{"name": "leader",
                                                                   "schedulingPolicy": {"basic": {}}}]}],
        }],
    },
}

COMPOSITE = {
    "apiVersion": "scheduling.k8s.io/v1alpha3",
    "kind": "CompositePodGroup",
    "metadata": {"name": "trainer", "namespace": "ml"},
    "spec": {
        "workloadRef": {"workloadName": "trainer", "templateName": "job"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/block"}]},
        "disruptionMode": {"single": {}},
        "priorityClassName": "training",
        "priority": 1000,
    },
    "status": {"conditions": [{"type": "CompositePodGroupInitiallyScheduled", "status": "False",
                               "reason": "Invalid", "message": "cycle", "lastTransitionTime": "2026-01-02T03:04:05Z"}]},
}


def without_version(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "apiVersion"}


@pytest.mark.parametrize("doc, cls", [(POD_GROUP, PodGroup), (WORKLOAD, Workload), (COMPOSITE, CompositePodGroup)])
def test_manifest_object_manifest_keeps_every_field(doc, cls):
    obj = from_manifest(copy.deepcopy(doc))
    assert isinstance(obj, cls)
    assert to_manifest(obj) == doc


@pytest.mark.parametrize("doc", [POD_GROUP, WORKLOAD])
def test_v1alpha3_groups_and_workloads_are_read_and_written_back_as_v1beta1(doc):
    alpha = {**copy.deepcopy(doc), "apiVersion": "scheduling.k8s.io/v1alpha3"}
    written = to_manifest(from_manifest(alpha))
    assert written["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert without_version(written) == without_version(doc)


def test_upstream_perf_templates_in_both_versions_read_as_gangs_with_their_priority():
    # scheduler_perf workload_preemption/templates/podgroup.yaml (v1alpha3) and podgroup/tas (v1beta1), rendered
    alpha = from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
                           "metadata": {"name": "gang-3"},
                           "spec": {"priority": 8888888, "disruptionMode": {"all": {}},
                                    "schedulingPolicy": {"gang": {"minCount": 4}}}})
    tas = from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "gang-1"},
                         "spec": {"schedulingPolicy": {"gang": {"minCount": 4}},
                                  "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}})
    assert (alpha.min_count, alpha.priority_value, alpha.disrupts_all, alpha.topology_key) == (4, 8888888, True, None)
    assert (tas.min_count, tas.priority_value, tas.disrupts_all) == (4, 0, False)
    assert tas.topology_key == "topology.kubernetes.io/rack"
    basic = from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
                           "metadata": {"name": "basic-group-1"}, "spec": {"schedulingPolicy": {"basic": {}}}})
    assert (basic.is_gang, basic.min_count) == (False, 1)


def test_an_early_v1alpha3_template_reference_becomes_workload_ref():
    group = from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup", "metadata": {"name": "g"},
                           "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "w",
                                                                         "podGroupTemplateName": "workers"}},
                                    "schedulingPolicy": {"basic": {}}}})
    assert to_manifest(group)["spec"]["workloadRef"] == {"workloadName": "w", "templateName": "workers"}
    assert "podGroupTemplateRef" not in to_manifest(group)["spec"]


def test_composite_pod_groups_are_served_as_v1alpha3_only():
    assert resource_of(CompositePodGroup).api_version == "scheduling.k8s.io/v1alpha3"
    assert (resource_of(PodGroup).plural, resource_of(Workload).plural) == ("podgroups", "workloads")
    with pytest.raises(ManifestError, match="CompositePodGroup is not served as 'scheduling.k8s.io/v1beta1'"):
        from_manifest({**COMPOSITE, "apiVersion": "scheduling.k8s.io/v1beta1"})


@pytest.mark.parametrize("spec, field", [
    ({"schedulingPolicy": {"gang": {"minCount": "many"}}}, "spec.schedulingPolicy.gang.minCount"),
    ({"schedulingPolicy": {"gang": []}}, "spec.schedulingPolicy.gang"),
    ({"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": "rack"}},
     "spec.schedulingConstraints.topology"),
    ({"schedulingPolicy": {"basic": {}}, "resourceClaims": [{"name": ["a"]}]}, "spec.resourceClaims[0].name"),
])
def test_a_value_of_the_wrong_shape_names_its_field(spec, field):
    with pytest.raises(ManifestError) as refused:
        from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
                       "spec": spec})
    assert refused.value.field == field


def test_the_group_a_pod_names_and_the_claims_it_shares():
    group = from_manifest(copy.deepcopy(POD_GROUP))
    member = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w-0", "namespace": "ml"},
                            "spec": {"schedulingGroup": {"podGroupName": "trainer-0"}, "containers": [{"name": "c"}],
                                     "resourceClaims": [{"name": "nvlink",
                                                         "resourceClaimTemplateName": "nvlink-domain"}]}})
    alone = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "namespace": "ml"},
                           "spec": {"containers": [{"name": "c"}]}})
    assert (pod_group_name(member), pod_group_key(member)) == ("trainer-0", group.key)
    assert (pod_group_name(alone), pod_group_key(alone)) == (None, None)
    assert to_manifest(member)["spec"]["schedulingGroup"] == {"podGroupName": "trainer-0"}
    assert shared_claim(member.spec.resource_claims[0], group) == group.spec.resource_claims[0]
    own = PodResourceClaim(name="nvlink", resource_claim_name="my-own")
    assert shared_claim(own, group) is None
    assert group.condition(POD_GROUP_INITIALLY_SCHEDULED).reason == "Scheduled"
    assert group.condition("DisruptionTarget") is None


def test_a_workload_finds_a_template_anywhere_in_its_tree():
    workload = from_manifest(copy.deepcopy(WORKLOAD))
    assert workload.template("leader").scheduling_policy.basic is not None
    assert workload.template("workers").scheduling_policy.gang.min_count == 8
    assert workload.template("job") is None  # a composite template is not a PodGroup template
