"""The allocator on the dra-example-driver's real manifests: the ResourceSlice
dump of a kind node with 8 fake GPUs, the driver's DeviceClass (Helm template,
rendered) and the demo claims, each giving what its README/comments promise.
The pods' claim templates are read from the pod manifests, in file order; one
pod's claims are allocated after another's, as the scheduler would."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import attrs
import yaml

from kubesched.core.api import from_manifest
from kubesched.core.api.manifests import load_objects, read_documents
from kubesched.core.api.meta import ObjectMeta
from kubesched.core.api.resource_v1 import ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.core.dra.allocator import AllocatedState, Allocator
from kubesched.core.dra.selectors import SelectorCache
from kubesched.testing import node

EXAMPLES = Path(__file__).resolve().parents[3] / "data/dra-examples/dra-example-driver"

DRIVER = "gpu.example.com"
NODE = "dra-example-driver-cluster-worker"
GI = 2**30


def device_class():
    """deviceclass.helm-template.yaml rendered with the chart's defaults (no extended resource name)."""
    text = (EXAMPLES / "deviceclass.helm-template.yaml").read_text()
    text = re.sub(r'\{\{\s*include "dra-example-driver.resourceApiVersion" \. \}\}', "resource.k8s.io/v1", text)
    text = re.sub(r'\{\{\s*include "dra-example-driver.driverName" \. \}\}', DRIVER, text)
    text = re.sub(r"\s*\{\{-.*?\{\{- end \}\}", "", text, flags=re.S)
    (doc,) = [d for d in yaml.safe_load_all(text) if d]
    return from_manifest(doc)


def gpu_slices() -> list[ResourceSlice]:
    return load_objects([EXAMPLES / "resourceslice-dump-kind-8gpus.yaml"])


def pod_claims(file: str) -> list[list[ResourceClaim]]:
    """Per pod in ``file``: the claims its templates (or claim names) give."""
    objects = {(type(o).__name__, o.metadata.name): o for o in load_objects([EXAMPLES / file])}
    pods = []
    for doc in read_documents(EXAMPLES / file):
        if doc["kind"] != "Pod":
            continue
        claims = []
        for ref in doc["spec"].get("resourceClaims", []):
            if "resourceClaimTemplateName" in ref:
                template: ResourceClaimTemplate = objects["ResourceClaimTemplate", ref["resourceClaimTemplateName"]]
                name = f"{doc['metadata']['name']}-{ref['name']}"
                claims.append(ResourceClaim(
                    metadata=ObjectMeta(name=name, namespace=template.metadata.namespace, uid=f"uid-{name}"),
                    spec=template.spec.spec,
                ))
            else:
                claims.append(objects["ResourceClaim", ref["resourceClaimName"]])
        pods.append(claims)
    return pods


def schedule(file: str, slices: list[ResourceSlice] | None = None) -> list[list[tuple[str, str]]]:
    """Allocate each pod's claims in turn; per pod the ``(request, device)`` of every result."""
    cache, state, out = SelectorCache(), AllocatedState(), []
    classes = {DRIVER: device_class()}
    for claims in pod_claims(file):
        results = Allocator(slices or gpu_slices(), classes, state, cache).allocate(node(NODE), claims)
        assert results is not None, f"{file}: no devices for {[c.metadata.name for c in claims]}"
        for result in results:
            state.add(result)
            assert result.node_selector.node_selector_terms[0].match_fields[0].values == (NODE,)
        out.append([(r.request, r.device) for a in results for r in a.devices.results])
    return out


def test_slice_dump_has_eight_gpus():
    (gpus,) = gpu_slices()
    assert gpus.spec.node_name == NODE and [d.name for d in gpus.spec.devices] == [f"gpu-{i}" for i in range(8)]


def test_one_gpu_per_pod_from_a_template():
    assert schedule("basic-resourceclaimtemplate.yaml") == [[("gpu", "gpu-0")], [("gpu", "gpu-1")]]


def test_one_pod_two_requests():
    assert schedule("basic-multiple-requests.yaml") == [[("gpu-1", "gpu-0"), ("gpu-2", "gpu-1")]]


def test_cel_selector_on_model_and_memory():
    assert schedule("cel-selector.yaml") == [[("gpu", "gpu-0")]]


def test_prioritized_alternatives():
    # "pod0 is satisfied via older-gpu and pod1 via latest-gpu".
    assert schedule("prioritized-alternatives.yaml") == [[("gpu/older-gpu", "gpu-0")], [("gpu/latest-gpu", "gpu-1")]]


def test_opaque_config_per_request():
    (claims,) = pod_claims("basic-resourceclaim-opaque-config.yaml")
    (result,) = Allocator(gpu_slices(), {DRIVER: device_class()}, AllocatedState(), SelectorCache()).allocate(
        node(NODE), claims)
    assert [(r.request, r.device) for r in result.devices.results] == [("ts-gpu", "gpu-0"), ("sp-gpu", "gpu-1")]
    assert [(c.source, c.requests, c.opaque.parameters["sharing"]["strategy"]) for c in result.devices.config] == [
        ("FromClaim", ("ts-gpu",), "TimeSlicing"), ("FromClaim", ("sp-gpu",), "SpacePartitioning"),
    ]


def shareable_gpus() -> list[ResourceSlice]:
    """The dump as the driver publishes it with gpuAllowMultipleAllocations (README:
    capacity memory 80Gi and compute 100, each with requestPolicy default = all,
    validRange min 1Gi/1, step 1Gi/1, max = all)."""
    def policy(value: str, unit: str) -> dict:
        return {"value": value, "requestPolicy": {"default": value,
                                                  "validRange": {"min": unit, "step": unit, "max": value}}}

    (gpus,) = gpu_slices()
    devices = [
        attrs.evolve(d, allow_multiple_allocations=True, capacity=from_manifest({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "x"},
            "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "resourceSliceCount": 1},
                     "devices": [{"name": d.name, "capacity": {"memory": policy("80Gi", "1Gi"),
                                                               "compute": policy("100", "1")}}]},
        }).spec.devices[0].capacity)
        for d in gpus.spec.devices
    ]
    return [attrs.evolve(gpus, spec=attrs.evolve(gpus.spec, devices=tuple(devices)))]


def test_two_claims_share_one_gpu():
    slices = shareable_gpus()
    cache, state = SelectorCache(), AllocatedState()
    shares = []
    for claims in pod_claims("gpu-allow-multiple-allocations.yaml"):
        (result,) = Allocator(slices, {DRIVER: device_class()}, state, cache).allocate(node(NODE), claims)
        state.add(result)
        (share,) = result.devices.results
        shares.append(share)
    assert [s.device for s in shares] == ["gpu-0", "gpu-0"]
    assert all(s.consumed_capacity == {"memory": Fraction(16 * GI), "compute": Fraction(20)} for s in shares)
    assert shares[0].share_id != shares[1].share_id
    assert state.consumed_capacity[next(iter(state.shared))[0]] == {"memory": Fraction(32 * GI), "compute": Fraction(40)}
