"""The structured allocator: the semantics of upstream's allocator test table
(dynamic-resource-allocation structured/internal/allocatortesting), case by case:
pools and node selection, counts and "All", admin access, constraints,
backtracking, prioritized lists, configuration, errors and limits."""

from __future__ import annotations

import pytest

from kubesched.core.api import ManifestError, from_manifest
from kubesched.core.api.core_v1 import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.core.dra.allocator import AllocationError, AllocationTimeout

from .helpers import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    MEMORY_AT_LEAST,
    NODE_2,
    all_request,
    allocate,
    allocation,
    allocator,
    claim,
    classes,
    dev,
    device,
    device_class,
    devices,
    first_available,
    labels_in,
    node,
    on_node,
    request,
    resource_slice,
    result,
    subrequest,
)


def one_device(name="slice-1", pool="pool-1", driver=DRIVER_A, **kwargs):
    return resource_slice(name, pool, driver, [device("device-1")], **kwargs)


def memory_devices(*sizes: tuple[str, str]):
    return [device(name, capacity={"memory": size}) for name, size in sizes]


# --- basics ----------------------------------------------------------------------------------


def test_simple():
    assert allocate([one_device()], [claim()]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]


def test_other_node():
    slices = [one_device("slice-1", "pool-1", DRIVER_B), one_device("slice-2", "pool-2", node_name=NODE_2)]
    assert allocate(slices, [claim()], on=node(NODE_2, "region-2")) == [
        allocation(on_node(NODE_2), result("req-0", DRIVER_A, "pool-2", "device-1"))
    ]


def test_small_and_large_requests_pick_matching_devices():
    slices = [resource_slice("slice-1", devices=memory_devices(("device-1", "1Gi"), ("device-2", "2Gi")))]
    c = claim("claim-0", request("req-0", CLASS_A, 1, MEMORY_AT_LEAST.format("1Gi")),
              request("req-1", CLASS_A, 1, MEMORY_AT_LEAST.format("2Gi")))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1", DRIVER_A, "pool-1", "device-2"),
    )]


def test_backtracking_across_requests():
    # The large device comes first, gets taken by the small request, and must be given back.
    slices = [resource_slice("slice-1", devices=memory_devices(("device-2", "2Gi"), ("device-1", "1Gi")))]
    c = claim("claim-0", request("req-0", CLASS_A, 1, MEMORY_AT_LEAST.format("1Gi")),
              request("req-1", CLASS_A, 1, MEMORY_AT_LEAST.format("2Gi")))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1", DRIVER_A, "pool-1", "device-2"),
    )]


def test_backtracking_across_claims():
    slices = [resource_slice("slice-1", devices=memory_devices(("device-2", "2Gi"), ("device-1", "1Gi")))]
    small = claim("claim-0", request("req-0", CLASS_A, 1, MEMORY_AT_LEAST.format("1Gi")))
    large = claim("claim-1", request("req-1", CLASS_A, 1, MEMORY_AT_LEAST.format("2Gi")))
    assert allocate(slices, [small, large]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1")),
        allocation(on_node(), result("req-1", DRIVER_A, "pool-1", "device-2")),
    ]


def test_devices_split_across_slices_and_pools():
    slices = [one_device("slice-1", "pool-1"), one_device("slice-2", "pool-2")]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2))]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-0", DRIVER_A, "pool-2", "device-1"),
    )]


def test_several_drivers():
    slices = [resource_slice("slice-a", devices=devices(2, 1)), one_device("slice-b", driver=DRIVER_B)]
    claims = [claim("claim-0"), claim("claim-1", request("req-0", CLASS_B))]
    assert allocate(slices, claims) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1")),
        allocation(on_node(), result("req-0", DRIVER_B, "pool-1", "device-1")),
    ]


@pytest.mark.parametrize("slices, claims, allocated", [
    pytest.param([], [claim()], (), id="no-slices"),
    pytest.param([one_device()], [claim("claim-0"), claim("claim-1")], (), id="not-enough-devices"),
    pytest.param([one_device()], [claim()], [dev(DRIVER_A, "pool-1", "device-1")], id="already-allocated"),
    pytest.param([one_device(node_name=NODE_2)], [claim()], (), id="device-on-other-node"),
])
def test_nothing_to_allocate_on_this_node(slices, claims, allocated):
    assert allocate(slices, claims, allocated=allocated) is None


def test_no_claims_means_no_results():
    assert allocate([one_device()], []) == []


def test_devices_in_use_by_claims_being_allocated_together():
    slices = [resource_slice("slice-1", devices=devices(3))]
    claims = [claim("claim-0", request("req-0", CLASS_A, 2)), claim("claim-1")]
    assert allocate(slices, claims) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-0"),
                   result("req-0", DRIVER_A, "pool-1", "device-1")),
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2")),
    ]


# --- pools -----------------------------------------------------------------------------------


def test_obsolete_generation_is_ignored():
    slices = [
        resource_slice("slice-old", devices=[device("device-1")], count=2, generation=1),
        resource_slice("slice-new", devices=[device("device-2")], count=2, generation=2),
    ]
    # Only the newer generation counts, and it is incomplete.
    assert allocate(slices, [claim()]) is None


