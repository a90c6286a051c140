"""ResourceClaims shared by a PodGroup (KEP-5729), end to end through a simulation: the
claim the ResourceClaim controller makes for the group, allocated with the first member
and reserved for the PodGroup, shared by every member, released when the group fails or
ends, and the members evicted together when its device is tainted."""

from __future__ import annotations

from kubesched.core.api import from_manifest
from kubesched.core.api.resource_v1 import FINALIZER, POD_CLAIM_NAME_ANNOTATION
from kubesched.core.framework.hookspecs import hookimpl
from kubesched.core.framework.registry import Registry
from kubesched.core.framework.status import Code, Status
from kubesched.drivers.simulation import Simulation
from kubesched.testing import (
    DRIVER,
    device,
    device_class,
    node,
    pod,
    pod_group,
    resource_claim,
    resource_claim_template,
    resource_slice,
)

#: The claim a PodGroup shares, and a member's identical reference to it.
GROUP_TEMPLATE_CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
GROUP_NAMED_CLAIM = [{"name": "gpu", "resourceClaimName": "shared-gpu"}]
PODGROUP_REF = ("scheduling.k8s.io", "podgroups", "g")


def gpu_nodes(count: int = 2, cpu: str = "4", gpus: int = 2) -> list:
    objects = []
    for i in range(count):
        objects += [node(f"n{i}", cpu=cpu), resource_slice(f"n{i}", [device(f"gpu-{d}") for d in range(gpus)])]
    return objects


def gang(size: int, min_count: int | None = None, claims=GROUP_TEMPLATE_CLAIM, cpu: str = "1", prefix: str = "p"):
    """PodGroup ``g`` sharing ``claims`` and its ``size`` members, each referring to the group's claims."""
    group = pod_group("g", min_count if min_count is not None else size, resourceClaims=claims)
    return [group] + [pod(f"{prefix}{i}", cpu=cpu, pod_group="g", resourceClaims=claims) for i in range(size)]


def run(*objects, config=None, registry=None) -> Simulation:
    sim = Simulation(config=config, registry=registry)
    sim.create(list(objects))
    sim.run()
    return sim


def placements(sim, prefix: str = "p") -> dict[str, str]:
    return {p.metadata.name: p.spec.node_name for p in sim.pods() if p.metadata.name.startswith(prefix)}


def one_node(sim, prefix: str = "p") -> str:
    """The node every member is on (they share a node-local device)."""
    nodes = set(placements(sim, prefix).values())
    assert len(nodes) == 1 and "" not in nodes, placements(sim, prefix)
    return nodes.pop()


def claims(sim) -> dict:
    return {c.metadata.name: c for c in sim.cluster.list("ResourceClaim").items}


def reserved(claim) -> list[tuple[str, str, str]]:
    return [(r.api_group, r.resource, r.name) for r in claim.status.reserved_for]


def devices(claim) -> list[tuple[str, str]]:
    allocation = claim.status.allocation
    return [(r.pool, r.device) for r in allocation.devices.results] if allocation is not None else []


def test_a_group_claim_is_made_once_allocated_once_reserved_for_the_podgroup_and_shared_by_all():
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(), *gang(3))
    where = one_node(sim)  # the device is node-local: one node
    (name, claim), = claims(sim).items()
    group = sim.cluster.get("PodGroup", "g", "default")
    owner, = claim.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller) == (
        "scheduling.k8s.io/v1beta1", "PodGroup", "g", group.metadata.uid, True)
    assert name.startswith("g-gpu-") and claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
    assert [(s.name, s.resource_claim_name) for s in group.status.resource_claim_statuses] == [("gpu", name)]
    for member in sim.pods():
        assert [(s.name, s.resource_claim_name) for s in member.status.resource_claim_statuses] == [("gpu", name)]
    assert reserved(claim) == [PODGROUP_REF]
    assert claim.status.reserved_for[0].uid == group.metadata.uid
    assert devices(claim) == [(where, "gpu-0")] and FINALIZER in claim.metadata.finalizers


