"""The DeviceTaintEviction controller on the in-memory cluster: who is evicted, when, and what a user sees."""

from __future__ import annotations

import random
import threading

import attrs
import pytest
from prometheus_client import REGISTRY

from kubesched.controllers.devicetainteviction import DeviceTaintEvictionController
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import ApiError
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.controller.base import ControllerContext
from kubesched.core.controller.workqueue import BASE_DELAY

from .devicetaint_helpers import (
    START,
    Harness,
    allocated_claim,
    consumer,
    gpu_slice,
    no_execute,
    rule,
    tolerate,
)

DELETIONS = "device_taint_eviction_controller_pod_deletions_total"
DURATION_COUNT = "device_taint_eviction_controller_pod_deletion_duration_seconds_count"
DURATION_SUM = "device_taint_eviction_controller_pod_deletion_duration_seconds_sum"


def metric(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def shared_claim_cluster(h: Harness, count: int = 3, tolerations=(), taints=None, finalizers=()):
    """``count`` pods sharing one claim on gpu-0; returns the stored pods."""
    pods = h.create(*(consumer(f"job-{i}", "shared", finalizers=finalizers) for i in range(count)))
    h.create(gpu_slice(taints=taints), allocated_claim("shared", pods, tolerations=tolerations))
    return pods


def test_untolerated_taint_evicts_every_consumer_of_a_shared_claim_at_once():
    h = Harness()
    shared_claim_cluster(h, 3, taints={"gpu-0": [no_execute(START - 60)]})
    h.create(consumer("bystander", "other"))  # uses no tainted claim
    before = metric(DELETIONS), metric(DURATION_COUNT)

    h.run()

    assert h.pods() == ["default/bystander"]
    assert sorted(h.events()) == [(f"job-{i}", "Marking for deletion") for i in range(3)]
    assert metric(DELETIONS) - before[0] == 3 and metric(DURATION_COUNT) - before[1] == 3


def test_an_evicted_pod_gets_the_disruption_target_condition_before_its_deletion():
    h = Harness()
    shared_claim_cluster(h, 1, taints={"gpu-0": [no_execute()]}, finalizers=("example.com/keep",))

    h.run()

    (evicted,) = h.cluster.list("Pod").items  # kept by its finalizer, marked for deletion
    assert evicted.metadata.deletion_timestamp == START
    (condition,) = [c for c in evicted.status.conditions if c.type == "DisruptionTarget"]
    assert (condition.status, condition.reason, condition.message) == (
        "True", "DeletionByDeviceTaintManager", "Device Taint manager: deleting due to NoExecute taint")
    h.run(600)  # taken up again later (another taint event): already being deleted, nothing more happens
    assert h.events() == [("job-0", "Marking for deletion")]


def test_toleration_seconds_delays_the_eviction_to_the_smallest_matching_one():
    h = Harness()
    shared_claim_cluster(h, 2, taints={"gpu-0": [no_execute(START)]},
                         tolerations=[tolerate(120), tolerate(30), tolerate(5, key="other-key")])
    before = metric(DURATION_SUM)

    h.run(29)
    assert h.pods() == ["default/job-0", "default/job-1"] and h.events() == []
    h.run(1)
    assert h.pods() == []
    assert h.clock.now() == START + 30
    assert metric(DURATION_SUM) - before == 0  # deleted exactly when due on the fake clock


def test_a_toleration_without_seconds_prevents_the_eviction():
    h = Harness()
    shared_claim_cluster(h, 2, taints={"gpu-0": [no_execute()]}, tolerations=[tolerate(None), tolerate(10)])

    h.run(3600)

    assert h.pods() == ["default/job-0", "default/job-1"]
    assert h.controller.pending_evictions() == {}


def test_a_toleration_with_an_empty_effect_does_not_delay_eviction_as_upstream():
    h = Harness()
    shared_claim_cluster(h, 1, taints={"gpu-0": [no_execute()]}, tolerations=[tolerate(None, effect="")])

    h.run()

    assert h.pods() == []


def test_taint_removed_before_the_deadline_cancels_the_eviction():
    h = Harness()
    shared_claim_cluster(h, 2, taints={"gpu-0": [no_execute(START)]}, tolerations=[tolerate(60)])
    h.run(30)
    assert len(h.controller.pending_evictions()) == 2

    untainted = attrs.evolve(h.cluster.get("ResourceSlice", "node-1-gpus"), spec=gpu_slice().spec)
    h.cluster.update(untainted)
    h.run(600)

    assert h.pods() == ["default/job-0", "default/job-1"]
    assert sorted(h.events()) == [("job-0", "Cancelling deletion"), ("job-1", "Cancelling deletion")]
    assert h.controller.pending_evictions() == {}


def test_only_the_newest_generation_of_a_pool_counts():
    h = Harness()
    pods = h.create(consumer("job-0", "shared"))
    h.create(gpu_slice("old", generation=1, taints={"gpu-0": [no_execute()]}), gpu_slice("new", generation=2),
             allocated_claim("shared", pods))

    h.run(60)

    assert h.pods() == ["default/job-0"]


def test_a_replaced_pod_with_the_same_name_is_not_deleted():
    h = Harness()
    shared_claim_cluster(h, 2, taints={"gpu-0": [no_execute(START)]}, tolerations=[tolerate(30)])
    h.run(10)  # both evictions queued for START + 30
    old = h.cluster.get("Pod", "job-0", "default")
    h.cluster.delete("Pod", "job-0", "default")
    replacement = h.cluster.create(consumer("job-0", "shared"))  # not in the claim's reservedFor

    h.run(60)

    assert h.pods() == ["default/job-0"]
    assert h.cluster.get("Pod", "job-0", "default").metadata.uid == replacement.metadata.uid != old.metadata.uid
    assert h.events() == [("job-1", "Marking for deletion")]


def test_a_pod_replaced_after_its_eviction_was_queued_is_left_alone():
    h = Harness()
    shared_claim_cluster(h, 1, taints={"gpu-0": [no_execute()]})
    h.manager.start()  # the handlers queue the eviction; no worker ran yet
    h.started = True
    h.cluster.delete("Pod", "job-0", "default")
    replacement = h.cluster.create(consumer("job-0", "shared"))
    h.informers.stop()  # the controller does not hear of it: the worker's GET must notice

    while h.controller.step():
        pass

    assert h.cluster.get("Pod", "job-0", "default").metadata.uid == replacement.metadata.uid
    assert h.events() == []


def test_missing_replaced_or_finished_consumers_never_stop_the_others():
    h = Harness()
    finished = consumer("finished", "shared", phase="Succeeded")
    stored = h.create(consumer("first", "shared"), finished, consumer("replaced", "shared"), consumer("last", "shared"))
    gone = attrs.evolve(stored[0], metadata=attrs.evolve(stored[0].metadata, name="gone", uid="uid-of-gone"))
    replaced = attrs.evolve(stored[2], metadata=attrs.evolve(stored[2].metadata, uid="uid-before-replacement"))
    # reservedFor lists the missing, finished and replaced pods before the live ones
    h.create(gpu_slice(), allocated_claim("shared", [gone, stored[1], replaced, stored[0], stored[3]]))
    h.run()
    h.cluster.create(rule("gpu-0-broken", device="gpu-0"))

    h.run(60)

    assert h.pods() == ["default/finished", "default/replaced"]
    assert sorted(h.events()) == [("first", "Marking for deletion"), ("last", "Marking for deletion")]


def test_an_api_failure_on_delete_is_retried_with_exponential_backoff_until_it_succeeds():
    h = Harness()
    shared_claim_cluster(h, 1, taints={"gpu-0": [no_execute()]})
    attempts: list[float] = []

    def fail_four_times(verb, kind, target):
        if verb == "delete" and kind == "Pod":
            attempts.append(h.clock.now())
            if len(attempts) <= 4:
                raise ApiError("etcdserver: request timed out")

    h.cluster.fail_hook = fail_four_times
    h.run(60)

    assert h.pods() == []
    waits = [round(b - a, 6) for a, b in zip(attempts, attempts[1:])]
    assert waits == [BASE_DELAY, 2 * BASE_DELAY, 4 * BASE_DELAY, 8 * BASE_DELAY]
    assert h.events() == [("job-0", "Marking for deletion")]  # one Event, counted on every attempt
    (event,) = [e for e in h.cluster.list("Event").items if e.reason == "DeviceTaintManagerEviction"]
    assert event.count == 5


def test_a_rule_with_effect_none_reports_what_it_would_evict_without_evicting():
    h = Harness()
    pods = h.create(consumer("a", "claim-a"), consumer("b", "claim-b", namespace="team-b"))
    h.create(gpu_slice(), allocated_claim("claim-a", pods[:1]),
             allocated_claim("claim-b", pods[1:], namespace="team-b", devices=("gpu-1",)),
             allocated_claim("elsewhere", [], pool="node-2"),
             rule("dry-run", no_execute(effect="None")))

    h.run(600)

    assert h.pods() == ["default/a", "team-b/b"]
    condition = h.rule_condition("dry-run")
    assert (condition.status, condition.reason, condition.observed_generation) == ("False", "NoEffect", 1)
    assert condition.message == (
        "2 published devices selected. 2 allocated devices selected. 2 pods would be evicted in 2 different "
        "namespaces if the effect was NoExecute. This information will not be updated again. "
        "Recreate the DeviceTaintRule to trigger an update.")


def test_a_rule_status_moves_from_pods_pending_eviction_to_completed():
    h = Harness()
    shared_claim_cluster(h, 2, tolerations=[tolerate(60)])
    h.run()
    h.cluster.create(rule("node-1-broken"))  # timeAdded START

    h.run(1)
    pending = h.rule_condition("node-1-broken")
    assert (pending.status, pending.reason, pending.message) == (
        "True", "PodsPendingEviction", "2 pods need to be evicted in 1 namespace.")
    assert pending.last_transition_time == START

    h.run(120)
    done = h.rule_condition("node-1-broken")
    assert (done.status, done.reason, done.message) == ("False", "Completed", "2 pods evicted since starting the controller.")
    assert done.last_transition_time == START + 70  # the first refresh 10 s after the evictions
    stored = h.cluster.get("DeviceTaintRule", "node-1-broken")
    assert h.controller.evicted_by_rule(stored.metadata.uid) == 2


@pytest.mark.parametrize("taint, selector, reason, message", [
    (no_execute(), {"device": "no-such-gpu"}, "NotStarted", ""),
    (no_execute(effect="NoSchedule"), {}, "OtherEffect", "Eviction only happens for the NoExecute effect."),
])
def test_a_rule_that_evicts_nothing_says_why(taint, selector, reason, message):
    h = Harness()
    shared_claim_cluster(h, 1)
    h.create(rule("r", taint, **selector))

    h.run(60)

    assert h.pods() == ["default/job-0"]
    condition = h.rule_condition("r")
    assert (condition.status, condition.reason, condition.message) == ("False", reason, message)


def test_a_rule_without_device_selector_selects_nothing():
    h = Harness()
    shared_claim_cluster(h, 1)
    unselective = rule("r")
    h.create(attrs.evolve(unselective, spec=attrs.evolve(unselective.spec, device_selector=None)))

    h.run(60)

    assert h.pods() == ["default/job-0"]


def test_deleting_the_rule_before_the_deadline_cancels_and_a_spec_change_is_reported_again():
    h = Harness()
    shared_claim_cluster(h, 1, tolerations=[tolerate(300)])
    h.create(rule("node-1-broken"))
    h.run(15)
    stored = h.cluster.get("DeviceTaintRule", "node-1-broken")
    narrowed = attrs.evolve(stored, spec=attrs.evolve(stored.spec, device_selector=attrs.evolve(
        stored.spec.device_selector, device="gpu-1")))
    h.cluster.update(narrowed)
    h.run(1)

    condition = h.rule_condition("node-1-broken")
    assert (condition.reason, condition.observed_generation) == ("NotStarted", 2)
    assert h.events() == [("job-0", "Cancelling deletion")]
    h.cluster.delete("DeviceTaintRule", "node-1-broken")
    h.run(600)
    assert h.pods() == ["default/job-0"]


class SlowDeletes(MemoryCluster):
    """A MemoryCluster whose pod deletions wait for ``release``, counting how many are in flight."""

    def __init__(self):
        super().__init__(FakeClock(START))
        self.changed = threading.Condition()
        self.release = threading.Event()
        self.in_flight = self.most_in_flight = self.deleted = 0

    def delete(self, kind, name, namespace="", uid=None):
        if kind != "Pod":
            return super().delete(kind, name, namespace, uid)
        with self.changed:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.changed.notify_all()
        try:
            assert self.release.wait(timeout=30), "deletions were never released"
            super().delete(kind, name, namespace, uid)
        finally:
            with self.changed:
                self.in_flight -= 1
                self.deleted += 1
                self.changed.notify_all()


def test_300_pods_on_one_tainted_device_are_evicted_with_at_most_the_configured_deletions_in_flight():
    cluster = SlowDeletes()
    h = Harness(cluster)
    assert h.controller.workers == DeviceTaintEvictionController.workers == 10
    pods = h.create(*(consumer(f"job-{i}", f"shared-{i % 2}") for i in range(300)))
    # a device that allows multiple allocations, shared by two claims (reservedFor holds at most 256)
    h.create(gpu_slice(taints={"gpu-0": [no_execute()]}),
             allocated_claim("shared-0", pods[0::2]), allocated_claim("shared-1", pods[1::2]))
    h.manager.start()
    stop = threading.Event()
    h.manager.run_workers(stop)
    try:
        with cluster.changed:
            assert cluster.changed.wait_for(lambda: cluster.in_flight == 10, timeout=30)
        assert cluster.in_flight == 10 and cluster.deleted == 0  # the other 290 wait in the queue
        cluster.release.set()
        with cluster.changed:
            assert cluster.changed.wait_for(lambda: cluster.deleted == 300, timeout=60)
    finally:
        cluster.release.set()
        stop.set()
        h.manager.stop()
    assert cluster.most_in_flight == 10
    assert cluster.list("Pod").items == []


def test_the_worker_count_is_an_option():
    assert Harness(workers=3).controller.workers == 3


def _events_world():
    """The objects of a small cluster (stored, with UIDs) and the evictions they imply."""
    cluster = MemoryCluster(FakeClock(START))
    p1, p2, p3, p4 = (cluster.create(consumer(f"p{i}", claim, namespace=ns)) for i, claim, ns in (
        (1, "c1", "default"), (2, "c1", "default"), (3, "c2", "team"), (4, "c3", "team")))
    objects = [
        cluster.create(gpu_slice("new", generation=2, taints={"gpu-0": [no_execute(START - 5)]})),
        cluster.create(gpu_slice("old", generation=1, taints={"gpu-1": [no_execute(START - 5)]})),
        cluster.create(rule("gpu-1-broken", no_execute(START + 10), device="gpu-1")),
        cluster.create(allocated_claim("c1", [p1, p2], devices=("gpu-0",))),
        cluster.create(allocated_claim("c2", [p3], devices=("gpu-1",), tolerations=[tolerate(30)], namespace="team")),
        cluster.create(allocated_claim("c3", [p4], devices=("gpu-1",), tolerations=[tolerate(None)], namespace="team")),
        p1, p2, p3, p4,
    ]
    return cluster, objects


def _feed(cluster, objects):
    controller = DeviceTaintEvictionController(ControllerContext(cluster, Informers(cluster), cluster.clock))
    handlers = {"Pod": controller.handle_pod_change, "ResourceClaim": controller.handle_claim_change,
                "ResourceSlice": controller.handle_slice_change, "DeviceTaintRule": controller.handle_rule_change}
    for obj in objects:
        handlers[type(obj).__name__](None, obj)
    return controller


def test_the_same_evictions_whatever_order_the_watch_events_arrive_in():
    cluster, objects = _events_world()
    orders = [objects, objects[::-1]] + [random.Random(seed).sample(objects, len(objects)) for seed in range(150)]

    outcomes = []
    for order in orders:
        controller = _feed(cluster, order)
        pending = controller.pending_evictions()
        outcomes.append({(ns, name): (e.when, [str(r) for r in e.reasons]) for (ns, name, _), e in pending.items()})

    expected = {
        ("default", "p1"): (START - 5, ["ResourceSlice new gpu.example.com/node-1/gpu-0 taint #0"]),
        ("default", "p2"): (START - 5, ["ResourceSlice new gpu.example.com/node-1/gpu-0 taint #0"]),
        ("team", "p3"): (START + 40, ["DeviceTaintRule gpu-1-broken"]),
    }
    assert all(outcome == expected for outcome in outcomes)


def test_the_same_pods_remain_whatever_order_the_watch_events_arrive_in():
    remaining = set()
    for seed in range(8):
        cluster, objects = _events_world()
        controller = _feed(cluster, random.Random(seed).sample(objects, len(objects)))
        cluster.clock.advance(60)
        while controller.step():
            pass
        remaining.add(tuple(sorted(p.key for p in cluster.list("Pod").items)))
    assert remaining == {("team/p4",)}


def test_a_rule_status_is_refreshed_at_most_every_ten_seconds():
    h = Harness()
    pods = h.create(consumer("a", "claim-a"), consumer("b", "claim-b"))
    h.create(gpu_slice(), allocated_claim("claim-a", pods[:1], tolerations=[tolerate(3)]),
             allocated_claim("claim-b", pods[1:], devices=("gpu-1",), tolerations=[tolerate(12)]))
    writes = []

    def record(event):
        (condition,) = event.obj.status.conditions or (None,)
        if condition is not None:
            writes.append((h.clock.now() - START, condition.reason, condition.message))

    h.cluster.watch("DeviceTaintRule", "0", record)
    h.create(rule("node-1-broken"))

    h.run(120)

    assert writes == [
        (0, "PodsPendingEviction", "2 pods need to be evicted in 1 namespace."),
        (10, "PodsPendingEviction", "1 pod needs to be evicted in 1 namespace. 1 pod evicted since starting the controller."),
        (20, "Completed", "2 pods evicted since starting the controller."),
    ]


def test_a_slice_moved_to_another_pool_takes_its_taints_along():
    h = Harness()
    shared_claim_cluster(h, 1, tolerations=[tolerate(30)], taints={"gpu-0": [no_execute()]})
    h.run(10)
    moved = h.cluster.get("ResourceSlice", "node-1-gpus")
    h.cluster.update(attrs.evolve(moved, spec=attrs.evolve(moved.spec, pool=attrs.evolve(moved.spec.pool, name="other"))))

    h.run(60)

    assert h.pods() == ["default/job-0"]
    assert h.events() == [("job-0", "Cancelling deletion")]
