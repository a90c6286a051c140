"""DynamicResources end to end: the claim controller, the plugin and the cluster, as a user sees them."""

from __future__ import annotations

import attrs
import pytest
import yaml

from kubesched.core.api import from_manifest, to_manifest
from kubesched.core.api.resource_v1 import FINALIZER, POD_CLAIM_NAME_ANNOTATION
from kubesched.core.cluster.client import NotFound
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

DRIVER = "gpu.example.com"


def condition(p):
    return next(c for c in p.status.conditions if c.type == "PodScheduled")


def device_class(name: str = DRIVER, expression: str = f"device.driver == '{DRIVER}'"):
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                          "spec": {"selectors": [{"cel": {"expression": expression}}]}})


def gpu_slice(node_name: str, count: int = 2, model: str = "A100", first: int = 0):
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": model}, "index": {"int": i}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(first, first + count)]
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": f"{node_name}-gpus"},
                          "spec": {"driver": DRIVER, "nodeName": node_name,
                                   "pool": {"name": node_name, "resourceSliceCount": 1}, "devices": devices}})


def template(name: str = "one-gpu", count: int = 1, selectors: list[str] = (), namespace: str = "default",
             tolerations: list[dict] | None = None):
    exactly = {"deviceClassName": DRIVER, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if tolerations:
        exactly["tolerations"] = tolerations
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                          "metadata": {"name": name, "namespace": namespace, "labels": {"team": "ml"}},
                          "spec": {"metadata": {"labels": {"from": "template"}},
                                   "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}})


def claim(name: str, namespace: str = "default", count: int = 1):
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": namespace},
                          "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                              "deviceClassName": DRIVER, "count": count}}]}}})


def gpu_pod(name: str, template_name: str | None = "one-gpu", claim_name: str | None = None, **kwargs):
    source = {"resourceClaimTemplateName": template_name} if claim_name is None else {"resourceClaimName": claim_name}
    return pod(name, resourceClaims=[{"name": "gpu", **source}], **kwargs)


def sim_with(*objs, **kwargs) -> Simulation:
    sim = Simulation(**kwargs)
    sim.create(objs)
    sim.run()
    return sim


def claim_of(sim: Simulation, pod_name: str, pod_claim: str = "gpu"):
    p = sim.pod(pod_name)
    (status,) = [s for s in p.status.resource_claim_statuses if s.name == pod_claim]
    return sim.get("ResourceClaim", f"{p.metadata.namespace}/{status.resource_claim_name}")


def devices(c) -> list[tuple[str, str, str, str]]:
    return [(r.request, r.driver, r.pool, r.device) for r in c.status.allocation.devices.results]


def test_a_claim_from_a_template_is_generated_allocated_reserved_and_the_pod_bound():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1"), template(), gpu_pod("trainer"))
    p = sim.pod("trainer")
    assert p.spec.node_name == "n1"
    c = claim_of(sim, "trainer")
    assert c.metadata.name.startswith("trainer-gpu-") and len(c.metadata.name) == len("trainer-gpu-") + 5
    assert c.metadata.annotations == {POD_CLAIM_NAME_ANNOTATION: "gpu"}
    assert c.metadata.labels == {"from": "template"}
    (owner,) = c.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Pod", "trainer", p.metadata.uid, True)
    assert FINALIZER in c.metadata.finalizers
    assert devices(c) == [("gpu", DRIVER, "n1", "gpu-0")]
    manifest = to_manifest(c)["status"]
    assert manifest["allocation"]["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}
    assert manifest["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": p.metadata.uid}]


def test_two_pods_never_get_the_same_device_and_the_third_waits_with_upstreams_reason():
    sim = sim_with(node("n1"), node("cpu-only"), device_class(), gpu_slice("n1"), template(),
                   gpu_pod("a"), gpu_pod("b"), gpu_pod("c"))
    placed = {name: sim.pod(name).spec.node_name for name in "abc"}
    bound = [n for n, where in placed.items() if where]
    assert len(bound) == 2 and all(placed[n] == "n1" for n in bound)
    assert sorted(devices(claim_of(sim, n))[0][3] for n in bound) == ["gpu-0", "gpu-1"]
    (waiting,) = [n for n, where in placed.items() if not where]
    assert condition(sim.pod(waiting)).message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")


def test_a_pod_whose_claim_is_gone_gives_its_device_to_the_next_one():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=1), template(), gpu_pod("first"))
    generated = claim_of(sim, "first").metadata.name
    sim.create([gpu_pod("second")])
    sim.run()
    assert not sim.pod("second").spec.node_name
    sim.cluster.delete("Pod", "first", "default")
    sim.run()
    assert sim.pod("second").spec.node_name == "n1"
    assert devices(claim_of(sim, "second")) == [("gpu", DRIVER, "n1", "gpu-0")]
    with pytest.raises(NotFound):
        sim.get("ResourceClaim", f"default/{generated}")  # deallocated, finalizer removed, deleted


