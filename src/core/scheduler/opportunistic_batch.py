"""Opportunistic batching (KEP-5598, upstream ``framework/runtime/batch.go``): a pod with the same signature
as the pod scheduled just before it takes the next node of that pod's sorted feasible nodes, without
running Filter and Score over the cluster again.

The reuse is sound in the 1-pod-per-node case only: the previous pod's scores of the other nodes still hold
(nothing but the chosen node changed), and the chosen node itself must now reject the pod (if it could still
host it, its new score is unknown).  :class:`OpportunisticBatch` (one per profile) keeps the sorted rest of
the last full cycle; :meth:`OpportunisticBatch.node_hint` hands out the next node when every condition
holds, else flushes the state with upstream's reason (``scheduler_batch_cache_flushed_total``); the
scheduling cycle then checks the hinted node with the Filter plugins (as a nominated node) and falls back
to the full cycle when it fails.  :meth:`OpportunisticBatch.store_results` records each cycle's outcome.

Upstream's conditions: a previous cycle to reuse, the very next cycle of this profile (``pod_skipped``:
another profile's pod, a PodGroup or a failed pod came between), younger than 500 ms on the scheduler's
clock (``expired``), the last chosen node still there (``node_missing``) and full for this pod
(``node_not_full``), both pods signable (``pod_not_batchable``) with equal signatures (``pod_incompatible``)
- the signatures last, as signing costs more than the rest (upstream signs every pod, compares the
signatures before the age, and counts ``pod_not_batchable`` when it stores).  A pod is judged unsignable when
it stores only when that is cheap: when a plugin that has refused a pod before (:meth:`PodSigner.refuses`)
refuses it - then it leaves no batch (``pod_not_batchable``) and the next pod's hint costs nothing; a pod
that cannot fill its node is never signed at all.  kubesched adds one, so that a batched pod lands where the
full cycle would put it: no node came or went and none of the nodes left in the list changed since
(``node_changed``).  The next node among equally scored ones is drawn as the full cycle's host selection
draws (same random source, nodes in the same order), so on a cluster small enough to be filtered whole the
placements are the unbatched ones.  A pod with a nominated node tries that node first and asks for a hint
only when it fails (upstream's nnn_hint_fallback; upstream's older ``pod_nominated`` flush is not kept).
Not done: upstream's newest rescoring of a last node that still fits (it flushes here, as 1.35's does).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from time import perf_counter
from typing import Any

import numpy as np

from kubesched.core.observability import metrics

from ..framework.cycle_state import CycleState
from ..framework.runtime import Framework
from ..framework.signature import PodSigner, Signature
from ..framework.snapshot import Snapshot

log = logging.getLogger(__name__)

#: upstream's maxBatchAge: a batch older than this (seconds on the scheduler's clock) is not reused
MAX_BATCH_AGE = 0.5

# scheduler_batch_attempts_total's results
NO_HINT, HINT_USED, HINT_NOT_USED = "no_hint", "hint_used", "hint_not_used"
# scheduler_batch_cache_flushed_total's reasons (upstream's, and kubesched's node_changed)
POD_SKIPPED, POD_INCOMPATIBLE = "pod_skipped", "pod_incompatible"
EXPIRED, NODE_MISSING, NODE_NOT_FULL, NODE_CHANGED = "expired", "node_missing", "node_not_full", "node_changed"
POD_NOT_BATCHABLE, EMPTY_LIST = "pod_not_batchable", "empty_list"

#: a host selection: (total scores, snapshot rows) -> the index of the chosen one (SchedulingCycle.select_host)
SelectHost = Callable[[np.ndarray, np.ndarray], int]


class PodToSign:
    """A pod and its profile's :class:`PodSigner`; :meth:`signature` signs it on first use only (most batches
    end on a cheaper condition: a pod that does not fill its node is never signed)."""

    __slots__ = ("pod", "signer", "_signature", "_signed")

    def __init__(self, pod: Any, signer: PodSigner):
        self.pod = pod
        self.signer = signer
        self._signature: Signature | None = None
        self._signed = False

    def signature(self) -> Signature | None:
        """The pod's signature (None: unsignable)."""
        if not self._signed:
            self._signature, self._signed = self.signer.sign(self.pod), True
        return self._signature

    def known_unsignable(self) -> bool:
        """Is the pod known to be unsignable without signing it in full?  (Signed already and unsignable, or
        refused by a plugin that refused a pod before: :meth:`PodSigner.refuses`; that verdict is kept.)"""
        if self._signed:
            return self._signature is None
        if self.signer.refuses(self.pod):
            self._signature, self._signed = None, True
            return True
        return False


