"""Each of issue 35's resource gates switches its behaviour (a test per gate): PodLevelResources,
InPlacePodVerticalScaling, NodeDeclaredFeatures, StorageCapacityScoring, VolumeLimitScaling, at their defaults per
emulated release and turned off where a release allows it."""

from __future__ import annotations

import attrs
import pytest

from kubesched.core.api import from_manifest
from kubesched.core.cluster.client import NotFound
from kubesched.core.features import FeatureGates
from kubesched.core.framework.config import ConfigError
from kubesched.drivers.simulation import Simulation
from kubesched.testing import claim, claim_volume, csi_node, node, persistent_volume, pod

PLACED_ON = "kubernetes.io/hostname"


def pod_level(name: str, cpu: str):
    return pod(name, containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
               resources={"requests": {"cpu": cpu}})


def placed(sim: Simulation) -> list[str]:
    return sorted(p.metadata.name for p in sim.pods() if p.spec.node_name)


@pytest.mark.parametrize("release, overrides, both_fit", [
    ("1.37", {}, False), ("1.34", {}, False),
    ("1.37", {"PodLevelResources": False, "InPlacePodLevelResourcesVerticalScaling": False}, True)])
def test_pod_level_resources(release, overrides, both_fit):
    """On (every release's default): two pod-level 3-CPU pods do not share a 4-CPU node.  Off: the API server
    drops spec.resources (noted) and the pods count their containers' 100m."""
    features = FeatureGates(release, overrides)
    sim = Simulation(features=features)
    sim.create([node("n", cpu="4"), pod_level("a", "3"), pod_level("b", "3")])
    sim.run()
    assert len(placed(sim)) == (2 if both_fit else 1)
    assert any("spec.resources dropped" in note for note in features.notes) == both_fit


@pytest.mark.parametrize("release, overrides, served", [
    ("1.37", {}, True), ("1.34", {"InPlacePodVerticalScaling": False},
                         False)])
def test_in_place_pod_vertical_scaling(release, overrides, served):
    """The pods/resize subresource exists only with the gate on (GA, locked on, from 1.35)."""
    sim = Simulation(features=FeatureGates(release, overrides))
    sim.create([node("n", cpu="4"), pod("a", cpu="1", node_name="n")])
    sim.run()
    patch = {"spec": {"containers": [{"name": sim.pod("a").spec.containers[0].name,
                                      "resources": {"requests": {"cpu": "2"}}}]}}
    if served:
        assert sim.cluster.patch("Pod", "a", patch, "default", subresource="resize").spec.containers[0] \
            .resources.requests["cpu"] == 2000
    else:
        with pytest.raises(NotFound):
            sim.cluster.patch("Pod", "a", patch, "default", subresource="resize")


RESTART_ALL = [{"name": "c", "image": "i", "restartPolicyRules": [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}]


@pytest.mark.parametrize("release, overrides, enforced", [
    ("1.37", {}, True), ("1.36", {}, True),
    ("1.36", {"NodeDeclaredFeatures": False, "InPlacePodLevelResourcesVerticalScaling": False}, False)])
def test_node_declared_features(release, overrides, enforced):
    """On: a pod needing RestartAllContainersOnContainerExits waits for a node that declares it.  Off: the
    plugin does nothing (and the API server drops a node's declaredFeatures)."""
    sim = Simulation(features=FeatureGates(release, overrides))
    sim.create([node("plain"), pod("r", containers=RESTART_ALL)])
    sim.run()
    assert bool(sim.pod("r").spec.node_name) != enforced


def capacity_objects(config=None):
    local = from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
                           "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    return [node("n1"), node("n2"), local,
            persistent_volume("roomy", "100Gi", "local", node_affinity={PLACED_ON: ["n1"]}),
            persistent_volume("snug", "10Gi", "local", node_affinity={PLACED_ON: ["n2"]}),
            claim("c1", "8Gi", "local"), pod("p", volumes=[claim_volume("v", "c1")])]


@pytest.mark.parametrize("release, scored", [("1.37", True), ("1.36", False)])
def test_storage_capacity_scoring(release, scored):
    """On (1.37): VolumeBinding scores with the default shape; off (1.36): it does not score, and a shape in the
    args is refused as upstream's validation refuses it."""
    sim = Simulation(features=FeatureGates(release))
    plugin = sim.scheduler.profiles["default-scheduler"].plugins["VolumeBinding"]
    assert (plugin.shape is not None) == scored
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
               {"name": "VolumeBinding", "args": {"shape": [{"utilization": 0, "score": 0},
                                                            {"utilization": 100, "score": 10}]}}]}]}
    if scored:
        Simulation(cfg, features=FeatureGates(release))
    else:
        with pytest.raises(ConfigError, match="shape: .*unsupported when StorageCapacityScoring feature is disabled"):
            Simulation(cfg, features=FeatureGates(release))


@pytest.mark.parametrize("release, enforced", [("1.37", True), ("1.36", False)])
def test_volume_limit_scaling(release, enforced):
    """On (1.37): a CSIDriver's preventPodSchedulingIfMissing keeps the pod off a node without the driver."""
    driver = from_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.csi"},
                            "spec": {"preventPodSchedulingIfMissing": True}})
    uid = "uid-c0"
    objects = [node("n"), csi_node("n", {"other.csi": 5}), driver,
               persistent_volume("pv0", claim=("default", "c0", uid), phase="Bound",
                                 csi={"driver": "d.csi", "volumeHandle": "h0"}),
               attrs.evolve(claim("c0", volume_name="pv0", uid=uid,
                                  annotations={"pv.kubernetes.io/bind-completed": "yes"})),
               pod("p", volumes=[claim_volume("v", "c0")])]
    sim = Simulation(features=FeatureGates(release))
    sim.create(objects)
    sim.run()
    assert bool(sim.pod("p").spec.node_name) != enforced