def test_a_finished_pod_is_dropped_from_reserved_for_and_its_claim_deallocated():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=1), claim("shared"),
                   gpu_pod("job", claim_name="shared"))
    assert sim.get("ResourceClaim", "default/shared").status.reserved_for
    done = sim.pod("job")
    sim.cluster.update_status(attrs.evolve(done, status=attrs.evolve(done.status, phase="Succeeded")))
    sim.run()
    c = sim.get("ResourceClaim", "default/shared")
    assert c.status.reserved_for == () and c.status.allocation is None
    assert FINALIZER not in c.metadata.finalizers


def test_the_claim_controller_leaves_the_finalizer_the_scheduler_wrote_before_the_allocation():
    # between the scheduler's two writes (finalizer, then allocation) the claim has the finalizer and
    # nothing else; as upstream's controller, it is no reason to remove it (that undid bindings)
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=1), claim("mine"))
    current = sim.get("ResourceClaim", "default/mine")
    sim.cluster.update(attrs.evolve(current, metadata=attrs.evolve(current.metadata, finalizers=(FINALIZER,))))
    sim.run()
    assert FINALIZER in sim.get("ResourceClaim", "default/mine").metadata.finalizers
    sim.cluster.delete("ResourceClaim", "mine", "default")  # being deleted, unused: now it goes
    sim.run()
    with pytest.raises(NotFound):
        sim.get("ResourceClaim", "default/mine")


def test_pods_sharing_a_claim_share_its_device_and_node():
    sim = sim_with(node("n1"), node("n2"), device_class(), gpu_slice("n1", count=1), gpu_slice("n2", count=1),
                   claim("shared"), gpu_pod("reader", claim_name="shared"), gpu_pod("writer", claim_name="shared"))
    c = sim.get("ResourceClaim", "default/shared")
    assert {sim.pod("reader").spec.node_name, sim.pod("writer").spec.node_name} == {devices(c)[0][2]}
    assert sorted(ref.name for ref in c.status.reserved_for) == ["reader", "writer"]


def test_a_missing_device_class_keeps_the_pod_pending_with_the_reason():
    sim = sim_with(node("n1"), gpu_slice("n1"), template(), gpu_pod("p"))
    assert not sim.pod("p").spec.node_name
    assert condition(sim.pod("p")).message == (
        "0/1 nodes are available: request gpu: device class gpu.example.com does not exist. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    sim.create([device_class()])
    sim.run()
    assert sim.pod("p").spec.node_name == "n1"


def test_a_missing_template_is_reported_and_the_pod_scheduled_once_it_exists():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1"), gpu_pod("p", template_name="later"))
    assert not sim.pod("p").spec.node_name
    (event,) = sim.events("FailedResourceClaimCreation")
    assert event.message == ('PodResourceClaim gpu: resource claim template "later": '
                             'resourceclaimtemplate.resource.k8s.io "later" not found')
    sim.create([template("later")])
    sim.run()
    assert sim.pod("p").spec.node_name == "n1"


def test_a_pool_with_a_duplicate_device_is_not_used_and_the_rest_of_the_run_goes_on():
    broken = [from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                             "metadata": {"name": f"n1-part-{i}"},
                             "spec": {"driver": DRIVER, "nodeName": "n1",
                                      "pool": {"name": "n1", "resourceSliceCount": 2},
                                      "devices": [{"name": "gpu-0"}]}}) for i in range(2)]
    sim = sim_with(node("n1"), node("n2"), device_class(), *broken, gpu_slice("n2", count=1), template(),
                   gpu_pod("first"), gpu_pod("second"), pod("plain", cpu="1"))
    placed = {name: sim.pod(name).spec.node_name for name in ("first", "second")}
    assert sorted(placed.values()) == ["", "n2"]  # the invalid pool on n1 gives nothing
    assert sim.pod("plain").spec.node_name
    waiting = next(name for name, where in placed.items() if not where)
    assert "cannot allocate all claims" in condition(sim.pod(waiting)).message


