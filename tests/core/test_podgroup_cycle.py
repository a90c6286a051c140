"""The PodGroup scheduling cycle, through a simulation: all or nothing, one
topology domain, members that arrive late, what a failed gang releases, and
the PodGroup's condition."""

import pytest

import kubesched
from kubesched import Status
from kubesched.core.api import from_manifest
from kubesched.core.api.scheduling_v1beta1 import POD_GROUP_INITIALLY_SCHEDULED
from kubesched.core.framework import cycle_state
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.drivers.simulation import Simulation
from kubesched.testing import DRIVER, device, device_class, node, pod, pod_group, resource_slice

from .helpers import config, simulation


def run(*objects, **kwargs) -> Simulation:
    sim = Simulation(**kwargs)
    sim.create(list(objects))
    sim.run()
    return sim


def members(sim, prefix="p"):
    return {p.metadata.name: p.spec.node_name for p in sim.pods() if p.metadata.name.startswith(prefix)}


def condition(sim, name="g"):
    return sim.cluster.get("PodGroup", name, "default").condition(POD_GROUP_INITIALLY_SCHEDULED)


def pod_condition(sim, name):
    return next(c for c in sim.pod(name).status.conditions if c.type == "PodScheduled")


def rack_nodes(racks=3, per_rack=2, cpu="2"):
    return [node(f"r{r}-n{i}", cpu=cpu, labels={"topology.kubernetes.io/rack": f"rack-{r}"})
            for r in range(racks) for i in range(per_rack)]


def test_a_gang_of_min_count_pods_binds_all():
    sim = run(*(node(f"n{i}", cpu="2") for i in range(3)), pod_group("g", 3),
              *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(3)))
    assert all(members(sim).values()), members(sim)
    got = condition(sim)
    assert (got.status, got.reason, got.observed_generation) == ("True", "Scheduled", 1)
    assert sim.scheduler.stats.bound == 3


def test_one_pod_short_binds_none_and_waits_with_the_message():
    sim = run(*(node(f"n{i}", cpu="2") for i in range(3)), pod_group("g", 4),
              *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(3)))
    assert not any(members(sim).values())
    for name in ("p0", "p1", "p2"):
        queued = sim.scheduler.queued(sim.pod(name))
        assert queued.gating_plugin == "GangScheduling"
        assert queued.gating_status.message() == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert sim.scheduler.stats.cycles == 0  # never tried alone
    assert sim.scheduler.pending_counts()["gated"] == 3


def test_a_pod_naming_a_group_that_never_appears_is_never_scheduled_alone():
    sim = run(node("n0"), pod("p0", cpu="1", pod_group="missing"))
    assert members(sim) == {"p0": ""}
    assert sim.scheduler.queued(sim.pod("p0")).gating_status.message() == \
        'waiting for pods\'s pod group "missing" to appear in scheduling queue'


def test_a_gang_that_fits_only_partly_binds_none_and_releases_every_reservation():
    """5 members on 2 nodes of 2 CPUs, each with a device of its own: 4 could run, none does;
    no CPU, no device stays taken."""
    template = from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}}})
    objects = [device_class(), template, pod_group("g", 5)]
    for i in range(2):
        objects += [node(f"n{i}", cpu="2"), resource_slice(f"n{i}", [device(f"gpu-{d}") for d in range(3)])]
    for i in range(5):
        objects.append(pod(f"p{i}", cpu="1", pod_group="g",
                           resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}]))
    sim = run(*objects)
    assert not any(members(sim).values())
    expected = ("minCount (5) cannot be satisfied: 4 scheduled, 0 remaining, "
                "pod group preemption: No preemption victims found for incoming preemptor")
    assert condition(sim).message == expected
    assert pod_condition(sim, "p0").message == expected
    assert all(not info.requested.get("cpu") for info in sim.scheduler.node_infos())
    assert sim.scheduler.cache_sizes()["assumed_pods"] == 0
    claims = sim.cluster.list("ResourceClaim").items
    assert claims and all(c.status.allocation is None and not c.status.reserved_for for c in claims)


