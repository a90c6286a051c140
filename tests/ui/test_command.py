"""`kubesched ui`: the command as a person starts it, and its refusals of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request

import pytest
from typer.testing import CliRunner

from kubesched.cli import app

from .helpers import ROOT, RUN_TIMEOUT, text


def test_the_command_prints_its_url_and_serves_the_cluster_a_pod_and_server_sent_events():
    process = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "ui", "-f", str(ROOT / "examples/cluster"), "--no-open", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = process.stdout.readline()
        assert line.startswith("kubesched ui: http://127.0.0.1:") and "(Ctrl-C to stop)" in line, line
        url = line.split()[2]
        # the event stream says at once how things stand, and again when the first run is over
        with urllib.request.urlopen(url + "events", timeout=RUN_TIMEOUT) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            state = {}
            while not state.get("ready"):
                event = stream.readline().decode().strip()
                if event.startswith("data: "):
                    state = json.loads(event[len("data: "):])
        assert state["text"].startswith("9 scheduled, 2 pending, 6 nodes")
        with urllib.request.urlopen(url, timeout=RUN_TIMEOUT) as response:
            cluster = text(response.read().decode())
        assert "9 pod(s) scheduled, 2 pending , 6 node(s)" in cluster
        assert "4 nodes: Insufficient cpu, Insufficient memory, Insufficient nvidia.com/gpu · 1:" in cluster
        with urllib.request.urlopen(url + "pod/ml/train-llm", timeout=RUN_TIMEOUT) as response:
            pod = text(response.read().decode())
        assert "nodes examined 6 of 6, 0 feasible" in pod
        assert "node gpu-b3 would fit with 8 more nvidia.com/gpu, 26Gi more memory free" in pod
    finally:
        process.terminate()
        process.wait(timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("args, message", [
    (["-f", "examples/missing"], "examples/missing: no such file or directory"),
    (["-f", "examples/cluster", "--at", "90s"], "--at: expected OFFSET=FILE, got '90s'"),
    (["-f", "examples/cluster", "--config", "examples/cluster/nodes.yaml"], "examples/cluster/nodes.yaml: apiVersion/kind"),
])
def test_bad_input_is_refused_with_one_line_before_serving(args, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, ["ui", *args, "--no-open", "--port", "0"])
    assert done.exit_code == 2, done.output
    assert done.output.count("\n") == 1 and message in done.output, done.output


def test_a_bad_manifest_names_its_file_object_and_field(tmp_path):
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
                                       "spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n")
    done = CliRunner().invoke(app, ["ui", "-f", str(tmp_path), "--no-open", "--port", "0"])
    assert done.exit_code == 2
    assert f"{tmp_path / 'pod.yaml'}: Pod/web: spec.containers[0].resources.requests.cpu" in done.output


@pytest.mark.parametrize("config, message", [
    ("  score:\n      enabled: [{name: NoSuchPlugin}]\n", "plugin 'NoSuchPlugin' does not exist"),
    ("  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {typo: 1}}\n",
     "pluginConfig NodeResourcesFit: args.scoringStrategy.typo: unknown field"),
])
def test_a_configuration_whose_plugins_cannot_be_built_is_refused_before_serving(tmp_path, config, message):
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                    "- schedulerName: default-scheduler\n" + ("  plugins:\n  " + config if "score" in config else config))
    done = CliRunner().invoke(app, ["ui", "-f", str(ROOT / "examples/cluster"), "--config", str(path), "--no-open",
                                    "--port", "0"])
    assert done.exit_code == 2, done.output
    assert done.output.count("\n") == 1 and done.output.startswith(f"{path}: profile 'default-scheduler': ")
    assert message in done.output
