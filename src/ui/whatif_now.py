"""The UI's "What if, now": changes applied to the simulated end state as transactions, without re-simulating.

The what-if editor (:mod:`.scenario`) edits the *scenario*: its edits change
history, so every one re-simulates from time 0.  This panel asks another
question - "from the cluster as the run left it, what if I now cordon,
drain or delete this node, add nodes like it, create these pods, delete
that pod?" - and answers it on a :class:`kubesched.sim.Simulator` forked
once from the latest run's end state: each change is applied inside a
:class:`kubesched.sim.Transaction` (the scheduler and controllers run to
quiescence, as ``kubesched simulate`` does), and the page shows what moved
(:class:`Moves`: pods placed, moved, gone, still Pending with
kube-scheduler's FailedScheduling message).  **Keep** commits it (later
what-ifs build on it), **Undo** rolls it back (cost proportional to what
changed, not to the cluster).  One change is open at a time.

The fork is taken once per run (O(cluster)), on a background thread when a
page that offers what-ifs is shown (:meth:`WhatIfNow.warm`: the /now page,
a node's page), without holding the what-if lock (no page waits for a
fork; a what-if posted meanwhile waits for that fork rather than making
another), and dropped when a newer run replaces that run (an edit of the
scenario or of the configuration re-simulates as before): the kept changes
go with it and the page says so.  Every what-if is serialised by a lock (a
simulator is used by one thread at a time).
"""

from __future__ import annotations

import copy
import threading
from concurrent.futures import Future
from typing import Any, Callable

import attrs
import yaml

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.cluster.client import ApiError
from kubesched.sim import Simulator, Transaction

#: The largest count of nodes or pod replicas one what-if may add (a bound on what a form can ask).
MOST_ADDED = 1000
#: Rows of each list of a what-if's moves shown on the page.
MOVES_SHOWN = 200


class WhatIfError(Exception):
    """A what-if that cannot be applied; its message is one line naming the object."""


@attrs.frozen
class Moves:
    """What one what-if changed, pod ``namespace/name`` keys sorted.

    ``placed``: pods that were not bound before (new, or Pending) -> their
    node; ``moved``: pods bound elsewhere now -> ``(before, after)``;
    ``gone``: pods that were bound and are gone or Pending now -> their node
    before; ``pending``: pods Pending now -> why (their PodScheduled
    condition's message: kube-scheduler's FailedScheduling words).
    """

    placed: dict[str, str]
    moved: dict[str, tuple[str, str]]
    gone: dict[str, str]
    pending: dict[str, str]


@attrs.frozen
class Applied:
    """One what-if: its ``label`` (``drain node-a``) and its :class:`Moves`."""

    label: str
    moves: Moves


def _pending_reason(pod: Pod) -> str:
    condition = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    if condition is None:
        return "not attempted yet"
    return condition.message or condition.reason


def moves_between(before: dict[str, str], simulator: Simulator) -> Moves:
    """The :class:`Moves` from placements ``before`` (pod key -> node, "" when Pending) to ``simulator``'s
    state now."""
    placed, moved, gone, pending = {}, {}, {}, {}
    now = {}
    for pod in simulator.pods():
        node = pod.spec.node_name
        now[pod.key] = node
        old = before.get(pod.key, "")
        if not node:
            pending[pod.key] = _pending_reason(pod)
            if old:
                gone[pod.key] = old
        elif not old:
            placed[pod.key] = node
        elif old != node:
            moved[pod.key] = (old, node)
    gone.update({key: node for key, node in before.items() if node and key not in now})
    return Moves(dict(sorted(placed.items())), dict(sorted(moved.items())), dict(sorted(gone.items())),
                 dict(sorted(pending.items())))


