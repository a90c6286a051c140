"""createNamespaces: ``<prefix>-0`` .. ``<prefix>-<count-1>``, registered for barriers."""

from __future__ import annotations

import attrs

from ...core.api.core_v1 import Namespace
from ...core.cluster.client import AlreadyExists
from .base import PerfOp
from .sources import ObjectSource


class CreateNamespaces(PerfOp):
    """``count`` namespaces named ``<prefix>-<i>``, from ``namespaceTemplatePath``
    (a plain Namespace manifest) or empty; each is registered (0 pods) so a
    later ``barrier`` knows it, as upstream's namespace preparer does."""

    FIELDS = ("prefix", "count", "countParam", "namespaceTemplatePath")
    DEFAULT_COUNT = 0

    def template(self) -> Namespace:
        """The Namespace from ``namespaceTemplatePath`` (plain YAML, not expanded), or an empty one."""
        path = self.fields.get("namespaceTemplatePath")
        if path is None:
            return Namespace()
        return ObjectSource(self.executor.path(path), "Namespace", expand=False).object()

    def check(self) -> None:
        """Reads the template now, so a bad file fails before anything runs."""
        self.template()

    def run(self) -> None:
        executor = self.executor
        base = self.template()
        prefix = self.fields.get("prefix", "")
        for index in range(self.fields["count"]):
            name = f"{prefix}-{index}"
            if name not in executor.namespaces:
                executor.namespaces[name] = 0
            try:
                executor.cluster.create(attrs.evolve(base, metadata=attrs.evolve(base.metadata, name=name)))
            except AlreadyExists:
                pass
