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

Cost: a transaction records the API server's writes in an undo log and
saves what is pending (queue, timers, counters); rolling back undoes the
writes and hands the informers the changes back, so both are proportional to
what changed, not to the cluster (:mod:`kubesched.sim.transaction`).
:meth:`~Simulator.can_schedule` of one plain pod is one scheduling cycle on
the state as it is (nothing written), of a new PodGroup with its pods that
fits one PodGroup cycle likewise; of anything else, a transaction rolled
back.
:meth:`~Simulator.fork` is a full copy, O(cluster): a new simulation over the
same objects.  ``benchmarks/sim_whatif.py`` measures them.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import attrs
import orjson

from kubesched.core.api import resource_of
from kubesched.core.api.core_v1 import Node, ObjectMeta, Pod
from kubesched.core.api.manifests import InvalidManifest, parse_document
from kubesched.core.api.meta import evolve
from kubesched.core.api.scheduling_v1beta1 import PodGroup
from kubesched.core.cluster.client import ApiError, NotFound
from kubesched.core.cluster.snapshot import take_snapshot
from kubesched.core.features import FeatureGates, parse_feature_gates
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.core.undo import saved_fields
from kubesched.drivers.batch_gc import batch_collection
from kubesched.drivers.harness import ConfigSource
from kubesched.drivers.simulation import (
    DEFAULT_START,
    Simulation,
    check_namespace,
    create_sourced,
    known_namespaces,
    load_paths,
)
from kubesched.sim.transaction import GATE_FIELDS, Savepoint, Transaction

