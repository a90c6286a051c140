"""The pod resource arithmetic, as upstream's tables state it.

Ported from kubernetes/kubernetes ``staging/src/k8s.io/component-helpers/resource/helpers_test.go``: its
newest stored version (the search index holds it as file id 55133355307 and names no commit for it; the older
stored ones are at commits 0085214e563468088672cf8c50849884198a18cc and 6c5cf687229f4699334a13393e38b3ca4b8a9293):
TestPodRequestsAndLimits, TestPodRequestsAndLimitsWithoutOverhead, TestPodResourceRequests, TestPodResourceLimits,
TestIsPodLevelResourcesSet, TestIsPodLevelLimitsSet, TestPodLevelResourceRequests, TestIsSupportedPodLevelResource,
TestAggregateContainerRequestsAndLimits and TestPodRequestsAndLimitsVerticalScalingWrappers (their in-place resize,
pod-level status and non-missing cases), plus the pod-level cases KEP-2837 defines.  Each case is a manifest and
the requests (limits) a user would see counted; quantities in scheduler units (milli-CPU, bytes).  Left out:
TestPodResourceRequestsReuse (Go's map reuse) and TestPodResourceRequestsWithDRANodeAllocatableClaims
(DRANodeAllocatableResources, alpha and off: kubesched does not model ``nodeAllocatableResourceClaimStatuses``).
One difference is stated where it shows: upstream's ``PodRequests`` reads a pod after the API server defaulted
it, kubesched reads the manifest and applies the defaulting (a container's limit stands in for its missing
request) itself.  kubesched always reads the statuses (``use_status``) and the pod-level status, as the scheduler
calls these helpers with both on.
"""

from __future__ import annotations

import pytest

from kubesched.core.api.manifests import from_manifest
from kubesched.core.api.resource_helpers import is_supported_pod_level_resource
from kubesched.core.framework.resources import (
    NON_ZERO_DEFAULTS,
    is_pod_resize_deferred,
    is_pod_resize_infeasible,
    non_zero_requests,
    pod_level_requests,
    pod_limits,
    pod_requests,
)

Gi = 1024**3


def pod(containers=(), init=(), overhead=None, resources=None, statuses=(), init_statuses=(), conditions=(),
        allocated=None, applied=None):
    spec = {"containers": [{"name": f"c{i}", **c} if "name" not in c else c for i, c in enumerate(containers)],
            "initContainers": [{"name": f"i{i}", **c} if "name" not in c else c for i, c in enumerate(init)]}
    if overhead:
        spec["overhead"] = overhead
    if resources:
        spec["resources"] = resources
    status = {"containerStatuses": list(statuses), "initContainerStatuses": list(init_statuses),
              "conditions": list(conditions)}
    if allocated is not None:  # the pod-level status (InPlacePodLevelResourcesVerticalScaling)
        status["allocatedResources"] = allocated
    if applied is not None:
        status["resources"] = applied
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                          "spec": spec, "status": status})


def req(**amounts):
    return {"resources": {"requests": amounts}}


def both(requests, limits):
    return {"resources": {"requests": requests, "limits": limits}}


def lim(**amounts):
    return {"resources": {"limits": amounts}}


ALWAYS = {"restartPolicy": "Always"}
INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}


# TestPodRequestsAndLimits (with overhead); "just-limit-no-overhead" expects no request upstream because its pod
# skipped defaulting: after the API server's defaulting the limit is also the request.
@pytest.mark.parametrize("name, p, requests, limits", [
    ("just-limit-no-overhead (defaulted)", pod([lim(cpu="9")]), {"cpu": 9000}, {"cpu": 9000}),
    ("just-overhead", pod([{}], overhead={"cpu": "5", "memory": "5"}), {"cpu": 5000, "memory": 5}, {}),
    ("req-and-overhead", pod([req(cpu="1", memory="10")], overhead={"cpu": "5", "memory": "5"}),
     {"cpu": 6000, "memory": 15}, {}),
    ("all-req-lim-and-overhead", pod([both({"cpu": "1", "memory": "10"}, {"cpu": "2", "memory": "12"})],
                                     overhead={"cpu": "5", "memory": "5"}),
     {"cpu": 6000, "memory": 15}, {"cpu": 7000, "memory": 17}),
    ("req-some-lim-and-overhead", pod([both({"cpu": "1", "memory": "10"}, {"cpu": "2"})],
                                      overhead={"cpu": "5", "memory": "5"}),
     {"cpu": 6000, "memory": 15}, {"cpu": 7000}),
])
def test_pod_requests_and_limits(name, p, requests, limits):
    assert pod_requests(p) == requests
    assert pod_limits(p) == limits


