"""The structured allocator and device features: taints and tolerations (also
from DeviceTaintRules), partitionable devices (shared counters) and consumable
capacity (devices that allow multiple allocations), plus AllocatedState."""

from __future__ import annotations

import uuid
from fractions import Fraction

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.dra.allocator import AllocatedState, DeviceID

from .helpers import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    MEMORY_AT_LEAST,
    NODE_2,
    all_request,
    allocate,
    allocation,
    claim,
    classes,
    counter_set,
    counters,
    dev,
    device,
    device_class,
    first_available,
    node,
    on_node,
    request,
    resource_slice,
    result,
    subrequest,
    taint,
    taint_rule,
    toleration,
    without_share_ids,
)

GI = 2**30
NO_SCHEDULE = taint(effect="NoSchedule")
NO_EXECUTE = taint(value="taint-value-2", effect="NoExecute")
TOLERATE_NO_SCHEDULE = toleration(effect="NoSchedule")
TOLERATE_NO_EXECUTE = toleration(operator="Equal", value="taint-value-2", effect="NoExecute")


# --- taints ----------------------------------------------------------------------------------


def tainted_slice():
    return resource_slice("slice-1", devices=[device("device-1", taints=[NO_SCHEDULE]),
                                              device("device-2", taints=[NO_EXECUTE])])


def test_tainted_devices_are_not_allocated():
    assert allocate([tainted_slice()], [claim()]) is None
    both = resource_slice("slice-1", devices=[device("device-1", taints=[NO_SCHEDULE, NO_EXECUTE])])
    assert allocate([both], [claim()]) is None


def test_tolerated_taints_and_tolerations_copied_into_the_result():
    c = claim("claim-0", request(tolerations=[TOLERATE_NO_EXECUTE]))
    assert allocate([tainted_slice()], [c]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2", tolerations=[TOLERATE_NO_EXECUTE]))
    ]
    both = resource_slice("slice-1", devices=[device("device-1", taints=[NO_SCHEDULE, NO_EXECUTE])])
    c = claim("claim-0", request(tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))
    assert allocate([both], [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]),
    )]


def test_tolerations_are_copied_even_when_no_taint_needs_them():
    key1 = toleration("key1", effect="NoSchedule")
    c = claim("claim-0", request(tolerations=[key1]))
    assert allocate([resource_slice("slice-1", devices=[device("device-1")])], [c]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", tolerations=[key1]))
    ]


def test_tolerations_of_the_chosen_subrequest():
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0"),
                                         subrequest("subReq-1", tolerations=[TOLERATE_NO_EXECUTE])))
    assert allocate([tainted_slice()], [c]) == [allocation(
        on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-2", tolerations=[TOLERATE_NO_EXECUTE]),
    )]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_B), subrequest("subReq-1")))
    assert allocate([tainted_slice()], [c]) is None


@pytest.mark.parametrize("effect", ["None", "SomeFutureEffect"])
def test_taints_without_a_scheduling_effect_are_ignored(effect):
    slices = [resource_slice("slice-1", devices=[device("device-1", taints=[taint(effect=effect)])])]
    assert allocate(slices, [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))]


def test_admin_access_and_all_mode_do_not_bypass_taints():
    slices = [resource_slice("slice-1", devices=[device("device-1", taints=[NO_SCHEDULE])])]
    assert allocate(slices, [claim("claim-0", request(adminAccess=True))]) is None
    assert allocate(slices, [claim("claim-0", all_request())]) is None


