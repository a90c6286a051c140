"""Orphan adoption and release by selector (upstream PodControllerRefManager.ClaimPods), as each controller uses it.

Ports the semantics of pkg/controller/controller_ref_manager_test.go (TestClaimPods: an orphan the selector
matches is adopted, one it does not match is left, a pod another controller owns is left, an owned pod that no
longer matches is released, nothing is adopted while the owner is being deleted), of
pkg/controller/replicaset/replica_set_test.go (TestUpdateLabelsRemoveControllerRef: a pod whose labels stop
matching is released and replaced; TestDoNotAdoptOrCreateIfBeingDeleted; inactive pods are not claimed), of
pkg/controller/statefulset/stateful_set_test.go (TestGetPodsForStatefulSetAdopt / ...Release: only pods named
as the set's members are adopted) and of pkg/controller/job/job_controller_test.go (TestGetPodsForJob,
TestGetPodsForJobAdopt, TestGetPodsForJobNoAdoptIfBeingDeleted, TestGetPodsForJobRelease).
"""

from __future__ import annotations

import attrs

from kubesched.core.api import from_manifest
from kubesched.core.api.meta import OwnerReference
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

from .workloads import template, workload


def run(*objects, cpu="8"):
    sim = Simulation()
    sim.create([node("n1", cpu=cpu), *objects])
    sim.run()
    return sim


def controller(sim, name):
    refs = [r for r in sim.pod(name).metadata.owner_references if r.controller]
    return (refs[0].kind, refs[0].name, refs[0].block_owner_deletion) if refs else None


def owned_by(sim, kind, name):
    return sorted(p.metadata.name for p in sim.pods()
                  if any(r.controller and r.kind == kind and r.name == name for r in p.metadata.owner_references))


def test_a_replicaset_adopts_a_matching_orphan_and_counts_it():
    sim = run(pod("orphan", cpu="100m", labels={"app": "web"}), workload("ReplicaSet", "web", replicas=2))
    assert controller(sim, "orphan") == ("ReplicaSet", "web", True)
    assert len(owned_by(sim, "ReplicaSet", "web")) == 2  # the orphan and one new pod
    assert sim.get("ReplicaSet", "default/web").status["replicas"] == 2


def test_a_replicaset_leaves_other_pods_alone():
    """A pod the selector does not match stays an orphan; one another controller owns is never adopted."""
    theirs = pod("theirs", cpu="100m", labels={"app": "web"})
    theirs = attrs.evolve(theirs, metadata=attrs.evolve(theirs.metadata, owner_references=(OwnerReference(
        api_version="example.com/v1", kind="Trainer", name="t", uid="u-1", controller=True),)))
    sim = run(pod("stranger", cpu="100m", labels={"app": "db"}), theirs, workload("ReplicaSet", "web", replicas=1))
    assert controller(sim, "stranger") is None
    assert controller(sim, "theirs") == ("Trainer", "t", None)
    (mine,) = owned_by(sim, "ReplicaSet", "web")
    assert mine.startswith("web-")


def test_a_finished_orphan_is_not_claimed_by_a_replicaset():
    done = attrs.evolve(pod("done", cpu="100m", labels={"app": "web"}, node_name="n1"))
    done = attrs.evolve(done, status=attrs.evolve(done.status, phase="Succeeded"))
    sim = run(done, workload("ReplicaSet", "web", replicas=1))
    assert controller(sim, "done") is None and len(owned_by(sim, "ReplicaSet", "web")) == 1


def test_a_pod_whose_labels_stop_matching_is_released_and_replaced():
    sim = run(workload("ReplicaSet", "web", replicas=2))
    first = owned_by(sim, "ReplicaSet", "web")[0]
    stored = sim.pod(first)
    sim.cluster.update(attrs.evolve(stored, metadata=attrs.evolve(stored.metadata, labels={"app": "debug"})))
    sim.run()
    assert controller(sim, first) is None and sim.pod(first).metadata.owner_references == ()
    now = owned_by(sim, "ReplicaSet", "web")
    assert first not in now and len(now) == 2


