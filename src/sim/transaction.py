"""Transactions on a simulation: what changed is undone, the rest is not touched.

A :class:`Savepoint` of a :class:`~kubesched.drivers.simulation.Simulation`
opens the embedded API server's undo log (each write of its store is
recorded) and saves what the scheduler and the controllers keep of their
history (the scheduling queue, the clock's timers, counters, expectations:
:meth:`Scheduler.savepoint`, :meth:`ControllerManager.savepoint`, sized by
what is pending, not by the cluster).  :meth:`Savepoint.rollback`:

1. undoes the store's writes, newest first (the objects come back with their
   resourceVersions, uids and timestamps);
2. delivers to the informers, for each object the transaction changed, the
   change back (an add of what was deleted, a delete of what was created, an
   update to the old object; see :func:`_changes_back`) - the scheduler's cache,
   snapshot rows, PodGroup members and allocated devices follow through the
   same handlers that built them; what a handler writes meanwhile (a controller
   deleting what a deleted owner owned) is undone again, its events dropped;
3. puts the saved history back (which undoes what those handlers queued).

Its cost is proportional to the objects changed plus the pending pods and
timers, not to the size of the cluster.  Not rolled back: metrics
(prometheus counters) and state a plugin keeps outside the cycle state.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubesched.core.api.core_v1 import Pod
from kubesched.core.cluster.client import ADDED, DELETED, MODIFIED, WatchEvent
from kubesched.core.undo import ABSENT, StoreWrite, restoring_all, saved_fields
from kubesched.drivers.simulation import Simulation

#: What a simulation's feature gates keep that creating an object may change (a gate switched on, a note).
GATE_FIELDS = ("_values", "_enabled", "notes")


class Simulated(Protocol):
    """What a transaction is taken on: anything holding a simulation (a :class:`~kubesched.sim.Simulator`)."""

    @property
    def simulation(self) -> Simulation:
        """The simulation the transaction changes and rolls back."""


class Transaction:
    """What :meth:`Simulator.transaction` returns: a context manager; call :meth:`commit` to keep the changes.

    Entering takes a :class:`Savepoint`; leaving without :meth:`commit`, or
    on an exception (committed or not, as scheduler-library's transactions
    do), rolls back to it.  Nested transactions roll back only
    their own changes; an inner commit keeps its changes in the outer one."""

    def __init__(self, simulator: Simulated):
        self._simulator = simulator
        self._savepoint: Savepoint | None = None
        self.committed = False

    def __enter__(self) -> "Transaction":
        self._savepoint = Savepoint(self._simulator.simulation)
        return self

    def commit(self) -> None:
        """Keep this transaction's changes when it ends."""
        self.committed = True

    def rollback(self) -> None:
        """Put the state back as it was when the transaction began (now; it may go on after).  Raises
        RuntimeError outside the with-block."""
        if self._savepoint is None:
            raise RuntimeError("rollback outside the transaction's with-block")
        self._savepoint.rollback()

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        savepoint, self._savepoint = self._savepoint, None
        if savepoint is None:
            return
        try:
            if kind is not None or not self.committed:
                savepoint.rollback()
        finally:
            savepoint.release()


class Savepoint:
    """The state of ``simulation`` now, to go back to (see the module's documentation).

    :meth:`rollback` goes back (any number of times); :meth:`release`
    closes it, keeping the changes (in an enclosing savepoint's undo log while
    one is open).  Savepoints nest: release or roll back the innermost first.
    """

    def __init__(self, simulation: Simulation):
        self._simulation = simulation
        simulation.harness.informers.pump()
        self._journal = simulation.cluster.journal
        self._mark = self._journal.begin()
        self._restore = restoring_all([
            simulation.cluster.savepoint(), simulation.clock.savepoint(), simulation.scheduler.savepoint(),
            simulation.controllers.savepoint(), saved_fields(simulation, ("changes", "_pending_changes")),
            saved_fields(simulation.features, GATE_FIELDS),
        ])

    def rollback(self) -> None:
        """Put the simulation back as it was when the savepoint was taken; it stays open."""
        informers = self._simulation.harness.informers
        informers.pump()  # the informers hold what the store holds: the changes back apply to that
        touched: dict[tuple[str, str], StoreWrite] = {}
        for step in self._journal.since(self._mark):
            if isinstance(step, StoreWrite):
                touched.setdefault((step.kind, step.key), step)
        now = {key: write.store.get(write.key, ABSENT) for key, write in touched.items()}
        self._journal.rollback(self._mark)
        informers.replaying = True
        try:
            for (kind, _), write in reversed(touched.items()):
                for event in _changes_back(kind, now[kind, write.key], write.previous):
                    informers.deliver(event)
        finally:
            informers.replaying = False
        # a handler that writes on an event (a controller deleting what a deleted owner owned) wrote for the
        # replay, not for the state it restores: those writes are undone and their watch events dropped
        self._journal.rollback(self._mark)
        informers.discard_pending()
        self._restore()

    def release(self) -> None:
        """Close the savepoint, keeping the changes."""
        self._journal.end(self._mark)


def _changes_back(kind: str, now: Any, before: Any) -> list[WatchEvent]:
    """The watch events that take an informer from ``now`` to ``before`` (:data:`ABSENT`: no object): an add of
    what was deleted, a delete of what was created, an update back (to an older resourceVersion, which
    :attr:`Informers.replaying` lets the assume caches take); a Pod whose node or phase changed is deleted and
    added again, as the scheduler's cache holds a pod by its node."""
    if now is before:
        return []
    if before is ABSENT:
        return [WatchEvent(DELETED, kind, now)]
    if now is ABSENT:
        return [WatchEvent(ADDED, kind, before)]
    if isinstance(now, Pod) and (now.spec.node_name != before.spec.node_name or now.terminal != before.terminal):
        return [WatchEvent(DELETED, kind, now), WatchEvent(ADDED, kind, before)]
    return [WatchEvent(MODIFIED, kind, before)]
