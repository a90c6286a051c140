"""examples/stateful: the whole life of claims under ``kubesched simulate``."""

from __future__ import annotations

from pathlib import Path

from kubesched.drivers.simulation import Simulation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stateful"
ZONE = "topology.kubernetes.io/zone"


def test_the_stateful_example():
    sim = Simulation.from_paths([EXAMPLE])
    sim.run()
    placed = sim.placements()
    pending = sorted(k for k, v in placed.items() if not v)
    assert pending == ["default/legacy-0", "default/orphan-0", "default/report-1"]
    # db-2 asks for 300Gi: only the 500Gi local PV on node-a2 fits
    assert placed["default/db-2"] == "node-a2"
    assert sim.get("PersistentVolumeClaim", "default/data-db-2").spec.volume_name == "local-a2-500g"
    for db in ("db-0", "db-1", "db-2"):
        pv = sim.get("PersistentVolume", sim.get("PersistentVolumeClaim", f"default/data-{db}").spec.volume_name)
        (term,) = pv.spec.node_affinity.required.node_selector_terms
        assert term.match_expressions[0].values == (placed[f"default/{db}"],)
    # zonal-ssd may only be provisioned in zone-a
    assert sim.get("Node", placed["default/cache-0"]).metadata.labels[ZONE] == "zone-a"
    assert sim.get("PersistentVolumeClaim", "default/web-0-scratch").status.phase == "Bound"
    messages = {p.metadata.name: c.message.split(" preemption: ")[0] for p in sim.pods()
                for c in p.status.conditions if c.type == "PodScheduled" and c.status == "False"}
    assert messages["legacy-0"] == "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert messages["orphan-0"] == '0/4 nodes are available: persistentvolumeclaim "missing-claim" not found.'
    assert "ReadWriteOncePod" in messages["report-1"]