def test_nothing_is_adopted_or_created_while_the_replicaset_is_being_deleted():
    rs = workload("ReplicaSet", "web", replicas=2)
    rs = attrs.evolve(rs, metadata=attrs.evolve(rs.metadata, finalizers=("example.com/hold",)))
    sim = Simulation()
    sim.create([node("n1", cpu="8"), rs])
    sim.cluster.delete("ReplicaSet", "web", "default")  # held by its finalizer: deletionTimestamp set
    sim.create([pod("orphan", cpu="100m", labels={"app": "web"})])
    sim.run()
    assert controller(sim, "orphan") is None and owned_by(sim, "ReplicaSet", "web") == []


def test_a_statefulset_adopts_only_pods_named_as_its_members():
    sim = run(pod("db-1", cpu="100m", labels={"app": "db"}), pod("other-0", cpu="100m", labels={"app": "db"}),
              workload("StatefulSet", "db", replicas=2, podManagementPolicy="Parallel"))
    assert controller(sim, "db-1") == ("StatefulSet", "db", True)
    assert controller(sim, "other-0") is None
    assert owned_by(sim, "StatefulSet", "db") == ["db-0", "db-1"]


def test_a_statefulset_releases_a_member_that_no_longer_matches():
    sim = run(workload("StatefulSet", "db", replicas=2, podManagementPolicy="Parallel"))
    stored = sim.pod("db-1")
    sim.cluster.update(attrs.evolve(stored, metadata=attrs.evolve(stored.metadata, labels={"app": "debug"})))
    sim.run()
    assert controller(sim, "db-1") is None


def manual_job(name="batch", **spec):
    body = {"manualSelector": True, "selector": {"matchLabels": {"app": name}},
            "template": template({"app": name}, "100m", {"kubesched.io/run-duration": "1m"}, restartPolicy="Never"),
            **spec}
    return from_manifest({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body})


def test_a_job_adopts_matching_orphans_finished_ones_included():
    done = pod("done", cpu="100m", labels={"app": "batch"}, node_name="n1")
    done = attrs.evolve(done, status=attrs.evolve(done.status, phase="Succeeded"))
    running = pod("running", cpu="100m", labels={"app": "batch"})
    running = attrs.evolve(running, metadata=attrs.evolve(running.metadata,
                                                          annotations={"kubesched.io/run-duration": "1m"}))
    sim = run(done, running, manual_job(completions=3, parallelism=3))
    assert controller(sim, "done") == ("Job", "batch", True) and controller(sim, "running") == ("Job", "batch", True)
    status = sim.get("Job", "default/batch").status
    assert status["succeeded"] == 3 and len(owned_by(sim, "Job", "batch")) == 3  # the adopted two, one new


def test_a_job_being_deleted_adopts_nothing():
    job = manual_job(completions=1)
    job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, finalizers=("example.com/hold",)))
    sim = Simulation()
    sim.create([node("n1", cpu="8"), job])
    sim.cluster.delete("Job", "batch", "default")
    sim.create([pod("orphan", cpu="100m", labels={"app": "batch"})])
    sim.run()
    assert controller(sim, "orphan") is None


def test_a_job_releases_a_pod_that_no_longer_matches():
    sim = Simulation()
    sim.create([node("n1", cpu="8"), manual_job(completions=1)])
    sim.run_for(10)
    (first,) = owned_by(sim, "Job", "batch")
    stored = sim.pod(first)
    sim.cluster.update(attrs.evolve(stored, metadata=attrs.evolve(stored.metadata, labels={"app": "other"})))
    sim.run()
    assert controller(sim, first) is None
    assert sim.get("Job", "default/batch").status["succeeded"] == 1  # a replacement ran
