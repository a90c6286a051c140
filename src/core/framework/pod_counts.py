"""Pods counted per node and per topology domain, kept as pods come and go.

PodTopologySpread and InterPodAffinity ask, for every incoming pod, how many
existing pods a selector (or an affinity term) matches in each topology
domain.  A :class:`PodCount` answers that for one such question: a count per
NodeTable row (``per_node``) and, per topology key asked for, a count per
domain id of that key (:meth:`PodCount.per_domain`).  :class:`PodCounts`
(one per NodeTable) holds them and, when the table learns which rows changed,
finds the pods added to and removed from each row and adds their weights to
the counts that can match them, so a count costs nothing per cycle once made
and a pod's PreFilter/PreScore reads it in O(domains), however many selectors
are live.

Which counts a pod can touch is found through *tags*: a count is registered
under one tag that every pod it counts carries (a label ``(key, value)`` or
``(key,)`` its selector requires, or an affinity term's key a pod must have,
see :func:`selector_tag`, :func:`term_tag`); a pod's own tags
(:func:`pod_tags`) pick the counts to weigh it for.  A count without a tag
weighs every pod.

Bounds: the counts of a table take at most :data:`MAX_POD_COUNT_BYTES`, the
least recently used dropped first when a count is made.  A count costs
``4 bytes x nodes`` for ``per_node``, ``4 bytes x domains`` per topology key
asked for (hostname: one domain per node) and :data:`COUNT_OVERHEAD_BYTES`
for the Python objects behind it, so the bound keeps more counts on smaller
clusters (at 5,000 nodes ~3,300 counts read per zone and hostname, ~6,500
read per zone alone).  A miss (a count not kept) weighs only the existing
pods carrying its tag (the pods are indexed by tag as they come and go: a
dict entry per pod and tag), every pod for an untagged count, plus one
``np.bincount`` per topology key.
"""

from __future__ import annotations

from itertools import islice
from typing import Callable, Hashable, Iterable, Iterator, Mapping, Protocol

import numpy as np

from ..api.meta import LabelSelector
from .affinity import AffinityTerm, has_pod_affinity
from .nodeinfo import NodeInfo, PodInfo


class Table(Protocol):
    """What the counts read of their NodeTable: its rows and their topology domains."""

    infos: list[NodeInfo]

    def domain_ids(self, key: str) -> np.ndarray: ...

    def domain_count(self, key: str) -> int: ...

#: How much memory the counts of one table may take, bytes (least recently used dropped first when a count is made):
#: at 5,000 nodes a count read per zone costs about 21 KB, one read per hostname too about 41 KB.
MAX_POD_COUNT_BYTES = 128 * 1024 * 1024
#: What a count costs beside its arrays, bytes: the PodCount, its weight's closure, its key and dict entries.
COUNT_OVERHEAD_BYTES = 1024

#: the tag of a pod carrying an affinity term with a given key (see :func:`term_tag`)
TERM = "affinity-term"


def selector_tag(selector: LabelSelector | None) -> Hashable | None:
    """A tag every pod ``selector`` matches carries: ``(key, value)`` of a matchLabels entry or of an ``In``
    expression with one value, ``(key,)`` of another ``In`` or an ``Exists`` expression; None when the selector
    requires no label (it is then weighed against every pod)."""
    if selector is None:
        return None
    for key, value in selector.match_labels.items():
        return (key, value)
    for requirement in selector.match_expressions:
        if requirement.operator == "In" and len(requirement.values) == 1:
            return (requirement.key, requirement.values[0])
    for requirement in selector.match_expressions:
        if requirement.operator in ("In", "Exists"):
            return (requirement.key,)
    return None


def term_tag(term: AffinityTerm) -> Hashable:
    """The tag of every pod that carries ``term`` (required or preferred, affinity or anti-affinity)."""
    return (TERM, term.key)


def label_tags(labels: Mapping[str, str]) -> set[Hashable]:
    """The tags a pod with ``labels`` carries for selectors: ``(key, value)`` and ``(key,)`` of each label."""
    tags: set[Hashable] = set(labels.items())
    tags.update((key,) for key in labels)
    return tags


def pod_tags(info: PodInfo) -> set[Hashable]:
    """The tags of a pod: :func:`label_tags` of its labels, ``term_tag`` of each affinity term."""
    tags = label_tags(info.pod.metadata.labels)
    if has_pod_affinity(info.pod):
        terms = info.affinity_terms
        tags.update(term_tag(term) for term in terms.required_affinity + terms.required_anti_affinity)
        tags.update(term_tag(weighted.term) for weighted in terms.preferred_affinity + terms.preferred_anti_affinity)
    return tags


