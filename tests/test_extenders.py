"""Scheduler extenders in a scheduling run (issue 37): a KubeSchedulerConfiguration's ``extenders`` against a
real HTTP extender on 127.0.0.1 - its filter and weighted scores decide where pods go, its reasons reach the
pending pod and ``explain``, and a failing extender fails the attempt unless it is ignorable."""

from __future__ import annotations

from pathlib import Path

from extender_server import ExtenderServer, dead_url, node_names
from kubesched.analysis.explain import explain, extender_lines
from kubesched.core.framework.config import API_VERSION, KIND
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.drivers.simulation import Simulation
from kubesched.testing import node, pod

ROOT = Path(__file__).resolve().parents[1]


def _config(*extenders: dict) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "extenders": list(extenders)}


def _node_of(sim: Simulation, name: str) -> str:
    return sim.cluster.get("Pod", name, "default").spec.node_name


def _condition(sim: Simulation, name: str):
    return next(c for c in sim.cluster.get("Pod", name, "default").status.conditions if c.type == "PodScheduled")


def test_the_extenders_preferred_node_wins_with_weight_5_over_the_plugins_scores():
    prefer_busy = lambda body: [{"Host": n, "Score": 10 if n == "busy" else 0} for n in node_names(body)]  # noqa: E731
    with ExtenderServer(prioritize=prefer_busy) as server:
        sim = Simulation(_config({"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 5}))
        # the plugins prefer the empty node (least allocated, balanced); the extender's 10 x 5 x 10 outweighs them
        sim.create([node("busy", cpu="8", memory="16Gi"), node("idle", cpu="8", memory="16Gi"),
                    pod("running", cpu="6", memory="12Gi", node_name="busy")])
        sim.create([pod("web", cpu="1", memory="1Gi")])
        sim.run()
        assert _node_of(sim, "web") == "busy"
        assert len(server.bodies("prioritize")) == 1


def test_a_node_the_extender_rejects_never_gets_the_pod_and_the_pending_message_carries_its_reason():
    def reject_gpu_a(body):
        names = node_names(body)
        return {"NodeNames": [n for n in names if n != "gpu-a"],
                "FailedNodes": {"gpu-a": "GPU memory fragmented"} if "gpu-a" in names else {}}

    log = DecisionLog()
    with ExtenderServer(filter=reject_gpu_a) as server:
        config = {"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}
        sim = Simulation(_config(config), decisions=log)
        sim.create([node("gpu-a", cpu="4"), node("gpu-b", cpu="4")])
        sim.create([pod(f"job-{i}", cpu="1") for i in range(4)] + [pod("late", cpu="1")])
        sim.run()
        # nodeCacheCapable: names, not Node objects
        body = server.bodies("filter")[0]
        assert body["Nodes"] is None and sorted(body["NodeNames"]) == ["gpu-a", "gpu-b"]
    assert [_node_of(sim, f"job-{i}") for i in range(4)] == ["gpu-b"] * 4
    # gpu-b is full: the fifth pod is pending, its message naming what each node said
    assert _node_of(sim, "late") == ""
    condition = _condition(sim, "late")
    assert condition.reason == "Unschedulable"
    assert condition.message.startswith("0/2 nodes are available: 1 GPU memory fragmented, 1 Insufficient cpu. "
                                        "preemption: ")
    # explain names the extender and its message
    answer = explain(log.records, "default/late")
    assert f"rejected by extender {server.url}: GPU memory fragmented (1 node(s): gpu-a)" in extender_lines(
        answer["last"])


def test_a_pod_without_a_managed_resource_is_not_sent_to_the_extender():
    keep_all = lambda body: {"NodeNames": body["NodeNames"]}  # noqa: E731
    with ExtenderServer(filter=keep_all) as server:
        sim = Simulation(_config({"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True,
                                  "managedResources": [{"name": "example.com/gpu-share", "ignoredByScheduler": True}]}))
        gpu = node("gpu", cpu="4")
        sim.create([gpu, pod("plain", cpu="1"), pod("shared", cpu="1", extra_resources={"example.com/gpu-share": "1"})])
        sim.run()
        sent = [b["Pod"]["metadata"]["name"] for b in server.bodies("filter")]
    assert sent == ["shared"]
    # ignoredByScheduler: NodeResourcesFit leaves example.com/gpu-share (which no node reports) to the extender
    assert _node_of(sim, "plain") == "gpu" and _node_of(sim, "shared") == "gpu"


def test_a_dead_ignorable_extender_is_skipped():
    sim = Simulation(_config({"urlPrefix": dead_url(), "filterVerb": "filter", "prioritizeVerb": "prioritize",
                              "weight": 1, "ignorable": True}))
    sim.create([node("n1", cpu="4"), node("n2", cpu="4"), pod("p", cpu="1")])
    sim.run()
    assert _node_of(sim, "p") in ("n1", "n2")


def test_a_dead_extender_leaves_the_pod_unscheduled_with_its_error():
    url = dead_url()
    sim = Simulation(_config({"urlPrefix": url, "filterVerb": "filter"}))
    sim.create([node("n1", cpu="4"), node("n2", cpu="4"), pod("p", cpu="1")])
    sim.run(until=sim.clock.now() + 30)
    assert _node_of(sim, "p") == ""
    condition = _condition(sim, "p")
    assert condition.reason == "SchedulerError"
    assert condition.message.startswith(f'Post "{url}/filter": ')
    assert sim.scheduler.stats.errors >= 2  # retried after backoff, failing each time


def test_the_example_extender_places_web_on_the_preferred_node_and_rejects_the_draining_one():
    import importlib.util
    import threading

    spec = importlib.util.spec_from_file_location("example_extender", ROOT / "examples/extender/extender.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    server = example.serve("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = (ROOT / "examples/extender/scheduler-config.yaml").read_text().replace(
            "127.0.0.1:8888", f"127.0.0.1:{server.server_address[1]}")
        path = ROOT / "examples/extender/cluster.yaml"
        import yaml

        log = DecisionLog()
        sim = Simulation.from_paths([path], config=yaml.safe_load(config), decisions=log)
        sim.run()
        assert _node_of(sim, "web") == "worker-3"
        lines = extender_lines(explain(log.records, "default/web")["last"])
        assert any("rejected by extender" in line and "node is draining: kernel-upgrade (1 node(s): worker-1)" in line
                   for line in lines)
    finally:
        server.shutdown()
        server.server_close()


def test_the_preempt_verb_narrows_preemption_to_the_nodes_and_victims_the_extender_keeps():
    def only_n2(body):
        victims = body["NodeNameToMetaVictims"]
        assert body["NodeNameToVictims"] is None and sorted(victims) == ["n1", "n2"]
        return {"NodeNameToMetaVictims": {"n2": victims["n2"]}}

    with ExtenderServer(preempt=only_n2) as server:
        sim = Simulation(_config({"urlPrefix": server.url, "preemptVerb": "preempt", "nodeCacheCapable": True}))
        sim.create([node("n1", cpu="2"), node("n2", cpu="2"),
                    pod("low-1", cpu="2", priority=1, node_name="n1"), pod("low-2", cpu="2", priority=1, node_name="n2")])
        sim.create([pod("urgent", cpu="2", priority=100)])
        sim.run()
        assert len(server.bodies("preempt")) == 1
    assert _node_of(sim, "urgent") == "n2"
    assert sim.cluster.get("Pod", "low-1", "default") is not None