def test_a_gang_of_300_pods_shares_one_claim_with_one_reservation():
    size = 300
    sim = run(device_class(), resource_claim_template("gpu"), node("n0", cpu="64", pods=size + 10),
              resource_slice("n0", [device("gpu-0")]), *gang(size, cpu="100m"))
    assert sum(1 for p in sim.pods() if p.spec.node_name == "n0") == size
    (claim,) = claims(sim).values()
    assert reserved(claim) == [PODGROUP_REF]  # 300 pods, past the 256 pods reservedFor could list


def test_a_group_that_fails_releases_its_claim_and_takes_it_where_it_fits_later():
    """3 members of 1 CPU, the claim's node-local device pins them to one node of 2 CPUs:
    the first member's allocation is undone with the group, no device stays taken, and a
    pod of its own gets that device meanwhile."""
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(count=2, cpu="2", gpus=1), *gang(3))
    assert not any(placements(sim).values())
    (group_claim,) = claims(sim).values()
    assert group_claim.status.allocation is None and not group_claim.status.reserved_for
    sim.create([resource_claim("solo-gpu"), pod("solo", claims=["solo-gpu"])])
    sim.run()
    assert sim.pod("solo").spec.node_name  # a device was free for it
    sim.create([node("big", cpu="8"), resource_slice("big", [device("gpu-0")])])
    sim.run()
    assert set(placements(sim).values()) == {"big"}
    assert devices(claims(sim)[group_claim.metadata.name]) == [("big", "gpu-0")]


def test_a_named_claim_in_the_group_is_reserved_for_the_podgroup_not_for_each_pod():
    sim = run(device_class(), resource_claim("shared-gpu"), *gpu_nodes(), *gang(3, claims=GROUP_NAMED_CLAIM))
    one_node(sim)
    assert reserved(claims(sim)["shared-gpu"]) == [PODGROUP_REF]
    assert sim.pod("p0").status.resource_claim_statuses == ()  # only template claims are recorded


def test_a_pod_claim_that_differs_from_the_groups_is_the_pods_own():
    """Same name, another template: a claim per pod, reserved for that pod."""
    own = [{"name": "gpu", "resourceClaimTemplateName": "other"}]
    objects = [device_class(), resource_claim_template("gpu"), resource_claim_template("other"), *gpu_nodes(),
               pod_group("g", 2, resourceClaims=GROUP_TEMPLATE_CLAIM)]
    objects += [pod(f"p{i}", cpu="1", pod_group="g", resourceClaims=own) for i in range(2)]
    sim = run(*objects)
    assert all(placements(sim).values())
    per_pod = {c.metadata.owner_references[0].kind: c for c in claims(sim).values() if c.status.reserved_for}
    assert list(per_pod) == ["Pod"] and len([c for c in claims(sim).values() if c.status.reserved_for]) == 2
    assert all(reserved(c)[0][1] == "pods" for c in claims(sim).values() if c.status.reserved_for)


def test_members_wait_for_the_template_and_go_once_it_exists():
    sim = run(device_class(), *gpu_nodes(), *gang(2))
    assert not any(placements(sim).values())
    events = [e for e in sim.cluster.list("Event").items if e.reason == "FailedResourceClaimCreation"]
    assert events and events[0].message == ('PodGroupResourceClaim gpu: resource claim template "gpu": '
                                         'resourceclaimtemplate.resource.k8s.io "gpu" not found')
    gated = sim.scheduler.queued(sim.pod("p0"))
    assert gated.gating_plugin == "DynamicResources"
    assert gated.gating_status.message().endswith("ResourceClaim not created yet")
    sim.create([resource_claim_template("gpu")])
    sim.run()
    one_node(sim)


def test_the_reservation_stays_while_a_member_runs_and_goes_with_the_last():
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(), *gang(2))
    name = next(iter(claims(sim)))
    sim.cluster.delete("Pod", "p0", "default")
    sim.run()
    assert reserved(claims(sim)[name]) == [PODGROUP_REF]
    sim.cluster.delete("Pod", "p1", "default")
    sim.run()
    claim = claims(sim)[name]  # deallocated, not deleted: the PodGroup still owns it
    assert (claim.status.allocation, claim.status.reserved_for) == (None, ())
    assert FINALIZER not in claim.metadata.finalizers
    sim.cluster.delete("PodGroup", "g", "default")
    sim.run()
    assert claims(sim) == {}  # gone with its PodGroup


