"""Simulating scenarios in the background: the files as they are, and with the browser's edits.

:func:`simulate` runs one :class:`~kubesched.ui.scenario.Scenario` on a new
:class:`~kubesched.drivers.simulation.Simulation` (fake clock, until nothing
more can happen), recording every decision and the pods' placements over
time, and returns its :class:`~kubesched.ui.outcome.Outcome`.

:class:`Runs` owns the :class:`~kubesched.ui.scenario.History` and one worker
thread.  The pages need two outcomes: the *baseline* (the files, no edit)
and the *current* one (the edits up to the cursor); the worker simulates
whichever is missing, newest wishes first.  A run that is no longer wanted
- a newer edit, an undo, a file saved - stops at its next scheduling
attempt: its decision log raises :class:`RunCancelled` when the scheduler
asks it whether to record the attempt.  A few outcomes are kept, so undo
and redo show an earlier state at once.  Listeners (the server-sent events)
are called from the worker thread whenever the state changes.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from kubesched.core.api.manifests import InvalidManifest
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import ConfigError
from kubesched.core.framework.registry import PluginError, Registry
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.drivers.simulation import DEFAULT_START, Simulation, create_sourced

from .outcome import Outcome
from .scenario import Edit, History, Scenario, TimedChange, read_scenario, watched_files
from .timeline import PlacementLog

#: Outcomes kept beyond the two the pages show (for undo and redo).
KEPT_OUTCOMES = 4


def _forget_unwanted(kept: dict, wanted: set, spare: int) -> None:
    """Drop from ``kept`` (key -> outcome or error, oldest first) every key not ``wanted`` but the ``spare`` newest."""
    for old in [k for k in kept if k not in wanted][:-spare or None]:
        del kept[old]


class RunCancelled(Exception):
    """A run stopped because its scenario is no longer wanted."""


class _CancellableRecord(DecisionLog):
    """Decision records kept in memory; :meth:`wants`, which the scheduler
    asks before every attempt, raises :class:`RunCancelled` once ``stale()``."""

    def __init__(self, stale: Callable[[], bool]):
        super().__init__()
        self.stale = stale

    def wants(self, pod_key: str) -> bool:
        if self.stale():
            raise RunCancelled(pod_key)
        return True


def simulate(scenario: Scenario, key: tuple = (), registry: Registry | None = None, seed: int = 0,
             start: float = DEFAULT_START, stale: Callable[[], bool] = lambda: False,
             features: FeatureGates | None = None) -> Outcome:
    """Run ``scenario`` to quiescence (with a fresh copy of ``features``: a run's own gates switched on
    stay its own) and return its :class:`Outcome`.
    Raises :class:`RunCancelled` (``stale()`` became true),
    :class:`InvalidManifest` (the cluster refused an object, named with its
    file), ``ConfigError`` or ``PluginError``."""
    started = time.perf_counter()
    record = _CancellableRecord(stale)
    gates = FeatureGates(features.emulated_version, features.overrides) if features is not None else None
    sim = Simulation(config=scenario.config_dict(), registry=registry, seed=seed, start=start, decisions=record,
                     features=gates)
    log = PlacementLog(sim.harness.informers, sim.clock)
    create_sourced(sim.cluster, scenario.objects)
    for change in scenario.changes:
        sim.change_at(change.offset, [change.path], delete=change.delete)
    sim.run()
    log.stop()  # what-ifs on the end state (kubesched.ui.whatif_now) are not the run's history
    marks = [(change.offset, f"{'--delete-at' if change.delete else '--at'} {change.offset:g}s={change.path.name}")
             for change in scenario.changes]
    marks += [(event.first_timestamp - start, f"preempted {event.involved_object.name}")
              for event in sim.events("Preempted")]
    return Outcome(key, sim, record.records, log, marks, time.perf_counter() - started)


class Runs:
    """The scenarios and their outcomes, simulated on a worker thread (see the module docstring).

    ``paths``, ``config``, ``changes``: what ``kubesched ui`` was given (read
    again by :meth:`reload_files` when a file changes); ``compare``: more
    configuration files the Config diff page may open; ``registry``,
    ``seed``, ``start``, ``features`` (the feature gates): every run's.  Raises what :func:`read_scenario`
    raises for bad input.  Call :meth:`start` to begin and :meth:`close` to
    stop.
    """

    def __init__(self, paths: Iterable[Path], config: Path | None = None, changes: Iterable[TimedChange] = (),
                 registry: Registry | None = None, seed: int = 0, start: float = DEFAULT_START,
                 features: FeatureGates | None = None, compare: Iterable[Path] = ()):
        self.paths, self.config, self.changes = list(paths), config, list(changes)
        self.features = features
        self.compare = list(compare)
        self.registry = registry or Registry.discover()
        self.seed, self.start_time = seed, start
        self._files = watched_files(self.paths, config, self.changes)
        self.history = History(read_scenario(self.paths, config, self.changes, self.registry))
        self.outcomes: dict[tuple, Outcome] = {}
        self.failed: dict[tuple, str] = {}
        #: grows with every change of state (an edit, a finished or failed run); the pages show it
        self.version = 0
        self.running: tuple | None = None
        self._latest: Outcome | None = None
        self.file_error = ""
        self._lock = threading.Condition()
        self._listeners: list[Callable[[], None]] = []
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="kubesched-ui-runs", daemon=True)

    # --- the worker ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the background thread that simulates the scenarios the pages need (:meth:`wanted`)."""
        self._thread.start()

    def close(self) -> None:
        """Stop the worker (a run under way stops at its next attempt)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def wanted(self) -> list[tuple]:
        """The scenario keys the pages need: the current one, then the baseline."""
        current, baseline = self.history.key(), self.history.baseline_key()
        return [current] if current == baseline else [current, baseline]

    def _next(self) -> tuple[tuple, Scenario] | None:
        for key in self.wanted():
            scenario = self.history.scenario_for(key)
            if key not in self.outcomes and key not in self.failed and scenario is not None:
                return key, scenario
        return None

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._closed and self._next() is None:
                    self._lock.wait()
                if self._closed:
                    return
                job = self._next()
                assert job is not None
                key, scenario = job
                self.running = key
            self._changed()
            def stale(key: tuple = key) -> bool:
                return self._closed or key not in self.wanted()

            try:
                outcome = simulate(scenario, key, self.registry, self.seed, self.start_time, stale=stale,
                                   features=self.features)
            except RunCancelled:
                with self._lock:
                    self.running = None
                continue
            except (InvalidManifest, ConfigError, PluginError) as err:
                with self._lock:
                    self.failed[key] = str(err)
                    self.running = None
                    _forget_unwanted(self.failed, set(self.wanted()), KEPT_OUTCOMES)
                self._changed()
                continue
            with self._lock:
                self.outcomes[key] = outcome
                if key == self.history.key():
                    self._latest = outcome
                self.running = None
                _forget_unwanted(self.outcomes, set(self.wanted()), KEPT_OUTCOMES)
            self._changed()

    # --- listeners ----------------------------------------------------------------------

    def listen(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from another thread) after every change of state."""
        with self._lock:
            self._listeners.append(callback)

    def unlisten(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback``; no error when it was not listening."""
        with self._lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def notify(self) -> None:
        """Call every listener now (a server that stops ends its event streams so)."""
        with self._lock:
            listeners = list(self._listeners)
        for callback in listeners:
            callback()

    def _changed(self) -> None:
        with self._lock:
            self.version += 1
            listeners = list(self._listeners)
            self._lock.notify_all()
        for callback in listeners:
            callback()

    # --- what the pages read ------------------------------------------------------------

    def configurations(self) -> list[str]:
        """The configuration files the Config diff page may open: ``--config`` and ``--compare``'s, as given."""
        return [str(path) for path in ([self.config] if self.config is not None else []) + self.compare]

    def current(self) -> Outcome | None:
        """The outcome of the scenario with the edits up to the cursor (None while it runs)."""
        with self._lock:
            return self.outcomes.get(self.history.key())

    def latest(self) -> Outcome | None:
        """The current outcome, or while it runs the one finished last (the
        pages show it, marked as being re-simulated)."""
        with self._lock:
            return self.outcomes.get(self.history.key()) or self._latest

    def baseline(self) -> Outcome | None:
        """The outcome of the files with no edit."""
        with self._lock:
            return self.outcomes.get(self.history.baseline_key())

    def error(self) -> str:
        """Why the current scenario cannot be simulated ("" when it can)."""
        with self._lock:
            return self.file_error or self.failed.get(self.history.key(), "")

    def status(self) -> dict[str, Any]:
        """The state in brief (JSON-ready, the server-sent events' data)."""
        with self._lock:
            current = self.outcomes.get(self.history.key())
            edits = self.history.folded_count + self.history.cursor
            text = (f"re-simulating ({edits} edit(s))" if self.running is not None
                    else f"error: {self.error()}" if self.error()
                    else f"{current.bound} scheduled, {len(current.pending)} pending, {len(current.node_names)} "
                         f"nodes; simulated in {current.wall_seconds:.2f}s" if current is not None else "waiting")
            return {"version": self.version, "running": self.running is not None, "ready": current is not None,
                    "edits": self.history.cursor, "undo": self.history.cursor > 0,
                    "redo": self.history.cursor < len(self.history.edits), "error": self.error(), "text": text}

    def wait(self, version: int = 0, timeout: float | None = None) -> bool:
        """Block until the current outcome (or its error) is there and the
        state is newer than ``version``; False after ``timeout`` seconds."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self.version > version and self.running is None and self._next() is None, timeout)

    # --- changes ------------------------------------------------------------------------

    def edit(self, edit: Edit) -> None:
        """Make ``edit`` (raises :class:`InvalidManifest` when it does not apply) and re-simulate."""
        with self._lock:
            self.history.add(edit)
        self._changed()

    def undo(self) -> bool:
        """Undo the last edit and re-simulate; False when there is nothing to undo."""
        with self._lock:
            done = self.history.undo()
        if done:
            self._changed()
        return done

    def redo(self) -> bool:
        """Redo the last undone edit and re-simulate; False when there is nothing to redo."""
        with self._lock:
            done = self.history.redo()
        if done:
            self._changed()
        return done

    def reload_files(self) -> bool:
        """Read the files again if one changed since they were last read
        (True then).  A bad file leaves the last good scenario in place and
        its one-line error in :meth:`error`."""
        files = watched_files(self.paths, self.config, self.changes)
        if files == self._files:
            return False
        self._files = files
        try:
            base = read_scenario(self.paths, self.config, self.changes, self.registry)
        except (InvalidManifest, ConfigError, PluginError) as err:
            with self._lock:
                self.file_error = str(err)
            self._changed()
            return True
        with self._lock:
            self.file_error = ""
            self.history.replace_base(base)
        self._changed()
        return True
