"""The allocator's two alpha features of upstream's experimental variant, each behind its gate:
list-typed attributes in claim constraints (DRAListTypeAttributes, KEP-5491) and device
compatibility groups on shared counter sets (DRADeviceCompatibilityGroups, KEP-5963)."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.convert import ManifestError
from kubesched.core.dra.allocator import AllocatedState, DeviceID
from kubesched.core.features import FeatureGates
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node as make_node
from kubesched.testing import pod

from .helpers import (
    API,
    DRIVER_A,
    allocate,
    allocation,
    claim,
    counter_set,
    counters,
    device,
    on_node,
    request,
    resource_slice,
    result,
)

LISTS = {"list_type_attributes": True}
GROUPS = {"compatibility_groups": True}


def listed(name: str, kind: str, *values) -> dict:
    return device(name, {"topo": {kind: list(values)}})


def two_of(constraint: str, count: int = 2) -> object:
    return claim("claim-0", *(request(f"req-{i}") for i in range(count)),
                 constraints=[{constraint: "driver-a/topo"}])


def chosen(allocations) -> list[str] | None:
    if allocations is None:
        return None
    return [r.device for r in allocations[0].devices.results]


# --- DRAListTypeAttributes -----------------------------------------------------------------------


def test_match_attribute_takes_devices_whose_lists_overlap():
    slices = [resource_slice("s", devices=[listed("d1", "strings", "pci0", "x"), listed("d2", "strings", "pci1"),
                                           listed("d3", "strings", "pci0", "y")])]
    assert chosen(allocate(slices, [two_of("matchAttribute")], **LISTS)) == ["d1", "d3"]


def test_without_the_gate_a_list_attribute_matches_nothing():
    """Upstream's stable allocator knows no list type: the first device is taken, no second one joins it."""
    slices = [resource_slice("s", devices=[listed("d1", "strings", "pci0"), listed("d2", "strings", "pci0")])]
    assert allocate(slices, [two_of("matchAttribute")]) is None
    assert chosen(allocate(slices, [two_of("matchAttribute")], **LISTS)) == ["d1", "d2"]


def test_a_scalar_is_the_set_of_itself():
    slices = [resource_slice("s", devices=[device("d1", {"topo": "pci0"}), listed("d2", "strings", "pci1", "pci0")])]
    assert chosen(allocate(slices, [two_of("matchAttribute")], **LISTS)) == ["d1", "d2"]


def test_elements_compare_by_type():
    slices = [resource_slice("s", devices=[device("d1", {"topo": 1}), listed("d2", "strings", "1")])]
    assert allocate(slices, [two_of("matchAttribute")], **LISTS) is None


def test_match_keeps_the_running_intersection():
    """{a,b} and {b,c} share b; {a,c} then shares nothing with both, though it overlaps each."""
    slices = [resource_slice("s", devices=[listed("d1", "strings", "a", "b"), listed("d2", "strings", "b", "c"),
                                           listed("d3", "strings", "a", "c")])]
    assert allocate(slices, [two_of("matchAttribute", 3)], **LISTS) is None
    assert chosen(allocate(slices, [two_of("matchAttribute", 2)], **LISTS)) == ["d1", "d2"]


def test_distinct_attribute_needs_pairwise_disjoint_sets():
    slices = [resource_slice("s", devices=[listed("d1", "ints", 0, 1), listed("d2", "ints", 1, 2),
                                           listed("d3", "ints", 2, 3)])]
    assert chosen(allocate(slices, [two_of("distinctAttribute")], **LISTS)) == ["d1", "d3"]
    assert allocate(slices, [two_of("distinctAttribute", 3)], **LISTS) is None


def test_a_request_the_constraint_does_not_name_is_free():
    slices = [resource_slice("s", devices=[listed("d1", "strings", "a"), listed("d2", "strings", "b"),
                                           listed("d3", "strings", "a")])]
    c = claim("claim-0", request("req-0"), request("req-1"), request("req-2"),
              constraints=[{"requests": ["req-0", "req-2"], "matchAttribute": "driver-a/topo"}])
    assert chosen(allocate(slices, [c], **LISTS)) == ["d1", "d2", "d3"]


# --- DRADeviceCompatibilityGroups ----------------------------------------------------------------


def member(name: str, *groups: str, memory: str = "1Gi") -> dict:
    consumption = counters("set-1", memory=memory)
    if groups:
        consumption["compatibilityGroups"] = list(groups)
    return device(name, consumesCounters=[consumption])


