"""What the example's tests share: GPUs already in use, FGD's typical pods, the policies' configurations."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kubesched import from_manifest
from kubesched.gpu import GPU_DRIVER, PodShape, TypicalPod
from kubesched.testing import typical_pods_configmap

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
POLICIES = ("fgd", "bestfit", "packing", "clustering", "dotprod", "random")


def used(node: str, gpu: int, milli: int = 1000):
    """A claim already allocated on GPU ``gpu`` of ``node``, consuming ``milli`` of its compute."""
    return from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"used-{node}-{gpu}-{uuid.uuid4().hex[:6]}", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_DRIVER}}]}},
        "status": {"allocation": {"devices": {"results": [{
            "request": "gpu", "driver": GPU_DRIVER, "pool": node, "device": f"gpu-{gpu}",
            "shareID": str(uuid.uuid4()), "consumedCapacity": {"compute": f"{milli}m", "memory": "0"}}]}}},
    })


#: FGD's typical pods in the tests: a half GPU and 1 core, always.
HALF = [{"milliCPU": 1000, "gpuCount": 1, "milliGPU": 500, "weight": 1.0}]


@pytest.fixture
def half_gpus():
    return typical_pods_configmap([TypicalPod(PodShape(1000, 1, 500), 1.0)])
