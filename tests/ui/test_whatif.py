"""What-if: edits re-simulated in the background, the placement diff, undo/redo, watched files, export."""

from __future__ import annotations

import io
import shutil
import urllib.request
import zipfile
from html import unescape

import pytest
import yaml

from .helpers import ROOT, RUN_TIMEOUT, get, post, serving, text


def _edit(runs, server, path, fields):
    version = runs.version
    page = post(server, path, fields)
    assert runs.wait(version, RUN_TIMEOUT), "the re-simulation did not finish"
    return page


def test_more_allocatable_on_a_node_moves_the_pending_pod_there_and_undo_redo_switch_back():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        assert "No edit" in get(server, "/panel/changes")
        _edit(runs, server, "/edit/node/gpu-b3", {"allocatable.nvidia.com/gpu": "9", "allocatable.memory": "64Gi"})
        panel = text(get(server, "/panel/changes"))
        assert "Node/gpu-b3: nvidia.com/gpu=9, memory=64Gi" in panel
        assert "Newly scheduled (1) ml/train-llm : pending → gpu-b3" in panel
        assert "nvidia.com/gpu 60.0% → 84.6% +24.6" in panel and "gpu-b3 memory 26.7% → 87.5%" in panel
        assert runs.current().pod_by_key["ml/train-llm"].spec.node_name == "gpu-b3"
        assert runs.baseline().pod_by_key["ml/train-llm"].spec.node_name == ""  # the files' run is kept
        _edit(runs, server, "/undo", {})
        assert "No edit" in get(server, "/panel/changes")
        assert runs.current().pod_by_key["ml/train-llm"].spec.node_name == ""
        _edit(runs, server, "/redo", {})
        assert "ml/train-llm : pending → gpu-b3" in text(get(server, "/panel/changes"))


def test_cordoning_a_node_moves_its_pods_and_a_config_edit_applies(tmp_path):
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        before = runs.current()
        moved = sorted(p.key for p in before.pods if p.spec.node_name == "worker-a1")
        _edit(runs, server, "/edit/node/worker-a1", {"cordon": "1"})
        after = runs.current()
        assert all(after.pod_by_key[key].spec.node_name != "worker-a1" for key in moved)
        panel = text(get(server, "/panel/changes"))
        assert f"Moved ({sum(bool(after.pod_by_key[k].spec.node_name) for k in moved)})" in panel
        config = (ROOT / "configs/bin-packing.yaml").read_text()
        _edit(runs, server, "/edit/config", {"yaml": config})
        assert "bin-packing-scheduler" in runs.current().sim.scheduler.profiles
        assert "edit the configuration" in text(get(server, "/whatif"))


def test_an_edited_manifest_replaces_the_object_and_a_bad_one_is_refused_with_one_line():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        page = get(server, "/whatif?kind=Pod&key=shop/canary-1")
        manifest = yaml.safe_load(unescape(page.split('name="yaml"')[1].split(">", 1)[1].split("</textarea>")[0]))
        assert manifest["metadata"]["name"] == "canary-1" and manifest["spec"]["schedulingGates"]
        del manifest["spec"]["schedulingGates"]  # approve the canary
        _edit(runs, server, "/edit/object", {"kind": "Pod", "key": "shop/canary-1", "yaml": yaml.safe_dump(manifest)})
        assert runs.current().pod_by_key["shop/canary-1"].spec.node_name
        assert "Newly scheduled (1) shop/canary-1" in text(get(server, "/panel/changes"))
        refused = post(server, "/edit/object", {"kind": "Pod", "key": "shop/canary-1", "yaml": yaml.safe_dump(
            {**manifest, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}})})
        error = text(refused.split('id="edit-error">')[1].split("</p>")[0])
        assert error.startswith("(edit): Pod/canary-1: spec.containers[0].resources.requests.cpu")
        assert runs.history.cursor == 1  # nothing was added


def test_a_saved_file_is_simulated_again_with_the_edits_on_top(tmp_path):
    shutil.copytree(ROOT / "examples/cluster", tmp_path / "cluster")
    with serving([tmp_path / "cluster"]) as (runs, server):
        _edit(runs, server, "/edit/node/gpu-b3", {"allocatable.nvidia.com/gpu": "9", "allocatable.memory": "64Gi"})
        pods = tmp_path / "cluster/pods.yaml"
        documents = [d for d in yaml.safe_load_all(pods.read_text()) if d["metadata"]["name"] != "train-llm"]
        pods.write_text(yaml.safe_dump_all(documents))
        version = runs.version
        assert runs.reload_files() and runs.wait(version, RUN_TIMEOUT)
        assert "ml/train-llm" not in runs.current().pod_by_key and "ml/train-llm" not in runs.baseline().pod_by_key
        assert runs.history.cursor == 1
        assert not runs.reload_files()  # nothing changed since
        pods.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: [1]}]}\n")
        runs.reload_files()
        assert text(get(server, "/panel/changes")).count("pods.yaml: Pod/x: spec.containers[0].image") == 1


