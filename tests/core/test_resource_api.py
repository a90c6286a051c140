"""resource.k8s.io (DRA) objects: every real upstream manifest loads, older
apiVersions convert to the same objects, round trips, field-naming errors."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from kubesched.core.api import RESOURCES, ManifestError, from_manifest, resource_of, to_manifest
from kubesched.core.api import resource_v1 as r
from kubesched.core.api.manifests import InvalidManifest, load_objects
from kubesched.core.quantity import format_exact_quantity, parse_quantity
from kubesched.perf.template import expand

DATA = Path(__file__).resolve().parents[2] / "data"
EXAMPLES = DATA / "dra-examples"
PERF_TEMPLATES = DATA / "scheduler_perf" / "dra" / "templates"

DRA_KINDS = {"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceTaintRule"}
#: Kinds in the example files that kubesched does not model.
FOREIGN_KINDS = {"Deployment"}
GI = 2**30


# --- rendering Go/Helm templates with simple values -----------------------------------------

_RANGE = re.compile(r"\{\{-?\s*range [^}]*\}\}(.*?)\{\{-?\s*end\s*-?\}\}", re.S)
_SIMPLE = [
    (re.compile(r'\{\{-?\s*include "[^"]*resourceApiVersion"[^}]*\}\}'), "resource.k8s.io/v1"),
    (re.compile(r'\{\{-?\s*include "[^"]*driverName"[^}]*\}\}'), "gpu.example.com"),
    (re.compile(r"\{\{-?\s*\$resourceApiVersion\s*\}\}"), "resource.k8s.io/v1"),
    (re.compile(r"\{\{-?\s*\.\s*\|\s*quote\s*\}\}"), '"example.com/gpu"'),
    (re.compile(r"\{\{-?\s*\$(selectors|constraints)\s*\}\}"), "null"),
    (re.compile(r"\{\{-?\s*(DivideInt\s+)?\.Index[^}]*\}\}"), "3"),
]
_CONTROL = re.compile(r"[ \t]*\{\{-?\s*(if|with|end|\$\w+\s*:=)[^}]*\}\}[ \t]*\n?")


def render_template(text: str, copies: int = 3) -> str:
    """Substitute simple values into scheduler_perf / Helm templates: ``.Index`` is 3,
    ``range`` bodies repeat ``copies`` times with ``{{.}}`` = 0, 1, ..., Helm
    conditionals keep their content, JSON placeholders become null."""
    text = _RANGE.sub(lambda m: "".join(m.group(1).replace("{{.}}", str(i)) for i in range(copies)), text)
    for pattern, value in _SIMPLE:
        text = pattern.sub(value, text)
    text = _CONTROL.sub("", text)
    assert "{{" not in text, text
    return text


def manifest_files() -> list[Path]:
    files = sorted(EXAMPLES.rglob("*.yaml")) + sorted(PERF_TEMPLATES.glob("*.yaml"))
    return [f for f in files if f.name not in ("performance-config.yaml", "scheduler-config.yaml")]


def documents(path: Path) -> list[dict]:
    """The documents of one example file, rendered; the bare ``spec.devices[]``
    entries of the NVIDIA doc example are wrapped into a ResourceSlice."""
    text = path.read_text()
    if path.parent == PERF_TEMPLATES:  # scheduler_perf's own templates: rendered as the perf runner renders them
        text = expand(text, {"Index": 3, "PodGroupCount": 2}, where=str(path))
    else:
        text = render_template(text)
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    out = []
    for doc in docs:
        if isinstance(doc, list):
            for index, device in enumerate(doc):
                out.append({
                    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{path.stem}-{index}"},
                    "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-1",
                             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                             "devices": [device]},
                })
        elif doc.get("kind") == "List":
            out.extend(doc["items"])
        else:
            out.append(doc)
    return out


def load_dra_file(path: Path, tmp_path: Path) -> list:
    """Every object kubesched models in ``path``, through :func:`load_objects`."""
    docs = documents(path)
    unknown = {d["kind"] for d in docs if d["kind"] not in RESOURCES}
    assert unknown <= FOREIGN_KINDS, unknown
    target = tmp_path / path.name
    target.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] in RESOURCES]))
    return load_objects([target])


FILES = manifest_files()


def test_all_example_files_are_found():
    assert len(FILES) >= 45
    assert any("helm-template" in f.name for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_real_manifest_loads_and_round_trips(path, tmp_path):
    objects = load_dra_file(path, tmp_path)
    assert objects, path
    for obj in objects:
        if resource_of(obj).kind not in DRA_KINDS:
            continue
        manifest = to_manifest(obj)
        assert manifest["apiVersion"] == "resource.k8s.io/v1"
        assert from_manifest(manifest) == obj
        # and once more through YAML text
        assert from_manifest(yaml.safe_load(yaml.safe_dump(manifest))) == obj


def test_every_dra_kind_is_registered():
    for kind in DRA_KINDS:
        resource = RESOURCES[kind]
        assert resource.api_version == "resource.k8s.io/v1"
        assert resource.group == "resource.k8s.io"
    assert RESOURCES["ResourceClaim"].namespaced and RESOURCES["ResourceClaimTemplate"].namespaced
    assert not RESOURCES["ResourceSlice"].namespaced and not RESOURCES["DeviceClass"].namespaced
    assert RESOURCES["DeviceTaintRule"].plural == "devicetaintrules"


def by_kind(objects, kind):
    return [o for o in objects if resource_of(o).kind == kind]


def test_resourceslice_dump_contents(tmp_path):
    (rs,) = load_dra_file(EXAMPLES / "dra-example-driver" / "resourceslice-dump-kind-8gpus.yaml", tmp_path)
    assert isinstance(rs, r.ResourceSlice)
    assert rs.spec.driver == "gpu.example.com" and rs.spec.node_name == "dra-example-driver-cluster-worker"
    assert rs.spec.pool == r.ResourcePool(name="dra-example-driver-cluster-worker", generation=0, resource_slice_count=1)
    assert rs.pool_id == ("gpu.example.com", "dra-example-driver-cluster-worker")
    assert [d.name for d in rs.spec.devices] == [f"gpu-{i}" for i in range(8)]
    gpu3 = rs.spec.device("gpu-3")
    assert gpu3.capacity["memory"].value == 80 * GI
    assert isinstance(gpu3.capacity["memory"].value, Fraction)
    assert gpu3.attributes["index"].value == 3 and gpu3.attributes["index"].kind == "int"
    assert gpu3.attributes["driverVersion"] == r.DeviceAttribute(version_value="1.0.0")
    assert gpu3.lookup_attribute("gpu.example.com/model", "gpu.example.com").value == "LATEST-GPU-MODEL"
    assert gpu3.lookup_attribute("other.com/model", "gpu.example.com") is None
    assert gpu3.lookup_capacity("memory", "gpu.example.com").value == 80 * GI
    assert rs.metadata.uid == "d13fd8bd-0a71-43e1-ba79-ebd2fae4847a" and rs.metadata.generation == 1


def test_claim_shapes_from_real_examples(tmp_path):
    (rct,) = by_kind(load_dra_file(EXAMPLES / "nvidia-dra-driver-gpu" / "gpu-test4.yaml", tmp_path), "ResourceClaimTemplate")
    devices = rct.spec.spec.devices
    assert [req.exactly.device_class_name for req in devices.requests] == ["mig.nvidia.com"] * 4
    assert devices.requests[0].exactly.selectors[0].expression == "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
    assert devices.constraints == (r.DeviceConstraint(requests=(), match_attribute="gpu.nvidia.com/parentUUID"),)

    prioritized = by_kind(load_dra_file(EXAMPLES / "dra-example-driver" / "prioritized-alternatives.yaml", tmp_path), "ResourceClaimTemplate")
    request = prioritized[0].spec.spec.devices.requests[0]
    assert request.exactly is None
    assert [sub.name for sub in request.first_available] == ["bleeding-edge-gpu", "huge-gpu", "older-gpu"]
    assert request.reference_names == ("gpu", "gpu/bleeding-edge-gpu", "gpu/huge-gpu", "gpu/older-gpu")
    assert request.first_available[2].count == 1 and request.first_available[2].allocation_mode == "ExactCount"

    claims = by_kind(load_dra_file(EXAMPLES / "dra-example-driver" / "gpu-allow-multiple-allocations.yaml", tmp_path), "ResourceClaim")
    assert claims[0].key == "gpu-allow-multiple-allocations/shared-gpu-pod0"
    assert claims[0].spec.devices.requests[0].exactly.capacity.requests == {"memory": 16 * GI, "compute": 20}

    (opaque,) = by_kind(load_dra_file(EXAMPLES / "nvidia-dra-driver-gpu" / "gpu-test5.yaml", tmp_path), "ResourceClaimTemplate")
    config = opaque.spec.spec.devices.config[1]
    assert config.requests == ("mps-gpu",) and config.opaque.driver == "gpu.nvidia.com"
    assert config.opaque.parameters["sharing"]["mpsConfig"]["defaultPinnedDeviceMemoryLimit"] == "10Gi"


def test_slice_features_from_perf_templates(tmp_path):
    (cc,) = load_dra_file(DATA / "dra-examples/k8s-scheduler-perf-dra/templates/resourceslice-consumablecapacity.yaml", tmp_path)
    shareable = cc.spec.device("shareable-device")
    assert shareable.allows_multiple_allocations
    policy = shareable.capacity["memory"].request_policy
    assert policy.default == GI and policy.valid_range == r.CapacityRequestPolicyRange(min=GI)
    assert shareable.attributes["dra.example.com/slice"].value == 3
    assert cc.spec.shared_counters[0].counters["counter1"].value == 1
    consumption = cc.spec.device("device-2-counters-1").consumes_counters[0]
    assert consumption.counter_set == "counter-set" and set(consumption.counters) == {"counter1", "counter2"}
    assert cc.spec.node_selector.node_selector_terms[0].match_expressions[0].key == "node-with-dra"

    (basic,) = load_dra_file(PERF_TEMPLATES / "resourceslice-basic-devices.yaml", tmp_path)
    # the template's default numDevices (10), rendered as the perf runner renders it
    assert [d.name for d in basic.spec.devices] == [f"basic-device-{i}" for i in range(10)]
    assert basic.spec.devices[1].attributes["resource.k8s.io/pciRoot"].value == "1"

    (rule,) = load_dra_file(PERF_TEMPLATES / "devicetaintrule.yaml", tmp_path)
    assert isinstance(rule, r.DeviceTaintRule)
    assert rule.spec.device_selector is None  # `deviceSelector:` is null in the template
    assert rule.spec.taint == r.DeviceTaint(key="example.com/taint", value="tainted", effect="NoSchedule")


def test_helm_device_classes(tmp_path):
    (gpu,) = load_dra_file(EXAMPLES / "nvidia-dra-driver-gpu" / "deviceclass-gpu.helm-template.yaml", tmp_path)
    assert gpu.spec.extended_resource_name == "nvidia.com/gpu"
    assert gpu.spec.selectors[0].expression == "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    (example,) = load_dra_file(EXAMPLES / "dra-example-driver" / "deviceclass.helm-template.yaml", tmp_path)
    assert example.metadata.name == "gpu.example.com"
    assert example.spec.selectors[0].cel == r.CELDeviceSelector("device.driver == 'gpu.example.com'")


# --- older apiVersions ---------------------------------------------------------------------


def load(text: str):
    return from_manifest(yaml.safe_load(text))


CLAIM_V1 = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: 'device.driver == "x"'}}]
        allocationMode: ExactCount
        count: 2
        adminAccess: true
        tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
        capacity: {requests: {memory: 4Gi}}
    - name: alt
      firstAvailable:
      - {name: a, deviceClassName: big}
      - {name: b, deviceClassName: small, count: 2}
    constraints:
    - {requests: [gpu, alt/b], matchAttribute: gpu.example.com/numa}
"""

