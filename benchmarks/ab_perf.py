#!/usr/bin/env python3
"""A/B two kubesched revisions on scheduler_perf workloads, alternating, with the machine factor.

    python benchmarks/ab_perf.py a4830f0 HEAD                    # the default four workloads, 2 pairs each
    python benchmarks/ab_perf.py main perf2 --pairs 3 \\
        --case misc:SchedulingBasic:500Nodes \\
        --case topology_spreading:TopologySpreading:5000Nodes_5000Pods
    python benchmarks/ab_perf.py a4830f0 /work/wt/mybranch     # a revision against a checkout (uncommitted work)

A and B are each a git revision of this repository (anything ``git rev-parse``
accepts: a hash, a branch, ``HEAD~3``) or the path of a checkout (a directory
holding ``src/`` and ``pyproject.toml``, e.g. a worktree with uncommitted edits).
A revision is exported once with ``git archive`` into
``/tmp/kubesched-ab/<hash>/`` (``--workdir`` to change) and reused by later runs.

Each side runs in its own ``python -m kubesched.cli perf CONFIG --test T
--workload W -o json`` process that imports kubesched from that side's
``src/`` (a ``kubesched`` link and a ``dist-info`` with that side's plugin entry
points on ``PYTHONPATH``, so the editable install of the current venv is
shadowed); CONFIG is ``data/scheduler_perf/<dir>/performance-config.yaml`` of
that side. A case is ``DIR:TEST:WORKLOAD``, DIR relative to
``data/scheduler_perf`` (``misc``, ``podgroup/tas``, ...).

For each case the pairs alternate the order (A then B, then B then A, ...) so
that drift hurts neither side, and the machine factor
(benchmarks/machine_speed.py) is measured right before each pair. One row per
pair: the factor, each side's SchedulingThroughput Average (pods/s), B/A, and
each process's CPU seconds (user + system, the whole process: reading the
config and creating the objects included). The summary gives, per case, the
median pods/s of each side at factor 1.0 (pods/s x the pair's factor) and the
ratio of the medians. A run that fails or whose workload is not run prints
its last line of stderr instead of a number.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from machine_speed import machine_factor

REPO = Path(__file__).resolve().parents[1]

#: the default cases: the workloads the per-pod cost of the scheduling path shows on
DEFAULT_CASES = (
    "misc:SchedulingBasic:500Nodes",
    "misc:SchedulingBasic:5000Nodes_10000Pods",
    "topology_spreading:TopologySpreading:5000Nodes_5000Pods",
    "podgroup/tas:TopologyAwareScheduling:5000Nodes_750Gangs_3000Pods",
)


@dataclass(frozen=True)
class Side:
    """One side of the A/B: its label, the checkout it runs, and the PYTHONPATH entry that imports it."""

    label: str
    root: Path
    site: Path


@dataclass
class Run:
    """One perf process: pods/s (None when it failed), CPU seconds, and why it failed."""

    pods_per_s: float | None
    cpu_s: float
    error: str = ""


@dataclass
class CaseResult:
    """Every pair of one case: (factor, run of A, run of B) in the order measured."""

    case: str
    pairs: list[tuple[float, Run, Run]] = field(default_factory=list)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def _export(revision: str, workdir: Path) -> Path:
    """The checkout of ``revision`` under ``workdir`` (exported with git archive once, then reused)."""
    try:
        commit = _git("rev-parse", "--verify", f"{revision}^{{commit}}")
    except subprocess.CalledProcessError:
        sys.exit(f"ab_perf: {revision!r} is neither a checkout directory nor a git revision of {REPO}")
    root = workdir / commit[:12]
    if (root / "pyproject.toml").is_file():
        return root
    partial = Path(tempfile.mkdtemp(prefix=f"{commit[:12]}.", dir=workdir))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, "src", "data",
                              "pyproject.toml", "benchmarks"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(root)
    return root


def _site(root: Path, workdir: Path) -> Path:
    """A PYTHONPATH entry importing ``kubesched`` from ``root/src``, with ``root``'s plugin entry points."""
    site = workdir / "site" / hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    (site / "kubesched").symlink_to(root.resolve() / "src", target_is_directory=True)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    info = site / f"kubesched-{project.get('version', '0')}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: kubesched\nVersion: {project.get('version', '0')}\n")
    lines = []
    for group, entries in sorted(project.get("entry-points", {}).items()):
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in entries.items())
        lines.append("")
    if "scripts" in project:
        lines.append("[console_scripts]")
        lines.extend(f"{name} = {target}" for name, target in project["scripts"].items())
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site


def resolve_side(spec: str, label: str, workdir: Path) -> Side:
    """``spec`` (a checkout directory or a git revision) as a runnable side."""
    path = Path(spec)
    if path.is_dir() and (path / "src").is_dir() and (path / "pyproject.toml").is_file():
        root = path.resolve()
    else:
        root = _export(spec, workdir)
    return Side(label=f"{label}={spec}", root=root, site=_site(root, workdir))


