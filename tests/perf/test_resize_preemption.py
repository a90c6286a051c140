"""scheduler_perf's resize_preemption/ suite (KEP-5836, data/scheduler_perf/resize_preemption): every small workload
runs, updateAny through pods/resize leaves the preemptors' resizes Deferred as their nodes' kubelets would, and
with InPlacePodVerticalScalingSchedulerPreemption the scheduler preempts for them once it gets to run."""

from __future__ import annotations

from kubesched.core.api.resource_helpers import is_pod_resize_deferred
from kubesched.perf import run
from kubesched.perf.config import load_test_cases

from .helpers import DATA, executor_for

CONFIG = DATA / "resize_preemption/performance-config.yaml"


SMALL = [(case.name, workload.name) for case in load_test_cases(CONFIG) for workload in case.workloads
         if "integration-test" in workload.labels]


def test_every_small_workload_runs():
    """The 8 integration-test workloads run ok (their SchedulingThroughput has no sample, upstream's neither:
    data/scheduler_perf/MANIFEST.md, "resize_preemption/")."""
    assert len(SMALL) == 8
    results = [result for test, workload in SMALL for result in run(CONFIG, test=test, workload=workload)]
    assert all(r.status == "ok" for r in results), [(r.name, r.reason) for r in results if r.status != "ok"]


def test_the_resize_is_deferred_and_the_scheduler_preempts_for_it():
    executor = executor_for(CONFIG, "DeferredResizePreemptionInPlace", "5Nodes", fake_clock=True)
    cluster = executor.cluster
    preemptors = [p for p in cluster.list("Pod").items if p.metadata.name.startswith("pod-preemptor-")]
    assert len(preemptors) == 5 and all(is_pod_resize_deferred(p) for p in preemptors)
    assert all(p.spec.containers[0].resources.requests["cpu"] == 3000 for p in preemptors)
    # the workload's waits end at once (as upstream's count them); given time, each node's victims make room

    def victims() -> list:
        return [p for p in cluster.list("Pod").items
                if p.metadata.name.startswith("pod-victim-") and p.metadata.deletion_timestamp is None]

    executor.loop(lambda: len(victims()) <= 5, "victims preempted for the deferred resizes")
    # 4 victims of 900m on each 4-CPU node: 3 go so that the 3000m resize and one 900m victim fit
    assert sorted(p.spec.node_name for p in victims()) == sorted(p.spec.node_name for p in preemptors)
    assert all(not p.status.nominated_node_name for p in cluster.list("Pod").items
               if p.metadata.name.startswith("pod-preemptor-"))