class TermIndex:
    """Distinct affinity terms indexed by the tag of their selector (:func:`selector_tag`), so the terms that may
    select a pod are found from its labels in O(its labels + those terms) instead of matching every term.

    It indexes a dict term key -> term that only grows, entries added at its end (a NodeTable ``merged`` dict, say
    the existing pods' required anti-affinity terms): each call catches up with the entries added since the last
    one, and a different dict (the table rebuilt it) is indexed afresh."""

    __slots__ = ("_source", "_indexed", "_by_tag")

    def __init__(self) -> None:
        self._source: Mapping[str, AffinityTerm] | None = None
        self._indexed = 0
        self._by_tag: dict[Hashable | None, list[tuple[str, AffinityTerm]]] = {}

    def selecting(self, terms: Mapping[str, AffinityTerm],
                  labels: Mapping[str, str]) -> Iterator[tuple[str, AffinityTerm]]:
        """The (key, term) entries of ``terms`` whose selector may match a pod with ``labels``: the terms whose tag
        the labels carry and the untagged ones (each at most once; still to be matched: the tag is necessary, not
        sufficient)."""
        if terms is not self._source:
            self._source, self._indexed, self._by_tag = terms, 0, {}
        if len(terms) > self._indexed:
            for key, term in islice(terms.items(), self._indexed, None):
                self._by_tag.setdefault(selector_tag(term.selector), []).append((key, term))
            self._indexed = len(terms)
        by_tag = self._by_tag
        for tag in (None, *label_tags(labels)):
            entries = by_tag.get(tag)
            if entries:
                yield from entries


class PodCount:
    """One count: ``weight(pod_info)`` summed over the pods of each node (``per_node``, int32 per NodeTable row), and
    per domain of a topology key (:meth:`per_domain`); kept current by :class:`PodCounts`."""

    __slots__ = ("weight", "tag", "per_node", "nbytes", "_table", "_per_domain", "_owner", "_nodes")

    def __init__(self, table: Table, rows: int, pods: Iterable[tuple[int, PodInfo]], weight: Callable[[PodInfo], int],
                 tag: Hashable | None, owner: "PodCounts"):
        """``pods``: (row, pod) of every pod that may weigh (those carrying ``tag``, or all of them); ``owner`` is
        told of the memory the count takes."""
        self.weight = weight
        self.tag = tag
        self._table = table
        self._owner = owner
        #: the owner's ``nodes_version`` the per-domain counts were made at (older ones are dropped when read)
        self._nodes = owner.nodes_version
        weighed, amounts = [], []
        for row, info in pods:
            amount = weight(info)
            if amount:
                weighed.append(row)
                amounts.append(amount)
        self.per_node = np.bincount(np.array(weighed, dtype=np.intp), weights=np.array(amounts, dtype=np.float64),
                                    minlength=rows).astype(np.int32)
        #: topology key -> (the table's domain ids of that key, counts per domain id)
        self._per_domain: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        #: bytes the count takes (see :data:`COUNT_OVERHEAD_BYTES`)
        self.nbytes = COUNT_OVERHEAD_BYTES + self.per_node.nbytes

    def per_domain(self, topology_key: str) -> np.ndarray:
        """The count per domain id of ``topology_key`` (int32, indexed by the table's ``domain_ids``; nodes without
        the label not counted).  Read-only: copy it to change it."""
        if self._nodes != self._owner.nodes_version:
            self._forget_domains()
        entry = self._per_domain.get(topology_key)
        if entry is None:
            ids = self._table.domain_ids(topology_key)
            keyed = ids >= 0
            sums = np.bincount(ids[keyed], weights=self.per_node[keyed],
                               minlength=self._table.domain_count(topology_key)).astype(np.int32)
            entry = self._per_domain[topology_key] = (ids, sums)
            self.nbytes += sums.nbytes
            self._owner.nbytes += sums.nbytes
        return entry[1]

    def add(self, row: int, amount: int) -> None:
        """``amount`` more (or fewer) on ``row``."""
        self.per_node[row] += amount
        if not self._per_domain:
            return
        if self._nodes != self._owner.nodes_version:
            self._forget_domains()
            return
        for ids, sums in self._per_domain.values():
            domain = ids[row]
            if domain >= 0:
                sums[domain] += amount

    def _forget_domains(self) -> None:
        """Drop the per-domain counts (nodes changed since they were made: their labels, hence domains, may have)."""
        self._nodes = self._owner.nodes_version
        freed = sum(sums.nbytes for _, sums in self._per_domain.values())
        self.nbytes -= freed
        self._owner.nbytes -= freed
        self._per_domain.clear()


