"""`kubesched ui` in a real browser: Debian's Chromium driven through Debian's chromium-driver (Selenium).

A person opens the cluster page, clicks the pending pod, follows the node
that lacks the least, raises its allocatable in the form and sees the pod's
new placement in the changes panel once the background run is over (the
page hears it through the server-sent events).  No browser is downloaded:
the test uses /usr/bin/chromium and /usr/bin/chromedriver, and is skipped
where they are not installed unless ``KUBESCHED_REQUIRE_BROWSER=1`` (.ci/run
installs them).  Screenshots go to the test's directory, or to
``$KUBESCHED_SCREENSHOTS`` (``KUBESCHED_SCREENSHOTS=docs`` regenerates the
README's pictures).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app

from .helpers import ROOT, RUN_TIMEOUT, serving

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
REQUIRED = os.environ.get("KUBESCHED_REQUIRE_BROWSER") == "1"
# the flags of tests/test_html_report.py, and a window the size of a laptop screen
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900"]

pytestmark = pytest.mark.skipif((CHROMIUM is None or CHROMEDRIVER is None) and not REQUIRED,
                                reason="Debian's chromium and chromium-driver are not installed")


@pytest.fixture
def browser(tmp_path):
    assert CHROMIUM and CHROMEDRIVER, "KUBESCHED_REQUIRE_BROWSER=1 but chromium or chromedriver is missing"
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(RUN_TIMEOUT)
    try:
        yield driver
    finally:
        driver.quit()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("KUBESCHED_SCREENSHOTS") or tmp_path)
    folder = folder if folder.is_absolute() else ROOT / folder
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_a_person_makes_the_pending_pod_fit_by_editing_a_nodes_allocatable(browser, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    shots = _shots(tmp_path)
    # htmx replaces the main view and the panel when a run is over: an element found may be gone a moment later
    wait = WebDriverWait(browser, RUN_TIMEOUT, ignored_exceptions=(StaleElementReferenceException,))
    with serving([ROOT / "examples/cluster"], watch=True) as (_, server):
        browser.get(server.url)
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#changes h2")))  # the panel loaded
        grid = browser.find_element(By.ID, "grid")
        assert grid.size["height"] > 0 and browser.execute_script(
            "return document.getElementById('grid').getContext('2d').getImageData(5, 5, 1, 1).data[3]") == 255
        browser.save_screenshot(str(shots / "ui-cluster.png"))

        browser.find_element(By.LINK_TEXT, "ml/train-llm").click()
        wait.until(ready.title_contains("kubesched"))
        wait.until(ready.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Pod ml/train-llm"))
        wait.until(ready.text_to_be_present_in_element((By.ID, "main"), "nodes examined 6 of 6, 0 feasible"))
        browser.save_screenshot(str(shots / "ui-pod.png"))

        # the node that lacks the least, in the table of what the nodes that fail only on resources miss
        browser.find_element(By.XPATH, "//h3[starts-with(., 'Missing')]/following-sibling::table[1]"
                                       "//a[@href='/node/gpu-b3']").click()
        wait.until(ready.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Node gpu-b3"))
        form = browser.find_element(By.ID, "edit-allocatable")
        for field, value in (("allocatable.nvidia.com/gpu", "9"), ("allocatable.memory", "64Gi")):
            box = form.find_element(By.NAME, field)
            box.clear()
            box.send_keys(value)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "changes"), "ml/train-llm: pending → gpu-b3"))
        # the main view was refreshed by the same event: gpu-b3 now holds the pod
        wait.until(ready.text_to_be_present_in_element((By.ID, "main"), "ml/train-llm"))
        wait.until(ready.text_to_be_present_in_element((By.ID, "changes"), "Newly scheduled (1)"))
        assert browser.find_element(By.CSS_SELECTOR, "header form button").is_enabled()  # Undo
        browser.save_screenshot(str(shots / "ui-whatif.png"))
        assert _errors(browser) == []


def test_the_devices_page_of_the_dra_example_renders(browser, tmp_path):
    from selenium.webdriver.common.by import By

    with serving([ROOT / "examples/dra"]) as (_, server):
        browser.get(server.url + "devices")
        page = browser.find_element(By.ID, "main").text
        assert "matches, held by claim ml/train-resnet-gpus-" in page
        assert "request selector is false" in page
        browser.save_screenshot(str(_shots(tmp_path) / "ui-devices.png"))
        assert _errors(browser) == []


def test_the_podgroups_page_of_a_waiting_gang_and_the_timeline_charts_render(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from kubesched.ui.scenario import TimedChange

    with serving([ROOT / "examples/gangs"]) as (_, server):
        browser.get(server.url + "podgroups")
        page = browser.find_element(By.ID, "main").text
        assert "minCount not met (0 of 4)" in page and "rack-a (chosen)" in page
        browser.save_screenshot(str(_shots(tmp_path) / "ui-podgroups.png"))
        assert _errors(browser) == []
    changes = [TimedChange(60, ROOT / "examples/device-taints/taint-gpu-b.yaml"),
               TimedChange(120, ROOT / "examples/device-taints/train-0.yaml")]
    with serving([ROOT / "examples/device-taints/cluster"], changes=changes) as (_, server):
        browser.get(server.url + "timeline?t=90")
        # the charts are drawn by a script after the page loaded: wait for them (a loaded machine is slow)
        from selenium.webdriver.support.ui import WebDriverWait

        charts = WebDriverWait(browser, RUN_TIMEOUT).until(
            lambda driver: driver.find_elements(By.CSS_SELECTOR, "#charts .uplot canvas") or False)
        assert len(charts) == 2 and all(chart.size["width"] > 300 for chart in charts)
        assert "At T = +90.0s" in browser.find_element(By.ID, "state").text
        browser.save_screenshot(str(_shots(tmp_path) / "ui-timeline.png"))
        assert _errors(browser) == []


def test_the_config_diff_shows_a_disabled_gangscheduling_under_each_of_its_extension_points(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from kubesched.core.framework.hookspecs import EXTENSION_POINTS
    from kubesched.core.framework.registry import Registry, extension_points

    config = tmp_path / "no-gangs.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- schedulerName: default-scheduler\n"
                      "  plugins: {multiPoint: {disabled: [{name: GangScheduling}]}}\n")
    gang_points = extension_points(Registry.discover().get("GangScheduling"))
    assert {"preEnqueue", "placementFeasible"} <= set(gang_points)
    with serving([ROOT / "examples/gangs"], compare=[config]) as (_, server):
        browser.get(server.url + "config")
        box = browser.find_element(By.NAME, "other")
        box.send_keys(str(config))
        box.submit()
        rows = {}
        for row in browser.find_elements(By.CSS_SELECTOR, "table.config-diff tr")[1:]:
            cells = [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
            rows[cells[1]] = (cells[2], cells[3], "differs" in (row.get_attribute("class") or ""))
        assert [point for point in rows if point in EXTENSION_POINTS] == list(EXTENSION_POINTS)
        for point in EXTENSION_POINTS:
            a, b, differs = rows[point]
            assert differs == (point in gang_points), point
            assert ("GangScheduling" in a, "GangScheduling" in b) == (point in gang_points, False), point
        browser.save_screenshot(str(_shots(tmp_path) / "ui-config-diff.png"))
        assert _errors(browser) == []


def test_a_node_deleted_from_its_own_page_turns_into_the_deleted_page(browser, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, RUN_TIMEOUT, ignored_exceptions=(StaleElementReferenceException,))
    with serving([ROOT / "examples/cluster"]) as (_, server):
        browser.get(server.url + "node/worker-a1")
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#changes h2")))
        browser.find_element(By.XPATH, "//button[. = 'Delete the node']").click()
        # the page the edit returns to is refreshed once the run is over: its 404 is shown, not the old node
        wait.until(ready.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Node worker-a1: deleted"))
        assert "The what-if edit delete Node/worker-a1 deleted it" in browser.find_element(By.ID, "main").text
        assert [e for e in _errors(browser) if "404" not in e] == []


def test_a_podgroups_preemption_shows_its_victims_pages_marked_with_the_preemptor(browser, tmp_path):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    from kubesched.ui.scenario import TimedChange

    wait = WebDriverWait(browser, RUN_TIMEOUT, ignored_exceptions=(StaleElementReferenceException,))
    arrival = TimedChange(300, ROOT / "examples/gangs-arrivals/urgent-pretrain.yaml")
    with serving([ROOT / "examples/gangs"], changes=[arrival]) as (_, server):
        browser.get(server.url + "pod/ml/llm-pretrain-worker-0")
        wait.until(ready.text_to_be_present_in_element(
            (By.ID, "gone"), "No longer in the cluster: preempted at +300s by podgroup/ml/urgent-pretrain"))
        # htmx may swap the main view as the page settles: find the link again until the click lands
        wait.until(lambda driver: driver.find_element(By.LINK_TEXT, "its PodGroup").click() or True)
        wait.until(ready.text_to_be_present_in_element((By.TAG_NAME, "h1"), "PodGroups"))
        # the preemption, its victims and each group's verdict as kubesched explain tells them
        explained = {key: json.loads(CliRunner().invoke(app, [
            "explain", f"podgroup/{key}", "-f", str(ROOT / "examples/gangs"), "--at",
            f"5m={ROOT / 'examples/gangs-arrivals/urgent-pretrain.yaml'}", "-o", "json"]).output)
            for key in ("ml/urgent-pretrain", "ml/llm-finetune")}
        victims = explained["ml/urgent-pretrain"]["preemption"]["victims"]
        wait.until(ready.text_to_be_present_in_element(
            (By.ID, "main"), f"4 victim(s): {' '.join(victims)}"))
        page = browser.find_element(By.ID, "main").text
        assert "Preempted to make room: attempt #1 at +300.0s (DefaultPreemption)" in page
        assert all(f"{victim} +300.0s podgroup/ml/urgent-pretrain" in page for victim in victims)
        assert explained["ml/llm-finetune"]["last"]["message"] in page
        browser.save_screenshot(str(_shots(tmp_path) / "ui-podgroup-preemption.png"))
        assert _errors(browser) == []