def test_taints_from_device_taint_rules():
    slices = [resource_slice("slice-1", devices=[device("device-1"), device("device-2")])]
    rule = taint_rule("rule-1", NO_EXECUTE, driver=DRIVER_A, pool="pool-1", device="device-1")
    assert allocate(slices, [claim()], rules=[rule]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"))
    ]
    everything = taint_rule("rule-2", NO_SCHEDULE)  # empty selector: every device
    assert allocate(slices, [claim()], rules=[everything]) is None
    c = claim("claim-0", request(tolerations=[TOLERATE_NO_SCHEDULE]))
    assert allocate(slices, [c], rules=[everything]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", tolerations=[TOLERATE_NO_SCHEDULE]))
    ]
    other_pool = taint_rule("rule-3", NO_SCHEDULE, pool="pool-2")
    assert allocate(slices, [claim()], rules=[other_pool]) is not None


def test_taint_rule_without_selector_selects_nothing():
    rule = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
                          "spec": {"taint": NO_SCHEDULE}})
    assert allocate([resource_slice("slice-1", devices=[device("device-1")])], [claim()], rules=[rule]) is not None


def test_rejected_tainted_device_gives_back_its_counters():
    # Upstream bug #140431: counters reserved for a device refused for its taints leaked.
    slices = [
        resource_slice("slice-1", count=2, devices=[
            device("device-1", consumesCounters=[counters("set-1", memory="8Gi")], taints=[NO_SCHEDULE]),
            device("device-2", consumesCounters=[counters("set-1", memory="8Gi")]),
        ]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", memory="8Gi")]),
    ]
    assert allocate(slices, [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"))]


def test_device_refused_by_a_constraint_gives_back_its_counters():
    slices = [
        resource_slice("slice-1", count=2, devices=[
            device("device-1", {"numa": 0}, consumesCounters=[counters("set-1", memory="4Gi")]),
            device("device-2", {"numa": 1}, consumesCounters=[counters("set-1", memory="4Gi")]),
            device("device-3", {"numa": 0}, consumesCounters=[counters("set-1", memory="4Gi")]),
        ]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", memory="8Gi")]),
    ]
    c = claim("claim-0", request("req-0"), request("req-1"), constraints=[{"matchAttribute": "driver-a/numa"}])
    assert allocate(slices, [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1", DRIVER_A, "pool-1", "device-3"),
    )]


# --- partitionable devices -------------------------------------------------------------------


def partition(name: str, size: str, **fields) -> dict:
    """A partition with capacity ``memory: size`` that consumes as much from counter set set-1."""
    return device(name, capacity={"memory": size}, consumesCounters=[counters("set-1", memory=size)], **fields)


def partitions(*sizes: str, total: str = "8Gi", node_name: str = "node-1", pool: str = "pool-1"):
    return [
        resource_slice("slice-1", pool, count=2, node_name=node_name,
                       devices=[partition(f"device-{i}", size) for i, size in enumerate(sizes, 1)]),
        resource_slice("slice-2", pool, count=2, node_name=node_name,
                       shared_counters=[counter_set("set-1", memory=total)]),
    ]



def test_partitionable_single_device():
    assert allocate(partitions("4Gi"), [claim()]) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))]
    assert allocate(partitions("4Gi"), [claim("claim-0", all_request())]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))
    ]


def test_partitions_share_counters():
    assert allocate(partitions("4Gi", "6Gi", "4Gi"), [claim("claim-0", request("req-0"), request("req-1"))]) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"),
                   result("req-1", DRIVER_A, "pool-1", "device-3"))
    ]


def test_partitions_with_prioritized_list():
    c = claim("claim-0", request("req-0"),
              first_available("req-1", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("6Gi")),
                              subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("4Gi"))))
    assert allocate(partitions("4Gi", "6Gi", "4Gi"), [c]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"), result("req-1/subReq-1", DRIVER_A, "pool-1", "device-3"),
    )]


