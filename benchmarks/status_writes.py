#!/usr/bin/env python3
"""What a bound pod costs outside the scheduler (issue 41): CPU microseconds per pod, in process.

    python benchmarks/status_writes.py                     # 2,000 pods, best of 3
    python benchmarks/status_writes.py --pods 5000 --repeat 5
    PYTHONPATH=/tmp/old python benchmarks/status_writes.py  # another checkout's kubesched (a dir holding kubesched/)

Rows, each the best of ``--repeat`` rounds over ``--pods`` pods (CPU seconds of this process / pods):

- ``kubelet status patch``: the simulated kubelet starting a bound pod, as a whole ``simulate`` does it once per
  pod: phase ``Running``, ``startTime`` and the four conditions sent as one strategic merge patch of ``/status``
  (the client's two-way diff, the embedded API server's merge, strict decoding, store, watch event);
- ``status update to every controller``: that write's watch event delivered to the Pod handlers of every
  controller a ``simulate`` runs (the informer's store and fan-out included, no scheduler): what each pod's
  status-only update costs the controllers that ignore it;
- ``pods/binding``: the binding write (spec.nodeName, the PodScheduled condition, store, watch event).

The machine factor and the CPU factor (``scale.py``'s: benchmarks/machine_speed.py's loop, its best wall and CPU
seconds / 1.30 s) are printed beside them; "at 1.0" divides the CPU microseconds by the CPU factor.
"""

from __future__ import annotations

import argparse
import time

from scale import machine_factors

from kubesched.controllers import build_controller_manager
from kubesched.controllers.kubelet import _with_conditions
from kubesched.core.api import from_manifest
from kubesched.core.api.meta import evolve
from kubesched.core.clock import FakeClock
from kubesched.core.cluster.informer import Informers
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.cluster.patch import patch_status
from kubesched.core.controller.base import ControllerContext


def _pod(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"app": f"app-{i % 100}"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}


def one_round(pods: int) -> tuple[float, float, float]:
    """CPU seconds of (binding, kubelet patches, delivering the patches' events to the controllers) for ``pods``."""
    clock = FakeClock()
    cluster = MemoryCluster(clock=clock)
    for i in range(pods):
        cluster.create(from_manifest(_pod(i)))
    informers = Informers(cluster)
    build_controller_manager(ControllerContext(cluster, informers, clock))
    informers.start()
    informers.pump()
    clock.advance(1.5)
    start = time.process_time()
    for i in range(pods):
        cluster.bind("default", f"pod-{i}", "", f"node-{i % 50}")
    binding = time.process_time() - start
    informers.pump()
    clock.advance(2.25)
    now = clock.now()
    bound = [informers.get("Pod", f"default/pod-{i}") for i in range(pods)]
    start = time.process_time()
    for pod in bound:
        status = evolve(pod.status, phase="Running", start_time=now, conditions=_with_conditions(pod, now, "True"))
        patch_status(cluster, pod, status)
    patching = time.process_time() - start
    start = time.process_time()
    informers.pump()
    delivering = time.process_time() - start
    return binding, patching, delivering


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    factor, cpu_factor = machine_factors()
    rounds = [one_round(args.pods) for _ in range(args.repeat)]
    best = [min(r[i] for r in rounds) for i in range(3)]
    print(f"machine factor {factor:.2f}, CPU factor {cpu_factor:.2f}, {args.pods:,} pods, best of {args.repeat}")
    print("| per pod | CPU us | CPU us at 1.0 |")
    print("|---|---:|---:|")
    for name, seconds in (("kubelet status patch", best[1]), ("status update to every controller", best[2]),
                          ("pods/binding", best[0])):
        us = seconds / args.pods * 1e6
        print(f"| {name} | {us:.1f} | {us / cpu_factor:.1f} |")


if __name__ == "__main__":
    main()
