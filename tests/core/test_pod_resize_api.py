"""The pods/resize subresource (in-place resize, KEP-1287) with the API server's rules, in the embedded API server
and through the real client against the strict fake API server (tests/fake_apiserver.py): PATCH and PUT change
only cpu and memory of containers, sidecars and (InPlacePodLevelResourcesVerticalScaling) the pod-level
``spec.resources``; upstream's ``ValidatePodResize`` refusals come back as 422 with its messages."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import Invalid, NotFound
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.features import FeatureGates
from kubesched.testing import node

MI = 1024 * 1024


def burstable(name: str = "rz", **spec):
    """A Burstable pod: one container asking 100m/64Mi, limited to 300m/64Mi (upstream's e2e resize pod)."""
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                          "spec": {"nodeName": "n1", "containers": [{
                              "name": "c", "image": "pause",
                              "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                            "limits": {"cpu": "300m", "memory": "64Mi"}}}], **spec}})


def pod_level(name: str = "pl"):
    """A pod with pod-level resources: 1 CPU asked, 2 the limit; its container asks 500m."""
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                          "spec": {"nodeName": "n1",
                                   "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                 "limits": {"cpu": "2", "memory": "1Gi"}},
                                   "containers": [{"name": "c", "image": "pause",
                                                   "resources": {"requests": {"cpu": "500m"}}}]}})


def resources(requests=None, limits=None, name="c") -> dict:
    body: dict = {"name": name, "resources": {}}
    if requests is not None:
        body["resources"]["requests"] = requests
    if limits is not None:
        body["resources"]["limits"] = limits
    return {"spec": {"containers": [body]}}


REFUSED = [
    ("ephemeral-storage", burstable(), resources(limits={"ephemeral-storage": "1Gi"}),
     "spec: Forbidden: only cpu and memory resources are mutable"),
    ("request above limit", burstable(), resources(requests={"cpu": "500m"}),
     'spec.containers[0].resources.requests: Invalid value: "500m": must be less than or equal to cpu limit of 300m'),
    ("a removed request", burstable(), resources(requests={"memory": None}),
     "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"),
    ("a removed limit", burstable(), resources(limits={"cpu": None}),
     "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"),
    ("Burstable to Guaranteed", burstable(), resources(requests={"cpu": "300m"}),
     'spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing'),
    ("non-sidecar init container",
     burstable(initContainers=[{"name": "init", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]),
     {"spec": {"initContainers": [{"name": "init", "resources": {"requests": {"cpu": "20m"}}}]}},
     "spec.initContainers[0].resources: Forbidden: resources for non-sidecar init containers are immutable"),
    ("pod-level request below the containers'", pod_level(), {"spec": {"resources": {"requests": {"cpu": "400m"}}}},
     'spec.resources.requests[cpu]: Invalid value: "400m": must be greater than or equal to aggregate container '
     "requests of 500m"),
    ("a removed pod-level limit", pod_level(), {"spec": {"resources": {"limits": {"memory": None}}}},
     "spec.resources.limits: Forbidden: resource limits cannot be removed"),
]


@pytest.mark.parametrize("name, made, patch, message", REFUSED, ids=[c[0] for c in REFUSED])
def test_the_embedded_api_server_refuses_what_upstream_refuses(name, made, patch, message):
    cluster = MemoryCluster()
    cluster.create(node("n1"))
    stored = cluster.create(made)
    with pytest.raises(Invalid) as err:
        cluster.patch("Pod", made.metadata.name, patch, "default", subresource="resize")
    assert message in str(err.value)
    assert cluster.get("Pod", made.metadata.name, "default").spec == stored.spec


@pytest.mark.parametrize("name, made, patch, message", REFUSED, ids=[c[0] for c in REFUSED])
def test_the_fake_api_server_answers_422_through_the_client(name, made, patch, message, kube, apiserver):
    kube.create(node("n1"))
    kube.create(made)
    with pytest.raises(Invalid) as err:
        kube.patch("Pod", made.metadata.name, patch, "default", subresource="resize")
    assert message in str(err.value)
    assert ("PATCH", f"/api/v1/namespaces/default/pods/{made.metadata.name}/resize", 422) in apiserver.answers


def test_a_resize_changes_the_containers_cpu_and_memory_and_nothing_else(kube, apiserver, tmp_path):
    kube.create(node("n1"))
    kube.create(burstable())
    resized = kube.patch("Pod", "rz", resources(requests={"cpu": "200m"}, limits={"cpu": "400m"}), "default",
                         subresource="resize")
    assert resized.spec.containers[0].resources.requests == {"cpu": 200, "memory": 64 * MI}
    assert resized.spec.containers[0].resources.limits == {"cpu": 400, "memory": 64 * MI}
    # a plain update may not change resources: only the resize subresource does
    with pytest.raises(Invalid, match="pod updates may not change fields"):
        kube.update(attrs.evolve(resized, spec=burstable().spec))
    # a PUT of pods/resize by the kubernetes client's own call: the pod-level resources resized
    kube.create(pod_level())
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=apiserver.kubeconfig(tmp_path / "put")))
    body = api.read_namespaced_pod("pl", "default")
    body.spec.resources.requests["cpu"] = "1500m"
    api.replace_namespaced_pod_resize("pl", "default", body)
    assert apiserver.cluster.get("Pod", "pl", "default").spec.resources.requests["cpu"] == 1500
    assert ("PUT", "/api/v1/namespaces/default/pods/pl/resize", 200) in apiserver.answers


def test_no_resize_subresource_while_in_place_pod_vertical_scaling_is_off():
    cluster = MemoryCluster(features=FeatureGates("1.34", {"InPlacePodVerticalScaling": False}))
    cluster.create(node("n1"))
    cluster.create(burstable())
    with pytest.raises(NotFound):
        cluster.patch("Pod", "rz", resources(requests={"cpu": "200m"}), "default", subresource="resize")
    with pytest.raises(NotFound):
        cluster.update_resize(burstable())