def test_a_late_member_completes_the_gang():
    sim = Simulation()
    sim.create([node("n0", cpu="4"), pod_group("g", 3), *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(2))])
    sim.run()
    assert not any(members(sim).values())
    sim.create([pod("p2", cpu="1", pod_group="g")])
    sim.run()
    assert members(sim) == {"p0": "n0", "p1": "n0", "p2": "n0"}


def test_lowering_min_count_lets_the_gang_go():
    sim = Simulation()
    sim.create([node("n0", cpu="4"), pod_group("g", 3), *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(2))])
    sim.run()
    group = sim.cluster.get("PodGroup", "g", "default")
    gang = group.spec.scheduling_policy.gang
    import attrs
    sim.cluster.update(attrs.evolve(group, spec=attrs.evolve(group.spec, scheduling_policy=attrs.evolve(
        group.spec.scheduling_policy, gang=attrs.evolve(gang, min_count=2)))))
    sim.run()
    assert members(sim) == {"p0": "n0", "p1": "n0"}


def test_a_rack_constraint_puts_all_members_in_one_rack_that_fits():
    # rack-0 has 2 CPUs left in all, rack-1 is full, rack-2 has room for the 3 members
    busy = [pod("busy-0", cpu="1500m", node_name="r0-n0"), pod("busy-1", cpu="1500m", node_name="r0-n1"),
            pod("busy-2", cpu="2", node_name="r1-n0"), pod("busy-3", cpu="2", node_name="r1-n1")]
    sim = run(*rack_nodes(), *busy, pod_group("g", 3, topology_key="topology.kubernetes.io/rack"),
              *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(3)))
    placed = members(sim)
    assert all(placed.values()) and {name.split("-")[0] for name in placed.values()} == {"r2"}, placed


def test_no_rack_fits_none_bound_with_the_placements_message():
    sim = run(*rack_nodes(), pod_group("g", 3, topology_key="topology.kubernetes.io/rack"),
              *(pod(f"p{i}", cpu="2", pod_group="g") for i in range(3)))
    assert not any(members(sim).values())
    message = condition(sim).message
    assert message.startswith("0/3 placements are available: rack-0: minCount (3) cannot be satisfied"), message


def test_members_already_placed_lock_the_groups_rack():
    sim = Simulation()
    sim.create([*rack_nodes(per_rack=2, cpu="1"), pod_group("g", 1, topology_key="topology.kubernetes.io/rack"),
                pod("p0", cpu="1", pod_group="g")])
    sim.run()
    rack = members(sim)["p0"].split("-")[0]
    sim.create([pod("p1", cpu="1", pod_group="g"), pod("p2", cpu="1", pod_group="g")])
    sim.run()
    placed = members(sim)
    assert placed["p1"].startswith(rack) and placed["p2"] == "", placed  # the rack is full: p2 waits


def test_a_basic_group_schedules_what_fits():
    sim = run(node("n0", cpu="2"), pod_group("g"), *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(3)))
    placed = members(sim)
    assert sorted(placed.values()) == ["", "n0", "n0"], placed
    assert condition(sim).status == "True"


def test_the_condition_never_goes_back_from_true():
    sim = Simulation()
    sim.create([node("n0", cpu="2"), pod_group("g"), pod("p0", cpu="1", pod_group="g")])
    sim.run()
    sim.create([pod("p1", cpu="4", pod_group="g")])
    sim.run()
    assert members(sim) == {"p0": "n0", "p1": ""}
    assert condition(sim).status == "True"


def test_members_with_another_priority_fail_the_group_as_a_scheduler_error():
    sim = run(node("n0", cpu="4"), pod_group("g", 2, priority=10), pod("p0", cpu="1", pod_group="g", priority=10),
              pod("p1", cpu="1", pod_group="g", priority=5))
    assert not any(members(sim).values())
    got = condition(sim)
    assert got.reason == "SchedulerError"
    assert got.message == ("all pods in a single pod group should have the same priority as the pod group's "
                           "priority, got 5 and 10")