TWO = [both({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}),
       both({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"})]


# TestPodRequestsAndLimitsWithoutOverhead
@pytest.mark.parametrize("name, p, requests", [
    ("two container no overhead - should just be sum of containers", pod(TWO), {"cpu": 5000, "memory": 17}),
    ("two container with overhead - shouldn't consider overhead", pod(TWO, overhead={"cpu": "3", "memory": "8"}),
     {"cpu": 5000, "memory": 17}),
    ("two container with overhead, massive init - should just be the largest init",
     pod(TWO, init=[both({"cpu": "1", "memory": "5"}, {"cpu": "1", "memory": "5"}),
                    both({"cpu": "40", "memory": "120"}, {"cpu": "80", "memory": "240"})],
         overhead={"cpu": "3", "memory": "8"}), {"cpu": 40000, "memory": 120}),
])
def test_pod_requests_without_overhead(name, p, requests):
    assert pod_requests(p, exclude_overhead=True) == requests


C1 = "container-1"
RI1 = "restartable-init-1"


# TestPodResourceRequests
@pytest.mark.parametrize("name, p, options, requests", [
    ("nil options, larger init container", pod([req(cpu="1")], init=[req(cpu="4")]), {}, {"cpu": 4000}),
    ("nil options, larger containers", pod([req(cpu="2"), req(cpu="3")], init=[req(cpu="2")]), {}, {"cpu": 5000}),
    ("pod overhead excluded", pod([req(cpu="2"), req(cpu="3")], init=[req(cpu="2")], overhead={"cpu": "1"}),
     {"exclude_overhead": True}, {"cpu": 5000}),
    ("pod overhead included", pod([req(cpu="2"), req(cpu="3")], init=[both({"cpu": "2"}, {"cpu": "2"})],
                                  overhead={"cpu": "1", "memory": "1Gi"}), {}, {"cpu": 6000, "memory": Gi}),
    ("resized, infeasible", pod([{"name": C1, **req(cpu="4")}], conditions=[INFEASIBLE],
                                statuses=[{"name": C1, "resources": {"requests": {"cpu": "2"}}}]),
     {"use_status": True}, {"cpu": 2000}),
    ("resized, infeasible & in-progress",
     pod([{"name": C1, **req(cpu="6")}], conditions=[INFEASIBLE],
         statuses=[{"name": C1, "allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "2"}}}]),
     {"use_status": True}, {"cpu": 4000}),
    ("resized, no resize status", pod([{"name": C1, **req(cpu="4")}],
                                      statuses=[{"name": C1, "resources": {"requests": {"cpu": "2"}}}]),
     {"use_status": True}, {"cpu": 4000}),
    ("resized: per-resource 3-way maximum",
     pod([{"name": C1, **req(cpu="30m", memory="20M", **{"ephemeral-storage": "10G"})}],
         statuses=[{"name": C1, "allocatedResources": {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                    "resources": {"requests": {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"}}}]),
     {"use_status": True}, {"cpu": 30, "memory": 30_000_000, "ephemeral-storage": 30_000_000_000}),
    ("resized, infeasible, but don't use status",
     pod([{"name": C1, **req(cpu="4")}], conditions=[INFEASIBLE],
         statuses=[{"name": C1, "resources": {"requests": {"cpu": "2"}}}]), {"use_status": False}, {"cpu": 4000}),
    ("resized, restartable init container, infeasible",
     pod([], init=[{"name": RI1, **ALWAYS, **req(cpu="4")}], conditions=[INFEASIBLE],
         init_statuses=[{"name": RI1, "resources": {"requests": {"cpu": "2"}}}]), {"use_status": True},
     {"cpu": 2000}),
    ("resized, restartable init container, no resize status",
     pod([], init=[{"name": RI1, **ALWAYS, **req(cpu="4")}],
         init_statuses=[{"name": RI1, "resources": {"requests": {"cpu": "2"}}}]), {"use_status": True},
     {"cpu": 4000}),
    ("resized, restartable init container, infeasible, but don't use status",
     pod([], init=[{"name": RI1, **ALWAYS, **req(cpu="4")}], conditions=[INFEASIBLE],
         init_statuses=[{"name": RI1, "resources": {"requests": {"cpu": "2"}}}]), {"use_status": False},
     {"cpu": 4000}),
    ("restartable init container", pod([req(cpu="1")], init=[{**ALWAYS, **req(cpu="1")}]), {}, {"cpu": 2000}),
    ("multiple restartable init containers",
     pod([req(cpu="1")], init=[req(cpu="5"), {**ALWAYS, **req(cpu="1")}, {**ALWAYS, **req(cpu="2")},
                               {**ALWAYS, **req(cpu="3")}]), {}, {"cpu": 7000}),
    ("multiple restartable and regular init containers",
     pod([req(cpu="1")], init=[req(cpu="5"), {**ALWAYS, **req(cpu="1")}, {**ALWAYS, **req(cpu="2")},
                               req(cpu="5"), {**ALWAYS, **req(cpu="3")}]), {}, {"cpu": 8000}),
    ("restartable-init, init and regular",
     pod([req(cpu="100")], init=[{**ALWAYS, **req(cpu="10")}, req(cpu="200")]), {}, {"cpu": 210000}),
    ("aggregate request resolves max of sums instead of sum of maxes",
     pod([{"name": "a", **req(cpu="1")}, {"name": "b", **req(cpu="2")}],
         statuses=[{"name": "a", "allocatedResources": {"cpu": "2"}}, {"name": "b", "allocatedResources": {"cpu": "1"}}]),
     {"use_status": True}, {"cpu": 3000}),
])
def test_pod_resource_requests(name, p, options, requests):
    assert pod_requests(p, **options) == requests


# TestPodResourceLimits
def lim_status(name: str, **amounts):
    return {"name": name, "resources": {"limits": amounts}}


@pytest.mark.parametrize("name, p, options, limits", [
    ("nil options, larger init container", pod([lim(cpu="1")], init=[lim(cpu="4")]), {}, {"cpu": 4000}),
    ("nil options, larger containers", pod([lim(cpu="2"), lim(cpu="3")], init=[lim(cpu="2")]), {}, {"cpu": 5000}),
    ("pod overhead excluded", pod([lim(cpu="2"), lim(cpu="3")], init=[lim(cpu="2")], overhead={"cpu": "1"}),
     {"exclude_overhead": True}, {"cpu": 5000}),
    ("pod overhead included", pod([lim(cpu="2"), lim(cpu="3")], init=[lim(cpu="2")],
                                  overhead={"cpu": "1", "memory": "1Gi"}), {}, {"cpu": 6000}),
    ("no limited containers should result in no limits for the pod", pod([{}]), {}, {}),
    ("one limited and one unlimited container should result in the limited container's limits for the pod",
     pod([lim(cpu="2", memory="2Gi"), {}]), {}, {"cpu": 2000, "memory": 2 * Gi}),
    ("one limited and one unlimited init container should result in the limited init container's limits for the "
     "pod", pod([lim(cpu="1", memory="1Gi")], init=[lim(cpu="2", memory="2Gi"), {}]), {},
     {"cpu": 2000, "memory": 2 * Gi}),
    ("restartable init container", pod([lim(cpu="1")], init=[{**ALWAYS, **lim(cpu="1")}]), {}, {"cpu": 2000}),
    ("multiple restartable init containers",
     pod([lim(cpu="1")], init=[lim(cpu="5"), {**ALWAYS, **lim(cpu="1")}, {**ALWAYS, **lim(cpu="2")},
                               {**ALWAYS, **lim(cpu="3")}]), {}, {"cpu": 7000}),
    ("multiple restartable and regular init containers",
     pod([lim(cpu="1")], init=[lim(cpu="5"), {**ALWAYS, **lim(cpu="1")}, {**ALWAYS, **lim(cpu="2")},
                               lim(cpu="5"), {**ALWAYS, **lim(cpu="3")}]), {}, {"cpu": 8000}),
    ("restartable-init, init and regular",
     pod([lim(cpu="100")], init=[{**ALWAYS, **lim(cpu="10")}, lim(cpu="200")]), {}, {"cpu": 210000}),
    ("pod scaled up", pod([{"name": C1, **lim(memory="2Gi")}], statuses=[lim_status(C1, memory="1Gi")]),
     {"use_status": True}, {"memory": 2 * Gi}),
    ("pod scaled down", pod([{"name": C1, **lim(memory="1Gi")}], statuses=[lim_status(C1, memory="2Gi")]),
     {"use_status": True}, {"memory": 2 * Gi}),
    ("pod scaled down, don't use status", pod([{"name": C1, **lim(memory="1Gi")}],
                                              statuses=[lim_status(C1, memory="2Gi")]),
     {"use_status": False}, {"memory": Gi}),
    ("pod scaled up with restartable init containers",
     pod([], init=[{"name": RI1, **ALWAYS, **lim(memory="2Gi")}], init_statuses=[lim_status(RI1, memory="1Gi")]),
     {"use_status": True}, {"memory": 2 * Gi}),
    ("pod scaled down with restartable init containers",
     pod([], init=[{"name": RI1, **ALWAYS, **lim(memory="1Gi")}], init_statuses=[lim_status(RI1, memory="2Gi")]),
     {"use_status": True}, {"memory": 2 * Gi}),
    ("pod scaled down with restartable init containers, don't use status",
     pod([], init=[{"name": RI1, **ALWAYS, **lim(memory="1Gi")}], init_statuses=[lim_status(RI1, memory="2Gi")]),
     {"use_status": False}, {"memory": Gi}),
    ("aggregate limit resolves max of sums instead of sum of maxes",
     pod([{"name": "c1", **lim(cpu="1")}, {"name": "c2", **lim(cpu="2")}],
         statuses=[lim_status("c1", cpu="2"), lim_status("c2", cpu="1")]), {"use_status": True}, {"cpu": 3000}),
])
def test_pod_resource_limits(name, p, options, limits):
    assert pod_limits(p, **options) == limits


# Pod-level resources (KEP-2837): the pod-level value wins for the resources it sets
@pytest.mark.parametrize("name, p, options, requests", [
    ("pod-level cpu only: memory from the containers", pod([req(cpu="1", memory="1Gi"), req(cpu="1")],
                                                           resources={"requests": {"cpu": "3"}}), {},
     {"cpu": 3000, "memory": Gi}),
    ("pod-level cpu and memory replace the sums", pod([req(cpu="1", memory="1Gi")],
                                                      resources={"requests": {"cpu": "3", "memory": "4Gi"}}), {},
     {"cpu": 3000, "memory": 4 * Gi}),
    ("pod-level resources skipped (PodLevelResources off)", pod([req(cpu="1")],
                                                                resources={"requests": {"cpu": "3"}}),
     {"pod_level": False}, {"cpu": 1000}),
    ("pod-level limits only: requests default to the limits", pod([{}], resources={"limits": {"cpu": "2"}}), {},
     {"cpu": 2000}),
    ("pod-level limit, containers request: the containers' sum is the default",
     pod([req(cpu="500m"), req(cpu="500m")], resources={"limits": {"cpu": "2"}}), {}, {"cpu": 1000}),
    ("overhead added on top of pod-level requests", pod([{}], resources={"requests": {"cpu": "1"}},
                                                        overhead={"cpu": "250m"}), {}, {"cpu": 1250}),
    ("ephemeral-storage stays container-level", pod([req(**{"ephemeral-storage": "1Gi"})],
                                                     resources={"requests": {"cpu": "1"}}), {},
     {"cpu": 1000, "ephemeral-storage": Gi}),
    ("extended resources stay container-level", pod([req(**{"example.com/gpu": "2"})],
                                                     resources={"requests": {"memory": "1Gi"}}), {},
     {"memory": Gi, "example.com/gpu": 2}),
    ("non-missing defaults fill what neither level sets", pod([{}, {}], resources={"requests": {"cpu": "1"}}),
     {"non_missing": NON_ZERO_DEFAULTS}, {"cpu": 1000, "memory": 2 * 200 * 1024**2}),
    ("sidecars and init containers under a pod-level request",
     pod([req(cpu="1")], init=[{**ALWAYS, **req(cpu="1")}, req(cpu="4")], resources={"requests": {"cpu": "5"}}),
     {}, {"cpu": 5000}),
])
def test_pod_level_requests(name, p, options, requests):
    assert pod_requests(p, **options) == requests


def test_pod_level_requests_set_only_for_supported_resources():
    """IsPodLevelRequestsSet: cpu, memory and hugepages count; a pod without spec.resources has none."""
    assert pod_level_requests(pod([{}])) == {}
    assert pod_level_requests(pod([{}], resources={"requests": {"cpu": "1", "hugepages-2Mi": "2Mi"}})) == {
        "cpu": 1000, "hugepages-2Mi": 2 * 1024**2}


def test_non_zero_requests_with_pod_level_resources():
    """The scorers' non-zero requests: the pod-level cpu stands; memory, set nowhere, is the 200Mi default per
    container (upstream getNonMissingContainerRequests)."""
    assert non_zero_requests(pod([{}, {}], resources={"requests": {"cpu": "3"}})) == (3000, 2 * 200 * 1024**2)
    assert non_zero_requests(pod([{}])) == (100, 200 * 1024**2)


def test_resize_conditions():
    assert is_pod_resize_infeasible(pod([{}], conditions=[INFEASIBLE]))
    assert is_pod_resize_deferred(pod([{}], conditions=[DEFERRED]))
    assert not is_pod_resize_infeasible(pod([{}], conditions=[DEFERRED]))


def pod_with_status(resources=None, allocated=None, applied=None, conditions=(), containers=None, overhead=None):
    spec = {"containers": containers or [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if resources:
        spec["resources"] = {"requests": resources}
    if overhead:
        spec["overhead"] = overhead
    status = {"conditions": list(conditions)}
    if allocated is not None:
        status["allocatedResources"] = allocated
    if applied is not None:
        status["resources"] = {"requests": applied}
    return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                          "spec": spec, "status": status})


@pytest.mark.parametrize("name, p, options, requests", [
    ("pod-level status: the largest of spec, allocated and applied",
     pod_with_status({"cpu": "2"}, allocated={"cpu": "3"}, applied={"cpu": "1"}), {}, {"cpu": 3000}),
    ("pod-level status, infeasible: the spec does not count",
     pod_with_status({"cpu": "4"}, allocated={"cpu": "2"}, applied={"cpu": "2"}, conditions=[INFEASIBLE]), {},
     {"cpu": 2000}),
    ("pod-level status includes the overhead, taken out before the max",
     pod_with_status({"cpu": "2"}, allocated={"cpu": "2500m"}, applied={"cpu": "2500m"}, overhead={"cpu": "500m"}), {},
     {"cpu": 2500}),
    ("InPlacePodLevelResourcesVerticalScaling off: the pod-level status is not read",
     pod_with_status({"cpu": "2"}, allocated={"cpu": "3"}, applied={"cpu": "3"}), {"pod_level_status": False},
     {"cpu": 2000}),
])
def test_pod_level_status_resources(name, p, options, requests):
    assert pod_requests(p, **options) == requests


# TestPodLevelResourceRequests (helpers_test.go, the version of index id 55133355307); "storage" is upstream's
# v1.ResourceStorage, unsupported at pod level
Mi = 1024**2


def lvl(requests=None, limits=None):
    out = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


MEM3_CPU2 = req(memory="3Mi", cpu="2m")
MEM5_CPU4 = req(memory="5Mi", cpu="4m")
MEM6_CPU8 = req(memory="6Mi", cpu="8m")


@pytest.mark.parametrize("name, p, options, requests", [
    ("nil", pod([{}]), {}, {}),
    ("pod level memory resource with SkipPodLevelResources true", pod([{}], resources=lvl({"memory": "2Mi"})),
     {"pod_level": False}, {}),
    ("pod level memory resource with SkipPodLevelResources false", pod([{}], resources=lvl({"memory": "2Mi"})), {},
     {"memory": 2 * Mi}),
    ("pod level memory and container level cpu resources", pod([req(cpu="2m")], resources=lvl({"memory": "2Mi"})),
     {}, {"memory": 2 * Mi, "cpu": 2}),
    ("pod level unsupported resources set at both pod-level and container-level",
     pod([req(storage="3Mi")], resources=lvl({"storage": "2Mi"})), {}, {"storage": 3 * Mi}),
    ("pod level unsupported resources set at pod-level", pod([req(memory="3Mi")], resources=lvl({"storage": "2Mi"})),
     {}, {"memory": 3 * Mi}),
    ("only container level resources set", pod([MEM3_CPU2]), {}, {"memory": 3 * Mi, "cpu": 2}),
    ("both container-level and pod-level resources set",
     pod([MEM3_CPU2], resources=lvl({"memory": "6Mi", "cpu": "8m"})), {}, {"memory": 6 * Mi, "cpu": 8}),
    ("container-level resources and init container set", pod([MEM3_CPU2], init=[MEM5_CPU4]), {},
     {"memory": 5 * Mi, "cpu": 4}),
    ("container-level resources and init container set, SkipPodLevelResources true",
     pod([MEM3_CPU2], init=[MEM5_CPU4]), {"pod_level": False}, {"memory": 5 * Mi, "cpu": 4}),
    ("container-level resources and sidecar container set", pod([MEM3_CPU2], init=[{**ALWAYS, **MEM5_CPU4}]), {},
     {"memory": 8 * Mi, "cpu": 6}),
    ("container-level resources, init and sidecar container set",
     pod([MEM3_CPU2], init=[{**ALWAYS, **MEM5_CPU4}, MEM6_CPU8]), {}, {"memory": 11 * Mi, "cpu": 12}),
    ("pod-level resources, container-level resources, init and sidecar container set",
     pod([MEM3_CPU2], init=[{**ALWAYS, **MEM5_CPU4}, MEM6_CPU8], resources=lvl({"memory": "15Mi", "cpu": "18m"})),
     {}, {"memory": 15 * Mi, "cpu": 18}),
    ("pod-level resources, hugepage request/limit single page size",
     pod([{}], resources=lvl({"memory": "10Mi", "hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"})), {},
     {"memory": 10 * Mi, "hugepages-2Mi": 2 * Mi}),
    ("pod-level resources, hugepage request/limit multiple page sizes",
     pod([{}], resources=lvl({"cpu": "1", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"},
                             {"hugepages-2Mi": "2Mi", "hugepages-1Gi": "1Gi"})), {},
     {"cpu": 1000, "hugepages-2Mi": 2 * Mi, "hugepages-1Gi": Gi}),
])
def test_upstream_pod_level_resource_requests(name, p, options, requests):
    assert pod_requests(p, **options) == requests


# TestIsPodLevelResourcesSet / TestIsPodLevelLimitsSet: only cpu, memory and hugepages make pod-level resources set
@pytest.mark.parametrize("name, resources, is_set", [
    ("empty resources struct", {}, False),
    ("only unsupported resource requests set", lvl({"ephemeral-storage": "1Mi"}), False),
    ("only unsupported resource limits set", lvl(None, {"ephemeral-storage": "1Mi"}), False),
    ("unsupported and supported resources requests set", lvl({"ephemeral-storage": "1Mi", "cpu": "1m"}), True),
    ("unsupported and supported resources limits set", lvl(None, {"ephemeral-storage": "1Mi", "cpu": "1m"}), True),
])
def test_upstream_is_pod_level_resources_set(name, resources, is_set):
    assert bool(pod_level_requests(pod([{}], resources=resources))) == is_set


# TestIsPodLevelLimitsSet: pod-level limits count only for cpu, memory and hugepages
@pytest.mark.parametrize("name, resources, is_set", [
    ("empty resources struct", {}, False),
    ("only resource requests set", lvl({"memory": "100Mi"}), False),
    ("only unsupported resource limits set", lvl(None, {"ephemeral-storage": "1Mi"}), False),
    ("unsupported and suported resources limits set", lvl(None, {"ephemeral-storage": "1Mi", "cpu": "1m"}), True),
])
def test_upstream_is_pod_level_limits_set(name, resources, is_set):
    p = pod([{}], resources=resources)
    assert (pod_limits(p) != pod_limits(p, pod_level=False)) == is_set


# TestIsSupportedPodLevelResource
@pytest.mark.parametrize("resource, supported", [
    ("cpu", True), ("memory", True), ("ephemeral-storage", False), ("hugepages-2Mi", True), ("hugepages-1Gi", True),
])
def test_upstream_is_supported_pod_level_resource(resource, supported):
    assert is_supported_pod_level_resource(resource) == supported


# TestPodLevelResourceRequests, its container-level hugepages cases
@pytest.mark.parametrize("name, p, requests", [
    ("pod-level resources, container-level resources, hugepage request/limit single page size",
     pod([both({"hugepages-2Mi": "6Mi"}, {"hugepages-2Mi": "6Mi"})],
         resources=lvl({"cpu": "1", "hugepages-2Mi": "10Mi"}, {"hugepages-2Mi": "10Mi"})),
     {"cpu": 1000, "hugepages-2Mi": 10 * Mi}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes",
     pod([both({"cpu": "1", "hugepages-1Gi": "2Gi"}, {"hugepages-1Gi": "2Gi"})],
         resources=lvl({"cpu": "1", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"},
                       {"hugepages-2Mi": "10Mi", "hugepages-1Gi": "2Gi"})),
     {"cpu": 1000, "hugepages-2Mi": 10 * Mi, "hugepages-1Gi": 2 * Gi}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes between "
     "pod-level and container-level",
     pod([both({"memory": "4Mi", "hugepages-1Gi": "1Gi"}, {"hugepages-1Gi": "1Gi"})],
         resources=lvl({"cpu": "1", "hugepages-2Mi": "10Mi"}, {"hugepages-2Mi": "10Mi"})),
     {"cpu": 1000, "memory": 4 * Mi, "hugepages-2Mi": 10 * Mi, "hugepages-1Gi": Gi}),
])
def test_upstream_pod_level_hugepages_with_containers(name, p, requests):
    assert pod_requests(p) == requests


ONE_TWO = {"name": "c1", **both({"cpu": "1"}, {"cpu": "2"})}


# TestAggregateContainerRequestsAndLimits (the cases of in-place resize and non-missing requests) and
# TestPodRequestsAndLimitsVerticalScalingWrappers: requests and limits of one pod
@pytest.mark.parametrize("name, p, options, requests, limits", [
    ("regular, init and sidecar containers with limits",
     pod([lim(cpu="9")], init=[{**ALWAYS, **lim(cpu="8")}, lim(cpu="6")]), {}, {"cpu": 17000}, {"cpu": 17000}),
    ("regularcontainers with empty requests, but status with non-empty requests",
     pod([{"name": C1}], statuses=[{"name": C1, "resources": {"requests": {"cpu": "2"}}}]), {}, {"cpu": 2000}, {}),
    ("always-restart init containers with empty requests, but status with non-empty requests",
     pod([], init=[{"name": C1, **ALWAYS}], init_statuses=[{"name": C1, "resources": {"requests": {"cpu": "2"}}}]),
     {}, {"cpu": 2000}, {}),
    ("aggregate container request resolves max of sums instead of sum of maxes",
     pod([{"name": "c1", **req(cpu="1")}, {"name": "c2", **req(cpu="2")}],
         statuses=[{"name": "c1", "allocatedResources": {"cpu": "2"}}, {"name": "c2", "allocatedResources": {"cpu": "1"}}]),
     {}, {"cpu": 3000}, {}),
    ("aggregate container request/limit resolves directly from pod status when PLR vertical scaling enabled",
     pod([ONE_TWO], allocated={"cpu": "4"}, applied={"requests": {"cpu": "3"}, "limits": {"cpu": "5"}}), {},
     {"cpu": 4000}, {"cpu": 5000}),
    ("falls back to container status aggregation when PLR vertical scaling enabled but podAllocatedResources is nil",
     pod([ONE_TWO], statuses=[{"name": "c1", "allocatedResources": {"cpu": "6"}, "resources": {
         "requests": {"cpu": "5"}, "limits": {"cpu": "7"}}}], applied={"requests": {"cpu": "3"}, "limits": {"cpu": "7"}}),
     {}, {"cpu": 6000}, {"cpu": 7000}),
    ("falls back to container status aggregation when PLR vertical scaling enabled but podResources is nil",
     pod([ONE_TWO], statuses=[{"name": "c1", "allocatedResources": {"cpu": "6"}, "resources": {
         "requests": {"cpu": "5"}, "limits": {"cpu": "8"}}}], allocated={"cpu": "6"}), {}, {"cpu": 6000}, {"cpu": 8000}),
    ("pod level requests/limits with PLR vertical scaling enabled and status populated",
     pod([ONE_TWO], resources=lvl({"cpu": "2"}, {"cpu": "4"}), allocated={"cpu": "3"},
         applied={"requests": {"cpu": "3.5"}, "limits": {"cpu": "5"}}), {}, {"cpu": 3500}, {"cpu": 5000}),
    ("pod level requests/limits with PLR vertical scaling enabled and infeasible resize",
     pod([ONE_TWO], resources=lvl({"cpu": "10"}, {"cpu": "20"}), conditions=[INFEASIBLE], allocated={"cpu": "3"},
         applied={"requests": {"cpu": "4"}, "limits": {"cpu": "8"}}), {}, {"cpu": 4000}, {"cpu": 8000}),
    ("container limits aggregation with infeasible resize",
     pod([{"name": "c1", **lim(cpu="10")}], conditions=[INFEASIBLE],
         statuses=[{"name": "c1", "resources": {"limits": {"cpu": "6"}}}]), {}, {}, {"cpu": 6000}),
    ("non missing container requests applied to init container", pod([], init=[req(cpu="1")]),
     {"non_missing": {"memory": 100 * Mi}}, {"cpu": 1000, "memory": 100 * Mi}, {}),
    ("non missing container requests applied to regular container", pod([req(cpu="1")]),
     {"non_missing": {"memory": 100 * Mi}}, {"cpu": 1000, "memory": 100 * Mi}, {}),
])
def test_upstream_requests_and_limits_with_status(name, p, options, requests, limits):
    """With upstream's UseStatusResources (and InPlacePodLevelResourcesVerticalScaling where a case says PLR)."""
    assert pod_requests(p, **options) == requests
    assert pod_limits(p, use_status=True) == limits
