"""Pod scheduling signatures (KEP-5598, upstream ``framework/runtime/signature`` and the kube-scheduler
framework's ``signers``).

A pod's signature captures everything of the pod its profile's PreFilter, Filter, PreScore and Score
plugins read: two pods with equal signatures get the same feasibility and the same scores on any node in
the same state, so the second may reuse the first one's sorted feasible nodes (opportunistic batching,
``core/scheduler/opportunistic_batch.py``).  Each plugin contributes *fragments* through its ``sign_pod``
hook (the SignPlugin extension point): ``(signer name, value)`` pairs, the names upstream's
(``v1.Pod.Spec.Tolerations``, ...) so that two plugins reading the same field contribute the same
fragment; or a non-success Status when it cannot promise that (a pod with inter-pod affinity, topology
spread constraints or DRA claims is *unsignable*).  :class:`PodSigner` joins one profile's fragments; a
profile with a scheduling plugin that has no ``sign_pod``, or with scheduler extenders, signs no pod, as
upstream's ``computeBatchablePlugins``.

Values are plain tuples, strings and ints, compared with ``==``: a signer may be stricter than needed (two
equal affinities written in another order sign differently), never looser.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from ..api.core_v1 import Pod, is_extended_resource
from ..features import FeatureGates
from .nodeinfo import host_ports
from .registry import implemented_hooks
from .resources import pod_requests
from .status import Code, Status

log = logging.getLogger(__name__)

# --- upstream's signer names (k8s.io/kube-scheduler/framework signers) -----------------------------------

DYNAMIC_RESOURCES_SIGNER = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES_SIGNER = "v1.Pod.Spec.CanonicalImageNames()"
LABELS_SIGNER = "v1.Pod.Labels"
NODE_NAME_SIGNER = "v1.Pod.Spec.NodeName"
NODE_AFFINITY_SIGNER = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR_SIGNER = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS_SIGNER = "v1.Pod.Spec.HostPorts()"
RESOURCES_SIGNER = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"
TOLERATIONS_SIGNER = "v1.Pod.Spec.Tolerations"
VOLUMES_SIGNER = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES_SIGNER = "v1.Pod.Spec.RequiredFeatures()"

#: A pod's signature: its fragments sorted by signer name (None: the pod is unsignable).
Signature = tuple[tuple[str, Any], ...]


# --- the common signers (upstream's, shared by several plugins) ------------------------------------------

def host_ports_fragment(pod: Pod) -> tuple[str, Any]:
    """The host ports NodePorts checks, sorted: ``(HOST_PORTS_SIGNER, ((ip, protocol, port), ...))``."""
    return HOST_PORTS_SIGNER, tuple(sorted(host_ports(pod)))


def tolerations_fragment(pod: Pod) -> tuple[str, Any]:
    """The pod's tolerations, order-free (NodeUnschedulable and TaintToleration sign the same fragment)."""
    return TOLERATIONS_SIGNER, tuple(sorted(repr(t) for t in pod.spec.tolerations))


def volumes_fragment(pod: Pod) -> tuple[str, Any]:
    """The pod's volume sources except ConfigMap and Secret ones (synthetic: they never decide a node, and
    would give every pod its own signature), without their names, order-free - upstream's VolumesSigner,
    signed by every volume plugin."""
    sources = []
    for volume in pod.spec.volumes:
        if "configMap" in volume.extra or "secret" in volume.extra:
            continue
        sources.append(repr(attrs.evolve(volume, name="")))
    return VOLUMES_SIGNER, tuple(sorted(sources))


def node_affinity_fragments(pod: Pod) -> list[tuple[str, Any]]:
    """NodeAffinity's fragments: the pod's node affinity and its nodeSelector."""
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    return [(NODE_AFFINITY_SIGNER, repr(node_affinity) if node_affinity is not None else None),
            (NODE_SELECTOR_SIGNER, tuple(sorted(pod.spec.node_selector.items())))]


