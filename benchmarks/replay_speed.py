#!/usr/bin/env python3
"""Wall time of one full trace replay per policy, and where the time goes.

    python benchmarks/replay_speed.py                          # default trace, seed 42, every policy
    python benchmarks/replay_speed.py --policies random,fgd --profile
    python benchmarks/replay_speed.py --pods data/alibaba-gpu-v2023/openb_pod_list_cpu250.csv

Converts the trace once (``kubesched trace alibaba-openb``), then replays it
with each policy of examples/kubesched-fgd (``pip install -e
examples/kubesched-fgd``) one after another in this process, as a sweep
worker does (the first replay reads the trace's files, the others find them
parsed), nothing else running, and prints a table: wall seconds, pods per
second, GPU allocation.  Before each replay the previous one's garbage is
collected (a process of its own would start clean) and the machine factor is
measured.  ``--profile`` runs each replay under cProfile and adds the share
of the replay's time spent in each phase (a phase's time includes what it
calls, so shares overlap: PreBind includes the API writes it makes).
cProfile slows Python code down about twice, unevenly: read the shares, not
the seconds.  The issue's target: under 10 s per full replay, every policy,
at machine factor 1.0 (benchmarks/machine_speed.py): the table gives each
wall time also divided by its factor.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import tempfile
import time
from pathlib import Path

from machine_speed import machine_factor

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data/alibaba-gpu-v2023"
CONFIGS = ROOT / "examples/kubesched-fgd/configs"
POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")

#: phase -> (file suffix, function name[, only when called from this file]) of the functions whose
#: cumulative time is the phase's
PHASES: dict[str, list[tuple[str, ...]]] = {
    "read the pods' manifests": [("core/api/manifests.py", "parse_document")],
    "PreFilter": [("core/framework/runtime.py", "run_pre_filter")],
    "Filter (feasible nodes)": [("core/framework/runtime.py", "find_feasible_rows")],
    "Filter again for the reasons (unschedulable pods)": [("core/framework/runtime.py", "diagnose")],
    "Score": [("core/framework/runtime.py", "run_score")],
    "Reserve (DRA allocation)": [("core/framework/runtime.py", "run_reserve")],
    "PreBind (claim status writes)": [("core/framework/runtime.py", "run_pre_bind")],
    "Bind": [("core/framework/runtime.py", "run_bind")],
    "failure handling (events, pod status)": [("core/scheduler/scheduling_cycle.py", "handle_failure")],
    "the embedded API server (create/update/delete)": [
        ("core/cluster/memory.py", "create"), ("core/cluster/memory.py", "update"),
        ("core/cluster/memory.py", "update_status"), ("core/cluster/memory.py", "delete"),
        ("core/cluster/memory.py", "bind")],
    "informers (watch events to caches)": [("core/cluster/informer.py", "pump")],
    "the replay's GPU and fragmentation bookkeeping": [
        ("core/gpu/fragmentation.py", "node_fragmentation", "trace/replay.py"),
        ("core/gpu/gpus.py", "sync", "trace/replay.py")],
}


def phase_shares(stats: pstats.Stats, total: float) -> dict[str, float]:
    """Per phase, % of ``total`` seconds (cumulative times)."""
    shares = {}
    table = stats.stats  # type: ignore[attr-defined]  # (file, line, name) -> (cc, calls, tt, cumulative, callers)
    for phase, functions in PHASES.items():
        seconds = 0.0
        for (filename, _, name), (_, _, _, cumulative, callers) in table.items():
            for suffix, wanted, *caller in functions:
                if name != wanted or not filename.endswith(suffix):
                    continue
                if caller:
                    seconds += sum(entry[3] for where, entry in callers.items() if where[0].endswith(caller[0]))
                else:
                    seconds += cumulative
        shares[phase] = 100 * seconds / total if total else 0.0
    return shares


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default=str(DATA / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--pods", default=str(DATA / "openb_pod_list_default.csv"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--profile", action="store_true", help="add where the time goes (cProfile)")
    args = parser.parse_args()

    from kubesched.trace.openb import convert
    from kubesched.trace.replay import replay

    policies = [p for p in args.policies.split(",") if p]
    rows = []
    shares: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        trace = Path(work) / "trace"
        convert(args.nodes, args.pods, trace, seed=args.seed, arrival=1.3)
        for policy in policies:
            # the previous replay's objects are garbage in reference cycles (scheduler, informers, cluster):
            # collected here, as a process of its own would start, not by a full collection inside the next
            gc.collect()
            factor = machine_factor(3)  # shared machines drift within minutes: measured next to each replay
            profiler = cProfile.Profile() if args.profile else None
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            result = replay(trace, CONFIGS / f"{policy}.yaml")
            if profiler is not None:
                profiler.disable()
            wall = time.perf_counter() - started
            rows.append((policy, wall, factor, result.pods / wall, result.gpu_allocation_ratio, result.pods))
            if profiler is not None:
                shares[policy] = phase_shares(pstats.Stats(profiler), wall)
            print(f"{policy}: {wall:.1f} s", file=sys.stderr, flush=True)

    print(f"\nTrace {Path(args.pods).name}, seed {args.seed}, {rows[0][5] if rows else 0} pods"
          f"{' (under cProfile: slower)' if args.profile else ''}; the machine factor measured just before each "
          f"replay (benchmarks/machine_speed.py, best of 3): at factor 1.0, seconds / factor\n")
    print("| policy | wall s | machine factor | wall s at factor 1.0 | pods/s | GPU allocation % |")
    print("|---|---:|---:|---:|---:|---:|")
    for policy, wall, factor, rate, allocation, _ in rows:
        print(f"| {policy} | {wall:.1f} | {factor:.2f} | {wall / factor:.1f} | {rate:.0f} | {allocation:.2f} |")
    if shares:
        print("\nWhere the time goes (% of each replay, phases overlap where one calls another)\n")
        print("| phase | " + " | ".join(policies) + " |")
        print("|---|" + "---:|" * len(policies))
        for phase in PHASES:
            print(f"| {phase} | " + " | ".join(f"{shares[p][phase]:.0f}" for p in policies) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
