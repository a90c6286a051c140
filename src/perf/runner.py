"""Choosing test cases and workloads from a config file and running them one by one.

Each workload gets a fresh cluster and scheduler; what it could not run is
reported in its :class:`WorkloadResult` (``unsupported`` with the reason,
or ``failed``), never skipped silently.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Callable

from kubesched.drivers.batch_gc import batch_collection
from kubesched.perf.results import FAILED, OK, UNSUPPORTED, WorkloadResult

from ..core.features import FeatureGates
from ..core.framework.registry import Registry
from .config import TestCase, Workload, load_test_cases
from .errors import PerfConfigError, Unsupported, WorkloadFailed
from .executor import WorkloadExecutor
from .template import TemplateError


def select(cases: list[TestCase], test: str | None = None, workload: str | None = None
           ) -> list[tuple[TestCase, Workload]]:
    """The (test case, workload) pairs to run: all, one test case's, or one
    workload.  Raises :class:`PerfConfigError` for a name that is not there."""
    if test is not None:
        matching = [case for case in cases if case.name == test]
        if not matching:
            raise PerfConfigError(f"no test case named {test!r} (have: {', '.join(c.name for c in cases)})")
        cases = matching
    pairs = []
    for case in cases:
        if workload is not None:
            if test is None and not any(w.name == workload for w in case.workloads):
                continue
            pairs.append((case, case.workload(workload)))
        else:
            pairs.extend((case, w) for w in case.workloads)
    if not pairs:
        raise PerfConfigError(f"no workload named {workload!r} in any test case")
    return pairs


def run_workload(case: TestCase, workload: Workload, registry: Registry | None = None,
                 progress: Callable[[str], None] | None = None, features: FeatureGates | None = None
                 ) -> WorkloadResult:
    """Run one workload (with its featureGates under the command line's ``features``) and return its result
    (never raises for the workload's own problems)."""
    result = WorkloadResult(
        test=case.name,
        workload=workload.name,
        threshold=workload.threshold,
        threshold_metric=workload.threshold_metric,
        feature_gates={**case.feature_gates, **workload.feature_gates},
        labels=tuple(dict.fromkeys(case.labels + workload.labels)),
    )
    executor = WorkloadExecutor(case, workload, registry=registry, progress=progress, features=features)
    started = time.time()
    try:
        executor.check()
        with batch_collection():  # a workload keeps most of what it creates (core/batch_gc.py)
            executor.run()
    except Unsupported as err:
        result.status, result.reason = UNSUPPORTED, str(err)
    except (WorkloadFailed, PerfConfigError, TemplateError) as err:
        result.status, result.reason = FAILED, str(err)
    else:
        result.status = OK
    result.duration = time.time() - started
    result.data_items = executor.data_items
    result.samples = executor.samples
    result.measured_pods = executor.measured_pods
    result.notes.extend(executor.notes)
    del executor
    gc.collect()
    return result


def run(config_path: str | Path, test: str | None = None, workload: str | None = None,
        progress: Callable[[str], None] | None = None, features: FeatureGates | None = None
        ) -> list["WorkloadResult"]:
    """Run the scheduler_perf config file ``config_path`` (all test cases, or
    ``test``; all its workloads, or ``workload``) and return one
    :class:`WorkloadResult` per workload, in file order.

    Throughput is wall-clock pods/s (kubesched's scheduler on a MemoryCluster
    and the real clock).  ``progress`` receives one-line status updates; ``features``: the command line's
    feature gates (see :class:`~kubesched.perf.executor.WorkloadExecutor`).
    Raises :class:`PerfConfigError` for an unreadable or invalid file or a
    test/workload name that is not in it."""
    cases = load_test_cases(config_path)
    pairs = select(cases, test, workload)
    registry = Registry.discover()
    return [run_workload(case, wl, registry=registry, progress=progress, features=features) for case, wl in pairs]
