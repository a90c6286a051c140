"""The built-in controllers: control loops that run beside the scheduler.

:data:`CONTROLLERS` maps a controller's name to its class (a
:class:`~kubesched.core.controller.base.Controller` subclass built from a
:class:`~kubesched.core.controller.base.ControllerContext`).  Controllers with
``embedded_only = True`` stand in for components a real cluster already runs
(kubelet, kube-controller-manager helpers) and only run on the embedded
cluster.  ``kubesched simulate`` and ``kubesched run`` start all of them.
"""

from __future__ import annotations

from kubesched.core.controller.base import Controller, ControllerContext, ControllerManager

from .cronjob import CronJobController
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .devicetainteviction import DeviceTaintEvictionController
from .disruption import DisruptionController
from .ephemeral import EphemeralVolumeController
from .job import JobController
from .kubelet import KubeletController
from .persistentvolume import PersistentVolumeController
from .podgroupprotection import PodGroupProtectionController
from .replicaset import ReplicaSetController
from .resourceclaim import ResourceClaimController
from .statefulset import StatefulSetController

#: name (kube-controller-manager's, where upstream has the controller) -> controller class, in start order.
CONTROLLERS: dict[str, type[Controller]] = {cls.name: cls for cls in (
    ResourceClaimController,
    EphemeralVolumeController,
    PersistentVolumeController,
    DeviceTaintEvictionController,
    DisruptionController,
    PodGroupProtectionController,
    DeploymentController,
    ReplicaSetController,
    StatefulSetController,
    DaemonSetController,
    JobController,
    CronJobController,
    KubeletController,
)}

#: the controllers of kube-controller-manager's workload kinds (apps/v1, batch/v1)
WORKLOAD_CONTROLLERS = ("deployment-controller", "replicaset-controller", "statefulset-controller",
                        "daemonset-controller", "job-controller", "cronjob-controller")


def _known(name: str, what: str) -> None:
    if name not in CONTROLLERS:
        raise KeyError(f"{what}: unknown controller {name!r} (known: {', '.join(CONTROLLERS)})")


def build_controller_manager(ctx: ControllerContext, names: list[str] | None = None) -> ControllerManager:
    """A :class:`ControllerManager` with the named controllers (default: every
    controller that applies: embedded-only ones only when ``ctx.embedded``).
    Raises ``KeyError`` naming an unknown controller, in ``names`` or in
    ``ctx.options`` (options for a controller nobody runs would be ignored)."""
    for name in ctx.options:
        _known(name, "controller options")
    chosen = list(CONTROLLERS) if names is None else names
    controllers = []
    for name in chosen:
        _known(name, "controllers")
        cls = CONTROLLERS[name]
        if cls.embedded_only and not ctx.embedded:
            continue
        controllers.append(cls(ctx))
    return ControllerManager(ctx.informers, controllers)
