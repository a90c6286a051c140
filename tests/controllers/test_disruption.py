"""The disruption controller: PodDisruptionBudget status on the embedded cluster."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.meta import OwnerReference
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod


def budget(name="db", selector=None, **spec):
    body = {"selector": {"matchLabels": {"app": "db"}} if selector is None else selector, **spec}
    return from_manifest({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": name, "namespace": "default"}, "spec": body})


def db(name, node_name="n1", owner=None, **kwargs):
    p = pod(name, cpu="100m", node_name=node_name, labels={"app": "db"}, **kwargs)
    if owner is not None:
        ref = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=owner, uid=f"uid-{owner}", controller=True)
        p = attrs.evolve(p, metadata=attrs.evolve(p.metadata, owner_references=(ref,)))
    return p


def run(*objects):
    sim = Simulation()
    sim.create([node("n1"), *objects])
    sim.run()
    return sim


def status(sim, name="db"):
    return sim.get("PodDisruptionBudget", f"default/{name}").status


def test_min_available_counts_the_matching_running_pods():
    sim = run(budget(minAvailable=2), db("a"), db("b"), db("c"), pod("other", node_name="n1"))
    s = status(sim)
    assert (s.expected_pods, s.current_healthy, s.desired_healthy, s.disruptions_allowed) == (3, 3, 2, 1)
    (cond,) = s.conditions
    assert (cond.type, cond.status, cond.reason) == ("DisruptionAllowed", "True", "SufficientPods")


def test_status_follows_pods_coming_and_going():
    sim = run(budget(minAvailable=2), db("a"), db("b"))
    assert status(sim).disruptions_allowed == 0
    assert status(sim).conditions[0].reason == "InsufficientPods"
    sim.create([db("c")])
    sim.run()
    assert status(sim).disruptions_allowed == 1
    sim.cluster.delete("Pod", "a", "default")
    sim.run()
    assert (status(sim).current_healthy, status(sim).disruptions_allowed) == (2, 0)


@pytest.mark.parametrize("kwargs", [
    {"pending": True}, {"phase": "Succeeded"}, {"ready": "False"}, {"terminating": True},
])
def test_only_running_pods_are_healthy(kwargs):
    odd = db("odd", node_name="" if kwargs.get("pending") else "n1")
    if "phase" in kwargs:
        odd = attrs.evolve(odd, status=attrs.evolve(odd.status, phase=kwargs["phase"]))
    if "ready" in kwargs:
        odd = from_manifest({**_manifest(odd), "status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    if kwargs.get("terminating"):
        odd = attrs.evolve(odd, metadata=attrs.evolve(odd.metadata, finalizers=("example.com/hold",)))
    sim = Simulation()
    sim.create([budget(minAvailable=1), db("a"), odd])
    if kwargs.get("terminating"):
        sim.cluster.delete("Pod", "odd", "default")
    sim.run()
    s = status(sim)
    assert (s.expected_pods, s.current_healthy, s.disruptions_allowed) == (2, 1, 0)


def _manifest(obj):
    from kubesched.core.api import to_manifest

    return to_manifest(obj)


def test_max_unavailable_uses_the_controllers_scale_which_preemption_does_not_shrink():
    sim = run(budget(maxUnavailable=1), db("a", owner="rs"), db("b", owner="rs"), db("c", owner="rs"))
    s = status(sim)
    assert (s.expected_pods, s.desired_healthy, s.disruptions_allowed) == (3, 2, 1)
    sim.cluster.delete("Pod", "a", "default")
    sim.run()
    # the ReplicaSet still wants 3: one is already missing, so no further disruption is allowed
    s = status(sim)
    assert (s.expected_pods, s.current_healthy, s.disruptions_allowed) == (3, 2, 0)


def test_percentages_round_up_and_unmanaged_pods_do_not_count():
    sim = run(budget(minAvailable="50%"), db("a", owner="rs"), db("b", owner="rs"), db("c", owner="rs"),
              db("bare"))
    s = status(sim)
    # 50% of 3 rounded up is 2; four pods are healthy
    assert (s.expected_pods, s.desired_healthy, s.current_healthy, s.disruptions_allowed) == (3, 2, 4, 2)
    assert any(e.reason == "UnmanagedPods" for e in sim.events())


def test_a_budget_matching_nothing_allows_nothing():
    sim = run(budget(minAvailable=0, selector={"matchLabels": {"app": "none"}}), db("a"))
    s = status(sim)
    assert (s.expected_pods, s.disruptions_allowed) == (0, 0)
    assert [e.reason for e in sim.events() if e.involved_object.kind == "PodDisruptionBudget"] == ["NoPods"]


def test_recorded_disruptions_keep_pods_out_of_the_healthy_count_until_they_time_out():
    pdb = budget(minAvailable=1)
    pdb = attrs.evolve(pdb, status=attrs.evolve(pdb.status, disrupted_pods={"a": "2026-01-01T00:00:00Z"}))
    sim = Simulation()
    sim.create([node("n1"), pdb, db("a"), db("b")])
    sim.run_for(60)
    assert (status(sim).current_healthy, status(sim).disruptions_allowed) == (1, 0)
    assert status(sim).disrupted_pods == {"a": "2026-01-01T00:00:00Z"}
    sim.run_for(61)
    assert (status(sim).current_healthy, status(sim).disruptions_allowed) == (2, 1)
    assert status(sim).disrupted_pods == {}


def test_bad_budgets_are_refused_naming_the_field():
    from kubesched.core.api import ManifestError

    with pytest.raises(ManifestError, match="minAvailable and maxUnavailable cannot be both set"):
        budget(minAvailable=1, maxUnavailable=1)
    with pytest.raises(ManifestError, match="maxUnavailable: invalid value for IntOrString"):
        budget(maxUnavailable="lots")
