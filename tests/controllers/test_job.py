"""The job-controller (upstream pkg/controller/job/job_controller_test.go: TestControllerSyncJob's parallelism
and completions cases, Indexed Jobs' completion indexes (indexed_job_utils_test.go), backoff limit, suspend,
the finished conditions; the labels the API server and controller set)."""

from __future__ import annotations

import attrs

from kubesched.core.api import from_manifest
from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node

from .workloads import template


def job(name="train", duration="10m", cpu="1", **spec):
    annotations = {"kubesched.io/run-duration": duration} if duration else {}
    return from_manifest({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                          "spec": {"template": template({}, cpu, annotations, restartPolicy="Never"), **spec}})


def run(*objects, cpu="8", until=None):
    sim = Simulation()
    sim.create([node("n1", cpu=cpu), *objects])
    sim.run(until=None if until is None else DEFAULT_START + until)
    return sim


def pods_of(sim, name="train"):
    return [p for p in sim.pods() if p.metadata.labels.get("batch.kubernetes.io/job-name") == name]


def test_parallelism_pods_run_at_once_until_the_completions_succeed():
    sim = run(job(parallelism=2, completions=5), until=60)
    running = pods_of(sim)
    assert len(running) == 2
    stored = sim.get("Job", "default/train")
    for p in running:
        assert p.metadata.name.startswith("train-") and len(p.metadata.name) == len("train-") + 5
        assert p.metadata.labels["batch.kubernetes.io/controller-uid"] == stored.metadata.uid
        assert p.metadata.labels["controller-uid"] == stored.metadata.uid
        (ref,) = p.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.uid, ref.controller) == ("batch/v1", "Job", stored.metadata.uid, True)
    sim.run()
    assert len(pods_of(sim)) == 5 and all(p.status.phase == "Succeeded" for p in pods_of(sim))
    status = sim.get("Job", "default/train").status
    assert status["succeeded"] == 5 and "active" not in status
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert status["completionTime"] == "2026-01-01T00:30:00Z"  # three waves of ten minutes


def test_an_indexed_jobs_pods_carry_their_index_as_annotation_label_and_hostname():
    sim = run(job(parallelism=4, completions=4, completionMode="Indexed"), until=60)
    by_index = {p.metadata.annotations["batch.kubernetes.io/job-completion-index"]: p for p in pods_of(sim)}
    assert sorted(by_index) == ["0", "1", "2", "3"]
    for index, p in by_index.items():
        assert p.metadata.name.startswith(f"train-{index}-")
        assert p.metadata.labels["batch.kubernetes.io/job-completion-index"] == index
        assert p.spec.extra["hostname"] == f"train-{index}"
    sim.run()
    assert sim.get("Job", "default/train").status["completedIndexes"] == "0-3"


def test_a_work_queue_job_finishes_when_one_pod_succeeded_and_none_runs():
    sim = run(job(parallelism=3))
    status = sim.get("Job", "default/train").status
    assert status["succeeded"] == 3 and status["conditions"][-1]["type"] == "Complete"


def test_failed_pods_are_replaced_after_a_backoff_until_the_backoff_limit():
    sim = run(job(backoffLimit=1, duration=""), until=1)
    for attempt in range(2):
        (active,) = [p for p in pods_of(sim) if p.status.phase != "Failed"]
        sim.cluster.update_status(attrs.evolve(active, status=attrs.evolve(active.status, phase="Failed")))
        sim.run_for(5)
        if attempt == 0:
            assert len(pods_of(sim)) == 1  # the replacement waits 10 s
            sim.run_for(10)
            assert len(pods_of(sim)) == 2
    status = sim.get("Job", "default/train").status
    assert status["failed"] == 2
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]


def test_a_suspended_job_makes_no_pods():
    sim = run(job(suspend=True, parallelism=2))
    assert pods_of(sim) == []
    assert sim.get("Job", "default/train").status["conditions"][0]["type"] == "Suspended"


def test_a_finished_job_is_deleted_after_its_ttl():
    sim = run(job(ttlSecondsAfterFinished=60), until=601)
    assert sim.get("Job", "default/train").status["conditions"][-1]["type"] == "Complete"
    sim.run()
    assert sim.cluster.list("Job").items == [] and pods_of(sim) == []
