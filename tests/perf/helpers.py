"""Shared pieces for the perf tests: where upstream's scheduler_perf files are, tiny configs."""

from __future__ import annotations

from pathlib import Path

import yaml

#: upstream's scheduler_perf files, in the repository (data/scheduler_perf).
DATA = Path(__file__).resolve().parents[2] / "data/scheduler_perf"
MISC = DATA / "misc/performance-config.yaml"


def write_config(directory: Path, cases: list[dict], name: str = "performance-config.yaml") -> Path:
    """Write ``cases`` as a scheduler_perf config file in ``directory``; returns its path."""
    path = directory / name
    path.write_text(yaml.safe_dump(cases, sort_keys=False))
    return path


def basic_case(**overrides) -> dict:
    """A small SchedulingBasic-like test case using the real templates by absolute path."""
    case = {
        "name": "Tiny",
        "defaultPodTemplatePath": str(DATA / "templates/pod-default.yaml"),
        "workloadTemplate": [
            {"opcode": "createNodes", "countParam": "$initNodes"},
            {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True},
        ],
        "workloads": [{"name": "w", "params": {"initNodes": 2, "measurePods": 4}}],
    }
    case.update(overrides)
    return case


def executor_for(path: Path, test: str, workload: str, fake_clock: bool = False, step_seconds: float | None = None):
    """A WorkloadExecutor that ran ``workload`` of test case ``test`` in the config
    ``path`` (on a FakeClock starting at 1e9 s with ``fake_clock``: backoffs and
    paced ops jump instead of sleeping; with ``step_seconds`` too, each scheduling
    step moves that clock by ``step_seconds``, so background ops such as ``churn``
    interleave with scheduling by step count, whatever the machine's speed)."""
    from kubesched.core.clock import FakeClock
    from kubesched.perf.config import load_test_cases
    from kubesched.perf.executor import WorkloadExecutor

    case = next(c for c in load_test_cases(path) if c.name == test)
    clock = FakeClock(1e9) if fake_clock or step_seconds is not None else None
    executor = WorkloadExecutor(case, case.workload(workload), clock=clock)
    executor.check()
    if clock is not None and step_seconds is not None:
        harness = executor.harness
        step = harness.step

        def timed_step() -> bool:
            busy = step()
            clock.advance(step_seconds)
            return busy
        harness.step = timed_step  # type: ignore[method-assign]
    executor.run()
    return executor
