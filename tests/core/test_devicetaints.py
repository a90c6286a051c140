"""Device taints: which taints a device has (slice + DeviceTaintRules) and
whether tolerations allow allocating it."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.resource_v1 import Device, DeviceTaint, DeviceToleration
from kubesched.core.dra.devicetaints import (
    device_taints,
    rule_selects,
    rule_taints,
    tolerated,
    untolerated,
)


def rule(name: str, effect: str = "NoExecute", selector: dict | None = None, with_selector: bool = True):
    spec = {"taint": {"key": name, "effect": effect}}
    if with_selector:
        spec["deviceSelector"] = selector or {}
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                          "metadata": {"name": name}, "spec": spec})


@pytest.mark.parametrize("selector, selected", [
    ({}, True),
    ({"driver": "gpu.example.com"}, True),
    ({"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}, True),
    ({"driver": "other.example.com"}, False),
    ({"pool": "node-2"}, False),
    ({"device": "gpu-1"}, False),
])
def test_rule_selector_fields_must_all_match(selector, selected):
    assert rule_selects(rule("r", selector=selector), "gpu.example.com", "node-1", "gpu-0") is selected


def test_rule_without_selector_selects_no_device():
    assert not rule_selects(rule("r", with_selector=False), "gpu.example.com", "node-1", "gpu-0")


def test_device_taints_are_the_slice_taints_then_the_rules():
    own = DeviceTaint(key="own", effect="NoSchedule")
    device = Device(name="gpu-0", taints=(own,))
    rules = [rule("a"), rule("b", selector={"device": "gpu-1"}), rule("c", "None", {"pool": "node-1"})]
    assert [t.key for t in device_taints("gpu.example.com", "node-1", device, rules)] == ["own", "a", "c"]
    assert device_taints("gpu.example.com", "node-1", device) == (own,)
    assert [t.key for t in rule_taints(rules, "gpu.example.com", "node-1", "gpu-1")] == ["a", "b", "c"]


NO_SCHEDULE = DeviceTaint(key="k", value="v", effect="NoSchedule")
NO_EXECUTE = DeviceTaint(key="k", value="v", effect="NoExecute")


@pytest.mark.parametrize("taint, tolerations, blocked", [
    (NO_SCHEDULE, [], True),
    (NO_EXECUTE, [], True),
    (DeviceTaint(key="k", effect="None"), [], False),
    (DeviceTaint(key="k", effect="FutureEffect"), [], False),
    (NO_SCHEDULE, [DeviceToleration(key="k", value="v", effect="NoSchedule")], False),
    (NO_SCHEDULE, [DeviceToleration(key="k", value="other")], True),
    (NO_SCHEDULE, [DeviceToleration(key="k", operator="Exists")], False),
    (NO_EXECUTE, [DeviceToleration(operator="Exists")], False),
    (NO_EXECUTE, [DeviceToleration(key="k", operator="Exists", effect="NoSchedule")], True),
    (NO_EXECUTE, [DeviceToleration(key="other", operator="Exists"), DeviceToleration(key="k", value="v")], False),
])
def test_scheduling_effects_need_a_toleration(taint, tolerations, blocked):
    assert (untolerated([taint], tolerations) == [taint]) is blocked
    if blocked and taint.effect in ("NoSchedule", "NoExecute"):
        assert not tolerated(taint, tolerations)
