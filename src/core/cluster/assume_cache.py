"""AssumeCache: an informer's objects plus in-memory "assumed" newer versions.

Plugins that decide in the scheduling cycle but write to the API server only
in PreBind (VolumeBinding for PersistentVolumes and claims, DynamicResources
for ResourceClaims) must see their own decisions at once, before the watch
brings the written object back.  Mirrors upstream's
``pkg/scheduler/util/assumecache``:

- :meth:`AssumeCache.assume` replaces the cached object by a modified copy
  (same or newer resourceVersion) that only lives in memory;
- :meth:`AssumeCache.restore` drops the assumed copy (Unreserve);
- an informer event carrying a resourceVersion at least as new as the cached
  newer than the cached one replaces both (the API caught up, or someone
  else changed the object); others are ignored, so an assumed copy survives
  stale events.
"""

from __future__ import annotations

from typing import Any, Callable

from kubesched.core.api import object_key
from kubesched.core.cluster.informer import Informers


class AssumeError(Exception):
    """:meth:`AssumeCache.assume` refused: the object is unknown or out of date."""


def resource_version(obj: Any) -> int:
    """The object's resourceVersion as a number (opaque upstream, numeric in practice;
    upstream's ``storage.APIObjectVersioner`` compares them the same way)."""
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


class AssumeCache:
    """The ``kind`` objects of ``informers`` (keyed by ``namespace/name``), with assumed versions.

    Build it before the informers start (it registers handlers).  ``on_change``
    handlers, added with :meth:`add_handler`, are called with ``(old, new)`` on
    every change of the visible object (old None on add, new None on delete),
    assumed or not.
    """

    def __init__(self, informers: Informers, kind: str):
        self.kind = kind
        self._informers = informers
        self._latest: dict[str, Any] = {}
        self._api: dict[str, Any] = {}
        self._handlers: list[Callable[[Any, Any], None]] = []
        informers.add_handlers(kind, self._on_add, lambda old, new: self._on_add(new), self._on_delete)

    def add_handler(self, handler: Callable[[Any, Any], None]) -> None:
        """Call ``handler(old, new)`` on every later change of a visible object (old None on add, new None on
        delete), assumed or not."""
        self._handlers.append(handler)

    def _notify(self, old: Any, new: Any) -> None:
        for handler in self._handlers:
            handler(old, new)

    def _on_add(self, obj: Any) -> None:
        key = object_key(obj)
        current = self._latest.get(key)
        if current is not None and resource_version(obj) <= resource_version(current) and not self._informers.replaying:
            return  # not newer: keep what we have (an assumed copy survives a resync), unless a rollback goes back
        self._latest[key] = obj
        self._api[key] = obj
        self._notify(current, obj)

    def _on_delete(self, obj: Any) -> None:
        key = object_key(obj)
        old = self._latest.pop(key, None)
        self._api.pop(key, None)
        self._notify(old, None)

    def get(self, key: str) -> Any | None:
        """The newest known version (assumed or from the API), or None."""
        return self._latest.get(key)

    def get_api_obj(self, key: str) -> Any | None:
        """The version the API server last sent, ignoring assumptions."""
        return self._api.get(key)

    def list(self) -> list[Any]:
        """Every object, in its newest known version."""
        return list(self._latest.values())

    def is_assumed(self, key: str) -> bool:
        """Whether object ``key`` (``namespace/name``) is visible in an assumed version the API server has not sent."""
        return key in self._latest and self._latest[key] is not self._api.get(key)

    def assume(self, obj: Any) -> None:
        """Make ``obj`` the visible version of its object until the API sends
        a newer one or :meth:`restore`.  Raises :class:`AssumeError` when the
        object is unknown or ``obj`` is older than the cached version."""
        key = object_key(obj)
        current = self._latest.get(key)
        if current is None:
            raise AssumeError(f"{self.kind} {key!r} not found")
        if resource_version(obj) < resource_version(current):
            raise AssumeError(f"{self.kind} {key!r} is out of sync (stored: {resource_version(current)}, "
                              f"assume: {resource_version(obj)})")
        self._latest[key] = obj
        self._notify(current, obj)

    def restore(self, key: str) -> None:
        """Forget the assumed version of ``key`` (no-op when none)."""
        api = self._api.get(key)
        current = self._latest.get(key)
        if api is not None and current is not api:
            self._latest[key] = api
            self._notify(current, api)