def gpu(*devices: dict) -> list:
    """One counter set (8Gi) shared by ``devices``, on node-1."""
    return [resource_slice("devices", count=2, devices=list(devices)),
            resource_slice("counters", count=2, shared_counters=[counter_set("set-1", memory="8Gi")])]


def two() -> object:
    return claim("claim-0", request("req-0", count=2))


def test_devices_sharing_a_group_go_together_and_the_result_records_the_groups():
    slices = gpu(member("mps-0", "mps"), member("mig-0", "mig"), member("mig-1", "mig"))
    got = allocate(slices, [two()], **GROUPS)
    assert got == [allocation(on_node(), *(result("req-0", DRIVER_A, "pool-1", name,
                                                  compatibility_groups={"set-1": ("mig",)})
                                           for name in ("mig-0", "mig-1")))]


def test_without_the_gate_devices_naming_groups_are_passed_over():
    slices = gpu(member("mig-0", "mig"), member("plain-0"), member("plain-1"))
    assert chosen(allocate(slices, [two()])) == ["plain-0", "plain-1"]
    assert allocate(slices, [claim("claim-0", request("req-0", count=3))]) is None


def test_a_grouped_and_an_ungrouped_device_never_share_a_counter_set():
    slices = gpu(member("plain-0"), member("mig-0", "mig"), member("plain-1"))
    assert chosen(allocate(slices, [two()], **GROUPS)) == ["plain-0", "plain-1"]
    assert allocate(gpu(member("plain-0"), member("mig-0", "mig")), [two()], **GROUPS) is None


def test_groups_are_not_transitive():
    slices = gpu(member("ab", "a", "b"), member("bc", "b", "c"), member("c", "c"))
    assert chosen(allocate(slices, [two()], **GROUPS)) == ["ab", "bc"]
    assert allocate(slices, [claim("claim-0", request("req-0", count=3))], **GROUPS) is None


def test_devices_on_other_counter_sets_are_not_compared():
    slices = [resource_slice("devices", count=2, devices=[
        device("mig-0", consumesCounters=[{**counters("set-1", memory="1Gi"), "compatibilityGroups": ["mig"]}]),
        device("mps-0", consumesCounters=[{**counters("set-2", memory="1Gi"), "compatibilityGroups": ["mps"]}]),
    ]), resource_slice("counters", count=2, shared_counters=[counter_set("set-1", memory="8Gi"),
                                                             counter_set("set-2", memory="8Gi")])]
    assert chosen(allocate(slices, [two()], **GROUPS)) == ["mig-0", "mps-0"]


def test_allocated_devices_count_with_the_groups_their_allocation_recorded():
    """The slice now says mig, but mig-0 was allocated as mps: a mig device may not join it, an mps one may."""
    slices = gpu(member("mig-0", "mig"), member("mig-1", "mig"), member("mps-1", "mps"))
    state = AllocatedState()
    state.add(allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "mig-0",
                                           compatibility_groups={"set-1": ("mps",)})))
    assert chosen(allocate(slices, [claim()], state=state, **GROUPS)) == ["mps-1"]
    without = AllocatedState()
    without.add(allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "mig-0")))
    assert allocate(slices, [claim()], state=without, **GROUPS) is None, "no record: it named no group"


def test_without_the_gate_a_counter_set_with_grouped_allocations_is_left_alone():
    slices = gpu(member("mig-0", "mig"), member("plain-0"))
    state = AllocatedState()
    mig = allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "mig-0", compatibility_groups={"set-1": ("mig",)}))
    state.add(mig)
    assert allocate(slices, [claim()], state=state) is None
    state.remove(mig)
    assert state.compatibility_groups == {}
    assert chosen(allocate(slices, [claim()], state=state)) == ["plain-0"]


def test_a_device_refused_for_its_groups_gives_back_its_counters():
    slices = gpu(member("mig-0", "mig", memory="4Gi"), member("mps-0", "mps", memory="4Gi"),
                 member("mig-1", "mig", memory="4Gi"))
    assert chosen(allocate(slices, [two()], **GROUPS)) == ["mig-0", "mig-1"]


