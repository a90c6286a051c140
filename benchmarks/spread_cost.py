#!/usr/bin/env python3
"""PodTopologySpread's own cost per pod in a whole ``kubesched simulate`` run (issue 41): CPU us per pod of each hook.

    python benchmarks/spread_cost.py                                   # spread-1app and spread-100apps (long: ~1 min)
    python benchmarks/spread_cost.py --case envelope --pods 3000       # a sample of the envelope case
    PYTHONPATH=/tmp/old python benchmarks/spread_cost.py --case spread-1app   # another checkout's kubesched (A/B)
    python benchmarks/spread_cost.py --case envelope --pods 15000 --after 10000 --plugin InterPodAffinity \
        --plugin NodeAffinity --plugin TaintToleration --plugin ImageLocality   # the envelope's plugins, pods 10,000 on

Each case is written as ``benchmarks/scale.py`` writes it and run as one ``kubesched simulate -f DIR -o json``
child process whose PodTopologySpread hooks (PreFilter, PreScore, Score, NormalizeScore, ...) and the pod counts'
refresh as pods are assumed and bound (``PodCounts.refresh``, shared with InterPodAffinity) are wrapped with a CPU
timer (``time.process_time_ns``; the wrapper adds well under 1 us per call).  The table gives CPU microseconds per
scheduled pod for each, their sum, the child's whole CPU seconds and the machine factor
(``benchmarks/machine_speed.py``, measured just before each run): CPU us at factor 1.0 is about us / factor while
the machine is quiet (a busy shared machine inflates CPU time less than wall time).  ``--plugin NAME`` also times
that built-in plugin's hooks (a column per hook, named ``Plugin.hook``); ``--after N`` counts only what is spent
after the N-th pod's PreScore (the steady state, once every app's counts are made), per pod scheduled after it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from scale import CASES, machine_factors, write_case

#: the child: wrap the hooks, run simulate, write {hook: [calls, ns]} and the pods to the file named by argv[1]
CHILD = r"""
import atexit, collections, functools, importlib, json, sys, time
from kubesched.plugins.podtopologyspread import plugin
from kubesched.core.framework import pod_counts
spent, calls = collections.Counter(), collections.Counter()
out, directory, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
started = [0]
def timed(cls, name, label):
    method = getattr(cls, name)
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        began = time.process_time_ns()
        try:
            return method(*args, **kwargs)
        finally:
            spent[label] += time.process_time_ns() - began
            calls[label] += 1
            if label == "pre_score" and calls[label] == after:  # the steady state begins: count from here
                spent.clear()
                started[0] = calls[label]
    setattr(cls, name, wrapper)
HOOKS = ("pre_filter", "filter", "filter_batch", "pre_score", "score", "score_batch", "normalize_score",
         "sign_pod", "pre_filter_add_pod", "pre_filter_remove_pod")
for hook in HOOKS:
    if hasattr(plugin.PodTopologySpread, hook):
        timed(plugin.PodTopologySpread, hook, hook)
for module, name in (item.split(":") for item in sys.argv[4:]):
    cls = getattr(importlib.import_module(module), name)
    for hook in HOOKS:
        if hook in vars(cls):
            timed(cls, hook, f"{name}.{hook}")
timed(pod_counts.PodCounts, "refresh", "PodCounts.refresh")
atexit.register(lambda: json.dump({"after": started[0], **{k: [calls[k], spent[k]] for k in spent}}, open(out, "w")))
sys.argv = ["kubesched", "simulate", "-f", directory, "-o", "json"]
from kubesched.cli import app
app()
"""


#: the built-in plugins ``--plugin`` can time, as module:class
PLUGINS = {
    "InterPodAffinity": "kubesched.plugins.interpodaffinity.plugin:InterPodAffinity",
    "NodeAffinity": "kubesched.plugins.nodeaffinity:NodeAffinity",
    "TaintToleration": "kubesched.plugins.tainttoleration:TaintToleration",
    "ImageLocality": "kubesched.plugins.imagelocality:ImageLocality",
}


def run(directory: Path, after: int = 0, plugins: tuple[str, ...] = ()) -> tuple[dict[str, list[int]], int, float]:
    """Run the timed child on ``directory``: ({hook: [calls, CPU ns]}, pods scheduled, the child's CPU seconds).
    Raises SystemExit when the run fails."""
    with tempfile.NamedTemporaryFile(suffix=".json") as spent, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-c", CHILD, spent.name, str(directory), str(after),
                                  *(PLUGINS[name] for name in plugins)], stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"kubesched simulate failed: {err.read().decode()[-2000:]}")
        out.seek(0)
        items = json.loads(out.read())
        items = items.get("items", items) if isinstance(items, dict) else items
        scheduled = sum(1 for o in items if o.get("kind") == "Pod" and o.get("spec", {}).get("nodeName"))
        timed = json.load(open(spent.name))
        return timed, scheduled - timed.pop("after"), usage.ru_utime + usage.ru_stime


def main() -> None:
    """Parse the options, write and run each case, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append",
                        help="run this case (repeatable; default: spread-1app and spread-100apps)")
    parser.add_argument("--pods", type=int, help="pods per case instead of the case's own count")
    parser.add_argument("--plugin", choices=sorted(PLUGINS), action="append", default=[],
                        help="also time this plugin's hooks (repeatable)")
    parser.add_argument("--after", type=int, default=0,
                        help="count only what is spent after this many pods' PreScore (default: everything)")
    args = parser.parse_args()
    rows = []
    for name in args.case or ["spread-1app", "spread-100apps"]:
        nodes, pods, apps, cpu, memory, pod = CASES[name]
        pods = args.pods or pods
        with tempfile.TemporaryDirectory() as scratch:
            write_case(Path(scratch), nodes, pods, min(apps, pods), cpu, memory, pod)
            factor, _ = machine_factors()
            spent, scheduled, cpu_s = run(Path(scratch), args.after, tuple(args.plugin))
        rows.append((name, pods, scheduled, spent, cpu_s, factor))
    hooks = sorted({hook for row in rows for hook in row[3]})
    print(f"| case | pods | {' | '.join(hooks)} | plugin + counts | whole run CPU s | factor |")
    print(f"|{'---|' * (len(hooks) + 5)}")
    for name, pods, scheduled, spent, cpu_s, factor in rows:
        per_pod = {hook: spent.get(hook, [0, 0])[1] / 1e3 / max(scheduled, 1) for hook in hooks}
        print(f"| {name} | {pods:,} | {' | '.join(f'{per_pod[h]:.1f}' for h in hooks)} "
              f"| {sum(per_pod.values()):.1f} | {cpu_s:.1f} | {factor:.2f} |")


if __name__ == "__main__":
    main()
