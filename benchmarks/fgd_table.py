#!/usr/bin/env python3
"""The FGD paper's table (GPU allocation at 130 % arrival), ours vs published.

    python benchmarks/fgd_table.py                       # 6 policies x seeds 42..51, 2 at a time
    python benchmarks/fgd_table.py --seeds 42 --policies fgd,bestfit
    python benchmarks/fgd_table.py --jobs 1 --table benchmarks/fgd-table.md

Converts Alibaba's openb trace (``kubesched trace alibaba-openb``) once per
seed, replays it with each policy of examples/kubesched-fgd (which must be
installed: ``pip install -e examples/kubesched-fgd``), and writes a markdown
table (ours, mean and spread over the seeds, beside the paper's published
mean; fragmentation at 90 % arrival; wall seconds per replay) and every
replay's JSON result.  The data directory defaults to the repository's
data/alibaba-gpu-v2023 (override with --data or $OPENB_DATA).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from machine_speed import factor_note, machine_factor

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "data/alibaba-gpu-v2023"
CONFIGS = ROOT / "examples/kubesched-fgd/configs"
#: our config name -> the paper's policy name, in the paper's order
POLICIES = {"random": "01-Random", "dotprod": "02-DotProd", "clustering": "03-GpuClustering",
            "packing": "04-GpuPacking", "bestfit": "05-BestFit", "fgd": "06-FGD"}


HOW = """
How: `python benchmarks/fgd_table.py` (see benchmarks/README.md). Each replay converts the trace with
`kubesched trace alibaba-openb --seed N --arrival 1.3` and runs `kubesched trace replay --config
examples/kubesched-fgd/configs/<policy>.yaml`: GPUs as DRA devices (ResourceSlices, claims with consumable
capacity), the policy an out-of-tree Score plugin, pods tried once each in the paper's arrival order,
ties between equally scored nodes broken by a seeded node ranking as the paper's simulator does. "paper" is
the mean over the authors' 10 published runs (fgd-published-results); the seeds are the paper's, but
Python's random generator stands in for Go's, so the orders (and single runs) differ while the means compare
(`--rng go` gives the paper's single runs themselves: see fgd-reproduction.md).
"""


def seeds_of(text: str) -> list[int]:
    """``42-51`` or ``42,43``."""
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def run_one(trace: str, policy: str, out: str) -> dict:
    from kubesched.trace.replay import replay

    result = replay(trace, CONFIGS / f"{policy}.yaml").to_json()
    result["policy"] = policy
    Path(out).write_text(json.dumps(result) + "\n")
    return result


def published(data: Path, workload: str) -> dict[str, dict[str, float]]:
    path = data / "fgd-published-results/fgd_summary_mean_over_10_seeds.csv"
    with path.open() as handle:
        return {row["sc_policy"]: {"alloc": float(row["alloc_pct_at_arrived_130"]),
                                   "frag90": float(row["frag_amount_pct_of_total_at_90"])}
                for row in csv.DictReader(handle) if row["workload"] == workload}


def at(points: list, arrived: int) -> float | None:
    return next((value for point, value in points if point == arrived), None)


def table(results: list[dict], paper: dict, seeds: list[int], workload: str) -> str:
    lines = [
        f"Workload `{workload}`, arrival 130 %, seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}); "
        "GPU allocation ratio at 130 % arrival (mean over seeds, like the paper's published mean).",
        "",
        "| policy | ours (mean) | min..max | paper (mean) | ours - paper | frag @90 % ours | paper | wall s per replay (mean, max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    means = {}
    for policy, name in POLICIES.items():
        runs = [r for r in results if r["policy"] == policy]
        if not runs:
            continue
        alloc = [at(r["curve"], 130) or r["gpu_allocation_ratio"] for r in runs]
        frag = [at(r["fragmentation"], 90) for r in runs]
        wall = [r["wall_seconds"] for r in runs]
        mean = statistics.fmean(alloc)
        means[policy] = mean
        ref = paper.get(name, {})
        lines.append(
            f"| {name[3:]} | {mean:.2f} | {min(alloc):.2f}..{max(alloc):.2f} | {ref.get('alloc', float('nan')):.2f} "
            f"| {mean - ref.get('alloc', float('nan')):+.2f} | {statistics.fmean(f for f in frag if f is not None):.2f} "
            f"| {ref.get('frag90', float('nan')):.2f} | {statistics.fmean(wall):.1f}, {max(wall):.1f} |")
    order = sorted(means, key=means.get, reverse=True)
    lines += ["", "Order (ours, best first): " + " > ".join(POLICIES[p][3:] for p in order)]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("OPENB_DATA", str(DEFAULT_DATA)))
    parser.add_argument("--pods", default="openb_pod_list_default.csv")
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--arrival", type=float, default=1.3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", default="/tmp/kubesched-fgd-table", help="converted traces and per-run JSON")
    parser.add_argument("--table", default=None, help="write the markdown table here too")
    parser.add_argument("--reuse", action="store_true", help="take replays already in --work instead of running them")
    parser.add_argument("--alone", action="store_true",
                        help="also time one replay per policy (first seed) with nothing else running")
    args = parser.parse_args()
    factor = machine_factor()
    from kubesched.trace.openb import convert

    data, work = Path(args.data), Path(args.work)
    seeds = seeds_of(args.seeds)
    policies = args.policies.split(",")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        parser.error(f"unknown policies {unknown}; known: {', '.join(POLICIES)}")
    workload = Path(args.pods).stem
    jobs = []
    for seed in seeds:
        trace = work / f"{workload}-{seed}"
        if not (trace / "pods.json").is_file():
            convert(data / "openb_node_list_gpu_node.csv", data / args.pods, trace, seed=seed, arrival=args.arrival)
        for policy in policies:
            jobs.append((str(trace), policy, str(work / f"{workload}-{seed}-{policy}.json")))
    results = []
    if args.reuse:
        results = [json.loads(Path(out).read_text()) for _, _, out in jobs if Path(out).is_file()]
        jobs = [job for job in jobs if not Path(job[2]).is_file()]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(run_one, *zip(*jobs)) if jobs else ():
            results.append(result)
            print(f"{result['policy']:>10} seed {result['seed']}: {at(result['curve'], 130)} % "
                  f"({result['wall_seconds']} s)", file=sys.stderr)
    text = "# The FGD paper's table, replayed on kubesched\n\n" + table(results, published(data, workload), seeds, workload)
    text += HOW
    text += (f"\n{len(results)} replays, {args.jobs} at a time, on "
             f"{os.cpu_count()} CPUs (Python {platform.python_version()}), {factor_note(factor)}; a replay's wall "
             "time includes loading the trace and is longer while another replay shares the machine.\n")
    if args.alone:
        lines = ["", f"Wall time of one replay alone (seed {seeds[0]}, nothing else running, loading included):", "",
                 "| policy | wall s |", "|---|---:|"]
        for policy in policies:
            trace = work / f"{workload}-{seeds[0]}"
            result = run_one(str(trace), policy, str(work / f"alone-{policy}.json"))
            lines.append(f"| {POLICIES[policy][3:]} | {result['wall_seconds']:.1f} |")
        text += "\n".join(lines) + "\n"
    print(text)
    if args.table:
        Path(args.table).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
