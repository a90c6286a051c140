"""kubesched.sim's transactions, as kubernetes-sigs/scheduler-library tests its snapshot's.

The table ports the semantics of scheduler-library's
``pkg/upstreamsync/snapshot/snapshot_test.go`` (``TestSnapshot_ActionSequences``)
and ``undolog_error_test.go`` (``TestUndoLogRestoreStateToNonZeroTarget``:
undo in reverse order, back to a mark) where they apply: its ``PreemptPods``
is a pod deleted here, ``SchedulePods`` onto candidate nodes is a pod with a
hostname node affinity (its node ``singlePodNode`` is ``single-pod-node``: our API server checks names), ``ResetMutations`` is :meth:`Transaction.rollback`,
``CanSchedulePod`` is :meth:`Simulator.can_schedule`.  Where kubesched differs on
purpose: transactions nest here (issue 39: an inner commit keeps its changes
in the outer transaction), where scheduler-library refuses a nested one; there
are no preemption handles (``Unpreempt``): a deleted pod comes back by
rolling back.
"""

from __future__ import annotations

from typing import Callable

import pytest

from kubesched.core.undo import ABSENT, StoreWrite, UndoLog
from kubesched.sim import Simulator


def node(name: str, pods: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "10", "memory": "10Gi", "pods": pods}}}


def pod(name: str, on: list[str] | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x"}]}
    if on is not None:  # scheduler-library's placement: the candidate nodes
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": on}]}]}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


Step = Callable[[Simulator], None]


def schedule(name: str, on: list[str]) -> Step:
    return lambda sim: sim.schedule(pod(name, on))


def preempt(name: str) -> Step:
    return lambda sim: sim.delete("Pod", f"default/{name}")


def can_schedule(name: str, on: list[str]) -> Step:
    return lambda sim: sim.can_schedule(pod(name, on))


def verify(expected: dict[str, set[str]]) -> Step:
    def check(sim: Simulator) -> None:
        got = {n.metadata.name: set() for n in sim.nodes()}
        for key, where in sim.placements().items():
            if where:
                got[where].add(key.removeprefix("default/"))
        assert got == expected
    return check


def in_transaction(commit: bool, *steps: Step) -> Step:
    def run(sim: Simulator) -> None:
        with sim.transaction() as tx:
            for step in steps:
                step(sim)
            if commit:
                tx.commit()
    return run


def rollback_now(*steps: Step) -> Step:
    """scheduler-library's ResetMutations: back to the transaction's start, and it goes on."""
    def run(sim: Simulator) -> None:
        with sim.transaction() as tx:
            for step in steps:
                step(sim)
            tx.rollback()
            tx.commit()
    return run


def raising(*steps: Step) -> Step:
    def run(sim: Simulator) -> None:
        with pytest.raises(RuntimeError, match="simulated transaction error"), sim.transaction() as tx:
            for step in steps:
                step(sim)
            tx.commit()  # an exception rolls back all the same
            raise RuntimeError("simulated transaction error")
    return run


EMPTY: dict[str, set[str]] = {"node1": set(), "single-pod-node": set()}

#: name -> (pods running on node1 first, steps); the names are scheduler-library's
SEQUENCES: dict[str, tuple[list[str], list[Step]]] = {
    "Mixed preempt and schedule inside reverted transaction rolls back in reverse order": (["pod1"], [
        in_transaction(False,
                       preempt("pod1"),
                       verify(EMPTY),
                       schedule("pod", ["node1"]),
                       verify({"node1": {"pod"}, "single-pod-node": set()})),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
    "Preempt inside committed transaction stays preempted": (["pod1", "pod2"], [
        in_transaction(True, preempt("pod1"), preempt("pod2"), verify(EMPTY)),
        verify(EMPTY),
    ]),
    "Transaction returning error automatically rolls back changes": (["pod1"], [
        raising(preempt("pod1"), verify(EMPTY)),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
    "SchedulePods observes mutations": ([], [
        in_transaction(False,
                       schedule("pod", ["single-pod-node"]),
                       schedule("pod1", ["single-pod-node"]),
                       verify({"node1": set(), "single-pod-node": {"pod"}}),
                       in_transaction(False, preempt("pod1")),  # pending pod1 comes back pending
                       schedule("pod2", ["node1"]),
                       verify({"node1": {"pod2"}, "single-pod-node": {"pod"}})),
        schedule("pod1", ["single-pod-node"]),
        verify({"node1": set(), "single-pod-node": {"pod1"}}),
    ]),
    "ResetMutations reverts scheduled pods and preemptions": (["pod1"], [
        rollback_now(preempt("pod1"), schedule("pod2", ["node1"]), verify({"node1": {"pod2"}, "single-pod-node": set()})),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
    "ResetMutations on empty mutations is no-op": (["pod1"], [
        rollback_now(),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
    "Read-only CanSchedulePod changes nothing": (["pod1"], [
        can_schedule("pod", ["node1"]),
        can_schedule("pod2", ["single-pod-node"]),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
    "Nested transactions (kubesched): an inner commit stays in the outer one's rollback": (["pod1"], [
        in_transaction(False,
                       in_transaction(True, preempt("pod1"), schedule("pod", ["single-pod-node"])),
                       verify({"node1": set(), "single-pod-node": {"pod"}})),
        verify({"node1": {"pod1"}, "single-pod-node": set()}),
    ]),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_action_sequences(name):
    running, steps = SEQUENCES[name]
    sim = Simulator.from_manifests([node("node1", "110"), node("single-pod-node", "1"),
                                    *(pod(p, ["node1"]) for p in running)])
    verify({"node1": set(running), "single-pod-node": set()})(sim)
    for step in steps:
        step(sim)


def test_undo_log_undoes_in_reverse_back_to_a_mark():
    """scheduler-library's TestUndoLogRestoreStateToNonZeroTarget: steps after the mark, newest first."""
    store: dict[str, object] = {}
    log = UndoLog()
    outer = log.begin()
    for key, value in (("a", 1), ("b", 2)):
        log.record(StoreWrite(store, "Kind", key, store.get(key, ABSENT)))
        store[key] = value
    inner = log.begin()
    log.record(StoreWrite(store, "Kind", "a", store["a"]))
    store["a"] = 3
    log.rollback(inner)
    assert store == {"a": 1, "b": 2}
    log.end(inner)
    log.rollback(outer)
    assert store == {}
    log.end(outer)
    assert not log.recording
    with pytest.raises(RuntimeError, match="no transaction is open"):
        log.end(outer)

