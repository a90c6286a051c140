"""The "What if, now" panel: changes on the latest run's end state as transactions, kept or undone, no re-run."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from html import unescape

import pytest

from .helpers import ROOT, get, post, serving, text, token

POD = """apiVersion: v1
kind: Pod
metadata: {name: probe, namespace: shop}
spec:
  containers: [{name: c, image: img, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
"""


@pytest.fixture(scope="module")
def ui():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        yield runs, server


@pytest.fixture(autouse=True)
def nothing_open(ui):
    yield
    post(ui[1], "/now/undo", {})


def applied(page: str) -> str:
    found = re.search(r'<section id="now-applied">.*?</section>', page, re.S)
    return text(found.group(0)) if found else ""


def test_a_drain_shows_the_evicted_pods_and_why_others_stay_pending_without_a_new_run(ui):
    runs, server = ui
    version = runs.version
    page = applied(post(server, "/now/node/worker-a1", {"action": "drain"}))
    assert page.startswith("drain worker-a1")
    assert "3 evicted or gone" in page and "shop/web-2 worker-a1" in page
    assert "ml/train-llm 0/6 nodes are available: 2 node(s) were unschedulable" in page
    assert runs.version == version  # nothing re-simulated
    assert "worker-a1" in text(get(server, "/node/worker-a1"))  # the run's own pages are unchanged


def test_undo_rolls_the_change_back_so_the_same_what_if_answers_the_same(ui):
    server = ui[1]
    first = applied(post(server, "/now/node/worker-a1", {"action": "drain"}))
    assert applied(post(server, "/now/undo", {})) == ""
    assert applied(post(server, "/now/node/worker-a1", {"action": "drain"})) == first


def test_keep_commits_and_the_next_what_if_builds_on_it():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        placements = runs.current().sim.placements()
        post(server, "/now/node/gpu-a3", {"action": "add", "count": "1"})
        page = post(server, "/now/keep", {})
        assert "add 1 node(s) like gpu-a3" in text(re.search(r'<ol id="now-kept">.*?</ol>', page, re.S).group(0))
        post(server, "/now/node/worker-a1", {"action": "drain"})
        page = post(server, "/now/keep", {})
        assert "drain worker-a1" in text(re.search(r'<ol id="now-kept">.*?</ol>', page, re.S).group(0))
        again = applied(post(server, "/now/node/worker-a1", {"action": "drain"}))
        assert "0 evicted or gone" in again  # nothing was left on it
        assert applied(post(server, "/now/node/gpu-a3-whatif1-1", {"action": "cordon"}))  # the kept node is there
        assert runs.current().sim.placements() == placements  # kept on a fork: the run's own end is unchanged


def test_pods_from_a_template_are_placed_and_added_nodes_take_part(ui):
    server = ui[1]
    page = applied(post(server, "/now/pods", {"yaml": POD, "replicas": "3"}))
    assert page.startswith("create Pod probe x3") and "3 placed" in page
    assert all(f"shop/probe-{i} " in page for i in (1, 2, 3))
    post(server, "/now/undo", {})
    page = applied(post(server, "/now/node/gpu-a3", {"action": "add", "count": "2"}))
    assert page.startswith("add 2 node(s) like gpu-a3")
    assert "0/8 nodes are available" in page  # the pending pod was tried again on the two new nodes


def test_deleting_a_pod_shows_it_gone(ui):
    page = applied(post(ui[1], "/now/pod/delete", {"key": "shop/web-2"}))
    assert "1 evicted or gone" in page and "shop/web-2" in page


@pytest.mark.parametrize("path, fields, message", [
    ("/now/node/nope", {"action": "drain"}, 'Node "nope" not found'),
    ("/now/node/worker-a1", {"action": "explode"}, "unknown action 'explode'"),
    ("/now/node/worker-a1", {"action": "add", "count": "100000"}, "count 100000: between 1 and 1000"),
    ("/now/pods", {"yaml": "kind: Service\n"}, "one object of kind Pod expected"),
    ("/now/pods", {"yaml": POD, "replicas": "two"}, "replicas: 'two' is not a whole number"),
])
def test_a_bad_what_if_is_one_line_and_changes_nothing(ui, path, fields, message):
    page = post(ui[1], path, fields)
    assert message in text(re.search(r'<p class="error" id="now-error">.*?</p>', page, re.S).group(0))
    assert applied(page) == ""


def test_one_what_if_is_open_at_a_time(ui):
    server = ui[1]
    post(server, "/now/node/worker-a1", {"action": "cordon"})
    page = post(server, "/now/node/worker-a2", {"action": "cordon"})
    assert "keep or undo 'cordon worker-a1' first" in text(page)
    assert applied(page).startswith("cordon worker-a1")


def test_a_what_if_needs_the_token_and_the_ui_s_own_origin(ui):
    server = ui[1]
    base = server.url.rstrip("/")
    for fields, origin in (({"action": "drain"}, base), ({"action": "drain", "token": token(server)},
                                                         "http://evil.example")):
        request = urllib.request.Request(base + "/now/node/worker-a1", method="POST",
                                         data=urllib.parse.urlencode(fields).encode(), headers={"Origin": origin})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403
    assert applied(get(server, "/now")) == ""


def test_a_new_run_starts_the_panel_afresh_and_says_what_was_dropped():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        post(server, "/now/node/worker-a1", {"action": "drain"})
        post(server, "/now/keep", {})
        version = runs.version
        post(server, "/edit/node/worker-a2", {"cordon": "1"})  # an edit of the scenario: a new run
        assert runs.wait(version, 60)  # the new run is over
        page = get(server, "/now")
        assert "1 what-if(s) were dropped" in text(page)
        assert "none: the state is the latest run's end" in text(page)


def test_the_pod_form_starts_from_the_pod_template_and_it_applies_as_it_is(ui):
    server = ui[1]
    page = get(server, "/now")
    manifest = re.search(r'<textarea name="yaml"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    assert "kind: Pod" in manifest and "/now" in get(server, "/")
    result = applied(post(server, "/now/pods", {"yaml": unescape(manifest)}))
    assert result.startswith("create Pod web-new") and "1 placed" in result


def test_a_chosen_node_gets_the_node_forms(ui):
    page = get(ui[1], "/now?node=worker-a2")
    assert 'action="/now/node/worker-a2"' in page and "add nodes like it" in page


def test_a_what_if_is_answered_on_the_run_s_own_end_state_and_leaves_it_as_the_run_left_it(ui):
    """Nothing kept: a what-if runs on the run's own simulation, rolled back at once - the pages that read that
    simulation (objects, devices, pod groups, the report) still show the run's end."""
    runs, server = ui
    outcome = runs.current()
    sim = outcome.sim
    placements, events, attempts = sim.placements(), len(sim.events()), sim.scheduler.stats.cycles
    history = list(outcome.timeline.entries)
    report = get(server, "/export/report.html")
    page = applied(post(server, "/now/node/worker-a1", {"action": "drain"}))
    assert "3 evicted or gone" in page  # the drain is open ...
    assert sim.placements() == placements and len(sim.events()) == events  # ... and the run's state untouched
    assert sim.scheduler.stats.cycles == attempts and outcome.timeline.entries == history  # not the run's history
    assert get(server, "/export/report.html") == report