@pytest.mark.parametrize("groups, problem", [
    ([f"g{i}" for i in range(9)], "compatibilityGroups: Too many: 9: must have at most 8 items"),
    (["MIG"], "compatibilityGroups[0]: Invalid value: 'MIG'"),
    (["mig", "mig"], "compatibilityGroups[1]: Duplicate value: 'mig'"),
])
def test_compatibility_groups_are_validated(groups, problem):
    with pytest.raises(ManifestError) as err:
        from_manifest(_slice_manifest(groups))
    assert problem in str(err.value)


def _slice_manifest(groups: list[str]) -> dict:
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": DRIVER_A, "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "nodeName": "n", "devices": [{"name": "d", "consumesCounters": [
                         {"counterSet": "set-1", "counters": {"c": {"value": "1"}}, "compatibilityGroups": groups}]}]}}


# --- end to end, on the embedded cluster ---------------------------------------------------------


def _cluster(kind_attribute: dict, devices_: list[dict], counter_sets: list[dict] = ()) -> list:
    objects = [make_node("n", cpu="4")]
    objects.append(from_manifest({"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"},
                                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER_A}"'}}]}}))
    count = 2 if counter_sets else 1
    objects.append(from_manifest({"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "devices"},
                                  "spec": {"driver": DRIVER_A, "nodeName": "n", "devices": devices_,
                                           "pool": {"name": "p", "generation": 1, "resourceSliceCount": count}}}))
    if counter_sets:
        objects.append(from_manifest({"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": "counters"},
                                      "spec": {"driver": DRIVER_A, "nodeName": "n", "sharedCounters": counter_sets,
                                               "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2}}}))
    objects.append(from_manifest({"apiVersion": API, "kind": "ResourceClaim",
                                  "metadata": {"name": "two", "namespace": "default"},
                                  "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                                      "deviceClassName": "gpu", "count": 2}}], **kind_attribute}}}))
    objects.append(pod("p", claims=["two"]))
    return objects


def _placed(gates: dict[str, bool], objects: list) -> tuple[bool, list[str]]:
    features = FeatureGates("1.37", gates)
    sim = Simulation(features=features)
    sim.create(objects)
    sim.run()
    return bool(sim.pod("p").spec.node_name), features.notes


@pytest.mark.parametrize("on", [True, False])
def test_list_attributes_end_to_end(on):
    """Off, the API server drops the list-typed attribute (noted) and the constraint cannot be met."""
    objects = _cluster({"constraints": [{"matchAttribute": "driver-a/numa"}]},
                       [{"name": f"d{i}", "attributes": {"numa": {"ints": [i, 7]}}} for i in range(2)])
    placed, notes = _placed({"DRAListTypeAttributes": on}, objects)
    assert placed == on
    assert any("list-typed values" in note for note in notes) == (not on)


@pytest.mark.parametrize("on", [True, False])
def test_compatibility_groups_end_to_end(on):
    """A mig and an mps partition of one GPU: on, never together; off, the API server drops the groups."""
    devices_ = [{"name": name, "consumesCounters": [{"counterSet": "gpu-0", "counters": {"sm": {"value": "1"}},
                                                     "compatibilityGroups": [group]}]}
                for name, group in (("mig", "mig"), ("mps", "mps"))]
    objects = _cluster({}, devices_, [{"name": "gpu-0", "counters": {"sm": {"value": "2"}}}])
    placed, notes = _placed({"DRADeviceCompatibilityGroups": on}, objects)
    assert placed == (not on)
    assert any("compatibilityGroups dropped" in note for note in notes) == (not on)


def test_the_allocation_in_the_claim_status_reads_back():
    """The snapshot the scheduler writes is a field of the claim, not an unknown one."""
    devices_ = [{"name": f"mig-{i}", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"sm": {"value": "1"}},
                                                           "compatibilityGroups": ["mig"]}]} for i in range(2)]
    sim = Simulation(features=FeatureGates("1.37", {"DRADeviceCompatibilityGroups": True}))
    sim.create(_cluster({}, devices_, [{"name": "gpu-0", "counters": {"sm": {"value": "2"}}}]))
    sim.run()
    written = sim.cluster.get("ResourceClaim", "two", "default")
    assert [r.compatibility_groups for r in written.status.allocation.devices.results] == [{"gpu-0": ("mig",)}] * 2
    from kubesched.core.api import to_manifest
    again = from_manifest(to_manifest(written))
    assert again.status.allocation == written.status.allocation
    assert DeviceID(DRIVER_A, "p", "mig-0") in AllocatedState.from_claims([again]).compatibility_groups
