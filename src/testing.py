"""The plugin author's kit: object builders, a test configuration, pytest fixtures.

Builders make one object in one line each::

    node("n1", cpu="4", memory="8Gi", labels={"zone": "a"}, taints=[("gpu", "true", "NoSchedule")])
    pod("web", cpu="500m", memory="1Gi", priority=10, node_selector={"zone": "a"}, claims=["web-gpu"])
    pod("db", volumes=[claim_volume("data", "data-db")]); claim("data-db", "10Gi", "fast")
    persistent_volume("pv1", "20Gi", "fast", node_affinity={"kubernetes.io/hostname": ["n1"]})
    device_class("gpu.example.com")
    resource_slice("n1", [device("gpu-0", capacity={"memory": "40Gi"})])
    resource_claim("web-gpu", count=1, capacity={"memory": "10Gi"}); resource_claim_template("one-gpu")

GPUs exactly as ``kubesched trace alibaba-openb`` writes them (one shareable
device per GPU with a ``compute`` capacity and a ``model``), and a trace to replay::

    gpu_node("n1", gpus=4, model="V100M16")   # [Node, ResourceSlice]
    gpu_pod("p", milli=500)                   # [ResourceClaim, Pod]: half a GPU
    gpu_class(); typical_pods_configmap([TypicalPod(PodShape(1000, 1, 500), 1.0)])
    convert(nodes_csv, pods_csv, trace_dir); replay(trace_dir, config_path)

Quantities are Kubernetes strings; everything else is passed through the same
manifest conversion as files, so a builder object is exactly what a manifest
with those fields would give.  :func:`config` writes a configuration that
scores with just the plugins under test; :func:`node_scores` shows what each
Score plugin gave every node for a pod.

A plugin alone, on the framework Handle a Scheduler gives its profile, over
an embedded cluster holding some objects, with a snapshot the test sets::

    bench = PluginBench(MyPlugin, {"weight": 2}, objects=[claim("data")])
    nodes = bench.use_nodes([NodeInfo(node("a")), NodeInfo(node("b"), [pod("x", node_name="b")])])
    state = CycleState(); bench.plugin.pre_filter(state, pod("p"), nodes)

Installed kubesched is also a pytest plugin (entry point ``pytest11``): the
fixture ``simulate`` builds a :class:`~kubesched.drivers.simulation.Simulation` from
objects, plugin classes and a configuration, and runs it::

    def test_prefers_premium(simulate):
        sim = simulate(node("a"), node("b", labels={"tier": "premium"}), pod("web"),
                       plugins=[PreferLabel], config=config(score={"PreferLabel": 1}))
        assert sim.placements() == {"default/web": "b"}
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Mapping, Sequence

from .core.api import RESOURCES, from_manifest
from .core.api.core_v1 import Pod
from .core.clock import FakeClock
from .core.cluster.informer import Informers
from .core.cluster.lookup import resolve
from .core.cluster.memory import MemoryCluster
from .core.dra.manager import DRAManager
from .core.features import FeatureGates
from .core.framework.handle import profile_handle
from .core.framework.nodeinfo import NodeInfo
from .core.framework.podgroups import PodGroupManager
from .core.framework.registry import build_args, implemented_hooks
from .core.framework.snapshot import Snapshot
from .core.gpu.fragmentation import NAMESPACE, TRACE_CONFIGMAP, TypicalPod, typical_pods_yaml
from .core.scheduler.queue import Nominator
from .trace import openb
from .trace.openb import convert
from .trace.replay import replay

__all__ = [
    "DRIVER", "PluginBench", "claim", "claim_volume", "config", "convert", "csi_node", "device", "device_class",
    "ephemeral_volume", "gpu_class", "gpu_node", "gpu_pod", "node", "node_scores", "persistent_volume", "pod",
    "replay", "resource_claim", "resource_claim_template", "resource_slice", "storage_class",
    "typical_pods_configmap",
]


def node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = 110,
    labels: dict[str, str] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
    extra_resources: dict[str, str] | None = None,
    **status: Any,
):
    """A Ready core/v1 Node with the given allocatable.  ``taints`` are (key, value, effect)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_resources or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return from_manifest({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": allocatable, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True"}], **status},
    })


def pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    priority: int | None = None,
    node_name: str = "",
    scheduler_name: str | None = None,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict] | None = None,
    affinity: dict | None = None,
    host_ports: Iterable[int] = (),
    extra_resources: dict[str, str] | None = None,
    scheduling_gates: Iterable[str] = (),
    claims: Iterable[str] = (),
    pod_group: str | None = None,
    **spec: Any,
):
    """A core/v1 Pod with one container requesting ``cpu``/``memory`` (and
    ``extra_resources``), using the ResourceClaims named in ``claims``, a
    member of PodGroup ``pod_group`` (``spec.schedulingGroup``) when given;
    other keyword arguments are raw camelCase spec fields.  Raises TypeError
    for a snake_case keyword that is not a parameter (``resource_claims=``:
    a misspelling, not a spec field - it would be kept unused)."""
    misspelled = sorted(key for key in spec if "_" in key)
    if misspelled:
        raise TypeError(f"pod() got unexpected keyword argument(s) {', '.join(misspelled)}: its parameters are "
                        "snake_case (claims=, pod_group=, ...), other keywords are camelCase spec fields")
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra_resources or {})
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10.1"}
    if requests:
        container["resources"] = {"requests": requests}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    body: dict[str, Any] = {"containers": [container], **spec}
    for key, value in (
        ("priority", priority),
        ("nodeName", node_name or None),
        ("schedulerName", scheduler_name),
        ("nodeSelector", node_selector),
        ("tolerations", tolerations),
        ("affinity", affinity),
    ):
        if value is not None:
            body[key] = value
    if scheduling_gates:
        body["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if pod_group is not None:
        body["schedulingGroup"] = {"podGroupName": pod_group}
    if claims:
        container.setdefault("resources", {})["claims"] = [{"name": c} for c in claims]
        body["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return from_manifest({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": body,
    })


def pod_group(name: str, min_count: int | None = None, topology_key: str | None = None, namespace: str = "default",
              priority: int | None = None, priority_class: str | None = None, disruption_mode: str | None = None,
              **spec: Any):
    """A scheduling.k8s.io/v1beta1 PodGroup: a gang of ``min_count`` pods, or a
    basic group when ``min_count`` is None; ``topology_key``: all members in
    one domain of that node label; ``disruption_mode``: "single" or "all";
    other keyword arguments are raw camelCase spec fields."""
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    body: dict[str, Any] = {"schedulingPolicy": policy, **spec}
    if topology_key is not None:
        body["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    if priority is not None:
        body["priority"] = priority
    if priority_class is not None:
        body["priorityClassName"] = priority_class
    if disruption_mode is not None:
        body["disruptionMode"] = {disruption_mode: {}}
    return from_manifest({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": namespace}, "spec": body})


def persistent_volume(
    name: str,
    storage: str = "10Gi",
    storage_class: str = "",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    node_affinity: dict[str, list[str]] | None = None,
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    claim: tuple[str, ...] | None = None,
    reclaim_policy: str = "Retain",
    **spec: Any,
):
    """A core/v1 PersistentVolume.  ``node_affinity`` maps label keys to
    allowed values (one required term); ``claim`` is a (namespace, name) or
    (namespace, name, uid) claimRef (pre-binding, or binding); other keyword arguments are raw camelCase spec
    fields (e.g. ``csi={"driver": "d", "volumeHandle": "h"}``)."""
    body: dict[str, Any] = {"capacity": {"storage": storage}, "accessModes": list(access_modes),
                            "persistentVolumeReclaimPolicy": reclaim_policy, **spec}
    if storage_class:
        body["storageClassName"] = storage_class
    if node_affinity:
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": k, "operator": "In", "values": list(v)} for k, v in node_affinity.items()]}]}}
    if claim is not None:
        body["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": claim[0], "name": claim[1],
                            **({"uid": claim[2]} if len(claim) > 2 else {})}
    return from_manifest({"apiVersion": "v1", "kind": "PersistentVolume",
                          "metadata": {"name": name, "labels": labels or {}},
                          "spec": body, "status": {"phase": phase} if phase else {}})


def claim(
    name: str,
    storage: str = "1Gi",
    storage_class: str | None = None,
    namespace: str = "default",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    volume_name: str = "",
    annotations: dict[str, str] | None = None,
    uid: str = "",
    **spec: Any,
):
    """A core/v1 PersistentVolumeClaim (``storage_class`` None: not set, the default class applies)."""
    body: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": storage}}, **spec}
    if storage_class is not None:
        body["storageClassName"] = storage_class
    if volume_name:
        body["volumeName"] = volume_name
    return from_manifest({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {},
                                       "uid": uid},
                          "spec": body})


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    binding_mode: str = "WaitForFirstConsumer",
    allowed_topologies: dict[str, list[str]] | None = None,
    default: bool = False,
    reclaim_policy: str = "",
):
    """A storage.k8s.io/v1 StorageClass; ``allowed_topologies`` maps label keys to values (one term)."""
    body: dict[str, Any] = {"provisioner": provisioner, "volumeBindingMode": binding_mode}
    if allowed_topologies:
        body["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": k, "values": list(v)} for k, v in allowed_topologies.items()]}]
    if reclaim_policy:
        body["reclaimPolicy"] = reclaim_policy
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": name, "annotations": annotations}, **body})


