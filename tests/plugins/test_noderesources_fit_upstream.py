"""NodeResourcesFit against upstream's own tables.

Ported whole from kubernetes/kubernetes ``pkg/scheduler/framework/plugins/noderesources/fit_test.go``, the newest
stored version (the one with pod-level resources, DRAExtendedResource and ``TestFitSignPod``; the search index
holds it as file id 789199930 and names no commit for it; the older stored version is at commit
24fbb13eafec665e6f4b64961930774babd8b6d1, whose cases it contains): TestEnoughRequests, TestNotEnoughRequests,
TestStorageRequests, TestRestartableInitContainers, TestFitScore, TestEventsToRegister,
Test_isSchedulableAfterPodChange, Test_isSchedulableAfterNodeChange, Test_isSchedulableAfterDeviceClassChange,
TestIsFit and TestHaveAnyRequestedResourcesIncreased.

What a case asserts is what upstream's asserts of the plugin's answer: Filter's code and reasons, Score's
numbers, the queueing hints.  Left out, said here: upstream's ``wantInsufficientResources`` (the internal
``fitsRequest`` list; its ``Unresolvable`` flag is the status code asserted), TestPreFilterDisabled (a missing
PreFilter state is recomputed here), the "backoff-wrong-*" hint cases (Go's type assertions on ``interface{}``),
the SidecarContainers-disabled cases (the gate is GA and locked in every release kubesched emulates),
TestFitSignPod (pod signatures for batching: kubesched has none) and the benchmarks.  A gate a case switches off
is switched off through the emulated release (DRAExtendedResource off at 1.36, InPlacePodVerticalScaling off at
1.34)."""

from __future__ import annotations

import attrs
import pytest

from kubesched import pod_requests
from kubesched.core.api.manifests import from_manifest
from kubesched.core.features import FeatureGates
from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import ASSIGNED_POD, NODE, ActionType, ClusterEvent, QueueingHint
from kubesched.plugins.noderesources.fit import NodeResourcesFit, have_any_requested_resources_increased, is_fit
from kubesched.testing import device, pod, resource_slice

from .helpers import filter_all, info, make, on, run_pre_filter, score_all

U, UU, OK = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
EXT_A, EXT_B, HUGE = "example.com/aaa", "example.com/bbb", "hugepages-2Mi"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
DRA_RESOURCE = "extended.resource.dra.io/something"
DRA_OFF = FeatureGates("1.36", {"DRAExtendedResource": False})
#: resource names as keyword arguments
ALIASES = {"example_com_aaa": EXT_A, "example_com_bbb": EXT_B, "ephemeral_storage": "ephemeral-storage",
           "hugepages_2Mi": HUGE}


def device_class_with_extended_resource():
    """upstream's ``deviceClassWithExtendResourceName``: every device, serving ``DRA_RESOURCE``."""
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                          "metadata": {"name": "device-class-name"},
                          "spec": {"extendedResourceName": DRA_RESOURCE}})


def raw_node(name: str = "n", pods: int | str = 32, **allocatable: str):
    """A Node whose capacity and allocatable are exactly ``allocatable`` (plus ``pods``): upstream's
    ``st.MakeNode().Capacity(...)`` (32 pods) and ``makeAllocatableResources``."""
    resources = {"pods": str(pods)}
    resources.update({ALIASES.get(key, key): value for key, value in allocatable.items()})
    return from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
                          "status": {"capacity": resources, "allocatable": resources,
                                     "conditions": [{"type": "Ready", "status": "True"}]}})


def upstream_node(pods: int = 32, **extra: str):
    """makeAllocatableResources(10, 20, pods, 5, 20, 5): 10 milli-CPU, 20 bytes of memory, 5 example.com/aaa,
    20 bytes of ephemeral storage, 5 bytes of hugepages-2Mi."""
    return from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {}},
                          "status": {"allocatable": {"cpu": "10m", "memory": "20", "pods": str(pods), EXT_A: "5",
                                                     "ephemeral-storage": "20", HUGE: "5", **extra},
                                     "conditions": [{"type": "Ready", "status": "True"}]}})


