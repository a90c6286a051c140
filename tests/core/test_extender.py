"""Scheduler extenders over HTTP (core/framework/extender.py) against a real server on 127.0.0.1: the wire
format of k8s.io/kube-scheduler/extender/v1, upstream's steps and their failures."""

from __future__ import annotations

import pytest

from extender_server import ExtenderServer, dead_url, node_names
from kubesched.core.api.meta import evolve
from kubesched.core.framework.config import Extender, ExtenderManagedResource
from kubesched.core.framework.extender import (
    EXTENDER_NAME,
    ExtenderError,
    HTTPExtender,
    build_extenders,
    extender_scores,
    extenders_binding,
    extenders_preemption,
    find_nodes_that_pass_extenders,
)
from kubesched.core.framework.status import Code, Status
from kubesched.testing import node, pod

NODES = [node(f"n{i}", cpu="4") for i in range(3)]


def _uid(obj, uid: str):
    return evolve(obj, metadata=evolve(obj.metadata, uid=uid))


def _extender(url: str, **fields) -> HTTPExtender:
    return HTTPExtender(Extender(url_prefix=url, **fields))


def test_filter_sends_the_pod_and_node_objects_and_reads_failed_nodes_with_their_messages():
    def answer(body):
        kept = [item for item in body["Nodes"]["items"] if item["metadata"]["name"] != "n1"]
        return {"Nodes": {"metadata": {}, "items": kept}, "NodeNames": None,
                "FailedNodes": {"n1": "n1 is reserved for batch"}, "FailedAndUnresolvableNodes": {}, "Error": ""}

    with ExtenderServer(filter=answer) as server:
        statuses: dict[str, Status] = {}
        kept = find_nodes_that_pass_extenders([_extender(server.url, filter_verb="filter")], pod("p", cpu="1"),
                                              NODES, statuses)
        (body,) = server.bodies("filter")
    assert kept == ["n0", "n2"]
    assert statuses == {"n1": Status(Code.UNSCHEDULABLE, ("n1 is reserved for batch",), EXTENDER_NAME)}
    # the Go field names of ExtenderArgs; the objects as Kubernetes JSON
    assert set(body) == {"Pod", "Nodes", "NodeNames"} and body["NodeNames"] is None
    assert body["Pod"]["metadata"]["name"] == "p" and body["Pod"]["spec"]["containers"][0]["resources"]
    assert node_names(body) == ["n0", "n1", "n2"] and body["Nodes"]["items"][0]["status"]["allocatable"]


