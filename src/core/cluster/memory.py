"""MemoryCluster: the embedded, in-process cluster with Kubernetes semantics.

It is what ``kubesched simulate``, the tests and the demo run against: a store
of typed objects keyed by kind and ``namespace/name``, a global resourceVersion
counter, watches that receive every change in write order, and the API
server's own bits of behaviour the scheduler relies on (defaulting of
uid/creationTimestamp, generateName, pods/binding, finalizers, priority
admission from PriorityClasses, the default StorageClass of new claims, the
device taints' ``timeAdded`` and a DeviceTaintRule's ``generation``, the
PodGroup defaults, priorities and protection finalizer, and the PodGroup and CompositePodGroup status
subresource: :meth:`update` keeps their stored status, :meth:`update_status`
their stored spec and metadata).
"""

from __future__ import annotations

import builtins
import collections
import random
import threading
from typing import Any, Callable, Iterable

import attrs

from kubesched.core.api.podpriority import (
    DEFAULT_PRIORITY,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    SYSTEM_PRIORITY_CLASSES,
)
from kubesched.core.volume.claims import ANN_BETA_STORAGE_CLASS, default_storage_class

from ..api import RESOURCES, from_manifest, object_key, resource_of, to_manifest
from ..api.batch_v1 import Job, with_generated_selector
from ..api.convert import ManifestError, structure, unstructure
from ..api.core_v1 import PersistentVolumeClaim, Pod, PodAffinityTerm, PodCondition
from ..api.meta import LabelSelectorRequirement, ObjectMeta, evolve
from ..api.resource_v1 import DeviceTaintRule, ResourceSlice
from ..api.scheduling_v1 import PriorityClass
from ..api.scheduling_v1beta1 import (
    POD_GROUP_PROTECTION_FINALIZER,
    CompositePodGroup,
    DisruptionMode,
    PodGroup,
    SingleDisruptionMode,
    Workload,
)
from ..api.validation import problems, resize_problems, status_update_problems, update_problems
from ..clock import Clock, FakeClock
from ..features import FeatureGates
from ..undo import ABSENT, Restore, StoreWrite, UndoLog
from .client import (
    ADDED,
    DELETED,
    MODIFIED,
    AlreadyExists,
    BadRequest,
    ClusterClient,
    Conflict,
    Gone,
    Invalid,
    ListResult,
    NotFound,
    WatchEvent,
    WatchSink,
)
from .gated import admit_gated
from .patch import STRATEGIC_MERGE_PATCH, apply_patch, field_models, status_manifest, with_preconditions

#: A pod's grace period in its metadata while it terminates (upstream ``deletionGracePeriodSeconds``).
GRACE_KEY = "deletionGracePeriodSeconds"
#: A pod's ``terminationGracePeriodSeconds`` when it sets none (seconds).
DEFAULT_TERMINATION_GRACE = 30

# upstream's generateName alphabet (no vowels, no confusable digits)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

#: How many past changes a watch may resume from (default of ``MemoryCluster(history=)``): each holds the
#: object as it was then, ~0.5 KB beside the stored object (old versions share their unchanged parts).
HISTORY = 10_000
#: Seconds of the cluster's clock between compactions of the change history, as kube-apiserver compacts etcd
#: (``--etcd-compaction-interval``, 5 minutes): each drops the changes up to the resourceVersion the previous
#: one saw, so a watch resumes from up to 5-10 minutes back (and at most :data:`HISTORY` changes).
COMPACTION_INTERVAL = 300.0