def res(cpu: int = 0, mem: int = 0, storage: int = 0, **scalar: int) -> dict:
    """A container asking ``cpu`` milli-CPU, ``mem`` bytes, ``storage`` bytes of ephemeral storage and the scalar
    resources (upstream's ``framework.Resource``; keyword names: ``/`` as ``__``, ``.`` and ``-`` as ``_``)."""
    requests = {}
    if cpu:
        requests["cpu"] = f"{cpu}m"
    if mem:
        requests["memory"] = str(mem)
    if storage:
        requests["ephemeral-storage"] = str(storage)
    names = {"a": EXT_A, "b": EXT_B, "huge": HUGE, "k8s_a": K8S_A, "k8s_b": K8S_B, "dra": DRA_RESOURCE}
    requests.update({names[name]: str(v) for name, v in scalar.items()})
    return {"resources": {"requests": requests}}


def rpod(*containers: dict, init=(), pod_level: dict | None = None, overhead: dict | None = None, name: str = "p",
         sidecars=()):
    """upstream's newResourcePod / newResourceInitPod / newResourceOverheadPod / newPodLevelResourcesPod."""
    spec: dict = {"containers": [{**c, "name": f"c{i}"} for i, c in enumerate(containers)] or [{"name": "c"}]}
    inits = [{**c, "name": f"i{i}"} for i, c in enumerate(init)]
    inits += [{**c, "name": f"s{i}", "restartPolicy": "Always"} for i, c in enumerate(sidecars)]
    if inits:
        spec["initContainers"] = inits
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    if overhead is not None:
        spec["overhead"] = overhead
    return pod(name, **spec)


def existing(*containers: dict, **options):
    """The pod already on the node (upstream's ``framework.NewNodeInfo(newResourcePod(...))``)."""
    made = rpod(*containers, name="e", **options)
    return attrs.evolve(made, metadata=attrs.evolve(made.metadata, uid="e"))


def fit_filter(p, n, *pods, features: FeatureGates | None = None, args=None, objects=()):
    """(code, reasons) of Filter after PreFilter, for ``p`` on node ``n`` running ``pods``."""
    plugin = make(NodeResourcesFit, args, objects=objects, features=features)
    infos = [info(n, *[on(e, n.metadata.name) for e in pods])]
    state, result, status = run_pre_filter(plugin, p, infos)
    assert (result, status) == (None, None)
    (status,) = filter_all(plugin, state, p, infos)
    return (OK, ()) if status is None else (status.code, status.reasons)


def insufficient(*names: str) -> tuple[str, ...]:
    return tuple(f"Insufficient {n}" for n in names)


# --- TestEnoughRequests ------------------------------------------------------------------------------------