def test_a_run_no_longer_wanted_stops_at_its_next_attempt():
    from kubesched.ui.runs import RunCancelled, simulate
    from kubesched.ui.scenario import read_scenario

    scenario = read_scenario([ROOT / "examples/cluster"], None, [])
    with pytest.raises(RunCancelled):
        simulate(scenario, stale=lambda: True)
    assert simulate(scenario).bound == 9


def test_the_exported_bundle_reopens_as_the_same_state_and_the_html_export_is_the_report(tmp_path):
    from kubesched.ui.bundle import read_bundle
    from kubesched.ui.runs import Runs

    with serving([ROOT / "examples/cluster"]) as (runs, server):
        _edit(runs, server, "/edit/node/gpu-b3", {"allocatable.nvidia.com/gpu": "9", "allocatable.memory": "64Gi"})
        placements = runs.current().sim.placements()
        with urllib.request.urlopen(server.url + "export/bundle.zip", timeout=RUN_TIMEOUT) as response:
            zipfile.ZipFile(io.BytesIO(response.read())).extractall(tmp_path)
        with urllib.request.urlopen(server.url + "export/report.html", timeout=RUN_TIMEOUT) as response:
            report = response.read().decode()
        assert "10 pod(s) scheduled, 1 pending, 6 node(s)" in report and 'id="pod-ml-train-llm"' in report
    paths, config, changes = read_bundle(tmp_path / "kubesched-bundle")
    assert (tmp_path / "kubesched-bundle/decisions.jsonl").read_text().count('"pod":"ml/train-llm"') >= 2
    reopened = Runs(paths, config, changes)
    reopened.start()
    try:
        assert reopened.wait(0, RUN_TIMEOUT)
        assert reopened.current().sim.placements() == placements
    finally:
        reopened.close()


def test_a_configuration_whose_plugins_cannot_be_built_is_a_form_error_not_an_edit():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        version = runs.version
        bad = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
               "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n"
               "    args: {scoringStrategy: {typo: 1}}\n")
        refused = post(server, "/edit/config", {"yaml": bad})
        error = text(refused.split('id="edit-error">')[1].split("</p>")[0])
        assert error == ("profile 'default-scheduler': pluginConfig NodeResourcesFit: "
                         "args.scoringStrategy.typo: unknown field")
        assert runs.history.cursor == 0 and not runs.history.edits and runs.version == version


def test_a_node_deleted_by_an_edit_answers_a_deleted_page_naming_the_edit_with_a_link_back():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        _edit(runs, server, "/edit/delete", {"kind": "Node", "key": "gpu-b3"})
        page = get(server, "/node/gpu-b3", status=404)
        assert "Node gpu-b3: deleted" in text(page)
        assert "The what-if edit delete Node/gpu-b3 deleted it" in text(page) and '<a href="/">' in page
        _edit(runs, server, "/undo", {})
        assert "Node gpu-b3" in text(get(server, "/node/gpu-b3"))
        assert "Pod shop/nope: not found" in text(get(server, "/pod/shop/nope", status=404))


def test_a_pod_is_deleted_from_its_page_and_its_page_then_says_so():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        page = get(server, "/pod/shop/web-1")
        assert 'id="delete-pod"' in page and 'name="key" value="shop/web-1"' in page
        _edit(runs, server, "/edit/delete", {"kind": "Pod", "key": "shop/web-1"})
        assert "shop/web-1" not in runs.current().pod_by_key
        assert "Pod shop/web-1: deleted" in text(get(server, "/pod/shop/web-1", status=404))


@pytest.mark.parametrize("kind", ["Pod", "Node", "PriorityClass", "Namespace", "PersistentVolumeClaim"])
def test_every_editor_template_applies_as_it_is_and_adds_its_object(kind):
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        assert f'href="/whatif?template={kind}"' in get(server, "/whatif")
        page = get(server, f"/whatif?template={kind}")
        manifest = unescape(page.split('name="yaml"')[1].split(">", 1)[1].split("</textarea>")[0])
        assert yaml.safe_load(manifest)["kind"] == kind
        _edit(runs, server, "/edit/object", {"kind": "", "key": "", "yaml": manifest})
        assert runs.history.cursor == 1 and not runs.failed
        if kind == "Pod":
            assert runs.current().pod_by_key["default/web-new"].spec.node_name


def test_a_file_imported_from_the_browser_adds_its_objects_and_a_bad_one_is_refused_whole():
    with serving([ROOT / "examples/cluster"]) as (runs, server):
        assert 'id="import-file"' in get(server, "/whatif")
        text_in = yaml.safe_dump_all([
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "big-new"},
             "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}}])
        _edit(runs, server, "/edit/import", {"name": "more.yaml", "yaml": text_in})
        assert [e.label for e in runs.history.edits] == ["import more.yaml: Node/big-new",
                                                        "import more.yaml: Namespace/extra"]
        assert "big-new" in runs.current().nodes and "extra" in {
            ns.metadata.name for ns in runs.current().sim.cluster.list("Namespace").items}
        refused = post(server, "/edit/import", {"name": "bad.yaml", "yaml": text_in.replace('"64"', "lots")
                                                .replace("64", "lots")})
        error = text(refused.split('id="edit-error">')[1].split("</p>")[0])
        assert error.startswith("(import bad.yaml): Node/big-new: status.allocatable.cpu") and len(runs.history.edits) == 2
