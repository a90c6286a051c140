"""kubesched's own guarantees for gangs, beyond upstream (each with its switch):
a stranded gang's replacements go first in their priority band
(PrioritySort ``strandedGangsFirst``), and a large gang is not starved for
ever by a stream of small pods (PodGroupReservation)."""

from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod, pod_group


def profile(plugins=None, args=None):
    body = {"schedulerName": "default-scheduler"}
    if plugins:
        body["plugins"] = plugins
    if args:
        body["pluginConfig"] = [{"name": name, "args": a} for name, a in args.items()]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [body]}


def stranded_race(config=None):
    """A running gang of 2 loses a member; its replacement and a new pod of the same
    priority (queued first) want the one CPU freed."""
    sim = Simulation(config=config)
    sim.create([node("n0", cpu="2"), pod_group("g", 2), pod("g-0", cpu="1", pod_group="g"),
                pod("g-1", cpu="1", pod_group="g")])
    sim.run()
    assert sim.pod("g-1").spec.node_name == "n0"
    sim.cluster.delete("Pod", "g-1", "default")
    sim.create([pod("new", cpu="1"), pod("g-1b", cpu="1", pod_group="g")])
    sim.run()
    return sim


def test_a_stranded_gangs_replacement_goes_before_new_pods_of_its_priority():
    sim = stranded_race()
    assert (sim.pod("g-1b").spec.node_name, sim.pod("new").spec.node_name) == ("n0", "")


def test_explain_says_a_gang_below_its_min_count_is_stranded():
    from kubesched.analysis.explain_podgroup import explain_pod_group
    from kubesched.core.observability.decision_log import DecisionLog

    log = DecisionLog()
    sim = Simulation(decisions=log)
    sim.create([node("n0", cpu="3"), pod_group("g", 2), pod("g-0", cpu="1", pod_group="g"),
                pod("g-1", cpu="1", pod_group="g"), pod("other", cpu="1")])
    sim.run()
    sim.cluster.delete("Pod", "g-1", "default")
    sim.create([pod("g-1b", cpu="2", pod_group="g")])
    sim.run()
    answer = explain_pod_group(log.records, "default/g", sim.get("PodGroup", "default/g"), sim.pods())
    assert answer["status"] == "Stranded" and "1 of its minCount 2 pods" in answer["message"]


def test_without_the_switch_the_new_pod_queued_first_wins():
    sim = stranded_race(profile(args={"PrioritySort": {"strandedGangsFirst": False}}))
    assert (sim.pod("g-1b").spec.node_name, sim.pod("new").spec.node_name) == ("", "n0")


def stream(config=None, until=900.0):
    """A 4-CPU node full of 1-CPU pods, one finishing every 10 s and a new one
    arriving in its place; a gang of two 2-CPU pods waits for room."""
    sim = Simulation(config=config)
    sim.create([node("n0", cpu="4"), *(pod(f"small-{i}", cpu="1") for i in range(4))])
    sim.run()
    sim.create([pod_group("big", 2), pod("big-0", cpu="2", pod_group="big"), pod("big-1", cpu="2", pod_group="big")])
    counter = iter(range(4, 10_000))

    def churn():
        running = [p for p in sim.pods() if p.metadata.name.startswith("small") and p.spec.node_name]
        if running:
            sim.cluster.delete("Pod", running[0].metadata.name, "default")
        sim.cluster.create(pod(f"small-{next(counter)}", cpu="1"))
        sim.clock.call_later(10, churn)

    sim.clock.call_later(10, churn)
    sim.run(until=sim.clock.now() + until)
    return sim


def test_without_a_reservation_the_stream_starves_the_gang():
    sim = stream()
    assert not sim.pod("big-0").spec.node_name


def test_a_gang_waiting_longer_than_its_window_reserves_its_nodes_and_binds():
    config = profile({"multiPoint": {"enabled": [{"name": "PodGroupReservation"}]}},
                     {"PodGroupReservation": {"starvationWindowSeconds": 60}})
    sim = stream(config, until=300)
    assert sim.pod("big-0").spec.node_name == "n0" and sim.pod("big-1").spec.node_name == "n0"
    bound = [e for e in sim.events("Scheduled") if e.involved_object.name.startswith("big")]
    assert max(e.first_timestamp for e in bound) - sim.start_time <= 120 + 10  # within the reservation window
