"""Batch Filter forms in the scheduling cycle: declining, batch rejection
statuses for pods that fit nowhere, host selection by node rank, and the
scheduler's seeded random source in the handle."""

from __future__ import annotations

import numpy as np

from kubesched import Code, Status, hookimpl
from kubesched.core.framework.registry import Registry
from kubesched.drivers.simulation import Simulation
from kubesched.testing import config, node, pod


def profile(*filters: str, score: dict | None = None) -> dict:
    body = config(score=score)
    body["profiles"][0]["plugins"].setdefault("multiPoint", {}).setdefault("enabled", []).extend(
        {"name": name} for name in filters)
    return body


class OddNodes:
    """Rejects nodes whose name ends in an odd digit; the batch form may decline."""

    name = "OddNodes"
    decline = False
    asked: list[str] = []

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, state, pod, node_info):
        OddNodes.asked.append(node_info.name)
        if int(node_info.name[-1]) % 2:
            return Status(Code.UNSCHEDULABLE, ("odd node",))
        return None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        if OddNodes.decline:
            return None
        return np.array([int(table.infos[r].name[-1]) % 2 == 0 for r in rows])


class EvenNodes:
    """Rejects nodes whose name ends in an even digit, with batch statuses."""

    name = "EvenNodes"
    asked: list[str] = []

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, state, pod, node_info):
        EvenNodes.asked.append(node_info.name)
        return Status(Code.UNSCHEDULABLE, ("even node",)) if int(node_info.name[-1]) % 2 == 0 else None

    @hookimpl
    def filter_batch(self, state, pod, table, rows):
        return np.array([int(table.infos[r].name[-1]) % 2 == 1 for r in rows])

    @hookimpl
    def filter_batch_status(self, state, pod, table, rows):
        even = np.array([int(table.infos[r].name[-1]) % 2 == 0 for r in rows])
        return np.where(even, 0, -1), [Status(Code.UNSCHEDULABLE, ("even node",))]


def run(*filters: str, decline: bool = False) -> Simulation:
    OddNodes.decline = decline
    OddNodes.asked, EvenNodes.asked = [], []
    registry = Registry.discover()
    registry.add(OddNodes)
    registry.add(EvenNodes)
    sim = Simulation(config=profile(*filters), registry=registry)
    sim.create([node(f"n{i}") for i in range(6)] + [pod("web")])
    sim.run()
    return sim


def condition(sim) -> str:
    (found,) = [c for c in sim.pod("web").status.conditions if c.type == "PodScheduled"]
    return found.message


def test_a_declining_batch_form_runs_the_filter_per_node():
    assert run("OddNodes", decline=True).pod("web").spec.node_name in {"n0", "n2", "n4"}
    assert sorted(OddNodes.asked) == [f"n{i}" for i in range(6)]


def test_a_pod_that_fits_nowhere_gets_one_reason_per_node():
    sim = run("OddNodes", "EvenNodes")
    assert condition(sim).startswith("0/6 nodes are available: 3 even node, 3 odd node.")
    # only the plugin that rejects a node is asked about it, and EvenNodes answered in batch
    assert sorted(OddNodes.asked) == ["n1", "n3", "n5"] and EvenNodes.asked == []


def test_the_same_reasons_without_batch_forms():
    sim = run("OddNodes", "EvenNodes", decline=True)
    assert condition(sim).startswith("0/6 nodes are available: 3 even node, 3 odd node.")


def test_equal_nodes_go_to_the_lowest_rank_when_ranks_are_set():
    for ranked in ("n3", "n0", "n5"):
        sim = Simulation(config=config(), node_rank={f"n{i}": (0 if f"n{i}" == ranked else i + 1) for i in range(6)})
        sim.create([node(f"n{i}") for i in range(6)])
        sim.create([pod("web", cpu="1")])
        sim.run()
        assert sim.pod("web").spec.node_name == ranked


class Lottery:
    """Scores one node at random, with the scheduler's random source."""

    name = "Lottery"

    def __init__(self, args, handle):
        self.handle = handle

    @hookimpl
    def score(self, state, pod, node_info):
        return self.handle.rng.randrange(101)


def test_plugins_share_the_schedulers_seeded_random_source():
    def placements(seed):
        registry = Registry.discover()
        registry.add(Lottery)
        sim = Simulation(config=config(score={"Lottery": 1}), registry=registry, seed=seed)
        sim.create([node(f"n{i}") for i in range(8)] + [pod(f"p{i}", cpu="100m") for i in range(10)])
        sim.run()
        return sim.placements()

    assert placements(1) == placements(1)
    assert placements(1) != placements(2)