def test_partitions_with_several_counters_and_counter_sets():
    def part(name, cpus1, memory1, cpus2, memory2):
        return device(name, consumesCounters=[counters("set-1", cpus=cpus1, memory=memory1),
                                              counters("set-2", cpus=cpus2, memory=memory2)])
    slices = [
        resource_slice("slice-1", count=2, devices=[
            part("device-1", "6", "4Gi", "4", "2Gi"), part("device-2", "4", "6Gi", "6", "6Gi"),
            part("device-3", "4", "4Gi", "4", "4Gi"),
        ]),
        resource_slice("slice-2", count=2, shared_counters=[
            counter_set("set-1", cpus="8", memory="18Gi"), counter_set("set-2", cpus="12", memory="18Gi"),
        ]),
    ]
    assert allocate(slices, [claim("claim-0", request("req-0"), request("req-1"))]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"), result("req-1", DRIVER_A, "pool-1", "device-3"),
    )]


def test_counters_consumed_by_allocated_devices_in_several_pools():
    def pool(name, *parts):
        return [
            resource_slice(f"{name}-devices", name, count=2, devices=[
                device(d, consumesCounters=[counters("set-1", cpus=c, memory=m)]) for d, c, m in parts]),
            resource_slice(f"{name}-counters", name, count=2,
                           shared_counters=[counter_set("set-1", cpus="8", memory="18Gi")]),
        ]
    slices = pool("pool-1", ("device-1", "6", "4Gi"), ("device-2", "4", "6Gi"), ("device-3", "4", "4Gi")) + pool(
        "pool-2", ("device-1", "6", "4Gi"), ("device-2", "1", "7Gi"), ("device-3", "1", "7Gi"))
    allocated = [dev(DRIVER_A, "pool-1", "device-2"), dev(DRIVER_A, "pool-1", "device-3"),
                 dev(DRIVER_A, "pool-2", "device-1")]
    assert allocate(slices, [claim("claim-0", request("req-0"), request("req-1"))], allocated=allocated) == [
        allocation(on_node(), result("req-0", DRIVER_A, "pool-2", "device-2"),
                   result("req-1", DRIVER_A, "pool-2", "device-3"))
    ]


def test_counters_exhausted():
    slices = [
        resource_slice("slice-1", count=2, devices=[
            device("device-1", consumesCounters=[counters("set-1", memory="5Gi")]),
            device("device-2", consumesCounters=[counters("set-1", memory="4Gi")]),
            device("device-3", consumesCounters=[counters("set-1", memory="4Gi")]),
        ]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", memory="8Gi", unused="1Gi")]),
    ]
    # device-1 leaves too little for any second device.
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 2))]) == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-2"), result("req-0", DRIVER_A, "pool-1", "device-3"),
    )]
    assert allocate(slices, [claim("claim-0", request("req-0", CLASS_A, 3))]) is None
    assert allocate(partitions("4Gi", "16Gi", total="18Gi"), [claim()], allocated=[dev(DRIVER_A, "pool-1", "device-2")]) is None


def test_overcommitted_counter_set_blocks_every_device():
    slices = partitions("4Gi", "20Gi", total="18Gi")
    assert allocate(slices, [claim()], allocated=[dev(DRIVER_A, "pool-1", "device-2")]) is None


def test_partitions_with_per_device_node_selection():
    slices = [
        resource_slice("slice-1", count=2, per_device=True, devices=[
            partition("device-1", "4Gi", nodeName="node-1"), partition("device-2", "6Gi", nodeName=NODE_2)]),
        resource_slice("slice-2", count=2, per_device=True, shared_counters=[counter_set("set-1", memory="18Gi")]),
    ]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("6Gi")),
                                         subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("4Gi"))))
    assert allocate(slices, [c]) == [allocation(on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-1"))]
    assert allocate(slices, [c], on=node(NODE_2)) == [
        allocation(on_node(NODE_2), result("req-0/subReq-0", DRIVER_A, "pool-1", "device-2"))
    ]


def test_counter_set_shared_by_devices_on_several_nodes():
    slices = [
        resource_slice("slice-1", count=3, shared_counters=[counter_set("set-1", memory="8Gi")]),
        resource_slice("slice-2", count=3, devices=[partition("device-1", "6Gi"), partition("device-2", "2Gi")]),
        resource_slice("slice-3", count=3, node_name=NODE_2, devices=[partition("device-3", "6Gi")]),
    ]
    c = claim("claim-0", first_available("req-0", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("6Gi")),
                                         subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("2Gi"))))
    assert allocate(slices, [c], allocated=[dev(DRIVER_A, "pool-1", "device-3")]) == [
        allocation(on_node(), result("req-0/subReq-1", DRIVER_A, "pool-1", "device-2"))
    ]
    # From node-2, whose slice alone is not the whole pool, the counters on node-1's slices still count.
    assert allocate(slices, [claim()], on=node(NODE_2), allocated=[dev(DRIVER_A, "pool-1", "device-1")]) is None