ENOUGH = [
    # name, pod, the pod on the node, want (code, reasons), args, DRAExtendedResource on
    ("no resources requested always fits", rpod(), existing(res(10, 20)), (OK, ())),
    ("too many resources fails", rpod(res(1, 1)), existing(res(10, 20)), (U, insufficient("cpu", "memory"))),
    ("too many resources fails due to init container cpu", rpod(res(1, 1), init=[res(3, 1)]), existing(res(8, 19)),
     (U, insufficient("cpu"))),
    ("too many resources fails due to highest init container cpu", rpod(res(1, 1), init=[res(3, 1), res(2, 1)]),
     existing(res(8, 19)), (U, insufficient("cpu"))),
    ("too many resources fails due to init container memory", rpod(res(1, 1), init=[res(1, 3)]),
     existing(res(9, 19)), (U, insufficient("memory"))),
    ("too many resources fails due to highest init container memory", rpod(res(1, 1), init=[res(1, 3), res(1, 2)]),
     existing(res(9, 19)), (U, insufficient("memory"))),
    ("init container fits because it's the max, not sum, of containers and init containers",
     rpod(res(1, 1), init=[res(1, 1)]), existing(res(9, 19)), (OK, ())),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     rpod(res(1, 1), init=[res(1, 1), res(1, 1)]), existing(res(9, 19)), (OK, ())),
    ("both resources fit", rpod(res(1, 1)), existing(res(5, 5)), (OK, ())),
    ("one resource memory fits", rpod(res(2, 1)), existing(res(9, 5)), (U, insufficient("cpu"))),
    ("one resource cpu fits", rpod(res(1, 2)), existing(res(5, 19)), (U, insufficient("memory"))),
    ("equal edge case", rpod(res(5, 1)), existing(res(5, 19)), (OK, ())),
    ("equal edge case for init container", rpod(res(4, 1), init=[res(5, 1)]), existing(res(5, 19)), (OK, ())),
    ("extended resource fits", rpod(res(a=1)), existing(res()), (OK, ())),
    ("extended resource fits for init container", rpod(res(), init=[res(a=1)]), existing(res()), (OK, ())),
    ("extended resource capacity enforced", rpod(res(1, 1, a=10)), existing(res(a=0)), (UU, insufficient(EXT_A))),
    ("extended resource capacity enforced for init container", rpod(res(), init=[res(1, 1, a=10)]),
     existing(res(a=0)), (UU, insufficient(EXT_A))),
    ("extended resource allocatable enforced", rpod(res(1, 1, a=1)), existing(res(a=5)), (U, insufficient(EXT_A))),
    ("extended resource allocatable enforced for init container", rpod(res(), init=[res(1, 1, a=1)]),
     existing(res(a=5)), (U, insufficient(EXT_A))),
    ("extended resource allocatable enforced for multiple containers", rpod(res(1, 1, a=3), res(1, 1, a=3)),
     existing(res(a=2)), (UU, insufficient(EXT_A))),
    ("extended resource allocatable admits multiple init containers", rpod(res(), init=[res(1, 1, a=3)] * 2),
     existing(res(a=2)), (OK, ())),
    ("extended resource allocatable enforced for multiple init containers",
     rpod(res(), init=[res(1, 1, a=6), res(1, 1, a=3)]), existing(res(a=2)), (UU, insufficient(EXT_A))),
    ("extended resource allocatable enforced for unknown resource", rpod(res(1, 1, b=1)), existing(res()),
     (UU, insufficient(EXT_B))),
    ("extended resource allocatable enforced for unknown resource for init container",
     rpod(res(), init=[res(1, 1, b=1)]), existing(res()), (UU, insufficient(EXT_B))),
    ("kubernetes.io resource capacity enforced", rpod(res(1, 1, k8s_a=10)), existing(res()),
     (UU, insufficient(K8S_A))),
    ("kubernetes.io resource capacity enforced for init container", rpod(res(), init=[res(1, 1, k8s_b=10)]),
     existing(res()), (UU, insufficient(K8S_B))),
    ("hugepages resource capacity enforced", rpod(res(1, 1, huge=10)), existing(res(huge=0)),
     (UU, insufficient(HUGE))),
    ("hugepages resource capacity enforced for init container", rpod(res(), init=[res(1, 1, huge=10)]),
     existing(res(huge=0)), (UU, insufficient(HUGE))),
    ("hugepages resource allocatable enforced for multiple containers", rpod(res(1, 1, huge=3), res(1, 1, huge=3)),
     existing(res(huge=2)), (UU, insufficient(HUGE))),
    ("skip checking ignored extended resource", rpod(res(1, 1, b=1)), existing(res()), (OK, ()),
     {"ignoredResources": [EXT_B]}),
    ("resources + pod overhead fits", rpod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}), existing(res(5, 5)),
     (OK, ())),
    ("requests + overhead does not fit for memory", rpod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     existing(res(5, 5)), (U, insufficient("memory"))),
    ("skip checking ignored extended resource via resource groups", rpod(res(1, 1, b=1, k8s_a=1)), existing(res()),
     (UU, insufficient(K8S_A)), {"ignoredResourceGroups": ["example.com"]}),
    ("skip checking extended resource request with quantity zero via resource groups", rpod(res(1, 1, a=0)),
     existing(res(a=6)), (OK, ())),
    ("skip checking resource request with quantity zero", rpod(res(a=1)), existing(res(20, 30, a=1)), (OK, ())),
    ("both pod-level and container-level resources fit", rpod(res(1, 1), pod_level={"cpu": "1m", "memory": "2"}),
     existing(res(5, 5)), (OK, ())),
    ("pod-level cpu resource not fit", rpod(res(1, 1), pod_level={"cpu": "7m", "memory": "2"}), existing(res(5, 5)),
     (U, insufficient("cpu"))),
    ("pod-level memory resource not fit", rpod(res(1, 1), pod_level={"cpu": "3m", "memory": "2"}),
     existing(res(5, 19)), (U, insufficient("memory"))),
    ("pod-level hugepages resource fit", rpod(pod_level={"cpu": "3m", "memory": "2", HUGE: "5"}), None, (OK, ())),
    ("both pod-level and container-level hugepages resource fit",
     rpod(res(1, 1, huge=3), pod_level={"cpu": "3m", "memory": "2", HUGE: "5"}), None, (OK, ())),
    ("pod-level hugepages resource not fit", rpod(pod_level={"cpu": "3m", "memory": "2", HUGE: "10"}), None,
     (UU, insufficient(HUGE))),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     rpod(res(1, 1), init=[res(1, 1)], pod_level={"cpu": "3m", "memory": "2"}), existing(res(5, 19)),
     (U, insufficient("memory"))),
    ("extended resource backed by device plugin", rpod(res(a=1)), existing(res()), (OK, ()), None, True),
    # the DeviceClass maps DRA_RESOURCE to devices: a node that does not advertise it leaves it to DynamicResources
    ("extended resource backed by DRA", rpod(res(1, 1, dra=1)), existing(res()), (OK, ()), None, True),
    ("extended resource backed by DRA, nil draManager", rpod(res(1, 1, a=1)), existing(res()), (OK, ()), None, True),
    ("extended resource backed by DRA not enabled", rpod(res(1, 1, dra=1)), existing(res()),
     (UU, insufficient(DRA_RESOURCE)), None, False),
    ("extended resource NOT backed by DRA", rpod(res(1, 1, b=1)), existing(res()), (UU, insufficient(EXT_B)), None,
     True),
    ("extended resource was backed by Device Plugin (Allocatable: 0)", rpod(res(dra=1)), existing(res(dra=0)),
     (OK, ()), None, True),
    ("extended resource was backed by Device Plugin (Allocatable: 0), global cache", rpod(res(a=1)),
     existing(res(a=0)), (OK, ()), None, True),
]


