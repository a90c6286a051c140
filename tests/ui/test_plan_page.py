"""The Plan page: ``kubesched plan`` in the browser, on the scenario's node templates."""

from __future__ import annotations

from .helpers import ROOT, get, serving, text


def test_the_plan_page_adds_rack_a_nodes_for_the_gang_and_explains_the_report():
    with serving([ROOT / "examples/plan"]) as (_, server):
        cluster = text(get(server, "/"))
        assert "gpu-rack-a" not in cluster  # a template is not a node of the cluster
        page = text(get(server, "/plan"))
        assert "gpu-rack-a 12.00 2 0" in page  # the templates: cost, max count, priority
        assert "gpu-rack-a 2 12.00 24.00" in page and "cpu-small 3 0.20 0.60" in page and "total 5 24.60" in page
        assert "podgroup/ml/train (4 pods) gpu-rack-a-1, gpu-rack-a-2, rack-a-0, rack-a-1" in page
        assert "shop/report the planned cluster 0/11 nodes are available" in page
        assert "a new cpu-large Insufficient cpu" in page
        assert "greedy plan, expander least-waste: 5 node(s) to add, 24.60/hour; 1 pod(s) still pending" in page
        down = text(get(server, "/plan?mode=scale-down"))
        assert "Nodes to remove" in down and "cpu-0 utilization 100% is not below the threshold 50%" in down


def test_without_templates_the_plan_page_says_so_and_an_unknown_mode_is_the_default():
    with serving([ROOT / "examples/cluster"]) as (_, server):
        page = text(get(server, "/plan?mode=nope&expander=nope"))
        assert "No Node annotated kubesched.io/node-template" in page
        assert "Nodes to add" not in page
