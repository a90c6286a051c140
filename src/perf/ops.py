"""Running one workload: its ops against a MemoryCluster and the scheduler, on the real clock.

:class:`WorkloadExecutor` is scheduler_perf's executor in one thread.  Every
op runs in order; whenever an op waits (for pods to be scheduled, for a
``sleep``, for paced deletions) the executor drives the scheduler itself:
``scheduler.step()`` schedules one pod (delivering watch events and due
timers first), and between steps the throughput collector samples each time
the wall clock passes a second.  Background activity (``churn``, paced
``deletePods`` with ``skipWaitToCompletion``) runs as timers on the same
clock, so it interleaves with scheduling as upstream's goroutines do.

Ops and upstream semantics:

- ``createNodes``: ``count`` nodes from ``nodeTemplatePath`` (expanded with
  ``.Index`` 0..count-1 and ``.Count``) or a 4 CPU / 32Gi / 110 pods node
  named ``node-<opIndex>-<random>``; each gets the ``kubernetes.io/hostname``
  label, and ``labelNodePrepareStrategy``'s (round robin over ``labelValues``)
  or ``uniqueNodeLabelStrategy``'s label.  ``nodeAllocatableStrategy`` adds
  ``nodeAllocatable`` to each node's allocatable and creates its CSINode (``csiNodeAllocatable`` driver counts,
  ``migratedPlugins`` in the migrated-plugins annotation).
- ``createPods``: ``count`` pods from ``podTemplatePath`` (else the test
  case's ``defaultPodTemplatePath``, else a 100m / 500Mi pod) in
  ``namespace`` (default ``namespace-<opIndex>``); then waits until they are
  scheduled (``skipWaitToCompletion`` records them for a later ``barrier``
  instead; ``steadyState`` keeps ``count`` pods pending for ``duration``,
  deleting each scheduled batch and creating the next).  ``collectMetrics``
  measures SchedulingThroughput of that namespace from the moment the pods
  exist until the last is scheduled.  With ``persistentVolumeTemplatePath``
  and ``persistentVolumeClaimTemplatePath`` each pod ``i`` first gets claim
  ``pvc-<i>`` and PV ``<namespace>-vol-<i>`` (CSI handle = its name, AWS
  volume ID ``vol-<i>``), bound to each other, and uses the claim as volume
  ``vol``.
- ``createAny``: objects of any kind kubesched models, from ``templatePath``.
- ``createNamespaces``: ``<prefix>-0`` .. ``<prefix>-<count-1>``.
- ``barrier``: waits until the pods recorded by earlier
  ``skipWaitToCompletion`` ops are scheduled (or only attempted, with
  ``stageRequirement: Attempted``).
- ``sleep``: lets the scheduler run for ``duration``.
- ``deletePods``: deletes the namespace's pods (matching ``labelSelector``),
  all at once or ``deletePodsPerSecond`` at a time.
- ``churn``: every ``intervalMilliseconds`` creates (mode ``create``, up to
  ``number``) or alternately creates and deletes (``recreate``, ``number``
  slots) one object per template, until the workload ends.
- ``startCollectingMetrics`` / ``stopCollectingMetrics``: measure the pods
  of ``namespaces`` (and ``labelSelector``) between the two ops.

Before anything runs, :meth:`WorkloadExecutor.check` looks for what kubesched
cannot do yet (an op it does not implement, node label strategies, kinds
it does not model, pods that need preemption when no PostFilter plugin is
enabled) and raises :class:`Unsupported`.
"""

from __future__ import annotations

import fnmatch
import gc
import random
import threading
import uuid
from pathlib import Path
from typing import Any, Callable

import attrs
import yaml

from kubesched.core.quantity import QuantityError, parse_resource_list
from kubesched.core.volume.csi_translation import MIGRATED_PLUGINS_ANNOTATION
from kubesched.drivers.harness import Harness
from kubesched.perf.results import DataItem

from ..controllers import CONTROLLERS
from ..core.api import RESOURCES, ManifestError, from_manifest, resource_of
from ..core.api.core_v1 import (
    CLAIM_BOUND,
    VOLUME_BOUND,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    Pod,
    Volume,
)
from ..core.api.meta import Condition, ObjectMeta, ObjectReference
from ..core.api.resource_v1 import AllocatedDeviceStatus
from ..core.api.storage_v1 import CSINode, CSINodeDriver, CSINodeSpec, VolumeNodeResources
from ..core.clock import Clock, RealClock
from ..core.cluster.client import AlreadyExists, ApiError, Conflict, NotFound
from ..core.cluster.memory import MemoryCluster
from ..core.dra.claims import allocated_results
from ..core.framework.config import ConfigError, KubeSchedulerConfiguration, load_config
from ..core.framework.registry import Registry
from ..core.scheduler.scheduler import Scheduler
from .config import THROUGHPUT_METRIC, UPDATE_SUBRESOURCES, Op, Params, PerfConfigError, TestCase, Workload, resolve_op
from .template import TemplateError, load_template
from .throughput import ThroughputCollector, summarize
from .tracker import PodTracker, ScheduledCounter, labels_match

#: How long an op waits for pods before giving up (upstream: 10 minutes), seconds.
WAIT_TIMEOUT = 600.0
#: The binding condition and binding failure condition of createResourceDriver's devices
#: under the DRADeviceBindingConditions gate (the condition types upstream's tests report).
DEVICE_ATTACHED = "DeviceAttached"
ATTACHMENT_FAILED = "AttachmentFailed"

#: Longest single sleep while the scheduler is idle, seconds (keeps progress output alive).
IDLE_SLEEP = 0.25

#: How often progress is reported, seconds.
PROGRESS_PERIOD = 0.25

_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


#: Controllers upstream's scheduler_perf does not run: its volume workloads
#: create PVs and claims already bound, and no PV controller touches them;
#: no disruption controller computes PodDisruptionBudget status.
NOT_IN_SCHEDULER_PERF = ("persistentvolume-controller", "ephemeral-volume-controller", "disruption-controller")


class Unsupported(Exception):
    """The workload needs something kubesched does not do yet (the message says what)."""


class WorkloadFailed(Exception):
    """The workload started but could not finish (the message says why)."""


