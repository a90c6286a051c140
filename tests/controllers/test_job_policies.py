"""A Job's podFailurePolicy and successPolicy (upstream pkg/controller/job/pod_failure_policy_test.go
TestMatchPodFailurePolicy: the first matching rule wins, exit code 0 never matches, In / NotIn, a named
container, pod conditions; success_policy_test.go TestMatchSuccessPolicy: succeededIndexes alone, with
succeededCount, succeededCount alone; job_controller_test.go's FailJob / Ignore / SuccessPolicy conditions;
pkg/apis/batch/validation's podFailurePolicy and successPolicy messages)."""

from __future__ import annotations

import attrs
import pytest

from kubesched.controllers.job import failure_action, matched_success_rule
from kubesched.core.api import from_manifest
from kubesched.core.api.core_v1 import ContainerStatus, PodCondition
from kubesched.core.api.validation import problems
from kubesched.drivers.simulation import DEFAULT_START, Simulation
from kubesched.testing import node, pod

from .workloads import template


def job(name="train", duration="10m", **spec):
    annotations = {"kubesched.io/run-duration": duration} if duration else {}
    return from_manifest({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                          "spec": {"template": template({}, "1", annotations, restartPolicy="Never"), **spec}})


def failed(exit_codes=(), conditions=(), name="p"):
    """A Failed pod whose containers ended with ``exit_codes`` (container ``c``, ``sidecar``, ...)."""
    statuses = tuple(ContainerStatus(name=container, extra={"state": {"terminated": {"exitCode": code}}})
                     for container, code in exit_codes)
    made = pod(name)
    return attrs.evolve(made, status=attrs.evolve(made.status, phase="Failed", container_statuses=statuses,
                                                  conditions=tuple(PodCondition(type=t, status=s)
                                                                   for t, s in conditions)))


DISRUPTION_IGNORED = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}


@pytest.mark.parametrize("rules, pod_, expected", [
    ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}}], failed([("c", 2)]),
     ("FailJob", "Container c for pod default/p failed with exit code 2 matching FailJob rule at index 0")),
    ([{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}}], failed([("c", 4)]),
     ("Count", "")),
    ([{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1, 2, 3]}}], failed([("c", 0)]),
     ("Count", "")),  # exit code 0 never matches
    ([{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1, 2, 3]}}], failed([("c", 42)]),
     ("Ignore", "Container c for pod default/p failed with exit code 42 matching Ignore rule at index 0")),
    ([{"action": "FailJob", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [5]}}],
     failed([("c", 5), ("sidecar", 1)]), ("Count", "")),  # only the named container counts
    ([{"action": "Count", "onExitCodes": {"operator": "In", "values": [7]}},
      {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [7]}}],
     failed([("c", 7)]),
     ("Count", "Container c for pod default/p failed with exit code 7 matching Count rule at index 0")),
    ([DISRUPTION_IGNORED], failed(conditions=[("DisruptionTarget", "True")]),
     ("Ignore", "Pod default/p has condition DisruptionTarget matching Ignore rule at index 0")),
    ([DISRUPTION_IGNORED], failed(conditions=[("DisruptionTarget", "False")]), ("Count", "")),
])
def test_the_first_matching_rule_decides(rules, pod_, expected):
    assert failure_action(job(podFailurePolicy={"rules": rules}), pod_) == expected


@pytest.mark.parametrize("rules, done, expected", [
    ([{"succeededIndexes": "0"}], {0}, 0),
    ([{"succeededIndexes": "0-2"}], {0, 2}, None),
    ([{"succeededIndexes": "0-2", "succeededCount": 2}], {0, 2, 4}, 0),
    ([{"succeededCount": 3}], {1, 3}, None),
    ([{"succeededIndexes": "3"}, {"succeededCount": 2}], {1, 3}, 0),
    ([{"succeededIndexes": "4"}, {"succeededCount": 2}], {1, 3}, 1),
])
def test_the_success_policy_rules(rules, done, expected):
    indexed = job(completions=5, parallelism=5, completionMode="Indexed", successPolicy={"rules": rules})
    assert matched_success_rule(indexed, done) == expected


def run(*objects, until=None):
    sim = Simulation()
    sim.create([node("n1", cpu="8"), *objects])
    sim.run(until=None if until is None else DEFAULT_START + until)
    return sim


def pods_of(sim, name="train"):
    return [p for p in sim.pods() if p.metadata.labels.get("batch.kubernetes.io/job-name") == name]


def fail(sim, p, exit_code=None, condition=None):
    statuses = () if exit_code is None else (
        ContainerStatus(name="c", extra={"state": {"terminated": {"exitCode": exit_code}}}),)
    conditions = p.status.conditions + ((PodCondition(type=condition, status="True"),) if condition else ())
    sim.cluster.update_status(attrs.evolve(p, status=attrs.evolve(p.status, phase="Failed",
                                                                  container_statuses=statuses,
                                                                  conditions=conditions)))


