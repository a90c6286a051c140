"""GPU nodes, GPUs already in use and GPU pods, in one line each."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kubesched.core.api import from_manifest
from kubesched.core.gpu.fragmentation import TRACE_CONFIGMAP, PodShape, TypicalPod, typical_pods_yaml
from kubesched.core.gpu.gpus import DRIVER
from kubesched.trace import openb

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
POLICIES = ("fgd", "bestfit", "packing", "clustering", "dotprod", "random")


def gpu_node(name: str, gpus: int = 2, model: str = "T4", cores: int = 32) -> list:
    """A Node and the ResourceSlice of its GPUs, as ``kubesched trace alibaba-openb`` writes them."""
    node = openb.TraceNode(name, cores * 1000, 131072, gpus, model)
    return [from_manifest(openb.node_manifest(node)), from_manifest(openb.slice_manifest(node))]


def used(node: str, gpu: int, milli: int = 1000):
    """A claim already allocated on GPU ``gpu`` of ``node``, consuming ``milli`` of its compute."""
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"used-{node}-{gpu}-{uuid.uuid4().hex[:6]}", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
        "status": {"allocation": {"devices": {"results": [{
            "request": "gpu", "driver": DRIVER, "pool": node, "device": f"gpu-{gpu}",
            "shareID": str(uuid.uuid4()), "consumedCapacity": {"compute": f"{milli}m", "memory": "0"}}]}}},
    })


def gpu_pod(name: str, milli: int = 1000, count: int = 1, cores: int = 4, models: tuple[str, ...] = ()) -> list:
    """A pod (and its claim) asking for ``count`` GPUs of ``milli`` each."""
    pod = openb.TracePod(name, cores * 1000, 8192, count, milli if count else 0, models)
    objects = [from_manifest(openb.claim_manifest(pod))] if count else []
    return objects + [from_manifest(openb.pod_manifest(pod))]


def class_() -> object:
    return from_manifest(openb.device_class())


#: FGD's typical pods in the tests: a half GPU and 1 core, always.
HALF = [{"milliCPU": 1000, "gpuCount": 1, "milliGPU": 500, "weight": 1.0}]


def fgd_typical_pods(typical: list[TypicalPod]) -> object:
    """The ConfigMap FGD reads by default, holding ``typical``."""
    return from_manifest({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": TRACE_CONFIGMAP, "namespace": "default"},
                          "data": {"typical-pods.yaml": typical_pods_yaml(typical)}})


@pytest.fixture
def half_gpus():
    return fgd_typical_pods([TypicalPod(PodShape(1000, 1, 500), 1.0)])