def test_node_cache_capable_extenders_get_names_and_answer_names():
    def answer(body):
        return {"NodeNames": body["NodeNames"][1:], "FailedAndUnresolvableNodes": {"n0": "no GPU here"}}

    with ExtenderServer(filter=answer) as server:
        statuses: dict[str, Status] = {}
        kept = find_nodes_that_pass_extenders(
            [_extender(server.url, filter_verb="filter", node_cache_capable=True)], pod("p"), NODES, statuses)
        (body,) = server.bodies("filter")
    assert body["Nodes"] is None and body["NodeNames"] == ["n0", "n1", "n2"]
    assert kept == ["n1", "n2"]
    assert statuses["n0"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and statuses["n0"].reasons == ("no GPU here",)


def test_a_node_the_extender_invents_or_its_error_fails_the_filter():
    with ExtenderServer(filter=lambda body: {"NodeNames": ["elsewhere"]}) as server:
        with pytest.raises(ExtenderError, match="claims a filtered node 'elsewhere' which is not found"):
            find_nodes_that_pass_extenders([_extender(server.url, filter_verb="filter", node_cache_capable=True)],
                                           pod("p"), NODES, {})
    with ExtenderServer(filter=lambda body: {"Error": "quota service down"}) as server:
        with pytest.raises(ExtenderError, match="quota service down"):
            find_nodes_that_pass_extenders([_extender(server.url, filter_verb="filter")], pod("p"), NODES, {})


def test_a_non_200_answer_fails_with_upstreams_message():
    with ExtenderServer() as server:  # answers 404 to every verb
        with pytest.raises(ExtenderError, match=rf"failed filter with extender at URL {server.url}/filter, code 404"):
            find_nodes_that_pass_extenders([_extender(server.url, filter_verb="filter")], pod("p"), NODES, {})


def test_a_dead_extender_fails_the_attempt_unless_ignorable():
    url = dead_url()
    with pytest.raises(ExtenderError, match=f'Post "{url}/filter"'):
        find_nodes_that_pass_extenders([_extender(url, filter_verb="filter")], pod("p"), NODES, {})
    statuses: dict[str, Status] = {}
    assert find_nodes_that_pass_extenders([_extender(url, filter_verb="filter", ignorable=True)], pod("p"), NODES,
                                          statuses) == ["n0", "n1", "n2"]
    assert statuses == {}


def test_ignorable_extenders_are_called_last():
    configs = [Extender(url_prefix="http://a:1", ignorable=True), Extender(url_prefix="http://b:1"),
               Extender(url_prefix="http://c:1", ignorable=True), Extender(url_prefix="http://d:1")]
    assert [e.name for e in build_extenders(configs)] == ["http://b:1", "http://d:1", "http://a:1", "http://c:1"]


def test_only_pods_requesting_a_managed_resource_are_sent():
    with ExtenderServer(filter=lambda body: {"NodeNames": body["NodeNames"]}) as server:
        extender = _extender(server.url, filter_verb="filter", node_cache_capable=True,
                             managed_resources=(ExtenderManagedResource("example.com/gpu"),))
        find_nodes_that_pass_extenders([extender], pod("plain", cpu="1"), NODES, {})
        assert server.bodies("filter") == []
        find_nodes_that_pass_extenders([extender], pod("gpu", extra_resources={"example.com/gpu": "1"}), NODES, {})
        assert [b["Pod"]["metadata"]["name"] for b in server.bodies("filter")] == ["gpu"]


def test_prioritize_scores_are_scaled_by_weight_and_max_node_score_over_max_extender_priority():
    answer = [{"Host": "n0", "Score": 2}, {"Host": "n2", "Score": 10}, {"Host": "gone", "Score": 10}]
    with ExtenderServer(prioritize=lambda body: answer) as server:
        scores = extender_scores([_extender(server.url, prioritize_verb="prioritize", weight=5)], pod("p"), NODES)
    assert scores.tolist() == [2 * 5 * 10, 0, 10 * 5 * 10]


def test_a_failing_prioritize_gives_no_scores_ignorable_or_not():
    assert extender_scores([_extender(dead_url(), prioritize_verb="prioritize", weight=1)], pod("p"), NODES) is None


def test_bind_sends_extender_binding_args_and_reports_its_error():
    with ExtenderServer(bind=lambda body: {"Error": ""}) as server:
        assert extenders_binding([_extender(server.url, bind_verb="bind")], _uid(pod("p"), "u-1"), "n2") == (True, None)
        (body,) = server.bodies("bind")
    assert body == {"PodName": "p", "PodNamespace": "default", "PodUID": "u-1", "Node": "n2"}
    with ExtenderServer(bind=lambda body: {"Error": "node is full"}) as server:
        bound, status = extenders_binding([_extender(server.url, bind_verb="bind")], pod("p"), "n2")
    assert bound and status.code == Code.ERROR and status.message() == "node is full"
    # an ignorable binder that fails leaves the binding to the Bind plugins
    assert extenders_binding([_extender(dead_url(), bind_verb="bind", ignorable=True)], pod("p"), "n2") == (False,
                                                                                                             None)


def test_preempt_narrows_the_victims_by_uid():
    victims_a, victims_b = [_uid(pod("a1"), "a1"), _uid(pod("a2"), "a2")], [_uid(pod("b1"), "b1")]
    on_node = {"n0": victims_a, "n1": victims_b}

    def answer(body):
        assert body["NodeNameToVictims"] is None
        assert body["NodeNameToMetaVictims"]["n0"] == {"Pods": [{"UID": "a1"}, {"UID": "a2"}], "NumPDBViolations": 1}
        return {"NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "a2"}], "NumPDBViolations": 0}}}

    with ExtenderServer(preempt=answer) as server:
        extender = _extender(server.url, preempt_verb="preempt", node_cache_capable=True)
        narrowed = extenders_preemption([extender], pod("p"), {"n0": (victims_a, 1), "n1": (victims_b, 0)},
                                        on_node.get)
    assert narrowed == {"n0": ([victims_a[1]], 0)}
    with ExtenderServer(preempt=lambda body: {"NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "zz"}]}}}) as server:
        with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: zz\) on node: n0"):
            extenders_preemption([_extender(server.url, preempt_verb="preempt")], pod("p"),
                                 {"n0": (victims_a, 0)}, on_node.get)