@pytest.mark.parametrize("case", ENOUGH, ids=[c[0] for c in ENOUGH])
def test_enough_requests(case):
    name, p, on_node, want, *rest = case
    args = rest[0] if rest else None
    dra_on = rest[1] if len(rest) > 1 else False
    got = fit_filter(p, upstream_node(), *([on_node] if on_node is not None else []), args=args,
                     features=None if dra_on else DRA_OFF, objects=[device_class_with_extended_resource()])
    assert got == want


# --- TestNotEnoughRequests: a node of 1 pod slot -------------------------------------------------------------

NOT_ENOUGH = [
    ("even without specified resources, predicate fails when there's no space for additional pod", rpod(),
     existing(res(10, 20))),
    ("even if both resources fit, predicate fails when there's no space for additional pod", rpod(res(1, 1)),
     existing(res(5, 5))),
    ("even for equal edge case, predicate fails when there's no space for additional pod", rpod(res(5, 1)),
     existing(res(5, 19))),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     rpod(res(5, 1), init=[res(5, 1)]), existing(res(5, 19))),
]


@pytest.mark.parametrize("name, p, on_node", NOT_ENOUGH, ids=[c[0] for c in NOT_ENOUGH])
def test_not_enough_requests(name, p, on_node):
    n = raw_node(pods=1, cpu="10m", memory="20")
    assert fit_filter(p, n, on_node) == (U, ("Too many pods",))


# --- TestStorageRequests ------------------------------------------------------------------------------------

STORAGE = [
    ("empty storage requested, and pod fits", rpod(res(1, 1)), existing(res(2, 10)), (OK, ())),
    ("storage ephemeral local storage request exceeds allocatable", rpod(res(storage=25)), existing(res(2, 2)),
     (UU, insufficient("ephemeral-storage"))),
    ("ephemeral local storage is sufficient", rpod(res(storage=5)), existing(res(2, 2, storage=10)), (OK, ())),
    ("pod fits", rpod(res(storage=10)), existing(res(2, 2)), (OK, ())),
]


@pytest.mark.parametrize("name, p, on_node, want", STORAGE, ids=[c[0] for c in STORAGE])
def test_storage_requests(name, p, on_node, want):
    assert fit_filter(p, upstream_node(), on_node) == want


# --- TestRestartableInitContainers (SidecarContainers on: GA, locked) ----------------------------------------

RESTARTABLE = [
    ("allow pod without restartable init containers if sidecar containers is enabled", rpod(), (OK, ())),
    ("allow pod with restartable init containers if sidecar containers is enabled", rpod(sidecars=[{}]), (OK, ())),
    ("allow pod if the total requested resources do not exceed the node's allocatable resources",
     rpod(res(1), sidecars=[res(1)]), (OK, ())),
    ("not allow pod if the total requested resources do exceed the node's allocatable resources",
     rpod(res(1), sidecars=[res(2)]), (UU, insufficient("cpu"))),
]


@pytest.mark.parametrize("name, p, want", RESTARTABLE, ids=[c[0] for c in RESTARTABLE])
def test_restartable_init_containers(name, p, want):
    assert fit_filter(p, raw_node(pods=1, cpu="2m", memory="0")) == want


