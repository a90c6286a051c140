"""EventRecorder: writes core/v1 Events (Scheduled, FailedScheduling, Preempted ...)."""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from typing import Any

import attrs

from kubesched.core.api import resource_of
from kubesched.core.api.core_v1 import Event, EventSource
from kubesched.core.api.meta import ObjectMeta, ObjectReference
from kubesched.core.clock import Clock
from kubesched.core.cluster.client import ApiError, ClusterClient

#: Identical events about one object within this many seconds are one Event with a count.
AGGREGATION_SECONDS = 600.0
#: How many recent events a recorder remembers for that (client-go's correlator: an LRU of 4096).
MAX_REMEMBERED_EVENTS = 4096

#: Event names are ``<object>.<hex>``; one sequence for every recorder, so that two
#: components (scheduler, controllers) never pick the same name for the same object.  The hex has
#: a fixed width (16 digits, as upstream's nanosecond clock has), so names sort in the order the
#: events were made whatever the sequence had reached (``c.f`` before ``c.10``).
_EVENT_SEQUENCE = itertools.count(1)


class EventRecorder:
    """Records events about objects through the cluster client.

    ``component`` is the reporting controller (``default-scheduler``).  A
    failure to write an event is counted in ``dropped`` and otherwise ignored,
    as upstream's broadcaster does.
    """

    def __init__(self, cluster: ClusterClient, clock: Clock, component: str):
        self.cluster = cluster
        self.clock = clock
        self.component = component
        self._source = EventSource(component=component)
        self.dropped = 0
        #: (uid, type, reason, message) -> the Event as last written, least recently used first
        self._recorded: OrderedDict[tuple, Event] = OrderedDict()
        self._lock = threading.Lock()  # the loop and binding workers record events

    def event(self, regarding: Any, type_: str, reason: str, action: str, message: str) -> None:
        """Record ``reason``/``message`` (``type_`` Normal or Warning) about ``regarding``.

        A repeat of the same event about the same object within
        ``AGGREGATION_SECONDS`` bumps ``count`` and ``lastTimestamp`` of the
        Event this recorder wrote, from its own copy (no read), as client-go's
        event correlator does; a client of a real API server sends that as a
        PATCH of the event's ``series``."""
        meta = regarding.metadata
        now = self.clock.now()
        key = (meta.uid, type_, reason, message)
        with self._lock:
            previous = self._recorded.get(key)
            if previous is not None:
                self._recorded.move_to_end(key)
        if previous is not None and self._bump(key, previous, now):
            return
        resource = resource_of(regarding)
        event = Event(
            metadata=ObjectMeta(name=f"{meta.name}.{next(_EVENT_SEQUENCE):016x}", namespace=meta.namespace or "default"),
            involved_object=ObjectReference(
                api_version=resource.api_version,
                kind=resource.kind,
                namespace=meta.namespace,
                name=meta.name,
                uid=meta.uid,
            ),
            reason=reason,
            message=message,
            type=type_,
            first_timestamp=now,
            last_timestamp=now,
            source=self._source,
            reporting_component=self.component,
            action=action,
        )
        try:
            event = self.cluster.create(event)
        except ApiError:
            self.dropped += 1
            return
        with self._lock:
            self._recorded[key] = event
            self._recorded.move_to_end(key)
            if len(self._recorded) > MAX_REMEMBERED_EVENTS:
                self._recorded.popitem(last=False)

    def _bump(self, key: tuple, event: Event, now: float) -> bool:
        if now - (event.first_timestamp or now) > AGGREGATION_SECONDS:
            return False
        try:
            written = self.cluster.update(attrs.evolve(event, metadata=attrs.evolve(event.metadata, resource_version=""),
                                                       count=event.count + 1, last_timestamp=now))
        except ApiError:
            return False
        with self._lock:
            if key in self._recorded:
                self._recorded[key] = written
        return True