def csi_node(name: str, limits: dict[str, int | None] | None = None, migrated_plugins: Iterable[str] = (),
             topology_keys: dict[str, list[str]] | None = None):
    """A storage.k8s.io/v1 CSINode for node ``name``: ``limits`` maps drivers to
    attach counts (None: no limit), ``topology_keys`` drivers to their keys."""
    drivers: dict[str, dict[str, Any]] = {}
    for driver, count in (limits or {}).items():
        drivers[driver] = {"name": driver, "nodeID": name}
        if count is not None:
            drivers[driver]["allocatable"] = {"count": count}
    for driver, keys in (topology_keys or {}).items():
        drivers.setdefault(driver, {"name": driver, "nodeID": name})["topologyKeys"] = list(keys)
    annotations = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(migrated_plugins)} if migrated_plugins else {}
    return from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                          "metadata": {"name": name, "annotations": annotations},
                          "spec": {"drivers": list(drivers.values())}})


def claim_volume(name: str, claim_name: str) -> dict[str, Any]:
    """A pod volume (raw, for ``pod(..., volumes=[...])``) using claim ``claim_name``."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral_volume(name: str, storage: str = "1Gi", storage_class: str | None = None,
                     access_modes: Iterable[str] = ("ReadWriteOnce",)) -> dict[str, Any]:
    """A generic ephemeral pod volume (raw): its claim is ``<pod name>-<name>``."""
    spec: dict[str, Any] = {"accessModes": list(access_modes), "resources": {"requests": {"storage": storage}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}


# --- Dynamic Resource Allocation -------------------------------------------------------------

#: The driver (and DeviceClass) the DRA builders use unless told otherwise.
DRIVER = "gpu.example.com"


def device_class(name: str = DRIVER, driver: str | None = None, selectors: Iterable[str] = ()):
    """A DeviceClass selecting the devices of ``driver`` (default: ``name``)
    plus the CEL ``selectors``."""
    expressions = [f"device.driver == '{driver or name}'", *selectors]
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]},
    })


def device(name: str, attributes: Mapping[str, Any] | None = None, capacity: Mapping[str, str] | None = None,
           shared: bool = False, **fields: Any) -> dict:
    """One device of a ResourceSlice (a manifest dict): ``attributes`` as plain
    values (str, bool, int), ``capacity`` as quantities; ``shared`` allows
    multiple allocations (consumable capacity)."""
    kinds = {bool: "bool", int: "int", str: "string"}
    body: dict[str, Any] = {"name": name, **fields}
    if attributes:
        body["attributes"] = {k: {kinds[type(v)]: v} for k, v in attributes.items()}
    if capacity:
        body["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if shared:
        body["allowMultipleAllocations"] = True
    return body


def resource_slice(node_name: str, devices: Iterable[dict], driver: str = DRIVER, name: str | None = None):
    """A ResourceSlice publishing ``devices`` (see :func:`device`) of ``node_name``, one pool per node."""
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-{driver}"},
        "spec": {"driver": driver, "nodeName": node_name,
                 "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                 "devices": list(devices)},
    })


def resource_claim(name: str, device_class_name: str = DRIVER, count: int = 1, namespace: str = "default",
                   selectors: Iterable[str] = (), capacity: Mapping[str, str] | None = None):
    """A ResourceClaim with one request ``req`` for ``count`` devices of the
    class, filtered by CEL ``selectors``, each consuming ``capacity``."""
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": _claim_spec(device_class_name, count, selectors, capacity),
    })


def _claim_spec(device_class_name: str, count: int, selectors: Iterable[str],
                capacity: Mapping[str, str] | None) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if capacity:
        exactly["capacity"] = {"requests": dict(capacity)}
    return {"devices": {"requests": [{"name": "req", "exactly": exactly}]}}


def resource_claim_template(name: str, device_class_name: str = DRIVER, count: int = 1, namespace: str = "default",
                            selectors: Iterable[str] = ()):
    """A ResourceClaimTemplate whose claims have one request ``req`` for
    ``count`` devices of the class, filtered by CEL ``selectors`` (what a pod's
    or a PodGroup's ``resourceClaimTemplateName`` names)."""
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": _claim_spec(device_class_name, count, selectors, None)},
    })


