"""examples/apps as the README describes it: a Deployment through its ReplicaSet, a StatefulSet's ordinals in
order with their claims, one DaemonSet pod per node, an indexed Job's pods with their indexes, and the capacity
the Job frees when it completes letting a pending Job in."""

from __future__ import annotations

from pathlib import Path

from kubesched.drivers.simulation import DEFAULT_START, Simulation

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "apps"


def owner(pod):
    (ref,) = pod.metadata.owner_references
    return ref.kind, ref.name


def test_examples_apps_runs_every_workload_as_its_controller_would():
    sim = Simulation.from_paths([EXAMPLE])
    sim.run(until=DEFAULT_START + 300)
    pods = {p.metadata.name: p for p in sim.pods()}
    (rs,) = sim.cluster.list("ReplicaSet").items
    assert rs.metadata.name.startswith("web-") and owner(rs) == ("Deployment", "web")
    web = [p for p in pods.values() if owner(p) == ("ReplicaSet", rs.metadata.name)]
    assert len(web) == 3 and all(p.spec.node_name for p in web)
    db = [pods[f"db-{i}"] for i in range(3)]
    assert [p.metadata.creation_timestamp for p in db] == sorted(p.metadata.creation_timestamp for p in db)
    for i, p in enumerate(db):
        assert p.spec.node_name and sim.get("PersistentVolumeClaim", f"default/data-db-{i}").spec.volume_name
    agents = sorted(p.spec.node_name for p in pods.values() if owner(p)[0] == "DaemonSet")
    assert agents == ["node-1", "node-2", "node-3"]
    train = {p.metadata.labels["batch.kubernetes.io/job-completion-index"]: p for p in pods.values()
             if owner(p) == ("Job", "train")}
    assert sorted(train) == ["0", "1", "2", "3"] and all(p.status.phase == "Running" for p in train.values())
    (report,) = [p for p in pods.values() if owner(p) == ("Job", "report")]
    assert not report.spec.node_name
    sim.run()
    assert sim.get("Job", "default/train").status["conditions"][-1]["type"] == "Complete"
    assert sim.pod(report.metadata.name).spec.node_name
    assert sim.get("Job", "default/report").status["succeeded"] == 1
