"""Shared pieces for the plugin tests: building plugins, NodeInfos, batch/per-node
comparisons and small simulations."""

from __future__ import annotations

import weakref
from typing import Any, Iterable

import attrs
import numpy as np

from kubesched.core.framework.config import API_VERSION, KIND
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.nodeinfo import NodeInfo
from kubesched.core.framework.snapshot import Snapshot
from kubesched.core.framework.status import Code, Status
from kubesched.drivers.simulation import Simulation
from kubesched.testing import PluginBench

#: each plugin built by :func:`make` -> its bench (the handle's cluster and snapshot)
_BENCHES: weakref.WeakKeyDictionary[Any, PluginBench] = weakref.WeakKeyDictionary()


def make(cls: type, raw: dict | None = None, objects: Iterable[Any] = (), **options: Any) -> Any:
    """The plugin ``cls`` built the way a profile builds it (args decoded from
    ``raw``) on a real Handle over a MemoryCluster holding ``objects``, its
    informers synced (:class:`kubesched.testing.PluginBench`; ``options``
    go to it)."""
    made = PluginBench(cls, raw, objects, **options)
    _BENCHES[made.plugin] = made
    return made.plugin


def bench(plugin: Any) -> PluginBench:
    """The bench :func:`make` built ``plugin`` on."""
    return _BENCHES[plugin]


def use_nodes(plugin: Any, infos: Iterable[NodeInfo]) -> Snapshot:
    """The snapshot ``plugin`` reads, holding ``infos``: for a plugin built by
    :func:`make`, its handle's (see :meth:`PluginBench.use_nodes`); a plugin
    taken from a simulation's scheduler reads the scheduler's, so a snapshot
    of ``infos`` apart."""
    made = _BENCHES.get(plugin)
    if made is None:
        return Snapshot(list(infos))
    made.use_nodes(list(infos))
    return made.snapshot


def on(p, node_name: str):
    """``p`` as a pod bound to ``node_name``."""
    return attrs.evolve(p, spec=attrs.evolve(p.spec, node_name=node_name))


def info(n, *pods) -> NodeInfo:
    return NodeInfo(n, pods)


def code(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def reasons(status: Status | None) -> tuple[str, ...]:
    return () if status is None else status.reasons


def run_pre_filter(plugin, p, infos: list[NodeInfo], state: CycleState | None = None):
    """PreFilter as the framework calls it, on a snapshot of ``infos``: returns (state, result, status)."""
    state = state or CycleState()
    answer = plugin.pre_filter(state, p, use_nodes(plugin, infos).nodes)
    result, status = answer if isinstance(answer, tuple) else (None, answer)
    return state, result, status


def run_pre_score(plugin, state: CycleState, p, infos: list[NodeInfo]) -> Status | None:
    """PreScore as the framework calls it, on a snapshot of ``infos`` (all feasible)."""
    return plugin.pre_score(state, p, use_nodes(plugin, infos).nodes)


def filter_all(plugin, state: CycleState, p, infos: list[NodeInfo]) -> list[Status | None]:
    """The per-node Filter over ``infos`` (the snapshot's nodes); when the plugin
    has a batch form, also checks that it agrees (on every row, and on a
    reordered subset of rows)."""
    snapshot = use_nodes(plugin, infos)
    infos, table = snapshot.nodes, snapshot.table
    statuses = [plugin.filter(state, p, ni) for ni in infos]
    if hasattr(plugin, "filter_batch"):
        passes = [s is None or s.code == Code.SUCCESS for s in statuses]
        got = plugin.filter_batch(state, p, table, np.arange(len(infos), dtype=np.int64))
        assert got.dtype == bool and list(got) == passes, (list(got), passes)
        rows = np.array(list(range(len(infos)))[::-2], dtype=np.int64)
        got = plugin.filter_batch(state, p, table, rows)
        assert list(got) == [passes[r] for r in rows]
    if hasattr(plugin, "filter_batch_status"):
        rows = np.array(list(range(len(infos)))[::-1], dtype=np.int64)
        index, choices = plugin.filter_batch_status(state, p, table, rows)
        assert [choices[i] if i >= 0 else None for i in index] == [statuses[r] for r in rows]
    return statuses


def score_all(plugin, state: CycleState, p, infos: list[NodeInfo], normalize: bool = True) -> list[int]:
    """Per-node Score over ``infos`` (the snapshot's nodes; the batch form must
    agree), then NormalizeScore."""
    snapshot = use_nodes(plugin, infos)
    infos, table = snapshot.nodes, snapshot.table
    raw = [plugin.score(state, p, ni) for ni in infos]
    assert all(isinstance(v, (int, np.integer)) for v in raw), raw
    if hasattr(plugin, "score_batch"):
        got = plugin.score_batch(state, p, table, np.arange(len(infos), dtype=np.int64))
        assert [int(v) for v in got] == [int(v) for v in raw], (list(got), raw)
        rows = np.array(list(range(len(infos)))[::-1], dtype=np.int64)
        got = plugin.score_batch(state, p, table, rows)
        assert [int(v) for v in got] == [int(raw[r]) for r in rows]
    if hasattr(plugin, "score_row"):  # None: the plugin declines, score_batch scores the row
        got = [plugin.score_row(state, p, table, r) for r in range(len(infos))]
        assert all(v is None or type(v) is int for v in got), got
        assert [v for v in got if v is not None] == [int(raw[r]) for r, v in enumerate(got) if v is not None]
    scores = np.array(raw, dtype=np.int64)
    if normalize and hasattr(plugin, "normalize_score"):
        assert plugin.normalize_score(state, p, [ni.name for ni in infos], scores) is None
    return [int(v) for v in scores]


# --- simulations ---------------------------------------------------------------------------


def config(plugin_config: dict[str, dict] | None = None, **profile: Any) -> dict:
    """A KubeSchedulerConfiguration document with one default-scheduler profile."""
    prof: dict[str, Any] = {"schedulerName": "default-scheduler", **profile}
    if plugin_config:
        prof["pluginConfig"] = [{"name": name, "args": args} for name, args in plugin_config.items()]
    return {"apiVersion": API_VERSION, "kind": KIND, "profiles": [prof]}


def simulate(objects: Iterable[Any], config: Any = None, seed: int = 0) -> Simulation:
    sim = Simulation(config, seed=seed)
    sim.create(objects)
    sim.run()
    return sim


def failure(sim: Simulation) -> str:
    """The message of the last FailedScheduling event."""
    events = sim.events("FailedScheduling")
    assert events, "no FailedScheduling event"
    return events[-1].message


def fit_reason(sim: Simulation, name: str | None = None) -> str:
    """The FitError part of the last FailedScheduling message (of pod ``name``,
    or of any pod), without what PostFilter (preemption) appended."""
    events = [e for e in sim.events("FailedScheduling") if name is None or e.involved_object.name == name]
    assert events, "no FailedScheduling event"
    return events[-1].message.split(" preemption: ")[0]


def condition(sim: Simulation, name: str):
    """The pod's PodScheduled condition."""
    (cond,) = [c for c in sim.pod(name).status.conditions if c.type == "PodScheduled"]
    return cond


def default_framework(sim: Simulation):
    return sim.scheduler.profiles["default-scheduler"]


def snapshot_info(sim: Simulation, name: str) -> NodeInfo:
    """The scheduler's current NodeInfo for node ``name``."""
    sim.scheduler.cache.update_snapshot(sim.scheduler.snapshot)
    return sim.scheduler.snapshot.get(name)