def taint_rule(effect: str = "NoSchedule"):
    return from_manifest({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "DeviceTaintRule",
                          "metadata": {"name": "maintenance"},
                          "spec": {"deviceSelector": {"driver": DRIVER, "pool": "n1"},
                                   "taint": {"key": "maintenance", "value": "true", "effect": effect}}})


def test_devices_tainted_by_a_rule_are_only_given_to_claims_that_tolerate_them():
    sim = sim_with(node("n1"), node("n2"), device_class(), gpu_slice("n1"), gpu_slice("n2", count=1),
                   taint_rule(), template(), gpu_pod("plain"))
    assert sim.pod("plain").spec.node_name == "n2"
    tolerant = template("tolerant", tolerations=[{"key": "maintenance", "operator": "Exists",
                                                  "effect": "NoSchedule"}])
    sim.create([tolerant, gpu_pod("brave", template_name="tolerant")])
    sim.run()
    assert sim.pod("brave").spec.node_name == "n1"
    (result,) = claim_of(sim, "brave").status.allocation.devices.results
    assert [(t.key, t.operator, t.effect) for t in result.tolerations] == [("maintenance", "Exists", "NoSchedule")]


def test_a_cel_runtime_error_is_a_scheduler_error_not_a_silent_mismatch():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1"),
                   template(selectors=[f"device.attributes['{DRIVER}'].nosuch == 'x'"]), gpu_pod("p"))
    c = condition(sim.pod("p"))
    assert c.reason == "SchedulerError"
    assert "CEL runtime error: no such key: nosuch" in c.message
    assert f"on device {DRIVER}/n1/gpu-0" in c.message


def test_selectors_pick_the_device_and_node():
    sim = sim_with(node("n1"), node("n2"), device_class(), gpu_slice("n1", model="T4"),
                   gpu_slice("n2", model="H100"),
                   template(selectors=[f"device.attributes['{DRIVER}'].model == 'H100'"]), gpu_pod("p"))
    assert sim.pod("p").spec.node_name == "n2"
    assert devices(claim_of(sim, "p")) == [("gpu", DRIVER, "n2", "gpu-0")]


def test_an_allocated_claim_restricts_the_pod_to_its_node_and_an_idle_one_is_deallocated():
    # "parked" was allocated on n1 for a pod that is gone; the new pod may only run on n2
    sim = sim_with(node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"}), device_class(),
                   gpu_slice("n1", count=1), gpu_slice("n2", count=1), claim("parked"),
                   gpu_pod("holder", claim_name="parked", node_selector={"zone": "a"}))
    assert devices(sim.get("ResourceClaim", "default/parked"))[0][2] == "n1"
    sim.cluster.delete("Pod", "holder", "default")
    sim.create([gpu_pod("mover", claim_name="parked", node_selector={"zone": "b"})])
    sim.run()
    # PostFilter deallocated the unused claim, and the retry allocated it on n2
    assert sim.pod("mover").spec.node_name == "n2"
    assert devices(sim.get("ResourceClaim", "default/parked"))[0][2] == "n2"


def test_first_available_prefers_the_node_with_the_preferred_subrequest():
    first_available = from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "prefer-h100", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": DRIVER,
             "selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].model == 'H100'"}}]},
            {"name": "small", "deviceClassName": DRIVER},
        ]}]}}}})
    sim = sim_with(node("n1"), node("n2"), device_class(), gpu_slice("n1", model="T4"),
                   gpu_slice("n2", model="H100", count=1), first_available,
                   gpu_pod("p1", template_name="prefer-h100"), gpu_pod("p2", template_name="prefer-h100"))
    results = {name: devices(claim_of(sim, name))[0] for name in ("p1", "p2")}
    assert sorted(r[0] for r in results.values()) == ["gpu/big", "gpu/small"]
    big = next(name for name, r in results.items() if r[0] == "gpu/big")
    assert sim.pod(big).spec.node_name == "n2"


