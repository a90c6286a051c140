"""apps/v1 and batch/v1 workload kinds: read from manifests, defaulted and validated as kube-apiserver does
(upstream pkg/apis/apps/validation/validation_test.go, pkg/apis/batch/validation/validation_test.go and
pkg/apis/batch/v1/defaults_test.go)."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest, to_manifest
from kubesched.core.api.manifests import InvalidManifest, parse_document
from kubesched.core.cluster.client import Invalid
from kubesched.core.cluster.memory import MemoryCluster

APP = {"app": "web"}
CONTAINERS = [{"name": "c", "image": "nginx"}]


def template(labels=None, **spec) -> dict:
    return {"metadata": {"labels": APP if labels is None else labels}, "spec": {"containers": CONTAINERS, **spec}}


def apps(kind: str, **spec) -> dict:
    body = {"selector": {"matchLabels": APP}, "template": template()}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"}, "spec": body}


def job(**spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"},
            "spec": {"template": template({}, restartPolicy="Never"), **spec}}


def cron(**spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template({}, restartPolicy="OnFailure")}},
                     **spec}}


def refused(doc: dict) -> str:
    with pytest.raises(Invalid) as err:
        MemoryCluster().create(from_manifest(doc))
    return str(err.value)


def test_a_deployment_gets_the_api_servers_defaults():
    stored = MemoryCluster().create(from_manifest(apps("Deployment")))
    spec = to_manifest(stored)["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate"}
    assert stored.spec.rolling().max_surge == "25%" and stored.spec.rolling().max_unavailable == "25%"
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600


def test_a_statefulset_defaults_to_ordered_ready_from_ordinal_zero():
    stored = MemoryCluster().create(from_manifest(apps("StatefulSet")))
    assert stored.spec.pod_management_policy == "OrderedReady"
    assert stored.spec.start_ordinal == 0


@pytest.mark.parametrize("spec, parallelism, completions", [
    ({}, 1, 1),                                      # neither set: one pod, one completion
    ({"parallelism": 3}, 3, None),                   # a work queue
    ({"completions": 5}, 1, 5),
    ({"parallelism": 2, "completions": 6}, 2, 6),
])
def test_job_parallelism_and_completions_defaults(spec, parallelism, completions):
    stored = MemoryCluster().create(from_manifest(job(**spec)))
    assert (stored.spec.parallelism, stored.spec.completions) == (parallelism, completions)
    assert stored.spec.backoff_limit == 6 and stored.spec.completion_mode == "NonIndexed"


def test_the_api_server_generates_a_jobs_selector_and_template_labels_from_its_uid():
    stored = MemoryCluster().create(from_manifest(job()))
    uid = stored.metadata.uid
    assert stored.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert stored.spec.template.metadata.labels == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "train",
        "controller-uid": uid, "job-name": "train"}


@pytest.mark.parametrize("doc, problem", [
    (apps("Deployment", selector=None), "spec.selector: Required value"),
    (apps("Deployment", selector={"matchLabels": {"app": "db"}}),
     'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`'),
    (apps("Deployment", replicas=-1), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (apps("Deployment", template=template(restartPolicy="Never")),
     'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'),
    (apps("Deployment", strategy={"type": "Canary"}),
     'spec.strategy.type: Unsupported value: "Canary": supported values: "Recreate", "RollingUpdate"'),
    (apps("Deployment", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"),
    (apps("Deployment", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "150%"}}),
     'spec.strategy.rollingUpdate.maxSurge: Invalid value: "150%": must not be greater than 100%'),
    (apps("ReplicaSet", template=template(containers=[])), "spec.template.spec.containers: Required value"),
    (apps("ReplicaSet", selector={}), "spec.selector: Invalid value: {}: empty selector is invalid for deployment"),
    (apps("StatefulSet", podManagementPolicy="Random"),
     "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"),
    (apps("StatefulSet", ordinals={"start": -1}),
     "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"),
    (apps("DaemonSet", template=template({"app": "other"})), "`selector` does not match template `labels`"),
    (apps("DaemonSet", template=template(labels={"bad key": "x"})),
     'spec.template.metadata.labels: Invalid value: "bad key"'),
    (job(template=template({})), 'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: '
                                 '"OnFailure", "Never"'),
    (job(parallelism=-1), "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
    (job(backoffLimit=-2), "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"),
    (job(activeDeadlineSeconds=-5), "spec.activeDeadlineSeconds: Invalid value: -5"),
    (job(ttlSecondsAfterFinished=-1), "spec.ttlSecondsAfterFinished: Invalid value: -1"),
    (job(parallelism=2, completionMode="Indexed"), "spec.completions: Required value: when completion mode is Indexed"),
    (job(completionMode="Sorted"),
     'spec.completionMode: Unsupported value: "Sorted": supported values: "NonIndexed", "Indexed"'),
    (cron(schedule=""), "spec.schedule: Required value"),
    (cron(schedule="every day"), 'spec.schedule: Invalid value: "every day": expected exactly 5 fields, found 2'),
    (cron(schedule="TZ=UTC 0 3 * * *"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    (cron(concurrencyPolicy="Sometimes"),
     'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'),
])
def test_invalid_workloads_are_refused_with_upstreams_field_and_message(doc, problem):
    assert problem in refused(doc)


def test_valid_workloads_are_stored():
    cluster = MemoryCluster()
    for doc in (apps("Deployment"), apps("ReplicaSet", replicas=3), apps("DaemonSet"),
                apps("StatefulSet", podManagementPolicy="Parallel", ordinals={"start": 5}),
                job(completions=4, parallelism=4, completionMode="Indexed"), cron(suspend=True)):
        cluster.create(from_manifest(doc))
    assert len(cluster.list("Deployment").items) == 1 and len(cluster.list("CronJob").items) == 1


def test_an_unknown_field_in_a_pod_template_is_refused_as_kubectl_applies_it():
    doc = apps("Deployment", template={**template(), "spec": {"containers": CONTAINERS, "nodeSelectr": {}}})
    with pytest.raises(InvalidManifest, match='unknown field "spec.template.spec.nodeSelectr"'):
        parse_document(doc, "web.yaml")
