"""NodeVolumeLimits: CSI attach limits from CSINodes and node allocatable,
in-tree volumes migrated to CSI, unbound claims counted by class, and the
batch Filter agreeing with the exact one."""

from __future__ import annotations

from kubesched.core.api import from_manifest
from kubesched.core.framework.status import Code
from kubesched.core.framework.types import QueueingHint
from kubesched.core.volume.claims import ANN_BIND_COMPLETED
from kubesched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from kubesched.testing import (
    claim,
    claim_volume,
    csi_node,
    ephemeral_volume,
    node,
    persistent_volume,
    pod,
    storage_class,
)

from .helpers import filter_all, fit_reason, info, make, on, run_pre_filter, simulate

DRIVER = "ebs.csi.aws.com"
KEY = "attachable-volumes-csi-ebs.csi.aws.com"


def csi_pair(i: int, driver: str = DRIVER, handle: str | None = None):
    uid = f"uid-c{i}"
    return [persistent_volume(f"pv{i}", claim=("default", f"c{i}", uid), phase="Bound",
                              csi={"driver": driver, "volumeHandle": handle or f"h{i}"}),
            claim(f"c{i}", volume_name=f"pv{i}", annotations={ANN_BIND_COMPLETED: "yes"}, uid=uid)]


def aws_pair(i: int):
    uid = f"uid-c{i}"
    return [persistent_volume(f"pv{i}", claim=("default", f"c{i}", uid), phase="Bound",
                              awsElasticBlockStore={"volumeID": f"aws://zone-a/vol-{i}"}),
            claim(f"c{i}", volume_name=f"pv{i}", annotations={ANN_BIND_COMPLETED: "yes"}, uid=uid)]


def user(name: str, *claims: int):
    return pod(name, cpu="100m", volumes=[claim_volume(f"v{c}", f"c{c}") for c in claims])


def test_csi_node_limit_caps_pods_per_node():
    objects = [node("n1"), node("n2"), csi_node("n1", {DRIVER: 2}), csi_node("n2", {DRIVER: 1})]
    for i in range(5):
        objects += csi_pair(i)
    sim = simulate(objects + [user(f"p{i}", i) for i in range(5)])
    placed = [n for n in sim.placements().values() if n]
    assert sorted(placed) == ["n1", "n1", "n2"]
    assert fit_reason(sim) == f"0/2 nodes are available: 2 {ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED}."


def test_node_allocatable_limit_and_csi_node_override():
    objects = [*csi_pair(0), *csi_pair(1), *csi_pair(2)]
    plugin = make(NodeVolumeLimits, objects=[*objects, csi_node("n-csi", {DRIVER: 3})])
    attached = [on(user("a0", 0), "x"), on(user("a1", 1), "x")]
    infos = [info(node("n-alloc", extra_resources={KEY: "2"}), *attached),
             info(node("n-csi", extra_resources={KEY: "2"}), *attached),  # the CSINode's 3 wins
             info(node("n-none"), *attached)]
    new = user("p", 2)
    state, _, status = run_pre_filter(plugin, new, infos)
    assert status is None
    statuses = filter_all(plugin, state, new, infos)
    assert [s and (s.code, s.reasons) for s in statuses] == [
        (Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)), None, None]


def test_a_volume_already_attached_to_the_node_counts_once():
    shared = csi_pair(0, handle="same") + csi_pair(1, handle="same")
    plugin = make(NodeVolumeLimits, objects=[*shared, csi_node("n1", {DRIVER: 1})])
    infos = [info(node("n1"), on(user("a0", 0), "n1"))]
    state, _, _ = run_pre_filter(plugin, user("p", 1), infos)
    assert filter_all(plugin, state, user("p", 1), infos) == [None]


