"""NominatedNodeNameForExpectation (KEP-5278, beta and on since 1.35): a binding cycle with PreBind work
(PreBindPreFlight: DynamicResources for a pod with claims, VolumeBinding for unbound volumes) first writes
``status.nominatedNodeName``, so an autoscaler or Kueue watching the pod sees where it is going; a pod
without such work is bound without it; 1.34 never writes it."""

from __future__ import annotations

import pytest

from kubesched.core.features import FeatureGates
from kubesched.drivers.simulation import Simulation
from kubesched.testing import device, device_class, node, pod, resource_claim_template, resource_slice

ONE_GPU = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def nominations_seen(release: str, *pods) -> dict[str, list[str]]:
    """pod name -> the nominatedNodeName values its updates carried while it was not bound yet."""
    sim = Simulation(features=FeatureGates(release))
    seen: dict[str, list[str]] = {}

    def watch(event) -> None:
        obj = event.obj
        if not obj.spec.node_name and obj.status.nominated_node_name:
            seen.setdefault(obj.metadata.name, []).append(obj.status.nominated_node_name)

    sim.cluster.watch("Pod", sim.cluster.resource_version(), watch)
    sim.create([device_class(), resource_claim_template("one-gpu"), node("n1"), resource_slice("n1", [device("gpu-0")]),
                *pods])
    sim.run()
    assert all(p.spec.node_name == "n1" for p in sim.pods())
    return seen


@pytest.mark.parametrize("release, published", [("1.37", True), ("1.35", True), ("1.34", False)])
def test_a_pod_with_prebind_work_is_nominated_before_it_is_bound(release, published):
    seen = nominations_seen(release, pod("gpu-user", cpu="1", resourceClaims=ONE_GPU), pod("plain", cpu="1"))
    assert seen.get("gpu-user") == (["n1"] if published else None)
    assert "plain" not in seen  # no PreBind work, no Permit wait: bound at once, never nominated