def run_once(side: Side, case: str, timeout: float) -> Run:
    """One ``kubesched perf`` process of ``side`` on ``case`` (DIR:TEST:WORKLOAD)."""
    directory, test, workload = case.split(":", 2)
    config = side.root / "data/scheduler_perf" / directory / "performance-config.yaml"
    if not config.is_file():
        return Run(None, 0.0, f"no {config.relative_to(side.root)} in this side")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(side.site), os.environ.get("PYTHONPATH", "")]))
    check = (f"import kubesched, os, sys; where = os.path.realpath(kubesched.__file__); "
             f"sys.exit(0 if where.startswith({str(side.root / 'src') + os.sep!r}) "
             f"else 'kubesched imported from ' + where)")
    imported = subprocess.run([sys.executable, "-c", check], env=env, cwd=side.root, capture_output=True, text=True)
    if imported.returncode:
        return Run(None, 0.0, (imported.stderr.strip().splitlines() or ["import failed"])[-1])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run([sys.executable, "-m", "kubesched.cli", "perf", str(config), "--test", test,
                               "--workload", workload, "-o", "json"],
                              env=env, cwd=side.root, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Run(None, timeout, f"timed out after {timeout:.0f} s")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last_err = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    try:
        items = json.loads(done.stdout)["dataItems"]
    except (ValueError, KeyError, TypeError):
        return Run(None, cpu, last_err)
    for item in items:
        if item.get("labels", {}).get("Metric") == "SchedulingThroughput":
            return Run(float(item["data"]["Average"]), cpu)
    return Run(None, cpu, f"no SchedulingThroughput ({last_err})")


def _num(run: Run) -> str:
    return f"{run.pods_per_s:>9.1f}" if run.pods_per_s is not None else f"{'-':>9}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="side A: a git revision or a checkout directory (the baseline)")
    parser.add_argument("b", help="side B: a git revision or a checkout directory")
    parser.add_argument("--case", action="append", metavar="DIR:TEST:WORKLOAD",
                        help="a workload (repeatable; default: the four of DEFAULT_CASES)")
    parser.add_argument("--pairs", type=int, default=2, help="A/B pairs per case (default 2)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one perf process may take")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kubesched-ab",
                        help="where revisions are exported (default /tmp/kubesched-ab)")
    parser.add_argument("--json", action="store_true", help="also print every run as one JSON object at the end")
    args = parser.parse_args()
    cases = args.case or list(DEFAULT_CASES)
    for case in cases:
        if case.count(":") < 2:
            parser.error(f"--case {case!r}: expected DIR:TEST:WORKLOAD, e.g. misc:SchedulingBasic:500Nodes")
    args.workdir.mkdir(parents=True, exist_ok=True)
    a = resolve_side(args.a, "A", args.workdir)
    b = resolve_side(args.b, "B", args.workdir)
    print(f"A: {a.label} ({a.root})\nB: {b.label} ({b.root})")
    print("pods/s = SchedulingThroughput Average; cpu s = the perf process's user+system seconds; "
          "factor = benchmarks/machine_speed.py right before the pair (at factor 1.0: pods/s x factor)")
    print(f"{'case':<62} {'pair':>4} {'factor':>6} {'A pods/s':>9} {'B pods/s':>9} {'B/A':>6} "
          f"{'A cpu s':>8} {'B cpu s':>8}")
    results: list[CaseResult] = []
    for case in cases:
        result = CaseResult(case)
        results.append(result)
        for pair in range(args.pairs):
            factor = machine_factor(3)
            order = (a, b) if pair % 2 == 0 else (b, a)
            runs = {side.label: run_once(side, case, args.timeout) for side in order}
            run_a, run_b = runs[a.label], runs[b.label]
            result.pairs.append((factor, run_a, run_b))
            ratio = (f"{run_b.pods_per_s / run_a.pods_per_s:>6.2f}"
                     if run_a.pods_per_s and run_b.pods_per_s else f"{'-':>6}")
            print(f"{case:<62} {pair + 1:>4} {factor:>6.2f} {_num(run_a)} {_num(run_b)} {ratio} "
                  f"{run_a.cpu_s:>8.1f} {run_b.cpu_s:>8.1f}", flush=True)
            for label, run in (("A", run_a), ("B", run_b)):
                if run.error:
                    print(f"    {label}: {run.error}", flush=True)
    print(f"\nsummary (medians over pairs, pods/s at factor 1.0)\n{'case':<62} {'A':>9} {'B':>9} {'B/A':>6}")
    for result in results:
        at_one_a = [f * ra.pods_per_s for f, ra, _ in result.pairs if ra.pods_per_s]
        at_one_b = [f * rb.pods_per_s for f, _, rb in result.pairs if rb.pods_per_s]
        med_a = statistics.median(at_one_a) if at_one_a else None
        med_b = statistics.median(at_one_b) if at_one_b else None
        ratio = f"{med_b / med_a:>6.2f}" if med_a and med_b else f"{'-':>6}"
        print(f"{result.case:<62} {med_a or 0:>9.1f} {med_b or 0:>9.1f} {ratio}")
    if args.json:
        print(json.dumps({"a": a.label, "b": b.label, "cases": [
            {"case": r.case, "pairs": [{"factor": f, "a": ra.__dict__, "b": rb.__dict__} for f, ra, rb in r.pairs]}
            for r in results]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