CLAIM_V1BETA1 = """
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      selectors: [{cel: {expression: 'device.driver == "x"'}}]
      allocationMode: ExactCount
      count: 2
      adminAccess: true
      tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
      capacity: {requests: {memory: 4Gi}}
    - name: alt
      firstAvailable:
      - {name: a, deviceClassName: big}
      - {name: b, deviceClassName: small, count: 2}
    constraints:
    - {requests: [gpu, alt/b], matchAttribute: gpu.example.com/numa}
"""


def test_claim_versions_convert_to_the_same_object():
    v1 = load(CLAIM_V1)
    assert load(CLAIM_V1BETA1) == v1
    assert load(CLAIM_V1BETA1.replace("v1beta1", "v1alpha3")) == v1
    assert load(CLAIM_V1.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta2")) == v1
    request = v1.spec.devices.requests[0].exactly
    assert request.count == 2 and request.admin_access is True
    assert request.tolerations[0].toleration_seconds == 30
    assert request.capacity.requests["memory"] == 4 * GI
    assert [sub.name for sub in v1.spec.devices.request("alt").first_available] == ["a", "b"]
    assert to_manifest(load(CLAIM_V1BETA1))["apiVersion"] == "resource.k8s.io/v1"
    assert to_manifest(load(CLAIM_V1BETA1)) == to_manifest(v1)


def test_real_v1alpha3_templates_convert(tmp_path):
    objects = load_dra_file(PERF_TEMPLATES / "resourceclaimtemplate-toleration.yaml", tmp_path)
    (template,) = objects
    exactly = template.spec.spec.devices.requests[0].exactly
    assert exactly.device_class_name == "test-class"
    assert exactly.tolerations == (r.DeviceToleration(key="example.com/taint", operator="Exists"),)
    (first,) = load_dra_file(PERF_TEMPLATES / "resourceclaimtemplate-first-available.yaml", tmp_path)
    subs = first.spec.spec.devices.requests[0].first_available
    assert [(s.name, s.device_class_name) for s in subs] == [("sub-0", "no-such-class"), ("sub-1", "test-class")]
    v1 = yaml.safe_load((PERF_TEMPLATES / "resourceclaimtemplate-first-available.yaml").read_text())
    v1["apiVersion"] = "resource.k8s.io/v1"
    assert from_manifest(v1) == first


SLICE_V1 = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: dra.example.com
  pool: {name: p, generation: 2, resourceSliceCount: 1}
  perDeviceNodeSelection: true
  sharedCounters:
  - name: cs
    counters: {mem: {value: 8Gi}}
  devices:
  - name: d0
    nodeName: node-a
    attributes:
      model: {string: a100}
      driverVersion: {version: 1.2.3-rc.1}
      dra.example.com/numa: {int: 1}
      healthy: {bool: true}
    capacity:
      memory: {value: 40Gi}
      cores: {value: "1.5"}
    consumesCounters:
    - counterSet: cs
      counters: {mem: {value: 4Gi}}
    taints: [{key: broken, effect: NoExecute, timeAdded: "2026-01-02T03:04:05Z"}]
    allowMultipleAllocations: true
"""


def _v1beta1_slice(plain_capacity: bool) -> str:
    doc = yaml.safe_load(SLICE_V1)
    doc["apiVersion"] = "resource.k8s.io/v1alpha3" if plain_capacity else "resource.k8s.io/v1beta1"
    device = doc["spec"]["devices"][0]
    basic = {k: device.pop(k) for k in list(device) if k != "name"}
    if plain_capacity:
        basic["capacity"] = {k: v["value"] for k, v in basic["capacity"].items()}
    device["basic"] = basic
    return yaml.safe_dump(doc)


def test_slice_versions_convert_to_the_same_object():
    v1 = load(SLICE_V1)
    assert load(SLICE_V1.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta2")) == v1
    assert load(_v1beta1_slice(plain_capacity=False)) == v1
    assert load(_v1beta1_slice(plain_capacity=True)) == v1
    device = v1.spec.devices[0]
    assert device.capacity["cores"].value == Fraction(3, 2)
    assert device.taints[0].time_added == 1767323045.0
    assert device.node_name == "node-a" and v1.spec.per_device_node_selection
    assert to_manifest(v1)["spec"]["devices"][0]["capacity"] == {"memory": {"value": "40Gi"}, "cores": {"value": "1500m"}}


def test_device_taint_rule_versions():
    text = """
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {deviceClassName: gpu.example.com, driver: gpu.example.com, pool: node-1}
  taint: {key: maintenance, value: "true", effect: NoExecute}
status:
  conditions:
  - {type: EvictionInProgress, status: "False", reason: NotStarted, message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
"""
    old = load(text)
    assert load(text.replace("v1alpha3", "v1beta2")) == old
    assert load(text.replace("v1alpha3", "v1")) == old
    assert to_manifest(old)["apiVersion"] == "resource.k8s.io/v1"
    selector = old.spec.device_selector
    assert selector.device_class_name == "gpu.example.com"
    assert selector.matches("gpu.example.com", "node-1", "gpu-0")
    assert not selector.matches("gpu.example.com", "node-2", "gpu-0")
    assert r.DeviceTaintSelector().matches("a", "b", "c")
    assert old.status.conditions[0].type == r.DEVICE_TAINT_CONDITION_EVICTION_IN_PROGRESS


def test_unknown_api_version_is_refused():
    with pytest.raises(ManifestError) as err:
        load(CLAIM_V1.replace("resource.k8s.io/v1", "resource.k8s.io/v2"))
    assert err.value.field == "apiVersion"


def test_allocated_claim_status_round_trip():
    text = CLAIM_V1 + """
status:
  allocation:
    devices:
      results:
      - {request: gpu, driver: gpu.example.com, pool: node-1, device: gpu-0, adminAccess: true,
         shareID: 1a2b, consumedCapacity: {memory: 4Gi},
         tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]}
      - {request: alt/b, driver: gpu.example.com, pool: node-1, device: gpu-1}
      config:
      - {source: FromClass, requests: [gpu], opaque: {driver: gpu.example.com, parameters: {a: 1}}}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
    allocationTimestamp: "2026-01-02T03:04:05Z"
  reservedFor: [{resource: pods, name: p, uid: u1}]
  devices: [{driver: gpu.example.com, pool: node-1, device: gpu-0, conditions: [{type: Ready, status: "True"}], data: {x: 1}}]
"""
    claim = load(text)
    results = claim.status.allocation.devices.results
    assert results[0].share_id == "1a2b" and results[0].consumed_capacity == {"memory": 4 * GI}
    assert results[1].device_id == ("gpu.example.com", "node-1", "gpu-1")
    assert claim.status.reserved_for == (r.ResourceClaimConsumerReference(resource="pods", name="p", uid="u1"),)
    manifest = to_manifest(claim)
    assert manifest["status"]["allocation"]["devices"]["results"][0]["shareID"] == "1a2b"
    assert manifest["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] == {"memory": "4Gi"}
    assert from_manifest(manifest) == claim


# --- exact quantities, helpers -------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [(0, "0"), (80 * GI, "80Gi"), (1000, "1k"), (20, "20"), (1536 * 2**20, "1536Mi"), (Fraction(1, 2), "500m"),
     (Fraction(3, 2), "1500m"), (Fraction(1, 10**6), "1u"), (Fraction(1, 3), "333333334n"), (-2048, "-2Ki")],
)
def test_format_exact_quantity(value, text):
    assert format_exact_quantity(value) == text
    if value >= 0 and Fraction(value).denominator in (1, 2, 10**6):
        assert parse_quantity(text) == value


def test_tolerations_and_qualified_names():
    taint = r.DeviceTaint(key="k", value="v", effect="NoExecute")
    assert r.DeviceToleration(key="k", value="v").tolerates(taint)
    assert not r.DeviceToleration(key="k", value="w").tolerates(taint)
    assert r.DeviceToleration(operator="Exists").tolerates(taint)
    assert not r.DeviceToleration(key="k", operator="Exists", effect="NoSchedule").tolerates(taint)
    assert r.split_qualified_name("model", "d.com") == ("d.com", "model")
    assert r.split_qualified_name("x.com/model", "d.com") == ("x.com", "model")
    device = r.Device(name="d", attributes={"d.com/a": r.DeviceAttribute(int_value=1), "b": r.DeviceAttribute(bool_value=False)})
    assert device.lookup_attribute("d.com/a", "d.com").value == 1
    assert device.lookup_attribute("d.com/b", "d.com").value is False
    assert device.lookup_attribute("a", "d.com").value == 1


# --- errors name the field -----------------------------------------------------------------

SLICE_SHELL = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d.example.com
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  nodeName: n
"""


def slice_with(devices: str) -> dict:
    doc = yaml.safe_load(SLICE_SHELL)
    doc["spec"]["devices"] = yaml.safe_load(devices)
    return doc


def claim_with(requests: str, constraints: str = "[]") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "n"},
            "spec": {"devices": {"requests": yaml.safe_load(requests), "constraints": yaml.safe_load(constraints)}}}