def test_newer_generation_replaces_older_slices():
    slices = [
        resource_slice("slice-old", devices=[device("device-1")], generation=1),
        resource_slice("slice-new", devices=[device("device-2")], generation=2),
    ]
    assert allocate(slices, [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"))]


def test_no_allocation_from_incomplete_pools():
    assert allocate([resource_slice("slice-1", devices=[device("device-1")], count=2)], [claim()]) is None


def test_duplicate_device_names_make_the_pool_invalid():
    # Two slices with the same devices, as a confused driver might publish them.
    slices = [one_device("slice-1", count=2), one_device("slice-1-2", count=2)]
    assert allocate(slices, [claim()]) is None


def test_a_node_with_an_invalid_pool_says_so():
    slices = [one_device("slice-1", count=2), one_device("slice-1-2", count=2)]
    assert allocator(slices).has_invalid_pools(node())
    assert not allocator([one_device()]).has_invalid_pools(node())


def test_invalid_pool_is_fine_when_another_pool_has_devices():
    slices = [one_device("slice-1", count=2), one_device("slice-2", count=2),
              resource_slice("slice-3", "pool-2", devices=[device("device-2")])]
    assert allocate(slices, [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-2", "device-2"))]
    assert allocate(slices, [claim()], allocated=[dev(DRIVER_A, "pool-2", "device-2")]) is None


def test_slices_of_one_pool_may_target_different_nodes():
    slices = [resource_slice("slice-1", devices=[device("device-1")], count=2, node_name=NODE_2),
              resource_slice("slice-2", devices=[device("device-2")], count=2)]
    assert allocate(slices, [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"))]


def test_all_devices_of_a_pool_spread_over_nodes():
    slices = [resource_slice("slice-1", devices=[device("device-1")], count=2),
              resource_slice("slice-2", devices=[device("device-2")], count=2, node_name=NODE_2)]
    assert allocate(slices, [claim("claim-0", all_request())]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]


def test_stale_slice_for_this_node_when_another_node_has_a_newer_generation():
    slices = [resource_slice("slice-1", devices=[device("device-1")], count=2, generation=1),
              resource_slice("slice-2", devices=[device("device-2")], count=2, generation=2, node_name=NODE_2)]
    assert allocate(slices, [claim()]) is None


def test_incomplete_newer_generation_on_this_node():
    slices = [
        resource_slice("slice-1", devices=[device("device-1")], count=2, generation=1, node_name=NODE_2),
        resource_slice("slice-1b", devices=[device("device-2")], count=2, generation=1, node_name=NODE_2),
        resource_slice("slice-2", devices=[device("device-1")], count=2, generation=2),
    ]
    assert allocate(slices, [claim()]) is None


def test_pools_and_slices_are_tried_in_name_order():
    slices = [
        resource_slice("slice-b", "pool-b", devices=[device("device-1")]),
        resource_slice("slice-z", "pool-a", devices=[device("device-2")], count=2),
        resource_slice("slice-y", "pool-a", devices=[device("device-3")], count=2),
    ]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 3))]) == [allocation(
        on_node(),
        result("req-0", DRIVER_A, "pool-a", "device-3"),
        result("req-0", DRIVER_A, "pool-a", "device-2"),
        result("req-0", DRIVER_A, "pool-b", "device-1"),
    )]


# --- network-attached devices and the resulting node selector --------------------------------


def test_network_attached_device():
    slices = [one_device(node_selector=labels_in("region", "region-1"))]
    expected_selector = NodeSelector(node_selector_terms=(NodeSelectorTerm(match_expressions=(
        NodeSelectorRequirement(key="region", operator="In", values=("region-1",)),)),))
    assert allocate(slices, [claim()]) == [allocation(expected_selector, result("req-0", DRIVER_A, "pool-1", "device-1"))]
    assert allocate(slices, [claim()], on=node(NODE_2, "region-2")) is None


def test_many_network_attached_devices_give_the_union_of_their_selectors():
    node_name_selector = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}
    slices = [
        one_device("slice-1", "pool-1", node_selector=labels_in("region", "region-1")),
        one_device("slice-2", "pool-2", all_nodes=True),
        one_device("slice-3", "pool-3", node_selector=labels_in("planet", "earth")),
        one_device("slice-4", "pool-4", node_selector=node_name_selector),
        one_device("slice-5", "pool-5", node_selector=labels_in("region", "region-1")),
    ]
    expected = NodeSelector(node_selector_terms=(NodeSelectorTerm(
        match_expressions=(
            NodeSelectorRequirement(key="region", operator="In", values=("region-1",)),
            NodeSelectorRequirement(key="planet", operator="In", values=("earth",)),
        ),
        match_fields=(NodeSelectorRequirement(key="metadata.name", operator="In", values=("node-1",)),),
    ),))
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 5))]) == [allocation(
        expected, *[result("req-0", DRIVER_A, f"pool-{i}", "device-1") for i in range(1, 6)]
    )]


def test_all_nodes_devices_are_usable_everywhere():
    assert allocate([one_device(all_nodes=True)], [claim()], on=node(NODE_2)) == [
        allocation(None, result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]


def test_local_and_network_attached_devices_give_the_node():
    slices = [one_device("slice-1", "pool-1", node_selector=labels_in("region", "region-1")),
              one_device("slice-2", "pool-2")]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2))]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-0", DRIVER_A, "pool-2", "device-1"),
    )]