def default_node_manifest(prefix: str) -> dict[str, Any]:
    """Upstream's base node: 4 CPU, 32Gi, 110 pods, Ready, named ``<prefix><random>``."""
    capacity = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"generateName": prefix},
        "status": {"capacity": capacity, "allocatable": dict(capacity), "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def default_pod_manifest() -> dict[str, Any]:
    """Upstream's base pod: one pause container requesting (and limited to) 100m CPU, 500Mi."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "pod-"},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                 "ports": [{"containerPort": 80}],
                                 "resources": {"requests": dict(resources), "limits": dict(resources)}}]},
    }


class ObjectSource:
    """Typed objects from a template file (or a fixed manifest), one per index.

    ``kind`` is the kind expected when the file does not say (Node, Pod) or
    None for any modelled kind.  A file without ``{{`` is parsed once.
    Raises :class:`TemplateError` / :class:`PerfConfigError` naming the file."""

    def __init__(self, path: Path | None, kind: str | None, params: dict[str, Any] | None = None,
                 manifest: dict[str, Any] | None = None, expand: bool = True):
        self.path = path
        self.kind = kind
        self.params = dict(params or {})
        self._manifest = manifest
        self._template = load_template(path) if path is not None and expand else None
        self._raw_text = None if path is None or expand else _read(path)
        self._static: Any = None

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else f"default {self.kind}"

    def document(self, index: int = 0, count: int = 1) -> dict[str, Any]:
        """The manifest dict for object ``index`` of ``count``."""
        if self._manifest is not None:
            return self._manifest
        if self._template is not None:
            text = self._template.expand({**self.params, "Index": index, "Count": count})
        else:
            text = self._raw_text or ""
        try:
            doc = yaml.load(text, Loader=_YAML_LOADER)
        except yaml.YAMLError as err:
            raise PerfConfigError(f"{self.where}: cannot parse the expanded template: {err}") from None
        if not isinstance(doc, dict):
            raise PerfConfigError(f"{self.where}: expected one object, got {type(doc).__name__}")
        if self.kind is not None:
            doc.setdefault("apiVersion", "v1")
            doc.setdefault("kind", self.kind)
            if doc["kind"] != self.kind:
                raise PerfConfigError(f"{self.where}: expected a {self.kind}, got {doc['kind']}")
        return doc

    @property
    def static(self) -> bool:
        return self._manifest is not None or self._template is None or self._template.static

    def object(self, index: int = 0, count: int = 1) -> Any:
        """The typed object for ``index`` (the same object every time for a static source)."""
        if self._static is not None:
            return self._static
        doc = self.document(index, count)
        try:
            obj = from_manifest(doc)
        except ManifestError as err:
            field = f"{err.field}: " if err.field else ""
            raise PerfConfigError(f"{self.where}: {doc.get('kind')}: {field}{err.problem}") from None
        if self.static:
            self._static = obj
        return obj


def node_allocatable_strategy(raw: Any) -> tuple[dict[str, int], CSINode] | None:
    """Upstream ``NodeAllocatableStrategy``: (allocatable to add, the CSINode
    template) from ``{nodeAllocatable, csiNodeAllocatable, migratedPlugins}``.
    Raises :class:`PerfConfigError` for a malformed strategy."""
    if raw is None:
        return None
    where = "nodeAllocatableStrategy"
    if not isinstance(raw, dict) or set(raw) - {"nodeAllocatable", "csiNodeAllocatable", "migratedPlugins"}:
        raise PerfConfigError(f"{where}: expected a mapping of nodeAllocatable, csiNodeAllocatable, migratedPlugins")
    try:
        allocatable = parse_resource_list(raw.get("nodeAllocatable") or {}, f"{where}.nodeAllocatable")
    except QuantityError as err:
        raise PerfConfigError(str(err)) from None
    drivers = []
    for driver, resources in (raw.get("csiNodeAllocatable") or {}).items():
        count = (resources or {}).get("count") if isinstance(resources, dict) else None
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise PerfConfigError(f"{where}.csiNodeAllocatable.{driver}.count: expected an integer, got {count!r}")
        drivers.append(CSINodeDriver(name=driver, allocatable=VolumeNodeResources(count=count)))
    plugins = raw.get("migratedPlugins") or []
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise PerfConfigError(f"{where}.migratedPlugins: expected a list of plugin names")
    csi_node = CSINode(metadata=ObjectMeta(annotations={MIGRATED_PLUGINS_ANNOTATION: ",".join(plugins)}),
                       spec=CSINodeSpec(drivers=tuple(drivers)))
    return allocatable, csi_node


def node_label_strategy(fields: dict[str, Any], rng: random.Random) -> Callable[[int], dict[str, str]] | None:
    """The labels createNodes adds to its ``index``-th node: upstream's
    ``labelNodePrepareStrategy`` ({labelKey, labelValues}: the values round
    robin over the op's nodes) or ``uniqueNodeLabelStrategy`` ({labelKey}: a
    fresh UUID per node, from the seeded ``rng``).  Raises
    :class:`PerfConfigError` for a malformed strategy or both at once."""
    given = [key for key in ("labelNodePrepareStrategy", "uniqueNodeLabelStrategy") if fields.get(key) is not None]
    if not given:
        return None
    if len(given) > 1:
        raise PerfConfigError("createNodes: labelNodePrepareStrategy and uniqueNodeLabelStrategy are exclusive")
    raw = fields[given[0]]
    where = given[0]
    if not isinstance(raw, dict) or not isinstance(raw.get("labelKey"), str) or not raw["labelKey"]:
        raise PerfConfigError(f"{where}.labelKey: expected a label key")
    key = raw["labelKey"]
    if where == "uniqueNodeLabelStrategy":
        if set(raw) - {"labelKey"}:
            raise PerfConfigError(f"{where}: unknown fields {sorted(set(raw) - {'labelKey'})}")
        return lambda index: {key: str(uuid.UUID(int=rng.getrandbits(128), version=4))}
    values = raw.get("labelValues")
    if set(raw) - {"labelKey", "labelValues"}:
        raise PerfConfigError(f"{where}: unknown fields {sorted(set(raw) - {'labelKey', 'labelValues'})}")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise PerfConfigError(f"{where}.labelValues: expected a non-empty list of strings")
    return lambda index: {key: values[index % len(values)]}


#: What the API server lets a pod Update change (the resize subresource changes container resources).
POD_UPDATE_FORBIDDEN = ("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
                        "`spec.initContainers[*].image`, `spec.tolerations` (only additions to existing "
                        "tolerations), `spec.schedulingGates` (only removals)")


def updated_object(current: Any, template: Any, subresources: tuple[str, ...] = ()) -> Any:
    """What the API server stores for an Update of ``current`` with ``template``
    (upstream's update strategies): labels and annotations are the template's,
    the spec is the template's, and the status stays (it changes only through
    the status subresource).  A Pod keeps its spec but for container images,
    added tolerations and removed scheduling gates; with the ``resize``
    subresource only its containers' resources change.  Raises ValueError
    with the API server's message for a pod change it forbids."""
    if "resize" in subresources and not isinstance(current, Pod):
        raise ValueError(f"the resize subresource is a Pod's, not a {type(current).__name__}'s")
    if not isinstance(current, Pod):
        meta = attrs.evolve(current.metadata, labels=dict(template.metadata.labels),
                            annotations=dict(template.metadata.annotations))
        if "spec" in attrs.fields_dict(type(current)):
            return attrs.evolve(current, metadata=meta, spec=template.spec)
        return attrs.evolve(template, metadata=meta)
    old, new = current.spec, template.spec
    if [c.name for c in new.containers] != [c.name for c in old.containers] \
            or [c.name for c in new.init_containers] != [c.name for c in old.init_containers]:
        raise ValueError(POD_UPDATE_FORBIDDEN)
    if "resize" in subresources:
        resized = tuple(attrs.evolve(c, resources=n.resources) for c, n in zip(old.containers, new.containers))
        return attrs.evolve(current, spec=attrs.evolve(old, containers=resized))
    same = (new.node_selector == old.node_selector and new.affinity == old.affinity
            and new.topology_spread_constraints == old.topology_spread_constraints and new.volumes == old.volumes
            and new.resource_claims == old.resource_claims
            and all(n.resources == c.resources for c, n in zip(old.containers + old.init_containers,
                                                                new.containers + new.init_containers))
            and new.node_name in ("", old.node_name)
            and set(old.tolerations) <= set(new.tolerations)
            and set(new.scheduling_gates) <= set(old.scheduling_gates))
    if not same:
        raise ValueError(POD_UPDATE_FORBIDDEN)
    spec = attrs.evolve(
        old,
        containers=tuple(attrs.evolve(c, image=n.image) for c, n in zip(old.containers, new.containers)),
        init_containers=tuple(attrs.evolve(c, image=n.image) for c, n in zip(old.init_containers,
                                                                             new.init_containers)),
        tolerations=new.tolerations, scheduling_gates=new.scheduling_gates)
    meta = attrs.evolve(current.metadata, labels=dict(template.metadata.labels),
                        annotations=dict(template.metadata.annotations))
    return attrs.evolve(current, metadata=meta, spec=spec)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as err:
        raise PerfConfigError(f"{path}: cannot read: {err.strerror or err}") from None


@attrs.define
class _Background:
    """A timer chain run on the clock (churn, paced deletions); ``cancel`` ends it."""

    name: str
    cancelled: bool = False
    finished: bool = False
    timer: Any = None
    error: Exception | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.timer is not None:
            self.timer.cancel()


class WorkloadExecutor:
    """Runs ``workload`` of ``case``.

    ``registry`` gives the plugins (default: entry-point discovery);
    ``progress`` is called with a one-line status now and then (seconds
    apart, never in a tight loop); ``seed`` fixes generated names and
    tie-breaking; ``clock`` is the wall clock unless given (a FakeClock makes
    waits, backoffs and paced ops jump instead of sleep: for tests; the
    throughput it measures is then meaningless).  :meth:`check` raises :class:`Unsupported` or
    :class:`PerfConfigError`; :meth:`run` fills ``data_items``, ``samples``
    (pods/s), ``measured_pods`` and ``notes``, and raises :class:`WorkloadFailed`."""

    def __init__(self, case: TestCase, workload: Workload, registry: Registry | None = None,
                 progress: Callable[[str], None] | None = None, seed: int = 0, clock: Clock | None = None):
        self.case = case
        self.workload = workload
        self.registry = registry
        self.progress = progress
        self.seed = seed
        self.name = f"{case.name}/{workload.name}"
        self.params = Params(workload)
        self.ops: list[tuple[Op, dict[str, Any]]] = []
        self.config: KubeSchedulerConfiguration | None = None
        self.data_items: list[DataItem] = []
        self.samples: list[float] = []
        self.measured_pods = 0
        self.notes: list[str] = []
        # runtime state
        self.clock = clock or RealClock()
        self._never = threading.Event()  # an idle wait has nothing to be woken by but time
        self.cluster = MemoryCluster(self.clock, seed=seed)
        self._harness: Harness | None = None
        self._tracker: PodTracker | None = None
        self.namespaces: dict[str, int] = {}
        self._collector: ThroughputCollector | None = None
        self._counter: ScheduledCounter | None = None
        self._background: list[_Background] = []
        self._rng = random.Random(seed)
        self._node_names: set[str] = set()
        self._status = ""
        self._last_progress = 0.0

    @property
    def harness(self) -> Harness:
        """The scheduler and controllers over :attr:`cluster`, built by :meth:`check`."""
        if self._harness is None:
            raise RuntimeError(f"{self.name}: check() builds the scheduler; call it first")
        return self._harness

    @property
    def scheduler(self) -> Scheduler:
        return self.harness.scheduler

    @property
    def tracker(self) -> PodTracker:
        """Pods per namespace and scheduled counts, kept while :meth:`run` runs."""
        if self._tracker is None:
            raise RuntimeError(f"{self.name}: the pod tracker exists only while run() runs")
        return self._tracker

    # --- checking ----------------------------------------------------------------------------

    def check(self) -> None:
        """Resolve params, build the cluster and the scheduler, and find what
        kubesched cannot run; raises :class:`Unsupported` (the first reason)
        or :class:`PerfConfigError`."""
        unsupported = [op.opcode for op in self.case.ops if not op.supported]
        if unsupported:
            raise Unsupported("unsupported op: " + ", ".join(dict.fromkeys(unsupported)))
        if self.workload.threshold_metric != THROUGHPUT_METRIC:
            raise Unsupported(f"threshold metric {self.workload.threshold_metric} is not collected "
                              f"(kubesched measures {THROUGHPUT_METRIC})")
        self.ops = [(op, resolve_op(op, self.params)) for op in self.case.ops]
        unused = self.params.unused()
        if unused:
            raise PerfConfigError(f"the parameters {unused} are defined on workload {self.workload.name}, but unused")
        self.config = self._load_scheduler_config()
        try:
            self._harness = Harness(self.cluster, self.clock, self.config, self._registry(), seed=self.seed,
                                   controllers=[name for name in CONTROLLERS if name not in NOT_IN_SCHEDULER_PERF])
        except ConfigError as err:
            raise PerfConfigError(f"{self.case.name}: scheduler configuration: {err}") from None
        preemption = all("DefaultPreemption" in fw.plugins for fw in self.scheduler.profiles.values())
        for op, fields in self.ops:
            self._check_op(op, fields, preemption)

    def _load_scheduler_config(self) -> KubeSchedulerConfiguration:
        from ..plugins import DEFAULT_PLUGINS

        try:
            return load_config(self.case.scheduler_config_path, DEFAULT_PLUGINS)
        except ConfigError as err:
            raise PerfConfigError(f"{self.case.name}: schedulerConfigPath: {err}") from None

    def _registry(self) -> Registry:
        if self.registry is None:
            self.registry = Registry.discover()
        return self.registry

    def _check_op(self, op: Op, fields: dict[str, Any], preemption: bool) -> None:
        code = op.opcode
        if code == "createNodes":
            node_label_strategy(fields, self._rng)
            node_allocatable_strategy(fields.get("nodeAllocatableStrategy"))
            self._node_source(op, fields).document(0, max(fields.get("count", 0), 1))
        elif code == "createPods":
            self._check_create_pods(op, fields, preemption)
        elif code == "createPodSets":
            self._check_create_pods(op, fields["createPodsOp"], preemption)
        elif code == "updateAny":
            unknown = [name for name in fields.get("subresources") or () if name not in UPDATE_SUBRESOURCES]
            if unknown:
                raise Unsupported(f"unsupported op: updateAny with subresources {unknown} (kubesched updates "
                                  f"through {', '.join(UPDATE_SUBRESOURCES)} only)")
            source = ObjectSource(self.case.path(fields["templatePath"]), None)
            self._check_kind(code, source.document(0, max(fields.get("count", 1), 1)), source.where)
        elif code == "createAny":
            source = ObjectSource(self.case.path(fields["templatePath"]), None, fields.get("templateParams"))
            self._check_kind(code, source.document(0, max(fields.get("count", 1), 1)), source.where)
        elif code == "churn":
            for path in fields["templatePaths"]:
                source = ObjectSource(self.case.path(path), None, expand=False)
                doc = self._check_kind(code, source.document(), source.where)
                if doc.get("kind") == "Pod":
                    self._check_pod(code, doc, source.object(), preemption)
        elif code == "createNamespaces" and "namespaceTemplatePath" in fields:
            ObjectSource(self.case.path(fields["namespaceTemplatePath"]), "Namespace", expand=False).object()

    def _check_create_pods(self, op: Op, fields: dict[str, Any], preemption: bool) -> None:
        volumes = self._volume_sources(fields)
        if volumes is not None:
            volumes[0].object(), volumes[1].object()
        if "signatureBatchSize" in fields:
            raise Unsupported("unsupported op: createPods with signatureBatchSize (opportunistic batching)")
        source = self._pod_source(op, fields)
        count = max(fields.get("count", 0), 1)
        self._check_pod("createPods", source.document(0, count), source.object(0, count), preemption)

    def _check_kind(self, code: str, doc: dict[str, Any], where: str) -> dict[str, Any]:
        kind = doc.get("kind")
        resource = RESOURCES.get(kind) if isinstance(kind, str) else None
        if resource is None:
            raise Unsupported(f"unsupported op: {code} of a {kind} ({doc.get('apiVersion')}; "
                              "kubesched does not model that kind yet)")
        if doc.get("apiVersion") != resource.api_version and doc.get("apiVersion") not in resource.older_versions:
            raise Unsupported(f"unsupported op: {code} of {kind} {doc.get('apiVersion')} "
                              f"(kubesched reads {resource.api_version})")
        return doc

    def _check_pod(self, code: str, doc: dict[str, Any], pod: Pod, preemption: bool) -> None:
        """Pods kubesched's profiles cannot schedule as upstream would: claims without
        DynamicResources, pod (anti-)affinity without InterPodAffinity, spread
        constraints without PodTopologySpread, priorities (preemption) without
        DefaultPreemption."""
        pod_spec = doc.get("spec")
        spec = pod_spec if isinstance(pod_spec, dict) else {}
        if spec.get("resourceClaims") and not all("DynamicResources" in fw.plugins
                                                  for fw in self.scheduler.profiles.values()):
            raise Unsupported(f"unsupported op: {code} of pods with resourceClaims (the DynamicResources "
                              "plugin is not enabled)")
        affinity = pod.spec.affinity
        constraints = {
            "InterPodAffinity": "pod affinity" if affinity is not None and (
                affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None) else "",
            "PodTopologySpread": "topologySpreadConstraints" if pod.spec.topology_spread_constraints else "",
        }
        for plugin, what in constraints.items():
            if what and not all(plugin in fw.plugins for fw in self.scheduler.profiles.values()):
                raise Unsupported(f"unsupported op: {code} of pods with {what} (the {plugin} plugin that "
                                  "enforces it is not enabled, so the result would not be kube-scheduler's)")
        priority = pod.spec.priority or 0
        if not preemption and (priority > 0 or pod.spec.priority_class_name):
            raise Unsupported(f"unsupported op: {code} of pods with priority {priority} (they exercise "
                              "preemption; DefaultPreemption is not enabled)")

    def _volume_sources(self, fields: dict[str, Any]) -> tuple[ObjectSource, ObjectSource] | None:
        """The (PV, claim) templates of a createPods op, or None without them."""
        pv_path = fields.get("persistentVolumeTemplatePath")
        claim_path = fields.get("persistentVolumeClaimTemplatePath")
        if claim_path is None:
            return None
        if pv_path is None:
            raise PerfConfigError("persistentVolumeClaimTemplatePath needs persistentVolumeTemplatePath")
        return (ObjectSource(self.case.path(pv_path), "PersistentVolume"),
                ObjectSource(self.case.path(claim_path), "PersistentVolumeClaim"))

    def _node_source(self, op: Op, fields: dict[str, Any]) -> ObjectSource:
        path = fields.get("nodeTemplatePath")
        if path is None:
            return ObjectSource(None, "Node", manifest=default_node_manifest(f"node-{op.index}-"))
        return ObjectSource(self.case.path(path), "Node", fields.get("templateParams"))

    def _pod_source(self, op: Op, fields: dict[str, Any]) -> ObjectSource:
        path = fields.get("podTemplatePath")
        if path is not None:
            return ObjectSource(self.case.path(path), "Pod", fields.get("templateParams"))
        if self.case.default_pod_template_path is not None:
            return ObjectSource(self.case.default_pod_template_path, "Pod", fields.get("templateParams"))
        return ObjectSource(None, "Pod", manifest=default_pod_manifest())

    # --- running -----------------------------------------------------------------------------

    def run(self) -> None:
        """Run every op (call :meth:`check` first).  Raises :class:`WorkloadFailed`."""
        if self._harness is None:
            self.check()
        self._tracker = PodTracker(self.cluster)
        self.harness.start()
        try:
            for position, (op, fields) in enumerate(self.ops):
                self._status = f"op {position + 1}/{len(self.ops)} {op.opcode}"
                self._report(force=True)
                try:
                    getattr(self, "_op_" + op.opcode)(op, fields)
                except (PerfConfigError, TemplateError) as err:
                    raise WorkloadFailed(f"op {op.index} ({op.opcode}): {err}") from None
                except WorkloadFailed as err:
                    raise WorkloadFailed(f"op {op.index} ({op.opcode}): {err}") from None
            if self._collector is not None:
                self.notes.append("startCollectingMetrics without stopCollectingMetrics: stopped at the end")
                self._finish_collecting()
        finally:
            for task in self._background:
                task.cancel()
            self.tracker.stop()
            self.harness.controllers.stop()

    # -- the loop --

    def _loop(self, done: Callable[[], bool], what: str, deadline: float | None = None,
              on_step: Callable[[], None] | None = None, until_time: bool = False) -> None:
        """Drive the scheduler until ``done()``.  ``until_time``: ``done`` is a
        time limit, so an idle scheduler just waits.  Otherwise an idle
        scheduler with no timer that could change anything means the wait can
        never end: :class:`WorkloadFailed`.  ``deadline`` (seconds since the
        epoch; default now + :data:`WAIT_TIMEOUT`) bounds the wait."""
        harness = self.harness
        clock = self.clock
        step = harness.step
        now_fn = self.clock.now
        if deadline is None and not until_time:
            deadline = now_fn() + WAIT_TIMEOUT
        while not done():
            busy = step()
            now = now_fn()
            collector = self._collector
            if collector is not None and now >= collector.next_tick:
                collector.tick(now)
            if now - self._last_progress >= PROGRESS_PERIOD:
                self._report(now=now)
            if on_step is not None:
                on_step()
            if busy:
                if deadline is not None and now > deadline:
                    if until_time:
                        return
                    raise WorkloadFailed(f"timed out after {WAIT_TIMEOUT:g}s waiting for {what}")
                continue
            if done():
                return
            if harness.pending():
                continue
            wake = [IDLE_SLEEP + now]
            if deadline is not None:
                wake.append(deadline)
            if collector is not None:
                wake.append(collector.next_tick)
            next_timer = clock.next_deadline(include_background=True)
            if next_timer is not None:
                wake.append(next_timer)
            if not until_time and clock.next_deadline(include_background=False) is None:
                raise WorkloadFailed(f"stuck waiting for {what}: the scheduler has nothing left to try")
            if deadline is not None and now > deadline:
                if until_time:
                    return
                raise WorkloadFailed(f"timed out after {WAIT_TIMEOUT:g}s waiting for {what}")
            pause = min(wake) - now
            if pause > 0:
                clock.wait(pause, self._never)

    def _report(self, now: float | None = None, force: bool = False) -> None:
        now = self.clock.now() if now is None else now
        self._last_progress = now
        if self.progress is None:
            return
        extra = ""
        if self._collector is not None:
            extra = f", {self._collector.total} measured pods scheduled"
        self.progress(f"{self.name}: {self._status}{extra}")

    def _tick(self) -> None:
        if self._collector is not None:
            self._collector.tick()

    # -- namespaces --

    def _ensure_namespace(self, name: str, register: bool = True) -> None:
        if register and name not in self.namespaces:
            self.namespaces[name] = 0
        try:
            self.cluster.create(Namespace(metadata=ObjectMeta(name=name)))
        except AlreadyExists:
            pass

    # -- collecting --

    def _start_collecting(self, namespaces: list[str], selector: dict[str, str] | None) -> None:
        if self._collector is not None:
            raise WorkloadFailed("metrics collection is overlapping: a second collector was started "
                                 "before the previous one stopped")
        self._counter = self.tracker.counter(namespaces, selector)
        counter = self._counter
        gc.collect()  # as upstream: clean up after the setup phase before measuring
        self._collector = ThroughputCollector(lambda: counter.value, self.clock.now)
        self._collector.start()

    def _finish_collecting(self) -> None:
        if self._collector is None:
            raise WorkloadFailed("missing startCollectingMetrics operation before stopping")
        samples = self._collector.stop()
        self.measured_pods += self._collector.total
        if self._counter is not None:
            self.tracker.release(self._counter)
        self._collector = None
        self._counter = None
        self.samples.extend(samples)
        data = summarize(samples)
        if not data:
            self.notes.append("no measured pod got scheduled: no SchedulingThroughput sample")
            return
        self.data_items.append(DataItem(
            data=data, unit="pods/s",
            labels={"Metric": THROUGHPUT_METRIC, "Name": self.name},
        ))

    # --- the ops -----------------------------------------------------------------------------

    def _op_createNodes(self, op: Op, fields: dict[str, Any]) -> None:
        count = fields.get("count", 0)
        source = self._node_source(op, fields)
        strategy = node_allocatable_strategy(fields.get("nodeAllocatableStrategy"))
        extra_labels = node_label_strategy(fields, self._rng)
        create = self.cluster.create
        for index in range(count):
            node: Node = source.object(index, count)
            meta = node.metadata
            name = meta.name or self._node_name(meta.generate_name)
            labels = dict(meta.labels)
            labels["kubernetes.io/hostname"] = name
            if extra_labels is not None:
                labels.update(extra_labels(index))
            node = attrs.evolve(node, metadata=attrs.evolve(meta, name=name, generate_name=meta.generate_name,
                                                            labels=labels))
            try:
                if strategy is not None:
                    allocatable, csi_node = strategy
                    node = attrs.evolve(node, status=attrs.evolve(node.status,
                                                                  allocatable={**node.allocatable, **allocatable}))
                    create(attrs.evolve(csi_node, metadata=attrs.evolve(csi_node.metadata, name=name)))
                create(node)
            except ApiError as err:
                raise WorkloadFailed(f"creating node {name}: {err}") from None
            if index & 255 == 255:
                self._tick()

    def _node_name(self, prefix: str) -> str:
        while True:
            name = prefix + "".join(self._rng.choice(_NAME_ALPHABET) for _ in range(5))
            if name not in self._node_names:
                self._node_names.add(name)
                return name

    def _create_pods(self, source: ObjectSource, namespace: str, count: int, offset: int = 0,
                     volumes: tuple[ObjectSource, ObjectSource] | None = None) -> None:
        create = self.cluster.create
        fixed = None
        if source.static:
            pod = source.object()
            fixed = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace=namespace))
        for index in range(offset, offset + count):
            if fixed is not None:
                pod = fixed
            else:
                pod = source.object(index, count)
                pod = attrs.evolve(pod, metadata=attrs.evolve(pod.metadata, namespace=namespace))
            try:
                if volumes is not None:
                    pod = self._create_bound_volume(pod, volumes, namespace, index)
                create(pod)
            except ApiError as err:
                raise WorkloadFailed(f"creating pod {pod.metadata.name or pod.metadata.generate_name}: {err}") from None
            if index & 255 == 255:
                self._tick()

    def _create_bound_volume(self, pod: Pod, volumes: tuple[ObjectSource, ObjectSource], namespace: str,
                             index: int) -> Pod:
        """Upstream ``CreatePodWithPersistentVolume`` (bindVolume): claim
        ``pvc-<index>`` and PV ``<namespace>-vol-<index>`` bound to each other;
        returns ``pod`` using the claim as volume ``vol``."""
        pv_template, claim_template = volumes
        claim_name = f"pvc-{index}"
        pv: PersistentVolume = pv_template.object()
        pv_name = f"{namespace}-vol-{index}"
        spec = pv.spec
        if spec.csi is not None:
            spec = attrs.evolve(spec, csi=attrs.evolve(spec.csi, volume_handle=pv_name))
        elif spec.aws_elastic_block_store is not None:
            spec = attrs.evolve(spec, aws_elastic_block_store=attrs.evolve(spec.aws_elastic_block_store,
                                                                           volume_id=f"vol-{index}"))
        spec = attrs.evolve(spec, claim_ref=ObjectReference(api_version="v1", kind="PersistentVolumeClaim",
                                                            namespace=namespace, name=claim_name))
        claim: PersistentVolumeClaim = claim_template.object()
        claim = attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, name=claim_name, namespace=namespace),
                             spec=attrs.evolve(claim.spec, volume_name=pv_name),
                             status=attrs.evolve(claim.status, phase=CLAIM_BOUND))
        self.cluster.create(claim)
        self.cluster.create(attrs.evolve(pv, metadata=attrs.evolve(pv.metadata, name=pv_name), spec=spec,
                                         status=attrs.evolve(pv.status, phase=VOLUME_BOUND)))
        volume = Volume(name="vol", persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim_name))
        return attrs.evolve(pod, spec=attrs.evolve(pod.spec, volumes=(volume,)))

    def _op_createPods(self, op: Op, fields: dict[str, Any]) -> None:
        namespace = fields.get("namespace") or f"namespace-{op.index}"
        count = fields.get("count", 0)
        self._ensure_namespace(namespace)
        source = self._pod_source(op, fields)
        collect = bool(fields.get("collectMetrics"))
        if collect and self._collector is not None:
            raise WorkloadFailed("metrics collection is overlapping: a second collector was started "
                                 "before the previous one stopped")
        if fields.get("steadyState") and "duration" in fields:
            self._steady_state(source, namespace, count, fields["duration"], collect)
            return
        if fields.get("steadyState"):  # without a duration: create them and go on (see resolve_op)
            self._create_pods(source, namespace, count)
            if collect:
                self._start_collecting([namespace], None)
            self.namespaces[namespace] += count
            return
        self._create_pods(source, namespace, count, volumes=self._volume_sources(fields))
        if collect:
            self._start_collecting([namespace], None)
        if fields.get("skipWaitToCompletion"):
            self.namespaces[namespace] += count
            return
        tracker = self.tracker
        try:
            self._loop(lambda: tracker.scheduled[namespace] >= count,
                       f"{count} pods in namespace {namespace} to be scheduled")
        except WorkloadFailed as err:
            raise WorkloadFailed(f"{err}{self._pending_hint(namespace)}") from None
        if collect:
            self._finish_collecting()

    def _pending_hint(self, namespace: str) -> str:
        """``; at least pod NS/NAME is not scheduled: WHY`` for a failure message."""
        pod = self.tracker.pending_pod(namespace)
        if pod is None:
            return ""
        why = next((f": {c.reason}: {c.message}" for c in pod.status.conditions
                    if c.type == "PodScheduled" and c.message), "")
        return f"; at least pod {pod.key} is not scheduled{why}"

    def _steady_state(self, source: ObjectSource, namespace: str, count: int, duration: float,
                      collect: bool) -> None:
        counter = self.tracker.counter([namespace])
        self._create_pods(source, namespace, count)
        if collect:
            self._start_collecting([namespace], None)
        batch = {"start": 0, "created": count}
        end = self.clock.now() + duration

        def refill() -> None:
            if count and counter.value - batch["start"] >= count:
                for pod in self.cluster.list("Pod", namespace).items:
                    try:
                        self.cluster.delete("Pod", pod.metadata.name, namespace)
                    except NotFound:
                        pass
                batch["start"] = counter.value
                self._create_pods(source, namespace, count, offset=batch["created"])
                batch["created"] += count

        try:
            self._loop(lambda: self.clock.now() >= end, f"the steady state of namespace {namespace}",
                       deadline=end, on_step=refill, until_time=True)
        finally:
            self.tracker.release(counter)
        if collect:
            self._finish_collecting()
        if counter.value == 0:
            raise WorkloadFailed("no pod at all got scheduled, either because of a problem or because "
                                 "the test interval was too small")

    def _op_createAny(self, op: Op, fields: dict[str, Any]) -> None:
        count = fields.get("count", 1)
        source = ObjectSource(self.case.path(fields["templatePath"]), None, fields.get("templateParams"))
        namespace = fields.get("namespace") or ""
        for index in range(count):
            obj = source.object(index, count)
            resource = resource_of(obj)
            if namespace:
                if not resource.namespaced:
                    raise WorkloadFailed(f"namespace {namespace!r} set for {source.where}, but {resource.kind} "
                                         "is cluster-scoped")
                self._ensure_namespace(namespace)
                obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=namespace))
            elif resource.namespaced:
                raise WorkloadFailed(f"namespace not set for {source.where}, but {resource.kind} is namespaced")
            try:
                self.cluster.create(obj)
            except ApiError as err:
                raise WorkloadFailed(f"{source.where}: creating {resource.kind}: {err}") from None

    def _op_createNamespaces(self, op: Op, fields: dict[str, Any]) -> None:
        base = Namespace()
        if "namespaceTemplatePath" in fields:
            base = ObjectSource(self.case.path(fields["namespaceTemplatePath"]), "Namespace", expand=False).object()
        prefix = fields.get("prefix", "")
        for index in range(fields.get("count", 0)):
            name = f"{prefix}-{index}"
            if name not in self.namespaces:
                self.namespaces[name] = 0
            try:
                self.cluster.create(attrs.evolve(base, metadata=attrs.evolve(base.metadata, name=name)))
            except AlreadyExists:
                pass

    def _op_barrier(self, op: Op, fields: dict[str, Any]) -> None:
        namespaces = list(fields.get("namespaces") or self.namespaces)
        for namespace in namespaces:
            if namespace not in self.namespaces:
                raise WorkloadFailed(f"unknown namespace {namespace}")
        selector = fields.get("labelSelector")
        attempted = fields.get("stageRequirement", "Scheduled") == "Attempted"
        source = self.tracker.selected(selector) if selector else self.tracker
        counts = source.attempted if attempted else source.scheduled
        for namespace in namespaces:
            want = self.namespaces[namespace]

            def done(ns=namespace, want=want) -> bool:
                return counts[ns] >= want
            stage = "attempted" if attempted else "scheduled"
            try:
                self._loop(done, f"{want} pods in namespace {namespace} to be {stage}")
            except WorkloadFailed as err:
                raise WorkloadFailed(f"{err}{self._pending_hint(namespace)}") from None
        if not attempted:
            if fields.get("namespaces"):
                for namespace in namespaces:
                    self.namespaces.pop(namespace, None)
            else:
                self.namespaces.clear()

    def _op_sleep(self, op: Op, fields: dict[str, Any]) -> None:
        end = self.clock.now() + fields.get("duration", 0.0)
        self._loop(lambda: self.clock.now() >= end, "sleep", deadline=end, until_time=True)

    def _op_deletePods(self, op: Op, fields: dict[str, Any]) -> None:
        namespace = fields["namespace"]
        selector = fields.get("labelSelector")
        pods = [p for p in self.cluster.list("Pod", namespace).items if labels_match(p.metadata.labels, selector)]
        rate = fields.get("deletePodsPerSecond", 0)
        cluster = self.cluster

        def delete(pod: Pod) -> None:
            try:
                cluster.delete("Pod", pod.metadata.name, namespace)
            except NotFound:
                pass

        task = self._paced("deletePods", len(pods), rate, lambda index: delete(pods[index]))
        if not fields.get("skipWaitToCompletion"):
            self._wait_for(task, f"{len(pods)} pods of namespace {namespace} to be deleted")

    def _paced(self, name: str, count: int, rate: int, action: Callable[[int], None]) -> _Background:
        """Call ``action(0..count-1)``: all at once when ``rate`` (per second) is
        0, else one every ``1/rate`` seconds on the clock (upstream's ticker, so
        the first after one interval).  A :class:`WorkloadFailed` from
        ``action`` ends the chain and is kept in the task's ``error``."""
        task = _Background(name)
        if rate <= 0:
            for index in range(count):
                action(index)
            task.finished = True
            return task
        self._background.append(task)
        interval = 1.0 / rate
        start = self.clock.now()
        position = {"n": 0}

        def fire() -> None:
            if task.cancelled:
                return
            if position["n"] >= count:
                task.finished = True
                return
            try:
                action(position["n"])
            except WorkloadFailed as err:
                task.error = err
                task.finished = True
                return
            position["n"] += 1
            task.timer = self.clock.call_at(start + interval * (position["n"] + 1), fire)

        if count == 0:
            task.finished = True
        else:
            task.timer = self.clock.call_at(start + interval, fire)
        return task

    def _wait_for(self, task: _Background, what: str) -> None:
        """Drive the scheduler until ``task`` finished; re-raise its error."""
        self._loop(lambda: task.finished, what)
        if task.error is not None:
            raise task.error

    def _op_updateAny(self, op: Op, fields: dict[str, Any]) -> None:
        count = fields.get("count", 1)
        source = ObjectSource(self.case.path(fields["templatePath"]), None)
        namespace = fields.get("namespace") or ""
        subresources = tuple(fields.get("subresources") or ())
        cluster = self.cluster

        def update(index: int) -> None:
            template = source.object(index, count)
            resource = resource_of(template)
            if bool(namespace) != resource.namespaced:
                raise WorkloadFailed(f"{source.where}: {resource.kind} is "
                                     f"{'namespaced' if resource.namespaced else 'cluster-scoped'}, "
                                     f"but the op's namespace is {namespace!r}")
            name = template.metadata.name
            try:
                current = cluster.get(resource.kind, name, namespace)
                spec_updated = updated_object(current, template, subresources)
                cluster.update(spec_updated)
                if attrs.has(type(template)) and "status" in attrs.fields_dict(type(template)):
                    cluster.update_status(attrs.evolve(cluster.get(resource.kind, name, namespace),
                                                       status=template.status))
            except (ApiError, ValueError) as err:
                raise WorkloadFailed(f"{source.where}: updating {resource.kind} {name}: {err}") from None

        task = self._paced("updateAny", count, fields.get("updatePerSecond", 0), update)
        self._wait_for(task, f"{count} updates from {source.where}")

    def _op_createPodSets(self, op: Op, fields: dict[str, Any]) -> None:
        nested: dict[str, Any] = fields["createPodsOp"]
        for index in range(fields.get("count", 0)):
            self._op_createPods(op, {**nested, "namespace": f"{fields.get('namespacePrefix', '')}-{index}"})

    def _op_churn(self, op: Op, fields: dict[str, Any]) -> None:
        namespace = fields.get("namespace") or f"namespace-{op.index}"
        self._ensure_namespace(namespace, register=False)
        objects = []
        for path in fields["templatePaths"]:
            obj = ObjectSource(self.case.path(path), None, expand=False).object()
            if resource_of(obj).namespaced:
                obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=namespace))
            objects.append(obj)
        interval = (fields.get("intervalMilliseconds") or 500) / 1000.0
        number = fields.get("number", 0)
        mode = fields["mode"]
        cluster = self.cluster
        task = _Background("churn")
        self._background.append(task)
        slots: list[list[str]] = [[""] * max(number, 1) for _ in objects]
        state = {"count": 0, "start": self.clock.now()}

        def create(obj: Any) -> str:
            try:
                return cluster.create(obj).metadata.name
            except ApiError:
                return ""

        def fire() -> None:
            if task.cancelled:
                return
            count = state["count"]
            if mode == "create":
                for obj in objects:
                    create(obj)
            else:
                for position, obj in enumerate(objects):
                    slot = count % number
                    name = slots[position][slot]
                    if name:
                        try:
                            cluster.delete(resource_of(obj).kind, name, obj.metadata.namespace)
                        except ApiError:
                            pass
                        slots[position][slot] = ""
                    else:
                        slots[position][slot] = create(obj)
            state["count"] = count + 1
            if mode == "create" and number and state["count"] >= number:
                task.finished = True
                return
            task.timer = self.clock.call_at(state["start"] + interval * (state["count"] + 1), fire,
                                            background=True)

        task.timer = self.clock.call_at(state["start"] + interval, fire, background=True)

    def _op_startCollectingMetrics(self, op: Op, fields: dict[str, Any]) -> None:
        self._start_collecting(list(fields["namespaces"]), fields.get("labelSelector"))

    def _op_stopCollectingMetrics(self, op: Op, fields: dict[str, Any]) -> None:
        self._finish_collecting()

    # -- DRA --

    def _op_createResourceDriver(self, op: Op, fields: dict[str, Any]) -> None:
        """Upstream's test driver: one ResourceSlice per node whose name matches
        the ``nodes`` glob, named after the node, with ``maxClaimsPerNode``
        devices ``instance-<i>`` (model A100, family GPU, driverVersion 1.2.3,
        ``dra.example.com/numa`` i, memory 1Gi).  With the DRADeviceBindingConditions
        gate the devices need attaching first: binding condition
        :data:`DEVICE_ATTACHED`, binding failure condition :data:`ATTACHMENT_FAILED`
        (what ``updateDeviceConditions`` reports)."""
        driver = fields["driverName"]
        count = fields.get("maxClaimsPerNode", 0)
        gates = {**self.case.feature_gates, **self.workload.feature_gates}
        binding = {"bindsToNode": True, "bindingConditions": [DEVICE_ATTACHED],
                   "bindingFailureConditions": [ATTACHMENT_FAILED]} if gates.get("DRADeviceBindingConditions") else {}
        for node in sorted(self.cluster.list("Node").items, key=lambda n: n.metadata.name):
            if not fnmatch.fnmatchcase(node.metadata.name, fields["nodes"]):
                continue
            name = node.metadata.name
            devices = [{
                "name": f"instance-{i}",
                "attributes": {"model": {"string": "A100"}, "family": {"string": "GPU"},
                               "driverVersion": {"version": "1.2.3"}, "dra.example.com/numa": {"int": i}},
                "capacity": {"memory": {"value": "1Gi"}},
                **binding,
            } for i in range(count)]
            self.cluster.create(from_manifest({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                "spec": {"driver": driver, "nodeName": name, "pool": {"name": name, "resourceSliceCount": 1},
                         "devices": devices},
            }))

    def _op_updateDeviceConditions(self, op: Op, fields: dict[str, Any]) -> None:
        """Play the driver of devices with binding conditions for ``duration``:
        whenever a claim of ``namespace`` is allocated devices that have binding
        conditions, set ``conditionType`` to ``conditionStatus`` for each of them
        in the claim's ``status.devices``.  (kubesched's reading of upstream's
        op: it runs for the whole duration, as claims a failure deallocated are
        allocated again and reported again.)"""
        namespace = fields["namespace"]
        condition = Condition(type=fields["conditionType"], status=fields["conditionStatus"], reason="SchedulerPerf")
        end = self.clock.now() + fields.get("duration", 0.0)

        def report() -> None:
            for claim in self.cluster.list("ResourceClaim", namespace).items:
                wanted = {(r.driver, r.pool, r.device) for r in allocated_results(claim) if r.binding_conditions}
                reported = {(d.driver, d.pool, d.device) for d in claim.status.devices
                            if any(c.type == condition.type for c in d.conditions)}
                if wanted - reported:
                    stamped = attrs.evolve(condition, last_transition_time=self.clock.now())
                    devices = tuple(AllocatedDeviceStatus(driver=d, pool=p, device=n, conditions=(stamped,))
                                    for d, p, n in sorted(wanted))
                    try:
                        self.cluster.update_status(attrs.evolve(claim, status=attrs.evolve(claim.status, devices=devices)))
                    except Conflict:
                        pass  # the scheduler changed it meanwhile: looked at again on the next step

        report()
        self._loop(lambda: self.clock.now() >= end, "updateDeviceConditions", deadline=end, on_step=report,
                   until_time=True)

    def _op_checkPodScheduled(self, op: Op, fields: dict[str, Any]) -> None:
        """``scheduled`` true: every pod of ``namespace`` must be scheduled within
        ``duration``; false: none may be, for all of ``duration``."""
        namespace = fields["namespace"]
        end = self.clock.now() + fields.get("duration", 0.0)

        def pods() -> list[Pod]:
            return self.cluster.list("Pod", namespace).items

        if fields.get("scheduled"):
            self._loop(lambda: all(p.spec.node_name for p in pods()) or self.clock.now() >= end,
                       f"the pods of namespace {namespace} to be scheduled", deadline=end, until_time=True)
            waiting = [p.key for p in pods() if not p.spec.node_name]
            if waiting:
                raise WorkloadFailed(f"checkPodScheduled: {len(waiting)} pod(s) of namespace {namespace} not "
                                     f"scheduled within {fields.get('duration', 0.0):g}s{self._pending_hint(namespace)}")
            return
        self._loop(lambda: any(p.spec.node_name for p in pods()) or self.clock.now() >= end,
                   f"{fields.get('duration', 0.0):g}s", deadline=end, until_time=True)
        bound = [p.key for p in pods() if p.spec.node_name]
        if bound:
            raise WorkloadFailed(f"checkPodScheduled: pod {bound[0]} was scheduled, expected none of namespace "
                                 f"{namespace} to be")

    def _op_allocResourceClaims(self, op: Op, fields: dict[str, Any]) -> None:
        """Allocate every unallocated claim of ``namespace`` (all when empty) on a
        random node, one at a time, without a pod (upstream's allocResourceClaims)."""
        from kubesched.core.dra.allocator.allocator import AllocatedState, Allocator
        from kubesched.core.dra.selectors import SelectorCache

        namespace = fields.get("namespace") or None
        claims = sorted(self.cluster.list("ResourceClaim", namespace).items, key=lambda c: c.key)
        nodes = sorted(self.cluster.list("Node").items, key=lambda n: n.metadata.name)
        allocated = AllocatedState.from_claims(self.cluster.list("ResourceClaim").items)
        allocator = Allocator(self.cluster.list("ResourceSlice").items,
                              {c.metadata.name: c for c in self.cluster.list("DeviceClass").items},
                              allocated, SelectorCache(), self.cluster.list("DeviceTaintRule").items,
                              now=self.clock.now())
        for claim in claims:
            if claim.status.allocation is not None:
                continue
            self._rng.shuffle(nodes)
            for node in nodes:
                results = allocator.allocate(node, [claim])
                if results:
                    allocation = results[0]
                    self.cluster.update_status(attrs.evolve(claim, status=attrs.evolve(claim.status,
                                                                                       allocation=allocation)))
                    allocated.add(allocation)
                    break
            else:
                raise WorkloadFailed(f"could not allocate claim {claim.key}")