def test_dra_example_driver_basic_template_demo_gets_two_distinct_gpus(dra_example):
    sim = Simulation.from_paths([dra_example / "resourceslice-dump-kind-8gpus.yaml",
                                 dra_example / "basic-resourceclaimtemplate.yaml"])
    node_name = "dra-example-driver-cluster-worker"
    sim.create([node(node_name), device_class()])
    sim.run()
    got = [devices(claim_of(sim, f"basic-resourceclaimtemplate/{p}")) for p in ("pod0", "pod1")]
    assert [g[0][3] for g in got] == ["gpu-0", "gpu-1"]
    assert all(sim.pod(f"basic-resourceclaimtemplate/{p}").spec.node_name == node_name for p in ("pod0", "pod1"))


@pytest.fixture
def dra_example():
    from pathlib import Path

    return Path(__file__).resolve().parents[3] / "data/dra-examples/dra-example-driver"


def nvidia_classes(path):
    """NVIDIA's gpu and mig DeviceClasses, their Helm templates rendered for resource.k8s.io/v1."""
    classes = []
    for name in ("deviceclass-gpu.helm-template.yaml", "deviceclass-mig.helm-template.yaml"):
        text = (path / name).read_text().replace(
            '{{ include "dra-driver-nvidia-gpu.resourceApiVersion" . }}', "resource.k8s.io/v1").replace(
            "{{ $resourceApiVersion }}", "resource.k8s.io/v1")
        lines = [line for line in text.splitlines() if "{{" not in line and "extendedResourceName" not in line]
        classes += [from_manifest(doc) for doc in yaml.safe_load_all("\n".join(lines)) if doc]
    return classes


def test_nvidia_gpu_and_mig_classes_pick_their_device_types(nvidia_example):
    entries = yaml.safe_load((nvidia_example / "resourceslice-device-entries.doc-example.yaml").read_text())
    full_gpu, mig, vfio = entries

    def nvidia_slice(name, pool, devices):
        return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                              "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-node",
                                       "pool": {"name": pool, "resourceSliceCount": 1}, "devices": devices}})

    sim = Simulation.from_paths([nvidia_example / "gpu-test1.yaml"])
    mig_claim = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                               "metadata": {"name": "mig", "namespace": "gpu-test1"},
                               "spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                                   "deviceClassName": "mig.nvidia.com"}}]}}})
    sim.create([node("gpu-node"), *nvidia_classes(nvidia_example),
                nvidia_slice("gpu-node-gpus", "gpu-node", [full_gpu, mig]),
                nvidia_slice("gpu-node-vfio", "gpu-node-vfio", [vfio]), mig_claim,
                pod("mig-user", namespace="gpu-test1", resourceClaims=[{"name": "mig", "resourceClaimName": "mig"}])])
    sim.run()
    placed = {p: sim.pod(f"gpu-test1/{p}").spec.node_name for p in ("pod1", "pod2")}
    (winner,) = [p for p, where in placed.items() if where]
    assert devices(claim_of(sim, f"gpu-test1/{winner}")) == [("gpu", "gpu.nvidia.com", "gpu-node", "gpu-0")]
    (loser,) = [p for p, where in placed.items() if not where]
    assert "cannot allocate all claims" in condition(sim.pod(f"gpu-test1/{loser}")).message
    assert devices(sim.get("ResourceClaim", "gpu-test1/mig")) == [
        ("mig", "gpu.nvidia.com", "gpu-node", "gpu-0-mig-1g.5gb-0")]
    assert sim.pod("gpu-test1/mig-user").spec.node_name == "gpu-node"


@pytest.fixture
def nvidia_example(dra_example):
    return dra_example.parent / "nvidia-dra-driver-gpu"


