"""Builders for the DeviceTaintEviction tests: GPUs of driver gpu.example.com on
node-1, claims allocated on them and reserved for pods, taints and rules."""

from __future__ import annotations

from typing import Any, Iterable

import attrs

from kubesched.controllers.devicetainteviction import DeviceTaintEvictionController
from kubesched.core.api import from_manifest
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.controller.base import ControllerContext, ControllerManager
from kubesched.drivers.quiescence import run_simulation
from kubesched.testing import pod

API = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"
START = 1_800_000_000.0
TAINT_KEY = "gpu.example.com/unhealthy"


def no_execute(time_added: float | None = START, key: str = TAINT_KEY, effect: str = "NoExecute") -> dict:
    taint: dict[str, Any] = {"key": key, "value": "xid-79", "effect": effect}
    if time_added is not None:
        taint["timeAdded"] = time_added
    return taint


def tolerate(seconds: int | None = None, key: str = TAINT_KEY, effect: str = "NoExecute") -> dict:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": effect}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


def gpu_slice(name: str = "node-1-gpus", pool: str = "node-1", generation: int = 1,
              taints: dict[str, list[dict]] | None = None, devices: Iterable[str] = ("gpu-0", "gpu-1")):
    """A ResourceSlice of node-1's pool; ``taints`` maps device names to their taints."""
    taints = taints or {}
    return from_manifest({
        "apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": name},
        "spec": {"driver": DRIVER, "nodeName": "node-1",
                 "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
                 "devices": [{"name": d, **({"taints": taints[d]} if d in taints else {})} for d in devices]},
    })


def rule(name: str, taint: dict | None = None, **selector: str):
    """A DeviceTaintRule selecting ``driver``/``pool``/``device`` (default: every GPU of node-1)."""
    return from_manifest({
        "apiVersion": API, "kind": "DeviceTaintRule", "metadata": {"name": name},
        "spec": {"deviceSelector": selector or {"driver": DRIVER, "pool": "node-1"},
                 "taint": taint if taint is not None else no_execute()},
    })


def consumer(name: str, claim: str, namespace: str = "default", finalizers: tuple[str, ...] = (), **status: Any):
    """A pod bound to node-1 that uses the ResourceClaim ``claim``."""
    obj = pod(name, namespace=namespace, node_name="node-1",
              resourceClaims=[{"name": "gpu", "resourceClaimName": claim}])
    obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, finalizers=finalizers))
    if status:
        obj = attrs.evolve(obj, status=attrs.evolve(obj.status, **status))
    return obj


def allocated_claim(name: str, pods: Iterable[Any], devices: Iterable[str] = ("gpu-0",),
                    tolerations: Iterable[dict] = (), namespace: str = "default", pool: str = "node-1"):
    """A ResourceClaim allocated on node-1's ``devices`` (with ``tolerations``
    in each result) and reserved for ``pods`` (stored pods, with their UIDs)."""
    return from_manifest({
        "apiVersion": API, "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
        "status": {
            "allocation": {"devices": {"results": [
                {"request": "gpu", "driver": DRIVER, "pool": pool, "device": d, "tolerations": list(tolerations)}
                for d in devices]}},
            "reservedFor": [{"resource": "pods", "name": p.metadata.name, "uid": p.metadata.uid} for p in pods],
        },
    })


class Harness:
    """A MemoryCluster on a FakeClock at START with the controller running on it
    (through its informers), driven like ``kubesched simulate`` drives it."""

    def __init__(self, cluster: MemoryCluster | None = None, workers: int | None = None):
        self.clock = FakeClock(START) if cluster is None else cluster.clock
        self.cluster = cluster or MemoryCluster(self.clock)
        options = {DeviceTaintEvictionController.name: {"workers": workers}} if workers else {}
        self.informers = Informers(self.cluster)
        self.controller = DeviceTaintEvictionController(
            ControllerContext(self.cluster, self.informers, self.clock, options=options))
        self.manager = ControllerManager(self.informers, [self.controller])
        self.started = False

    def create(self, *objects: Any) -> list[Any]:
        return [self.cluster.create(obj) for obj in objects]

    def run(self, seconds: float = 0.0) -> None:
        """Deliver events and process work until ``seconds`` of simulated time passed."""
        if not self.started:
            self.manager.start()
            self.started = True
        run_simulation([self.manager], self.clock, self.clock.now() + seconds)

    def pods(self) -> list[str]:
        return sorted(p.key for p in self.cluster.list("Pod").items)

    def events(self, message: str | None = None) -> list[tuple[str, str]]:
        events = sorted(self.cluster.list("Event").items, key=lambda e: (e.first_timestamp, e.metadata.name))
        return [(e.involved_object.name, e.message) for e in events
                if e.reason == "DeviceTaintManagerEviction" and message in (None, e.message)]

    def rule_condition(self, name: str):
        stored = self.cluster.get("DeviceTaintRule", name)
        (condition,) = [c for c in stored.status.conditions if c.type == "EvictionInProgress"]
        return condition