def test_migrated_in_tree_volumes_count_only_where_a_csi_node_exists():
    objects = [*aws_pair(0), *aws_pair(1)]
    plugin = make(NodeVolumeLimits, objects=[*objects, csi_node("migrated", {DRIVER: 1})])
    attached = on(user("a0", 0), "x")
    infos = [info(node("migrated"), attached), info(node("plain", extra_resources={KEY: "1"}), attached)]
    state, _, _ = run_pre_filter(plugin, user("p", 1), infos)
    statuses = filter_all(plugin, state, user("p", 1), infos)
    assert statuses[0].reasons == (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,) and statuses[1] is None
    # the inline disk is the same EBS volume as pv0 (translated handle vol-0): attached already
    inline = pod("inline", volumes=[{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-0"}}])
    state, _, status = run_pre_filter(plugin, inline, infos)
    assert status is None and filter_all(plugin, state, inline, infos) == [None, None]


def test_unbound_claims_count_by_their_class_provisioner():
    objects = [*csi_pair(0), storage_class("fast", provisioner=DRIVER), claim("later", storage_class="fast")]
    plugin = make(NodeVolumeLimits, objects=[*objects, csi_node("n1", {DRIVER: 1})])
    infos = [info(node("n1"), on(user("a0", 0), "n1"))]
    p = pod("p", volumes=[claim_volume("v", "later")])
    state, _, _ = run_pre_filter(plugin, p, infos)
    assert filter_all(plugin, state, p, infos)[0].reasons == (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,)


def test_prefilter_skips_pods_without_countable_volumes_and_reports_missing_claims():
    plugin = make(NodeVolumeLimits)
    _, _, status = run_pre_filter(plugin, pod("p", volumes=[{"name": "s", "secret": {"secretName": "x"}}]), [])
    assert status.code == Code.SKIP
    p = pod("p", volumes=[ephemeral_volume("scratch")])
    state, _, status = run_pre_filter(plugin, p, [])
    assert status is None
    result = plugin.filter(state, p, info(node("n1")))
    assert (result.code, result.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (
        'looking up PVC default/p-scratch: persistentvolumeclaim "p-scratch" not found',))


def test_hints():
    plugin = make(NodeVolumeLimits)
    hints = {str(e.event.resource): e.hint for e in plugin.events_to_register()}
    p = user("p", 0)
    assert hints["Pod"](p, on(user("gone", 1), "n1"), None) == QueueingHint.QUEUE
    assert hints["Pod"](p, user("pending", 1), None) == QueueingHint.QUEUE_SKIP
    assert hints["Pod"](p, on(pod("plain"), "n1"), None) == QueueingHint.QUEUE_SKIP
    assert hints["PersistentVolumeClaim"](p, None, claim("c0")) == QueueingHint.QUEUE
    assert hints["PersistentVolumeClaim"](p, None, claim("c9")) == QueueingHint.QUEUE_SKIP


def csi_driver(name: str, prevent: bool | None):
    spec = {} if prevent is None else {"preventPodSchedulingIfMissing": prevent}
    return from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                          "spec": spec})


def test_volume_limit_scaling_keeps_pods_off_nodes_without_an_opted_in_driver():
    """VolumeLimitScaling (1.37): a CSIDriver with preventPodSchedulingIfMissing sends its volumes' pods only to
    nodes whose CSINode lists it (a node without a CSINode, or with another driver only, is refused with
    upstream's message); without the opt-in such nodes stay unlimited."""
    objects = [*csi_pair(0), csi_node("has", {DRIVER: None}), csi_node("other", {"other.csi": 5})]
    infos = [info(node("has")), info(node("other")), info(node("none"))]
    for prevent, expected in ((True, [None, "missing", "missing"]), (False, [None, None, None]),
                              (None, [None, None, None])):
        plugin = make(NodeVolumeLimits, objects=[*objects, csi_driver(DRIVER, prevent)])
        state, _, status = run_pre_filter(plugin, user("p", 0), infos)
        assert status is None
        statuses = filter_all(plugin, state, user("p", 0), infos)
        assert [s and (s.code, s.reasons) for s in statuses] == [
            None if e is None else (Code.UNSCHEDULABLE, (f"{DRIVER} CSI driver is not installed on the node",))
            for e in expected]
    sim = simulate([*objects, csi_driver(DRIVER, True), node("other"), node("none"), user("p", 0)])
    assert fit_reason(sim) == f"0/2 nodes are available: 2 {DRIVER} CSI driver is not installed on the node."


def test_a_csi_node_that_gains_the_driver_or_a_larger_limit_brings_pods_back():
    plugin = make(NodeVolumeLimits)
    [hint] = [e.hint for e in plugin.events_to_register() if e.event.resource == "CSINode" and e.hint is not None]
    p = user("p", 0)
    assert hint(p, csi_node("n", {"other.csi": 1}), csi_node("n", {"other.csi": 1, DRIVER: 1})) == QueueingHint.QUEUE
    assert hint(p, csi_node("n", {DRIVER: 1}), csi_node("n", {DRIVER: 2})) == QueueingHint.QUEUE
    assert hint(p, csi_node("n", {DRIVER: 2}), csi_node("n", {DRIVER: 1})) == QueueingHint.QUEUE_SKIP