def test_preemption_frees_a_device_for_a_higher_priority_claim():
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=1), template(),
                   gpu_pod("batch", priority=1, cpu="100m"))
    held = claim_of(sim, "batch")
    assert devices(held) == [("gpu", DRIVER, "n1", "gpu-0")]
    sim.create([gpu_pod("urgent", priority=100, cpu="100m")])
    sim.run()
    assert sim.pod("urgent").spec.node_name == "n1"
    assert devices(claim_of(sim, "urgent")) == [("gpu", DRIVER, "n1", "gpu-0")]
    with pytest.raises(NotFound):
        sim.pod("batch")  # the victim was deleted, its claim deallocated and removed
    (preempted,) = sim.events("Preempted")
    assert preempted.message == f"Preempted by pod {sim.pod('urgent').metadata.uid} on node n1"


def test_preemption_does_not_evict_pods_whose_devices_would_not_help():
    # the victim's claim is shared with a pod of higher priority: removing the victim frees nothing
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=1), claim("team"),
                   gpu_pod("low", claim_name="team", priority=1), gpu_pod("high", claim_name="team", priority=200))
    sim.create([gpu_pod("urgent", priority=100)])
    sim.run()
    assert not sim.pod("urgent").spec.node_name
    assert sim.pod("low").spec.node_name == "n1" and not sim.events("Preempted")


# --- what upstream's allocator says when a claim cannot be served ------------------------------


def test_a_first_available_alternative_with_a_missing_class_is_passed_over():
    alternatives = from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "first-available", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "sub-0", "deviceClassName": "no-such-class"},
            {"name": "sub-1", "deviceClassName": DRIVER}]}]}}}})
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1"), alternatives, gpu_pod("p", "first-available"))
    assert sim.pod("p").spec.node_name == "n1"
    assert devices(claim_of(sim, "p")) == [("gpu/sub-1", DRIVER, "n1", "gpu-0")]


def test_a_claim_past_32_devices_loads_and_its_pod_stays_pending_with_the_allocators_reason():
    big = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": "big", "namespace": "default"},
                         "spec": {"devices": {"requests": [
                             {"name": f"r{i}", "exactly": {"deviceClassName": DRIVER, "count": 20}} for i in range(2)]}}})
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=40), big, gpu_pod("p", claim_name="big"))
    p = sim.pod("p")
    assert not p.spec.node_name
    assert "claim default/big: number of requested devices 40 exceeds the claim limit of 32" in condition(p).message


def test_a_first_available_count_past_32_is_passed_over_for_the_next_subrequest():
    alternatives = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                  "metadata": {"name": "alternatives", "namespace": "default"},
                                  "spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                                      {"name": "all-of-them", "deviceClassName": DRIVER, "count": 64},
                                      {"name": "one", "deviceClassName": DRIVER}]}]}}})
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=64), alternatives,
                   gpu_pod("p", claim_name="alternatives"))
    assert sim.pod("p").spec.node_name == "n1"
    assert devices(sim.get("ResourceClaim", "default/alternatives")) == [("gpu/one", DRIVER, "n1", "gpu-0")]


def test_a_node_whose_pool_is_invalid_says_so():
    # a confused driver publishes the same devices in two slices of one pool
    twice = [attrs.evolve(gpu_slice("n1"), metadata=attrs.evolve(gpu_slice("n1").metadata, name=f"n1-gpus-{i}"))
             for i in range(2)]
    twice = [attrs.evolve(s, spec=attrs.evolve(s.spec, pool=attrs.evolve(s.spec.pool, resource_slice_count=2)))
             for s in twice]
    sim = sim_with(node("n1"), device_class(), *twice, template(), gpu_pod("p"))
    assert condition(sim.pod("p")).message.startswith(
        "0/1 nodes are available: 1 invalid resource pools were encountered.")


def _gpu_class_for(resource: str = "example.com/gpu"):
    return attrs.evolve(device_class(), spec=attrs.evolve(device_class().spec, extended_resource_name=resource))


