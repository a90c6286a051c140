"""VolumeBinding against upstream's own table.

Ported from kubernetes/kubernetes ``pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go`` at commit
645c553fcae94fe38d188a4bd3d33d9f1db36b34 (TestVolumeBinding): each case's pod, nodes, claims and volumes, and what
PreFilter, Filter (per node), PreScore and Score answer.  That commit scores with the shape {0 %: 0, 100 %: 10}
(given in the args here, as its VolumeCapacityPriority case enabled it); StorageCapacityScoring's default shape
is tested in test_volumebinding.py.  Two differences are stated where they show: "all bound" PreFilter answers
Skip here (nothing Filter could reject: the bound PVs accept every node), where that commit's PreFilter succeeds
and its Filter passes; "all bound with local volumes" (a PreFilterResult naming node-a) is not ported: kubesched's
PreFilter narrows no nodes for bound local volumes, its Filter rejects the others."""

from __future__ import annotations

import pytest

from kubesched.core.framework.cycle_state import CycleState
from kubesched.core.framework.status import Code
from kubesched.core.volume.claims import ANN_BIND_COMPLETED
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.testing import claim, claim_volume, node, persistent_volume, pod, storage_class

from .helpers import info, make, run_pre_filter

HOST = "kubernetes.io/hostname"
WAIT, HDD, IMMEDIATE = "wait-sc", "wait-hdd-sc", "immediate-sc"
CLASSES = [storage_class(WAIT), storage_class(HDD), storage_class(IMMEDIATE, binding_mode="Immediate")]
SHAPE = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NODE_CONFLICT = "node(s) had volume node affinity conflict"


def user(*claims: str):
    return pod("pod-a", volumes=[claim_volume(f"v{i}", c) for i, c in enumerate(claims)])


def bound(name: str, pv: str, cls: str = WAIT, **spec):
    return claim(name, storage_class=cls, volume_name=pv, annotations={ANN_BIND_COMPLETED: "yes"}, **spec)


def pv(name: str, cls: str = WAIT, capacity: str = "1Gi", phase: str = "Available", hosts=None, affinity=None):
    return persistent_volume(name, capacity, cls, phase=phase,
                             node_affinity=affinity or ({HOST: hosts} if hosts else None))


def lost(name: str, pv_name: str):
    made = bound(name, pv_name)
    return type(made)(metadata=made.metadata, spec=made.spec, status=type(made.status)(phase="Lost"))


CASES = [
    # name, pod, nodes, claims + volumes, PreFilter (code, reason) or None, Filter per node, PreScore skipped, scores
    ("pod has not pvcs", pod("pod-a"), ["node-a"], [], (Code.SKIP, None), [None], True, None),
    ("all bound", user("pvc-a"), ["node-a"], [bound("pvc-a", "pv-a"), pv("pv-a")], (Code.SKIP, None), [None],
     True, None),
    ("PVC does not exist", user("pvc-a"), ["node-a"], [], (UU, 'persistentvolumeclaim "pvc-a" not found'), None,
     None, None),
    ("Part of PVCs do not exist", user("pvc-a", "pvc-b"), ["node-a"], [bound("pvc-a", "pv-a")],
     (UU, 'persistentvolumeclaim "pvc-b" not found'), None, None, None),
    ("immediate claims not bound", user("pvc-a"), ["node-a"], [claim("pvc-a", storage_class=IMMEDIATE)],
     (UU, "pod has unbound immediate PersistentVolumeClaims"), None, None, None),
    ("unbound claims no matches", user("pvc-a"), ["node-a"], [claim("pvc-a", storage_class=WAIT)], None,
     [(UU, (BIND_CONFLICT,))], True, None),
    ("bound and unbound unsatisfied", user("pvc-a", "pvc-b"), ["node-a"],
     [bound("pvc-a", "pv-a"), claim("pvc-b", storage_class=WAIT), pv("pv-a", affinity={"foo": ["bar"]})], None,
     [(UU, (NODE_CONFLICT, BIND_CONFLICT))], True, None),
    ("pv not found", user("pvc-a"), ["node-a"], [bound("pvc-a", "pv-a")], None,
     [(UU, ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",))], True, None),
    ("pv not found claim lost", user("pvc-a"), ["node-a"], [lost("pvc-a", "pv-a")],
     (UU, 'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'), None, None, None),
    ("local volumes with close capacity are preferred", user("pvc-a"), ["node-a", "node-b", "node-c"],
     [claim("pvc-a", "50Gi", WAIT),
      pv("pv-a-0", capacity="200Gi", hosts=["node-a"]), pv("pv-a-1", capacity="200Gi", hosts=["node-a"]),
      pv("pv-b-0", capacity="100Gi", hosts=["node-b"]), pv("pv-b-1", capacity="100Gi", hosts=["node-b"])],
     None, [None, None, (UU, (BIND_CONFLICT,))], False, [25, 50, 0]),
    ("local volumes with close capacity are preferred (multiple pvcs)", user("pvc-0", "pvc-1"),
     ["node-a", "node-b", "node-c"],
     [claim("pvc-0", "50Gi", WAIT), claim("pvc-1", "100Gi", HDD),
      *[pv(f"pv-a-{i}", WAIT if i < 2 else HDD, "200Gi", hosts=["node-a"]) for i in range(4)],
      *[pv(f"pv-b-{i}", WAIT if i < 2 else HDD, "100Gi", hosts=["node-b"]) for i in range(4)]],
     None, [None, None, (UU, (BIND_CONFLICT,))], False, [38, 75, 0]),
]


@pytest.mark.parametrize("name, p, nodes, objects, pre_filter, filters, pre_score_skipped, scores", CASES,
                         ids=[c[0] for c in CASES])
def test_volume_binding(name, p, nodes, objects, pre_filter, filters, pre_score_skipped, scores):
    plugin = make(VolumeBinding, SHAPE, objects=[*CLASSES, *objects])
    infos = [info(node(n, labels={HOST: n})) for n in nodes]
    state, _, status = run_pre_filter(plugin, p, infos, CycleState())
    if pre_filter is not None:
        code, reason = pre_filter
        assert status is not None and status.code == code
        if reason is not None:
            assert status.reasons == (reason,)
    else:
        assert status is None
    if filters is None or (pre_filter is not None and pre_filter[0] == Code.SKIP and not filters[0]):
        return
    got = [plugin.filter(state, p, i) for i in infos]
    assert [s and (s.code, s.reasons) for s in got] == filters
    skipped = plugin.pre_score(state, p, infos)
    assert (skipped is not None and skipped.code == Code.SKIP) == pre_score_skipped
    if scores is not None:
        assert [plugin.score(state, p, i) if s is None else 0 for i, s in zip(infos, got)] == scores