def test_per_device_node_selection():
    slices = [resource_slice("slice-1", per_device=True, devices=[
        device("device-1", nodeName=NODE_2),
        device("device-2", nodeSelector=labels_in("region", "region-1")),
        device("device-3", allNodes=True),
        device("device-4", nodeName="node-1"),
    ])]
    region = NodeSelector(node_selector_terms=(NodeSelectorTerm(match_expressions=(
        NodeSelectorRequirement(key="region", operator="In", values=("region-1",)),)),))
    assert allocate(slices, [claim()]) == [allocation(region, result("req-0", DRIVER_A, "pool-1", "device-2"))]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2))]) == [allocation(
        region, result("req-0", DRIVER_A, "pool-1", "device-2"), result("req-0", DRIVER_A, "pool-1", "device-3"),
    )]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 3))]) == [allocation(
        on_node(), *[result("req-0", DRIVER_A, "pool-1", f"device-{i}") for i in (2, 3, 4)]
    )]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2))], on=node(NODE_2, "region-2")) == [
        allocation(on_node(NODE_2), result("req-0", DRIVER_A, "pool-1", "device-1"),
                   result("req-0", DRIVER_A, "pool-1", "device-3"))
    ]


def test_devices_that_bind_to_the_node():
    slices = [resource_slice("slice-1", all_nodes=True, devices=[device("device-1", bindsToNode=True)])]
    assert allocate(slices, [claim()], on=node(NODE_2)) == [
        allocation(on_node(NODE_2), result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]


# --- allocation mode All ---------------------------------------------------------------------


def test_all_devices_single_and_many():
    assert allocate([one_device()], [claim("claim-0", all_request())]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]
    slices = [one_device("slice-1", "pool-1"), one_device("slice-2", "pool-2")]
    assert allocate(slices, [claim("claim-0", all_request())]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-0", DRIVER_A, "pool-2", "device-1"),
    )]


def test_all_devices_of_an_incomplete_pool_is_an_error():
    with pytest.raises(AllocationError) as err:
        allocate([resource_slice("slice-1", devices=[device("device-1")], count=2)], [claim("claim-0", all_request())])
    assert str(err.value) == (
        "claim default/claim-0, request req-0: asks for all devices, "
        "but resource pool driver-a/pool-1 is currently being updated"
    )


def test_all_devices_of_an_invalid_pool_is_an_error():
    slices = [one_device("slice-1", count=2), one_device("slice-2", count=2)]
    with pytest.raises(AllocationError, match="resource pool driver-a/pool-1 is currently invalid"):
        allocate(slices, [claim("claim-0", all_request())])


@pytest.mark.parametrize("all_first", [True, False])
def test_all_devices_plus_another_claim(all_first):
    slices = [resource_slice("slice-a", devices=devices(2, 1)), one_device("slice-b", driver=DRIVER_B)]
    everything = claim("claim-0", all_request())
    other = claim("claim-1", request("req-0", CLASS_B))
    everything_result = allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
                                   result("req-0", DRIVER_A, "pool-1", "device-2"))
    other_result = allocation(on_node(), result("req-0", DRIVER_B, "pool-1", "device-1"))
    if all_first:
        assert allocate(slices, [everything, other]) == [everything_result, other_result]
    else:
        assert allocate(slices, [other, everything]) == [other_result, everything_result]


@pytest.mark.parametrize("all_first", [True, False])
def test_all_devices_competing_with_another_claim(all_first):
    claims = [claim("claim-0", all_request()), claim("claim-1")]
    assert allocate([one_device()], claims if all_first else claims[::-1]) is None


def test_all_devices_when_there_are_none():
    assert allocate([resource_slice("slice-1")], [claim("claim-0", all_request())]) is None
    assert allocate([], [claim("claim-0", all_request())]) is None


def test_all_devices_when_some_are_allocated():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    assert allocate(slices, [claim("claim-0", all_request())], allocated=[dev(DRIVER_A, "pool-1", "device-1")]) is None


def test_all_devices_only_those_the_selectors_match():
    slices = [resource_slice("slice-1", devices=[device("device-1", {"type": "X"}), device("device-2", {"type": "Y"})])]
    c = claim("claim-0", all_request("req-0", CLASS_A, 'device.attributes["driver-a"].type == "Y"'))
    assert allocate(slices, [c]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"))]


# --- admin access ----------------------------------------------------------------------------


def test_admin_access_ignores_other_claims_allocations():
    c = claim("claim-0", request("req-0", CLASS_A, 1, adminAccess=True))
    allocated = [dev(DRIVER_A, "pool-1", "device-1"), dev(DRIVER_A, "pool-1", "device-2")]
    assert allocate([one_device()], [c], allocated=allocated) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", admin=True))
    ]


def test_admin_access_all_devices_and_counts_include_allocated_ones():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    allocated = [dev(DRIVER_A, "pool-1", "device-1")]
    expected = [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", admin=True),
                           result("req-0", DRIVER_A, "pool-1", "device-2", admin=True))]
    assert allocate(slices, [claim("claim-0", all_request(adminAccess=True))], allocated=allocated) == expected
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2, adminAccess=True))],
                    allocated=allocated) == expected


def test_admin_access_cannot_use_a_device_twice_in_one_claim():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    c = claim("claim-0", request("req-0", CLASS_A, 1, adminAccess=True), all_request("req-1", adminAccess=True))
    assert allocate(slices, [c]) is None


