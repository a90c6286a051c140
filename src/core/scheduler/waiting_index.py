"""The unschedulable pool's pods by what they wait for (kubesched's; upstream asks every hint about every pod).

A plugin's :class:`~kubesched.core.framework.types.HintIndex` says which keys a waiting pod has (the ResourceClaims
it names, say) and which keys an event concerns; :class:`WaitingIndex` files the pool's pods under their keys so
that :meth:`WaitingIndex.asked` answers, for one event, the few pods a hint may answer Queue for - the queue then
asks the hint about those alone (``SchedulingQueue.move_all``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..framework.types import ClusterEvent, ClusterEventWithHint, HintIndex


class WaitingIndex:
    """One index per distinct :class:`HintIndex` of ``hints`` (profile name -> [(plugin, ClusterEventWithHint)]):
    per index, key -> UIDs of the pool's entities with that key, and the UIDs asked about every event (PodGroups,
    pods without keys or whose ``pod_keys`` failed).  Entities are queued pods or PodGroups, by UID (a PodGroup
    by its key).  False (``bool``) when no hint has an index."""

    def __init__(self, hints: dict[str, list[tuple[str, ClusterEventWithHint]]]):
        self._hints = hints
        self.indexes: list[HintIndex] = []
        self._position: dict[int, int] = {}
        for index in (r.index for entries in hints.values() for _, r in entries if r.index is not None):
            if id(index) not in self._position:
                self._position[id(index)] = len(self.indexes)
                self.indexes.append(index)
        self.keyed: list[dict[str, set[str]]] = [{} for _ in self.indexes]
        self.unkeyed: list[set[str]] = [set() for _ in self.indexes]
        #: UID -> its keys in each index (None: asked about every event), while it is filed
        self.filed: dict[str, tuple[tuple[str, ...] | None, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.indexes)

    def add(self, uid: str, pod: Any, group: bool) -> None:
        """File entity ``uid`` (its pod ``pod``; ``group``: a PodGroup, asked about every event) under its keys."""
        found: list[tuple[str, ...] | None] = []
        for position, index in enumerate(self.indexes):
            keys = None if group else _pod_keys(index, pod)
            if keys is None:
                self.unkeyed[position].add(uid)
            else:
                for key in keys:
                    self.keyed[position].setdefault(key, set()).add(uid)
            found.append(keys)
        self.filed[uid] = tuple(found)

    def remove(self, uid: str) -> None:
        """Take entity ``uid`` out (nothing when it is not filed)."""
        for position, keys in enumerate(self.filed.pop(uid, ())):
            if keys is None:
                self.unkeyed[position].discard(uid)
                continue
            keyed = self.keyed[position]
            for key in keys:
                uids = keyed.get(key)
                if uids is not None:
                    uids.discard(uid)
                    if not uids:
                        del keyed[key]

    def asked(self, profile: str, holders: frozenset[str], event: ClusterEvent, old: Any, new: Any
              ) -> set[str] | None:
        """The UIDs of the filed entities that the hints of ``holders`` (plugins of ``profile``) registered for
        ``event`` may answer Queue for; None: any (a hint without an index, or an event that may concern any
        pod, or whose ``event_keys`` failed)."""
        asked: set[str] = set()
        for plugin, registered in self._hints.get(profile, ()):
            if plugin not in holders or not registered.event.matches(event):
                continue
            index = registered.index
            if registered.hint is None or index is None:
                return None
            try:
                keys = index.event_keys(old, new)
            except Exception:  # noqa: BLE001 - as a failing hint: every pod may move
                return None
            if keys is None:
                return None
            position = self._position[id(index)]
            asked |= self.unkeyed[position]
            keyed = self.keyed[position]
            for key in keys:
                asked |= keyed.get(key, set())
        return asked


def _pod_keys(index: HintIndex, pod: Any) -> tuple[str, ...] | None:
    """``index``'s keys of ``pod`` (None: asked about every event, also when ``pod_keys`` fails)."""
    try:
        keys: Iterable[str] | None = index.pod_keys(pod)
    except Exception:  # noqa: BLE001 - as a failing hint: the pod is asked about every event
        return None
    return None if keys is None else tuple(keys)