def test_a_group_is_ordered_by_its_priority_and_attempted_once_for_all_members():
    sim = run(node("n0", cpu="3"), pod_group("low", 3, priority=1), pod_group("high", 3, priority=100),
              *(pod(f"low{i}", cpu="1", pod_group="low", priority=1) for i in range(3)),
              *(pod(f"high{i}", cpu="1", pod_group="high", priority=100) for i in range(3)))
    assert members(sim, "high") == {f"high{i}": "n0" for i in range(3)}
    assert not any(members(sim, "low").values())


def test_members_signed_alike_are_placed_as_members_signed_apart():
    """Members with one signature reuse the member before them's Filter and Score within a placement (only the
    node it took is judged again); members whose labels differ run every cycle in full.  Same cluster, same
    tie-break seed: the same nodes for the same members, the same scores recorded, with fewer Filter calls.
    Three racks of uneven nodes, so that nodes fill up (the full cycle again) and one rack cannot hold the gang."""
    from kubesched.core.observability import metrics
    key = ("NodeResourcesFit", "Filter", "default-scheduler")
    outcomes = []
    for distinct in (False, True):
        log, before = DecisionLog(), metrics.PLUGIN_EVALUATIONS.counts[key]
        nodes = [node(f"r{r}-n{i}", cpu=str(1 + (r + i) % 4), labels={"topology.kubernetes.io/rack": f"rack-{r}"})
                 for r in range(3) for i in range(4)]
        sim = run(*nodes, pod_group("g", 9, topology_key="topology.kubernetes.io/rack"),
                  *(pod(f"p{i}", cpu="1" if i % 4 else "500m", pod_group="g", labels={"i": str(i) if distinct else ""})
                    for i in range(9)), decisions=log)
        scores = {r["pod"]: (r.get("node"), r.get("score"), r.get("filter")) for r in log.records
                  if r.get("phase") == "scheduling"}
        outcomes.append((members(sim), scores, metrics.PLUGIN_EVALUATIONS.counts[key] - before))
    (alike, alike_scores, alike_filtered), (apart, apart_scores, apart_filtered) = outcomes
    assert all(alike.values()) and alike == apart
    assert alike_scores == apart_scores
    assert alike_filtered < apart_filtered


def test_a_members_prefilter_in_each_placement_is_counted_as_a_run_though_kept(monkeypatch):
    """Each placement starts from the same state, so a member's PreFilter from the first placement is kept for
    its full cycle in the next ones (cycles neither recorded nor sampled for plugin metrics): the same nodes,
    the same PreFilter evaluations and extension-point observations as cycles sampled (PreFilter run in each),
    with fewer PreFilter runs.  Three racks of uneven nodes: every rack tried, nodes filling up."""
    from kubesched.core.framework import cycle_state
    from kubesched.core.framework.runtime import Framework
    from kubesched.core.observability import metrics

    from .test_metrics import sample

    key = ("NodeResourcesFit", "PreFilter", "default-scheduler")
    labels = {"extension_point": "PreFilter", "status": "Success", "profile": "default-scheduler"}
    real_pre_filter = Framework.run_pre_filter
    outcomes = []
    for draw in (0.0, 0.99):  # every cycle sampled for plugin metrics, then none
        runs: list[int] = []
        monkeypatch.setattr(Framework, "run_pre_filter", lambda *a, runs=runs: runs.append(1) or real_pre_filter(*a))
        monkeypatch.setattr(cycle_state, "_SAMPLE", lambda draw=draw: draw)
        counted = metrics.PLUGIN_EVALUATIONS.counts[key]
        observed = sample("scheduler_framework_extension_point_duration_seconds_count", **labels)
        nodes = [node(f"r{r}-n{i}", cpu=str(1 + (r + i) % 4), labels={"topology.kubernetes.io/rack": f"rack-{r}"})
                 for r in range(3) for i in range(4)]
        sim = run(*nodes, pod_group("g", 9, topology_key="topology.kubernetes.io/rack"),
                  *(pod(f"p{i}", cpu="1" if i % 4 else "500m", pod_group="g") for i in range(9)))
        outcomes.append((members(sim), metrics.PLUGIN_EVALUATIONS.counts[key] - counted,
                         sample("scheduler_framework_extension_point_duration_seconds_count", **labels) - observed,
                         len(runs)))
    (run_placed, run_counted, run_observed, run_runs), (kept_placed, kept_counted, kept_observed, kept_runs) = outcomes
    assert all(kept_placed.values()) and kept_placed == run_placed
    assert (kept_counted, kept_observed) == (run_counted, run_observed) and run_observed > 3
    assert kept_runs < run_runs


