#!/usr/bin/env python3
"""Reading manifests and writing ``-o json`` / ``-o yaml`` (issue 41, item 3): CPU seconds per step, A/B'd.

    python benchmarks/manifest_io.py                         # spread-100apps' 15,000 manifests, this checkout
    python benchmarks/manifest_io.py --input /tmp/peer/in-plain --input out.json   # manifests as they are
    python benchmarks/manifest_io.py --ab 362f570 --pairs 2  # a revision (or a checkout) against this checkout

Each side runs in a process of its own that imports kubesched from that side's ``src/`` (as
benchmarks/ab_perf.py exports a revision) and times, best of ``--repeats`` in that process, in CPU seconds
(``time.process_time``): reading every object of the inputs (``load_sourced_objects``: parsing, bounds, strict
typed decoding), writing them all as ``-o json`` (``write_json_list``) and as ``-o yaml`` (``write_yaml``) to
a sink.  The default input is written as ``benchmarks/scale.py`` writes its ``spread-100apps`` case (5,000
nodes, 10,000 pods with a soft zone spread constraint); the JSON output of a ``kubesched simulate -o json`` run
(``--input out.json``) measures writing the objects a simulation ends with (statuses, conditions, Events).
With ``--ab``, the pairs alternate the order and the machine factor (benchmarks/machine_speed.py) is measured
before each pair; the summary gives each side's median and old / new.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("read", "write json", "write yaml")


class _Sink(io.TextIOBase):
    """A text stream that counts what is written and keeps nothing."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


def measure(paths: list[str], repeats: int) -> dict[str, float]:
    """Best CPU seconds of each step over ``repeats`` rounds, in this process (kubesched from PYTHONPATH)."""
    from kubesched.core.api.manifests import load_sourced_objects, write_json_list, write_yaml

    best = dict.fromkeys(STEPS, float("inf"))
    objects: list = []
    for _ in range(repeats):
        started = time.process_time()
        objects = [obj for _, obj in load_sourced_objects(paths)]
        best["read"] = min(best["read"], time.process_time() - started)
        for step, write in (("write json", write_json_list), ("write yaml", write_yaml)):
            started = time.process_time()
            write(objects, _Sink())
            best[step] = min(best[step], time.process_time() - started)
    best["objects"] = len(objects)
    return best


def run_side(site: Path | None, paths: list[str], repeats: int) -> dict[str, float]:
    """:func:`measure` in a child process importing kubesched through ``site`` (None: this environment's)."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--repeats", str(repeats),
                           *(arg for path in paths for arg in ("--input", path))],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"manifest_io: a side failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def default_input(directory: Path) -> Path:
    """spread-100apps' manifests (benchmarks/scale.py) written under ``directory``."""
    sys.path.insert(0, str(HERE))
    import scale

    nodes, pods, apps, cpu, memory, pod = scale.CASES["spread-100apps"]
    scale.write_case(directory, nodes, pods, apps, cpu, memory, pod)
    return directory


def main() -> None:
    """Parse the options, run the sides, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", action="append", default=[], help="a manifest file or directory (repeatable)")
    parser.add_argument("--ab", metavar="REV", help="also run this git revision or checkout, alternating")
    parser.add_argument("--pairs", type=int, default=2, help="A/B pairs (default 2)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds per process, the best kept (default 2)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.input, args.repeats)))
        return
    sys.path.insert(0, str(HERE))
    from ab_perf import resolve_side
    from machine_speed import machine_factor

    with tempfile.TemporaryDirectory() as scratch:
        paths = args.input or [str(default_input(Path(scratch) / "spread-100apps"))]
        sides: list[tuple[str, Path | None]] = [("new (this checkout)", None)]
        if args.ab:
            workdir = Path(tempfile.gettempdir()) / "kubesched-ab"
            workdir.mkdir(parents=True, exist_ok=True)
            sides.insert(0, (f"old ({args.ab})", resolve_side(args.ab, "A", workdir).site))
        results: dict[str, list[dict[str, float]]] = {label: [] for label, _ in sides}
        print(f"inputs: {', '.join(paths)}")
        print(f"{'side':<24} {'factor':>6} {'objects':>8} " + " ".join(f"{step + ' s':>12}" for step in STEPS))
        for pair in range(args.pairs if args.ab else 1):
            factor = machine_factor()
            for label, site in sides if pair % 2 == 0 else list(reversed(sides)):
                result = run_side(site, paths, args.repeats)
                results[label].append(result)
                print(f"{label:<24} {factor:>6.2f} {int(result['objects']):>8,} "
                      + " ".join(f"{result[step]:>12.2f}" for step in STEPS), flush=True)
    if args.ab:
        (old_label, _), (new_label, _) = sides
        medians = {label: {step: statistics.median(r[step] for r in runs) for step in STEPS}
                   for label, runs in results.items()}
        print("median CPU s, old / new: " + ", ".join(
            f"{step} {medians[old_label][step]:.2f} / {medians[new_label][step]:.2f} = "
            f"{medians[old_label][step] / max(medians[new_label][step], 1e-9):.1f}x" for step in STEPS))


if __name__ == "__main__":
    main()
