"""Where the records of scheduling attempts go: JSON Lines, streamed.

A :class:`DecisionLog` takes one JSON-ready dict per scheduling attempt (and
one per binding cycle) and writes it as a line to a file as it comes, so a
long simulation's record grows on disk, not in memory.  ``keep`` narrows it
to some pods (``kubesched explain`` of one pod keeps that pod's lines only,
in memory).  :func:`read_decisions` reads a file back.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from ..cluster.client import ApiError, Invalid, NotFound
from ..cluster.patch import MERGE_PATCH

log = logging.getLogger(__name__)

#: a line's JSON, compact; made once (``json.dumps`` with separators builds an encoder per call); a record is a
#: tree of fresh dicts and lists, never a cycle, so containers are not tracked for one
_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


class DecisionLog:
    """A sink for attempt records (dicts, see
    :mod:`kubesched.core.framework.attempt_record`).

    ``path``: the JSON Lines file written (truncated when opened); without
    it the kept records stay in :attr:`records`.  ``keep(pod_key)``: which
    pods' records to keep (default all).  Thread-safe; :meth:`close` flushes.
    """

    def __init__(self, path: str | Path | None = None, keep: Callable[[str], bool] | None = None):
        self.path = Path(path) if path is not None else None
        self.keep = keep
        self.records: list[dict[str, Any]] = []
        self.written = 0
        self._lock = threading.Lock()
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8") if self.path is not None else None

    def wants(self, pod_key: str) -> bool:
        """Whether an attempt of ``pod_key`` is worth recording at all."""
        return self.keep is None or self.keep(pod_key)

    def write(self, record: dict[str, Any]) -> None:
        """Write ``record`` (one attempt's JSON-ready dict) as a line of the file, or keep it in :attr:`records`
        without a file; callers check :meth:`wants` first."""
        with self._lock:
            self.written += 1
            if self._file is not None:
                self._file.write(_ENCODER.encode(record) + "\n")
            else:
                self.records.append(record)

    def close(self) -> None:
        """Close the file (flushing it); later records are kept in :attr:`records`."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class DecisionFileError(ValueError):
    """A decisions file that cannot be read (the message names the file and line)."""


def read_decisions(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a JSON Lines decisions file, in order: a pod's attempts
    (``pod``) and a PodGroup's cycles (``podGroup``), as ``--record`` writes
    them.  Raises :class:`DecisionFileError` naming the file and line of a bad
    line, or when the file cannot be opened."""
    try:
        handle = Path(path).open(encoding="utf-8")
    except OSError as err:
        raise DecisionFileError(f"{path}: {err.strerror}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DecisionFileError(f"{path}:{number}: not a JSON object: {err.msg}") from None
            if not isinstance(record, dict) or not (isinstance(record.get("pod"), str)
                                                    or isinstance(record.get("podGroup"), str)):
                raise DecisionFileError(f"{path}:{number}: not a scheduling decision (no \"pod\" or \"podGroup\")")
            yield record


#: The pod annotation where ``kubesched run --record-decisions`` publishes the
#: latest attempt (``kubesched explain POD --kubeconfig K`` reads it).
DECISION_ANNOTATION = "scheduling.kubesched.io/last-decision"
#: Bound of that annotation's JSON (the API server allows 256 KiB for all of
#: a pod's annotations; kube-scheduler-simulator bounds its result annotations too).
MAX_ANNOTATION_BYTES = 16 * 1024
#: Node names per Filter group and nodes of the score table kept in the annotation.
ANNOTATION_NODES = 5


def compact(record: dict[str, Any]) -> str:
    """The JSON of an attempt (its scheduling line with its ``binding`` line
    inside) within :data:`MAX_ANNOTATION_BYTES`: node lists cut to
    :data:`ANNOTATION_NODES`, then the score table, then the Filter groups
    dropped while it is still too long (``truncated`` says what went)."""
    out = dict(record)
    filtered = out.get("filter")
    if filtered:
        out["filter"] = {**filtered, "rejected": [{**g, "nodes": g["nodes"][:ANNOTATION_NODES]}
                                                 for g in filtered["rejected"]],
                         **({"shortfall": dict(list(filtered["shortfall"].items())[:ANNOTATION_NODES])}
                            if filtered.get("shortfall") else {})}
    score = out.get("score")
    if score:
        keep = ANNOTATION_NODES
        out["score"] = {**score, "nodes": score["nodes"][:keep], "total": score["total"][:keep],
                        "plugins": [{**p, **{k: p[k][:keep] for k in ("raw", "normalized", "weighted")}}
                                    for p in score["plugins"]]}
    text = json.dumps(out, separators=(",", ":"))
    for dropped in ("score", "filter", "preFilter"):
        if len(text.encode()) <= MAX_ANNOTATION_BYTES:
            break
        if out.pop(dropped, None) is None:
            continue
        out["truncated"] = [*out.get("truncated", []), dropped]
        text = json.dumps(out, separators=(",", ":"))
    if len(text.encode()) > MAX_ANNOTATION_BYTES:
        out = {k: out[k] for k in ("pod", "uid", "attempt", "time", "profile", "phase", "result", "node") if k in out}
        out["truncated"] = ["all but the outcome"]
        text = json.dumps(out, separators=(",", ":"))
    return text


class DecisionPublisher(DecisionLog):
    """A :class:`DecisionLog` that also publishes each pod's latest attempt in
    its :data:`DECISION_ANNOTATION` (``kubesched run --record-decisions``), by a
    JSON merge patch of that annotation on the pod's UID.

    The API writes run on one background thread so that the scheduling loop
    never waits on them: a pod's newer record replaces one not yet written
    (only the latest attempt matters, and it keeps its place in line), so the
    backlog is bounded by the number of pods; the pods are written in the
    order they first waited.  A pod gone meanwhile is skipped; other API errors are logged.
    :meth:`close` writes what is left and stops the thread.
    """

    def __init__(self, cluster: Any, path: str | Path | None = None):
        super().__init__(path)
        self.cluster = cluster
        self.published = 0
        self._latest: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._changed = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="decision-publisher", daemon=True)
        self._thread.start()

    def write(self, record: dict[str, Any]) -> None:
        """As :meth:`DecisionLog.write`, and queue the record as its pod's latest for the annotation (a record of
        the binding phase joins its attempt's; a PodGroup's record is only logged)."""
        super().write(record)
        key = record.get("pod")
        if key is None:
            return  # a PodGroup's record: kept in the file, no pod annotation holds it
        with self._changed:
            if record.get("phase") == "binding":
                attempt = self._latest.get(key)
                if attempt is None or attempt.get("attempt") != record.get("attempt"):
                    return
                attempt = {**attempt, "binding": record}
            else:
                attempt = record
            self._latest[key] = attempt
            self._pending[key] = attempt
            self._changed.notify()

    def forget(self, key: str) -> None:
        """Drop what is remembered of pod ``key`` (it was deleted)."""
        with self._changed:
            self._latest.pop(key, None)
            self._pending.pop(key, None)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._pending and not self._closing:
                    self._changed.wait()
                if not self._pending:
                    return
                key = next(iter(self._pending))  # the oldest first: a busy scheduler does not starve early pods
                attempt = self._pending.pop(key)
            self._publish(key, attempt)

    def _publish(self, key: str, attempt: dict[str, Any]) -> None:
        namespace, _, name = key.partition("/")
        # a JSON merge patch of the one annotation, on the pod's UID: no read, no conflict with other writers
        patch = {"metadata": {"annotations": {DECISION_ANNOTATION: compact(attempt)}}}
        try:
            self.cluster.patch("Pod", name, patch, namespace, patch_type=MERGE_PATCH, uid=attempt.get("uid") or None)
            self.published += 1
        except NotFound:
            self.forget(key)
        except Invalid as err:
            if "metadata.uid" not in err.message:
                log.warning("publishing a scheduling decision failed", extra={"pod": key, "err": str(err)})
            self.forget(key)  # the pod was replaced by another of its name, or the record is refused
        except ApiError as err:
            log.warning("publishing a scheduling decision failed", extra={"pod": key, "err": str(err)})

    def close(self) -> None:
        """Write the pending annotations, stop the writer thread and close the file."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()
        super().close()

