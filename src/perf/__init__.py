"""kube-scheduler's scheduler_perf config files, run unchanged on kubesched.

    from kubesched.perf import run
    results = run("misc/performance-config.yaml", test="SchedulingBasic", workload="5000Nodes_10000Pods")
    data_items_document(results)      # upstream's DataItems document

Modules: :mod:`.config` (test cases, workloads, ops, params),
:mod:`.template` (the Go text/template subset the templates use),
:mod:`.ops` (the table of ops, one module per family), :mod:`.executor`
(running one workload's ops against a MemoryCluster and the scheduler),
:mod:`.errors` (unsupported, failed, bad config), :mod:`.tracker` (pods per namespace), :mod:`.throughput` (the per-second
SchedulingThroughput collector), :mod:`.results` (a workload's outcome and
upstream's DataItems), :mod:`.runner` (choosing and running workloads).
``kubesched perf`` prints them (:mod:`kubesched.cli.perf`).
"""

from __future__ import annotations

from .config import TestCase, Workload, load_test_cases
from .errors import PerfConfigError
from .results import DataItem, WorkloadResult, data_items_document
from .runner import run, run_workload
from .template import TemplateError

__all__ = [
    "DataItem",
    "PerfConfigError",
    "TemplateError",
    "TestCase",
    "Workload",
    "WorkloadResult",
    "data_items_document",
    "load_test_cases",
    "run",
    "run_workload",
]