class WhatIfNow:
    """The "What if, now" state of a UI (see the module's documentation): the simulator of one run's end state,
    the kept what-ifs' labels and the open one (applied, neither kept nor undone)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._simulator: Simulator | None = None
        self._open: tuple[Transaction, Applied] | None = None
        self.kept: list[str] = []
        #: how many what-ifs (kept or open) the latest newer run dropped
        self.dropped = 0
        self._added = 0
        self._source: Any = None
        #: the latest fork started by :meth:`warm`: (run key, its future simulator)
        self._forking: tuple[tuple, Future[Simulator]] | None = None
        self._forking_lock = threading.Lock()
        self._one_fork_at_a_time = threading.Lock()  # two forks of one run never read it at once
        self._started: list[Future[Simulator]] = []  # the forks warm started that may still run

    # --- the state ----------------------------------------------------------------------

    def follow(self, key: tuple, simulation: Any) -> None:
        """Work on the end state of run ``key`` (its :class:`Simulation`): the same run keeps the state, a newer
        one drops it (an open what-if is rolled back, the kept ones are counted in :attr:`dropped`).  Waits
        while a what-if is under way (never for a fork): call it off the event loop."""
        if self._key == key:
            return
        with self._lock:
            if self._key == key:
                return
            if self._simulator is not None:
                self.dropped = len(self.kept) + (self._open is not None)
                self._close(keep=False)
            self._key, self._simulator, self.kept, self._added = key, None, [], 0
            self._source = simulation

    def warm(self, key: tuple, simulation: Any) -> None:
        """Fork run ``key``'s end state (its :class:`Simulation`) on a background thread, unless it is forked or
        being forked already, so that the first what-if on it finds the fork made (or waits for this one).
        Returns at once: never waits for the what-if lock nor for a fork."""
        with self._forking_lock:
            if (self._forking is not None and self._forking[0] == key) or (
                    self._key == key and self._simulator is not None):
                return
            future: Future[Simulator] = Future()
            self._forking = (key, future)
            self._started = [f for f in self._started if not f.done()] + [future]
        threading.Thread(target=self._fork_into, args=(simulation, future), name="what-if-now fork",
                         daemon=True).start()

    def close(self) -> None:
        """Wait until every fork :meth:`warm` started is done (a server stopping leaves no fork running)."""
        with self._forking_lock:
            started, self._started = self._started, []
        for future in started:
            future.exception()

    @property
    def open(self) -> Applied | None:
        """The what-if applied but neither kept nor undone (None: none)."""
        return self._open[1] if self._open is not None else None

    # --- what-ifs -----------------------------------------------------------------------

    def node(self, name: str, action: str, count: int = 1) -> Applied:
        """Apply ``action`` to node ``name``: ``cordon``, ``uncordon``, ``drain`` (``kubectl drain --force
        --ignore-daemonsets``), ``delete``, or ``add`` (``count`` nodes like it).  Raises :class:`WhatIfError`."""
        if action == "add":
            if not 1 <= count <= MOST_ADDED:
                raise WhatIfError(f"(what-if): add nodes like Node/{name}: count {count}: between 1 and {MOST_ADDED}")
            return self._apply(f"add {count} node(s) like {name}", lambda sim: self._add_like(sim, name, count))
        steps: dict[str, Callable[[Simulator], Any]] = {
            "cordon": lambda sim: sim.cordon(name), "uncordon": lambda sim: sim.cordon(name, False),
            "drain": lambda sim: sim.drain(name), "delete": lambda sim: sim.delete("Node", name)}
        if action not in steps:
            raise WhatIfError(f"(what-if): Node/{name}: unknown action {action!r} (cordon, uncordon, drain, delete, "
                              "add)")
        return self._apply(f"{action} {name}", steps[action])

    def pods(self, text: str, replicas: int = 1) -> Applied:
        """Create the Pod of manifest ``text`` (``replicas`` > 1: that many, named ``<name>-1`` ...) and schedule
        them, preempting as their PriorityClass allows.  Raises :class:`WhatIfError`."""
        if not 1 <= replicas <= MOST_ADDED:
            raise WhatIfError(f"(what-if): replicas {replicas}: between 1 and {MOST_ADDED}")
        try:
            manifest = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise WhatIfError(f"(what-if): the pod's YAML: {str(err).splitlines()[0]}") from None
        if not isinstance(manifest, dict) or manifest.get("kind") != "Pod":
            raise WhatIfError("(what-if): the manifest: one object of kind Pod expected")
        name = str((manifest.get("metadata") or {}).get("name") or "")
        if not name:
            raise WhatIfError("(what-if): Pod: metadata.name: required")
        pods = [manifest] if replicas == 1 else [_renamed(manifest, f"{name}-{i}") for i in range(1, replicas + 1)]
        label = f"create Pod {name}" + (f" x{replicas}" if replicas > 1 else "")
        return self._apply(label, lambda sim: sim.schedule(pods))

    def delete_pod(self, key: str) -> Applied:
        """Delete pod ``namespace/name`` (its controller may recreate it).  Raises :class:`WhatIfError`."""
        return self._apply(f"delete Pod {key}", lambda sim: sim.delete("Pod", key))

    def keep(self) -> None:
        """Commit the open what-if: later ones build on it.  Nothing open: nothing done."""
        with self._lock:
            self._close(keep=True)

    def undo(self) -> None:
        """Roll the open what-if back.  Nothing open: nothing done."""
        with self._lock:
            self._close(keep=False)

    # --- internals ----------------------------------------------------------------------

    def _sim(self) -> Simulator:
        """The followed run's fork: the one :meth:`warm` started for it (waiting for it), else one made now."""
        if self._simulator is None:
            if self._key is None:
                raise WhatIfError("(what-if): no run has finished yet")
            with self._forking_lock:
                forking = self._forking if self._forking is not None and self._forking[0] == self._key else None
            self._simulator = forking[1].result() if forking is not None else self._fork(self._source)
            with self._forking_lock:
                if self._forking is forking:  # taken: a later return to this run forks afresh
                    self._forking = None
        return self._simulator

    def _fork(self, simulation: Any) -> Simulator:
        with self._one_fork_at_a_time:
            return Simulator(simulation).fork()

    def _fork_into(self, simulation: Any, future: Future[Simulator]) -> None:
        """Fork ``simulation``'s state into ``future`` (its result, or the exception forking raised)."""
        try:
            future.set_result(self._fork(simulation))
        except BaseException as err:  # handed to whoever waits for the fork
            future.set_exception(err)

    def _apply(self, label: str, step: Callable[[Simulator], Any]) -> Applied:
        with self._lock:
            if self._open is not None:
                raise WhatIfError(f"(what-if): keep or undo {self._open[1].label!r} first")
            sim = self._sim()
            before = sim.placements()
            tx = sim.transaction()
            tx.__enter__()
            try:
                step(sim)
            except (ApiError, InvalidManifest, ValueError, TypeError) as err:
                tx.__exit__(None, None, None)
                raise WhatIfError(f"(what-if): {label}: {getattr(err, 'message', None) or err}") from None
            applied = Applied(label, moves_between(before, sim))
            self._open = (tx, applied)
            return applied

    def _close(self, keep: bool) -> None:
        if self._open is None:
            return
        (tx, applied), self._open = self._open, None
        if keep:
            tx.commit()
            self.kept.append(applied.label)
        tx.__exit__(None, None, None)

    def _add_like(self, sim: Simulator, name: str, count: int) -> list[str]:
        template = next((n for n in sim.nodes() if n.metadata.name == name), None)
        if template is None:
            raise ValueError(f"Node/{name}: no such node")
        self._added += 1
        prefix = f"{name}-whatif{self._added}"
        return sim.add_nodes(attrs.evolve(template, metadata=attrs.evolve(template.metadata, name=prefix)), count)


def _renamed(manifest: dict, name: str) -> dict:
    copied = copy.deepcopy(manifest)
    copied.setdefault("metadata", {})["name"] = name
    return copied


__all__ = ["Applied", "Moves", "WhatIfError", "WhatIfNow", "moves_between"]
