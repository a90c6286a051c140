#!/usr/bin/env python3
"""What ``kubesched plan`` costs: 200 pending pods over 5 node templates (issue 39, item 4: <= 10 s at factor 1.0).

    python benchmarks/plan_speed.py                 # greedy least-waste and price
    python benchmarks/plan_speed.py --search        # the rollout search as well (slower)

The cluster: 10 running 8-CPU nodes (half full); pending: 200 pods of four
shapes (0.5, 1, 2 and 4 CPU with 1-8 GiB), 40 of them with a node selector
for the memory-optimised pool.  Templates: 4, 8, 16 and 32 CPU general nodes
and a memory-optimised one (costs in proportion, max 50 each).  Each row:
the mode and expander, wall seconds of the plan (after building the
simulator) and CPU seconds of this process, nodes added, cost per hour, pods left pending; the machine factor
printed beside.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import factor_note, machine_factor  # noqa: E402

from kubesched.core.api.manifests import parse_document  # noqa: E402
from kubesched.plan.scale_up import plan_scale_up  # noqa: E402
from kubesched.plan.templates import split_templates  # noqa: E402
from kubesched.sim import Simulator  # noqa: E402

TARGET_S = 10.0


def node(name: str, cpu: int, gib: int, labels: dict | None = None, template: tuple[float, int] | None = None) -> dict:
    meta: dict = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    if template:
        meta["annotations"] = {"kubesched.io/node-template": "true", "kubesched.io/cost-per-hour": str(template[0]),
                               "kubesched.io/max-count": str(template[1])}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{gib}Gi", "pods": "110"}}}


def pod(name: str, milli: int, gib: int, selector: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x",
                                  "resources": {"requests": {"cpu": f"{milli}m", "memory": f"{gib}Gi"}}}]}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def objects() -> list:
    found = [node(f"running-{i}", 8, 32) for i in range(10)]
    found += [pod(f"running-pod-{i}", 4000, 8) for i in range(10)]
    shapes = [(500, 1), (1000, 2), (2000, 4), (4000, 8)]
    for i in range(200):
        milli, gib = shapes[i % 4]
        found.append(pod(f"pending-{i}", milli, gib * 4 if i % 5 == 0 else gib,
                         {"pool": "memory"} if i % 5 == 0 else None))
    found += [node("general-4", 4, 16, template=(0.20, 50)), node("general-8", 8, 32, template=(0.40, 50)),
              node("general-16", 16, 64, template=(0.80, 50)), node("general-32", 32, 128, template=(1.60, 50)),
              node("memory-16", 16, 256, {"pool": "memory"}, template=(1.20, 50))]
    return [("<benchmark>", parse_document(obj)) for obj in found]


def measure(expander: str, search: bool) -> list[str]:
    templates, rest = split_templates(objects())
    sim = Simulator.from_manifests(rest)
    started, cpu = time.perf_counter(), time.process_time()
    plan = plan_scale_up(sim, templates, expander, search=search)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    pending = sum(1 for node_name in plan.placements.values() if not node_name)
    added = ", ".join(f"{name} x{count}" for name, count in plan.added.items())
    return ["search" if search else "greedy", expander, f"{seconds:.1f}", f"{cpu:.1f}", added, f"{plan.cost_per_hour:.2f}",
            str(pending)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--search", action="store_true", help="also the rollout search (--mode search)")
    args = parser.parse_args()
    factor = machine_factor()
    print(factor_note(factor))
    rows = [measure("least-waste", False), measure("price", False)]
    if args.search:
        rows.append(measure("price", True))
    print(f"| mode | expander | seconds | CPU seconds | nodes added | cost/hour | pending after | (target "
          f"{TARGET_S:.0f} s at factor 1.0 = {TARGET_S * factor:.1f} s here)")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
