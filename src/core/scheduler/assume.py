"""Assume a pod on its node and undo it, side by side (upstream ``schedule_one.go``'s
``assumeAndReserve`` and ``unreserveAndForget``).

The pod cycle assumes the pod it placed; the PodGroup cycle assumes each
member in a placement and undoes them, last first, when the placement is
not kept; the binding cycle undoes a pod whose binding failed.
"""

from __future__ import annotations

import logging

from ..api.core_v1 import Pod, PodSpec
from ..api.meta import replacer
from ..framework.cycle_state import CycleState
from ..framework.runtime import Framework
from ..framework.status import Status
from .cache import Cache, CacheError
from .queue import Nominator, QueuedPodInfo

log = logging.getLogger(__name__)

_with_spec = replacer(Pod, "spec")
_with_node_name = replacer(PodSpec, "node_name")


def on_node(pod: Pod, node_name: str) -> Pod:
    """``pod`` with ``spec.nodeName`` set to ``node_name``: the pod as assumed (equal to
    ``evolve(pod, spec=evolve(pod.spec, node_name=node_name))``; PodSpec's one check, of its topology spread
    constraints, passed for ``pod`` already)."""
    return _with_spec(pod, _with_node_name(pod.spec, node_name))


def assume_and_reserve(cache: Cache, nominator: Nominator, fwk: Framework, state: CycleState, info: QueuedPodInfo,
                       node_name: str) -> tuple[Pod, Status | None]:
    """Assume ``info``'s pod on ``node_name`` in ``cache`` (its nomination
    ends) and run Reserve.  Returns the assumed pod and Reserve's failure
    (None: it holds its node); after a failure the pod is already unreserved
    and forgotten."""
    pod_info = info.pod_info
    pod = pod_info.pod
    assumed = on_node(pod, node_name)
    cache.assume_pod(assumed, pod_info)
    nominator.delete(pod)
    status = fwk.run_reserve(state, assumed, node_name)
    if status is not None:
        unreserve_and_forget(cache, fwk, state, assumed, node_name)
    return assumed, status


def unreserve_and_forget(cache: Cache, fwk: Framework, state: CycleState, assumed: Pod, node_name: str) -> None:
    """Unreserve and forget the assumed pod (one that its informer event
    already confirmed as bound - a Bind that failed after the API server
    bound it, seen first on a binding worker - stays)."""
    fwk.run_unreserve(state, assumed, node_name)
    try:
        cache.forget_pod(assumed)
    except CacheError as err:
        log.warning("not forgetting a pod the cluster already bound", extra={"pod": assumed.key, "err": str(err)})
