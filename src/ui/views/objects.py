"""The Objects page: what else the scheduler reads, as lists - namespaces, PriorityClasses,
StorageClasses, PersistentVolumes and PersistentVolumeClaims - as the last run left them, each with a
link to edit it in the what-if editor.

Sizes are shown as a person writes them (``10Gi``); a volume's claim and a claim's volume name each
other; a namespace counts its pods.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kubesched.analysis.explain import quantity

from ..outcome import Outcome


def _size(amounts: dict[str, int]) -> str:
    return quantity("ephemeral-storage", amounts["storage"]) if "storage" in amounts else "-"


def objects_page(outcome: Outcome) -> dict[str, Any]:
    """``namespaces`` (name, pods), ``priority_classes`` (name, value, globalDefault, preemptionPolicy; highest
    value first), ``storage_classes`` (name, provisioner, volumeBindingMode, reclaimPolicy), ``volumes``
    (name, capacity, class, phase, claim, access modes) and ``claims`` (key, request, class, phase, volume)."""
    cluster = outcome.sim.cluster
    pods = Counter(pod.metadata.namespace for pod in outcome.pods)
    names = sorted({ns.metadata.name for ns in cluster.list("Namespace").items} | set(pods))
    classes = sorted(cluster.list("PriorityClass").items, key=lambda c: (-c.value, c.metadata.name))
    volumes = sorted(cluster.list("PersistentVolume").items, key=lambda v: v.metadata.name)
    claims = sorted(cluster.list("PersistentVolumeClaim").items,
                    key=lambda c: (c.metadata.namespace, c.metadata.name))
    return {
        "namespaces": [{"name": name, "pods": pods.get(name, 0)} for name in names],
        "priority_classes": [{"name": c.metadata.name, "value": c.value, "globalDefault": c.global_default,
                              "preemptionPolicy": c.preemption_policy} for c in classes],
        "storage_classes": [{"name": c.metadata.name, "provisioner": c.provisioner,
                             "bindingMode": c.volume_binding_mode, "reclaimPolicy": c.reclaim_policy or "Delete"}
                            for c in sorted(cluster.list("StorageClass").items, key=lambda c: c.metadata.name)],
        "volumes": [{"name": v.metadata.name, "capacity": _size(v.spec.capacity), "class": v.spec.storage_class_name,
                     "phase": v.status.phase, "accessModes": ", ".join(v.spec.access_modes),
                     "claim": f"{v.spec.claim_ref.namespace}/{v.spec.claim_ref.name}" if v.spec.claim_ref else ""}
                    for v in volumes],
        "claims": [{"key": f"{c.metadata.namespace}/{c.metadata.name}", "request": _size(c.spec.resources.requests),
                    "class": c.spec.storage_class_name if c.spec.storage_class_name is not None else "(default)",
                    "phase": c.status.phase, "volume": c.spec.volume_name} for c in claims],
    }
