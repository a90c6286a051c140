"""MemoryCluster: the embedded cluster behaves like an API server."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.api.meta import ObjectMeta, evolve_meta
from kubesched.core.api.scheduling_v1 import PriorityClass
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import (
    ADDED,
    DELETED,
    MODIFIED,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    NotFound,
)
from kubesched.core.cluster.memory import COMPACTION_INTERVAL, MemoryCluster
from kubesched.testing import node, pod


@pytest.fixture
def clock():
    return FakeClock(1000.0)


@pytest.fixture
def cluster(clock):
    return MemoryCluster(clock)


def test_create_fills_in_what_the_api_server_does(cluster, clock):
    created = cluster.create(pod("web", namespace=""))
    meta = created.metadata
    assert meta.namespace == "default"
    assert meta.uid and meta.resource_version
    assert meta.creation_timestamp == clock.now()
    assert cluster.get("Pod", "web", "default") == created
    with pytest.raises(AlreadyExists):
        cluster.create(pod("web"))


def test_get_and_list(cluster):
    cluster.create(node("n1"))
    cluster.create(pod("a", namespace="x"))
    cluster.create(pod("b", namespace="y"))
    assert cluster.get("Node", "n1").metadata.name == "n1"
    with pytest.raises(NotFound, match='Pod "zz" not found'):
        cluster.get("Pod", "zz", "x")
    assert [p.key for p in cluster.list("Pod", namespace="y").items] == ["y/b"]
    assert sorted(p.key for p in cluster.list("Pod").items) == ["x/a", "y/b"]
    with pytest.raises(NotFound):
        cluster.list("Gadget")


def test_resource_version_grows_with_every_write(cluster):
    a = cluster.create(node("a"))
    b = cluster.create(node("b"))
    a2 = cluster.update(evolve_meta(a, labels={"x": "1"}))
    versions = [int(o.metadata.resource_version) for o in (a, b, a2)]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert cluster.list("Node").resource_version == a2.metadata.resource_version


def test_stale_update_is_a_conflict(cluster):
    first = cluster.create(node("n1"))
    current = cluster.update(evolve_meta(first, labels={"zone": "a"}))
    with pytest.raises(Conflict, match="the object has been modified"):
        cluster.update(evolve_meta(first, labels={"zone": "b"}))
    assert cluster.get("Node", "n1").metadata.labels == {"zone": "a"}
    # the same for status writes
    with pytest.raises(Conflict):
        cluster.update_status(first)
    # an update without a resourceVersion is unconditional
    forced = cluster.update(evolve_meta(first, labels={"zone": "c"}, resource_version=""))
    assert forced.metadata.labels == {"zone": "c"}
    assert forced.metadata.uid == current.metadata.uid
    assert forced.metadata.creation_timestamp == current.metadata.creation_timestamp


def test_update_status_changes_only_status(cluster):
    created = cluster.create(pod("p"))
    changed = attrs.evolve(
        created,
        metadata=attrs.evolve(created.metadata, labels={"sneaky": "yes"}),
        status=attrs.evolve(created.status, nominated_node_name="n1"),
    )
    stored = cluster.update_status(changed)
    assert stored.status.nominated_node_name == "n1"
    assert stored.metadata.labels == {}


def test_update_of_a_missing_object(cluster):
    with pytest.raises(NotFound):
        cluster.update(node("ghost"))


def test_generate_name(cluster):
    template = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "job-"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    first, second = cluster.create(template), cluster.create(template)
    for created in (first, second):
        name = created.metadata.name
        assert name.startswith("job-") and len(name) == len("job-") + 5
        assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
        assert created.metadata.namespace == "default"
    assert first.metadata.name != second.metadata.name
    with pytest.raises(Invalid, match="name or metadata.generateName is required"):
        cluster.create(from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {"a": "b"}}}))


def test_generated_names_and_uids_are_reproducible_with_a_seed():
    template = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "w-"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    one, two = MemoryCluster(seed=7), MemoryCluster(seed=7)
    a, b = one.create(template), two.create(template)
    assert (a.metadata.name, a.metadata.uid) == (b.metadata.name, b.metadata.uid)


def test_bind_sets_node_name_and_pod_scheduled(cluster, clock):
    created = cluster.create(pod("web"))
    clock.advance(5)
    cluster.bind("default", "web", created.metadata.uid, "n1")
    bound = cluster.get("Pod", "web", "default")
    assert bound.spec.node_name == "n1"
    (condition,) = [c for c in bound.status.conditions if c.type == "PodScheduled"]
    assert condition.status == "True" and condition.last_transition_time == clock.now()
    assert int(bound.metadata.resource_version) > int(created.metadata.resource_version)


def test_bind_replaces_an_earlier_pod_scheduled_false(cluster):
    created = cluster.create(pod("web"))
    failed = from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {},
                            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
    cluster.update_status(attrs.evolve(created, status=failed.status))
    cluster.bind("default", "web", "", "n2")
    conditions = cluster.get("Pod", "web", "default").status.conditions
    assert [(c.type, c.status) for c in conditions] == [("PodScheduled", "True")]


def test_a_second_bind_is_refused(cluster):
    created = cluster.create(pod("web"))
    cluster.bind("default", "web", created.metadata.uid, "n1")
    with pytest.raises(Conflict, match='already assigned to node "n1"'):
        cluster.bind("default", "web", created.metadata.uid, "n2")
    assert cluster.get("Pod", "web", "default").spec.node_name == "n1"


def test_bind_checks_the_uid_and_existence(cluster):
    cluster.create(pod("web"))
    with pytest.raises(Conflict, match="UID in the precondition"):
        cluster.bind("default", "web", "some-other-uid", "n1")
    with pytest.raises(NotFound):
        cluster.bind("default", "nope", "", "n1")
    assert cluster.get("Pod", "web", "default").spec.node_name == ""


def test_delete_with_uid_precondition(cluster):
    created = cluster.create(pod("web"))
    with pytest.raises(Conflict, match="Precondition failed"):
        cluster.delete("Pod", "web", "default", uid="not-" + created.metadata.uid)
    assert cluster.get("Pod", "web", "default")
    cluster.delete("Pod", "web", "default", uid=created.metadata.uid)
    with pytest.raises(NotFound):
        cluster.get("Pod", "web", "default")
    with pytest.raises(NotFound):
        cluster.delete("Pod", "web", "default")


def test_finalizers_turn_delete_into_a_deletion_timestamp(cluster, clock):
    created = cluster.create(evolve_meta(pod("web"), finalizers=("example.com/keep",)))
    clock.advance(3)
    cluster.delete("Pod", "web", "default")
    terminating = cluster.get("Pod", "web", "default")
    assert terminating.metadata.deletion_timestamp == clock.now()
    # deleting again changes nothing
    cluster.delete("Pod", "web", "default")
    assert cluster.get("Pod", "web", "default").metadata.resource_version == terminating.metadata.resource_version
    # a terminating pod cannot be bound
    with pytest.raises(Conflict, match="being deleted"):
        cluster.bind("default", "web", created.metadata.uid, "n1")
    # removing the last finalizer completes the deletion
    cluster.update(evolve_meta(terminating, finalizers=()))
    with pytest.raises(NotFound):
        cluster.get("Pod", "web", "default")


def test_an_update_cannot_undo_a_deletion(cluster):
    created = cluster.create(evolve_meta(pod("web"), finalizers=("example.com/keep",)))
    cluster.delete("Pod", "web", "default")
    # an unconditional update built from the copy read before the delete
    cluster.update(evolve_meta(created, labels={"x": "y"}, resource_version=""))
    assert cluster.get("Pod", "web", "default").metadata.deletion_timestamp is not None


def test_watch_delivers_changes_in_order(cluster):
    seen = []
    start = cluster.list("Pod").resource_version
    stop = cluster.watch("Pod", start, seen.append)
    created = cluster.create(pod("a"))
    cluster.create(node("n1"))  # another kind: not delivered
    cluster.bind("default", "a", created.metadata.uid, "n1")
    cluster.delete("Pod", "a", "default")
    assert [(e.type, e.kind, e.obj.metadata.name) for e in seen] == [
        (ADDED, "Pod", "a"), (MODIFIED, "Pod", "a"), (DELETED, "Pod", "a"),
    ]
    assert seen[1].obj.spec.node_name == "n1"
    versions = [int(e.obj.metadata.resource_version) for e in seen[:2]]
    assert versions[0] < versions[1]
    stop()
    cluster.create(pod("b"))
    assert len(seen) == 3


def test_watch_resumes_from_a_resource_version(cluster):
    cluster.create(pod("a"))
    middle = cluster.list("Pod").resource_version
    cluster.create(pod("b"))
    cluster.delete("Pod", "a", "default")
    seen = []
    cluster.watch("Pod", middle, seen.append)
    assert [(e.type, e.obj.metadata.name) for e in seen] == [(ADDED, "b"), (DELETED, "a")]
    cluster.create(pod("c"))
    assert [(e.type, e.obj.metadata.name) for e in seen][-1] == (ADDED, "c")


def test_watch_from_an_expired_version_is_gone():
    cluster = MemoryCluster(history=3)
    first = cluster.create(pod("p0"))
    for i in range(1, 6):
        cluster.create(pod(f"p{i}"))
    with pytest.raises(Gone) as err:
        cluster.watch("Pod", first.metadata.resource_version, lambda e: None)
    assert err.value.code == 410
    # a recent version still works
    seen = []
    cluster.watch("Pod", cluster.list("Pod").resource_version, seen.append)
    cluster.create(pod("p6"))
    assert [e.obj.metadata.name for e in seen] == ["p6"]


def test_the_history_is_compacted_as_kube_apiserver_compacts_etcd():
    """Every COMPACTION_INTERVAL seconds of the cluster's clock the changes up to what the previous compaction saw
    go: a watch resuming from before them gets 410 Gone, one from after them resumes."""
    clock = FakeClock(0.0)
    cluster = MemoryCluster(clock)
    first = cluster.create(pod("p0"))
    clock.advance(COMPACTION_INTERVAL)
    noted = cluster.create(pod("p1"))  # the first compaction: nothing before it yet, notes where it stands
    cluster.watch("Pod", first.metadata.resource_version, lambda e: None)
    clock.advance(COMPACTION_INTERVAL)
    cluster.create(pod("p2"))  # the second drops what the first noted
    with pytest.raises(Gone, match="too old resource version"):
        cluster.watch("Pod", first.metadata.resource_version, lambda e: None)
    seen = []
    cluster.watch("Pod", noted.metadata.resource_version, seen.append)
    assert [e.obj.metadata.name for e in seen] == ["p2"]


def priority_class(name, value, global_default=False, policy=None):
    pc = PriorityClass(metadata=ObjectMeta(name=name), value=value, global_default=global_default)
    return attrs.evolve(pc, preemption_policy=policy) if policy else pc


def test_priority_admission_from_the_named_class(cluster):
    cluster.create(priority_class("high", 1000, policy="Never"))
    admitted = cluster.create(from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "i"}]}}))
    assert admitted.spec.priority == 1000
    assert admitted.spec.preemption_policy == "Never"


def test_priority_admission_uses_the_global_default(cluster):
    cluster.create(priority_class("ordinary", 10))
    cluster.create(priority_class("fallback", 7, global_default=True))
    plain = cluster.create(pod("plain"))
    assert plain.spec.priority == 7
    assert plain.spec.priority_class_name == "fallback"
    assert plain.spec.preemption_policy == "PreemptLowerPriority"
    named = cluster.create(from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "named"}, "spec": {"priorityClassName": "ordinary", "containers": [{"name": "c", "image": "i"}]}}))
    assert named.spec.priority == 10


def test_priority_is_zero_without_classes(cluster):
    assert cluster.create(pod("p")).spec.priority == 0


def test_unknown_priority_class_is_refused(cluster):
    with pytest.raises(Invalid, match="no PriorityClass with name missing was found"):
        cluster.create(from_manifest({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priorityClassName": "missing", "containers": [{"name": "c", "image": "i"}]}}))
    with pytest.raises(NotFound):
        cluster.get("Pod", "p", "default")


def named(name, class_name, **spec):
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                          "spec": {"priorityClassName": class_name, "containers": [{"name": "c", "image": "i"}], **spec}})


def test_priority_admission_refuses_a_priority_or_policy_that_contradicts_the_class(cluster):
    cluster.create(priority_class("high", 1000))
    with pytest.raises(Invalid, match=r"the integer value of priority \(5\) must not be provided in pod spec; "
                                      r"priority admission controller computed 1000 from the given PriorityClass name"):
        cluster.create(named("p", "high", priority=5))
    with pytest.raises(Invalid, match=r"the string value of PreemptionPolicy \(Never\) must not be provided in pod "
                                      r"spec; priority admission controller computed PreemptLowerPriority"):
        cluster.create(named("q", "high", preemptionPolicy="Never"))
    assert cluster.create(named("r", "high", priority=1000)).spec.priority == 1000


def test_system_priority_classes_need_no_object(cluster):
    critical = cluster.create(named("p", "system-node-critical"))
    assert (critical.spec.priority, critical.spec.preemption_policy) == (2000001000, "PreemptLowerPriority")


def test_a_pod_with_a_priority_and_no_class_keeps_it(cluster):
    # as on scheduler_perf's API server, whose pod templates set spec.priority directly
    admitted = cluster.create(pod("p", priority=10))
    assert (admitted.spec.priority, admitted.spec.preemption_policy) == (10, "PreemptLowerPriority")


def test_priority_class_validation(cluster):
    cluster.create(priority_class("default", 5, global_default=True))
    with pytest.raises(Invalid, match="PriorityClass default is already marked as default. Only one default"):
        cluster.create(priority_class("second", 6, global_default=True))
    with pytest.raises(Invalid, match="maximum allowed value of a user defined priority is 1000000000"):
        cluster.create(priority_class("huge", 2_000_000_000))
    with pytest.raises(Invalid, match="names with 'system-' prefix are reserved"):
        cluster.create(priority_class("system-mine", 1))
    with pytest.raises(Invalid, match="preemptionPolicy: Unsupported value: 'Sometimes'"):
        cluster.create(priority_class("odd", 1, policy="Sometimes"))
    # updating the default itself is fine
    current = cluster.get("PriorityClass", "default")
    assert cluster.update(attrs.evolve(current, value=7)).value == 7


def test_gated_pod_gets_the_scheduling_gated_condition(cluster):
    created = cluster.create(pod("g", scheduling_gates=["example.com/wait"]))
    (condition,) = created.status.conditions
    assert (condition.type, condition.status, condition.reason) == ("PodScheduled", "False", "SchedulingGated")


def test_fail_hook_makes_writes_fail(cluster):
    calls = []

    def hook(verb, kind, target):
        calls.append((verb, kind))
        if verb == "bind":
            raise Conflict("injected")

    cluster.fail_hook = hook
    created = cluster.create(pod("p"))
    with pytest.raises(Conflict, match="injected"):
        cluster.bind("default", "p", created.metadata.uid, "n1")
    assert calls == [("create", "Pod"), ("bind", "Pod")]
    assert cluster.get("Pod", "p", "default").spec.node_name == ""


def test_apply_creates_or_replaces_keeping_the_uid(cluster, clock):
    seen = []
    cluster.watch("Pod", "0", lambda event: seen.append((event.type, event.obj.metadata.labels)))
    created = cluster.apply(pod("web", namespace="", labels={"v": "1"}))
    clock.advance(5)
    replaced = cluster.apply(pod("web", namespace="", labels={"v": "2"}))  # namespace defaults the same way
    assert replaced.metadata.uid == created.metadata.uid
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.creation_timestamp == created.metadata.creation_timestamp
    assert seen == [(ADDED, {"v": "1"}), (MODIFIED, {"v": "2"})]


def _taint_rule(effect: str, time_added=None):
    taint = {"key": "gpu.example.com/unhealthy", "effect": effect}
    if time_added is not None:
        taint["timeAdded"] = time_added
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
                          "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": taint}})


def test_device_taints_get_time_added_and_rules_a_generation(cluster, clock):
    slice_ = cluster.create(from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "n", "generation": 1,
                                                                          "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute"},
                                                          {"key": "k2", "effect": "NoExecute", "timeAdded": 5.0}]}]},
    }))
    assert [t.time_added for t in slice_.spec.devices[0].taints] == [1000.0, 5.0]

    rule = cluster.create(_taint_rule("None"))
    assert (rule.metadata.generation, rule.spec.taint.time_added) == (1, 1000.0)
    clock.advance(30)
    same = cluster.update_status(rule)
    assert same.metadata.generation == 1
    # the effect changes, timeAdded is kept by the client: the API server bumps it to now
    changed = cluster.update(attrs.evolve(same, spec=_taint_rule("NoExecute", time_added=1000.0).spec))
    assert (changed.metadata.generation, changed.spec.taint.time_added) == (2, 1030.0)
    # a timeAdded given with the change is kept
    again = cluster.apply(_taint_rule("None", time_added=1010.0))
    assert (again.metadata.generation, again.spec.taint.time_added) == (3, 1010.0)