@pytest.mark.parametrize("slices", [
    pytest.param(lambda: [
        resource_slice("slice-1", count=4, devices=[device("device-1")]),
        resource_slice("slice-2", count=4, shared_counters=[counter_set("set-1", memory="1Gi")]),
        resource_slice("slice-3", count=4, devices=[device("device-2")]),
        resource_slice("slice-4", count=4, shared_counters=[counter_set("set-1", memory="1Gi")]),
    ], id="same-counter-set-twice"),
    pytest.param(lambda: [
        resource_slice("slice-1", count=2, devices=[device("device-1", consumesCounters=[counters("set-2", memory="1Gi")])]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", memory="1Gi")]),
    ], id="unknown-counter-set"),
    pytest.param(lambda: [
        resource_slice("slice-1", count=2, devices=[device("device-1", consumesCounters=[counters("set-1", memory="8Gi")])]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", other="8Gi")]),
    ], id="unknown-counter"),
    pytest.param(lambda: [
        resource_slice("slice-1", devices=[device("device-1", consumesCounters=[counters("set-1", memory="8Gi")])]),
        resource_slice("slice-2", "pool-2", shared_counters=[counter_set("set-1", memory="8Gi")]),
    ], id="counter-set-in-other-pool"),
    pytest.param(lambda: [
        resource_slice("slice-1", count=3, shared_counters=[counter_set("set-1", memory="8Gi")]),
        resource_slice("slice-2", count=3, devices=[partition("device-1", "6Gi")]),
        resource_slice("slice-3", count=3, node_name=NODE_2,
                       devices=[device("device-3", consumesCounters=[counters("set-2", memory="6Gi")])]),
    ], id="bad-slice-for-another-node"),
])
def test_invalid_counter_sets_make_the_pool_invalid(slices):
    assert allocate(slices(), [claim()]) is None


# --- consumable capacity ---------------------------------------------------------------------

SHARED_CLASS = classes(device_class(CLASS_A, DRIVER_A, "device.allowMultipleAllocations == true"))
DEDICATED_CLASS = classes(device_class(CLASS_A, DRIVER_A, "device.allowMultipleAllocations == false"))


def shared(name: str, capacity: dict | None = None, **fields) -> dict:
    return device(name, capacity=capacity, allowMultipleAllocations=True, **fields)


def ranged(value: str) -> dict:
    """Capacity with request policy default 2, valid range min 2, step 2, max 4."""
    return {"value": value, "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}}


def valid_values(value: str, default: str, *more: str) -> dict:
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def wants(amount: str | None = None, name: str = "req-0", **fields) -> dict:
    if amount is not None:
        fields["capacity"] = {"requests": {"capacity-0": amount}}
    return request(name, CLASS_A, 1, **fields)


def shared_result(request_: str, device_: str, **consumed: int) -> object:
    return result(request_, DRIVER_A, "pool-1", device_,
                  consumed_capacity={k.replace("_", "-"): Fraction(v) for k, v in consumed.items()})


def two_claims(amount: str | None = None):
    return [claim("claim-0", wants(amount)), claim("claim-1", wants(amount))]


def shared_allocate(devices_, claims, classes_=SHARED_CLASS, **kwargs):
    got = allocate([resource_slice("slice-1", devices=devices_)], claims, classes_, **kwargs)
    return None if got is None else without_share_ids(got)


def test_shared_device_without_capacity_is_shared_freely():
    assert shared_allocate([shared("device-1")], two_claims()) == [
        allocation(on_node(), shared_result("req-0", "device-1")),
        allocation(on_node(), shared_result("req-0", "device-1")),
    ]


def test_shared_device_without_policy_is_consumed_whole_unless_requested():
    devices_ = [shared("device-1", {"capacity-0": "1"}), shared("device-2", {"capacity-0": "1"})]
    assert shared_allocate(devices_, two_claims()) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=1)),
        allocation(on_node(), shared_result("req-0", "device-2", capacity_0=1)),
    ]
    assert shared_allocate([shared("device-1", {"capacity-0": "2"})], two_claims()) is None
    assert shared_allocate([shared("device-1", {"capacity-0": "2"})], two_claims("1")) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=1)),
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=1)),
    ]