def test_the_decision_record_tells_the_racks_tried():
    log = DecisionLog()
    run(*rack_nodes(), pod_group("g", 3, topology_key="topology.kubernetes.io/rack"),
        *(pod(f"p{i}", cpu="2", pod_group="g") for i in range(3)), decisions=log)
    (record, *_) = [r for r in log.records if r.get("phase") == "podgroup"]
    assert record["podGroup"] == "default/g" and record["result"] == "Unschedulable" and record["minCount"] == 3
    assert [p["name"] for p in record["placements"]] == ["rack-0", "rack-1", "rack-2"]
    first = record["placements"][0]
    assert (first["placed"], first["feasible"]) == (2, False)
    assert first["firstUnplaced"]["pod"] == "default/p2"
    assert "Insufficient cpu" in first["firstUnplaced"]["message"]


def test_the_record_says_how_many_devices_a_rack_lacks():
    """Two GPUs per node, members asking two each: the third member of a rack of two
    nodes lacks two free devices of the class."""
    template = from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": DRIVER,
                                                                          "count": 2}}]}}}})
    objects = [device_class(), template, pod_group("g", 3, topology_key="rack")]
    for i in range(2):
        objects += [node(f"n{i}", labels={"rack": "r1"}), resource_slice(f"n{i}", [device("gpu-0"), device("gpu-1")])]
    objects += [pod(f"p{i}", cpu="1", pod_group="g", resourceClaims=[{"name": "g", "resourceClaimTemplateName": "two"}])
                for i in range(3)]
    log = DecisionLog()
    run(*objects, decisions=log)
    (record, *_) = [r for r in log.records if r.get("phase") == "podgroup"]
    first = record["placements"][0]["firstUnplaced"]
    assert first["shortfall"] == {"n0": {f"{DRIVER} devices": 2}, "n1": {f"{DRIVER} devices": 2}}


class Crowded:
    """Scores a node by the pods on it, out of range (or failing) once one is there; ``how`` (its args): a score
    above 100 through ``score``, or through ``score_row`` too, a Score error, or a NormalizeScore error."""

    name = "Crowded"

    def __init__(self, args, handle):
        self.how = args["how"]

    @kubesched.hookimpl
    def sign_pod(self, pod):
        return []  # reads nothing of the pod: members may reuse the cycle before

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        if node_info.pods and self.how == "error":
            return Status.as_error("too crowded")
        return 40 + 70 * len(node_info.pods)

    @kubesched.hookimpl
    def score_row(self, state, pod, table, row):
        return self.score(state, pod, table.info_array[row]) if self.how == "row" else None

    @kubesched.hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        if self.how == "normalize" and scores.max() > 100:
            return Status.as_error("cannot normalize a crowd")
        if self.how == "normalize":
            scores.fill(0)
        return None


RANGE = 'plugin "Crowded" returns an invalid score 110, it should in the range of [0, 100] after normalizing'