def labels_fragment(pod: Pod) -> tuple[str, Any]:
    """The pod's labels (existing pods' affinity terms may select them)."""
    return LABELS_SIGNER, tuple(sorted(pod.metadata.labels.items()))


def resources_fragment(pod: Pod, features: FeatureGates) -> tuple[str, Any] | Status:
    """What the pod requests, as NodeResourcesFit and BalancedAllocation read it (upstream's
    computePodResourceRequest: containers, init containers, overhead, pod-level resources, resize status).
    Unsignable (Unschedulable status, upstream's message) under DRAExtendedResource when the pod asks for an
    extended resource, which devices may then provide; upstream makes every pod unsignable while the gate is
    on, kubesched only the pods the gate can concern (at 1.37, where the gate is locked on, upstream's rule
    would never batch)."""
    requests = pod_requests(pod)
    if features.enabled("DRAExtendedResource") and any(is_extended_resource(name) for name in requests):
        return Status.unschedulable("signature disabled when dra extended resources enabled")
    return RESOURCES_SIGNER, tuple(sorted(requests.items()))


# --- a profile's SignPod --------------------------------------------------------------------------------

SignMethod = Callable[[Pod], Any]


class PodSigner:
    """Upstream ``frameworkImpl.SignPod`` for one profile.

    ``plugins``: plugin name -> plugin of the profile; ``scheduling``: the names of its PreFilter, Filter,
    PreScore and Score plugins (the plugins whose answers a batch reuses); ``extenders``: whether the
    configuration has scheduler extenders.  :attr:`enabled` is False (and :meth:`sign` always None) when one
    of those plugins has no ``sign_pod`` hook - :attr:`unsupported` names them - or with extenders.
    :attr:`refusers` are the plugins that have found a pod unsignable so far (learned as :meth:`sign` runs):
    :meth:`refuses` asks them alone, a cheap first look before a full signature."""

    def __init__(self, plugins: dict[str, Any], scheduling: list[str], extenders: bool = False):
        names = list(dict.fromkeys(scheduling))
        self.unsupported = [name for name in names if "sign_pod" not in implemented_hooks(type(plugins[name]))]
        self.enabled = not extenders and not self.unsupported
        self.methods: list[tuple[str, SignMethod]] = (
            [(name, plugins[name].sign_pod) for name in names] if self.enabled else [])
        self.refusers: list[tuple[str, SignMethod]] = []
        if extenders:
            log.info("Disabling signatures for the profile because it has extenders configured")
        elif self.unsupported:
            log.info("Disabling signatures for the profile because plugins do not support it: %s",
                     ", ".join(self.unsupported))

    def sign(self, pod: Pod) -> Signature | None:
        """The pod's signature, or None when it is unsignable (a plugin answered a non-success Status, logged
        at debug with its message; an Error one at error) or the profile signs no pod."""
        if not self.enabled:
            return None
        fragments: dict[str, Any] = {SCHEDULER_NAME_SIGNER: pod.spec.scheduler_name}
        for name, method in self.methods:
            answer = method(pod)
            if isinstance(answer, Status):
                if not answer.is_success():
                    (log.error if answer.code == Code.ERROR else log.debug)(
                        "SignPod can't sign pod %s due to plugin %s: %s", pod.key, name, answer.message())
                    if (name, method) not in self.refusers:
                        self.refusers.append((name, method))
                    return None
                continue
            if answer:
                fragments.update(answer)
        return tuple(sorted(fragments.items(), key=_first))

    def refuses(self, pod: Pod) -> bool:
        """Does one of :attr:`refusers` find ``pod`` unsignable?  True means :meth:`sign` would answer None;
        False decides nothing (a plugin that never refused may still refuse).  Costs the refusers'
        ``sign_pod`` calls only: nothing on a profile whose pods have all been signable."""
        for _, method in self.refusers:
            answer = method(pod)
            if isinstance(answer, Status) and not answer.is_success():
                return True
        return False


def _first(item: tuple[str, Any]) -> str:
    return item[0]
