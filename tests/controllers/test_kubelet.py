"""The simulated kubelet: bound pods start (Running, Ready, startTime) after the start delay and Succeed after
their kubesched.io/run-duration, releasing what they held."""

from __future__ import annotations

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import Invalid
from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node, pod


def timed(name, duration, cpu="1"):
    return from_manifest({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": name, "annotations": {"kubesched.io/run-duration": duration}},
                          "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})


def conditions(p):
    return {c.type: c.status for c in p.status.conditions}


def test_a_bound_pod_is_running_and_ready_with_its_start_time():
    sim = Simulation()
    sim.create([node("n1"), pod("web", cpu="100m")])
    sim.run()
    web = sim.pod("web")
    assert web.status.phase == "Running" and web.status.start_time == DEFAULT_START
    assert conditions(web) == {"PodScheduled": "True", "PodReadyToStartContainers": "True", "Initialized": "True",
                               "ContainersReady": "True", "Ready": "True"}


def test_the_start_delay_is_simulated_time():
    sim = Simulation(controller_options={"kubelet": {"startDelay": "30s"}})
    sim.create([node("n1"), pod("web", cpu="100m")])
    sim.run_for(29)
    assert sim.pod("web").spec.node_name == "n1" and sim.pod("web").status.phase == ""
    sim.run()
    assert sim.pod("web").status.start_time == DEFAULT_START + 30


def test_a_pod_with_a_run_duration_succeeds_and_its_capacity_lets_a_pending_pod_in():
    sim = Simulation()
    sim.create([node("n1", cpu="1"), timed("first", "10m")])
    sim.run_for(1)
    sim.create([pod("second", cpu="1")])
    sim.run_for(60)
    assert sim.pod("second").spec.node_name == ""
    sim.run()
    first = sim.pod("first")
    assert first.status.phase == "Succeeded"
    assert conditions(first)["Ready"] == "False"
    assert next(c for c in first.status.conditions if c.type == "Ready").reason == "PodCompleted"
    assert sim.pod("second").spec.node_name == "n1"


def test_a_run_duration_that_is_not_a_duration_is_refused():
    with pytest.raises(Invalid, match=r"metadata.annotations\[kubesched.io/run-duration\]: Invalid value: \"soon\""):
        Simulation().create([timed("bad", "soon")])
