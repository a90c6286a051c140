"""GangScheduling: upstream's gangscheduling_test.go tables (TestPreEnqueue,
TestPlacementFeasible, the queueing-hint tests), on a real scheduler's handle."""

import pytest

from kubesched.core.features import FeatureGates
from kubesched.core.framework.podgroups import PlacementProgress, PodGroupInfo
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import QueueingHint
from kubesched.drivers.simulation import Simulation
from kubesched.plugins.gangscheduling import pod_added, pod_group_added, pod_group_updated
from kubesched.testing import node, pod, pod_group


def plugin_on(*objects):
    """GangScheduling of a started simulation holding ``objects`` (not scheduled), GenericWorkload on."""
    sim = Simulation(features=FeatureGates(overrides={"GenericWorkload": True}))
    sim.create(list(objects))
    sim.start()
    sim.harness.informers.pump()
    return sim.scheduler.profiles["default-scheduler"].plugins["GangScheduling"]


def reason(status):
    return None if status is None else status.reasons[0]


@pytest.mark.parametrize("objects, target, expected", [
    # non-gang pod succeeds immediately
    ([pod("p1")], pod("p1"), None),
    # basic policy pod succeeds immediately
    ([pod_group("pg3"), pod("p1", pod_group="pg3")], pod("p1", pod_group="pg3"), None),
    # gang pod fails PreEnqueue when pod group is not yet created
    ([pod("p1", pod_group="pg1")], pod("p1", pod_group="pg1"),
     'waiting for pods\'s pod group "pg1" to appear in scheduling queue'),
    # gang pod fails PreEnqueue when quorum is not met
    ([pod_group("pg1", 3), pod("p1", pod_group="pg1"), pod("p2", pod_group="pg1")], pod("p1", pod_group="pg1"),
     "waiting for minCount pods from a gang to appear in scheduling queue"),
    # gang pod passes PreEnqueue: 3 of 3 pods
    ([pod_group("pg1", 3), *(pod(f"p{i}", pod_group="pg1") for i in range(3))], pod("p0", pod_group="pg1"), None),
])
def test_pre_enqueue(objects, target, expected):
    gang = plugin_on(node("n0"), *objects)
    status = gang.pre_enqueue(target)
    assert reason(status) == expected
    if expected is not None:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize("name, min_count, scheduled, steps, codes", [
    ("all pods succeed, minCount met at end", 2, 0, [True, True], ["Wait", "Success"]),
    ("first pod fails, minCount not satisfiable", 2, 0, [False], ["Unschedulable"]),
    ("second pod fails", 2, 0, [True, False], ["Wait", "Unschedulable"]),
    ("non-gang with 0 scheduled pods fails", None, 0, [False], ["Unschedulable"]),
    ("non-gang succeeds once 1 pod is scheduled", None, 0, [True], ["Success"]),
    ("non-gang with 1 initially scheduled pod succeeds", None, 1, [False], ["Success"]),
    ("more than minCount pods, all succeed", 2, 0, [True, True, True], ["Wait", "Success", "Success"]),
    ("more than minCount pods, first fails", 2, 0, [False, True, True], ["Wait", "Wait", "Success"]),
    ("more than minCount pods, minCount not satisfiable", 2, 0, [False, False, True], ["Wait", "Unschedulable"]),
    ("1 scheduled, 2 unscheduled succeed, minCount 3 met", 3, 1, [True, True], ["Wait", "Success"]),
    ("minCount already met by scheduled pods", 2, 2, [True], ["Success"]),
    ("1 scheduled, minCount 3, first unscheduled fails, not enough remaining", 3, 1, [False, True],
     ["Unschedulable"]),
    ("1 scheduled, minCount 4, first unscheduled succeeds, not enough remaining", 4, 1, [True, False],
     ["Unschedulable"]),
])
def test_placement_feasible(name, min_count, scheduled, steps, codes):
    """Drives the (scheduled, remaining) sequence the PodGroup cycle reports
    after each member and stops at the first Unschedulable, as the cycle does."""
    group = pod_group("pg", min_count)
    gang = plugin_on(group)
    info = PodGroupInfo("default", "pg", group)
    remaining = len(steps)
    got = []
    for placed in steps:
        remaining -= 1
        scheduled += placed
        status = gang.placement_feasible(None, info, PlacementProgress(scheduled, remaining))
        got.append("Success" if status is None else status.code.name.title().replace("_", ""))
        if got[-1] == "Unschedulable":
            break
    assert got == codes, name


def test_placement_feasible_messages():
    gang = plugin_on()
    info = PodGroupInfo("default", "pg", pod_group("pg", 3))
    assert reason(gang.placement_feasible(None, info, PlacementProgress(1, 1))) == \
        "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining"
    assert reason(gang.placement_feasible(None, info, PlacementProgress(2, 1))) == \
        "minCount (3) is not yet satisfied: 2 scheduled, 1 remaining"


QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
TARGET = pod("p", pod_group="pg")


@pytest.mark.parametrize("new, expected", [
    (pod("q", pod_group="pg"), QUEUE),                        # a newPod which matches the pod's scheduling group
    (pod("q", pod_group="pg", node_name="n1"), QUEUE),        # ... with NodeName set (assigned pods count)
    (pod("q", pod_group="pg", namespace="other"), SKIP),      # doesn't match the pod's namespace
    (pod("q", pod_group="other"), SKIP),                      # doesn't match the pod's pod group name
    (pod("q"), SKIP),                                         # no scheduling group at all
])
def test_is_schedulable_after_pod_added(new, expected):
    assert pod_added(TARGET, None, new) == expected


@pytest.mark.parametrize("new, expected", [
    (pod_group("pg", 2), QUEUE),
    (pod_group("other", 2), SKIP),
    (pod_group("pg", 2, namespace="other"), SKIP),
])
def test_is_schedulable_after_pod_group_added(new, expected):
    assert pod_group_added(TARGET, None, new) == expected


@pytest.mark.parametrize("old, new, target, expected", [
    (pod_group("pg", 3), pod_group("pg", 2), TARGET, QUEUE),                  # minCount decreased matches target pod
    (pod_group("pg"), pod_group("pg"), TARGET, SKIP),                          # update Basic policy
    (pod_group("pg", 2), pod_group("pg", 3), TARGET, SKIP),                    # minCount increased
    (pod_group("pg", 2), pod_group("pg", 2), TARGET, SKIP),                    # minCount unchanged
    (pod_group("other", 3), pod_group("other", 2), TARGET, SKIP),              # pod group name doesn't match
    (pod_group("pg", 3, namespace="x"), pod_group("pg", 2, namespace="x"), TARGET, SKIP),  # namespace doesn't match
    (pod_group("pg", 3), pod_group("pg", 2), pod("p"), SKIP),                  # pod without a scheduling group
])
def test_is_schedulable_after_pod_group_updated(old, new, target, expected):
    assert pod_group_updated(target, old, new) == expected
