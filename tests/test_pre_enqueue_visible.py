"""PreEnqueue made visible (issue 35, item 8): a pod held at PreEnqueue has a decision record line (plugin,
message, since when), ``kubesched explain`` names the plugin and its message, and ``explain podgroup`` names
the held member - as a user runs them on a gang with one of its four pods."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core.observability.decision_log import read_decisions

GANG = """\
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec:
  schedulingPolicy:
    gang: {minCount: 4}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: train-0, namespace: ml}
spec:
  schedulingGroup: {podGroupName: train}
  containers: [{name: c, image: x}]
"""
HELD = ("held at PreEnqueue by GangScheduling: waiting for minCount pods from a gang to appear in scheduling "
        "queue (1 of 4 present), since 2026-01-01T00:00:00Z")
runner = CliRunner()


def test_the_record_has_a_line_for_the_held_member(tmp_path):
    (tmp_path / "gang.yaml").write_text(GANG)
    record = tmp_path / "decisions.jsonl"
    done = runner.invoke(app, ["simulate", "-f", str(tmp_path / "gang.yaml"), "--record", str(record)])
    assert done.exit_code == 0, done.output
    # a line each time the reason changes: first the PodGroup not seen yet, then the quorum
    *_, line = [r for r in read_decisions(record) if r["pod"] == "ml/train-0"]
    assert (line["phase"], line["result"], line["plugin"]) == ("preEnqueue", "Held", "GangScheduling")
    assert line["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert line["gang"] == {"podGroup": "ml/train", "present": 1, "minCount": 4}
    assert line["since"] == line["time"]
    explained = runner.invoke(app, ["explain", "ml/train-0", "--from", str(record), "-o", "json"])
    assert json.loads(explained.stdout)["message"] == HELD


def test_explain_names_the_plugin_and_its_message(tmp_path):
    (tmp_path / "gang.yaml").write_text(GANG)
    done = runner.invoke(app, ["explain", "ml/train-0", "-f", str(tmp_path / "gang.yaml")])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == f"ml/train-0: {HELD}"


def test_explain_podgroup_names_the_held_member(tmp_path):
    (tmp_path / "gang.yaml").write_text(GANG)
    done = runner.invoke(app, ["explain", "podgroup/ml/train", "-f", str(tmp_path / "gang.yaml"), "-o", "json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["message"] == f"no attempt of this group was recorded: ml/train-0 {HELD}"


def test_the_pod_group_named_in_double_quotes_as_upstreams_q(tmp_path):
    namespace, _, rest = GANG.partition("---\n")
    pod_only = namespace + "---\n" + rest.split("---\n", 1)[1].replace("podGroupName: train", "podGroupName: absent")
    (tmp_path / "pod.yaml").write_text(pod_only)
    done = runner.invoke(app, ["explain", "ml/train-0", "-f", str(tmp_path / "pod.yaml"), "-o", "json"])
    assert json.loads(done.stdout)["message"].startswith(
        "held at PreEnqueue by GangScheduling: waiting for pods's pod group \"absent\" to appear in scheduling queue")