def test_separate_admin_claims_share_a_device():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    claims = [claim("claim-0", request(adminAccess=True)), claim("claim-1", request(adminAccess=True))]
    assert allocate(slices, claims) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", admin=True)),
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", admin=True)),
    ]


def test_admin_claim_may_use_a_device_another_claim_is_getting():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    claims = [claim("claim-0"), claim("claim-1", request(adminAccess=True))]
    assert allocate(slices, claims) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1")),
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", admin=True)),
    ]


# --- constraints -----------------------------------------------------------------------------

ATTRS = {"driverVersion": {"version": "1.0.0"}, "numa": 1, "stringAttribute": "value", "boolAttribute": True}


def constraint(attribute: str, *requests: str, distinct: bool = False) -> dict:
    key = "distinctAttribute" if distinct else "matchAttribute"
    return {key: f"driver-a/{attribute}" if "/" not in attribute else attribute, "requests": list(requests)}


def test_match_attribute_of_every_type():
    slices = [resource_slice("slice-1", devices=[device("device-1", ATTRS), device("device-2", ATTRS)])]
    c = claim("claim-0", request("req-0"), request("req-1"),
              constraints=[constraint(a) for a in ("numa", "driverVersion", "stringAttribute", "boolAttribute")])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1", DRIVER_A, "pool-1", "device-2"),
    )]


def test_match_attribute_by_fully_qualified_name():
    slices = [resource_slice("slice-1", devices=[
        device("device-1", {"other.example.com/numa": 1}),
        device("device-2", {"driver-a/numa": 1}),
        device("device-3", {"numa": 1}),
    ])]
    c = claim("claim-0", request("req-0", CLASS_A, 2), constraints=[constraint("numa")])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"), result("req-0", DRIVER_A, "pool-1", "device-3"),
    )]


@pytest.mark.parametrize("first, second", [
    pytest.param(1, 2, id="int"),
    pytest.param("a", "b", id="string"),
    pytest.param(True, False, id="bool"),
    pytest.param({"version": "1.0.0"}, {"version": "2.0.0"}, id="version"),
    pytest.param(1, "1", id="mismatched-types"),
    pytest.param({"version": "1.0.0"}, "1.0.0", id="version-vs-string"),
])
def test_match_attribute_with_different_values(first, second):
    slices = [resource_slice("slice-1", devices=[device("device-1", {"attr": first}),
                                                 device("device-2", {"attr": second})])]
    c = claim("claim-0", request("req-0", CLASS_A, 2), constraints=[constraint("attr")])
    assert allocate(slices, [c]) is None


def test_match_attribute_missing_on_device():
    c = claim("claim-0", constraints=[constraint("NonExistentAttribute")])
    assert allocate([one_device()], [c]) is None


def test_match_attribute_violated_by_all_devices_is_an_error():
    slices = [resource_slice("slice-1", devices=[device("device-1", {"numa": 1}), device("device-2", {"numa": 2})])]
    with pytest.raises(AllocationError) as err:
        allocate(slices, [claim("claim-0", all_request(), constraints=[constraint("numa")])])
    assert str(err.value) == (
        "claim default/claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied"
    )


def test_constraint_limited_to_named_requests():
    slices = [resource_slice("slice-1", devices=[
        device("device-1", {"driverVersion": {"version": "1.0.0"}}),
        device("device-2", {"driverVersion": {"version": "2.0.0"}}),
    ])]
    c = claim("claim-0", request("req-0"), request("req-1"), constraints=[constraint("driverVersion", "req-0")])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1", DRIVER_A, "pool-1", "device-2"),
    )]


def test_constraint_forces_backtracking():
    slices = [resource_slice("slice-1", devices=[
        device("device-1", {"driverVersion": {"version": "1.0.0"}, "stringAttribute": "a"}),
        device("device-2", {"driverVersion": {"version": "2.0.0"}, "stringAttribute": "b"}),
        device("device-3", {"driverVersion": {"version": "3.0.0"}, "stringAttribute": "b"}),
    ])]
    c = claim("claim-0", request("req-0"), request("req-1"),
              constraints=[constraint("driverVersion", "req-0"), constraint("stringAttribute")])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"), result("req-1", DRIVER_A, "pool-1", "device-3"),
    )]


def test_distinct_attribute():
    values = [("1.0.0", 0, True), ("1.0.1", 1, False), ("1.0.2", 2, True), ("1.0.0", 3, True)]
    slices = [resource_slice("slice-1", devices=[
        device(f"device-{i}", {"driverVersion": {"version": v}, "numa": n, "boolAttribute": b})
        for i, (v, n, b) in enumerate(values, 1)
    ])]
    c = claim("claim-0", *[request(f"req-{i}") for i in range(4)], constraints=[
        constraint("boolAttribute", "req-0", "req-1", distinct=True),
        constraint("driverVersion", "req-0", "req-1", "req-2", distinct=True),
        constraint("numa", "req-0", "req-1", "req-2", "req-3", distinct=True),
    ])
    assert allocate(slices, [c]) == [allocation(
        on_node(), *[result(f"req-{i}", DRIVER_A, "pool-1", f"device-{i + 1}") for i in range(4)]
    )]