def test_a_restarted_gang_whose_claim_pins_a_full_node_gets_a_fresh_allocation_elsewhere():
    """The gang ran on n0; its pods are replaced while a newcomer takes n0's CPU.  The claim,
    still reserved for the group, pins the new members to n0: the group's PodGroupPostFilter
    deallocates it (no member is scheduled), and the members go to n1 with a new device."""
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(cpu="2"), *gang(2))
    name = next(iter(claims(sim)))
    first = one_node(sim)
    other = ({"n0", "n1"} - {first}).pop()
    assert devices(claims(sim)[name]) == [(first, "gpu-0")]
    for i in range(2):
        sim.cluster.delete("Pod", f"p{i}", "default")
    sim.create([pod("newcomer", cpu="2", node_name=first)] + gang(2, prefix="q")[1:])
    sim.run()
    assert one_node(sim, "q") == other
    claim = claims(sim)[name]
    assert devices(claim) == [(other, "gpu-0")] and reserved(claim) == [PODGROUP_REF]


class FailPreBind:
    """PreBind that fails for the pods named in ``failing`` (after DynamicResources recorded the claim)."""

    name = "FailPreBind"
    args_class = None
    failing: frozenset[str] = frozenset()

    def __init__(self, args, handle):
        pass

    @hookimpl
    def pre_bind(self, state, pod, node_name):
        if pod.metadata.name in self.failing:
            return Status(Code.ERROR, ("the volume driver is down",))
        return None


def failing_bindings(*names: str) -> Simulation:
    """A simulation of a gang of 2 sharing a claim whose members ``names`` fail PreBind."""
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"preBind": {"enabled": [{"name": "FailPreBind"}]}}}]}
    registry = Registry.discover()
    registry.add(type("FailPreBind", (FailPreBind,), {"failing": frozenset(names)}))
    sim = Simulation(config=config, registry=registry)
    sim.create([device_class(), resource_claim_template("gpu"), *gpu_nodes(), *gang(2)])
    sim.run_for(1)  # the first attempt, before the members' backoff ends
    return sim


def test_a_group_whose_bindings_all_fail_gives_its_claim_back():
    sim = failing_bindings("p0", "p1")
    assert not any(placements(sim).values())
    (claim,) = claims(sim).values()
    assert (claim.status.allocation, claim.status.reserved_for) == (None, ())


def test_a_member_whose_binding_fails_leaves_the_claim_to_the_others():
    sim = failing_bindings("p1")
    assert placements(sim)["p0"] and not placements(sim)["p1"]
    (claim,) = claims(sim).values()
    assert reserved(claim) == [PODGROUP_REF] and devices(claim) == [(placements(sim)["p0"], "gpu-0")]


def test_a_tainted_device_of_the_groups_claim_evicts_every_member():
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(), *gang(3))
    where = one_node(sim)
    taint = {"key": "gpu.example.com/unhealthy", "value": "xid-79", "effect": "NoExecute"}
    sim.create([from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "bad-gpu"},
        "spec": {"deviceSelector": {"driver": DRIVER, "pool": where, "device": "gpu-0"}, "taint": taint}})])
    sim.run()
    assert placements(sim) == {}  # all three deleted
    evicted = {e.involved_object.name for e in sim.cluster.list("Event").items if e.reason == "DeviceTaintManagerEviction"}
    assert evicted == {"p0", "p1", "p2"}


def test_a_late_member_joins_the_running_group_on_its_claim():
    sim = run(device_class(), resource_claim_template("gpu"), *gpu_nodes(), *gang(2))
    sim.create([pod("p2", cpu="1", pod_group="g", resourceClaims=GROUP_TEMPLATE_CLAIM)])
    sim.run()
    assert len(placements(sim)) == 3
    one_node(sim)
    (claim,) = claims(sim).values()
    assert reserved(claim) == [PODGROUP_REF]
