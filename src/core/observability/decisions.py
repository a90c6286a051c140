"""Where the records of scheduling attempts go: JSON Lines, streamed.

A :class:`DecisionLog` takes one JSON-ready dict per scheduling attempt (and
one per binding cycle) and writes it as a line to a file as it comes, so a
long simulation's record grows on disk, not in memory.  ``keep`` narrows it
to some pods (``kubesched explain`` of one pod keeps that pod's lines only,
in memory).  :func:`read_decisions` reads a file back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterator


class DecisionLog:
    """A sink for attempt records (dicts, see
    :mod:`kubesched.core.framework.decision`).

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
        with self._lock:
            self.written += 1
            if self._file is not None:
                self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            else:
                self.records.append(record)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class DecisionFileError(ValueError):
    """A decisions file that cannot be read (the message names the file and line)."""


def read_decisions(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of a JSON Lines decisions file, in order.  Raises
    :class:`DecisionFileError` naming the file and line of a bad line, or
    when the file cannot be opened."""
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
            if not isinstance(record, dict) or not isinstance(record.get("pod"), str):
                raise DecisionFileError(f"{path}:{number}: not a scheduling decision (no \"pod\")")
            yield record
