"""DecisionPublisher (``kubesched run --record-decisions``): each pod's latest attempt reaches its
annotation, oldest waiting pod first, so a busy scheduler never starves the pods it placed early."""

from __future__ import annotations

import threading

from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.observability.decision_log import DECISION_ANNOTATION, DecisionPublisher
from kubesched.testing import pod


class HeldCluster(MemoryCluster):
    """A cluster whose first patch waits until the test lets it go; records the order of patches."""

    def __init__(self) -> None:
        super().__init__()
        self.patched: list[str] = []
        self.first_patch = threading.Event()
        self.go = threading.Event()

    def patch(self, kind, name, patch, namespace="", **kwargs):
        if not self.patched:
            self.first_patch.set()
            assert self.go.wait(timeout=30)
        self.patched.append(name)
        return super().patch(kind, name, patch, namespace, **kwargs)


def _record(p, attempt: int) -> dict:
    return {"pod": p.key, "uid": p.metadata.uid, "attempt": attempt, "phase": "scheduling", "result": "Scheduled"}


def test_pods_are_published_in_the_order_they_first_waited_with_their_latest_attempt():
    cluster = HeldCluster()
    pods = {name: cluster.create(pod(name)) for name in ("first", "early", "middle", "late")}
    publisher = DecisionPublisher(cluster)
    publisher.write(_record(pods["first"], 1))
    assert cluster.first_patch.wait(timeout=30)  # the thread is now writing "first"; the rest queue up
    for name in ("early", "middle", "late"):
        publisher.write(_record(pods[name], 1))
    publisher.write(_record(pods["early"], 2))  # a newer attempt replaces the queued one, keeping its place
    cluster.go.set()
    publisher.close()
    assert cluster.patched == ["first", "early", "middle", "late"]
    annotation = cluster.get("Pod", "early", "default").metadata.annotations[DECISION_ANNOTATION]
    assert '"attempt":2' in annotation