def test_request_for_capacity_the_device_lacks():
    assert shared_allocate([shared("device-1", {"capacity-1": "1"})], [claim("claim-0", wants("1"))]) is None
    c = claim("claim-0", all_request(capacity={"requests": {"capacity-0": "1"}}))
    assert shared_allocate([shared("device-1", {"capacity-1": "1"})], [c]) is None


@pytest.mark.parametrize("capacity, amount, consumed", [
    pytest.param(ranged("4"), None, 2, id="range-default"),
    pytest.param(ranged("4"), "1", 2, id="range-rounds-up-to-min"),
    pytest.param(ranged("4"), "3", 4, id="range-rounds-up-to-step"),
    pytest.param(valid_values("4", "1", "2"), "2", 2, id="valid-value"),
    pytest.param(valid_values("3", "1", "3"), "2", 3, id="valid-values-round-up"),
    pytest.param(valid_values("1", "0"), None, 0, id="zero-default"),
])
def test_request_policy(capacity, amount, consumed):
    assert shared_allocate([shared("device-1", {"capacity-0": capacity})], [claim("claim-0", wants(amount))]) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=consumed))
    ]


@pytest.mark.parametrize("capacity, amount", [
    pytest.param(valid_values("1", "0"), "1", id="not-a-valid-value"),
    pytest.param(ranged("10"), "6", id="over-the-range-max"),
])
def test_request_policy_violations(capacity, amount):
    assert shared_allocate([shared("device-1", {"capacity-0": capacity})], [claim("claim-0", wants(amount))]) is None


def test_shared_device_capacity_is_used_up():
    assert shared_allocate([shared("device-1", {"capacity-0": ranged("4")})], two_claims()) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2)),
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2)),
    ]
    claims = [claim("claim-0", wants("1")), claim("claim-1", wants("2"))]
    assert shared_allocate([shared("device-1", {"capacity-0": ranged("2")})], claims) is None


def test_capacity_already_consumed_by_allocated_claims():
    device_1 = dev(DRIVER_A, "pool-1", "device-1")
    used = AllocatedState(shared={(device_1, "share-1")}, consumed_capacity={device_1: {"capacity-0": Fraction(2)}})
    assert shared_allocate([shared("device-1", {"capacity-0": ranged("4")})], [claim("claim-0", wants("2"))],
                           state=used) == [allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2))]
    devices_ = [shared("device-1", {"capacity-0": ranged("2")}), shared("device-2", {"capacity-0": ranged("2")})]
    assert shared_allocate(devices_, [claim("claim-0", wants("2"))], state=used) == [
        allocation(on_node(), shared_result("req-0", "device-2", capacity_0=2))
    ]
    assert shared_allocate(devices_[:1], [claim("claim-0", wants("2"))], state=used) is None


