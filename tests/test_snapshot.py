"""`kubesched snapshot`: a live cluster (the fake API server) as manifests that `simulate` loads."""

from __future__ import annotations

from pathlib import Path

import attrs
import yaml
from typer.testing import CliRunner

from fake_apiserver import FakeAPIServer
from kubesched.cli import app
from kubesched.core.api.core_v1 import ConfigMap
from kubesched.core.api.meta import ObjectMeta
from kubesched.drivers.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _live(example: str) -> Simulation:
    """A cluster that a scheduler already worked on: the example, simulated."""
    sim = Simulation.from_paths([ROOT / "examples" / example])
    sim.run()
    return sim


def _snapshot(sim: Simulation, tmp_path: Path) -> Path:
    out = tmp_path / "snapshot"
    with FakeAPIServer(sim.cluster) as server:
        result = runner.invoke(app, ["snapshot", "--kubeconfig", server.kubeconfig(tmp_path / "kubeconfig"),
                                     "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_a_snapshot_simulates_to_the_live_placements(tmp_path):
    live = _live("cluster")
    out = _snapshot(live, tmp_path)
    again = Simulation.from_paths([out], seed=7)
    # bound pods arrive bound: nothing is scheduled again
    bound = {key: node for key, node in live.placements().items() if node}
    assert {p.key: p.spec.node_name for p in again.pods() if p.spec.node_name} == bound
    again.run()
    assert again.placements() == live.placements()
    pending = {p.key for p in live.pods() if not p.spec.node_name}
    assert pending and {p.key for p in again.pods() if not p.spec.node_name} == pending
    # every kind the example had came back, with the same UIDs
    for kind in ("Node", "PriorityClass", "Namespace"):
        assert {o.metadata.uid for o in again.cluster.list(kind).items} == \
            {o.metadata.uid for o in live.cluster.list(kind).items}


def test_a_snapshot_keeps_claims_and_their_devices(tmp_path):
    live = _live("dra")
    out = _snapshot(live, tmp_path)
    again = Simulation.from_paths([out])
    again.run()
    assert again.placements() == live.placements()
    allocated = {c.key: c.status.allocation for c in live.cluster.list("ResourceClaim").items}
    assert allocated and {c.key: c.status.allocation for c in again.cluster.list("ResourceClaim").items} == allocated


def test_secrets_config_data_and_container_env_are_never_copied(tmp_path):
    live = _live("cluster")
    live.cluster.create(ConfigMap(metadata=ObjectMeta(name="settings", namespace="default")))
    pod = live.pods()[0]
    container = attrs.evolve(pod.spec.containers[0], extra={
        "env": [{"name": "TOKEN", "value": "s3cr3t"}], "command": ["run", "--password=s3cr3t"]})
    live.cluster.update(attrs.evolve(pod, spec=attrs.evolve(pod.spec, containers=(container,) + pod.spec.containers[1:])))
    out = _snapshot(live, tmp_path)
    text = "".join(path.read_text() for path in out.iterdir())
    assert "s3cr3t" not in text and "ConfigMap" not in text
    assert not (out / "configmaps.yaml").exists() and not (out / "events.yaml").exists()
    docs = list(yaml.safe_load_all((out / "pods.yaml").read_text()))
    assert all("resourceVersion" not in doc["metadata"] for doc in docs)


def test_an_unusable_kubeconfig_is_refused(tmp_path):
    bad = tmp_path / "kubeconfig"
    bad.write_text("not: a kubeconfig\n")
    result = runner.invoke(app, ["snapshot", "--kubeconfig", str(bad), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "snapshot: --kubeconfig" in result.output
