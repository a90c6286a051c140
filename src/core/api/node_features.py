"""Node declared features (KEP-5328): which features a pod needs of its node.

Upstream's ``k8s.io/component-helpers/nodedeclaredfeatures``: a registry of
features, each with a name, whether a pod's spec needs it to be scheduled
(``InferForScheduling``) and the newest version that still needs it declared
(``MaxVersion``: a feature every node of later versions has is no longer
asked for).  Kubelets publish the features they have in
``Node.status.declaredFeatures``; the NodeDeclaredFeatures plugin keeps a pod
off nodes that do not declare what it needs.  The scheduler reads the
registry through :func:`default_registry`; scheduler_perf's
nodedeclaredfeatures suite gives the plugin its own, as upstream's test
replaces ``features.AllFeatures``.
"""

from __future__ import annotations

from typing import Callable

from attrs import frozen

from .core_v1 import Container, PodSpec

#: A version as (major, minor, patch).
Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """``"1.35"`` or ``"1.35.0"`` (a leading ``v`` allowed) as (1, 35, 0); ValueError for anything else."""
    parts = text.strip().lstrip("v").split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"invalid version {text!r}: expected MAJOR.MINOR[.PATCH]")
    major, minor, *rest = (int(p) for p in parts)
    return major, minor, rest[0] if rest else 0


@frozen
class NodeFeature:
    """One declared feature: ``infer_for_scheduling(spec)`` says whether a pod
    with that spec needs it; ``max_version`` (None: no end) is the last
    version in which a pod still asks for it."""

    name: str
    infer_for_scheduling: Callable[[PodSpec], bool]
    max_version: Version | None = None


def _restart_rules(container: Container) -> list:
    rules = container.extra.get("restartPolicyRules")
    return rules if isinstance(rules, list) else []


def _restarts_all_containers(spec: PodSpec) -> bool:
    """A container whose restart rules restart every container (KEP-5532)."""
    for containers in (spec.containers, spec.init_containers):
        for container in containers:
            if "restartPolicyRules" in container.extra and any(
                    isinstance(rule, dict) and rule.get("action") == "RestartAllContainers"
                    for rule in _restart_rules(container)):
                return True
    return False


def _host_network_in_user_namespace(spec: PodSpec) -> bool:
    """Host networking with ``hostUsers: false`` (user namespaces)."""
    return bool(spec.extra.get("hostNetwork")) and spec.extra.get("hostUsers") is False


def _only_on_update(spec: PodSpec) -> bool:
    """Features only an update (an in-place resize) needs: never at scheduling time."""
    return False


#: Upstream's registry (``features.AllFeatures``): the features a kubelet may declare.
DEFAULT_FEATURES = (
    NodeFeature("GuaranteedQoSPodCPUResize", _only_on_update),
    NodeFeature("InPlacePodLevelResourcesVerticalScaling", _only_on_update),
    NodeFeature("RestartAllContainersOnContainerExits", _restarts_all_containers),
    NodeFeature("UserNamespacesHostNetworkSupport", _host_network_in_user_namespace),
)


class FeatureRegistry:
    """The features known, sorted by name (upstream ``ndf.Framework``)."""

    def __init__(self, features: tuple[NodeFeature, ...] | list[NodeFeature]):
        self.features = tuple(sorted(features, key=lambda f: f.name))
        #: version -> (name, infer) of the features still asked for at that version that a spec may need
        self._asked: dict[Version, tuple[tuple[str, Callable[[PodSpec], bool]], ...]] = {}

    def infer_for_pod_scheduling(self, spec: PodSpec, version: Version) -> frozenset[str]:
        """The names of the features a pod with ``spec`` needs of its node when
        the scheduler is at ``version`` (a feature past its ``max_version`` is
        not asked for)."""
        asked = self._asked.get(version)
        if asked is None:
            asked = self._asked[version] = tuple(
                (feature.name, feature.infer_for_scheduling) for feature in self.features
                if (feature.max_version is None or version <= feature.max_version)
                and feature.infer_for_scheduling is not _only_on_update)
        needed = [name for name, infer in asked if infer(spec)]
        return frozenset(needed) if needed else _NOTHING


_NOTHING: frozenset[str] = frozenset()
_registry = FeatureRegistry(DEFAULT_FEATURES)


def default_registry() -> FeatureRegistry:
    """The registry the scheduler infers with (upstream ``ndf.DefaultFramework``)."""
    return _registry