def test_distinct_attribute_within_one_request_and_missing():
    slices = [resource_slice("slice-1", devices=[device("device-1", {"numa": 0}), device("device-2", {"numa": 0}),
                                                 device("device-3", {"numa": 1}), device("device-4")])]
    c = claim("claim-0", request("req-0", CLASS_A, 2), constraints=[constraint("numa", distinct=True)])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-0", DRIVER_A, "pool-1", "device-3"),
    )]
    c = claim("claim-0", request("req-0", CLASS_A, 3), constraints=[constraint("numa", distinct=True)])
    assert allocate(slices, [c]) is None


# --- prioritized lists (firstAvailable) --------------------------------------------------------


def test_first_available_falls_back_to_the_next_subrequest():
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_B), subrequest("subReq-1", CLASS_A)))
    assert allocate([one_device()], [c]) == [
        allocation(on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"))
    ]


def test_first_available_prefers_the_first_subrequest():
    slices = [one_device(), one_device("slice-b", driver=DRIVER_B)]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_B), subrequest("subReq-1", CLASS_A)))
    assert allocate(slices, [c]) == [
        allocation(on_node(), result("req-0/subReq-0", DRIVER_B, "pool-1", "device-1"))
    ]


def test_first_available_none_possible():
    slices = [one_device(), one_device("slice-b", driver=DRIVER_B)]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_B, 2), subrequest("subReq-1", CLASS_A, 2)))
    assert allocate(slices, [c]) is None


def test_first_available_with_selectors_and_other_requests():
    slices = [resource_slice("slice-1", devices=memory_devices(
        ("device-1", "2Gi"), ("device-2", "2Gi"), ("device-3", "1Gi")))]
    c = claim("claim-0",
              request("req-0", CLASS_A, 1, MEMORY_AT_LEAST.format("1Gi")),
              first_available("req-1", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("4Gi")),
                              subrequest("subReq-1", CLASS_A, 2, MEMORY_AT_LEAST.format("2Gi"))))
    assert allocate(slices, [c]) == [allocation(
        on_node(),
        result("req-0", DRIVER_A, "pool-1", "device-3"),
        result("req-1/subReq-1", DRIVER_A, "pool-1", "device-1"),
        result("req-1/subReq-1", DRIVER_A, "pool-1", "device-2"),
    )]


def test_first_available_backtracks_into_an_earlier_subrequest_choice():
    slices = [resource_slice("slice-1", "pool-1", devices=memory_devices(("device-1", "8Gi"))),
              resource_slice("slice-2", "pool-2", devices=memory_devices(("device-2", "4Gi")))]
    c = claim("claim-0",
              first_available("req-0", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("8Gi")),
                              subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("4Gi"))),
              request("req-1", CLASS_A, 1, MEMORY_AT_LEAST.format("8Gi")))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0/subReq-1", DRIVER_A, "pool-2", "device-2"),
        result("req-1", DRIVER_A, "pool-1", "device-1"),
    )]


def version_memory_devices():
    return [
        resource_slice("slice-1", "pool-1", devices=[
            device("device-1", {"driverVersion": {"version": "1.0.0"}}, {"memory": "8Gi"})]),
        resource_slice("slice-2", "pool-2", devices=[
            device("device-2", {"driverVersion": {"version": "2.0.0"}}, {"memory": "2Gi"}),
            device("device-3", {"driverVersion": {"version": "1.0.0"}}, {"memory": "1Gi"})]),
    ]


def versions_claim(*constrained: str):
    return claim(
        "claim-0",
        request("req-0", CLASS_A, 1, MEMORY_AT_LEAST.format("8Gi")),
        first_available("req-1", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("2Gi")),
                        subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("1Gi"))),
        constraints=[constraint("driverVersion", *constrained)],
    )


def test_constraint_naming_the_parent_request_applies_to_every_subrequest():
    assert allocate(version_memory_devices(), [versions_claim("req-0", "req-1")]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
        result("req-1/subReq-1", DRIVER_A, "pool-2", "device-3"),
    )]


def test_constraint_naming_a_subrequest_applies_only_to_it():
    assert allocate(version_memory_devices(), [versions_claim("req-0", "req-1/subReq-0")]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
        result("req-1/subReq-1", DRIVER_A, "pool-2", "device-2"),
    )]


def test_first_available_with_all_mode():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", allocationMode="All"),
                                         subrequest("subReq-1")))
    # "All" needs every device: one is allocated, so the second alternative is used.
    assert allocate(slices, [c], allocated=[dev(DRIVER_A, "pool-1", "device-1")]) == [
        allocation(on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-2"))
    ]
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0/subReq-0", DRIVER_A, "pool-1", "device-1"),
        result("req-0/subReq-0", DRIVER_A, "pool-1", "device-2"),
    )]
    # "All" of no devices does not count as success.
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_A, 1, '"type" in device.attributes["driver-a"]',
                                                             allocationMode="All"),
                                         subrequest("subReq-1")))
    assert allocate(slices, [c]) == [allocation(on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"))]


def test_first_available_all_mode_after_another_request():
    slices = [resource_slice("slice-1", devices=devices(2, 1))]
    c = claim("claim-0", request("req-0"),
              first_available("req-1", subrequest("subReq-0", allocationMode="All"), subrequest("subReq-1")))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
        result("req-1/subReq-1", DRIVER_A, "pool-1", "device-2"),
    )]


# --- configuration ---------------------------------------------------------------------------

CLASS, CLAIM = "FromClass", "FromClaim"