# --- GPUs as the trace converter writes them (kubesched.trace.openb) -------------------------


def gpu_node(name: str, gpus: int = 2, model: str = "T4", cores: int = 32, memory_mib: int = 131072) -> list:
    """A Node with ``cores`` CPUs and ``memory_mib`` MiB, and the ResourceSlice
    of its ``gpus`` GPUs of ``model`` (``gpu-0``...; none without GPUs)."""
    node = openb.TraceNode(name, cores * 1000, memory_mib, gpus, model if gpus else "")
    objects = [from_manifest(openb.node_manifest(node))]
    return objects + [from_manifest(openb.slice_manifest(node))] if gpus else objects


def gpu_pod(name: str, milli: int = 1000, count: int = 1, cores: int = 4, models: tuple[str, ...] = (),
            memory_mib: int = 8192) -> list:
    """A pod of ``cores`` CPUs asking for ``count`` GPUs of ``milli`` milli-GPU
    each (any of ``models``), preceded by its ResourceClaim (none for ``count`` 0)."""
    pod = openb.TracePod(name, cores * 1000, memory_mib, count, milli if count else 0, models)
    objects = [from_manifest(openb.claim_manifest(pod))] if count else []
    return objects + [from_manifest(openb.pod_manifest(pod))]


def gpu_class():
    """The DeviceClass of the trace's GPUs."""
    return from_manifest(openb.device_class())


def typical_pods_configmap(typical: list[TypicalPod]):
    """The ConfigMap a converted trace carries, holding only the ``typical`` pods
    (what FGD-like plugins read by default)."""
    return from_manifest({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": TRACE_CONFIGMAP, "namespace": NAMESPACE},
                          "data": {"typical-pods.yaml": typical_pods_yaml(typical)}})


# --- configurations and scores ---------------------------------------------------------------


def config(score: Mapping[str, int] | None = None, args: Mapping[str, dict] | None = None,
           only: bool = True, percentage_of_nodes_to_score: int = 100) -> dict:
    """A KubeSchedulerConfiguration (as a dict) with the default profile plus
    the Score plugins ``score`` (name -> weight) - alone when ``only`` (the
    default Score plugins disabled) - every node scored, and ``args`` as
    pluginConfig (name -> args)."""
    plugins: dict[str, Any] = {}
    if score:
        plugins["multiPoint"] = {"enabled": [{"name": n, "weight": w} for n, w in score.items()]}
        if only:
            plugins["score"] = {"enabled": [{"name": n, "weight": w} for n, w in score.items()],
                                "disabled": [{"name": "*"}]}
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": plugins}
    if args:
        profile["pluginConfig"] = [{"name": n, "args": a} for n, a in args.items()]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": percentage_of_nodes_to_score, "profiles": [profile]}


def node_scores(sim, pending: Pod | str) -> dict[str, dict[str, int]]:
    """What each Score plugin (weighted, after NormalizeScore) gives every
    feasible node for a pending pod in ``sim``'s current state, without
    scheduling it: ``{node: {plugin: score}}`` (empty when no node fits).

    ``pending`` is a stored pod's name (``NAMESPACE/NAME``, or ``NAME`` when one
    namespace holds it) or a Pod: the stored one of its name when there is
    one, else the pod as given, scored as if it arrived now (the claims it
    names must exist in the cluster; it is not created).  Raises
    :class:`~kubesched.core.cluster.lookup.NoSuchName` for a name no pod has
    (with the nearest names) and :class:`ValueError` for a pod already bound
    to a node (only a pending pod is scored)."""
    sim.start()
    sim.harness.informers.pump()
    stored = {p.key: p for p in sim.pods()}
    if isinstance(pending, str):
        target = stored[resolve("pod", pending, stored, where="in the simulation")]
    else:
        target = stored.get(pending.key, pending)
    if target.spec.node_name:
        raise ValueError(f"node_scores: pod {target.key} is bound to node {target.spec.node_name}; only a pending "
                         "pod is scored (give a new pod or one still pending)")
    return sim.scheduler.score_nodes(target)


# --- one plugin on a real Handle -------------------------------------------------------------