class BatchState:
    """The reusable rest of one full cycle: the pod that ran it (``source``), its feasible snapshot ``rows``
    (in the order the cycle scored them) with their ``totals`` (int64) less the row at ``chosen`` (taken out
    on first use: most batches are never used), the snapshot ``table`` they index, ``since`` - a node
    generation number drawn before that cycle's snapshot (a row whose generation is higher changed since) -
    and ``created`` (seconds on the scheduler's clock)."""

    __slots__ = ("source", "rows", "totals", "table", "since", "created", "_chosen", "_of_rows")

    def __init__(self, source: PodToSign, rows: np.ndarray, totals: np.ndarray, chosen: int | None,
                 table: Any, since: int, created: float):
        self.source = source
        self.rows, self.totals, self._chosen = rows, totals, chosen
        self.table = table
        self.since = since
        self.created = created
        self._of_rows: Callable[[list[int]], tuple[int, ...]] | None = None

    def left(self) -> int:
        """How many nodes the batch can still hand out."""
        return len(self.rows) - (self._chosen is not None)

    def _drop(self, index: int) -> None:
        keep = np.arange(len(self.rows)) != index
        self.rows, self.totals = self.rows[keep], self.totals[keep]
        self._of_rows = None

    def _materialize(self) -> None:
        if self._chosen is not None:
            self._drop(self._chosen)
            self._chosen = None

    def changed(self, snapshot: Snapshot) -> bool:
        """Did a node come or go, or one of :attr:`rows` change, since the batch's cycle took its snapshot?
        (One C call over the rows: this runs for every batched pod.)"""
        if self.table is not snapshot.table:
            return True
        self._materialize()
        if self._of_rows is None:
            self._of_rows = _getter(self.rows)
        return max(self._of_rows(snapshot.generations), default=0) > self.since

    def take(self, select_host: SelectHost) -> int:
        """Remove the row ``select_host`` picks among the batch's (by their totals); returns its snapshot row."""
        self._materialize()
        index = select_host(self.totals, self.rows)
        row = int(self.rows[index])
        self._drop(index)
        return row


def _getter(rows: np.ndarray) -> Callable[[list[int]], tuple[int, ...]]:
    """A function picking ``rows``' items of a list, as a tuple (one C call)."""
    picks = rows.tolist()
    if len(picks) == 1:
        only = picks[0]
        return lambda items: (items[only],)
    return operator.itemgetter(*picks) if picks else lambda items: ()


