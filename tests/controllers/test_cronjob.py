"""The cronjob-controller (upstream pkg/controller/cronjob/cronjob_controllerv2_test.go: a Job per schedule time
named <cronjob>-<minutes>, concurrencyPolicy Forbid and Replace, suspend; utils_test.go: the schedule times)."""

from __future__ import annotations

from kubesched.core.api import from_manifest
from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node

from .workloads import template


def cron(policy="Allow", duration="2m", **spec):
    pod = template({}, "100m", {"kubesched.io/run-duration": duration}, restartPolicy="Never")
    return from_manifest({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                          "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": policy,
                                   "jobTemplate": {"spec": {"template": pod}}, **spec}})


def jobs(sim):
    return sorted(job.metadata.name for job in sim.cluster.list("Job").items)


def test_a_job_per_schedule_time_in_simulated_time_named_by_its_minute():
    sim = Simulation()
    sim.create([node("n1"), cron()])
    sim.run(until=DEFAULT_START + 11 * 60)
    minute = int(DEFAULT_START // 60)
    assert jobs(sim) == [f"tick-{minute + 5}", f"tick-{minute + 10}"]
    job = sim.get("Job", f"default/tick-{minute + 5}")
    assert job.metadata.owner_references[0].kind == "CronJob"
    assert job.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-01-01T00:05:00Z"
    assert sim.get("CronJob", "default/tick").status["lastScheduleTime"] == "2026-01-01T00:10:00Z"


def test_without_an_end_time_the_simulation_does_not_run_on_for_future_times():
    sim = Simulation()
    sim.create([node("n1"), cron()])
    sim.run()
    assert jobs(sim) == []


def test_forbid_skips_a_time_while_a_job_is_active_and_replace_deletes_it():
    minute = int(DEFAULT_START // 60)
    sim = Simulation()
    sim.create([node("n1"), cron("Forbid", duration="7m")])
    sim.run(until=DEFAULT_START + 11 * 60)
    assert jobs(sim) == [f"tick-{minute + 5}"]
    sim = Simulation()
    sim.create([node("n1"), cron("Replace", duration="7m")])
    sim.run(until=DEFAULT_START + 11 * 60)
    assert jobs(sim) == [f"tick-{minute + 10}"]


def test_a_suspended_cronjob_creates_nothing():
    sim = Simulation()
    sim.create([node("n1"), cron(suspend=True)])
    sim.run(until=DEFAULT_START + 11 * 60)
    assert jobs(sim) == []
