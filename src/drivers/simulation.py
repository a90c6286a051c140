"""A simulated cluster: MemoryCluster + fake clock + the scheduler (and controllers), run to quiescence.

This is what ``kubesched simulate`` and the tests drive::

    sim = Simulation.from_paths(["examples/cluster"], config="configs/default.yaml")
    sim.run()
    sim.pod("default/web-1").spec.node_name

Objects are created in the order given (nodes and classes first is not
required: pods wait in the queue until something fits).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from kubesched.core.api import resource_of
from kubesched.core.api.convert import parse_time
from kubesched.core.api.core_v1 import SYSTEM_NAMESPACES, Namespace, Pod
from kubesched.core.api.manifests import InvalidManifest, load_sourced_objects
from kubesched.core.api.scheduling_v1beta1 import CompositePodGroup, PodGroup
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.client import ApiError, ClusterClient, NotFound
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import KubeSchedulerConfiguration
from kubesched.core.framework.registry import Registry
from kubesched.core.observability.decision_log import DecisionLog
from kubesched.drivers.batch_gc import batch_collection
from kubesched.drivers.harness import PROGRESS_STEPS, Harness

#: The simulated clock starts here unless told otherwise (2026-01-01T00:00:00Z).
DEFAULT_START = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc).timestamp()


class Simulation:
    """One simulated cluster.

    ``config``: a KubeSchedulerConfiguration path, dict or loaded object (None:
    the default profile); ``registry``: plugins (default: entry-point
    discovery); ``start``: simulated start time, seconds since the epoch;
    ``seed``: tie-breaking and generated names; ``controller_options``:
    per-controller settings by controller name (e.g.
    ``{"persistentvolume-binder-controller": {"provisioners": [...]}}``);
    ``decisions``: where the record of every scheduling attempt goes (None:
    not recorded); ``node_rank``: equally scored nodes go to the lowest rank
    (the :class:`~kubesched.core.scheduler.scheduler.Scheduler`'s option); ``features``: the feature gates of
    the embedded API server and the scheduler (default: every gate at its default in the newest release).
    Raises ``ConfigError`` for a bad configuration.
    """

    def __init__(
        self,
        config: str | Path | dict | KubeSchedulerConfiguration | None = None,
        registry: Registry | None = None,
        start: float = DEFAULT_START,
        seed: int = 0,
        controller_options: dict[str, Any] | None = None,
        decisions: DecisionLog | None = None,
        node_rank: dict[str, int] | None = None,
        features: FeatureGates | None = None,
    ):
        self.start_time = start
        self.clock = FakeClock(start)
        self.features = features if features is not None else FeatureGates()
        self.cluster = MemoryCluster(self.clock, seed=seed, features=self.features)
        self.harness = Harness(self.cluster, self.clock, config, registry, seed=seed, features=self.features,
                               controller_options=controller_options, decisions=decisions, node_rank=node_rank)
        self.config = self.harness.config
        self.registry = self.harness.registry
        self.scheduler = self.harness.scheduler
        self.controllers = self.harness.controllers
        #: objects applied or deleted by timed changes (:meth:`change_at`) so far
        self.changes = 0
        self._pending_changes = 0

    @classmethod
    def from_paths(cls, paths: Iterable[str | Path], progress: Progress | None = None,
                   **kwargs: Any) -> "Simulation":
        """A simulation holding every object in the manifest files/directories
        ``paths`` (see :func:`load_paths`; ``progress``: see :data:`Progress`)."""
        sim = cls(**kwargs)
        load_paths(sim.cluster, paths, progress)
        return sim

    def create(self, objects: Iterable[Any]) -> list[Any]:
        """Create objects in the cluster (in order); returns the stored copies."""
        return [self.cluster.create(obj) for obj in objects]

    def change_at(self, offset: float, paths: Iterable[str | Path], delete: bool = False) -> None:
        """At simulated time ``start_time + offset`` (seconds), apply every
        object in the manifest files/directories ``paths``: create it, or
        replace the stored object of that name (metadata, spec and status)
        keeping its uid (watchers see the change); with ``delete``, delete
        them instead (an object already gone is skipped).  Changes due at the
        same time run in the order they were scheduled; pods come last.

        Raises :class:`InvalidManifest` for a bad manifest now, and from
        :meth:`run` when the cluster refuses an object at that time."""
        sourced = load_sourced_objects(paths)
        sourced.sort(key=lambda item: isinstance(item[1], _NAMES_A_CLASS))
        self._pending_changes += 1
        self.clock.call_at(self.start_time + offset, lambda: self._change(sourced, delete))

    def _change(self, sourced: list[tuple[Any, Any]], delete: bool) -> None:
        self._pending_changes -= 1
        for file, obj in sourced:
            resource = resource_of(obj)
            try:
                if delete:
                    namespace = obj.metadata.namespace or ("default" if resource.namespaced else "")
                    self.cluster.delete(resource.kind, obj.metadata.name, namespace)
                else:
                    self.cluster.apply(obj)
            except ApiError as err:
                if delete and isinstance(err, NotFound):
                    continue
                raise InvalidManifest(file, f"{resource.kind}/{obj.metadata.name}", "", err.message) from None
            self.changes += 1

    def start(self) -> None:
        """List and watch the cluster (once)."""
        self.harness.start()

    def run(self, until: float | None = None, progress: Progress | None = None) -> None:
        """Run until nothing more can happen, or until simulated time ``until``
        (seconds since the epoch), jumping the clock over every wait, garbage collected in batches meanwhile
        (:func:`~kubesched.drivers.batch_gc.batch_collection`).  ``progress("scheduling", attempts, pods)`` is called every
        :data:`~kubesched.drivers.harness.PROGRESS_STEPS` steps (scheduling attempts so far, pods in the cluster)."""
        pods = self.harness.informers.store("Pod")
        report = None if progress is None else lambda: progress("scheduling", self.scheduler.stats.cycles, len(pods))
        with batch_collection():  # a run keeps nearly every object it makes (drivers/batch_gc.py)
            self.harness.run_to_quiescence(until, progress=self.progress,
                                           expecting=lambda: self._pending_changes > 0, report=report)

    def progress(self) -> int:
        """Grows with useful work: pods bound, successful controller syncs and timed changes."""
        return self.harness.progress() + self.changes

    def run_for(self, seconds: float) -> None:
        """Run ``seconds`` of simulated time from now."""
        self.run(until=self.clock.now() + seconds)

    # --- reading results -----------------------------------------------------------------

    def get(self, kind: str, key: str) -> Any:
        """The stored object ``namespace/name`` (or ``name``) of ``kind``."""
        namespace, _, name = key.rpartition("/")
        return self.cluster.get(kind, name, namespace)

    def pod(self, key: str):
        """The pod ``namespace/name`` (``name`` alone means namespace default)."""
        return self.get("Pod", key if "/" in key else f"default/{key}")

    def pods(self) -> list:
        """Every pod in the cluster, sorted by ``namespace/name``."""
        return sorted(self.cluster.list("Pod").items, key=lambda p: p.key)

    def events(self, reason: str | None = None) -> list:
        """The cluster's Events in time order (ties by name), only those with ``reason`` when given."""
        events = sorted(self.cluster.list("Event").items, key=lambda e: (e.last_timestamp or 0, e.metadata.name))
        return [e for e in events if reason is None or e.reason == reason]

    def preemptions(self) -> list["Preemption"]:
        """Every victim of a preemption, in time order, from the ``Preempted`` events: when (seconds after the
        start), the victim, its preemptor by name (``podgroup/NS/NAME`` for a PodGroup; "" when the preemptor
        is gone: the event names it by uid) and upstream's message."""
        names = {pod.metadata.uid: pod.key for pod in self.pods()}
        names.update({group.metadata.uid: f"podgroup/{group.key}" for group in self.cluster.list("PodGroup").items})
        out = []
        for event in self.events("Preempted"):
            victim = event.involved_object
            preemptor = next((key for uid, key in names.items() if uid and uid in event.message), "")
            out.append(Preemption(event.first_timestamp - self.start_time, f"{victim.namespace}/{victim.name}",
                                  preemptor, event.message))
        return out

    def placements(self) -> dict[str, str]:
        """``namespace/name`` -> node name ("" while pending) for every pod."""
        return {pod.key: pod.spec.node_name for pod in self.pods()}


class Preemption(NamedTuple):
    """One victim of a preemption (:meth:`Simulation.preemptions`): ``time`` in seconds after the start."""

    time: float
    victim: str
    preemptor: str
    message: str


#: Kinds loaded after the others: they name a PriorityClass (and claims, volumes) resolved when created.
_NAMES_A_CLASS = (Pod, PodGroup, CompositePodGroup)


#: ``progress(phase, done, total)``: how far a long run is ("reading" objects from the manifests, total 0:
#: unknown; "creating" them; "scheduling": attempts, of the pods in the cluster); the CLI draws it
Progress = Callable[[str, int, int], None]


def load_paths(cluster: ClusterClient, paths: Iterable[str | Path], progress: Progress | None = None) -> None:
    """Create every object in the manifest files/directories ``paths`` in
    ``cluster`` (see :func:`create_sourced`).  Raises :class:`InvalidManifest`
    for a bad manifest or an object the cluster refuses (naming the file and
    the object)."""
    read = None if progress is None else lambda done: progress("reading", done, 0)
    with batch_collection():  # every object read is kept
        create_sourced(cluster, load_sourced_objects(paths, read), progress)


def create_sourced(cluster: ClusterClient, sourced: Iterable[tuple[str, Any]],
                   progress: Progress | None = None) -> None:
    """Create already parsed (source file, object) pairs in ``cluster``:
    Namespaces first, pods and pod groups after every other object (they
    refer to priority classes, claims, volumes), otherwise in the order given
    (``progress("creating", done, total)`` every :data:`PROGRESS_STEPS`
    objects).  A namespaced object must name a namespace that exists, as
    kube-apiserver's NamespaceLifecycle admission requires: one of
    :data:`~kubesched.core.api.core_v1.SYSTEM_NAMESPACES`, a Namespace in the
    cluster or one among these objects (as ``kubectl apply -f`` of a folder
    needs its Namespace manifests; kubesched takes them first wherever they
    are).  Raises :class:`InvalidManifest` naming the file and the object the
    cluster refuses (``namespaces "shop" not found``)."""
    ordered = sorted(sourced, key=lambda item: (not isinstance(item[1], Namespace),
                                                isinstance(item[1], _NAMES_A_CLASS)))
    namespaces = known_namespaces(cluster)
    for done, (file, obj) in enumerate(ordered):
        if progress is not None and done % PROGRESS_STEPS == 0:
            progress("creating", done, len(ordered))
        resource = resource_of(obj)
        check_namespace(file, obj, namespaces)
        try:
            cluster.create(obj)
        except ApiError as err:
            raise InvalidManifest(file, f"{resource.kind}/{obj.metadata.name}", "", err.message) from None
        if isinstance(obj, Namespace):
            namespaces.add(obj.metadata.name)


def known_namespaces(cluster: ClusterClient) -> set[str]:
    """The namespaces an object may name in ``cluster``: :data:`~kubesched.core.api.core_v1.SYSTEM_NAMESPACES`
    and its Namespaces."""
    return set(SYSTEM_NAMESPACES) | {ns.metadata.name for ns in cluster.list("Namespace").items}


def check_namespace(file: str, obj: Any, namespaces: set[str]) -> None:
    """kube-apiserver's NamespaceLifecycle admission: a namespaced ``obj`` names one of ``namespaces``.  Raises
    :class:`InvalidManifest` naming ``file`` and the object (``namespaces "shop" not found``)."""
    namespace = obj.metadata.namespace or "default"
    if resource_of(obj).namespaced and namespace not in namespaces:
        raise InvalidManifest(file, f"{resource_of(obj).kind}/{obj.metadata.name}", "metadata.namespace",
                              f'namespaces "{namespace}" not found')


def parse_start_time(text: str) -> float:
    """``--start-time`` RFC 3339 text -> seconds since the epoch.  Raises ValueError for bad text."""
    stamp = parse_time(text)
    if stamp is None:
        raise ValueError(f"--start-time: not an RFC 3339 time: {text!r}")
    return stamp