@pytest.mark.parametrize("how, sampled, message", [
    ("range", False, RANGE),
    ("row", False, RANGE),
    ("row", True, RANGE),  # every cycle's plugin calls timed
    ("error", False, 'running Score plugin "Crowded": too crowded'),
    ("normalize", False, 'running Normalize on Score plugin "Crowded": cannot normalize a crowd'),
])
def test_a_score_error_of_a_member_reusing_the_cycle_before_fails_the_group_as_a_full_cycle_does(
        how, sampled, message, monkeypatch):
    """The second member re-scores only the node the first took (the same signature), and finds the same error
    there as a member signed apart, scoring every node, does."""
    if sampled:
        monkeypatch.setattr(cycle_state, "_SAMPLE", lambda: 0.0)
    cfg = config({"plugins": {"score": {"enabled": [{"name": "Crowded"}]}},
                  "pluginConfig": [{"name": "Crowded", "args": {"how": how}}]})
    got = []
    for distinct in (False, True):
        sim = simulation(cfg, Crowded)
        sim.create([*rack_nodes(racks=1, per_rack=3, cpu="4"), pod_group("g", 2),
                    *(pod(f"p{i}", cpu="1", pod_group="g", labels={"i": str(i) if distinct else ""})
                      for i in range(2))])
        sim.run()
        got.append((members(sim), condition(sim).reason, condition(sim).message))
    assert got[0] == got[1]
    assert got[0][0] == {"p0": "", "p1": ""} and got[0][1] == "SchedulerError" and message in got[0][2], got[0]


class Labelled:
    """Scores a node by its ``weight`` label alone (a member taking a node does not change it) and counts its
    NormalizeScore calls."""

    name = "Labelled"
    calls = 0

    def __init__(self, args, handle):
        pass

    @kubesched.hookimpl
    def sign_pod(self, pod):
        return []

    @kubesched.hookimpl
    def score(self, state, pod, node_info):
        return int(node_info.node.metadata.labels["weight"])

    @kubesched.hookimpl
    def normalize_score(self, state, pod, node_names, scores):
        Labelled.calls += 1
        scores[:] = scores * 100 // max(scores.max(), 1)
        return None


class MarkedLabelled(Labelled):
    """:class:`Labelled` with its NormalizeScore declared to read the scores alone."""

    @kubesched.hookimpl
    @kubesched.normalizes_scores_alone
    def normalize_score(self, state, pod, node_names, scores):
        return super().normalize_score(state, pod, node_names, scores)


@pytest.mark.parametrize("sampled", [False, True])
def test_a_normalize_score_of_the_scores_alone_is_not_run_again_for_a_member_whose_node_scores_the_same(
        sampled, monkeypatch):
    """A member reusing the cycle before re-scores the node the member before took: where that score did not
    change, a NormalizeScore marked ``normalizes_scores_alone`` keeps its answer (the same nodes, the same
    scores recorded, fewer calls); unmarked, or in cycles sampled for plugin metrics, it runs for every member."""
    monkeypatch.setattr(cycle_state, "_SAMPLE", lambda: 0.0 if sampled else 0.99)
    cfg = config({"plugins": {"score": {"enabled": [{"name": "Labelled"}]}}})
    got = []
    for plugin in (Labelled, MarkedLabelled):
        log = DecisionLog()
        sim = simulation(cfg, plugin, decisions=log)
        monkeypatch.setattr(Labelled, "calls", 0)
        nodes = [node(f"n{i}", cpu="4", labels={"weight": str(10 * (i + 1))}) for i in range(3)]
        sim.create([*nodes, pod_group("g", 6), *(pod(f"p{i}", cpu="1", pod_group="g") for i in range(6))])
        sim.run()
        scores = {r["pod"]: r.get("score") for r in log.records if r.get("phase") == "scheduling"}
        got.append((members(sim), scores, Labelled.calls))
    (unmarked, unmarked_scores, unmarked_calls), (marked, marked_scores, marked_calls) = got
    assert all(marked.values()) and marked == unmarked and marked_scores == unmarked_scores
    assert all(marked_scores[f"default/p{i}"]["plugins"] for i in range(6)), marked_scores
    assert unmarked_calls >= 6
    assert (marked_calls == unmarked_calls) if sampled else (marked_calls < unmarked_calls)
