"""Informers: list then watch each kind, keep a local store, and call handlers.

Like client-go's shared informers, but the delivery is explicit: watches only
queue events (from any thread), and :meth:`Informers.pump` hands them to the
registered handlers on the caller's thread, in arrival order.  The scheduler and
controllers pump from their own loop, so their state is never touched
concurrently.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Callable, TypeVar

from ..api import object_key
from .client import ADDED, DELETED, MODIFIED, REPLACE, ClusterClient, WatchEvent

T = TypeVar("T")

AddHandler = Callable[[Any], None]
UpdateHandler = Callable[[Any, Any], None]
DeleteHandler = Callable[[Any], None]


class Store(Mapping[str, Any]):
    """An informer's local copy of one kind, keyed by ``namespace/name``, as
    every thread may read it: lookups see the latest delivered object;
    iterating, ``keys()``, ``values()`` and ``items()`` give a snapshot taken
    under the informers' lock, so a controller worker never sees the store
    change under it while the loop that pumps events writes to it (the
    "dictionary changed size during iteration" of a plain dict).  Only
    :class:`Informers` writes."""

    __slots__ = ("_data", "_lock")

    def __init__(self, lock: threading.Lock):
        self._data: dict[str, Any] = {}
        self._lock = lock

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The latest delivered object under ``key`` (``namespace/name``), or ``default``."""
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._data))

    def keys(self) -> list[str]:  # type: ignore[override]
        """A snapshot list of the keys, taken under the informers' lock."""
        with self._lock:
            return list(self._data)

    def values(self) -> list[Any]:  # type: ignore[override]
        """A snapshot list of the objects, taken under the informers' lock."""
        with self._lock:
            return list(self._data.values())

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        """A snapshot list of ``(key, object)`` pairs, taken under the informers' lock."""
        with self._lock:
            return list(self._data.items())

    def _set(self, key: str, obj: Any) -> None:
        with self._lock:
            self._data[key] = obj

    def _delete(self, key: str) -> None:
        with self._lock:
            del self._data[key]


class _KindInformer:
    def __init__(self, lock: threading.Lock) -> None:
        self.store = Store(lock)
        self.on_add: list[AddHandler] = []
        self.on_update: list[UpdateHandler] = []
        self.on_delete: list[DeleteHandler] = []
        self.stop: Callable[[], None] | None = None