class MemoryCluster(ClusterClient):
    """An in-memory cluster.

    ``clock`` stamps creation and deletion times (a :class:`FakeClock` at 0 by
    default); ``seed`` makes generated names and UIDs reproducible;
    ``history`` is how many past changes a watch may resume from before it
    gets :class:`Gone` (410 "too old resource version", as from etcd; the
    history is also compacted every :data:`COMPACTION_INTERVAL` seconds of
    ``clock``, as kube-apiserver compacts etcd); ``graceful_deletion``: a deleted pod that runs on a
    node only gets a ``deletionTimestamp`` its grace period ahead and stays
    until :meth:`finish_terminating_pods` (the kubelets' part), as on a real
    cluster; without it (the embedded cluster has no kubelets) it goes at
    once; ``features``: the feature gates it serves objects and fields by
    (:mod:`.gated`; default: every gate at its default in the newest release,
    a scheduler over this cluster takes the same object).  Thread-safe: one
    lock guards the store.
    """

    def __init__(self, clock: Clock | None = None, seed: int = 0, history: int = HISTORY,
                 graceful_deletion: bool = False, features: FeatureGates | None = None):
        self.clock = clock or FakeClock()
        self.features = features if features is not None else FeatureGates()
        #: Delete pods as kube-apiserver with kubelets does (see :meth:`delete`).
        self.graceful_deletion = graceful_deletion
        self._rng = random.Random(seed)
        self._store: dict[str, dict[str, Any]] = {kind: {} for kind in RESOURCES}
        self._rv = 0
        self._log: collections.deque[tuple[int, WatchEvent]] = collections.deque(maxlen=history)
        #: the next compaction (clock seconds) and the resourceVersion it compacts up to (the previous one's)
        self._next_compaction = self.clock.now() + COMPACTION_INTERVAL
        self._compaction_mark = 0
        self._watchers: dict[str, list[WatchSink]] = collections.defaultdict(list)
        self._lock = threading.RLock()
        #: Hook a test may set to make a write fail: called with (verb, kind, obj_or_name).
        self.fail_hook: Callable[[str, str, Any], None] | None = None
        #: every write of the store is recorded here while a transaction is open (``kubesched.sim``)
        self.journal = UndoLog()

    # --- reading -------------------------------------------------------------------------

    def list(self, kind: str, namespace: str | None = None) -> ListResult:
        """See :meth:`ClusterClient.list`; the resourceVersion is the latest change's."""
        with self._lock:
            items = list(self._bucket(kind).values())
            if namespace is not None:
                items = [o for o in items if o.metadata.namespace == namespace]
            return ListResult(items, str(self._rv))

    def get(self, kind: str, name: str, namespace: str = "") -> Any:
        """See :meth:`ClusterClient.get`; raises NotFound ``<Kind> "<name>" not found``."""
        with self._lock:
            obj = self._bucket(kind).get(f"{namespace}/{name}" if namespace else name)
        if obj is None:
            raise NotFound(f'{kind} "{name}" not found')
        return obj

    def objects(self) -> Iterable[Any]:
        """Every stored object, kind by kind (the order of :data:`RESOURCES`), then by key."""
        with self._lock:
            return [obj for kind in RESOURCES for _, obj in sorted(self._store.get(kind, {}).items())]

    def watch(self, kind: str, resource_version: str, sink: WatchSink) -> Callable[[], None]:
        """See :meth:`ClusterClient.watch`: past changes of ``kind`` after ``resource_version`` are replayed from
        the history first; raises Gone when the history no longer reaches back that far."""
        with self._lock:
            since = int(resource_version or 0)
            if since < self._rv:
                if not self._log or self._log[0][0] > since + 1:
                    raise Gone(f"too old resource version: {since} ({self._rv})")
                for rv, event in self._log:
                    if rv > since and event.kind == kind:
                        sink(event)
            self._watchers[kind].append(sink)

        def stop() -> None:
            with self._lock:
                if sink in self._watchers[kind]:
                    self._watchers[kind].remove(sink)

        return stop

    def resource_version(self) -> str:
        """The resourceVersion of the latest change (what a list returns)."""
        with self._lock:
            return str(self._rv)

    def compact(self) -> None:
        """Forget the change history, as etcd compaction does: a watch from any
        resourceVersion older than the current one then raises :class:`Gone`."""
        with self._lock:
            self._log.clear()

    # --- writing -------------------------------------------------------------------------

    def create(self, obj: Any) -> Any:
        """See :meth:`ClusterClient.create`, with the API server's defaulting (uid, creationTimestamp, namespace
        ``default``, generateName), validation (Invalid) and admission (pod priority, a claim's default
        StorageClass, PodGroup priority and protection finalizer).  The fail hook sees ``create``."""
        kind = resource_of(obj).kind
        self._check_fail("create", kind, obj)
        with self._lock:
            key, obj = self._admitted(obj)
            self._rv += 1
            self._put(kind, key, obj)
            self._emit(ADDED, kind, obj)
            return obj

    def dry_run_create(self, obj: Any) -> Any:
        """What :meth:`create` would store (defaulted, validated, admitted; the next resourceVersion and a uid),
        stored nowhere and seen by no watch, as kube-apiserver's ``dryRun=All``; the name generator is left as
        it was.  Raises as :meth:`create` does (not the fail hook)."""
        return self.dry_run_create_all([obj])[0]

    def dry_run_create_all(self, objs: Iterable[Any]) -> builtins.list[Any]:
        """What :meth:`create` would store for each of ``objs`` created one after the other, in this order (each
        at its own resourceVersion, with its own uid), as :meth:`dry_run_create`: stored nowhere, the
        resourceVersion counter and the name and uid generator left as they were.  Raises as :meth:`create`
        does for the first object refused (AlreadyExists for a key twice among ``objs``)."""
        with self._lock:
            rv, rng = self._rv, self._rng.getstate()
            stored: builtins.list[Any] = []
            keys: set[tuple[str, str]] = set()
            try:
                for obj in objs:
                    key, admitted = self._admitted(obj)
                    kind = resource_of(admitted).kind
                    if (kind, key) in keys:
                        raise AlreadyExists(f'{kind} "{admitted.metadata.name}" already exists')
                    keys.add((kind, key))
                    self._rv += 1
                    stored.append(admitted)
                return stored
            finally:
                self._rv = rv
                self._rng.setstate(rng)

    def _admitted(self, obj: Any) -> tuple[str, Any]:
        """``obj`` as :meth:`create` stores it, with its store key, at the next resourceVersion."""
        resource = resource_of(obj)
        kind = resource.kind
        obj = admit_gated(obj, self.features)
        meta = obj.metadata
        if not meta.name:
            if not meta.generate_name:
                raise Invalid(f"{kind}: metadata.name or metadata.generateName is required")
            meta = evolve(meta, name=self._generate_name(kind, meta))
        if resource.namespaced and not meta.namespace:
            meta = evolve(meta, namespace="default")
        elif not resource.namespaced and meta.namespace:
            meta = evolve(meta, namespace="")  # the API server clears it on a cluster-scoped kind
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        if key in self._bucket(kind):
            raise AlreadyExists(f'{kind} "{meta.name}" already exists')
        generation = _generation(obj, None)
        meta = evolve(
            meta,
            uid=meta.uid or _uuid4(self._rng.getrandbits(128)),
            resource_version=str(self._rv + 1),
            creation_timestamp=meta.creation_timestamp if meta.creation_timestamp is not None else self.clock.now(),
            generation=meta.generation if generation is None else generation,
        )
        obj = _default_groups(self._default_device_taints(evolve(obj, metadata=meta), None), None)
        if isinstance(obj, Job):
            obj = with_generated_selector(obj)
        found = problems(obj)
        if found:
            raise Invalid(f'{kind} "{meta.name}" is invalid: ' + "; ".join(found))
        if isinstance(obj, Pod):
            obj = self._admit_pod(obj)
        elif isinstance(obj, PriorityClass):
            self._validate_priority_class(obj, creating=True)
        elif isinstance(obj, PersistentVolumeClaim):
            obj = self._admit_claim(obj)
        elif isinstance(obj, (PodGroup, CompositePodGroup)):
            obj = self._admit_priority(obj, "pod group")
            if isinstance(obj, PodGroup) and POD_GROUP_PROTECTION_FINALIZER not in obj.metadata.finalizers:
                # the PodGroupProtection admission plugin: kept until no active pod names the group
                obj = evolve(obj, metadata=evolve(obj.metadata, finalizers=(*obj.metadata.finalizers,
                                                                            POD_GROUP_PROTECTION_FINALIZER)))
        return key, obj

    def update(self, obj: Any) -> Any:
        """See :meth:`ClusterClient.update`; uid, creationTimestamp and deletionTimestamp are kept from the stored
        object.  The fail hook sees ``update``."""
        return self._replace(obj, status_only=False)

    def update_status(self, obj: Any) -> Any:
        """See :meth:`ClusterClient.update_status`: only ``status`` changes.  The fail hook sees ``update_status``."""
        return self._replace(obj, status_only=True)

    def update_resize(self, obj: Pod) -> Pod:
        """PUT a Pod's ``resize`` subresource (in-place resize, served while
        InPlacePodVerticalScaling is on): of ``obj`` only its containers' and
        pod-level cpu and memory are taken, under the API server's rules
        (:func:`~kubesched.core.api.validation.resize_problems`; Invalid with
        its messages).  The fail hook sees ``update_resize``."""
        if not isinstance(obj, Pod) or not self.features.enabled("InPlacePodVerticalScaling"):
            raise NotFound(f"the server could not find the requested resource ({resource_of(obj).kind} resize)")
        self._check_fail("update_resize", "Pod", obj)
        with self._lock:
            return self._write("Pod", obj, "resize")

    def patch(self, kind: str, name: str, patch: Any, namespace: str = "", *, subresource: str = "",
              patch_type: str = STRATEGIC_MERGE_PATCH, uid: str | None = None,
              resource_version: str | None = None) -> Any:
        """See :meth:`ClusterClient.patch`; a Pod also has the ``resize``
        subresource, which changes only its containers' resources (upstream's
        in-place pod resize; served while InPlacePodVerticalScaling is on).  The fail hook sees the verb ``patch`` or
        ``patch_<subresource>`` and ``namespace/name``."""
        resource = RESOURCES.get(kind)
        resize = ("resize",) if kind == "Pod" and self.features.enabled("InPlacePodVerticalScaling") else ()
        if resource is None or subresource not in ("", "status") + resize:
            raise NotFound(f"the server could not find the requested resource ({kind} {subresource})".rstrip())
        self._check_fail(f"patch_{subresource}" if subresource else "patch", kind,
                         f"{namespace}/{name}" if namespace else name)
        body = with_preconditions(patch, uid, resource_version)
        with self._lock:
            current = self.get(kind, name, namespace)
            try:
                obj = _patched(current, subresource, body, patch_type, resource.cls)
            except ManifestError as err:
                raise Invalid(f'{kind} "{name}" is invalid: {err}') from None
            if obj.metadata.name != name:
                raise BadRequest(f"the name of the object ({obj.metadata.name}) does not match the name on the URL ({name})")
            if obj.metadata.uid != current.metadata.uid:
                raise Invalid(f'{kind} "{name}" is invalid: metadata.uid: Invalid value: "{obj.metadata.uid}": '
                              "field is immutable")
            return self._write(kind, obj, subresource)

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """See :meth:`ClusterClient.bind`: sets ``spec.nodeName``, a PodScheduled=True condition and clears
        ``status.nominatedNodeName``.  Raises Conflict, with kube-apiserver's messages, for a UID mismatch, a pod
        already assigned, being deleted or still gated."""
        self._check_fail("bind", "Pod", f"{namespace}/{name}")
        with self._lock:
            pod = self.get("Pod", name, namespace)
            if uid and pod.metadata.uid != uid:
                raise Conflict(f"Operation cannot be fulfilled on pods/binding \"{name}\": the UID in the precondition ({uid}) does not match the UID in record ({pod.metadata.uid}). The object might have been deleted and then recreated")
            if pod.spec.node_name:
                raise Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{pod.spec.node_name}"')
            if pod.metadata.deletion_timestamp is not None:
                raise Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is being deleted, cannot be assigned to a host')
            if pod.spec.scheduling_gates:
                raise Conflict(f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} has non-empty '
                               ".spec.schedulingGates")
            now = self.clock.now()
            conditions = [c for c in pod.status.conditions if c.type != "PodScheduled"]
            conditions.append(PodCondition(type="PodScheduled", status="True", last_transition_time=now))
            # the nomination has served its purpose (upstream's ClearingNominatedNodeNameAfterBinding)
            self._store_update("Pod", pod, spec=evolve(pod.spec, node_name=node_name),
                               status=evolve(pod.status, conditions=tuple(conditions), nominated_node_name=""))

    def delete(self, kind: str, name: str, namespace: str = "", uid: str | None = None) -> None:
        """See :meth:`ClusterClient.delete`: an object with finalizers, or a bound, unfinished pod under
        ``graceful_deletion``, only gets a deletionTimestamp; raises Conflict when ``uid`` does not match.  The
        fail hook sees ``delete``."""
        self._check_fail("delete", kind, f"{namespace}/{name}" if namespace else name)
        with self._lock:
            obj = self.get(kind, name, namespace)
            if uid is not None and obj.metadata.uid != uid:
                raise Conflict(f'Precondition failed: UID in precondition: {uid}, UID in object meta: {obj.metadata.uid}')
            grace = self._grace_period(obj)
            if obj.metadata.finalizers or grace:
                if obj.metadata.deletion_timestamp is None:
                    extra = {**obj.metadata.extra, GRACE_KEY: grace} if grace else obj.metadata.extra
                    meta = evolve(obj.metadata, deletion_timestamp=self.clock.now() + grace, extra=extra)
                    self._store_update(kind, evolve(obj, metadata=meta))
                return
            self._remove(kind, obj)

    def _grace_period(self, obj: Any) -> int:
        """Seconds a deleted object stays terminating: with :attr:`graceful_deletion`,
        a pod bound to a node and not finished gets its
        ``terminationGracePeriodSeconds`` (default 30), as kube-apiserver's pod
        strategy; everything else 0 (deleted at once, as a pod that never ran)."""
        if not (self.graceful_deletion and isinstance(obj, Pod) and obj.spec.node_name and not obj.terminal):
            return 0
        return int(obj.spec.extra.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE))

    def finish_terminating_pods(self) -> "builtins.list[str]":
        """What the kubelets do for pods being deleted gracefully: their
        containers stopped, each is deleted for good (a pod that still has
        finalizers waits for them).  Returns the ``namespace/name`` removed."""
        removed = []
        with self._lock:
            for pod in list(self._store["Pod"].values()):
                if GRACE_KEY not in pod.metadata.extra:
                    continue
                extra = {k: v for k, v in pod.metadata.extra.items() if k != GRACE_KEY}
                self._store_update("Pod", evolve(pod, metadata=evolve(pod.metadata, extra=extra)))
                if not pod.metadata.finalizers:
                    removed.append(pod.key)
        return removed

    def apply(self, obj: Any) -> Any:
        """Create ``obj``, or replace the stored object of that name (metadata,
        spec and status) keeping its uid: what ``--at OFFSET=FILE`` does.  Status
        fields the manifest leaves unset keep their stored values (as a
        server-side apply by another field manager would), so a change can set
        a claim's ``status.devices`` conditions without restating its allocation."""
        kind = resource_of(obj).kind
        namespace = obj.metadata.namespace or ("default" if resource_of(obj).namespaced else "")
        with self._lock:
            try:
                current = self.get(kind, obj.metadata.name, namespace)
            except NotFound:
                return self.create(obj)
            meta = evolve(obj.metadata, uid=current.metadata.uid, namespace=current.metadata.namespace,
                                creation_timestamp=current.metadata.creation_timestamp, resource_version="")
            status = getattr(obj, "status", None)
            if status is not None and attrs.has(type(status)):
                obj = evolve(obj, status=_keep_unset(status, current.status))
            obj = self._default_device_taints(evolve(obj, metadata=meta), current)
            return self._store_update(kind, _with_generation(_default_groups(obj, current), current))

    # --- internals -----------------------------------------------------------------------

    def _bucket(self, kind: str) -> dict[str, Any]:
        try:
            return self._store[kind]
        except KeyError:
            raise NotFound(f"the server could not find the requested resource (kind {kind!r})") from None

    def _check_fail(self, verb: str, kind: str, target: Any) -> None:
        if self.fail_hook is not None:
            self.fail_hook(verb, kind, target)

    def _generate_name(self, kind: str, meta: Any) -> str:
        bucket = self._bucket(kind)
        while True:
            name = meta.generate_name + "".join(self._rng.choice(_NAME_ALPHABET) for _ in range(5))
            key = f"{meta.namespace or 'default'}/{name}" if RESOURCES[kind].namespaced else name
            if key not in bucket:
                return name

    def _admit_pod(self, pod: Pod) -> Pod:
        """What the API server does to a new pod: the Priority admission plugin
        (priorityClassName, or the globalDefault class, into spec.priority and
        spec.preemptionPolicy), the SchedulingGated condition of a gated pod, and
        pod (anti-)affinity terms' matchLabelKeys/mismatchLabelKeys merged into
        their labelSelector."""
        pod = _merge_match_label_keys(pod)
        if pod.spec.scheduling_gates and not any(c.type == "PodScheduled" for c in pod.status.conditions):
            gated = PodCondition(type="PodScheduled", status="False", reason="SchedulingGated",
                                 message="Scheduling is blocked due to non-empty scheduling gates")
            pod = evolve(pod, status=evolve(pod.status, conditions=pod.status.conditions + (gated,)))
        return self._admit_priority(pod)

    def _admit_claim(self, claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """The DefaultStorageClass admission plugin: a claim that names no class
        (field unset, no beta annotation) gets the default StorageClass."""
        if claim.spec.storage_class_name is not None or ANN_BETA_STORAGE_CLASS in claim.metadata.annotations:
            return claim
        default = default_storage_class(self._store["StorageClass"].values())
        if default is None:
            return claim
        return evolve(claim, spec=evolve(claim.spec, storage_class_name=default.metadata.name))

    def with_admitted_priority(self, obj: Any) -> Any:
        """``obj`` (a Pod or PodGroup) with the ``spec.priority``, ``priorityClassName`` and
        ``preemptionPolicy`` the Priority admission plugin would give it now (see :meth:`_admit_priority`);
        nothing is stored.  Raises ``Invalid`` as creating it would."""
        return self._admit_priority(obj, "pod" if isinstance(obj, Pod) else "podgroup")

    def _admit_priority(self, obj: Any, noun: str = "pod") -> Any:
        """Upstream's Priority admission plugin, for a Pod, a PodGroup or a
        CompositePodGroup (``noun`` in messages): ``spec.priority`` and
        ``spec.preemptionPolicy`` from ``spec.priorityClassName`` (a stored class
        or a system one), else from the global default class (lowest value if
        several), else priority 0 and PreemptLowerPriority.  A given priority or
        policy that differs from the class's is refused.  An object that sets
        ``spec.priority`` without naming a class keeps it, as on an API server
        without that admission plugin (scheduler_perf's templates do so).  A group's
        ``preemptionPolicy`` is filled in only under the PodGroupPreemptionPolicy gate
        (without it the API server has no such field)."""
        spec = obj.spec
        classes = self._store["PriorityClass"]
        name = spec.priority_class_name
        if not name and spec.priority is not None:
            if spec.preemption_policy or (not isinstance(obj, Pod)
                                          and not self.features.enabled("PodGroupPreemptionPolicy")):
                return obj
            return evolve(obj, spec=evolve(spec, preemption_policy=PREEMPT_LOWER_PRIORITY))
        policy = PREEMPT_LOWER_PRIORITY
        if name in SYSTEM_PRIORITY_CLASSES and name not in classes:
            priority = SYSTEM_PRIORITY_CLASSES[name]
        elif name:
            pc = classes.get(name)
            if pc is None:
                raise Invalid(f"spec.priorityClassName: no PriorityClass with name {name} was found")
            priority, policy = pc.value, pc.preemption_policy or PREEMPT_LOWER_PRIORITY
        else:
            pc = _global_default(classes.values())
            priority = pc.value if pc is not None else DEFAULT_PRIORITY
            if pc is not None:
                name, policy = pc.metadata.name, pc.preemption_policy or PREEMPT_LOWER_PRIORITY
        if spec.priority is not None and spec.priority != priority:
            raise Invalid(f"spec.priority: the integer value of priority ({spec.priority}) must not be provided "
                          f"in {noun} spec; priority admission controller computed {priority} from the given "
                          "PriorityClass name")
        if spec.preemption_policy is not None and spec.preemption_policy != policy:
            raise Invalid(f"spec.preemptionPolicy: the string value of PreemptionPolicy ({spec.preemption_policy}) "
                          f"must not be provided in {noun} spec; priority admission controller computed {policy} "
                          "from the given PriorityClass name")
        if not isinstance(obj, Pod) and not self.features.enabled("PodGroupPreemptionPolicy"):
            policy = spec.preemption_policy  # a group's field exists only under its gate: not filled in
        return evolve(obj, spec=evolve(spec, priority=priority, priority_class_name=name,
                                                   preemption_policy=policy))

    def _validate_priority_class(self, pc: PriorityClass, creating: bool) -> None:
        """Upstream's PriorityClass validation: reserved names and values, and
        at most one global default."""
        name = pc.metadata.name
        if name.startswith("system-") and name not in SYSTEM_PRIORITY_CLASSES:
            raise Invalid(f"PriorityClass/{name}: metadata.name: priority class names with 'system-' prefix are "
                          "reserved")
        if pc.value > HIGHEST_USER_DEFINABLE_PRIORITY and name not in SYSTEM_PRIORITY_CLASSES:
            raise Invalid(f"PriorityClass/{name}: value: maximum allowed value of a user defined priority is "
                          f"{HIGHEST_USER_DEFINABLE_PRIORITY}")
        if pc.preemption_policy not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
            raise Invalid(f"PriorityClass/{name}: preemptionPolicy: Unsupported value: {pc.preemption_policy!r}: "
                          f"supported values: \"{PREEMPT_LOWER_PRIORITY}\", \"{PREEMPT_NEVER}\"")
        if pc.global_default:
            current = _global_default(self._store["PriorityClass"].values())
            if current is not None and (creating or current.metadata.name != name):
                raise Invalid(f"PriorityClass/{name}: globalDefault: PriorityClass {current.metadata.name} is "
                              "already marked as default. Only one default can exist")

    def _default_device_taints(self, obj: Any, current: Any | None) -> Any:
        """The API server's defaulting and strategy for device taints: a taint
        without ``timeAdded`` gets the current time (in ResourceSlices and
        DeviceTaintRules); a DeviceTaintRule starts at ``generation`` 1, counts
        every spec change, and an update that changes the effect but keeps
        ``timeAdded`` gets ``timeAdded`` bumped to now."""
        if isinstance(obj, ResourceSlice):
            if not any(t.time_added is None for d in obj.spec.devices for t in d.taints):
                return obj
            now = self.clock.now()
            devices = tuple(evolve(d, taints=tuple(t if t.time_added is not None else evolve(t, time_added=now)
                                                           for t in d.taints)) for d in obj.spec.devices)
            return evolve(obj, spec=evolve(obj.spec, devices=devices))
        if not isinstance(obj, DeviceTaintRule):
            return obj
        taint = obj.spec.taint
        if taint.time_added is None or (current is not None and taint.effect != current.spec.taint.effect
                                        and taint.time_added == current.spec.taint.time_added):
            obj = evolve(obj, spec=evolve(obj.spec, taint=evolve(taint, time_added=self.clock.now())))
        return obj

    def _replace(self, obj: Any, status_only: bool) -> Any:
        kind = resource_of(obj).kind
        self._check_fail("update_status" if status_only else "update", kind, obj)
        with self._lock:
            return self._write(kind, obj, "status" if status_only else "")

    def _write(self, kind: str, obj: Any, subresource: str) -> Any:
        """Store ``obj`` over the stored object of its name (an update, or the
        result of a patch) through ``subresource`` ("", "status" or a Pod's
        "resize"), with the resourceVersion and UID checks and the API
        server's update validation."""
        with self._lock:
            current = self.get(kind, obj.metadata.name, obj.metadata.namespace)
            rv = obj.metadata.resource_version
            if rv and rv != current.metadata.resource_version:
                raise Conflict(
                    f'Operation cannot be fulfilled on {resource_of(obj).plural} "{obj.metadata.name}": '
                    "the object has been modified; please apply your changes to the latest version and try again"
                )
            if obj.metadata.uid and obj.metadata.uid != current.metadata.uid:
                raise Conflict(f'Operation cannot be fulfilled on {resource_of(obj).plural} "{obj.metadata.name}": '
                               f"Precondition failed: UID in precondition: {obj.metadata.uid}, UID in object meta: "
                               f"{current.metadata.uid}")
            if subresource == "status":
                obj = evolve(current, status=obj.status)
                found = status_update_problems(current, obj) + update_problems(current, obj)
            elif subresource == "resize":
                found = resize_problems(current, obj,
                                        self.features.enabled("InPlacePodLevelResourcesVerticalScaling"))
                obj = evolve(current, spec=obj.spec)
            if subresource:
                if found:
                    raise Invalid(f'{kind} "{obj.metadata.name}" is invalid: ' + "; ".join(found))
                return self._store_update(kind, obj)
            else:
                if isinstance(obj, PriorityClass):
                    self._validate_priority_class(obj, creating=False)
                # the API server keeps deletionTimestamp: an update can neither set nor clear it
                meta = evolve(obj.metadata, uid=current.metadata.uid,
                                    creation_timestamp=current.metadata.creation_timestamp,
                                    deletion_timestamp=current.metadata.deletion_timestamp)
                obj = _default_groups(self._default_device_taints(evolve(obj, metadata=meta), current), current)
                obj = _with_generation(obj, current)
                if hasattr(current, "status"):  # the status subresource alone writes status
                    obj = evolve(obj, status=current.status)
            found = update_problems(current, obj)
            if found:
                raise Invalid(f'{kind} "{obj.metadata.name}" is invalid: ' + "; ".join(found))
            return self._store_update(kind, obj)

    def _store_update(self, kind: str, obj: Any, **changes: Any) -> Any:
        """Store ``obj`` (with ``changes`` to its fields other than metadata, made in the same copy) at the next
        resourceVersion and tell the watches; a deleted object whose finalizers are gone is removed instead."""
        self._rv += 1
        obj = evolve(obj, metadata=evolve(obj.metadata, resource_version=str(self._rv)), **changes)
        if obj.metadata.deletion_timestamp is not None and not obj.metadata.finalizers \
                and GRACE_KEY not in obj.metadata.extra:
            self._rv -= 1
            self._remove(kind, obj)
            return obj
        self._put(kind, object_key(obj), obj)
        self._emit(MODIFIED, kind, obj)
        return obj

    def _put(self, kind: str, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key`` (None: remove the key), recorded in :attr:`journal`."""
        bucket = self._bucket(kind)
        if self.journal.recording:
            self.journal.record(StoreWrite(bucket, kind, key, bucket.get(key, ABSENT)))
        if obj is None:
            del bucket[key]
        else:
            bucket[key] = obj

    def load_from(self, other: "MemoryCluster") -> None:
        """Hold ``other``'s objects exactly as stored (uids, resourceVersions, timestamps; frozen, so shared, not
        copied), its resourceVersion counter and its name generator's state: a copy of a simulation, made before
        anything lists or watches this cluster.  No watch history comes along (a watch from an older
        resourceVersion gets :class:`Gone`).  Cost: the number of objects."""
        with other._lock:
            store = {kind: dict(bucket) for kind, bucket in other._store.items()}
            rv, rng = other._rv, other._rng.getstate()
        with self._lock:
            self._store, self._rv = store, rv
            self._rng.setstate(rng)

    def savepoint(self) -> Restore:
        """What the store's writes do not record: the resourceVersion counter, the name and uid generator and
        the watch history; the returned callable puts them back (the history is cut back to that
        resourceVersion, not refilled: a watch resumed from before it gets :class:`Gone`, as after a
        compaction).  The objects themselves go back through :attr:`journal`."""
        with self._lock:
            rv, rng = self._rv, self._rng.getstate()
            compaction = self._next_compaction, self._compaction_mark

        def restore() -> None:
            with self._lock:
                self._rv = rv
                self._rng.setstate(rng)
                self._next_compaction, self._compaction_mark = compaction
                while self._log and self._log[-1][0] > rv:
                    self._log.pop()
        return restore

    def _remove(self, kind: str, obj: Any) -> None:
        self._put(kind, object_key(obj), None)
        self._rv += 1
        # as the API server: the deleted object carries the deletion's resourceVersion
        self._emit(DELETED, kind, evolve(obj, metadata=evolve(obj.metadata, resource_version=str(self._rv))))

    def _emit(self, type_: str, kind: str, obj: Any) -> None:
        event = WatchEvent(type_, kind, obj)
        self._log.append((self._rv, event))
        if self.clock.now() >= self._next_compaction:
            self._compact_history()
        for sink in self._watchers.get(kind, ()):
            sink(event)

    def _compact_history(self) -> None:
        """The scheduled compaction: the changes up to the resourceVersion the previous one saw are dropped
        (a watch from before them gets :class:`Gone`); the next is :data:`COMPACTION_INTERVAL` later."""
        log, mark = self._log, self._compaction_mark
        while log and log[0][0] <= mark:
            log.popleft()
        self._compaction_mark = self._rv
        self._next_compaction = self.clock.now() + COMPACTION_INTERVAL


def _uuid4(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` (variant and version bits set), without the UUID object."""
    bits = (bits & ~(0xC000 << 48) | 0x8000 << 48) & ~(0xF000 << 64) | 4 << 76
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


#: the metadata keys a client states preconditions with (:func:`~.patch.with_preconditions`), by manifest key
_PRECONDITIONS = frozenset({"uid", "resourceVersion"})


def _patched(current: Any, subresource: str, body: Any, patch_type: str, cls: type) -> Any:
    """``current`` (of class ``cls``) with the patch ``body`` applied, decoded as the API server decodes it (raises
    :class:`ManifestError` naming the field, :class:`BadRequest` for a bad patch).  A patch of ``/status`` that
    holds only status and metadata (preconditions), such as a kubelet's or a scheduler's pod conditions, is merged
    into the stored status and the metadata a write checks (name, namespace, UID, resourceVersion) alone, and only
    those are decoded: a status write keeps the stored spec and metadata, so they are not turned into a manifest
    and back for nothing."""
    status_cls = field_models(cls).get("status")
    if subresource != "status" or status_cls is None or not isinstance(body, dict) \
            or not set(body) <= {"status", "metadata"}:
        return from_manifest(apply_patch(to_manifest(current), body, patch_type, cls))
    meta = current.metadata
    preconditions = body.get("metadata", {})
    status_patch = body.get("status", {})
    if patch_type == STRATEGIC_MERGE_PATCH and isinstance(status_patch, dict) and isinstance(preconditions, dict) \
            and all(key in _PRECONDITIONS and type(value) is str for key, value in preconditions.items()):
        # metadata holds only string preconditions (what patch_status sends): the identity they merge into is
        # decoded as it reads, and the status is merged on its own (the same merge as within the whole body)
        status = apply_patch(status_manifest(current.status), status_patch, patch_type, status_cls)
        checked = ObjectMeta(name=meta.name, namespace=meta.namespace, uid=preconditions.get("uid", meta.uid),
                             resource_version=preconditions.get("resourceVersion", meta.resource_version))
        return evolve(current, metadata=checked, status=_decoded({"status": status}, "status", status_cls))
    identity = {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid, "resourceVersion": meta.resource_version}
    merged = apply_patch({"metadata": {key: value for key, value in identity.items() if value},
                          "status": unstructure(current.status)}, body, patch_type, cls)
    return evolve(current, metadata=_decoded(merged, "metadata", ObjectMeta), status=_decoded(merged, "status", status_cls))


def _decoded(manifest: dict, key: str, cls: type) -> Any:
    """``manifest[key]`` decoded as ``cls``; a :class:`ManifestError` names the field from the object's top."""
    try:
        return structure(manifest.get(key), cls)
    except ManifestError as err:
        field = err.field if not err.field or err.field.startswith("[") else "." + err.field
        raise ManifestError(key + field, err.problem) from None


def _merge_term(term: PodAffinityTerm, labels: dict[str, str]) -> PodAffinityTerm:
    added = tuple(LabelSelectorRequirement(k, "In", (labels[k],)) for k in term.match_label_keys if k in labels)
    added += tuple(LabelSelectorRequirement(k, "NotIn", (labels[k],)) for k in term.mismatch_label_keys if k in labels)
    if not added or term.label_selector is None:
        return term
    selector = term.label_selector
    return evolve(term, label_selector=evolve(selector,
                                                          match_expressions=selector.match_expressions + added))


def _merge_terms(group: Any, labels: dict[str, str]) -> Any:
    if group is None:
        return None
    required = tuple(_merge_term(t, labels) for t in group.required_during_scheduling_ignored_during_execution)
    preferred = tuple(evolve(w, pod_affinity_term=_merge_term(w.pod_affinity_term, labels))
                      for w in group.preferred_during_scheduling_ignored_during_execution)
    return evolve(group, required_during_scheduling_ignored_during_execution=required,
                        preferred_during_scheduling_ignored_during_execution=preferred)


def _merge_match_label_keys(pod: Pod) -> Pod:
    """kube-apiserver's pod admission (MatchLabelKeysInPodAffinity): for every pod
    (anti-)affinity term, ``key In (value)`` per matchLabelKeys entry and
    ``key NotIn (value)`` per mismatchLabelKeys entry, with the pod's own label
    values, are added to the term's labelSelector."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return pod
    labels = pod.metadata.labels
    merged = evolve(affinity, pod_affinity=_merge_terms(affinity.pod_affinity, labels),
                          pod_anti_affinity=_merge_terms(affinity.pod_anti_affinity, labels))
    return evolve(pod, spec=evolve(pod.spec, affinity=merged))


def _with_generation(obj: Any, current: Any | None) -> Any:
    """``obj`` with its :func:`_generation` (objects without a spec are returned unchanged)."""
    generation = _generation(obj, current)
    if generation is None:
        return obj
    return evolve(obj, metadata=evolve(obj.metadata, generation=generation))


def _generation(obj: Any, current: Any | None) -> int | None:
    """``metadata.generation`` as the API server keeps it for objects with a
    spec: 1 when created (``current`` None), one more for every update that
    changes the spec; None for an object without a spec (it keeps its own)."""
    if not hasattr(obj, "spec"):
        return None
    return 1 if current is None else current.metadata.generation + (obj.spec != current.spec)


def _default_groups(obj: Any, current: Any | None) -> Any:
    """The API server's defaulting of Workloads, PodGroups and CompositePodGroups:
    a PodGroup without ``disruptionMode`` gets ``{single: {}}``; ``generation``
    as :func:`_with_generation`.  Other kinds are returned unchanged."""
    if not isinstance(obj, (Workload, PodGroup, CompositePodGroup)):
        return obj
    if isinstance(obj, PodGroup) and obj.spec.disruption_mode is None:
        obj = evolve(obj, spec=evolve(obj.spec, disruption_mode=DisruptionMode(single=SingleDisruptionMode())))
    return obj


def _global_default(classes: Iterable[PriorityClass]) -> PriorityClass | None:
    """The global default PriorityClass (the lowest value if several, as upstream)."""
    defaults = [pc for pc in classes if pc.global_default]
    return min(defaults, key=lambda pc: pc.value) if defaults else None


def _keep_unset(given: Any, stored: Any) -> Any:
    """``given`` with every field it leaves at its default taken from ``stored``."""
    kept = {}
    for field in attrs.fields(type(given)):
        if not field.init:
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]  # attrs.Factory is a class at run time
            default = default.factory()
        if getattr(given, field.name) == default:
            kept[field.alias or field.name] = getattr(stored, field.name)
    return evolve(given, **kept) if kept else given