class PodCounts:
    """The counts of one NodeTable, by key, and the pods each row held when last seen (to find what changed)."""

    def __init__(self, table: Table):
        self._table = table
        #: bytes the counts take (see :data:`MAX_POD_COUNT_BYTES`)
        self.nbytes = 0
        #: grows whenever Node objects change: the counts' per-domain counts made before are stale
        self.nodes_version = 0
        self._counts: dict[str, PodCount] = {}
        self._by_tag: dict[Hashable, dict[str, PodCount]] = {}
        #: the pods of each row when last seen (None until a count is made: nothing to keep current before)
        self._seen: list[list[PodInfo]] | None = None
        #: tag -> the pods last seen carrying it, by (row, id of the PodInfo), so a new count weighs only those
        self._tagged: dict[Hashable, dict[tuple[int, int], PodInfo]] = {}

    def _start(self) -> list[list[PodInfo]]:
        """Begin following the rows' pods (at the first count made)."""
        seen = self._seen = [list(info.pods) for info in self._table.infos]
        for row, held in enumerate(seen):
            for info in held:
                self._index(row, info, pod_tags(info), True)
        return seen

    def _index(self, row: int, info: PodInfo, tags: Iterable[Hashable], added: bool) -> None:
        tagged = self._tagged
        where = (row, id(info))
        for tag in tags:
            if added:
                tagged.setdefault(tag, {})[where] = info
            else:
                pods = tagged.get(tag)
                if pods is not None:
                    pods.pop(where, None)
                    if not pods:
                        del tagged[tag]

    def get(self, key: str, weight: Callable[[PodInfo], int], tag: Hashable | None) -> PodCount:
        """The count ``key`` (made with ``weight`` and ``tag`` when not kept: it weighs the pods carrying ``tag``,
        every pod without one); the most recently used."""
        count = self._counts.pop(key, None)
        if count is None:
            seen = self._seen if self._seen is not None else self._start()
            if tag is None:
                pods: Iterable[tuple[int, PodInfo]] = ((row, info) for row, held in enumerate(seen) for info in held)
            else:
                pods = ((row, info) for (row, _), info in self._tagged.get(tag, {}).items())
            count = PodCount(self._table, len(seen), pods, weight, tag, self)  # as last seen: refresh adds changes
            self._by_tag.setdefault(tag, {})[key] = count
            self.nbytes += count.nbytes
            self._counts[key] = count
            while self.nbytes > MAX_POD_COUNT_BYTES and len(self._counts) > 1:
                self._drop(next(iter(self._counts)))
            return count
        self._counts[key] = count
        return count

    def _drop(self, key: str) -> None:
        count = self._counts.pop(key)
        self.nbytes -= count.nbytes
        tagged = self._by_tag[count.tag]
        del tagged[key]
        if not tagged:
            del self._by_tag[count.tag]

    def refresh(self, rows: Iterable[int], nodes_changed: bool) -> None:
        """Rows whose pods may have changed: weigh the pods added and removed since each row was last seen
        into the counts; ``nodes_changed``: their Node objects changed too (domains are recounted when asked)."""
        seen = self._seen
        if seen is None:
            return
        if nodes_changed:
            self.nodes_version += 1
        infos = self._table.infos
        for row in rows:
            before, now = seen[row], infos[row].pods
            if len(now) >= len(before) and now[:len(before)] == before:
                added, removed = now[len(before):], []
            else:
                kept = {id(info) for info in before}.intersection(id(info) for info in now)
                added = [info for info in now if id(info) not in kept]
                removed = [info for info in before if id(info) not in kept]
            if not (added or removed):
                continue
            seen[row] = list(now)
            for info in added:
                self._weigh(row, info, 1)
            for info in removed:
                self._weigh(row, info, -1)

    def _weigh(self, row: int, info: PodInfo, sign: int) -> None:
        tags = pod_tags(info)
        self._index(row, info, tags, sign > 0)
        by_tag = self._by_tag
        for tag in (None, *tags):  # the untagged counts, then the pod's tags'
            counts = by_tag.get(tag)
            if counts:
                for count in counts.values():
                    amount = count.weight(info)
                    if amount:
                        count.add(row, sign * amount)
