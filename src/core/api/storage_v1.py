"""storage.k8s.io/v1: StorageClass."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from .meta import ObjectMeta


@frozen
class StorageClass:
    """``volume_binding_mode`` Immediate (default) or WaitForFirstConsumer;
    ``allowed_topologies`` kept raw (list of topology selector terms)."""

    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    parameters: dict[str, str] = field(factory=dict)
    reclaim_policy: str = ""
    volume_binding_mode: str = "Immediate"
    allowed_topologies: tuple[dict[str, Any], ...] = ()
    allow_volume_expansion: bool | None = None
