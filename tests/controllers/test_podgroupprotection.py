"""The PodGroup protection finalizer: stamped by the API server, lifted by the controller when no active pod names
the group (upstream's PodGroupProtection admission plugin and podgroup-protection-controller)."""

from __future__ import annotations

import attrs

from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_PROTECTION_FINALIZER
from kubesched.core.cluster.client import NotFound
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod, pod_group


def run(*objects):
    sim = Simulation()
    sim.create(list(objects))
    sim.run()
    return sim


def group_or_none(sim):
    try:
        return sim.cluster.get("PodGroup", "g", "default")
    except NotFound:
        return None


def test_a_new_pod_group_carries_the_finalizer_and_without_pods_is_deleted_at_once():
    sim = run(pod_group("g", 2))
    assert POD_GROUP_PROTECTION_FINALIZER in group_or_none(sim).metadata.finalizers
    sim.cluster.delete("PodGroup", "g", "default")
    sim.run()
    assert group_or_none(sim) is None


def test_a_pod_group_whose_gang_is_pending_stays_until_its_pods_are_gone():
    sim = run(node("n1", cpu="1"), pod_group("g", 2), pod("p0", cpu="1", pod_group="g"), pod("p1", cpu="1", pod_group="g"))
    assert not sim.pod("p0").spec.node_name  # the gang does not fit: both wait
    sim.cluster.delete("PodGroup", "g", "default")
    sim.run()
    assert group_or_none(sim).metadata.deletion_timestamp is not None  # marked, kept for its pending members
    sim.cluster.delete("Pod", "p0", "default")
    sim.run()
    assert group_or_none(sim) is not None
    sim.cluster.delete("Pod", "p1", "default")
    sim.run()
    assert group_or_none(sim) is None


def test_running_members_keep_it_until_the_last_one_finishes():
    sim = run(node("n1", cpu="4"), pod_group("g", 2), pod("p0", cpu="1", pod_group="g"), pod("p1", cpu="1", pod_group="g"))
    assert sim.pod("p0").spec.node_name == sim.pod("p1").spec.node_name == "n1"
    sim.cluster.delete("PodGroup", "g", "default")
    for name, remaining in (("p0", True), ("p1", False)):
        running = sim.pod(name)
        sim.cluster.update_status(attrs.evolve(running, status=attrs.evolve(running.status, phase="Succeeded")))
        sim.run()
        assert (group_or_none(sim) is not None) is remaining
