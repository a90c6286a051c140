"""SchedulingGates: pods with spec.schedulingGates wait outside activeQ until the gates are gone."""

from __future__ import annotations

import attrs

from kubesched.core.api.core_v1 import PodSchedulingGate
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import UNSCHEDULED_POD, ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.testing import node, pod

from .helpers import condition, make, simulate


def with_gates(p, *gates: str):
    return attrs.evolve(p, spec=attrs.evolve(p.spec, scheduling_gates=tuple(PodSchedulingGate(g) for g in gates)))


def test_pod_without_gates_passes():
    assert make(SchedulingGates).pre_enqueue(pod("p")) is None


def test_gated_pod_is_held_with_the_gate_names():
    status = make(SchedulingGates).pre_enqueue(pod("p", scheduling_gates=["example.com/quota", "example.com/review"]))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # upstream formats the Go string slice with %v: "[a b]"
    assert status.reasons == ("waiting for scheduling gates: [example.com/quota example.com/review]",)


def test_registers_only_the_gates_eliminated_update_of_unscheduled_pods():
    (registered,) = make(SchedulingGates).events_to_register()
    assert registered.event == ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


def test_hint_queues_only_the_pod_itself_once_its_gates_are_gone():
    plugin = make(SchedulingGates)
    (registered,) = plugin.events_to_register()
    hint = registered.hint
    gated = pod("p", scheduling_gates=["g"])
    gated = attrs.evolve(gated, metadata=attrs.evolve(gated.metadata, uid="uid-p"))
    released = with_gates(gated)
    other = attrs.evolve(released, metadata=attrs.evolve(released.metadata, uid="uid-other"))
    assert hint(gated, gated, released) == QueueingHint.QUEUE
    assert hint(gated, gated, with_gates(gated, "g2")) == QueueingHint.QUEUE_SKIP
    assert hint(gated, other, other) == QueueingHint.QUEUE_SKIP


# --- end to end ----------------------------------------------------------------------------


def test_gated_pod_stays_pending_without_a_scheduling_attempt():
    sim = simulate([node("n1"), pod("gated", cpu="100m", scheduling_gates=["example.com/wait"]), pod("free", cpu="100m")])
    assert sim.placements() == {"default/free": "n1", "default/gated": ""}
    cond = condition(sim, "gated")
    assert (cond.status, cond.reason) == ("False", "SchedulingGated")
    assert sim.events("FailedScheduling") == []
    assert sim.scheduler.stats.cycles == 1  # only "free" was ever tried
    assert sim.scheduler.queue.pending_counts()["gated"] == 1


def test_pod_is_scheduled_once_every_gate_is_removed():
    sim = simulate([node("n1"), pod("p", cpu="100m", scheduling_gates=["a", "b"])])
    assert sim.placements() == {"default/p": ""}

    # removing one gate of two: still gated
    sim.cluster.update(with_gates(sim.pod("p"), "b"))
    sim.run()
    assert sim.placements() == {"default/p": ""}
    assert sim.scheduler.stats.cycles == 0

    # removing the last gate releases it
    sim.cluster.update(with_gates(sim.pod("p")))
    sim.run()
    assert sim.placements() == {"default/p": "n1"}
    cond = condition(sim, "p")
    assert cond.status == "True"
    assert [e.message for e in sim.events("Scheduled")] == ["Successfully assigned default/p to n1"]


def test_released_pod_that_does_not_fit_reports_the_filter_reason():
    sim = simulate([node("n1", cpu="1"), pod("p", cpu="2", scheduling_gates=["a"])])
    sim.cluster.update(with_gates(sim.pod("p")))
    sim.run()
    assert sim.placements() == {"default/p": ""}
    cond = condition(sim, "p")
    assert (cond.reason, cond.message) == ("Unschedulable", "0/1 nodes are available: 1 Insufficient cpu. "
                                                            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