class PluginBench:
    """One plugin built as a Scheduler builds its profile's plugins, on a real framework Handle.

    ``PluginBench(MyPlugin, args, objects=[...])`` creates ``objects`` in a
    :class:`~kubesched.core.cluster.memory.MemoryCluster` on ``clock`` (a
    :class:`~kubesched.core.clock.FakeClock` at 0 s unless given), decodes
    ``args`` (a pluginConfig ``args`` dict, None: the defaults) into the
    plugin's args class as a profile does (:class:`PluginError` naming the
    field when they do not decode) and builds ``plugin`` with ``handle``,
    made by :func:`~kubesched.core.framework.handle.profile_handle` as a
    Scheduler makes each profile's: an EventRecorder reporting as
    ``profile_name``, shared informers over the cluster (started and synced
    once the plugin is built, so the kinds it asked for and the kinds of its
    ``events_to_register`` are listed and watched, as a Scheduler does), the DRA
    manager, a PodGroupManager following the cluster's pods (nothing is ever
    assumed: there is no scheduler cache), a Nominator, ``random.Random(seed)``
    and ``features`` (a :class:`~kubesched.core.features.FeatureGates`,
    default: the newest release's defaults) for the cluster and the handle.

    The handle's snapshot belongs to the test: empty until :meth:`use_nodes`
    sets it, as the scheduler cache sets it when a cycle starts.  Objects
    written to ``cluster`` later reach the informers' stores on
    ``informers.pump()``.
    """

    def __init__(self, cls: type, args: Mapping[str, Any] | None = None, objects: Iterable[Any] = (),
                 clock: FakeClock | None = None, profile_name: str = "default-scheduler", seed: int = 0,
                 features: FeatureGates | None = None):
        self.clock = clock if clock is not None else FakeClock()
        self.cluster = MemoryCluster(self.clock, features=features)
        for obj in objects:
            self.cluster.create(obj)
        self.informers = Informers(self.cluster)
        self.snapshot = Snapshot()
        dra = DRAManager(self.informers)
        self.pod_groups = PodGroupManager(self.informers, lambda pod: None)
        self.informers.add_handlers("Pod", self.pod_groups.add_pod, self.pod_groups.update_pod,
                                    self.pod_groups.delete_pod)
        self.handle = profile_handle(self.cluster, self.informers, self.clock, profile_name, lambda: self.snapshot,
                                     dra=lambda: dra, pod_groups=self.pod_groups, rng=random.Random(seed),
                                     nominator=Nominator(), features=self.cluster.features)
        self.plugin = cls(build_args(cls, dict(args) if args is not None else None), self.handle)
        if "events_to_register" in implemented_hooks(cls):
            for registered in self.plugin.events_to_register():
                if registered.event.resource in RESOURCES:
                    self.informers.store(registered.event.resource)
        self.informers.start()
        self.informers.pump()

    def use_nodes(self, infos: Sequence[NodeInfo]) -> list[NodeInfo]:
        """Make ``handle.snapshot`` hold exactly ``infos``, in that order (rows
        of its NodeTable likewise), and return the snapshot's node list: what
        the framework hands PreFilter and PreScore as all nodes.  The same
        NodeInfos again keep the snapshot and its table (rows of NodeInfos
        changed since are refreshed), as the scheduler cache keeps them
        between cycles while no node comes or goes."""
        infos = list(infos)
        nodes = self.snapshot.nodes
        if len(infos) == len(nodes) and all(given is kept for given, kept in zip(infos, nodes)):
            self.snapshot.refresh(info.name for info in infos)
        else:
            self.snapshot.rebuild(infos)
        return self.snapshot.nodes


# --- the pytest plugin (entry point pytest11) ------------------------------------------------

try:
    import pytest
except ImportError:  # the builders work without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def simulate():
        """``simulate(*objects, plugins=(), config=None, seed=0, until=None)``:
        a Simulation of ``objects`` with the discovered plugins plus the
        classes in ``plugins``, scheduled until nothing more happens (or
        ``until`` seconds of simulated time).  ``config``: a
        KubeSchedulerConfiguration dict (see :func:`config`) or path."""
        from kubesched.drivers.simulation import Simulation

        from .core.framework.registry import Registry

        def run(*objects, plugins: Iterable[type] = (), config: Any = None, seed: int = 0,
                until: float | None = None):
            registry = Registry.discover()
            for plugin in plugins:
                registry.add(plugin)
            sim = Simulation(config=config, registry=registry, seed=seed)
            sim.create(objects)
            sim.run(until=sim.clock.now() + until if until is not None else None)
            return sim

        return run
