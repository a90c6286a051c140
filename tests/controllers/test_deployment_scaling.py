"""Deployment proportional scaling and pause (upstream pkg/controller/deployment/sync_test.go TestScale's
"proportional scaling" and "leftover distribution" cases, with its newDeployment defaults maxSurge 0 and
maxUnavailable 0; TestDeploymentController's paused cases: a paused Deployment scales but does not roll out,
condition Progressing Unknown DeploymentPaused, then DeploymentResumed)."""

from __future__ import annotations

import attrs
import pytest

from kubesched.controllers.deployment import DESIRED_REPLICAS, MAX_REPLICAS, proportions
from kubesched.core.api.meta import evolve_meta
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node

from .workloads import workload

ZERO_SURGE = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}


def deployment(replicas, **spec):
    return workload("Deployment", "foo", replicas=replicas, strategy=ZERO_SURGE, **spec)


def rs(name, replicas, created, scaled_for):
    """A ReplicaSet of ``replicas`` created at ``created``, scaled for a Deployment of ``scaled_for`` replicas."""
    made = attrs.evolve(workload("ReplicaSet", name, replicas=replicas))
    return evolve_meta(made, creation_timestamp=created, annotations={
        DESIRED_REPLICAS: str(scaled_for), MAX_REPLICAS: str(scaled_for)})


@pytest.mark.parametrize("before, after, sets, expected", [
    (5, 10, [("foo-v2", 2, 2), ("foo-v1", 3, 1)], {"foo-v2": 4, "foo-v1": 6}),
    (5, 3, [("foo-v2", 2, 2), ("foo-v1", 3, 1)], {"foo-v2": 1, "foo-v1": 2}),
    (9, 4, [("foo-v2", 8, 2), ("foo-v1", 1, 1)], {"foo-v2": 4, "foo-v1": 0}),
    (7, 10, [("foo-v3", 2, 3), ("foo-v2", 3, 2), ("foo-v1", 2, 1)], {"foo-v3": 3, "foo-v2": 4, "foo-v1": 3}),
    (13, 8, [("foo-v3", 2, 3), ("foo-v2", 8, 2), ("foo-v1", 3, 1)], {"foo-v3": 1, "foo-v2": 5, "foo-v1": 2}),
    (3, 4, [("foo-v3", 1, 3), ("foo-v2", 1, 2), ("foo-v1", 1, 1)], {"foo-v3": 2, "foo-v2": 1, "foo-v1": 1}),
    (3, 2, [("foo-v3", 1, 3), ("foo-v2", 1, 2), ("foo-v1", 1, 1)], {"foo-v3": 1, "foo-v2": 1, "foo-v1": 0}),
])
def test_scale_shares_the_change_in_proportion(before, after, sets, expected):
    active = [rs(name, replicas, created, before) for name, replicas, created in sets]
    assert proportions(deployment(after), active) == expected


def started(dep):
    sim = Simulation(controller_options={"kubelet": {"startDelay": "30s"}})
    sim.create([node("n1", cpu="16"), dep])
    sim.run()
    return sim


def sizes(sim):
    return {r.metadata.annotations["deployment.kubernetes.io/revision"]: r.spec.replicas
            for r in sim.cluster.list("ReplicaSet").items}


def update(sim, **spec):
    stored = sim.get("Deployment", "default/foo")
    sim.cluster.update(attrs.evolve(stored, spec=attrs.evolve(stored.spec, **spec)))


def new_image(sim, image):
    template = sim.get("Deployment", "default/foo").spec.template
    containers = tuple(attrs.evolve(c, image=image) for c in template.spec.containers)
    return attrs.evolve(template, spec=attrs.evolve(template.spec, containers=containers))


def test_scaling_a_deployment_in_the_middle_of_a_rollout_scales_every_replicaset_in_proportion():
    dep = workload("Deployment", "foo", replicas=10,
                   strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}})
    sim = started(dep)
    update(sim, template=new_image(sim, "app:2"))
    sim.run_for(5)  # the new ReplicaSet surged, its pods not started yet: the rollout is stuck mid-way
    mid = sizes(sim)
    assert mid["2"] > 0 and mid["1"] > 0 and sum(mid.values()) == 13
    update(sim, replicas=20)
    sim.run_for(1)
    scaled = sizes(sim)
    assert sum(scaled.values()) == 23  # 20 + maxSurge 3, shared by both
    assert scaled["1"] > mid["1"] and scaled["2"] > mid["2"]
    for r in sim.cluster.list("ReplicaSet").items:
        assert r.metadata.annotations[DESIRED_REPLICAS] == "20" and r.metadata.annotations[MAX_REPLICAS] == "23"
    sim.run()
    assert sizes(sim) == {"1": 0, "2": 20}


def test_a_paused_deployment_scales_but_does_not_roll_out():
    created_paused = started(workload("Deployment", "bar", replicas=3, paused=True))
    assert created_paused.cluster.list("ReplicaSet").items == []  # nothing is created while paused
    sim = started(workload("Deployment", "foo", replicas=3))
    update(sim, paused=True)
    sim.run()
    (condition,) = sim.get("Deployment", "default/foo").status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
    update(sim, template=new_image(sim, "app:2"))
    sim.run()
    assert sizes(sim) == {"1": 3}  # no new ReplicaSet while paused
    update(sim, replicas=5)
    sim.run()
    assert sizes(sim) == {"1": 5}
    update(sim, paused=False)
    sim.run()
    assert sizes(sim) == {"1": 0, "2": 5}
    (condition,) = sim.get("Deployment", "default/foo").status["conditions"]
    assert (condition["reason"], condition["message"]) == ("DeploymentResumed", "Deployment is resumed")