def test_class_config_is_copied():
    with_config = classes(device_class(CLASS_A, DRIVER_A, config=[{"classAttribute": "classAttributeValue"}]))
    assert allocate([one_device()], [claim()], with_config) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
        config=[(CLASS, (), DRIVER_A, {"classAttribute": "classAttributeValue"})],
    )]


def test_class_config_once_per_class_naming_its_requests():
    with_config = classes(device_class(CLASS_A, DRIVER_A, config=[{"a": "A"}]),
                          device_class(CLASS_B, DRIVER_B, config=[{"b": "B"}]))
    slices = [resource_slice("slice-1", devices=devices(2)), one_device("slice-2", driver=DRIVER_B)]
    c = claim("claim-0", request("req-0"), request("req-1"), request("req-2", CLASS_B))
    assert allocate(slices, [c], with_config) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-0"), result("req-1", DRIVER_A, "pool-1", "device-1"),
        result("req-2", DRIVER_B, "pool-1", "device-1"),
        config=[(CLASS, ("req-0", "req-1"), DRIVER_A, {"a": "A"}), (CLASS, ("req-2",), DRIVER_B, {"b": "B"})],
    )]


def opaque(requests, parameters, driver=DRIVER_A):
    return {"requests": list(requests), "opaque": {"driver": driver, "parameters": parameters}}


def test_claim_config_is_copied():
    slices = [resource_slice("slice-1", devices=devices(3))]
    c = claim("claim-0", request("req-0"), request("req-1"), request("req-2"),
              config=[opaque(["req-0", "req-1"], {"x": 1}), opaque([], {"y": 2})])
    assert allocate(slices, [c]) == [allocation(
        on_node(), *[result(f"req-{i}", DRIVER_A, "pool-1", f"device-{i}") for i in range(3)],
        config=[(CLAIM, ("req-0", "req-1"), DRIVER_A, {"x": 1}), (CLAIM, (), DRIVER_A, {"y": 2})],
    )]


def test_config_of_subrequests_only_for_the_chosen_one():
    slices = [resource_slice("slice-1", driver=DRIVER_B, devices=devices(2, 1))]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_A), subrequest("subReq-1", CLASS_B, 2)),
              config=[opaque(["req-0/subReq-0"], {"foo": 1}), opaque(["req-0/subReq-1"], {"bar": 1}, DRIVER_B)])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0/subReq-1", DRIVER_B, "pool-1", "device-1"),
        result("req-0/subReq-1", DRIVER_B, "pool-1", "device-2"),
        config=[(CLAIM, (), DRIVER_B, {"bar": 1})],
    )]


def test_class_config_of_the_chosen_subrequest():
    with_config = classes(device_class(CLASS_A, DRIVER_A, config=[{"foo": 1}]),
                          device_class(CLASS_B, DRIVER_B, config=[{"bar": 1}]))
    slices = [resource_slice("slice-1", driver=DRIVER_B, devices=devices(2, 1)),
              resource_slice("slice-2", "pool-2", devices=[device("device-3")])]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_A, 2), subrequest("subReq-1", CLASS_B, 2)))
    assert allocate(slices, [c], with_config) == [allocation(
        on_node(), result("req-0/subReq-1", DRIVER_B, "pool-1", "device-1"),
        result("req-0/subReq-1", DRIVER_B, "pool-1", "device-2"),
        config=[(CLASS, (), DRIVER_B, {"bar": 1})],
    )]


def test_claim_config_scoped_to_subrequests_and_covering_all():
    slices = [resource_slice("slice-1", devices=devices(2))]
    requests = (first_available("req-0", subrequest("subReq-0", CLASS_A), subrequest("subReq-1", CLASS_B)),
                request("req-1"))
    results = (result("req-0/subReq-0", DRIVER_A, "pool-1", "device-0"), result("req-1", DRIVER_A, "pool-1", "device-1"))
    scoped = claim("claim-0", *requests, config=[opaque(["req-0/subReq-0", "req-0/subReq-1"], {"s": 1})])
    assert allocate(slices, [scoped]) == [allocation(
        on_node(), *results, config=[(CLAIM, ("req-0/subReq-0", "req-0/subReq-1"), DRIVER_A, {"s": 1})])]
    covering = claim("claim-0", *requests, config=[opaque(["req-0/subReq-0", "req-1"], {"all": 1})])
    assert allocate(slices, [covering]) == [allocation(on_node(), *results, config=[(CLAIM, (), DRIVER_A, {"all": 1})])]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("present", [{}, {"class-a": device_class(CLASS_A)}])
def test_missing_device_class(present):
    with pytest.raises(AllocationError) as err:
        allocate([one_device()], [claim("claim-0", request("req-0", "class-x"))], present)
    assert str(err.value) == "claim default/claim-0, request req-0: could not retrieve device class class-x"


def test_first_available_passes_over_an_alternative_whose_class_does_not_exist():
    # upstream's SteadyStateClusterResourceClaimTemplateFirstAvailable: sub-0 names no-such-class
    c = claim("claim-0", first_available("req-0", subrequest("sub-0", "no-such-class"), subrequest("sub-1")))
    assert allocate([one_device()], [c]) == [allocation(on_node(), result("req-0/sub-1", DRIVER_A, "pool-1", "device-1"))]


def test_first_available_without_any_existing_class():
    c = claim("claim-0", first_available("req-0", subrequest("sub-0", "class-x"), subrequest("sub-1", "class-y")))
    with pytest.raises(AllocationError) as err:
        allocate([one_device()], [c])
    assert str(err.value) == "claim default/claim-0, request sub-0: could not retrieve device class class-x"


