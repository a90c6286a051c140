"""VolumeZone: the zone and region labels of bound PVs against the node's."""

from __future__ import annotations

import pytest

from kubesched.core.framework.status import Code
from kubesched.core.framework.types import QueueingHint
from kubesched.core.volume.claims import ANN_BIND_COMPLETED
from kubesched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from kubesched.testing import claim, claim_volume, node, persistent_volume, pod, storage_class

from .helpers import fit_reason, info, make, run_pre_filter, simulate

ZONE, ZONE_BETA = "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def bound(pv_name: str, claim_name: str, labels: dict[str, str]):
    uid = f"uid-{claim_name}"
    return [persistent_volume(pv_name, labels=labels, claim=("default", claim_name, uid), phase="Bound"),
            claim(claim_name, volume_name=pv_name, annotations={ANN_BIND_COMPLETED: "yes"}, uid=uid)]


def user(*claims: str):
    return pod("p", cpu="100m", volumes=[claim_volume(f"v{i}", c) for i, c in enumerate(claims)])


def test_a_pod_follows_its_pvs_zone():
    sim = simulate([node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}),
                    *bound("pv1", "c1", {ZONE: "b"}), user("c1")])
    assert sim.pod("p").spec.node_name == "b1"


def test_no_node_in_the_zone():
    sim = simulate([node("a1", labels={ZONE: "a"}), *bound("pv1", "c1", {ZONE: "z"}), user("c1")])
    assert fit_reason(sim) == f"0/1 nodes are available: 1 {ERR_REASON_CONFLICT}."


@pytest.mark.parametrize("pv_labels, node_labels, fits", [
    ({ZONE: "a__b"}, {ZONE: "b"}, True),                 # a label listing several zones
    ({ZONE_BETA: "a"}, {ZONE: "a"}, True),               # beta PV label, GA node label
    ({ZONE_BETA: "a"}, {ZONE_BETA: "b", ZONE: "a"}, False),  # the node's beta label wins when present
    ({ZONE: "a"}, {}, True),                             # a node without topology labels: single-zone cluster
    ({ZONE: "a"}, {REGION: "r1"}, False),                # topology labels, but not the zone
    ({ZONE: "a", REGION: "r1"}, {ZONE: "a", REGION: "r2"}, False),
])
def test_label_matching(pv_labels, node_labels, fits):
    plugin = make(VolumeZone, objects=bound("pv1", "c1", pv_labels))
    node_info = info(node("n1", labels=node_labels))
    state, _, status = run_pre_filter(plugin, user("c1"), [node_info])
    assert status is None
    result = plugin.filter(state, user("c1"), node_info)
    assert (result is None) == fits
    if not fits:
        assert (result.code, result.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


def test_prefilter_skips_and_rejects_as_upstream():
    plugin = make(VolumeZone, objects=[*bound("plain", "c-plain", {}),
                                       storage_class("wait"), storage_class("now", binding_mode="Immediate"),
                                       claim("c-wait", storage_class="wait"), claim("c-now", storage_class="now"),
                                       claim("c-none", storage_class=""), claim("c-lost", volume_name="gone")])
    outcome = {}
    for name in ("c-plain", "c-wait", "c-now", "c-none", "c-lost", "c-missing"):
        _, _, status = run_pre_filter(plugin, user(name), [])
        outcome[name] = (status.code.name, status.message())
    assert outcome == {
        "c-plain": ("SKIP", ""),
        "c-wait": ("SKIP", ""),  # unbound WaitForFirstConsumer: VolumeBinding's business
        "c-now": ("UNSCHEDULABLE_AND_UNRESOLVABLE", "PersistentVolume had no name"),
        "c-none": ("UNSCHEDULABLE_AND_UNRESOLVABLE", "PersistentVolumeClaim had no pv name and storageClass name"),
        "c-lost": ("UNSCHEDULABLE_AND_UNRESOLVABLE", 'persistentvolume "gone" not found'),
        "c-missing": ("UNSCHEDULABLE_AND_UNRESOLVABLE", 'persistentvolumeclaim "c-missing" not found'),
    }


def test_claim_hint():
    plugin = make(VolumeZone)
    hint = next(e.hint for e in plugin.events_to_register() if e.event.resource == "PersistentVolumeClaim")
    assert hint(user("c1"), None, claim("c1")) == QueueingHint.QUEUE
    assert hint(user("c1"), None, claim("c2")) == QueueingHint.QUEUE_SKIP