def test_shared_devices_with_backtracking_across_claims():
    devices_ = [shared("device-2", {"capacity-0": ranged("2")}, attributes={"stringAttribute": {"string": "v1"}}),
                shared("device-1", {"capacity-0": ranged("4")}, attributes={"stringAttribute": {"string": "v2"}})]
    claims = [claim("claim-0", wants("2"), wants("2", "req-1"), constraints=[{"matchAttribute": "driver-a/stringAttribute"}]),
              claim("claim-1", wants("2"))]
    assert shared_allocate(devices_, claims, classes()) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2),
                   shared_result("req-1", "device-1", capacity_0=2)),
        allocation(on_node(), shared_result("req-0", "device-2", capacity_0=2)),
    ]


def test_shared_device_with_subrequests():
    c = claim("claim-0", first_available(
        "req-0", subrequest("subReq-0", capacity={"requests": {"capacity-0": "4"}}),
        subrequest("subReq-1", capacity={"requests": {"capacity-0": "2"}})))
    assert shared_allocate([shared("device-1", {"capacity-0": ranged("2")})], [c]) == [
        allocation(on_node(), shared_result("req-0/subReq-1", "device-1", capacity_0=2))
    ]


def test_all_mode_with_capacity_requests():
    devices_ = [shared("device-1", {"capacity-0": "2"}), shared("device-2")]
    c = claim("claim-0", all_request(capacity={"requests": {"capacity-0": "2"}}))
    # Devices without (enough of) the capacity are not part of "all".
    assert shared_allocate(devices_, [c]) == [allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2))]
    devices_ = [shared("device-1", {"capacity-0": "2"}), shared("device-2", {"capacity-0": "1"})]
    assert shared_allocate(devices_, [c]) == [allocation(on_node(), shared_result("req-0", "device-1", capacity_0=2))]


def test_all_mode_after_a_request_on_the_same_shared_devices():
    one = {"requests": {"capacity-0": "1"}}
    c = claim("claim-0", wants("1"), all_request("req-1", capacity=one))
    devices_ = [shared("device-1", {"capacity-0": "2"}), shared("device-2", {"capacity-0": "1"})]
    assert shared_allocate(devices_, [c], classes()) == [allocation(
        on_node(), shared_result("req-0", "device-1", capacity_0=1), shared_result("req-1", "device-1", capacity_0=1),
        shared_result("req-1", "device-2", capacity_0=1),
    )]
    devices_ = [shared("device-1", {"capacity-0": "1"}), shared("device-2", {"capacity-0": "1"})]
    assert shared_allocate(devices_, [c], classes()) is None
    device_1 = dev(DRIVER_A, "pool-1", "device-1")
    used = AllocatedState(shared={(device_1, "s")}, consumed_capacity={device_1: {"capacity-0": Fraction(1)}})
    c = claim("claim-0", all_request(capacity=one))
    assert shared_allocate(devices_, [c], classes(), state=used) == [
        allocation(on_node(), shared_result("req-0", "device-2", capacity_0=1))
    ]


def test_dedicated_device_with_capacity_request():
    assert shared_allocate([device("device-1", capacity={"capacity-0": "1"})], [claim("claim-0", wants("1"))],
                           DEDICATED_CLASS) == [allocation(on_node(), result("req-0", DRIVER_A, "pool-1", "device-1"))]
    # A dedicated device is used by one claim only, whatever capacity is left.
    assert shared_allocate([device("device-1", capacity={"capacity-0": ranged("2")})], two_claims("1"),
                           DEDICATED_CLASS) is None


def test_allow_multiple_allocations_in_class_selector():
    assert shared_allocate([shared("device-1", {"capacity-0": "1"})], [claim("claim-0", wants("1"))],
                           DEDICATED_CLASS) is None


def test_shared_device_already_allocated_exclusively():
    assert shared_allocate([shared("device-1", {"capacity-0": ranged("2")})], [claim("claim-0", wants("1"))],
                           allocated=[dev(DRIVER_A, "pool-1", "device-1")]) is None