class Informers:
    """Shared informers over one :class:`ClusterClient`.

    ``add_handlers(kind, on_add, on_update, on_delete)`` registers handlers
    (before :meth:`start`); :meth:`start` lists every kind, delivers the
    existing objects as adds, and watches from the list's resourceVersion.
    ``wakeup`` is set whenever an event is queued, so a blocked loop can wake.
    """

    def __init__(self, cluster: ClusterClient):
        self.cluster = cluster
        self._kinds: dict[str, _KindInformer] = {}
        self._lock = threading.Lock()
        self._queue: collections.deque[WatchEvent] = collections.deque()
        self.wakeup = threading.Event()
        self.synced = False
        #: True while ``kubesched.sim``'s rollback delivers a transaction's changes back: an update may then carry
        #: an older resourceVersion than the one it replaces, and is not stale (the assume caches take it)
        self.replaying = False

    def add_handlers(
        self,
        kind: str,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        """Register handlers for ``kind`` (call before :meth:`start`): ``on_add(obj)``, ``on_update(old, new)``,
        ``on_delete(obj)``, called on the pumping thread (client-go's ``AddEventHandler``)."""
        informer = self._informer(kind)
        if on_add:
            informer.on_add.append(on_add)
        if on_update:
            informer.on_update.append(on_update)
        if on_delete:
            informer.on_delete.append(on_delete)

    def _informer(self, kind: str) -> _KindInformer:
        informer = self._kinds.get(kind)
        if informer is None:
            informer = self._kinds[kind] = _KindInformer(self._lock)
        return informer

    def store(self, kind: str) -> Store:
        """The informer's local copy of ``kind``, keyed by ``namespace/name`` (a :class:`Store`)."""
        return self._informer(kind).store

    def get(self, kind: str, key: str) -> Any | None:
        """The stored object of ``kind`` under ``key`` (``namespace/name``), or None."""
        return self.store(kind).get(key)

    def start(self) -> None:
        """List and watch every registered kind; existing objects arrive as adds on the next pump."""
        for kind, informer in self._kinds.items():
            listed = self.cluster.list(kind)
            for obj in listed.items:
                self._sink(WatchEvent(ADDED, kind, obj))
            informer.stop = self.cluster.watch(kind, listed.resource_version, self._sink)
        self.synced = True

    def stop(self) -> None:
        """Stop every kind's watch; events already queued stay for :meth:`pump`."""
        for informer in self._kinds.values():
            if informer.stop:
                informer.stop()
                informer.stop = None

    def _sink(self, event: WatchEvent) -> None:
        self._queue.append(event)
        if not self.wakeup.is_set():  # set until the next pump clears it, before draining the queue
            self.wakeup.set()

    def pending(self) -> bool:
        """Whether events are queued that :meth:`pump` has not delivered."""
        return bool(self._queue)

    def discard_pending(self) -> int:
        """Drop the queued events :meth:`pump` has not delivered (a rollback drops the watch events of the writes
        it undid); returns how many."""
        dropped = len(self._queue)
        self._queue.clear()
        return dropped

    def pump(self, limit: int | None = None) -> int:
        """Deliver queued events to the handlers; returns how many were delivered."""
        delivered = 0
        self.wakeup.clear()
        while self._queue and (limit is None or delivered < limit):
            event = self._queue.popleft()
            self.deliver(event)
            delivered += 1
        return delivered

    @contextlib.contextmanager
    def showing(self, kind: str, *objs: Any) -> Iterator[None]:
        """``objs`` in the ``kind`` store for the block, as if delivered but with no handler called, then taken
        out again (what was under their keys comes back): a dry run's lookups find the objects it asks about.
        """
        store = self.store(kind)
        keys = [object_key(obj) for obj in objs]
        previous = [store.get(key) for key in keys]
        for key, obj in zip(keys, objs):
            store._set(key, obj)
        try:
            yield
        finally:
            for key, before in zip(reversed(keys), reversed(previous)):
                if before is None:
                    store._delete(key)
                else:
                    store._set(key, before)

    def deliver(self, event: WatchEvent) -> None:
        """Hand ``event`` to the store and the handlers now, as :meth:`pump` does with a queued one (an update
        whose object has the stored resourceVersion is dropped).  ``kubesched.sim``'s rollback delivers the
        inverse of a transaction's writes this way."""
        informer = self._kinds.get(event.kind)
        if informer is None:
            return
        if event.type == REPLACE:
            self._replace(event.kind, informer, event.obj)
            return
        key = object_key(event.obj)
        old = informer.store.get(key)
        if event.type == DELETED:
            if old is None:
                return  # already gone (a delete seen again after a resumed watch)
            informer.store._delete(key)
            for on_delete in informer.on_delete:
                on_delete(old)
            return
        informer.store._set(key, event.obj)
        if old is None:
            for on_add in informer.on_add:
                on_add(event.obj)
        elif event.type in (ADDED, MODIFIED):
            if old.metadata.resource_version == event.obj.metadata.resource_version:
                return
            for on_update in informer.on_update:
                on_update(old, event.obj)

    def _replace(self, kind: str, informer: _KindInformer, items: list) -> None:
        """A relist: objects no longer listed are deleted, the others arrive
        as adds or updates (unchanged ones are dropped by resourceVersion)."""
        listed = {object_key(obj): obj for obj in items}
        for key in [key for key in informer.store.keys() if key not in listed]:
            self.deliver(WatchEvent(DELETED, kind, informer.store[key]))
        for obj in listed.values():
            self.deliver(WatchEvent(MODIFIED, kind, obj))


def changed_object(old: T | None, new: T | None) -> T:
    """The object a change handler's ``(old, new)`` pair is about: ``new``, or
    ``old`` for a delete.  Raises ValueError when both are None."""
    if new is not None:
        return new
    if old is None:
        raise ValueError("a change has an old or a new object")
    return old
