"""What a scheduler_perf suite's Go test package adds around its configuration.

Some suites are not only a ``performance-config.yaml``: their ``*_test.go``
registers hooks (upstream's ``perf.WithPreInitFn`` and
``perf.WithNodeUpdateFn``) that set the scene before the scheduler starts and
after each ``createNodes``.  :data:`SUITES` maps a suite's folder name to the
same behaviour here, so that its configuration runs unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from ..core.api.node_features import FeatureRegistry, NodeFeature
from .config import Params

#: upstream's nodedeclaredfeatures suite: mock features Feature1..N when the workload gives no number
DEFAULT_DECLARED_FEATURES = 5


class Suite(Protocol):
    """The hooks of one suite, built per workload from its feature gates and params."""

    def scheduler_built(self, scheduler: Any) -> None:
        """The scheduler exists (before any op runs): upstream's pre-init hook."""

    def nodes_created(self, cluster: Any) -> None:
        """A ``createNodes`` op finished: upstream's node-update hook."""


class NodeDeclaredFeaturesSuite:
    """``nodedeclaredfeatures/node_declared_features_test.go``: with the
    NodeDeclaredFeatures gate on, ``numNodeDeclaredFeatures`` (default 5) mock
    features Feature1..N are the registry, each needed by any pod with
    pod-level resources (``spec.resources``), and every node declares them
    all once created."""

    def __init__(self, feature_gates: dict[str, bool], params: Params):
        self.enabled = bool(feature_gates.get("NodeDeclaredFeatures"))
        self.names: tuple[str, ...] = ()
        if self.enabled:
            count = (params.count("$numNodeDeclaredFeatures") if "numNodeDeclaredFeatures" in params.values
                     else DEFAULT_DECLARED_FEATURES)
            self.names = tuple(sorted(f"Feature{i}" for i in range(1, count + 1)))

    def scheduler_built(self, scheduler: Any) -> None:
        if not self.enabled:
            return
        registry = FeatureRegistry([NodeFeature(name, _has_pod_level_resources) for name in self.names])
        for framework in scheduler.profiles.values():
            plugin = framework.plugins.get("NodeDeclaredFeatures")
            if plugin is not None:
                plugin.registry = registry

    def nodes_created(self, cluster: Any) -> None:
        if not self.enabled:
            return
        for node in cluster.list("Node").items:
            if node.status.declared_features != self.names:
                cluster.update_status(attrs.evolve(node, status=attrs.evolve(node.status,
                                                                             declared_features=self.names)))


def _has_pod_level_resources(spec: Any) -> bool:
    return spec.resources is not None


#: suite folder name -> its hooks' class, built with (feature gates, params)
SUITES: dict[str, type] = {"nodedeclaredfeatures": NodeDeclaredFeaturesSuite}


def suite_for(folder: str, feature_gates: dict[str, bool], params: Params) -> Suite | None:
    """The hooks of the suite in ``folder`` (its name), or None for a plain configuration."""
    cls = SUITES.get(folder)
    return cls(feature_gates, params) if cls is not None else None