class OpportunisticBatch:
    """Upstream ``OpportunisticBatch`` of one profile (``fwk``; ``signer`` its :class:`PodSigner`).

    :attr:`batched_pods` counts the pods placed on a hinted node.  The scheduling cycle calls, for each pod
    of a single-pod cycle: :meth:`node_hint` after PreFilter, then :meth:`store_results` once a node is
    chosen (a pod that fails stores nothing, so the next pod finds the cycle count broken)."""

    def __init__(self, fwk: Framework, signer: PodSigner):
        self.fwk = fwk
        self.signer = signer
        self.state: BatchState | None = None
        self.last_cycle = -1
        self.last_chosen = ""
        self.batched_pods = 0
        profile = fwk.profile_name
        self._attempts = {result: metrics.BATCH_ATTEMPTS.labels(profile, result)
                          for result in (NO_HINT, HINT_USED, HINT_NOT_USED)}
        self._hint_seconds = {hinted: metrics.GET_NODE_HINT_DURATION.labels(hinted, profile)
                              for hinted in ("hint", "no_hint")}
        self._store_seconds = metrics.STORE_SCHEDULE_RESULTS_DURATION.labels(profile)
        self._flushed = {reason: metrics.BATCH_CACHE_FLUSHED.labels(profile, reason)
                         for reason in (POD_SKIPPED, POD_INCOMPATIBLE, EXPIRED, NODE_MISSING, NODE_NOT_FULL,
                                        NODE_CHANGED, POD_NOT_BATCHABLE, EMPTY_LIST)}

    def _flush(self, reason: str) -> None:
        self._flushed[reason].inc()
        log.debug("OpportunisticBatch found unusable state: profile %s, reason %s", self.fwk.profile_name, reason)
        self.state = None

    def node_hint(self, state: CycleState, pod: PodToSign, cycle: int, now: float, snapshot: Snapshot,
                  select_host: SelectHost) -> int | None:
        """Upstream ``GetNodeHint``: the snapshot row of the node ``pod`` (in cycle number ``cycle``) should
        try first, taken out of the batch, or None (the state flushed when it
        cannot serve this pod).  Runs the Filter plugins on the last chosen node (``state``: the pod's
        CycleState after PreFilter); ``select_host`` draws the next node as the full cycle would.  Observed
        in scheduler_get_node_hint_duration_seconds."""
        started = perf_counter()
        hint = self._hint(state, pod, cycle, now, snapshot, select_host)
        self._hint_seconds["no_hint" if hint is None else "hint"].observe(perf_counter() - started)
        return hint

    def _hint(self, state: CycleState, pod: PodToSign, cycle: int, now: float, snapshot: Snapshot,
              select_host: SelectHost) -> int | None:
        batch = self.state
        if batch is None or not batch.left():  # nothing left to hand out (upstream's stateEmpty)
            self._attempts[NO_HINT].inc()
            return None
        reason = self._unusable(batch, state, pod, cycle, now, snapshot)
        if reason is not None:
            self._flush(reason)
            self._attempts[NO_HINT].inc()
            return None
        return batch.take(select_host)

    def _unusable(self, batch: BatchState, state: CycleState, pod: PodToSign, cycle: int, now: float,
                  snapshot: Snapshot) -> str | None:
        """Why ``batch`` cannot serve ``pod`` (a flush reason), or None when it can."""
        if cycle != self.last_cycle + 1:
            return POD_SKIPPED
        if now > batch.created + MAX_BATCH_AGE:
            return EXPIRED
        last = snapshot.get(self.last_chosen)
        if last is None:
            return NODE_MISSING
        status = self.fwk.run_filter(state, pod.pod, last)
        if status is None or not status.is_rejected():
            return NODE_NOT_FULL
        if batch.changed(snapshot):
            return NODE_CHANGED
        stored = batch.source.signature()
        if stored is None:
            return POD_NOT_BATCHABLE
        if pod.signature() != stored:
            return POD_INCOMPATIBLE
        return None

    def store_results(self, pod: PodToSign, hinted: str | None, chosen: str, cycle: int, now: float,
                      scored: tuple[np.ndarray, np.ndarray, int] | None, snapshot: Snapshot, since: int) -> None:
        """Upstream ``StoreScheduleResults``: ``chosen`` won cycle ``cycle`` for ``pod`` (``hinted``: the node
        hinted to it, or None).  A hint taken keeps the batch; otherwise the batch becomes the other nodes of
        ``scored`` - the feasible rows, their total scores and the index of the chosen one - when any are
        left, else it is flushed.  ``since``: a node generation drawn before the cycle's snapshot was taken.
        Observed in scheduler_store_schedule_results_duration_seconds."""
        started = perf_counter()
        self._store(pod, hinted, chosen, cycle, now, scored, snapshot, since)
        self._store_seconds.observe(perf_counter() - started)

    def _store(self, pod: PodToSign, hinted: str | None, chosen: str, cycle: int, now: float,
               scored: tuple[np.ndarray, np.ndarray, int] | None, snapshot: Snapshot, since: int) -> None:
        self.last_cycle, self.last_chosen = cycle, chosen
        if hinted is not None and hinted == chosen:
            self._attempts[HINT_USED].inc()
            self.batched_pods += 1
            return
        if hinted is not None:
            self._attempts[HINT_NOT_USED].inc()
        if scored is None or len(scored[0]) <= 1:
            self._flush(EMPTY_LIST)
        elif pod.known_unsignable():  # upstream signs here; kubesched only when it is cheap (see the module)
            self._flush(POD_NOT_BATCHABLE)
        else:
            self.state = BatchState(pod, scored[0], scored[1], scored[2], snapshot.table, since, now)