def test_requests_past_32_devices_load_and_fail_at_allocation():
    # the API server accepts 20 + 20 (each count is within 32); the allocator refuses the claim
    c = claim("claim-0", request("req-0", CLASS_A, 20), request("req-1", CLASS_A, 20))
    with pytest.raises(AllocationError) as err:
        allocate([resource_slice("slice-1", devices=devices(40))], [c])
    assert str(err.value) == "claim default/claim-0: number of requested devices 40 exceeds the claim limit of 32"


def test_selector_without_cel():
    c = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": "claim-0", "namespace": "default"},
                       "spec": {"devices": {"requests": [
                           {"name": "req-0", "exactly": {"deviceClassName": CLASS_A, "selectors": [{}]}}]}}})
    with pytest.raises(AllocationError) as err:
        allocate([one_device()], [c])
    assert str(err.value) == (
        "claim default/claim-0, request req-0, selector #0: CEL expression empty (unsupported selector type?)"
    )


def test_cel_compile_errors_are_refused_when_claims_and_classes_are_built():
    # upstream's API server refuses them at admission; kubesched when the object is loaded
    with pytest.raises(ManifestError) as err:
        claim("claim-0", request("req-0", CLASS_A, 1, "noSuchVar"))
    assert str(err.value).endswith("compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'")
    with pytest.raises(ManifestError, match="undeclared reference"):
        device_class(CLASS_A, DRIVER_A, "noSuchVar")


def test_cel_runtime_error_is_fatal_with_a_hint():
    c = claim("claim-0", request("req-0", CLASS_A, 1, 'device.attributes["driver-a"].model == "x"'))
    with pytest.raises(AllocationError) as err:
        allocate([one_device()], [c])
    assert str(err.value) == (
        "claim default/claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: "
        "no such key: model. consider using CEL optional chaining (.? followed by orValue()) "
        "or guarding the check with has() for optional fields"
    )


def test_class_selectors_are_evaluated_first_and_short_circuit():
    # The class excludes driver-b devices, so the request selector never sees them.
    slices = [one_device("slice-b", driver=DRIVER_B), one_device()]
    c = claim("claim-0", request("req-0", CLASS_A, 1, 'device.attributes["driver-a"].ok'))
    with pytest.raises(AllocationError, match="on device driver-a/pool-1/device-1: CEL runtime error: no such key: ok"):
        allocate(slices, [c])


# --- limits ----------------------------------------------------------------------------------


def test_32_devices_fit_in_one_claim():
    slices = [resource_slice("slice-1", devices=devices(32))]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 32))]) == [allocation(
        on_node(), *[result("req-0", DRIVER_A, "pool-1", f"device-{i}") for i in range(32)]
    )]


def test_more_than_32_devices_for_one_claim_is_an_error():
    slices = [resource_slice("slice-1", devices=devices(33))]
    with pytest.raises(AllocationError) as err:
        allocate(slices, [claim("claim-0", all_request())])
    assert str(err.value) == "claim default/claim-0: number of requested devices 33 exceeds the claim limit of 32"


def test_one_count_above_the_limit_loads_and_fails_at_allocation():
    slices = [resource_slice("slice-1", devices=devices(40))]
    with pytest.raises(AllocationError) as err:
        allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 33))])
    assert str(err.value) == "claim default/claim-0: number of requested devices 33 exceeds the claim limit of 32"


def test_a_subrequest_count_above_the_limit_falls_through_to_the_next():
    slices = [resource_slice("slice-1", devices=devices(40))]
    c = claim("claim-0", first_available("req-0", subrequest("many", CLASS_A, 33), subrequest("two", CLASS_A, 2)))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0/two", DRIVER_A, "pool-1", "device-0"), result("req-0/two", DRIVER_A, "pool-1", "device-1"),
    )]
    only_big = claim("claim-1", first_available("req-0", subrequest("many", CLASS_A, 33), subrequest("more", CLASS_A, 40)))
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        allocate(slices, [only_big])


def test_subrequest_over_the_limit_falls_back():
    slices = [resource_slice("slice-1", devices=devices(2))]
    c = claim("claim-0", request("req-0"),
              first_available("req-1", subrequest("subReq-0", CLASS_A, 32), subrequest("subReq-1")))
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-0"), result("req-1/subReq-1", DRIVER_A, "pool-1", "device-1"),
    )]


def test_limit_with_prioritized_lists_avoids_exhaustive_search():
    a = allocator([resource_slice("slice-1", devices=devices(64))])
    c = claim("claim-0", *[first_available(f"req-{i}", subrequest("subReq-0", CLASS_A, 32),
                                           subrequest("subReq-1", CLASS_A, 16)) for i in range(2)])
    assert a.allocate(node(), [c]) == [allocation(
        on_node(), *[result("req-0/subReq-1", DRIVER_A, "pool-1", f"device-{i}") for i in range(16)],
        *[result("req-1/subReq-1", DRIVER_A, "pool-1", f"device-{i}") for i in range(16, 32)],
    )]
    assert a.search_steps == 75  # as upstream's incubating allocator


