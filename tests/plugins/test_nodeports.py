"""NodePorts: a pod's host ports must be free on the node (same protocol and port, and the
same IP or 0.0.0.0 on either side)."""

from __future__ import annotations

import pytest

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import ASSIGNED_POD, NODE, ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.nodeports import NodePorts
from kubesched.testing import node, pod

from .helpers import code, condition, failure, filter_all, info, make, on, reasons, run_pre_filter, simulate

REASON = "node(s) didn't have free ports for the requested pod ports"


def ports_pod(name: str, *ports: tuple[str, str, int], cpu: str | None = None):
    """A pod whose container asks for host ports given as (hostIP, protocol, hostPort)."""
    container: dict = {"name": "c", "ports": [
        {"containerPort": port, "hostPort": port, **({"hostIP": ip} if ip else {}), **({"protocol": proto} if proto else {})}
        for ip, proto, port in ports]}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    return pod(name, containers=[container])


def check(existing, wanted) -> Code:
    plugin = make(NodePorts)
    infos = [info(node("n"), *[on(p, "n") for p in existing]), info(node("empty"))]
    state, _, status = run_pre_filter(plugin, wanted, infos)
    assert status is None
    result, on_empty = filter_all(plugin, state, wanted, infos)  # the batch Filter must agree on both nodes
    assert on_empty is None
    if result is not None:
        assert reasons(result) == (REASON,)
    return code(result)


U, C = Code.UNSCHEDULABLE, Code.SUCCESS


@pytest.mark.parametrize("used, wanted, expected", [
    (("", "", 8080), ("", "", 8080), U),                          # both on every address
    (("", "", 8080), ("10.0.0.1", "TCP", 8080), U),               # used on 0.0.0.0 blocks any IP
    (("10.0.0.1", "TCP", 8080), ("", "TCP", 8080), U),            # wanted on 0.0.0.0 clashes with any IP
    (("10.0.0.1", "TCP", 8080), ("0.0.0.0", "TCP", 8080), U),     # explicit 0.0.0.0 is the same
    (("10.0.0.1", "TCP", 8080), ("10.0.0.1", "TCP", 8080), U),    # same IP
    (("10.0.0.1", "TCP", 8080), ("10.0.0.2", "TCP", 8080), C),    # different specific IPs
    (("", "TCP", 8080), ("", "UDP", 8080), C),                    # different protocol
    (("", "UDP", 53), ("", "UDP", 53), U),
    (("", "", 53), ("", "SCTP", 53), C),                          # empty protocol is TCP
    (("", "", 8080), ("", "", 8081), C),                          # different port
])
def test_conflicts(used, wanted, expected):
    assert check([ports_pod("holder", used)], ports_pod("p", wanted)) == expected


def test_any_one_taken_port_of_several_rejects():
    holder = ports_pod("holder", ("", "TCP", 443))
    assert check([holder], ports_pod("p", ("", "TCP", 80), ("", "TCP", 443))) == U
    assert check([holder], ports_pod("p", ("", "TCP", 80), ("", "TCP", 8443))) == C


def test_ports_of_every_pod_on_the_node_count():
    pods = [ports_pod("a", ("", "TCP", 80)), ports_pod("b", ("10.0.0.2", "UDP", 53)), pod("c")]
    assert check(pods, ports_pod("p", ("10.0.0.2", "UDP", 53))) == U
    assert check(pods, ports_pod("p", ("10.0.0.3", "UDP", 53))) == C


def test_prefilter_skips_a_pod_without_host_ports():
    plugin = make(NodePorts)
    # a containerPort without hostPort is not a host port
    no_host = pod("p", containers=[{"name": "c", "ports": [{"containerPort": 80}]}])
    for p in (pod("p"), no_host):
        _, result, status = run_pre_filter(plugin, p, [])
        assert result is None and status.code == Code.SKIP


def test_filter_without_prefilter_state_reads_the_pod():
    plugin = make(NodePorts)
    infos = [info(node("n"), on(ports_pod("holder", ("", "", 80)), "n")), info(node("m"))]
    statuses = filter_all(plugin, CycleState(), ports_pod("p", ("", "", 80)), infos)
    assert [code(s) for s in statuses] == [U, C]


def test_hint_only_a_deleted_pod_holding_our_port_helps():
    plugin = make(NodePorts)
    events = {reg.event: reg.hint for reg in plugin.events_to_register()}
    hint = events[ClusterEvent(ASSIGNED_POD, ActionType.DELETE)]
    assert ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE) in events
    p = ports_pod("p", ("", "TCP", 80))
    assert hint(p, on(ports_pod("holder", ("10.0.0.1", "TCP", 80)), "n"), None) == QueueingHint.QUEUE
    assert hint(p, on(ports_pod("holder", ("", "TCP", 81)), "n"), None) == QueueingHint.QUEUE_SKIP
    assert hint(p, on(ports_pod("holder", ("", "UDP", 80)), "n"), None) == QueueingHint.QUEUE_SKIP
    assert hint(p, on(pod("holder"), "n"), None) == QueueingHint.QUEUE_SKIP


# --- end to end ----------------------------------------------------------------------------


def test_pod_goes_to_the_node_where_its_port_is_free():
    sim = simulate([
        node("a"), node("b"),
        on(pod("web-0", host_ports=[80]), "a"),
        pod("web-1", cpu="100m", host_ports=[80]),
    ])
    assert sim.placements()["default/web-1"] == "b"


def test_specific_ip_can_share_a_port_with_another_ip():
    sim = simulate([
        node("a"),
        on(ports_pod("dns-1", ("10.0.0.1", "UDP", 53)), "a"),
        ports_pod("dns-2", ("10.0.0.2", "UDP", 53), cpu="100m"),
    ])
    assert sim.placements()["default/dns-2"] == "a"


def test_port_taken_everywhere_then_freed():
    sim = simulate([
        node("a"), node("b"), node("c"),
        on(pod("h-a", host_ports=[80]), "a"),
        on(ports_pod("h-b", ("10.1.1.1", "TCP", 80)), "b"),
        on(pod("h-c", host_ports=[80]), "c"),
        pod("p", cpu="100m", host_ports=[80]),
    ])
    assert sim.placements()["default/p"] == ""
    message = ("0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod ports. "
               "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
    assert failure(sim) == message
    assert (condition(sim, "p").reason, condition(sim, "p").message) == ("Unschedulable", message)

    sim.cluster.delete("Pod", "h-b", "default")
    sim.run()
    assert sim.placements()["default/p"] == "b"