@pytest.mark.parametrize(
    "doc, field, words",
    [
        (slice_with("[{name: a}, {name: b}, {name: a}]"), "spec.devices[2].name", "Duplicate value: 'a'"),
        (slice_with("[{name: a, capacity: {memory: {value: lots}}}]"), "spec.devices[0].capacity.memory.value", "quantities must match"),
        (slice_with("[{name: a, capacity: {memory: {}}}]"), "spec.devices[0].capacity.memory.value", "Required value"),
        (slice_with("[{name: a, attributes: {v: {version: '1.0'}}}]"), "spec.devices[0].attributes.v.version", "semver"),
        (slice_with("[{name: a, attributes: {x: {int: 1, string: a}}}]"), "spec.devices[0].attributes.x", "exactly one value"),
        (slice_with("[{name: a, nodeName: n2}]"), "spec.devices[0]", "perDeviceNodeSelection"),
        (slice_with("[{name: a, taints: [{key: k}]}]"), "spec.devices[0].taints[0].effect", "Required value"),
        (claim_with("[{name: r}]"), "spec.devices.requests[0]", "exactly one of `exactly` or `firstAvailable`"),
        (claim_with("[{name: r, exactly: {deviceClassName: c, count: 0}}]"), "spec.devices.requests[0].exactly.count", "greater than zero"),
        (claim_with("[{name: r, firstAvailable: [{name: a, deviceClassName: c, count: -1}]}]"),
         "spec.devices.requests[0].firstAvailable[0].count", "greater than zero"),
        (claim_with("[{name: r, exactly: {deviceClassName: c, allocationMode: Some}}]"), "spec.devices.requests[0].exactly.allocationMode", "Unsupported value"),
        (claim_with("[{name: r, exactly: {}}]"), "spec.devices.requests[0].exactly.deviceClassName", "Required value"),
        (claim_with("[{name: r, exactly: {deviceClassName: c}}, {name: r, exactly: {deviceClassName: c}}]"), "spec.devices.requests[1].name", "Duplicate"),
        (claim_with("[{name: r, exactly: {deviceClassName: c}}]", "[{requests: [x], matchAttribute: a.com/b}]"),
         "spec.devices.constraints[0].requests[0]", "'x'"),
        (claim_with("[{name: r, exactly: {deviceClassName: c}}]", "[{requests: [r]}]"), "spec.devices.constraints[0]", "exactly one of"),
        (claim_with("[{name: r, exactly: {deviceClassName: c, tolerations: [{key: k, operator: Maybe}]}}]"),
         "spec.devices.requests[0].exactly.tolerations[0].operator", "Unsupported value"),
        (claim_with("[{name: r, exactly: {deviceClassName: c, capacity: {requests: {memory: x}}}}]"),
         "spec.devices.requests[0].exactly.capacity.requests.memory", "quantities must match"),
    ],
)
def test_bad_input_names_the_field(doc, field, words, tmp_path):
    with pytest.raises(ManifestError) as err:
        from_manifest(doc)
    assert err.value.field == field
    assert words in err.value.problem
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InvalidManifest) as err2:
        load_objects([path])
    assert err2.value.field == field
    assert err2.value.obj in ("ResourceSlice/s", "ResourceClaim/c")


