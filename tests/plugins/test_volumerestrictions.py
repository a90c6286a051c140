"""VolumeRestrictions: ReadWriteOncePod claims and in-tree disks that cannot be shared."""

from __future__ import annotations

from kubesched.core.framework.nodeinfo import PodInfo
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import QueueingHint
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.testing import claim, claim_volume, node, pod, storage_class

from .helpers import fit_reason, info, make, on, run_pre_filter, simulate

RWOP = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
DISK = "node(s) had no available disk"


def disk_pod(name: str, **source):
    return pod(name, cpu="100m", volumes=[{"name": "disk", **source}])


def test_a_read_write_once_pod_claim_admits_one_pod_only():
    sim = simulate([node("n1"), node("n2"), storage_class("std", provisioner="d.example.com", binding_mode="Immediate"),
                    claim("solo", storage_class="std", access_modes=["ReadWriteOncePod"]),
                    pod("a", cpu="100m", volumes=[claim_volume("v", "solo")]),
                    pod("b", cpu="100m", volumes=[claim_volume("v", "solo")])])
    placed = [k for k, v in sim.placements().items() if v]
    assert len(placed) == 1  # whichever was tried first once the claim was bound
    holder = placed[0].split("/")[1]
    other = "b" if holder == "a" else "a"
    assert fit_reason(sim, other) == f"0/2 nodes are available: 2 {RWOP}."
    # deleting the holder lets the other pod run (queueing hint on Pod delete)
    sim.cluster.delete("Pod", holder, "default")
    sim.run()
    assert sim.pod(other).spec.node_name


def test_read_write_once_pod_conflicts_follow_add_and_remove_pod():
    """Preemption's dry run removes the holder (RemovePod): then the claim is free."""
    plugin = make(VolumeRestrictions, objects=[claim("solo", access_modes=["ReadWriteOncePod"])])
    p = pod("p", volumes=[claim_volume("v", "solo")])
    holder = on(pod("holder", volumes=[claim_volume("v", "solo")]), "n2")
    infos = [info(node("n1")), info(node("n2"), holder)]
    state, _, status = run_pre_filter(plugin, p, infos)
    assert status is None
    assert [plugin.filter(state, p, i).reasons for i in infos] == [(RWOP,), (RWOP,)]
    clone = state.clone()
    plugin.pre_filter_remove_pod(clone, p, PodInfo(holder), infos[1])
    assert plugin.filter(clone, p, infos[0]) is None
    assert plugin.filter(state, p, infos[0]).code == Code.UNSCHEDULABLE  # the original state is untouched
    plugin.pre_filter_add_pod(clone, p, PodInfo(holder), infos[0])
    assert plugin.filter(clone, p, infos[0]).reasons == (RWOP,)


def test_an_unused_read_write_once_pod_claim_skips_filter():
    plugin = make(VolumeRestrictions, objects=[claim("solo", access_modes=["ReadWriteOncePod"])])
    _, _, status = run_pre_filter(plugin, pod("p", volumes=[claim_volume("v", "solo")]), [info(node("n1"))])
    assert status.code == Code.SKIP


def test_pods_without_disks_or_read_write_once_pod_claims_skip_filter():
    plugin = make(VolumeRestrictions, objects=[claim("shared", access_modes=["ReadWriteMany"])])
    _, _, status = run_pre_filter(plugin, pod("p", volumes=[claim_volume("v", "shared")]), [info(node("n1"))])
    assert status.code == Code.SKIP


def test_missing_claim_is_unresolvable():
    plugin = make(VolumeRestrictions)
    _, _, status = run_pre_filter(plugin, pod("p", volumes=[claim_volume("v", "gone")]), [])
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                             ('persistentvolumeclaim "gone" not found',))


def test_same_aws_ebs_volume_cannot_share_a_node():
    ebs = {"awsElasticBlockStore": {"volumeID": "vol-1"}}
    sim = simulate([node("n1"), disk_pod("a", **ebs), disk_pod("b", **ebs),
                    disk_pod("c", awsElasticBlockStore={"volumeID": "vol-2"})])
    assert sim.pod("a").spec.node_name == "n1" and sim.pod("c").spec.node_name == "n1"
    assert fit_reason(sim) == f"0/1 nodes are available: 1 {DISK}."


def test_disk_conflict_rules():
    plugin = make(VolumeRestrictions)
    cases = [
        ({"gcePersistentDisk": {"pdName": "d", "readOnly": True}}, {"gcePersistentDisk": {"pdName": "d", "readOnly": True}}, True),
        ({"gcePersistentDisk": {"pdName": "d"}}, {"gcePersistentDisk": {"pdName": "d", "readOnly": True}}, False),
        ({"gcePersistentDisk": {"pdName": "d"}}, {"gcePersistentDisk": {"pdName": "e"}}, True),
        ({"iscsi": {"iqn": "q", "targetPortal": "t"}}, {"iscsi": {"iqn": "q", "targetPortal": "u"}}, False),
        ({"rbd": {"monitors": ["m1", "m2"], "image": "i"}}, {"rbd": {"monitors": ["m2"], "image": "i"}}, False),
        ({"rbd": {"monitors": ["m1"], "image": "i"}}, {"rbd": {"monitors": ["m2"], "image": "i"}}, True),
        ({"rbd": {"monitors": ["m1"], "image": "i", "pool": "a"}}, {"rbd": {"monitors": ["m1"], "image": "i"}}, True),
    ]
    for mine, theirs, fits in cases:
        new = disk_pod("new", **mine)
        node_info = info(node("n1"), on(disk_pod("old", **theirs), "n1"))
        state, _, status = run_pre_filter(plugin, new, [node_info])
        assert status is None
        result = plugin.filter(state, new, node_info)
        assert (result is None) == fits, (mine, theirs)
        if not fits:
            assert (result.code, result.reasons) == (Code.UNSCHEDULABLE, (DISK,))


def test_queueing_hints():
    plugin = make(VolumeRestrictions)
    hints = {str(e.event.resource): e.hint for e in plugin.events_to_register()}
    p = pod("p", volumes=[claim_volume("v", "c1"), {"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}])
    assert hints["Pod"](p, on(pod("o", volumes=[claim_volume("v", "c1")]), "n1"), None) == QueueingHint.QUEUE
    assert hints["Pod"](p, on(disk_pod("o", awsElasticBlockStore={"volumeID": "vol-1"}), "n1"), None) == QueueingHint.QUEUE
    assert hints["Pod"](p, on(disk_pod("o", awsElasticBlockStore={"volumeID": "vol-9"}), "n1"), None) == \
        QueueingHint.QUEUE_SKIP
    assert hints["PersistentVolumeClaim"](p, None, claim("c1")) == QueueingHint.QUEUE
    assert hints["PersistentVolumeClaim"](p, None, claim("c2")) == QueueingHint.QUEUE_SKIP