__all__ = ["Simulator", "Verdict"]


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
        """The simulation underneath (its cluster, scheduler, clock); a rollback puts its state back in place."""
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
        member pods (typed objects or manifest dicts).  This simulator's
        objects, queue and allocated devices are left as they were.

        Which path answers (the verdicts are the same; the first two cost one
        cycle, not the creation, binding and rollback of every object):

        - one pod that the scheduler alone decides (no ResourceClaims, volumes
          from claims, PodGroup, scheduling gates or ``nodeName``), without
          preemption: one scheduling cycle on the state as it is, nothing
          assumed or written (:meth:`Scheduler.dry_run`): the node a pod
          created now would get;
        - a PodGroup followed by its member pods, without preemption: a plain
          PodGroup (no CompositePodGroup parent) that is new (neither it nor a
          pod naming it in the cluster), at least ``minCount`` members, each
          one the scheduler alone decides as above, one profile with no Permit
          plugin: one PodGroup cycle on the state as it is, as the queue hands
          the group over once every member arrived (placements, each member
          assumed within its placement, PlacementScore), then everything undone
          (:meth:`Scheduler.dry_run_group`), when that cycle places every
          member: the chosen placement's nodes.  When it does not (the group
          does not fit, or a member is left without a node), the question goes
          on to the transaction below, for kube-scheduler's words; so that a
          group that does not fit pays little for the dry run first, it gives
          up once as many placements failed as feasible ones are looked for
          (KEP-5732's share of placements, e.g. 25 of 250 racks at 5,000 nodes);
        - anything else (and ``preempt=True``): created and scheduled to
          quiescence in a transaction that is rolled back.

        ``preempt``: whether lower-priority pods may be preempted (False: the
        pods are asked about with ``preemptionPolicy: Never``, so that
        PostFilter preempts nothing, as upstream's DefaultPreemption does for
        such pods).  Raises ``InvalidManifest`` when the API server refuses an object."""
        typed = self._asked(objects, preempt)
        # a dry run makes tens of thousands of short-lived objects that reference counting frees: at the default
        # thresholds the collector would walk them every 700 allocations, and now and then the whole cluster,
        # for nothing (the thresholds of a run, drivers/batch_gc.py)
        with batch_collection():
            if not preempt and len(typed) == 1 and self._one_cycle_decides(typed[0]):
                return self._dry_run(typed[0])
            if not preempt and (verdict := self._dry_run_group(typed)) is not None:
                return verdict
        with self.transaction():
            return self._submit(typed, preempt)

    def schedule(self, objects: Pod | PodGroup | dict | Iterable[Any]) -> Verdict:
        """Create ``objects`` (as :meth:`can_schedule`) in this simulator and
        schedule to quiescence, preempting as kube-scheduler would (their
        PriorityClass's policy); the verdict says where they went.  Raises
        ``InvalidManifest`` when the API server refuses an object."""
        return self._submit(self._asked(objects, preempt=True), preempt=True)

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
        on exit unless ``tx.commit()`` was called, and on an exception in any case.
        Nestable: an inner commit keeps its changes in the outer transaction,
        which may still roll them back.  Cost: proportional to what changed and
        to what is pending, not to the cluster (:mod:`kubesched.sim.transaction`)."""
        return Transaction(self)

    def fork(self) -> "Simulator":
        """An independent copy: changes to either do not reach the other.  A full copy, O(cluster): a new
        simulation (its own API server, informers, scheduler, controllers and clock) holding the same API
        objects as stored (frozen, so shared), at the same simulated time, with the same configuration, feature
        gates and tie-break random state, run to quiescence.  Pods still pending are queued afresh there
        (attempts and backoff start over, as after a scheduler restart); a hand-built :class:`Simulation`'s
        controller options and node ranks are not carried over."""
        source = self._sim
        copy = Simulation(config=source.config, registry=source.registry, start=source.clock.now(),
                          features=source.features.copy(), decisions=DecisionLog(keep=_Asked()))
        copy.start_time = source.start_time
        copy.cluster.load_from(source.cluster)
        copy.scheduler.pods.rng.setstate(source.scheduler.pods.rng.getstate())
        return Simulator(copy)

    @classmethod
    @contextlib.contextmanager
    def borrowing(cls, simulation: Simulation) -> Iterator["Simulator"]:
        """``with Simulator.borrowing(simulation) as sim:`` - a simulator over ``simulation`` itself, not a copy,
        for the block: ask and change anything; on exit (an exception included) everything is rolled back, as
        a transaction is (cost proportional to what changed, not to the cluster), and ``simulation``'s own
        decision log is put back.  Meanwhile the attempts are recorded as a simulator records them (those of the
        pods asked about), not in that log.  Where :meth:`fork` copies the whole cluster for one question, this
        answers it on the state as it is, as scheduler-library's transactions on its one snapshot do.  The
        caller keeps every other reader and writer of ``simulation`` away during the block (not thread-safe);
        ``simulation`` is run to quiescence first, inside the rollback."""
        scheduler = simulation.scheduler
        own_log, scheduler.decisions = scheduler.decisions, DecisionLog(keep=_Asked())
        try:
            savepoint = Savepoint(simulation)
            try:
                yield cls(simulation)
            finally:
                try:
                    savepoint.rollback()
                finally:
                    savepoint.release()
        finally:
            scheduler.decisions = own_log

    # --- internals ---------------------------------------------------------------------

    def _asked(self, objects: Any, preempt: bool) -> list[Any]:
        """The typed objects asked about, with their names checked; without ``preempt`` the pods and groups carry
        the priority the API server would give, without their class, and ``preemptionPolicy: Never``."""
        typed = _typed_all(_listed(objects))
        unnamed = next((obj for obj in typed if isinstance(obj, (Pod, PodGroup)) and not obj.metadata.name), None)
        if unnamed is not None:
            raise ValueError(f"{resource_of(unnamed).kind} with generateName {unnamed.metadata.generate_name!r}: "
                             "metadata.name: required to answer where it goes")
        if not preempt:  # the priority the API server would give, kept without its class: the policy may differ
            specs: dict[tuple[type, int], Any] = {}
            typed = [self._never_preempting(obj, specs) if isinstance(obj, (Pod, PodGroup)) else obj for obj in typed]
        keys = [f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}" for obj in typed if isinstance(obj, Pod)]
        recorded = self._recorded()
        if recorded is not None:
            recorded.keys.update(keys)
        return typed

    def _never_preempting(self, obj: Pod | PodGroup, specs: dict[tuple[type, int], Any]) -> Pod | PodGroup:
        """``obj`` with the priority the API server would give it, without its class, never preempting.  The
        spec is a function of ``obj``'s spec alone: ``specs`` keeps it by the spec's identity, so that the pods
        of one manifest (which share their decoded spec) share it again, made once."""
        key = (type(obj), id(obj.spec))
        spec = specs.get(key)
        if spec is None:
            admitted = self._sim.cluster.with_admitted_priority(obj)
            spec = specs[key] = evolve(admitted.spec, priority_class_name="", preemption_policy="Never")
        return evolve(obj, spec=spec)

    def _one_cycle_decides(self, obj: Any, group: PodGroup | None = None) -> bool:
        """Whether one scheduling cycle decides where pod ``obj`` goes: nothing a controller or a later binding
        step makes for it (claims, volumes from claims), no gate, no ``nodeName``, a profile of ours, and no
        group (with ``group``: that PodGroup's cycle, so the pod names it)."""
        if not isinstance(obj, Pod):
            return False
        spec = obj.spec
        named = spec.scheduling_group.pod_group_name if spec.scheduling_group is not None else None
        in_group = named is None if group is None else (
            named == group.metadata.name
            and (obj.metadata.namespace or "default") == (group.metadata.namespace or "default"))
        return (in_group and not spec.resource_claims and not spec.scheduling_gates and not spec.node_name
                and spec.scheduler_name in self._sim.scheduler.profiles
                and not any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in spec.volumes))

    def _dry_run(self, pod: Pod) -> Verdict:
        """The verdict of one scheduling cycle for ``pod`` on the state as it is (see :meth:`can_schedule`)."""
        cluster = self._sim.cluster
        key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
        check_namespace("<python>", pod, known_namespaces(cluster))
        try:
            stored = cluster.dry_run_create(pod)
        except ApiError as err:
            raise InvalidManifest("<python>", f"Pod/{pod.metadata.name}", "", err.message) from None
        node, message, record = self._sim.scheduler.dry_run(stored)
        if node:
            return Verdict(True, {key: node})
        return Verdict(False, {key: ""}, {key: _rejections(record or {})}, {key: message})

    def _dry_run_group(self, typed: list[Any]) -> Verdict | None:
        """The verdict of the PodGroup cycle for a new PodGroup followed by its member pods (``typed``) on the
        state as it is, when the group fits with every member placed (see :meth:`can_schedule`); None when
        that cycle does not decide it alone or the group does not fit: the transaction's answer then."""
        group, pods = typed[0], typed[1:]
        if not (isinstance(group, PodGroup) and pods and len(pods) >= group.min_count
                and all(self._one_cycle_decides(pod, group) for pod in pods)):
            return None
        cluster = self._sim.cluster
        # the gates admitting them switches on (GenericWorkload, ...) stay on for the cycle, as in the transaction
        gates = saved_fields(self._sim.features, GATE_FIELDS)
        try:
            with contextlib.suppress(ApiError, InvalidManifest):  # refused: the transaction raises in its words
                namespaces = known_namespaces(cluster)
                for obj in typed:
                    check_namespace("<python>", obj, namespaces)
                stored = cluster.dry_run_create_all(typed)
                nodes = self._sim.scheduler.dry_run_group(stored[0], stored[1:])
                return Verdict(True, nodes) if nodes is not None else None
            return None
        finally:
            gates()

    def _submit(self, typed: list[Any], preempt: bool) -> Verdict:
        keys = [f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}" for obj in typed if isinstance(obj, Pod)]
        create_sourced(self._sim.cluster, [("<python>", obj) for obj in typed])
        self._sim.run()
        groups = {f"podgroup/{obj.metadata.namespace or 'default'}/{obj.metadata.name}" for obj in typed
                  if isinstance(obj, PodGroup)}
        ours = {key: self._node_of(key) for key in keys}
        reasons: dict[str, dict[str, str]] = {}
        messages: dict[str, str] = {}
        for key, node in ours.items():
            if not node:
                record = self._last_attempt(key)
                messages[key] = _scheduled_condition_message(self._sim.pod(key)) or record.get("message", "")
                reasons[key] = _rejections(record)
        victims = self._victims(keys, groups) if preempt else ()
        return Verdict(all(ours.values()), ours, reasons, messages, victims)

    def _node_of(self, key: str) -> str:
        """The node of pod ``namespace/name`` ("" while Pending or when it is gone)."""
        namespace, _, name = key.partition("/")
        try:
            return self._sim.cluster.get("Pod", name, namespace).spec.node_name
        except NotFound:
            return ""

    def _victims(self, pods: list[str], groups: set[str]) -> tuple[str, ...]:
        """The pods preempted for ``pods`` or PodGroups ``groups`` (``podgroup/NS/NAME``), in time order, from the
        ``Preempted`` Events (which name the preemptor by uid)."""
        cluster = self._sim.cluster
        uids = set()
        for kind, keys in (("Pod", pods), ("PodGroup", [g.removeprefix("podgroup/") for g in groups])):
            for key in keys:
                namespace, _, name = key.partition("/")
                with contextlib.suppress(NotFound):
                    uids.add(cluster.get(kind, name, namespace).metadata.uid)
        preempted = sorted((e for e in cluster.list("Event").items if e.reason == "Preempted"),
                           key=lambda e: (e.last_timestamp or 0, e.metadata.name))
        return tuple(f"{e.involved_object.namespace}/{e.involved_object.name}" for e in preempted
                     if any(uid in e.message for uid in uids if uid))

    def _recorded(self) -> "_Asked | None":
        decisions = self._sim.scheduler.decisions
        keep = decisions.keep if decisions is not None else None
        return keep if isinstance(keep, _Asked) else None

    def _last_attempt(self, key: str) -> dict[str, Any]:
        decisions = self._sim.scheduler.decisions
        records = decisions.records if decisions is not None else []
        return next((r for r in reversed(records) if r.get("pod") == key and r.get("phase") == "scheduling"), {})


class _Asked:
    """The decision log's filter: only the attempts of the pods asked about are recorded (the record of every
    attempt would grow with the run and be copied by every transaction)."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __call__(self, pod_key: str) -> bool:
        return pod_key in self.keys


def _rejections(record: Mapping[str, Any]) -> dict[str, str]:
    """Node name -> why Filter rejected it, from an attempt's decision record."""
    return {name: group.get("reason", "") for group in record.get("filter", {}).get("rejected", [])
            for name in group.get("nodes", [])}


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


def _typed_all(objects: list[Any]) -> list[Any]:
    """:func:`_typed` of each of ``objects``; a manifest whose compact JSON (orjson: ``1``, ``1.0``, ``true`` and
    ``"1"`` apart) equals the one before it but for ``metadata.name`` - a gang's pods - is that one's object
    under its own name, not decoded again (what decoding it would give)."""
    typed: list[Any] = []
    before = b""
    for obj in objects:
        key = _unnamed_json(obj)
        if key and key == before:
            previous = typed[-1]
            typed.append(evolve(previous, metadata=evolve(previous.metadata, name=obj["metadata"]["name"])))
        else:
            typed.append(_typed(obj))
        before = key
    return typed


def _unnamed_json(obj: Any) -> bytes:
    """The compact JSON of manifest ``obj`` with an empty ``metadata.name``; b"" when ``obj`` is not a manifest
    with a name or when JSON cannot tell its values apart exactly (a null, a value JSON cannot hold)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or type(meta.get("name")) is not str or not meta["name"]:
        return b""
    try:
        key = orjson.dumps({**obj, "metadata": {**meta, "name": ""}})
    except TypeError:  # orjson.JSONEncodeError too
        return b""
    return b"" if b"null" in key else key


def _typed(obj: Any) -> Any:
    """A typed object from a manifest dict (strictly decoded, as kubectl does), or ``obj`` itself."""
    return parse_document(obj, "<python>") if isinstance(obj, dict) else obj