def test_an_extended_resource_is_served_by_devices_and_the_pod_gets_its_claim():
    sim = sim_with(node("n1"), _gpu_class_for(), gpu_slice("n1", count=3),
                   pod("p", extra_resources={"example.com/gpu": "2"}))
    p = sim.pod("p")
    assert p.spec.node_name == "n1"
    status = p.status.extended_resource_claim_status
    assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
        (p.spec.containers[0].name, "example.com/gpu", "container-0-request-0")]
    c = sim.get("ResourceClaim", f"default/{status.resource_claim_name}")
    assert c.metadata.name.startswith("p-extended-resources-")
    assert c.metadata.annotations == {"resource.kubernetes.io/extended-resource-claim": "true"}
    (owner,) = c.metadata.owner_references
    assert (owner.kind, owner.name, owner.controller) == ("Pod", "p", True)
    assert devices(c) == [("container-0-request-0", DRIVER, "n1", "gpu-0"), ("container-0-request-0", DRIVER, "n1", "gpu-1")]
    assert [ref.name for ref in c.status.reserved_for] == ["p"]


def test_the_implicit_device_class_resource_name_works_too_and_devices_are_not_shared():
    wants = [pod(f"p{i}", extra_resources={f"deviceclass.resource.kubernetes.io/{DRIVER}": "1"}) for i in range(3)]
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1", count=2), *wants)
    placed = sorted(sim.pod(f"p{i}").spec.node_name for i in range(3))
    assert placed == ["", "n1", "n1"]
    claims = [c for c in sim.cluster.list("ResourceClaim").items if c.status.allocation is not None]
    assert sorted(d[3] for c in claims for d in devices(c)) == ["gpu-0", "gpu-1"]


def test_a_node_that_advertises_the_resource_serves_it_without_devices():
    classic = node("n2", extra_resources={"example.com/gpu": "4"})
    sim = sim_with(classic, _gpu_class_for(), pod("p", extra_resources={"example.com/gpu": "2"}))
    p = sim.pod("p")
    assert p.spec.node_name == "n2" and p.status.extended_resource_claim_status is None
    assert sim.cluster.list("ResourceClaim").items == []


