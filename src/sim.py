"""Ask what-if from Python: a simulated cluster you can query and change, with kube-scheduler's decisions.

:class:`Simulator` holds one :class:`~kubesched.drivers.simulation.Simulation`
run to quiescence (the decisions ``kubesched simulate`` makes on the same
input) and answers questions about it::

    from kubesched.sim import Simulator

    sim = Simulator.from_manifests(["examples/cluster"])
    verdict = sim.can_schedule(pod)              # would it fit?  the state is unchanged
    verdict.node, verdict.reasons                # where, or why not (kube-scheduler's words)
    with sim.transaction():                      # rolled back on exit unless tx.commit()
        sim.drain("worker-a1")
        sim.placements()                         # where its pods went
    other = sim.fork()                           # an independent copy

Every change (:meth:`Simulator.schedule`, :meth:`~Simulator.delete`,
:meth:`~Simulator.drain`, :meth:`~Simulator.cordon`,
:meth:`~Simulator.add_nodes`) is written to the embedded API server and the
scheduler and controllers run until nothing more can happen, jumping the
simulated clock over every wait, as ``kubesched simulate`` does.

Cost, stated honestly: a transaction, a fork and every :meth:`~Simulator.can_schedule`
take a deep copy of the whole simulation (the API server's store and watch
log, the informers, the scheduler's cache, queue and allocated devices, the
controllers, the clock) - the API objects themselves, frozen and never
changed in place, are shared rather than copied - and rollback swaps that
copy back in.  Entering a transaction is proportional to the size of the
cluster, not to what changed (issue 39's target, not met); leaving it is
constant.  ``benchmarks/sim_whatif.py`` measures it.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import pkgutil
import tempfile
import threading
import types
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import attrs

import kubesched.core.api
from kubesched.core.api import resource_of
from kubesched.core.api.core_v1 import Node, ObjectMeta, Pod
from kubesched.core.api.manifests import parse_document
from kubesched.core.api.scheduling_v1beta1 import PodGroup
from kubesched.core.cluster.snapshot import take_snapshot
from kubesched.core.features import FeatureGates, parse_feature_gates
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.drivers.harness import ConfigSource
from kubesched.drivers.simulation import DEFAULT_START, Simulation, create_sourced, load_paths

__all__ = ["Simulator", "Transaction", "Verdict"]


@attrs.frozen
class Verdict:
    """The answer of :meth:`Simulator.can_schedule` or :meth:`Simulator.schedule`.

    ``fits``: every pod asked about was bound; ``placements``: pod
    ``namespace/name`` -> node name ("" while Pending); ``reasons``: for each
    pod left Pending, node name -> why that node was rejected, in
    kube-scheduler's words (``Insufficient cpu``, ``node(s) were
    unschedulable``); ``messages``: for each pod left Pending, the
    FailedScheduling message (``0/6 nodes are available: ...``);
    ``victims``: pods ``namespace/name`` preempted to make room (only when
    preemption was allowed).
    """

    fits: bool
    placements: Mapping[str, str]
    reasons: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    messages: Mapping[str, str] = attrs.field(factory=dict)
    victims: tuple[str, ...] = ()

    @property
    def node(self) -> str:
        """The node of the only pod asked about ("" when Pending).  Raises ValueError for several pods."""
        if len(self.placements) != 1:
            raise ValueError(f"Verdict.node: {len(self.placements)} pods; read Verdict.placements")
        return next(iter(self.placements.values()))


class Simulator:
    """A simulated cluster to query and change; see the module's documentation.

    Built from a :class:`Simulation` (not yet run or run: it is run to
    quiescence here).  Prefer :meth:`from_manifests` / :meth:`from_snapshot`.
    Not thread-safe: use one simulator from one thread (fork for another).
    """

    def __init__(self, simulation: Simulation):
        self._sim = simulation
        self._sim.run()

    # --- building ----------------------------------------------------------------------

    @classmethod
    def from_manifests(cls, sources: Iterable[str | Path | Any], *, config: ConfigSource = None,
                       feature_gates: Mapping[str, bool] | str | None = None, emulated_version: str | None = None,
                       seed: int = 0, start: float = DEFAULT_START) -> "Simulator":
        """A simulator holding every object of ``sources``: manifest files or
        directories (as ``kubesched simulate -f``), manifest dicts or typed
        objects (or ``(source, object)`` pairs, whose source errors name), created in ``kubesched simulate``'s order (Namespaces first,
        pods and pod groups last) and scheduled to quiescence.

        ``config``: a KubeSchedulerConfiguration path, dict or loaded object
        (None: the default profile); ``feature_gates``: ``{"Name": bool}`` or
        ``"Name=true,Other=false"`` text (``--feature-gates``);
        ``emulated_version``: ``"1.MINOR"`` (``--emulated-version``);
        ``seed``: tie-breaking; ``start``: simulated start, seconds since the
        epoch.  Raises ``InvalidManifest`` naming the file and object,
        ``ConfigError``, ``FeatureGateError`` for unknown gates or versions."""
        overrides = parse_feature_gates(feature_gates) if isinstance(feature_gates, str) else feature_gates
        features = FeatureGates(emulated_version, overrides)
        simulation = Simulation(config=config, seed=seed, start=start, features=features,
                                decisions=DecisionLog(keep=_Asked()))
        paths = [s for s in sources if isinstance(s, (str, Path))]
        objects = [s for s in sources if not isinstance(s, (str, Path))]
        if paths:
            load_paths(simulation.cluster, paths)
        create_sourced(simulation.cluster, [_sourced(obj) for obj in objects])
        return cls(simulation)

    @classmethod
    def from_snapshot(cls, directory: str | Path, **options: Any) -> "Simulator":
        """A simulator of what ``kubesched snapshot`` wrote to ``directory``
        (bound pods stay on their nodes, Pending pods are scheduled);
        ``options`` as :meth:`from_manifests`.  Raises ``InvalidManifest``."""
        return cls.from_manifests([Path(directory)], **options)

    @classmethod
    def from_cluster(cls, kubeconfig: str | Path | None = None, context: str | None = None,
                     **options: Any) -> "Simulator":
        """A simulator of a live cluster, read once and never written: what
        ``kubesched snapshot`` would write (same kinds, no Secrets or
        ConfigMaps, containers without env/command/args), loaded as
        :meth:`from_snapshot` does.  ``kubeconfig``: its path (None:
        $KUBECONFIG or ~/.kube/config); ``context``: the kubeconfig context;
        ``options`` as :meth:`from_manifests`.  Raises ``ImportError`` without
        the Kubernetes client (``pip install 'kubesched[kube]'``), the client's
        ``ConfigException`` for a bad kubeconfig, ``ApiError`` when the API
        server refuses a list."""
        try:
            from kubesched.core.cluster.kube import KubernetesCluster
        except ImportError as err:
            raise ImportError("Simulator.from_cluster needs the Kubernetes client: "
                              "pip install 'kubesched[kube]'") from err
        live = KubernetesCluster.from_kubeconfig(str(kubeconfig) if kubeconfig else None, context)
        with tempfile.TemporaryDirectory(prefix="kubesched-sim-") as directory:
            take_snapshot(live, Path(directory))
            return cls.from_snapshot(directory, **options)

    # --- reading -----------------------------------------------------------------------

    @property
    def simulation(self) -> Simulation:
        """The simulation underneath (its cluster, scheduler, clock); changed by rollback: do not keep it."""
        return self._sim

    def placements(self) -> dict[str, str]:
        """``namespace/name`` -> node name ("" while Pending) for every pod."""
        return self._sim.placements()

    def pods(self) -> list[Pod]:
        """Every pod, sorted by ``namespace/name``."""
        return self._sim.pods()

    def nodes(self) -> list[Node]:
        """Every node, sorted by name."""
        return sorted(self._sim.cluster.list("Node").items, key=lambda n: n.metadata.name)

    # --- questions ---------------------------------------------------------------------

    def can_schedule(self, objects: Pod | PodGroup | dict | Iterable[Any], preempt: bool = False) -> Verdict:
        """Would ``objects`` fit: a pod, a list of pods, or a PodGroup with its
        member pods (typed objects or manifest dicts).  They are created in a
        copy of the state and scheduled to quiescence there; this simulator's
        objects, queue and allocated devices are left as they were.

        ``preempt``: whether lower-priority pods may be preempted (False: the
        pods are asked about with ``preemptionPolicy: Never``, so that
        PostFilter preempts nothing, as upstream's DefaultPreemption does for
        such pods).  Raises ``InvalidManifest`` when the API server refuses an object."""
        probe = self.fork()
        return probe._submit(objects, preempt)

    def schedule(self, objects: Pod | PodGroup | dict | Iterable[Any]) -> Verdict:
        """Create ``objects`` (as :meth:`can_schedule`) in this simulator and
        schedule to quiescence, preempting as kube-scheduler would (their
        PriorityClass's policy); the verdict says where they went.  Raises
        ``InvalidManifest`` when the API server refuses an object."""
        return self._submit(objects, preempt=True)

    # --- changes -----------------------------------------------------------------------

    def delete(self, kind: str, key: str) -> None:
        """Delete the object ``namespace/name`` (or ``name`` for a
        cluster-scoped kind) of ``kind`` and run to quiescence (a pod's
        controller may recreate it).  Raises ``NotFound``."""
        namespace, _, name = key.rpartition("/")
        self._sim.cluster.delete(kind, name, namespace)
        self._sim.run()

    def cordon(self, node: str, unschedulable: bool = True) -> None:
        """Mark ``node`` unschedulable (``kubectl cordon``; ``unschedulable=False``:
        uncordon) and run to quiescence.  Raises ``NotFound``."""
        stored = self._sim.cluster.get("Node", node)
        self._sim.cluster.update(attrs.evolve(stored, spec=attrs.evolve(stored.spec, unschedulable=unschedulable)))
        self._sim.run()

    def drain(self, node: str) -> list[str]:
        """``kubectl drain --force --ignore-daemonsets``: cordon ``node``, then
        delete every pod on it not owned by a DaemonSet, and run to quiescence
        (pods of a ReplicaSet, Job or StatefulSet come back through their
        controllers and are scheduled elsewhere; bare pods are gone).  The pods
        are deleted, not evicted: PodDisruptionBudgets are not consulted.
        Returns the deleted pods' ``namespace/name``.  Raises ``NotFound``."""
        self.cordon(node)
        gone = []
        for pod in self._sim.pods():
            if pod.spec.node_name != node or any(ref.kind == "DaemonSet" for ref in pod.metadata.owner_references):
                continue
            self._sim.cluster.delete("Pod", pod.metadata.name, pod.metadata.namespace)
            gone.append(pod.key)
        self._sim.run()
        return gone

    def add_nodes(self, template: Node | dict, n: int) -> list[str]:
        """Add ``n`` copies of the Node ``template`` named ``<name>-1`` ...
        ``<name>-n`` (labels, taints, capacity copied; a ``kubernetes.io/hostname``
        label set to each name) and run to quiescence.  Devices need their
        ResourceSlices: create those with :meth:`create`.  Returns the new names.  Raises ``AlreadyExists``."""
        node = _typed(template)
        if not isinstance(node, Node):
            raise TypeError(f"add_nodes: template is a {resource_of(node).kind}, not a Node")
        names = []
        for i in range(1, n + 1):
            name = f"{node.metadata.name}-{i}"
            labels = {**node.metadata.labels, "kubernetes.io/hostname": name}
            meta = ObjectMeta(name=name, labels=labels, annotations=dict(node.metadata.annotations))
            self._sim.cluster.create(attrs.evolve(node, metadata=meta))
            names.append(name)
        self._sim.run()
        return names

    def create(self, objects: Any | Iterable[Any]) -> None:
        """Create any objects (typed or manifest dicts; pods last, Namespaces
        first) and run to quiescence.  Raises ``InvalidManifest``."""
        create_sourced(self._sim.cluster, [("<python>", _typed(obj)) for obj in _listed(objects)])
        self._sim.run()

    # --- transactions ------------------------------------------------------------------

    def transaction(self) -> "Transaction":
        """``with sim.transaction() as tx:`` - every change inside is rolled back
        on exit (also on an exception) unless ``tx.commit()`` was called.
        Nestable: an inner commit keeps its changes in the outer transaction,
        which may still roll them back.  Cost: a deep copy of the simulation on
        entry (API objects shared); rollback swaps it back in (see the module's documentation)."""
        return Transaction(self)

    def fork(self) -> "Simulator":
        """An independent copy: changes to either do not reach the other."""
        forked = object.__new__(Simulator)
        forked._sim = _deep_copy(self._sim)
        return forked

    # --- internals ---------------------------------------------------------------------

    def _submit(self, objects: Any, preempt: bool) -> Verdict:
        typed = [_typed(obj) for obj in _listed(objects)]
        unnamed = next((obj for obj in typed if isinstance(obj, (Pod, PodGroup)) and not obj.metadata.name), None)
        if unnamed is not None:
            raise ValueError(f"{resource_of(unnamed).kind} with generateName {unnamed.metadata.generate_name!r}: "
                             "metadata.name: required to answer where it goes")
        if not preempt:  # the priority the API server would give, kept without its class: the policy may differ
            typed = [attrs.evolve(admitted, spec=attrs.evolve(admitted.spec, priority_class_name="",
                                                              preemption_policy="Never"))
                     if isinstance(obj, (Pod, PodGroup)) and (admitted := self._sim.cluster.with_admitted_priority(obj))
                     else obj for obj in typed]
        keys = [f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}" for obj in typed if isinstance(obj, Pod)]
        asked = self._asked()
        if asked is not None:
            asked.keys.update(keys)
        create_sourced(self._sim.cluster, [("<python>", obj) for obj in typed])
        self._sim.run()
        groups = {f"podgroup/{obj.metadata.namespace or 'default'}/{obj.metadata.name}" for obj in typed
                  if isinstance(obj, PodGroup)}
        placements = self._sim.placements()
        ours = {key: placements.get(key, "") for key in keys}
        reasons: dict[str, dict[str, str]] = {}
        messages: dict[str, str] = {}
        for key, node in ours.items():
            if not node:
                record = self._last_attempt(key)
                messages[key] = _scheduled_condition_message(self._sim.pod(key)) or record.get("message", "")
                reasons[key] = {name: group.get("reason", "")
                                for group in record.get("filter", {}).get("rejected", [])
                                for name in group.get("nodes", [])}
        asking = set(keys) | groups
        victims = tuple(p.victim for p in self._sim.preemptions() if p.preemptor in asking)
        return Verdict(all(ours.values()), ours, reasons, messages, victims)

    def _asked(self) -> "_Asked | None":
        decisions = self._sim.scheduler.decisions
        keep = decisions.keep if decisions is not None else None
        return keep if isinstance(keep, _Asked) else None

    def _last_attempt(self, key: str) -> dict[str, Any]:
        decisions = self._sim.scheduler.decisions
        records = decisions.records if decisions is not None else []
        return next((r for r in reversed(records) if r.get("pod") == key and r.get("phase") == "scheduling"), {})


class Transaction:
    """What :meth:`Simulator.transaction` returns: a context manager; call :meth:`commit` to keep the changes."""

    def __init__(self, simulator: Simulator):
        self._simulator = simulator
        self._saved: Simulation | None = None
        self.committed = False

    def __enter__(self) -> "Transaction":
        self._saved = _deep_copy(self._simulator._sim)
        return self

    def commit(self) -> None:
        """Keep this transaction's changes when it ends."""
        self.committed = True

    def rollback(self) -> None:
        """Put the state back as it was when the transaction began (now; it may go on after)."""
        if self._saved is None:
            raise RuntimeError("rollback outside the transaction's with-block")
        self._simulator._sim = self._saved
        self._saved = _deep_copy(self._saved)

    def __exit__(self, *exc: object) -> None:
        if not self.committed and self._saved is not None:
            self._simulator._sim = self._saved
        self._saved = None


class _Asked:
    """The decision log's filter: only the attempts of the pods asked about are recorded (the record of every
    attempt would grow with the run and be copied by every transaction)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __call__(self, pod_key: str) -> bool:
        return pod_key in self.keys


def _scheduled_condition_message(pod: Pod) -> str:
    """The message of ``pod``'s PodScheduled condition ("" without one): kube-scheduler's FailedScheduling words."""
    return next((c.message for c in pod.status.conditions if c.type == "PodScheduled"), "")


def _listed(objects: Any) -> list[Any]:
    if isinstance(objects, (dict, Pod, PodGroup)) or attrs.has(type(objects)):
        return [objects]
    return list(objects)


def _sourced(item: Any) -> tuple[str, Any]:
    """``(source, typed object)`` of a ``(source, object)`` pair or of an object alone (source ``<python>``)."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return item[0], _typed(item[1])
    return "<python>", _typed(item)


def _typed(obj: Any) -> Any:
    """A typed object from a manifest dict (strictly decoded, as kubectl does), or ``obj`` itself."""
    return parse_document(obj, "<python>") if isinstance(obj, dict) else obj


def _deep_copy(simulation: Simulation) -> Simulation:
    """A deep copy of ``simulation`` sharing nothing mutable with it.  ``copy.deepcopy``
    shares functions (and so what their closures hold: informer handlers, clock callbacks)
    and refuses locks; while copying, closures are copied with their cells and locks
    are made afresh."""
    with _copying_closures_and_locks():
        return copy.deepcopy(simulation)


@contextlib.contextmanager
def _copying_closures_and_locks() -> Iterator[None]:
    dispatch: dict[type, Any] = copy._deepcopy_dispatch  # type: ignore[attr-defined]  # no public hook for these
    saved = {t: dispatch.get(t) for t in _COPIERS}
    dispatch.update(_COPIERS)
    try:
        yield
    finally:
        for t, copier in saved.items():
            if copier is None:
                dispatch.pop(t, None)
            else:
                dispatch[t] = copier


def _copy_function(fn: types.FunctionType, memo: dict[int, Any]) -> Any:
    if not fn.__closure__ and not fn.__defaults__ and not fn.__kwdefaults__:
        return fn
    cells = tuple(types.CellType() for _ in fn.__closure__ or ())
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, None, cells or None)
    memo[id(fn)] = out  # before the cells: a closure may reach its own function
    for cell, original in zip(cells, fn.__closure__ or ()):
        if _filled(original):
            cell.cell_contents = copy.deepcopy(original.cell_contents, memo)
    out.__defaults__ = copy.deepcopy(fn.__defaults__, memo)
    out.__kwdefaults__ = copy.deepcopy(fn.__kwdefaults__, memo)
    out.__qualname__ = fn.__qualname__
    out.__dict__.update(fn.__dict__)
    return out


