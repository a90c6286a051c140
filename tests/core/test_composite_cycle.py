"""CompositePodGroup trees (KEP-6012) through a simulation: one block, one rack per
replica, quorum of child groups, a parent's failure undoing its children, Invalid trees."""

from kubesched.core.api import from_manifest
from kubesched.core.api.scheduling_v1beta1 import COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod, pod_group

REF = {"workloadName": "job", "templateName": "replica"}


def composite(name, min_groups, key=None, parent=None, workload="job"):
    spec = {"workloadRef": {**REF, "workloadName": workload}, "schedulingPolicy": {"gang": {"minGroupCount": min_groups}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                          "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def replica(name, size, parent="job"):
    return pod_group(name, size, topology_key="rack", parentCompositePodGroupName=parent, workloadRef=REF)


def cluster(busy=()):
    nodes = [node(f"b{b}-r{r}-n{i}", cpu="2", labels={"block": f"b{b}", "rack": f"b{b}-r{r}"})
             for b in range(2) for r in range(2) for i in range(2)]
    return [*nodes, *(pod(f"busy-{n}", cpu="2", node_name=n) for n in busy)]


def workers(group, count, cpu="2"):
    return [pod(f"{group}-{i}", cpu=cpu, pod_group=group) for i in range(count)]


def run(*objects):
    sim = Simulation()
    sim.create(list(objects))
    sim.run()
    return sim


def placed(sim, prefix):
    return {p.metadata.name: p.spec.node_name for p in sim.pods() if p.metadata.name.startswith(prefix)}


def root_condition(sim, name="job"):
    return sim.cluster.get("CompositePodGroup", name, "default").condition(COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED)


def test_each_replica_gets_its_own_rack_inside_one_block():
    # rack b0-r0 is half taken: block b0 cannot hold two replicas of two 2-CPU workers each
    sim = run(*cluster(busy=["b0-r0-n0"]), composite("job", 2, key="block"), replica("rep-0", 2), replica("rep-1", 2),
              *workers("rep-0", 2), *workers("rep-1", 2))
    nodes = {**placed(sim, "rep-0"), **placed(sim, "rep-1")}
    assert all(nodes.values()) and {n.split("-")[0] for n in nodes.values()} == {"b1"}, nodes
    racks = {group: {n.rsplit("-", 1)[0] for n in placed(sim, group).values()} for group in ("rep-0", "rep-1")}
    assert all(len(r) == 1 for r in racks.values()) and racks["rep-0"] != racks["rep-1"], racks
    assert root_condition(sim).status == "True"


def test_the_tree_waits_for_its_quorum_of_ready_groups():
    sim = run(*cluster(), composite("job", 2, key="block"), replica("rep-0", 2), replica("rep-1", 2),
              *workers("rep-0", 2), *workers("rep-1", 1))
    assert not any(placed(sim, "rep").values())
    status = sim.scheduler.queued(sim.pod("rep-0-0")).gating_status
    assert status.message() == 'waiting for composite pod group "job" tree to meet quorum'
    sim.create(workers("rep-1", 2)[1:])
    sim.run()
    assert all(placed(sim, "rep").values())


def test_a_parent_that_cannot_fit_undoes_the_children_that_did():
    # every block has one free rack only: the first replica fits, the second does not, so neither runs
    sim = run(*cluster(busy=["b0-r0-n0", "b1-r0-n0"]), composite("job", 2, key="block"), replica("rep-0", 2),
              replica("rep-1", 2), *workers("rep-0", 2), *workers("rep-1", 2))
    assert not any(placed(sim, "rep").values())
    assert all(not info.requested.get("cpu") or info.name.startswith(("b0-r0-n0", "b1-r0-n0"))
               for info in sim.scheduler.node_infos())
    got = root_condition(sim)
    assert (got.status, got.reason) == ("False", "Unschedulable")
    assert got.message.startswith("0/2 placements are available: b0: minCount (2) cannot be satisfied")


def test_a_tree_deeper_than_four_levels_is_invalid():
    levels = [composite("job", 1), *(composite(f"l{i}", 1, parent="job" if i == 1 else f"l{i - 1}") for i in range(1, 5))]
    sim = run(*cluster(), *levels, replica("rep-0", 1, parent="l4"), *workers("rep-0", 1))
    assert not any(placed(sim, "rep").values())
    got = root_condition(sim)
    assert (got.status, got.reason) == ("False", "Invalid") and "levels deep, more than 4" in got.message


def test_groups_of_several_workloads_in_one_tree_are_invalid():
    other = pod_group("rep-1", 1, topology_key="rack", parentCompositePodGroupName="job",
                      workloadRef={"workloadName": "other", "templateName": "replica"})
    sim = run(*cluster(), composite("job", 2), replica("rep-0", 1), other, *workers("rep-0", 1), *workers("rep-1", 1))
    got = root_condition(sim)
    assert got.reason == "Invalid" and got.message == "the group tree spans several Workloads: job, other"


def test_a_chain_of_200_composite_groups_is_invalid_for_its_depth_not_waiting_for_quorum():
    levels = [composite("job", 1), *(composite(f"l{i}", 1, parent="job" if i == 1 else f"l{i - 1}")
                                     for i in range(1, 200))]
    sim = run(*cluster(), *levels, replica("rep-0", 1, parent="l199"), *workers("rep-0", 1))
    assert not any(placed(sim, "rep").values())
    got = root_condition(sim)
    assert (got.status, got.reason) == ("False", "Invalid")
    assert got.message == "the group tree is 5 levels deep, more than 4"  # found at the first group too deep
    scheduled = next(c for c in sim.pod("rep-0-0").status.conditions if c.type == "PodScheduled")
    assert "levels deep, more than 4" in scheduled.message and "quorum" not in scheduled.message


def test_a_pod_group_whose_parent_is_missing_waits_for_that_parent():
    sim = run(*cluster(), composite("job", 1), composite("mid", 1, parent="job"),
              replica("rep-0", 1, parent="absent"), *workers("rep-0", 1))
    assert not any(placed(sim, "rep").values())
    status = sim.scheduler.queued(sim.pod("rep-0-0")).gating_status
    # upstream's words (the PodGroup manager cannot build the tree's snapshot)
    assert status.message() == "failed to build hierarchy snapshot: composite pod group object not found in state " \
                               "for compositepodgroup/default/absent"
    sim.create([composite("absent", 1, parent="mid")])
    sim.run()
    assert all(placed(sim, "rep").values())
