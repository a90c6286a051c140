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

from .devicetainteviction import DeviceTaintEvictionController
from .disruption import DisruptionController
from .ephemeral import EphemeralVolumeController
from .persistentvolume import PersistentVolumeController
from .resourceclaim import ResourceClaimController

#: name -> controller class, in start order.
CONTROLLERS: dict[str, type[Controller]] = {
    "resourceclaim": ResourceClaimController,
    EphemeralVolumeController.name: EphemeralVolumeController,
    PersistentVolumeController.name: PersistentVolumeController,
    DeviceTaintEvictionController.name: DeviceTaintEvictionController,
    DisruptionController.name: DisruptionController,
}


def build_controller_manager(ctx: ControllerContext, names: list[str] | None = None) -> ControllerManager:
    """A :class:`ControllerManager` with the named controllers (default: every
    controller that applies: embedded-only ones only when ``ctx.embedded``).
    Raises ``KeyError`` for an unknown name."""
    chosen = list(CONTROLLERS) if names is None else names
    controllers = []
    for name in chosen:
        cls = CONTROLLERS[name]
        if cls.embedded_only and not ctx.embedded:
            continue
        controllers.append(cls(ctx))
    return ControllerManager(ctx.informers, controllers)