def _copy_builtin_method(method: Any, memo: dict[int, Any]) -> Any:
    owner = method.__self__
    if owner is None or isinstance(owner, types.ModuleType):
        return method
    return getattr(copy.deepcopy(owner, memo), method.__name__)


def _filled(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def _api_types() -> dict[type, Any]:
    """Every frozen attrs class of :mod:`kubesched.core.api`: API objects are never changed in place (a change
    is a new object, ``attrs.evolve``), so two copies of a simulation share them instead of copying them."""
    found: dict[type, Any] = {}
    for info in pkgutil.walk_packages(kubesched.core.api.__path__, "kubesched.core.api."):
        for value in vars(importlib.import_module(info.name)).values():
            if (isinstance(value, type) and attrs.has(value) and value.__module__.startswith("kubesched.core.api")
                    and "frozen" in getattr(value.__setattr__, "__name__", "")):
                found[value] = _shared
    return found


def _shared(obj: Any, memo: dict[int, Any]) -> Any:
    return obj


_COPIERS: dict[type, Any] = {
    **_api_types(),
    types.FunctionType: _copy_function,
    types.BuiltinMethodType: _copy_builtin_method,
    type(threading.Lock()): lambda lock, memo: threading.Lock(),
    type(threading.RLock()): lambda lock, memo: threading.RLock(),
}
