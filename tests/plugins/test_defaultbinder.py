"""DefaultBinder: binds the pod through the API (pods/binding); an API error fails the binding cycle."""

from __future__ import annotations

from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import ApiError
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.testing import node, pod

from .helpers import bench, condition, make, simulate


def binder_on(*objects):
    """DefaultBinder on a real handle over a cluster (clock at 100 s) holding
    ``objects``: (the binder, the cluster, the stored pod ``p``)."""
    binder = make(DefaultBinder, objects=objects, clock=FakeClock(100.0))
    cluster = bench(binder).cluster
    return binder, cluster, cluster.get("Pod", "p", "default")


def test_bind_sets_the_node_and_the_scheduled_condition():
    binder, cluster, p = binder_on(node("n1"), pod("p"))
    assert binder.bind(CycleState(), p, "n1") is None
    bound = cluster.get("Pod", "p", "default")
    assert bound.spec.node_name == "n1"
    (cond,) = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert (cond.status, cond.last_transition_time) == ("True", 100.0)


def test_bind_error_is_an_error_status():
    plugin, _, p = binder_on(node("n1"), pod("p"))
    assert plugin.bind(CycleState(), p, "n1") is None
    # binding again: the API refuses (already assigned) and the plugin reports Error
    status = plugin.bind(CycleState(), p, "n1")
    assert status.code == Code.ERROR
    assert status.reasons == ('Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"',)
    assert isinstance(status.error, ApiError)


def test_bind_of_a_deleted_pod_fails():
    binder, cluster, p = binder_on(node("n1"), pod("p"))
    cluster.delete("Pod", "p", "default")
    status = binder.bind(CycleState(), p, "n1")
    assert status.code == Code.ERROR and status.reasons == ('Pod "p" not found',)


def test_bind_of_a_recreated_pod_is_refused_by_uid():
    binder, cluster, old = binder_on(node("n1"), pod("p"))
    cluster.delete("Pod", "p", "default")
    cluster.create(pod("p"))
    status = binder.bind(CycleState(), old, "n1")
    assert status.code == Code.ERROR and "the UID in the precondition" in status.message()
    assert cluster.get("Pod", "p", "default").spec.node_name == ""


# --- end to end ----------------------------------------------------------------------------


def test_scheduled_event_and_condition():
    sim = simulate([node("n1"), pod("p", cpu="1")])
    assert sim.placements() == {"default/p": "n1"}
    (event,) = sim.events("Scheduled")
    assert (event.type, event.message) == ("Normal", "Successfully assigned default/p to n1")
    assert condition(sim, "p").status == "True"
    assert sim.events("FailedScheduling") == []


def test_failed_bind_is_reported_and_retried():
    sim = Simulation()
    binds = []

    def fail_first_bind(verb, kind, target):
        if verb == "bind":
            binds.append(target)
            if len(binds) == 1:
                raise ApiError("etcdserver: request timed out")

    sim.cluster.fail_hook = fail_first_bind
    sim.create([node("n1"), pod("p", cpu="1")])
    sim.run()
    assert binds == ["default/p", "default/p"]
    (failed,) = sim.events("FailedScheduling")
    assert failed.type == "Warning"
    assert "DefaultBinder" in failed.message and failed.message.endswith("etcdserver: request timed out")
    assert sim.placements() == {"default/p": "n1"}
    assert condition(sim, "p").status == "True"
    # the retry came after the 1 s initial backoff, cut to its 1 s window and waited out (SchedulerPopFromBackoffQ:
    # a pod backing off after an error is never popped early)
    (scheduled,) = sim.events("Scheduled")
    assert scheduled.last_timestamp - failed.last_timestamp == 2.0


def test_bind_keeps_failing_pod_stays_pending_with_scheduler_error():
    sim = Simulation()

    def always_fail(verb, kind, target):
        if verb == "bind":
            raise ApiError("internal error")

    sim.cluster.fail_hook = always_fail
    sim.create([node("n1"), pod("p", cpu="1")])
    sim.run_for(30)
    assert sim.placements() == {"default/p": ""}
    cond = condition(sim, "p")
    assert (cond.status, cond.reason) == ("False", "SchedulerError")
    assert cond.message.endswith("internal error")
    # the assumed pod was forgotten and the pod retried with backoff: once the API works, it binds
    assert sim.scheduler.cache.is_assumed(sim.pod("p")) is False
    sim.cluster.fail_hook = None
    sim.run_for(30)
    assert sim.placements() == {"default/p": "n1"}
