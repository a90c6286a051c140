"""kube-scheduler's metrics, updated by the scheduler (process-wide, so tests compare before and after)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from kubesched.core.framework.runtime import Framework
from kubesched.core.framework.status import Code, Status
from kubesched.core.framework.timing import extension_point, no_status
from kubesched.core.observability import metrics
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_attempts_bindings_and_queue_gauges_follow_the_scheduler():
    before = {result: sample("scheduler_schedule_attempts_total", result=result, profile="default-scheduler")
              for result in ("scheduled", "unschedulable")}
    bound_before = sample("scheduler_pod_scheduling_attempts_count")
    sim = Simulation()
    sim.create([node("n1", cpu="2"), pod("a", cpu="1"), pod("b", cpu="1"), pod("big", cpu="4")])
    sim.run()
    assert sample("scheduler_schedule_attempts_total", result="scheduled",
                  profile="default-scheduler") - before["scheduled"] == 2
    assert sample("scheduler_schedule_attempts_total", result="unschedulable",
                  profile="default-scheduler") - before["unschedulable"] >= 1
    assert sample("scheduler_pod_scheduling_attempts_count") - bound_before == 2
    assert sample("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled",
                  profile="default-scheduler") >= 2
    metrics.refresh(sim.scheduler)
    assert sample("scheduler_pending_pods", queue="unschedulable") == 1
    assert sample("scheduler_pending_pods", queue="active") == 0
    assert sample("scheduler_cache_size", type="nodes") == 1
    assert sample("scheduler_cache_size", type="pods") == 2
    # upstream's name since 1.33; the old doubled name is gone, as upstream removed it
    assert REGISTRY.get_sample_value("scheduler_scheduler_cache_size", {"type": "nodes"}) is None
    assert sample("scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="default-scheduler") == 1
    sim.cluster.delete("Pod", "big", "default")
    sim.run()
    metrics.refresh(sim.scheduler)
    assert sample("scheduler_pending_pods", queue="unschedulable") == 0
    assert sample("scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile="default-scheduler") == 0


def test_attempts_label_caps_at_16():
    assert [metrics.attempts_label(n) for n in (1, 15, 16, 40)] == ["1", "15", "16+", "16+"]


def test_preemption_attempts_and_victims_are_counted():
    attempts = sample("scheduler_preemption_attempts_total")
    victims = sample("scheduler_preemption_victims_sum")
    sim = Simulation()
    sim.create([node("n1", cpu="2"), pod("low-1", cpu="1", priority=1), pod("low-2", cpu="1", priority=1)])
    sim.run()
    sim.create([pod("urgent", cpu="2", priority=100)])
    sim.run()
    assert sim.pod("urgent").spec.node_name == "n1"
    assert sample("scheduler_preemption_attempts_total") - attempts == 1
    assert sample("scheduler_preemption_victims_sum") - victims == 2


def test_framework_queue_and_event_metrics_carry_upstreams_names_labels_and_buckets(monkeypatch):
    from kubesched.core.framework import cycle_state

    profile = "default-scheduler"
    before = {
        "evaluated": sample("scheduler_plugin_evaluation_total", plugin="NodeResourcesFit", extension_point="Filter",
                            profile=profile),
        "prefilter": sample("scheduler_framework_extension_point_duration_seconds_count",
                            extension_point="PreFilter", status="Success", profile=profile),
        "plugin": sample("scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                         extension_point="Filter", status="Success"),
        "added": sample("scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd"),
        "failed": sample("scheduler_queue_incoming_pods_total", queue="unschedulable",
                         event="ScheduleAttemptFailure"),
        "nodes": sample("scheduler_event_handling_duration_seconds_count", event="NodeAdd"),
    }
    monkeypatch.setattr(cycle_state, "_SAMPLE", lambda: 0.0)  # every cycle sampled: each plugin call timed
    sim = Simulation()
    sim.create([node("n1", cpu="2"), node("n2", cpu="2"), pod("a", cpu="1"), pod("big", cpu="4")])
    sim.run()
    # Filter is counted per node judged: both pods were judged on both nodes
    assert sample("scheduler_plugin_evaluation_total", plugin="NodeResourcesFit", extension_point="Filter",
                  profile=profile) - before["evaluated"] == 4
    assert sample("scheduler_framework_extension_point_duration_seconds_count", extension_point="PreFilter",
                  status="Success", profile=profile) - before["prefilter"] == 2
    assert sample("scheduler_framework_extension_point_duration_seconds_bucket", extension_point="PreFilter",
                  status="Success", profile=profile, le="0.2048") >= 2  # upstream's last bucket: 0.1ms x 2^11
    assert sample("scheduler_plugin_execution_duration_seconds_count", plugin="NodeResourcesFit",
                  extension_point="Filter", status="Success") - before["plugin"] >= 1
    assert sample("scheduler_queue_incoming_pods_total", queue="active", event="UnscheduledPodAdd") \
        - before["added"] == 2
    assert sample("scheduler_queue_incoming_pods_total", queue="unschedulable", event="ScheduleAttemptFailure") \
        - before["failed"] == 1
    assert sample("scheduler_event_handling_duration_seconds_count", event="NodeAdd") - before["nodes"] == 2


class _Points:
    """What :func:`extension_point` needs of a framework: the profile and its series lookups."""

    profile_name = "timing-table"
    _point_observer = Framework._point_observer

    def __init__(self):
        self._point_series, self._point_success = {}, {}

    @extension_point("Reserve")
    def run_reserve(self, state, pod, node_name, start=0):
        """Reserve."""
        if state == "boom":
            raise RuntimeError("boom")
        return None if state == "ok" else Status(Code.UNSCHEDULABLE, (f"{pod} {node_name} {start}",))

    @extension_point("Unreserve", no_status)
    def run_unreserve(self, state, *pods, **more):
        return (state, pods, more)

    @extension_point("Permit", lambda answer: answer[0])
    def run_permit(self, state, pod, node_name):
        return (Status(Code.WAIT) if state == "wait" else None, pod)


@pytest.mark.parametrize("call, point, status, answer", [
    (lambda p: p.run_reserve("ok", "p", "n1"), "Reserve", "Success", None),
    (lambda p: p.run_reserve("no", "p", node_name="n1", start=2).reasons, "Reserve", "Unschedulable", ("p n1 2",)),
    (lambda p: p.run_unreserve("s", "a", "b", k=1), "Unreserve", "Success", ("s", ("a", "b"), {"k": 1})),
    (lambda p: p.run_permit("wait", "p", "n1")[1], "Permit", "Wait", "p"),
    (lambda p: p.run_permit(pod="p", node_name="n1", state="go"), "Permit", "Success", (None, "p")),
    (lambda p: p.run_reserve("boom", "p", "n1"), "Reserve", "Error", RuntimeError),
])
def test_every_run_of_an_extension_point_is_observed_once_with_its_status(call, point, status, answer):
    labels = {"extension_point": point, "status": status, "profile": _Points.profile_name}
    before = sample("scheduler_framework_extension_point_duration_seconds_count", **labels)
    points = _Points()
    if answer is RuntimeError:
        with pytest.raises(RuntimeError, match="boom"):
            call(points)
    else:
        assert call(points) == answer
    assert sample("scheduler_framework_extension_point_duration_seconds_count", **labels) - before == 1
    assert _Points.run_reserve.__doc__ == "Reserve." and _Points.run_reserve.__name__ == "run_reserve"
