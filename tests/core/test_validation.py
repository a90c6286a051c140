"""The API server's validation of what the scheduler reads: refused with upstream's field and message."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import Invalid
from kubesched.core.cluster.memory import MemoryCluster


def pod(metadata: dict | None = None, **spec) -> object:
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **(metadata or {})},
                          "spec": {"containers": [{"name": "c", "image": "i"}], **spec}})


def container(**resources) -> dict:
    return {"name": "c", "image": "i", "resources": resources}


@pytest.mark.parametrize("obj, problem", [
    (pod({"name": "Bad_Name"}), 'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'),
    (pod({"namespace": "Bad_NS"}), 'metadata.namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label'),
    (pod({"labels": {"a b": "x"}}), 'metadata.labels: Invalid value: "a b": name part must consist of'),
    (pod({"labels": {"a": "x" * 64}}), "must be no more than 63 characters"),
    (pod({"labels": {"example.com/": "x"}}), 'Invalid value: "example.com/": name part must be non-empty'),
    (pod(nodeSelector={"-bad": "x"}), 'spec.nodeSelector: Invalid value: "-bad"'),
    (pod(tolerations=[{"key": "k", "operator": "Maybe"}]),
     'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'),
    (pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     "value must be empty when `operator` is 'Exists'"),
    (pod(tolerations=[{"operator": "Equal", "value": "v"}]), "operator must be Exists when `key` is empty"),
    (pod(tolerations=[{"key": "k", "value": "v", "effect": "Sometimes"}]),
     'spec.tolerations[0].effect: Unsupported value: "Sometimes"'),
    (pod(containers=[container(requests={"cpu": "-1"})]),
     "spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"),
    (pod(containers=[container(requests={"cpu": "2"}, limits={"cpu": "1"})]),
     "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"),
    (pod(containers=[{"name": "c", "image": "i"}, {"name": "c", "image": "i"}]),
     'spec.containers[1].name: Duplicate value: "c"'),
    (pod(containers=[]), "spec.containers: Required value"),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}}}),
     'nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}),
     "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["many"]}]}]}}}),
     "must be specified single value when `operator` is 'Lt' or 'Gt'"),
    (pod(priority=2**40), "spec.priority: Invalid value: 1099511627776: must be a 32-bit integer"),
])
def test_the_embedded_api_server_refuses_what_kube_apiserver_refuses(obj, problem):
    with pytest.raises(Invalid) as refused:
        MemoryCluster().create(obj)
    assert str(refused.value).startswith('Pod "') and problem in str(refused.value)


def test_valid_objects_pass():
    cluster = MemoryCluster()
    cluster.create(pod({"labels": {"app.kubernetes.io/name": "web", "empty": ""}}, nodeSelector={"zone": "a"},
                       tolerations=[{"operator": "Exists"}, {"key": "k", "operator": "Exists", "effect": "NoSchedule"}]))
