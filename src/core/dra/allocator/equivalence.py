"""Nodes of one template searched once: the allocator's memo of searches by what decides them.

On a node whose candidate devices are all plain (:attr:`Candidate.plain_content`:
no taints, counters, shared devices or own node selection) and whose pools are
usable, the search for claims whose requests are plain counts of devices depends
only on the claims and, per candidate in order, its content (driver, attributes,
capacity) and whether it is in use.  Two such nodes with the same key get the
devices at the same positions, so the result of one search is replayed on every
equivalent node (``kubesched perf``'s 500 equal nodes search once per pattern of
used devices).  Upstream searches every node; the results are the same.
"""

from __future__ import annotations

from typing import Sequence

from kubesched.core.api.resource_v1 import ResourceClaim
from kubesched.core.dra.allocated_devices import AllocatedState
from kubesched.core.dra.allocator.requests import ClaimSpec, NodeView, RequestSpec

#: searches an allocator lineage remembers before it starts afresh
MAX_REMEMBERED_SEARCHES = 10_000


def equivalence_key(view: NodeView, specs: Sequence[ClaimSpec], allocated: AllocatedState,
                    taint_rules: Sequence) -> tuple | None:
    """What decides the search for ``specs`` on a node with ``view`` (see the module
    docstring); None - search every time - when something else could: taint rules,
    a device that is not plain, a request that is not a plain count of devices,
    capacity consumed from a candidate."""
    if taint_rules:
        return None
    signature = view.plain_signature
    if signature is None or not all(spec.plain for spec in specs):
        return None
    ids = view.ids
    consumed = allocated.consumed_capacity
    if consumed and any(device in consumed for device in ids):
        return None
    return (tuple(id(spec.claim) for spec in specs), signature, tuple(map(allocated.devices.__contains__, ids)))


class SearchMemo:
    """Searches by :func:`equivalence_key`: the claims they were made for (an
    entry counts only for those very objects) and their positions."""

    def __init__(self) -> None:
        self._searches: dict[tuple, tuple[tuple[ResourceClaim, ...], list[list[tuple[RequestSpec, int]]] | None]] = {}

    def known(self, key: tuple | None, claims: Sequence[ResourceClaim]):
        """``(positions,)`` (positions None: no fit) when a search with ``key`` was made
        for ``claims``; None when unknown."""
        if key is None:
            return None
        entry = self._searches.get(key)
        if entry is None or len(entry[0]) != len(claims) or not all(a is b for a, b in zip(entry[0], claims)):
            return None
        return (entry[1],)

    def remember(self, key: tuple, claims: Sequence[ResourceClaim],
                 positions: list[list[tuple[RequestSpec, int]]] | None) -> None:
        """Record a search (at most :data:`MAX_REMEMBERED_SEARCHES`, then afresh)."""
        if len(self._searches) >= MAX_REMEMBERED_SEARCHES:
            self._searches.clear()
        self._searches[key] = (tuple(claims), positions)