def test_fail_job_fails_the_job_at_once_with_upstreams_reason_and_message():
    sim = run(job(parallelism=2, completions=2, backoffLimit=6, duration="",
                  podFailurePolicy={"rules": [{"action": "FailJob",
                                               "onExitCodes": {"operator": "In", "values": [42]}}]}), until=1)
    victim = pods_of(sim)[0]
    fail(sim, victim, exit_code=42)
    sim.run_for(1)
    conditions = sim.get("Job", "default/train").status["conditions"]
    assert [(c["type"], c["reason"]) for c in conditions] == [("FailureTarget", "PodFailurePolicy"),
                                                              ("Failed", "PodFailurePolicy")]
    assert conditions[0]["message"] == (f"Container c for pod default/{victim.metadata.name} failed with exit code "
                                        "42 matching FailJob rule at index 0")
    assert all(p.status.phase == "Failed" for p in pods_of(sim) if p.metadata.name == victim.metadata.name)


def test_an_ignored_disruption_is_not_counted_and_is_replaced_without_backoff():
    sim = run(job(backoffLimit=0, duration="",
                  podFailurePolicy={"rules": [DISRUPTION_IGNORED]}), until=1)
    (first,) = pods_of(sim)
    fail(sim, first, condition="DisruptionTarget")
    sim.run_for(1)  # no 10 s backoff for an ignored failure
    status = sim.get("Job", "default/train").status
    assert "conditions" not in status and "failed" not in status and status["active"] == 1
    assert len(pods_of(sim)) == 2
    (second,) = [p for p in pods_of(sim) if p.metadata.name != first.metadata.name]
    fail(sim, second, exit_code=1)  # counted: past backoffLimit 0
    sim.run_for(1)
    assert sim.get("Job", "default/train").status["conditions"][-1]["reason"] == "BackoffLimitExceeded"


def test_a_met_success_policy_completes_the_job_and_frees_its_other_pods():
    """A leader/worker Job: done when index 0 (the leader) succeeded, the workers' pods are deleted."""
    sim = run(job(parallelism=3, completions=3, completionMode="Indexed", duration="",
                  successPolicy={"rules": [{"succeededIndexes": "0"}]}), until=1)
    leader = next(p for p in pods_of(sim) if p.metadata.annotations["batch.kubernetes.io/job-completion-index"] == "0")
    sim.cluster.update_status(attrs.evolve(leader, status=attrs.evolve(leader.status, phase="Succeeded")))
    sim.run_for(1)
    status = sim.get("Job", "default/train").status
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "SuccessPolicy", "Matched rules at index 0"),
        ("Complete", "SuccessPolicy", "Matched rules at index 0")]
    assert [p.metadata.name for p in pods_of(sim)] == [leader.metadata.name]


@pytest.mark.parametrize("spec, message", [
    ({"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0]}}]}},
     "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"),
    ({"podFailurePolicy": {"rules": [{"action": "Retry", "onPodConditions": [{"type": "DisruptionTarget"}]}]}},
     'spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", '
     '"FailJob", "Ignore"'),
    ({"podFailurePolicy": {"rules": [{"action": "Ignore"}]}},
     "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
    ({"podFailurePolicy": {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [3, 1]}}]}},
     "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 1: must be ordered"),
    ({"successPolicy": {"rules": [{"succeededCount": 1}]}},
     'spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode'),
    ({"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": [{"succeededCount": 4}]}},
     "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number "
     "of specified completions)"),
    ({"completionMode": "Indexed", "completions": 3, "successPolicy": {"rules": [{"succeededIndexes": "2-1"}]}},
     'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "2-1": error parsing succeededIndexes: '
     "non-increasing order, previous: -1, current: 2"),
])
def test_the_api_server_refuses_bad_policies(spec, message):
    assert message in problems(job(**spec))


def test_a_pod_failure_policy_needs_restart_policy_never():
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {
        "template": template({}, "1", restartPolicy="OnFailure"),
        "podFailurePolicy": {"rules": [DISRUPTION_IGNORED]}}}
    assert ('spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Never"'
            in problems(from_manifest(body)))


@pytest.mark.parametrize("spec, message", [
    ({"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1},
     "spec.backoffLimitPerIndex: Unsupported value: 1: kubesched's job-controller does not simulate per-index backoff"),
    ({"podReplacementPolicy": "Failed"},
     'spec.podReplacementPolicy: Unsupported value: "Failed": kubesched\'s job-controller replaces pods as '
     "TerminatingOrFailed does"),
])
def test_job_fields_the_simulation_does_not_honour_are_refused(spec, message):
    assert message in problems(job(**spec))


def test_the_default_pod_replacement_policy_is_accepted():
    assert not [p for p in problems(job(podReplacementPolicy="TerminatingOrFailed")) if "podReplacementPolicy" in p]
