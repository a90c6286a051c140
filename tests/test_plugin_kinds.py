"""A plugin of each kind written as an out-of-tree author writes it - ``import kubesched`` and, for the
tests, ``kubesched.testing``, nothing deeper - run on the real embedded cluster, and the file is
type-checked with mypy (``test_this_file_type_checks``), so the plugin API's face is complete for:

- Filter + Score (with the batch Score over the snapshot's NodeTable and queueing hints),
- PreEnqueue (a gate lifted by a cluster event),
- PlacementGenerate and PlacementScore (a PodGroup placed in one rack, the preferred one).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import sys
import tempfile
from pathlib import Path

import mypy.api
import numpy as np
import pytest
from attrs import frozen

import kubesched
from kubesched.testing import config, node, node_scores, pod, pod_group

ZONE, RACK = "topology.kubernetes.io/zone", "example.com/rack"


# --- Filter + Score ------------------------------------------------------------------------------


@frozen
class ZonePreferenceArgs:
    """``zone``: the zone whose nodes score 100 (others 0); ``avoidLabel``: nodes labelled with it
    ("true") are filtered out."""

    zone: str = ""
    avoid_label: str = "example.com/avoid"


class ZonePreference:
    """Filter: no pod on an avoided node; Score: the preferred zone's nodes first."""

    name = "ZonePreference"
    args_class = ZonePreferenceArgs

    def __init__(self, args: ZonePreferenceArgs, handle: kubesched.Handle) -> None:
        self.args = args

    @kubesched.hookimpl
    def filter(self, state: kubesched.CycleState, pod: kubesched.Pod,
               node_info: kubesched.NodeInfo) -> kubesched.Status | None:
        node = node_info.node
        if node is not None and node.metadata.labels.get(self.args.avoid_label) == "true":
            return kubesched.Status.unschedulable(f"node(s) are avoided by {self.name}")
        return None

    @kubesched.hookimpl
    def score(self, state: kubesched.CycleState, pod: kubesched.Pod, node_info: kubesched.NodeInfo) -> int:
        node = node_info.node
        in_zone = node is not None and node.metadata.labels.get(ZONE) == self.args.zone
        return kubesched.MAX_NODE_SCORE if in_zone else kubesched.MIN_NODE_SCORE

    @kubesched.hookimpl
    def score_batch(self, state: kubesched.CycleState, pod: kubesched.Pod, table: kubesched.NodeTable,
                    rows: np.ndarray) -> np.ndarray:
        in_zone = table.domain_ids(ZONE)[rows] == table.domain_id(ZONE, self.args.zone)
        return np.where(in_zone, kubesched.MAX_NODE_SCORE, kubesched.MIN_NODE_SCORE).astype(np.int64)

    @kubesched.hookimpl
    def events_to_register(self) -> list[kubesched.ClusterEventWithHint]:
        def label_changed(pod: kubesched.Pod, old: object, new: object) -> kubesched.QueueingHint:
            return kubesched.QueueingHint.QUEUE

        update = kubesched.ClusterEvent(kubesched.NODE, kubesched.ActionType.UPDATE_NODE_LABEL)
        return [kubesched.ClusterEventWithHint(update, label_changed)]


def test_a_filter_and_score_plugin_keeps_pods_off_avoided_nodes_and_prefers_its_zone(simulate) -> None:
    nodes = [node("big-a", cpu="64", labels={ZONE: "a"}),
             node("huge-b", cpu="128", labels={ZONE: "b", "example.com/avoid": "true"}),
             node("small-b", cpu="8", labels={ZONE: "b"})]
    plain = simulate(*nodes, pod("web", cpu="1"))
    assert plain.placements()["default/web"] == "huge-b"  # the roomiest node, without the plugin

    sim = simulate(*nodes, pod("web", cpu="1"), pod("batch", cpu="100"), plugins=[ZonePreference],
                   config=config(score={"ZonePreference": 10}, args={"ZonePreference": {"zone": "b"}}))
    assert sim.placements() == {"default/web": "small-b", "default/batch": ""}
    failed = [e.message for e in sim.events("FailedScheduling") if e.involved_object.name == "batch"]
    assert failed and "1 node(s) are avoided by ZonePreference" in failed[-1]
    assert node_scores(sim, pod("next", cpu="1"))["small-b"]["ZonePreference"] == 1000


# --- PreEnqueue ----------------------------------------------------------------------------------


