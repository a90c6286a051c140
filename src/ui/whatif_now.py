"""The UI's "What if, now": changes applied to the simulated end state as transactions, without re-simulating.

The what-if editor (:mod:`.scenario`) edits the *scenario*: its edits change
history, so every one re-simulates from time 0.  This panel asks another
question - "from the cluster as the run left it, what if I now cordon,
drain or delete this node, add nodes like it, create these pods, delete
that pod?" - and answers it with :mod:`kubesched.sim` on that end state
(the scheduler and controllers run to quiescence, as ``kubesched simulate``
does), and the page shows what moved (:class:`Moves`: pods placed, moved,
gone, still Pending with kube-scheduler's FailedScheduling message).
**Keep** commits it (later what-ifs build on it), **Undo** drops it.  One
change is open at a time.

While nothing is kept, a what-if is answered on the run's own simulation
(:meth:`Simulator.borrowing <kubesched.sim.Simulator.borrowing>`) and rolled
back at once: its cost is what it changes, not the cluster, and no copy is
made.  The pages that read a run's simulation itself (objects, devices, pod
groups, the HTML report) do so through :meth:`WhatIfNow.reading`, so they
never see a what-if before its rollback.  The first **Keep** of a run forks
its end state (O(cluster), once per run) and applies the kept what-if there
again; from then on what-ifs are transactions on that fork, kept or rolled
back (cost proportional to what changed).  A newer run (an edit of the
scenario or of the configuration re-simulates as before) drops the fork and
the kept what-ifs, and the page says so.  Every what-if is serialised by a
lock (a simulator is used by one thread at a time).
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, TypeVar

import attrs
import yaml

from kubesched.core.api.core_v1 import Pod
from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.cluster.client import ApiError
from kubesched.sim import Simulator, Transaction

T = TypeVar("T")

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


@attrs.frozen
class _Open:
    """The open what-if: what it showed, its ``step`` (to apply it again on the fork when kept) and its
    transaction on the fork (None: answered on the run's own end state, rolled back already)."""

    applied: Applied
    step: Callable[[Simulator], Any]
    transaction: Transaction | None


class WhatIfNow:
    """The "What if, now" state of a UI (see the module's documentation): the followed run's simulation, the
    fork holding the kept what-ifs (once one is kept), their labels and the open one (neither kept nor undone)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # held while a what-if changes a run's own simulation
        self._key: tuple | None = None
        self._source: Any = None
        self._fork: Simulator | None = None
        self._open: _Open | None = None
        self.kept: list[str] = []
        #: how many what-ifs (kept or open) the latest newer run dropped
        self.dropped = 0

    # --- the state ----------------------------------------------------------------------

    def follow(self, key: tuple, simulation: Any) -> None:
        """Work on the end state of run ``key`` (its :class:`Simulation`): the same run keeps the state, a newer
        one drops it (an open what-if is rolled back, the kept ones are counted in :attr:`dropped`).  Waits
        while a what-if is under way: call it off the event loop."""
        if self._key == key:
            return
        with self._lock:
            if self._key == key:
                return
            if self._key is not None:
                self.dropped = len(self.kept) + (self._open is not None)
                self._undo_locked()
            self._key, self._source, self._fork, self.kept = key, simulation, None, []

    def reading(self, read: Callable[..., T], *args: Any) -> T:
        """``read(*args)`` once no what-if is changing a run's own simulation: a page that reads a run's
        simulation itself (not only its :class:`Outcome`) sees it as the run left it."""
        with self._reading:
            return read(*args)

    @property
    def open(self) -> Applied | None:
        """The what-if applied but neither kept nor undone (None: none)."""
        return self._open.applied if self._open is not None else None

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
        """Commit the open what-if: later ones build on it (the run's first kept one forks its end state and
        applies it there again).  Nothing open: nothing done.  Raises :class:`WhatIfError`."""
        with self._lock:
            opened, self._open = self._open, None
            if opened is None:
                return
            if opened.transaction is not None:
                opened.transaction.commit()
                opened.transaction.__exit__(None, None, None)
            else:
                if self._fork is None:
                    with self._reading, Simulator.borrowing(self._source) as end_state:
                        self._fork = end_state.fork()
                with self._fork.transaction() as tx:
                    _answer(opened.applied.label, opened.step, self._fork)
                    tx.commit()
            self.kept.append(opened.applied.label)

    def undo(self) -> None:
        """Roll the open what-if back.  Nothing open: nothing done."""
        with self._lock:
            self._undo_locked()

    def _undo_locked(self) -> None:
        """:meth:`undo`, the caller holding the what-if lock."""
        opened, self._open = self._open, None
        if opened is not None and opened.transaction is not None:
            opened.transaction.__exit__(None, None, None)

    # --- internals ----------------------------------------------------------------------

    def _apply(self, label: str, step: Callable[[Simulator], Any]) -> Applied:
        with self._lock:
            if self._open is not None:
                raise WhatIfError(f"(what-if): keep or undo {self._open.applied.label!r} first")
            if self._key is None:
                raise WhatIfError("(what-if): no run has finished yet")
            if self._fork is None:  # nothing kept: on the run's own end state, rolled back at once
                with self._reading, Simulator.borrowing(self._source) as sim:
                    applied = _answer(label, step, sim)
                self._open = _Open(applied, step, None)
                return applied
            tx = self._fork.transaction()
            tx.__enter__()
            try:
                applied = _answer(label, step, self._fork)
            except WhatIfError:
                tx.__exit__(None, None, None)
                raise
            self._open = _Open(applied, step, tx)
            return applied

    def _add_like(self, sim: Simulator, name: str, count: int) -> list[str]:
        template = next((n for n in sim.nodes() if n.metadata.name == name), None)
        if template is None:
            raise ValueError(f"Node/{name}: no such node")
        prefix = f"{name}-whatif{len(self.kept) + 1}"  # the same when a kept what-if is applied again
        return sim.add_nodes(attrs.evolve(template, metadata=attrs.evolve(template.metadata, name=prefix)), count)


def _answer(label: str, step: Callable[[Simulator], Any], sim: Simulator) -> Applied:
    """Apply ``step`` to ``sim`` and say what moved.  Raises :class:`WhatIfError` for a change the API server
    or the step refuses."""
    before = sim.placements()
    try:
        step(sim)
    except (ApiError, InvalidManifest, ValueError, TypeError) as err:
        raise WhatIfError(f"(what-if): {label}: {getattr(err, 'message', None) or err}") from None
    return Applied(label, moves_between(before, sim))


def _renamed(manifest: dict, name: str) -> dict:
    copied = copy.deepcopy(manifest)
    copied.setdefault("metadata", {})["name"] = name
    return copied


__all__ = ["Applied", "Moves", "WhatIfError", "WhatIfNow", "moves_between"]
