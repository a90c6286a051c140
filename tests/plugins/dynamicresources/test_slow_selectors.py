"""A selector that takes long to evaluate cannot hold the scheduler.

The static cost estimate admits selectors that this interpreter evaluates
for many seconds; each evaluation is cut at ``MAX_EVALUATION_SECONDS`` and a
pod's Filter at DynamicResourcesArgs.filterTimeout (both wall-clock).  Here
both read a step clock instead of the machine's (one millisecond each time
it is read, and the evaluator reads it every DEADLINE_CHECK_STEPS steps), so
the outcome depends on how much work a selector does, never on how busy the
machine is.
"""

from __future__ import annotations

import types

import pytest
from tests.test_refusals import nested_all

from kubesched.core.api import from_manifest
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

DRIVER = "gpu.example.com"


@pytest.fixture(autouse=True)
def step_clock(monkeypatch):
    """The evaluator's and DynamicResources' ``time.monotonic`` advance 1 ms per reading."""
    readings = iter(range(1, 10**9))
    clock = types.SimpleNamespace(monotonic=lambda: next(readings) / 1000)
    monkeypatch.setattr("kubesched.core.cel.evaluator.time", clock)
    monkeypatch.setattr("kubesched.plugins.dynamicresources.plugin.time", clock)


#: The issue's selector: 16 x 16 x 16 x 16 iterations, under the static estimate, ~15 s here if not cut.
SLOW = nested_all(4, 16)


def gpu_slice(node_name: str, count: int):
    devices = [{"name": f"gpu-{i}", "attributes": {"serial": {"string": f"{node_name}-{i}"}}}
               for i in range(count)]
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                          "metadata": {"name": f"{node_name}-gpus"},
                          "spec": {"driver": DRIVER, "nodeName": node_name,
                                   "pool": {"name": node_name, "resourceSliceCount": 1}, "devices": devices}})


def cluster(nodes: int, gpus: int) -> list:
    device_class = from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                  "metadata": {"name": DRIVER},
                                  "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}})
    names = [f"n{i}" for i in range(nodes)]
    return [*(node(n) for n in names), device_class, *(gpu_slice(n, gpus) for n in names)]


def claim(name: str, selector: str | None = None):
    exactly: dict = {"deviceClassName": DRIVER}
    if selector is not None:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}})


def claiming_pod(name: str, claim_name: str, **kwargs):
    return pod(name, resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}], **kwargs)


def scheduled(p):
    return next(c for c in p.status.conditions if c.type == "PodScheduled")


def behind(sim: Simulation, count: int = 30) -> list[str]:
    """``count`` pods queued after the slow one: plain pods, and every fifth with a quick claim."""
    names, objects = [], []
    for i in range(count):
        name = f"after-{i}"
        if i % 5 == 0:
            objects += [claim(f"quick-{i}"), claiming_pod(name, f"quick-{i}")]
        else:
            objects.append(pod(name))
        names.append(name)
    sim.create(objects)
    return names


def test_a_selector_past_the_evaluation_time_limit_fails_its_pod_and_30_pods_behind_it_bind(monkeypatch):
    monkeypatch.setattr("kubesched.core.cel.evaluator.MAX_EVALUATION_SECONDS", 0.05)
    sim = Simulation()
    sim.create(cluster(nodes=4, gpus=4))
    sim.create([claim("slow", SLOW), claiming_pod("slow-pod", "slow", priority=1000)])
    names = behind(sim)
    sim.run()
    assert all(sim.pod(name).spec.node_name for name in names)
    slow = sim.pod("slow-pod")
    assert not slow.spec.node_name
    condition = scheduled(slow)
    assert condition.status == "False"
    assert "CEL runtime error: operation cancelled: evaluation time limit exceeded (0.05s)" in condition.message
    assert "claim default/slow" in condition.message


def test_filter_timeout_bounds_each_attempt_of_a_pod_whose_selector_is_slow_on_every_device(monkeypatch):
    # each evaluation (a distinct device each, a few readings of the step clock) stays under the per-evaluation limit; together they
    # take longer than filterTimeout, which cuts each attempt: every node answers that it timed out, the
    # pods behind it bind, and the pod itself binds once its retries have judged every device
    monkeypatch.setattr("kubesched.core.cel.evaluator.MAX_EVALUATION_SECONDS", 10.0)
    sim = Simulation({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                      "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
                          {"name": "DynamicResources", "args": {"filterTimeout": "250ms"}}]}]})
    sim.create(cluster(nodes=4, gpus=4))
    slowish = f"device.attributes['{DRIVER}'].serial != '' && {nested_all(2, 10)}"
    sim.create([claim("slowish", slowish), claiming_pod("slowish-pod", "slowish", priority=1000)])
    names = behind(sim)
    sim.run_for(4 * 3600)  # a pod that timed out is retried after podMaxInUnschedulablePodsDuration (5 min)
    timed_out = [e for e in sim.events("FailedScheduling") if e.involved_object.name == "slowish-pod"]
    assert timed_out and "4 timed out trying to allocate devices" in timed_out[0].message
    bound_at = {e.involved_object.name: e.last_timestamp for e in sim.events("Scheduled")}
    assert set(names) <= set(bound_at)
    assert sim.pod("slowish-pod").spec.node_name
    assert bound_at["slowish-pod"] > max(bound_at[name] for name in names)  # after retries, not ahead of them