class TicketGate:
    """PreEnqueue: a pod enters the queue only with a ``example.com/ticket`` label; adding the label
    (a pod update) lets it in."""

    name = "TicketGate"
    label = "example.com/ticket"

    def __init__(self, args: object, handle: kubesched.Handle) -> None:
        self.gated: list[str] = []

    @kubesched.hookimpl
    def pre_enqueue(self, pod: kubesched.Pod) -> kubesched.Status | None:
        if self.label in pod.metadata.labels:
            return None
        self.gated.append(pod.metadata.name)
        return kubesched.Status(kubesched.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for a ticket",))

    @kubesched.hookimpl
    def events_to_register(self) -> list[kubesched.ClusterEventWithHint]:
        def got_ticket(pod: kubesched.Pod, old: object, new: object) -> kubesched.QueueingHint:
            ticketed = isinstance(new, kubesched.Pod) and self.label in new.metadata.labels
            return kubesched.QueueingHint.QUEUE if ticketed else kubesched.QueueingHint.QUEUE_SKIP

        update = kubesched.ClusterEvent(kubesched.UNSCHEDULED_POD, kubesched.ActionType.UPDATE_POD_LABEL)
        return [kubesched.ClusterEventWithHint(update, got_ticket)]


def test_a_pre_enqueue_plugin_holds_a_pod_until_an_event_it_registered_lets_it_in(simulate) -> None:
    sim = simulate(node("n1"), pod("ticketed", cpu="1", labels={TicketGate.label: "t-1"}), pod("waiting", cpu="1"),
                   plugins=[TicketGate], config=config(score={"TicketGate": 1}, only=False))
    assert sim.placements() == {"default/ticketed": "n1", "default/waiting": ""}
    assert not sim.events("FailedScheduling")  # gated, never tried
    gate = sim.scheduler.profiles["default-scheduler"].plugins["TicketGate"]
    assert gate.gated == ["waiting"]

    sim.cluster.patch("Pod", "waiting", {"metadata": {"labels": {TicketGate.label: "t-2"}}}, "default")
    sim.run()
    assert sim.placements()["default/waiting"] == "n1"


# --- PlacementGenerate and PlacementScore --------------------------------------------------------


class RackPlacements:
    """PlacementGenerate: one placement per rack (node label ``example.com/rack``) within the parent;
    nodes without a rack take no part."""

    name = "RackPlacements"

    def __init__(self, args: object, handle: kubesched.Handle) -> None:
        self.handle = handle

    @kubesched.hookimpl
    def placement_generate(self, state: kubesched.CycleState, group: kubesched.PodGroupInfo,
                           parent: kubesched.Placement) -> list[kubesched.Placement]:
        table: kubesched.NodeTable = self.handle.snapshot.table
        racks = table.domain_ids(RACK)[parent.rows]
        return [kubesched.Placement(rack, parent.rows[racks == domain])
                for domain, rack in enumerate(table.domain_values(RACK)) if (racks == domain).any()]


@frozen
class PreferredRackArgs:
    """``rack``: the rack a PodGroup should go to."""

    rack: str = ""


class PreferredRack:
    """PlacementScore: the share of a group's members a placement puts in the preferred rack."""

    name = "PreferredRack"
    args_class = PreferredRackArgs

    def __init__(self, args: PreferredRackArgs, handle: kubesched.Handle) -> None:
        self.rack = args.rack
        self.handle = handle
        self.scored: dict[str, int] = {}

    @kubesched.hookimpl
    def placement_score(self, state: kubesched.CycleState, group: kubesched.PodGroupInfo,
                        assignments: kubesched.PodGroupAssignments) -> int | kubesched.Status:
        if not assignments.assignments:
            return kubesched.MIN_NODE_SCORE
        snapshot: kubesched.Snapshot = self.handle.snapshot
        infos = [snapshot.get(node_name) for _pod, node_name in assignments.assignments]
        here = sum(1 for info in infos
                   if info is not None and info.node is not None and info.node.metadata.labels.get(RACK) == self.rack)
        score = kubesched.MAX_NODE_SCORE * here // len(infos)
        self.scored[assignments.placement.name] = score
        return score


def test_placement_plugins_put_a_gang_in_one_rack_the_preferred_one(simulate) -> None:
    objects = [node("a1", cpu="16", labels={RACK: "rack-a"}), node("a2", cpu="16", labels={RACK: "rack-a"}),
               node("b1", cpu="4", labels={RACK: "rack-b"}), node("b2", cpu="4", labels={RACK: "rack-b"}),
               node("spare", cpu="64"), pod_group("train", min_count=2),
               pod("w0", cpu="3", pod_group="train"), pod("w1", cpu="3", pod_group="train")]
    plain = simulate(*objects)
    assert set(plain.placements().values()) == {"spare"}  # the roomiest node, without the plugins

    profile = config(score={"PreferredRack": 5, "RackPlacements": 1}, only=False,
                     args={"PreferredRack": {"rack": "rack-b"}})
    sim = simulate(*objects, plugins=[RackPlacements, PreferredRack], config=profile)
    assert sorted(sim.placements().values()) == ["b1", "b2"]
    scorer = sim.scheduler.profiles["default-scheduler"].plugins["PreferredRack"]
    # each rack's placement scored (named by the intersection with TopologyPlacementGenerator's, parent/rack)
    assert {name.rpartition("/")[2]: score for name, score in scorer.scored.items()} == {"rack-a": 0, "rack-b": 100}


# --- the face, checked --------------------------------------------------------------------------


def test_this_file_type_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy, configured as for the package (kubesched read from src/), finds every name these plugins
    use in the plugin API and agrees with the types they give the hooks (tests/test_plugin_api.py
    checks that this file imports nothing of kubesched but the faces).  Its cache is the checkout's
    .mypy_cache, the one `mypy -p kubesched` of .ci/run and check.sh fills before the suite runs (a
    first run with no cache analyses the whole package: ~20 s of CPU)."""
    root = Path(__file__).resolve().parent.parent
    work = Path(tempfile.gettempdir()) / f"kubesched-mypy-{hashlib.sha1(str(root).encode()).hexdigest()[:12]}"
    work.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):  # another run of this checkout made it meanwhile
        (work / "kubesched").symlink_to(root / "src")
    monkeypatch.setenv("MYPYPATH", str(work))
    # mypy run in this process sets process-wide state for its own run (the collector's thresholds, the
    # recursion limit, MYPY_CONFIG_FILE_DIR): put back, so the tests after this one on the worker run as before
    monkeypatch.setenv("MYPY_CONFIG_FILE_DIR", str(root))
    thresholds, recursion_limit = gc.get_threshold(), sys.getrecursionlimit()
    try:
        out, err, status = mypy.api.run(["--config-file", str(root / "pyproject.toml"), "--cache-dir",
                                         str(root / ".mypy_cache"), "--no-error-summary", str(Path(__file__))])
    finally:
        gc.set_threshold(*thresholds)
        sys.setrecursionlimit(recursion_limit)
    assert status == 0, out + err
