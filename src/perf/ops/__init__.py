"""scheduler_perf's ops: the table from opcode to op class, one module per family.

:data:`OPS` is every opcode kubesched knows, as upstream's op decoder does:
a config file naming any other opcode is refused when it loads, with the
opcode and the file.  A row whose class does not run (:class:`~.base.NotRun`)
is an upstream op kubesched does not implement yet: a workload using it is
reported unsupported, never skipped.

Families: :mod:`.nodes` (createNodes), :mod:`.namespaces`
(createNamespaces), :mod:`.pods` (createPods, createPodSets, deletePods; with
:mod:`.volumes` for pods with their own bound PV), :mod:`.objects`
(createAny, updateAny), :mod:`.podgroups` (createPodGroups,
createCompositePodGroups, waitForPodGroups), :mod:`.churn`, :mod:`.barriers` (barrier, sleep,
checkPodScheduled), :mod:`.metrics` (start/stopCollectingMetrics),
:mod:`.dra` (createResourceDriver, updateDeviceConditions,
allocResourceClaims).  Shared: :mod:`.base` (the op base class and the
executor as ops see it), :mod:`.sources` (typed objects from templates),
:mod:`.checks` (what makes a workload unsupported).

Adding an op: a :class:`~.base.PerfOp` subclass in its family's module
(``FIELDS``, ``validate``, ``check``, ``run``) and a row here.
"""

from __future__ import annotations

from .barriers import Barrier, CheckPodScheduled, Sleep
from .base import NotRun, PerfOp
from .churn import Churn
from .dra import AllocResourceClaims, CreateResourceDriver, UpdateDeviceConditions
from .metrics import StartCollectingMetrics, StopCollectingMetrics
from .namespaces import CreateNamespaces
from .nodes import CreateNodes
from .objects import CreateAny, UpdateAny
from .podgroups import CreateCompositePodGroups, CreatePodGroups, WaitForPodGroups
from .pods import CreatePods, CreatePodSets, DeletePods

#: opcode -> the op class that parses, checks and runs it.
OPS: dict[str, type[PerfOp]] = {
    "createNodes": CreateNodes,
    "createNamespaces": CreateNamespaces,
    "createPods": CreatePods,
    "createPodSets": CreatePodSets,
    "deletePods": DeletePods,
    "createAny": CreateAny,
    "updateAny": UpdateAny,
    "createPodGroups": CreatePodGroups,
    "createCompositePodGroups": CreateCompositePodGroups,
    "waitForPodGroups": WaitForPodGroups,
    "churn": Churn,
    "barrier": Barrier,
    "sleep": Sleep,
    "checkPodScheduled": CheckPodScheduled,
    "startCollectingMetrics": StartCollectingMetrics,
    "stopCollectingMetrics": StopCollectingMetrics,
    "createResourceDriver": CreateResourceDriver,
    "updateDeviceConditions": UpdateDeviceConditions,
    "allocResourceClaims": AllocResourceClaims,
    # upstream ops kubesched does not run yet
    "createResourceClaims": NotRun,
    "startCollectingProfile": NotRun,
    "stopCollectingProfile": NotRun,
}

__all__ = ["OPS", "PerfOp"]
