"""churn: objects created (and deleted) in the background while the workload goes on."""

from __future__ import annotations

from typing import Any

import attrs

from ...core.api import resource_of
from ...core.cluster.client import ApiError
from ..errors import PerfConfigError
from .base import Background, PerfOp
from .checks import check_kind, check_pod
from .sources import ObjectSource


class Churn(PerfOp):
    """Every ``intervalMilliseconds`` (default 500) creates one object per
    template of ``templatePaths`` (plain YAML, not expanded), in ``namespace``
    (default ``namespace-<opIndex>``) for a namespaced kind: mode ``create``
    up to ``number`` rounds (0: no limit), mode ``recreate`` alternately
    creating and deleting in ``number`` slots; until the workload ends."""

    FIELDS = ("mode", "number", "intervalMilliseconds", "namespace", "templatePaths")

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Refuses (PerfConfigError) a mode other than create/recreate, recreate with ``number`` 0, and no
        ``templatePaths``."""
        if fields.get("mode") not in ("create", "recreate"):
            raise PerfConfigError(f"{where}: mode: invalid mode {fields.get('mode')!r}, must be one of create, recreate")
        if fields["mode"] == "recreate" and not fields.get("number"):
            raise PerfConfigError(f"{where}: number cannot be 0 when mode is recreate")
        paths = fields.get("templatePaths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
            raise PerfConfigError(f"{where}: templatePaths: at least one template path needs to be specified")

    def check(self) -> None:
        """Loads every template (unexpanded) now: a kind kubesched does not model, or a pod its profiles cannot
        schedule as upstream would, is Unsupported."""
        for path in self.fields["templatePaths"]:
            source = ObjectSource(self.executor.path(path), None, expand=False)
            doc = check_kind("churn", source.document(), source.where)
            if doc.get("kind") == "Pod":
                check_pod(self.executor, "churn", doc, source.object())

    def run(self) -> None:
        executor = self.executor
        fields = self.fields
        namespace = fields.get("namespace") or f"namespace-{self.index}"
        executor.ensure_namespace(namespace, register=False)
        objects = []
        for path in fields["templatePaths"]:
            obj = ObjectSource(executor.path(path), None, expand=False).object()
            if resource_of(obj).namespaced:
                obj = attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=namespace))
            objects.append(obj)
        interval = (fields.get("intervalMilliseconds") or 500) / 1000.0
        number = fields.get("number", 0)
        mode = fields["mode"]
        cluster = executor.cluster
        clock = executor.clock
        task = Background("churn")
        executor.add_background(task)
        slots: list[list[str]] = [[""] * max(number, 1) for _ in objects]
        state = {"count": 0, "start": clock.now()}

        def create(obj: Any) -> str:
            try:
                return cluster.create(obj).metadata.name
            except ApiError:
                return ""

        def fire() -> None:
            if task.cancelled:
                return
            count = state["count"]
            if mode == "create":
                for obj in objects:
                    create(obj)
            else:
                for position, obj in enumerate(objects):
                    slot = count % number
                    name = slots[position][slot]
                    if name:
                        try:
                            cluster.delete(resource_of(obj).kind, name, obj.metadata.namespace)
                        except ApiError:
                            pass
                        slots[position][slot] = ""
                    else:
                        slots[position][slot] = create(obj)
            state["count"] = count + 1
            if mode == "create" and number and state["count"] >= number:
                task.finished = True
                return
            task.timer = clock.call_at(state["start"] + interval * (state["count"] + 1), fire, background=True)

        task.timer = clock.call_at(state["start"] + interval, fire, background=True)