def test_a_count_above_a_claims_32_results_is_accepted_as_the_api_server_does():
    claim = from_manifest(claim_with(
        "[{name: r, exactly: {deviceClassName: c, count: 33}},"
        " {name: s, firstAvailable: [{name: many, deviceClassName: c, count: 1000}, {name: one, deviceClassName: c}]}]"))
    exactly, first = claim.spec.devices.requests
    assert exactly.exactly.count == 33 and [sub.count for sub in first.first_available] == [1000, 1]


def test_slice_needs_exactly_one_node_selection():
    doc = yaml.safe_load(SLICE_SHELL)
    del doc["spec"]["nodeName"]
    with pytest.raises(ManifestError) as err:
        from_manifest(doc)
    assert err.value.field == "spec" and "nodeName" in err.value.problem
    doc["spec"].update(allNodes=True, nodeName="n")
    with pytest.raises(ManifestError, match="got nodeName, allNodes"):
        from_manifest(doc)


def test_too_many_results_and_missing_spec():
    results = [{"request": "r", "driver": "d", "pool": "p", "device": f"d{i}"} for i in range(33)]
    doc = claim_with("[{name: r, exactly: {deviceClassName: c}}]")
    doc["status"] = {"allocation": {"devices": {"results": results}}}
    with pytest.raises(ManifestError) as err:
        from_manifest(doc)
    assert err.value.field == "status.allocation.devices.results"
    with pytest.raises(ManifestError) as err:
        from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}})
    assert err.value.field == "spec"