# --- TestFitScore ------------------------------------------------------------------------------------------

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def strategy(kind: str, shape=None, resources=None) -> dict:
    out: dict = {"type": kind, "resources": resources or DEFAULT_RESOURCES}
    if shape is not None:
        out["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    return {"scoringStrategy": out}


def req_pod(name: str, cpu: str, memory: str, node_name: str = "", sidecar: bool = False):
    """upstream's ``st.MakePod().Req({cpu, memory})`` (whole cores and bytes), with ``SidecarReq`` the same."""
    made = rpod({"resources": {"requests": {"cpu": cpu, "memory": memory}}}, name=name,
                sidecars=[{"resources": {"requests": {"cpu": cpu, "memory": memory}}}] if sidecar else ())
    return attrs.evolve(made, metadata=attrs.evolve(made.metadata, uid=name),
                        spec=attrs.evolve(made.spec, node_name=node_name))


SPREAD_NODES = [("node1", "4000"), ("node2", "6000")]
SPREAD_PODS = [req_pod("e1", "2000", "4000", "node1"), req_pod("e2", "1000", "2000", "node2")]
SIDECAR_NODES = [("node1", "4000"), ("node2", "4000")]
SIDECAR_PODS = [req_pod("e1", "1000", "2000", "node1", sidecar=True), req_pod("e2", "1000", "2000", "node2")]
RTC1, RTC2 = ((0, 10), (100, 0)), ((0, 0), (100, 10))

FIT_SCORE = [
    # name, (cpu, memory) of the pod, nodes, pods on them, args, PreScore run, scores
    ("test case for ScoringStrategy RequestedToCapacityRatio case1", ("3000", "5000"), SPREAD_NODES, SPREAD_PODS,
     strategy("RequestedToCapacityRatio", RTC1), True, [10, 32]),
    ("test case for ScoringStrategy RequestedToCapacityRatio case2", ("3000", "5000"), SPREAD_NODES, SPREAD_PODS,
     strategy("RequestedToCapacityRatio", RTC2), True, [95, 68]),
    ("test case for ScoringStrategy MostAllocated", ("1000", "2000"), SPREAD_NODES, SPREAD_PODS,
     strategy("MostAllocated"), True, [67, 36]),
    ("test case for ScoringStrategy LeastAllocated", ("1000", "2000"), SPREAD_NODES, SPREAD_PODS,
     strategy("LeastAllocated"), True, [32, 63]),
    ("test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not called", ("3000", "5000"),
     SPREAD_NODES, SPREAD_PODS, strategy("RequestedToCapacityRatio", RTC1), False, [10, 32]),
    ("test case for ScoringStrategy MostAllocated if PreScore is not called", ("1000", "2000"), SPREAD_NODES,
     SPREAD_PODS, strategy("MostAllocated"), False, [67, 36]),
    ("test case for ScoringStrategy LeastAllocated if PreScore is not called", ("1000", "2000"), SPREAD_NODES,
     SPREAD_PODS, strategy("LeastAllocated"), False, [32, 63]),
    ("test case for ScoringStrategy MostAllocated with sidecar container", ("1000", "2000"), SIDECAR_NODES,
     SIDECAR_PODS, strategy("MostAllocated"), True, [67, 45]),
    ("test case for ScoringStrategy LeastAllocated with sidecar container", ("1000", "2000"), SIDECAR_NODES,
     SIDECAR_PODS, strategy("LeastAllocated"), True, [32, 55]),
]


@pytest.mark.parametrize("name, asks, nodes, pods, args, pre_score, want", FIT_SCORE, ids=[c[0] for c in FIT_SCORE])
def test_fit_score(name, asks, nodes, pods, args, pre_score, want):
    plugin = make(NodeResourcesFit, args)
    infos = [info(raw_node(n, cpu=cpu, memory="10000"), *[p for p in pods if p.spec.node_name == n])
             for n, cpu in nodes]
    p = req_pod("p", *asks)
    state = CycleState()
    if pre_score:
        assert plugin.pre_score(state, p, infos) is None
    assert score_all(plugin, state, p, infos) == want


@pytest.mark.parametrize("pre_score", [True, False], ids=["", "if PreScore is not called"])
def test_fit_score_least_allocated_with_extended_resources(pre_score):
    """"test case for ScoringStrategy LeastAllocated with Extended resources": node1 has 3 devices of the class
    that serves the resource, node2 2, neither advertises it."""
    objects = [device_class_with_extended_resource(),
               resource_slice("node1", [device(f"device-{i}") for i in (1, 2, 3)], driver="test-driver"),
               resource_slice("node2", [device(f"device-{i}") for i in (1, 2)], driver="test-driver")]
    plugin = make(NodeResourcesFit, strategy("LeastAllocated", resources=[{"name": DRA_RESOURCE, "weight": 1}]),
                  objects=objects)
    infos = [info(raw_node("node1")), info(raw_node("node2"))]
    p = pod("p", extra_resources={DRA_RESOURCE: "1"})
    state, _, _ = run_pre_filter(plugin, p, infos)
    if pre_score:
        assert plugin.pre_score(state, p, infos) is None
    assert score_all(plugin, state, p, infos) == [66, 50]


# --- TestEventsToRegister ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, features, events", [
    ("Register events with InPlacePodVerticalScaling feature enabled", FeatureGates("1.36"),
     [(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN | ActionType.DELETE),
      (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
      ("DeviceClass", ActionType.ADD | ActionType.UPDATE)]),
    ("Register events with InPlacePodVerticalScaling feature disabled",
     FeatureGates("1.34", {"InPlacePodVerticalScaling": False}),
     [(ASSIGNED_POD, ActionType.DELETE), (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]),
    ("Register events with DRAExtendedResource feature disabled", DRA_OFF,
     [(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN | ActionType.DELETE),
      (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]),
])
def test_events_to_register(name, features, events):
    """With SchedulerQueueingHints on (locked in every release kubesched emulates) a node's taint and label
    updates are not registered, as upstream's "SchedulingQueueHint feature enabled" case."""
    plugin = make(NodeResourcesFit, features=features)
    got = plugin.events_to_register()
    assert [w.event for w in got] == [ClusterEvent(resource, action) for resource, action in events]


# --- Test_isSchedulableAfterPodChange -------------------------------------------------------------------------


def hint_pod(name: str, cpu: str | None = None, memory: str | None = None, node_name: str = "",
             pod_level: bool = False):
    """upstream's ``st.MakePod().Name(name).UID(name).Req(...)`` or ``.PodLevelResourceRequests(...)``."""
    asks = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    made = rpod() if not asks else (rpod(pod_level=asks) if pod_level else rpod({"resources": {"requests": asks}}))
    return attrs.evolve(made, metadata=attrs.evolve(made.metadata, name=name, uid=name),
                        spec=attrs.evolve(made.spec, node_name=node_name))


POD_CHANGE = [
    # name, the pod, old, new, InPlacePodVerticalScaling on, hint
    ("queue-on-other-pod-deleted", hint_pod("pod1", "1"), hint_pod("pod2", "1", node_name="fake"), None, True, QUEUE),
    ("skip-queue-on-unscheduled-pod-deleted", hint_pod("pod1"), hint_pod("pod2"), None, True, SKIP),
    ("skip-queue-on-disable-inplace-pod-vertical-scaling", hint_pod("pod1", "1"),
     hint_pod("pod2", "2", node_name="fake"), hint_pod("pod2", "1", node_name="fake"), False, SKIP),
    ("skip-queue-on-other-unscheduled-pod", hint_pod("pod1", "1"), hint_pod("pod2", "2"), hint_pod("pod2", "1"),
     True, SKIP),
    ("skip-queue-on-other-pod-unrelated-resource-scaled-down", hint_pod("pod1", "1"),
     hint_pod("pod2", memory="2", node_name="fake"), hint_pod("pod2", memory="1", node_name="fake"), True, SKIP),
    ("skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down", hint_pod("pod1", "1", pod_level=True),
     hint_pod("pod2", memory="2", node_name="fake", pod_level=True),
     hint_pod("pod2", memory="1", node_name="fake", pod_level=True), True, SKIP),
    ("queue-on-other-pod-some-resource-scale-down", hint_pod("pod1", "1"), hint_pod("pod2", "2", node_name="fake"),
     hint_pod("pod2", "1", node_name="fake"), True, QUEUE),
    ("queue-on-other-pod-some-pod-level-resource-scale-down", hint_pod("pod1", "1", pod_level=True),
     hint_pod("pod2", "2", node_name="fake", pod_level=True), hint_pod("pod2", "1", node_name="fake", pod_level=True),
     True, QUEUE),
    ("queue-on-target-pod-some-resource-scale-down", hint_pod("pod1", "1"), hint_pod("pod1", "2"),
     hint_pod("pod1", "1"), True, QUEUE),
    ("queue-on-target-pod-some-pod-level-resource-scale-down", hint_pod("pod1", "1", pod_level=True),
     hint_pod("pod1", "2", pod_level=True), hint_pod("pod1", "1", pod_level=True), True, QUEUE),
]


@pytest.mark.parametrize("name, p, old, new, in_place, want", POD_CHANGE, ids=[c[0] for c in POD_CHANGE])
def test_is_schedulable_after_pod_change(name, p, old, new, in_place, want):
    features = FeatureGates("1.37") if in_place else FeatureGates("1.34", {"InPlacePodVerticalScaling": False})
    assert make(NodeResourcesFit, features=features)._after_pod_change(p, old, new) == want


# --- Test_isSchedulableAfterNodeChange ------------------------------------------------------------------------

NODE_CHANGE = [
    # name, the pod, old node (None: added), new node, hint
    ("skip-queue-on-node-add-without-sufficient-resources", rpod(res(mem=2)), None, raw_node(memory="1"), SKIP),
    ("skip-queue-on-node-add-without-required-resource-type", rpod(res(a=1)), None,
     raw_node(example_com_bbb="1"), SKIP),
    ("queue-on-node-add-with-sufficient-resources", rpod(res(mem=2, a=1)), None,
     raw_node(memory="4", example_com_aaa="2"), QUEUE),
    ("skip-queue-on-node-unrelated-changes", rpod(res(mem=2, a=1)), raw_node(memory="2", example_com_aaa="2"),
     raw_node(memory="2", example_com_aaa="1", example_com_bbb="2"), SKIP),
    ("queue-on-pod-requested-resources-increase", rpod(res(mem=2, a=1)), raw_node(memory="2", example_com_aaa="1"),
     raw_node(memory="2", example_com_aaa="2"), QUEUE),
    ("skip-queue-on-node-changes-from-suitable-to-unsuitable", rpod(res(mem=2, a=1)),
     raw_node(memory="4", example_com_aaa="2"), raw_node(memory="1", example_com_aaa="2"), SKIP),
    ("queue-on-node-changes-from-unsuitable-to-suitable", rpod(res(mem=2, a=1)),
     raw_node(memory="1", example_com_aaa="2"), raw_node(memory="4", example_com_aaa="2"), QUEUE),
]


@pytest.mark.parametrize("name, p, old, new, want", NODE_CHANGE, ids=[c[0] for c in NODE_CHANGE])
def test_is_schedulable_after_node_change(name, p, old, new, want):
    assert make(NodeResourcesFit)._after_node_change(p, old, new) == want


# --- Test_isSchedulableAfterDeviceClassChange -----------------------------------------------------------------


def device_class(name: str = "", extended: str | None = None):
    spec = {"extendedResourceName": extended} if extended else {}
    return from_manifest({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                          "metadata": {"name": name or "unnamed"}, "spec": spec})


IMPLICIT_GPU = "deviceclass.resource.kubernetes.io/gpuclass"

DEVICE_CLASS_CHANGE = [
    ("skip-queue-on-class-nil-extended-resource-name-pointer", rpod(res(mem=2)), device_class(), device_class(), SKIP),
    ("skip-queue-on-class-same-extended-resource-name-pointer", rpod(res(mem=2)),
     device_class(extended="example.com/gpu"), device_class(extended="example.com/gpu"), SKIP),
    ("queue-on-class-add-with-implicit-extended-resource-name", pod("p", extra_resources={IMPLICIT_GPU: "1"}), None,
     device_class("gpuclass", "example.com/gpu"), QUEUE),
    ("skip-on-class-add-with-implicit-extended-resource-name-not-matching",
     pod("p", extra_resources={IMPLICIT_GPU: "1"}), None, device_class("myclass", "example.com/gpu"), SKIP),
    ("skip-on-class-add-with-explicit-extended-resource-name-not-matching",
     pod("p", extra_resources={"example.com/othergpu": "1"}), None, device_class("myclass", "example.com/gpu"), SKIP),
    ("skip-on-class-update-with-implicit-extended-resource-name", pod("p", extra_resources={IMPLICIT_GPU: "1"}),
     device_class("gpuclass"), device_class("gpuclass", "example.com/gpu"), SKIP),
    ("queue-on-class-add-with-extended-resource-name", pod("p", extra_resources={"example.com/gpu": "1"}), None,
     device_class(extended="example.com/gpu"), QUEUE),
    ("queue-on-class-update-with-extended-resource-name", pod("p", extra_resources={"example.com/gpu": "1"}),
     device_class(extended="example.com/gpu1"), device_class(extended="example.com/gpu"), QUEUE),
]


@pytest.mark.parametrize("name, p, old, new, want", DEVICE_CLASS_CHANGE, ids=[c[0] for c in DEVICE_CLASS_CHANGE])
def test_is_schedulable_after_device_class_change(name, p, old, new, want):
    assert make(NodeResourcesFit)._after_device_class_change(p, old, new) == want


# --- TestIsFit and TestHaveAnyRequestedResourcesIncreased -----------------------------------------------------


def checked_requests(p) -> dict[str, int]:
    """The pod's requests as Filter checks them (zero amounts left out)."""
    return make(NodeResourcesFit)._checked_requests(pod_requests(p))


@pytest.mark.parametrize("name, p, n, want", [
    ("insufficient resource", rpod(res(2000)), raw_node(cpu="1"), False),
    ("sufficient resource", rpod(res(1000)), raw_node(cpu="2"), True),
    ("insufficient pod-level resource", rpod(pod_level={"cpu": "2"}), raw_node(cpu="1"), False),
    ("sufficient pod-level resource", rpod(pod_level={"cpu": "2"}), raw_node(cpu="2"), True),
    ("sufficient pod-level resource hugepages", rpod(pod_level={HUGE: "2Mi"}), raw_node(hugepages_2Mi="2Mi"), True),
    ("insufficient pod-level resource hugepages", rpod(pod_level={HUGE: "4Mi"}), raw_node(hugepages_2Mi="2Mi"),
     False),
])
def test_is_fit(name, p, n, want):
    """("nil node" has no counterpart: a node event always carries its node.)"""
    assert is_fit(checked_requests(p), n.allocatable) == want


ALL_FOUR = dict(cpu="1", memory="2", ephemeral_storage="3", example_com_aaa="4")


@pytest.mark.parametrize("name, p, before, after, dra_on, want", [
    ("no-requested-resources", rpod(res()), dict(pods="1", cpu="1", memory="1", ephemeral_storage="1",
                                                  example_com_aaa="1"),
     dict(pods="1", cpu="2", memory="2", ephemeral_storage="2", example_com_aaa="2"), False, False),
    ("no-requested-resources-pods-increased", rpod(res()), dict(pods="1", cpu="1", memory="1", ephemeral_storage="1",
                                                                example_com_aaa="1"),
     dict(pods="2", cpu="1", memory="1", ephemeral_storage="1", example_com_aaa="1"), False, True),
    ("requested-resources-dra-in-node", rpod(res(2, 2, 2, a=2)), ALL_FOUR,
     dict(cpu="1", memory="2", ephemeral_storage="1", example_com_aaa="1"), True, False),
    ("requested-resources-dra-not-in-node", rpod(res(2, 2, 2, a=2)), dict(cpu="1", memory="2", ephemeral_storage="3"),
     dict(cpu="1", memory="2", ephemeral_storage="1"), True, True),
    ("requested-resources-dra-zero-capacity", rpod(res(a=1)), dict(example_com_aaa="0"), dict(example_com_aaa="0"),
     True, True),
    ("scalar-resources-not-in-node", rpod(res(2, 2, 2, a=2)), dict(cpu="1", memory="2", ephemeral_storage="3"),
     dict(cpu="1", memory="2", ephemeral_storage="1"), False, False),
    ("requested-resources-decreased", rpod(res(2, 2, 2, a=2)), ALL_FOUR,
     dict(cpu="1", memory="2", ephemeral_storage="1", example_com_aaa="1"), False, False),
    ("requested-resources-increased", rpod(res(2, 2, 2, a=2)), ALL_FOUR,
     dict(cpu="3", memory="4", ephemeral_storage="3", example_com_aaa="4"), False, True),
    ("non-requested-resources-decreased", rpod(res(2, 2)), ALL_FOUR,
     dict(cpu="1", memory="2", ephemeral_storage="1", example_com_aaa="1"), False, False),
    ("non-requested-resources-increased", rpod(res(2, 2)), ALL_FOUR,
     dict(cpu="1", memory="2", ephemeral_storage="5", example_com_aaa="6"), False, False),
])
def test_have_any_requested_resources_increased(name, p, before, after, dra_on, want):
    """upstream's nodes are ``st.MakeNode().Capacity(...)``: 32 pod slots unless the case names ``pods``."""
    old, new = (raw_node(**{"pods": 32, **amounts}) for amounts in (before, after))
    assert have_any_requested_resources_increased(pod_requests(p), old.allocatable, new.allocatable, dra_on) == want