def test_limit_with_all_mode_alternative():
    a = allocator([resource_slice("slice-1", devices=devices(31)),
                   resource_slice("slice-2", "pool-2", DRIVER_B, devices(2))])
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", allocationMode="All"),
                                         subrequest("subReq-1", CLASS_A, 2)),
              request("req-1", CLASS_B, 2))
    assert a.allocate(node(), [c]) == [allocation(
        on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-0"),
        result("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"),
        result("req-1", DRIVER_B, "pool-2", "device-0"), result("req-1", DRIVER_B, "pool-2", "device-1"),
    )]
    assert a.search_steps == 42


# --- search effort ---------------------------------------------------------------------------


@pytest.mark.parametrize("slices", [
    pytest.param(lambda: [resource_slice("slice-1", devices=devices(4, 1))], id="one-slice"),
    pytest.param(lambda: [resource_slice("slice-1", devices=devices(2, 1), count=2),
                          resource_slice("slice-2", devices=devices(2, 3), count=2)], id="two-slices"),
    pytest.param(lambda: [resource_slice(f"slice-{i}", f"pool-{i}", devices=[device(f"device-{i}")])
                          for i in range(1, 5)], id="four-pools"),
])
def test_devices_of_one_request_are_tried_as_combinations(slices):
    a = allocator(slices())
    assert a.allocate(node(), [claim("claim-0", request("req-0", CLASS_A, 5))]) is None
    assert a.search_steps == 16  # upstream: 16 with combinations, 65 with permutations


def type_devices():
    return [device("device-1", {"type": "X"}), device("device-2", {"type": "Y"}), device("device-3", {"type": "Y"})]


def test_combinations_with_backtracking():
    a = allocator([resource_slice("slice-1", devices=type_devices())])
    c = claim("claim-0", request("req-1", CLASS_A, 2), request("req-2", CLASS_A, 1, 'device.attributes["driver-a"].type == "X"'))
    assert a.allocate(node(), [c]) == [allocation(
        on_node(), result("req-1", DRIVER_A, "pool-1", "device-2"), result("req-1", DRIVER_A, "pool-1", "device-3"),
        result("req-2", DRIVER_A, "pool-1", "device-1"),
    )]
    assert a.search_steps == 12


def test_pools_with_binding_conditions_are_tried_last():
    slices = [
        resource_slice("slice-1", "pool-1", devices=[device("device-1", {"type": "X"})], count=2),
        resource_slice("slice-2", "pool-1", devices=[device("device-2", {"type": "Y"})], count=2),
        resource_slice("slice-3", "pool-0", devices=[device("device-3", {"type": "Y"}, bindingConditions=["IsPrepared"])]),
    ]
    a = allocator(slices)
    c = claim("claim-0", request("req-1", CLASS_A, 2), request("req-2", CLASS_A, 1, 'device.attributes["driver-a"].type == "X"'))
    assert a.allocate(node(), [c]) == [allocation(
        on_node(), result("req-1", DRIVER_A, "pool-1", "device-2"),
        result("req-1", DRIVER_A, "pool-0", "device-3", binding_conditions=("IsPrepared",)),
        result("req-2", DRIVER_A, "pool-1", "device-1"),
    )]
    assert a.search_steps == 12


def test_combinations_with_prioritized_list():
    a = allocator([resource_slice("slice-1", devices=type_devices())])
    c = claim("claim-0",
              first_available("req-1", subrequest("subReq-0", CLASS_A, 3, 'device.attributes["driver-a"].type == "Y"'),
                              subrequest("subReq-1", CLASS_A, 2)),
              first_available("req-2", subrequest("subReq-0", CLASS_A, 2),
                              subrequest("subReq-1", CLASS_A, 1, 'device.attributes["driver-a"].type == "X"')))
    assert a.allocate(node(), [c]) == [allocation(
        on_node(), result("req-1/subReq-1", DRIVER_A, "pool-1", "device-2"),
        result("req-1/subReq-1", DRIVER_A, "pool-1", "device-3"),
        result("req-2/subReq-1", DRIVER_A, "pool-1", "device-1"),
    )]
    assert a.search_steps == 26


def test_binding_conditions_get_an_allocation_timestamp_when_now_is_given():
    slices = [resource_slice("slice-1", devices=[device("device-1", bindingConditions=["Ready"],
                                                        bindingFailureConditions=["Failed"])])]
    (got,) = allocate(slices, [claim()], now=1234.5)
    assert got.allocation_timestamp == 1234.5
    assert got.devices.results[0].binding_failure_conditions == ("Failed",)
    (got,) = allocate([one_device()], [claim()], now=1234.5)
    assert got.allocation_timestamp is None


def test_deadline_aborts_the_search():
    # Upstream's interrupt case: more identical devices wanted than exist (13 of 12: thousands of
    # steps); the deadline is consulted every 64 steps.
    slices = [resource_slice("slice-1", devices=devices(12))]
    calls = []

    def deadline():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(AllocationTimeout, match="filter operation aborted"):
        allocator(slices).allocate(node(), [claim("claim-0", request("req-0", CLASS_A, 13))], deadline)
    assert len(calls) == 4


def test_allocator_is_reusable_across_nodes_and_calls():
    slices = [one_device("slice-1"), one_device("slice-2", node_name=NODE_2)]
    a = allocator(slices)
    for _ in range(2):
        assert a.allocate(node(), [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))]
        assert a.allocate(node(NODE_2), [claim()]) == [
            allocation(on_node(NODE_2), result("req-0", DRIVER_A, "pool-1", "device-1"))]
