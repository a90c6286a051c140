"""Jobs as PodGroups: the job-controller's Workload and PodGroup under WorkloadWithJob (KEP-5547).

Ports the semantics of upstream pkg/controller/job/job_scheduling_manager_test.go (which Jobs qualify, the
objects' names, owner references and policy, creation only for a new Job, Workload before PodGroup before pods,
a template that names a PodGroup itself opts out) and the 1.37 ``spec.scheduling`` of KEP-5547 (Basic when
omitted, gang minCount from parallelism, the API server's checks); and the examples/job-gangs scenario: a gang
placed whole in one rack, a second that cannot fit whole waits with none of its pods bound.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.controllers.job import pod_group_name, workload_name
from kubesched.core.api import from_manifest
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED
from kubesched.core.api.validation import problems
from kubesched.core.features import FeatureGates
from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node

from .workloads import template

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "job-gangs"


def job(name="train", cpu="1", scheduling=None, **spec):
    body = {"template": template({}, cpu, {"kubesched.io/run-duration": "10m"}, restartPolicy="Never"), **spec}
    if scheduling is not None:
        body["scheduling"] = scheduling
    return from_manifest({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body})


def indexed(name="train", n=4, **extra):
    return job(name, parallelism=n, completions=n, completionMode="Indexed", **extra)


def run(*objects, release="1.37", gates=None, until=60, created=None):
    """A simulation of ``objects`` on one 8-CPU node; ``created``: a list that gets the kind of every object
    created through the API, in order."""
    sim = Simulation(features=FeatureGates(release, gates if gates is not None else {"WorkloadWithJob": True}))
    if created is not None:
        create = sim.cluster.create
        sim.cluster.create = lambda obj: (created.append(type(obj).__name__), create(obj))[1]  # type: ignore
    sim.create([node("n1", cpu="8"), *objects])
    sim.run(until=None if until is None else DEFAULT_START + until)
    return sim


def listed(sim, kind):
    return sim.cluster.list(kind).items


def pods_of(sim, name):
    return [p for p in sim.pods() if p.metadata.labels.get("batch.kubernetes.io/job-name") == name]


def test_the_example_places_one_gang_in_one_rack_and_the_other_waits_with_no_pod_bound():
    sim = Simulation.from_paths([EXAMPLE], features=FeatureGates(None, {"WorkloadWithJob": True}))
    sim.run()
    train, wide = pods_of(sim, "train"), pods_of(sim, "train-wide")
    assert len(train) == 4 and len({p.spec.node_name.rsplit("-", 1)[0] for p in train}) == 1  # one rack, whole
    assert len(wide) == 4 and not any(p.spec.node_name for p in wide)
    groups = {g.spec.workload_ref.workload_name.rsplit("-", 1)[0]: g for g in listed(sim, "PodGroup")}
    assert groups["train"].condition(POD_GROUP_INITIALLY_SCHEDULED).status == "True"
    waiting = groups["train-wide"].condition(POD_GROUP_INITIALLY_SCHEDULED)
    assert (waiting.status, waiting.reason) == ("False", "Unschedulable")
    for g in groups.values():
        assert (g.min_count, g.topology_key) == (4, "topology.kubernetes.io/rack")


def test_with_the_gate_turned_off_the_jobs_run_pod_by_pod():
    """The same Jobs with the gate turned off: spec.scheduling is dropped (noted), no Workload or PodGroup, and
    train's workers spread over both racks (the scores' choice, no rack constraint)."""
    sim = Simulation.from_paths([EXAMPLE], features=FeatureGates(None, {"WorkloadWithJob": False}))
    sim.run()
    assert not listed(sim, "PodGroup") and not listed(sim, "Workload")
    assert len({p.spec.node_name.rsplit("-", 1)[0] for p in pods_of(sim, "train")}) == 2
    assert any("spec.scheduling dropped by the API server" in n for n in sim.features.notes)


def test_workload_podgroup_and_pods_with_upstream_names_owners_and_order():
    created: list[str] = []
    sim = run(indexed(scheduling={"schedulingPolicy": {"gang": {}}}), created=created)
    stored = sim.get("Job", "default/train")
    (workload,) = listed(sim, "Workload")
    (group,) = listed(sim, "PodGroup")
    assert workload.metadata.name == workload_name(stored) and workload.metadata.name.startswith("train-")
    (ref,) = workload.metadata.owner_references
    assert (ref.kind, ref.uid, ref.controller, ref.block_owner_deletion) == ("Job", stored.metadata.uid, True, True)
    controller_ref = workload.spec.controller_ref
    assert (controller_ref.api_group, controller_ref.kind, controller_ref.name) == ("batch", "Job", "train")
    (pgt,) = workload.spec.pod_group_templates
    assert pgt.name == "train-worker-0" and pgt.scheduling_policy.gang.min_count == 4  # minCount = parallelism
    assert group.metadata.name == pod_group_name(workload.metadata.name, "train-worker-0")
    job_ref, workload_ref = group.metadata.owner_references
    assert (job_ref.kind, job_ref.uid, job_ref.controller) == ("Job", stored.metadata.uid, True)
    assert (workload_ref.kind, workload_ref.name, workload_ref.uid, workload_ref.controller) == (
        "Workload", workload.metadata.name, workload.metadata.uid, None)
    assert (group.spec.workload_ref.workload_name, group.spec.workload_ref.template_name) == (
        workload.metadata.name, "train-worker-0")
    pods = pods_of(sim, "train")
    assert len(pods) == 4 and {p.spec.scheduling_group.pod_group_name for p in pods} == {group.metadata.name}
    made = [kind for kind in created if kind in ("Workload", "PodGroup", "Pod")]
    assert made == ["Workload", "PodGroup", "Pod", "Pod", "Pod", "Pod"]  # Workload -> PodGroup -> pods
    events = {e.reason: e.message for e in listed(sim, "Event") if e.involved_object.name == "train"}
    assert events["WorkloadCreated"] == f"Created Workload {workload.metadata.name} with gang scheduling (minCount=4)"
    assert events["PodGroupCreated"] == f"Created PodGroup {group.metadata.name} for Workload {workload.metadata.name}"


def test_1_37_a_job_without_spec_scheduling_gets_a_basic_podgroup():
    sim = run(job(parallelism=2, completions=2))
    (group,) = listed(sim, "PodGroup")
    assert group.spec.scheduling_policy.basic is not None and group.spec.scheduling_policy.gang is None
    assert all(p.spec.node_name and p.spec.scheduling_group.pod_group_name == group.metadata.name
               for p in pods_of(sim, "train"))


def test_1_37_an_explicit_min_count_is_kept():
    sim = run(indexed(scheduling={"schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"all": {}}}))
    (group,) = listed(sim, "PodGroup")
    assert group.spec.scheduling_policy.gang.min_count == 3 and group.disrupts_all


@pytest.mark.parametrize("spec, qualifies", [
    ({"parallelism": 4, "completions": 4, "completionMode": "Indexed"}, True),
    ({"parallelism": 4, "completions": 8, "completionMode": "Indexed"}, False),  # not all pods at once
    ({"parallelism": 4, "completions": 4}, False),  # NonIndexed
    ({"parallelism": 1, "completions": 1, "completionMode": "Indexed"}, False),  # a single pod
])
def test_1_36_infers_a_gang_only_for_indexed_jobs_running_every_pod_at_once(spec, qualifies):
    sim = run(job(**spec), release="1.36")
    groups = listed(sim, "PodGroup")
    assert bool(groups) == qualifies
    if qualifies:
        assert groups[0].spec.scheduling_policy.gang.min_count == 4
        assert all(p.spec.scheduling_group is not None for p in pods_of(sim, "train"))
    else:
        assert not listed(sim, "Workload") and all(p.spec.scheduling_group is None for p in pods_of(sim, "train"))


def test_1_36_has_no_spec_scheduling_field():
    with pytest.raises(Exception, match='unknown field "spec.scheduling"'):
        run(indexed(scheduling={"schedulingPolicy": {"gang": {}}}), release="1.36")


def test_a_template_naming_its_own_podgroup_opts_out():
    body = indexed()
    spec = body.spec.template.spec
    import attrs

    from kubesched.core.api.core_v1 import PodSchedulingGroup
    own = attrs.evolve(body, spec=attrs.evolve(body.spec, template=attrs.evolve(
        body.spec.template, spec=attrs.evolve(spec, scheduling_group=PodSchedulingGroup(pod_group_name="mine")))))
    sim = run(own, release="1.36")
    assert not listed(sim, "Workload")
    assert {p.spec.scheduling_group.pod_group_name for p in pods_of(sim, "train")} == {"mine"}


def test_gate_off_no_objects_and_a_started_job_gets_none_later():
    sim = run(indexed(), gates={})
    assert not listed(sim, "Workload") and len(pods_of(sim, "train")) == 4
    assert all(p.spec.scheduling_group is None for p in pods_of(sim, "train"))


def test_deleting_the_job_deletes_its_workload_and_podgroup():
    sim = run(indexed(scheduling={"schedulingPolicy": {"gang": {}}}))
    sim.cluster.delete("Job", "train", "default")
    sim.run(until=DEFAULT_START + 120)
    assert not listed(sim, "Workload") and not listed(sim, "PodGroup") and not pods_of(sim, "train")


def test_names_fit_a_dns_subdomain_the_longer_part_giving_way():
    """upstream TestComputePodGroupName: deterministic, at most 253 characters, hash kept whole."""
    short = pod_group_name("w", "t")
    assert short == pod_group_name("w", "t") and short.startswith("w-t-")
    long = pod_group_name("w" * 200, "t" * 200)
    assert len(long) == 253 and long.count("-") == 2
    assert pod_group_name("w" * 10, "t" * 300).startswith("w" * 10 + "-")


@pytest.mark.parametrize("scheduling, message", [
    ({"schedulingPolicy": {"gang": {"minCount": 5}}},
     "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 5: must be less than or equal to "
     "spec.parallelism (4)"),
    ({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
     "spec.scheduling.disruptionMode.all: Invalid value: \"\": the disruptionMode `all` is not supported with the "
     "Basic scheduling policy"),
    ({"schedulingPolicy": {"basic": {}, "gang": {}}}, "spec.scheduling.schedulingPolicy: Invalid value"),
])
def test_the_api_server_refuses_a_bad_spec_scheduling(scheduling, message):
    found = problems(indexed(scheduling=scheduling))
    assert any(p.startswith(message) for p in found), found