def test_dedicated_device_with_leftover_consumed_capacity():
    device_1 = dev(DRIVER_A, "pool-1", "device-1")
    used = AllocatedState(consumed_capacity={device_1: {"capacity-0": Fraction(1)}})
    assert shared_allocate([device("device-1", capacity={"capacity-0": ranged("2")})], [claim("claim-0", wants("1"))],
                           state=used) is None


def test_shared_partitions_consume_counters_once():
    slices = [
        resource_slice("slice-1", count=2, devices=[
            shared(f"device-{i}", {"memory": size}, consumesCounters=[counters("set-1", memory=size)])
            for i, size in ((1, "4Gi"), (2, "6Gi"), (3, "4Gi"))]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", memory="8Gi")]),
    ]
    c = claim("claim-0", request("req-0"),
              first_available("req-1", subrequest("subReq-0", CLASS_A, 1, MEMORY_AT_LEAST.format("6Gi")),
                              subrequest("subReq-1", CLASS_A, 1, MEMORY_AT_LEAST.format("4Gi"))))
    got = without_share_ids(allocate(slices, [c], SHARED_CLASS))
    assert got == [allocation(
        on_node(), result("req-0", DRIVER_A, "pool-1", "device-1", consumed_capacity={"memory": Fraction(4 * GI)}),
        result("req-1/subReq-1", DRIVER_A, "pool-1", "device-3", consumed_capacity={"memory": Fraction(4 * GI)}),
    )]


def test_shared_partition_counters_count_across_scheduling_cycles():
    slices = [
        resource_slice("slice-1", count=2, devices=[
            shared("device-1", {"capacity-0": "2"}, attributes={"mode": "a"},
                   consumesCounters=[counters("set-1", **{"capacity-0": "1"})]),
            shared("device-2", {"capacity-0": "2"}, attributes={"mode": "b"},
                   consumesCounters=[counters("set-1", **{"capacity-0": "1"})]),
        ]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", **{"capacity-0": "1"})]),
    ]
    device_1 = dev(DRIVER_A, "pool-1", "device-1")
    used = AllocatedState(shared={(device_1, "s")}, consumed_capacity={device_1: {"capacity-0": Fraction(1)}})

    def mode(value):
        return claim("claim-0", request("req-0", CLASS_A, 1, f'device.attributes["driver-a"].mode == "{value}"',
                                        capacity={"requests": {"capacity-0": "1"}}))
    # device-1's share already took the counters: device-2 cannot get any ...
    assert allocate(slices, [mode("b")], SHARED_CLASS, state=used) is None
    # ... while another share of device-1 needs no more counters.
    assert without_share_ids(allocate(slices, [mode("a")], SHARED_CLASS, state=used)) == [
        allocation(on_node(), shared_result("req-0", "device-1", capacity_0=1))
    ]


def test_consumable_capacity_with_partitions_and_prioritized_list():
    capacity_1 = {"value": "4", "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}}

    def part(name, c0):
        return shared(name, {"capacity-0": c0, "capacity-1": capacity_1},
                      consumesCounters=[counters("set-1", **{"capacity-0": c0}), counters("set-2", **{"capacity-1": "4"})])
    slices = [
        resource_slice("slice-1", count=2, devices=[part("device-1", "2"), part("device-2", "4"), part("device-3", "2")]),
        resource_slice("slice-2", count=2, shared_counters=[counter_set("set-1", **{"capacity-0": "4"}),
                                                            counter_set("set-2", **{"capacity-1": "8"})]),
    ]
    one, two = {"requests": {"capacity-0": "1"}}, {"requests": {"capacity-0": "2"}}
    c = claim("claim-0", request("req-0", capacity=one), request("req-2", capacity=two), first_available(
        "req-1",
        subrequest("subReq-0", CLASS_A, 1, 'device.capacity["driver-a"]["capacity-0"].compareTo(quantity("4")) >= 0',
                   capacity=one),
        subrequest("subReq-1", CLASS_A, 1, 'device.capacity["driver-a"]["capacity-0"].compareTo(quantity("2")) >= 0',
                   capacity=one)))
    assert without_share_ids(allocate(slices, [c])) == [allocation(
        on_node(),
        shared_result("req-0", "device-1", capacity_0=1, capacity_1=2),
        shared_result("req-2", "device-3", capacity_0=2, capacity_1=2),
        shared_result("req-1/subReq-1", "device-1", capacity_0=1, capacity_1=2),
    )]


def test_distinct_attribute_with_shared_devices():
    devices_ = [shared("device-1", {"capacity-0": ranged("2")}, attributes={"stringAttribute": "value"})]
    c = claim("claim-0", wants("1"), wants("1", "req-1"), constraints=[{"distinctAttribute": "driver-a/stringAttribute"}])
    assert shared_allocate(devices_, [c]) is None
    devices_ = [shared(f"device-{i}", {"capacity-0": ranged("4")}, attributes={"stringAttribute": f"v{i}"})
                for i in (1, 2)]
    c = claim("claim-0", wants("2"), wants("2", "req-1"), constraints=[{"distinctAttribute": "driver-a/stringAttribute"}])
    assert shared_allocate(devices_, [c]) == [allocation(
        on_node(), shared_result("req-0", "device-1", capacity_0=2), shared_result("req-1", "device-2", capacity_0=2),
    )]


def test_share_ids_are_unique_uuids_and_reproducible():
    slices = [resource_slice("slice-1", devices=[shared("device-1")])]
    claims = [claim("claim-0", wants(), wants(name="req-1")), claim("claim-1", wants())]
    first = allocate(slices, claims, SHARED_CLASS)
    ids = [r.share_id for a in first for r in a.devices.results]
    assert len(set(ids)) == 3 and all(str(uuid.UUID(i)) == i for i in ids)
    assert allocate(slices, claims, SHARED_CLASS) == first
    assert [r.share_id for r in allocate(slices, claims[1:], SHARED_CLASS)[0].devices.results] == ids[2:]


# --- AllocatedState --------------------------------------------------------------------------


def test_allocated_state_from_claims_and_incremental_updates():
    slices = [resource_slice("slice-1", devices=[device("device-1"), device("device-2"),
                                                 shared("device-3", {"memory": ranged("4")})])]
    any_class = classes(device_class(CLASS_A, DRIVER_A))
    exclusive, admin, share = allocate(slices, [
        claim("claim-0"), claim("claim-1", request(adminAccess=True)),
        claim("claim-2", request("req-0", CLASS_A, 1, 'device.allowMultipleAllocations'))], any_class)

    claims = [attrs.evolve(claim(f"c{i}"), status=attrs.evolve(claim().status, allocation=a))
              for i, a in enumerate((exclusive, admin, share))] + [claim("unallocated")]
    state = AllocatedState.from_claims(claims)
    device_1, device_3 = dev(DRIVER_A, "pool-1", "device-1"), dev(DRIVER_A, "pool-1", "device-3")
    share_id = share.devices.results[0].share_id
    assert state == AllocatedState(devices={device_1}, shared={(device_3, share_id)},
                                   consumed_capacity={device_3: {"memory": Fraction(2)}})
    assert state.is_allocated(device_1) and state.is_allocated(device_3)
    assert not state.is_allocated(dev(DRIVER_A, "pool-1", "device-2"))

    state.remove(share)
    state.remove(exclusive)
    state.remove(admin)
    assert state == AllocatedState() and not state.is_allocated(device_3)
    state.add(share)
    assert state == AllocatedState(shared={(device_3, share_id)}, consumed_capacity={device_3: {"memory": Fraction(2)}})


def test_device_id_text():
    assert str(DeviceID("drv", "pool", "dev")) == "drv/pool/dev"