def test_a_mixed_cluster_fills_the_classic_node_and_the_device_node():
    classic = node("n2", extra_resources={"example.com/gpu": "2"})
    wants = [pod(f"p{i}", extra_resources={"example.com/gpu": "2"}) for i in range(3)]
    sim = sim_with(node("n1"), classic, _gpu_class_for(), gpu_slice("n1", count=2), *wants)
    placed = {sim.pod(f"p{i}").spec.node_name for i in range(3)}
    assert placed == {"n1", "n2", ""}
    on_devices = [sim.pod(f"p{i}") for i in range(3) if sim.pod(f"p{i}").spec.node_name == "n1"]
    assert on_devices[0].status.extended_resource_claim_status is not None
    pending = next(sim.pod(f"p{i}") for i in range(3) if not sim.pod(f"p{i}").spec.node_name)
    assert condition(pending).message.startswith(
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims.")
    # the pod on the devices goes: the claim controller releases and deletes its claim, the waiting pod gets the GPUs
    sim.cluster.delete("Pod", on_devices[0].metadata.name, "default")
    sim.run()
    assert sim.pod(pending.metadata.name).spec.node_name == "n1"
    (claim_left,) = sim.cluster.list("ResourceClaim").items
    assert claim_left.metadata.name.startswith(f"{pending.metadata.name}-extended-resources-")


def test_a_node_that_advertises_one_of_two_resources_gets_a_claim_for_the_other_only():
    def classed(name: str, model: str, resource: str):
        selects = device_class(name, f"device.attributes['{DRIVER}'].model == '{model}'")
        return attrs.evolve(selects, spec=attrs.evolve(selects.spec, extended_resource_name=resource))

    classic_gpus = node("n1", extra_resources={"example.com/gpu": "2"})
    sim = sim_with(classic_gpus, classed("gpus", "A100", "example.com/gpu"), classed("nics", "NIC", "example.com/nic"),
                   gpu_slice("n1", count=2, model="NIC"),
                   pod("p", extra_resources={"example.com/gpu": "1", "example.com/nic": "1"}))
    p = sim.pod("p")
    assert p.spec.node_name == "n1"
    status = p.status.extended_resource_claim_status
    assert [m.resource_name for m in status.request_mappings] == ["example.com/nic"]
    c = sim.get("ResourceClaim", f"default/{status.resource_claim_name}")
    assert [r.exactly.device_class_name for r in c.spec.devices.requests] == ["nics"]
    assert [d[3] for d in devices(c)] == ["gpu-0"]


def test_without_dynamic_resources_in_the_profile_a_device_backed_resource_must_be_advertised():
    # the default profile runs DynamicResources (so the scheduler tracks devices); "no-dra" does not
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "no-dra", "plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}]}
    sim = Simulation(config)
    wants = pod("p", extra_resources={"example.com/gpu": "1"})
    wants = attrs.evolve(wants, spec=attrs.evolve(wants.spec, scheduler_name="no-dra"))
    sim.create([node("n1"), _gpu_class_for(), gpu_slice("n1", count=2), wants])
    sim.run()
    p = sim.pod("p")
    assert not p.spec.node_name
    assert condition(p).message == "0/1 nodes are available: 1 Insufficient example.com/gpu. " \
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


def test_scoring_an_extended_resource_counts_the_devices_of_its_class():
    # upstream's DRA-backed-resource cases of calculateResourceAllocatableRequest, through NodeResourcesFit's score
    from kubesched.testing import node_scores

    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{
        "schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}],
                                                                    "enabled": [{"name": "NodeResourcesFit"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated", "resources": [{"name": "example.com/gpu", "weight": 1}]}}}]}]}
    sim = Simulation(config)
    busy = claim("busy")
    sim.create([node("n1"), node("n2"), _gpu_class_for(), gpu_slice("n1", count=2), gpu_slice("n2", count=4),
                busy, gpu_pod("holder", claim_name="busy", node_selector={"kubernetes.io/hostname": "n1"})])
    sim.run()
    assert devices(sim.get("ResourceClaim", "default/busy"))[0][2] == "n1"
    wants = sim.cluster.create(pod("p", extra_resources={"example.com/gpu": "1"}))
    scores = node_scores(sim, wants)
    # n1: 2 devices, 1 in use + 1 requested = 100; n2: 4 devices, 0 + 1 = 25 (MostAllocated)
    assert scores == {"n1": {"NodeResourcesFit": 100}, "n2": {"NodeResourcesFit": 25}}


def test_a_pod_on_devices_for_its_extended_resource_is_evicted_by_a_noexecute_device_taint():
    sim = sim_with(node("n1"), _gpu_class_for(), gpu_slice("n1", count=1), pod("p", extra_resources={"example.com/gpu": "1"}))
    assert sim.pod("p").spec.node_name == "n1"
    tainted = gpu_slice("n1", count=1)
    (device,) = tainted.spec.devices
    taint = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "x"},
                           "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                                    "devices": [{"name": "gpu-0", "taints": [{"key": "broken", "effect": "NoExecute"}]}]}}
                          ).spec.devices[0].taints
    current = sim.get("ResourceSlice", "n1-gpus")
    sim.cluster.update(attrs.evolve(current, spec=attrs.evolve(current.spec, devices=(attrs.evolve(device, taints=taint),))))
    sim.run()
    with pytest.raises(NotFound):
        sim.pod("p")


def test_balanced_allocation_counts_the_devices_of_an_extended_resource_too():
    from kubesched.testing import node_scores

    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{
        "schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}],
                                                                    "enabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
        "pluginConfig": [{"name": "NodeResourcesBalancedAllocation", "args": {
            "resources": [{"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}}]}]}
    sim = Simulation(config)
    sim.create([node("n1"), node("n2"), _gpu_class_for(), gpu_slice("n1", count=2), gpu_slice("n2", count=4),
                claim("busy"), gpu_pod("holder", claim_name="busy", node_selector={"kubernetes.io/hostname": "n1"})])
    sim.run()
    wants = sim.cluster.create(pod("p", cpu="1", extra_resources={"example.com/gpu": "1"}))
    # cpu 1/4 on both; devices (1 in use + 1)/2 on n1, (0 + 1)/4 on n2: (1 - |0.25 - f|/2) x 100
    assert node_scores(sim, wants) == {"n1": {"NodeResourcesBalancedAllocation": 62},
                                       "n2": {"NodeResourcesBalancedAllocation": 100}}


def test_class_devices_count_only_the_newest_generation_of_a_pool():
    old = gpu_slice("n1", count=4)
    new = attrs.evolve(gpu_slice("n1", count=2), metadata=attrs.evolve(old.metadata, name="n1-gpus-v2"))
    new = attrs.evolve(new, spec=attrs.evolve(new.spec, pool=attrs.evolve(new.spec.pool, generation=2)))
    sim = sim_with(node("n1"), device_class(), old, new)
    dra = sim.scheduler.dra_manager()
    n1 = sim.get("Node", "n1")
    assert sorted(d.device for d in dra.class_devices(DRIVER, n1)) == ["gpu-0", "gpu-1"]
    assert dra.class_devices("no-such-class", n1) == frozenset()


def _layout(spec: dict) -> tuple[list, list]:
    from kubesched.plugins.dynamicresources.extended import extended_resource_requests

    p = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    requests, mappings = extended_resource_requests(p, {"example.com/gpu": "gpus"})
    return ([(r.name, r.exactly.count) for r in requests],
            [(m.container_name, m.request_name) for m in mappings])


def _container(name: str, gpus: int, cpu: str | None = None, **fields) -> dict:
    requests = {"example.com/gpu": str(gpus), **({"cpu": cpu} if cpu else {})}
    return {"name": name, "image": "x", "resources": {"requests": requests}, **fields}


def test_extended_resource_requests_are_named_by_container_and_sorted_request_index():
    # as upstream: the index counts every request of the container, sorted (cpu < example.com/gpu)
    assert _layout({"containers": [_container("main", 2, cpu="1")]}) == (
        [("container-0-request-1", 2)], [("main", "container-0-request-1")])


def test_an_init_container_reuses_the_devices_of_the_containers_after_it():
    # the init container (index 0) needs 2: it reuses main's 1 and asks for 1 more
    assert _layout({"initContainers": [_container("setup", 2)], "containers": [_container("main", 1)]}) == (
        [("container-0-request-0", 1), ("container-1-request-0", 1)],
        [("main", "container-1-request-0"), ("setup", "container-1-request-0"), ("setup", "container-0-request-0")])


def test_init_containers_that_run_one_after_the_other_share_the_largest_request():
    spec = {"initContainers": [_container("a", 1), _container("b", 3)], "containers": [{"name": "main", "image": "x"}]}
    assert _layout(spec) == ([("container-1-request-0", 3)],
                             [("a", "container-1-request-0"), ("b", "container-1-request-0")])


def test_a_sidecar_init_container_keeps_its_own_devices():
    spec = {"initContainers": [_container("proxy", 1, restartPolicy="Always")], "containers": [_container("main", 1)]}
    assert _layout(spec)[0] == [("container-0-request-0", 1), ("container-1-request-0", 1)]


def test_a_limit_without_a_request_asks_for_devices_too():
    # the API server defaults requests from limits; the perf templates give both, users often only limits
    limits_only = {"name": "main", "image": "x", "resources": {"limits": {"example.com/gpu": "2"}}}
    assert _layout({"containers": [limits_only]})[0] == [("container-0-request-0", 2)]


def test_a_selector_over_the_runtime_cel_cost_limit_leaves_the_pod_pending_with_cel_s_error(monkeypatch):
    from tests.core.test_cel import DOUBLING

    # such a selector is refused at load (its estimated worst case); one the estimate let through still stops
    monkeypatch.setattr("kubesched.core.cel.evaluator.MAX_ESTIMATED_COST", 10**30)
    costly = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": "costly", "namespace": "default"},
                            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                                "deviceClassName": DRIVER, "selectors": [{"cel": {"expression": DOUBLING + "  "}}]}}]}}})
    sim = sim_with(node("n1"), device_class(), gpu_slice("n1"), costly, gpu_pod("p", claim_name="costly"))
    p = sim.pod("p")
    assert not p.spec.node_name
    assert "operation cancelled: actual cost limit exceeded" in condition(p).message
