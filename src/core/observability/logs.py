"""Structured logs as Kubernetes components write them (klog text, or JSON with ``--log-format json``).

``logging`` records carry key/value pairs in ``extra={...}``; the formatters
append them (``key="value"`` in text, JSON members in JSON), as klog's
structured logging does.  The JSON shape is component-base's: ``ts`` (seconds
since the epoch), ``caller``, ``msg``, ``v`` (verbosity; absent for errors,
which carry ``err``) and the pairs.  Two small formatters, written here
because that shape is the point and takes fewer lines than configuring a
JSON-logging package into it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Callable

#: The attributes every LogRecord has; anything else came from ``extra``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def record_pairs(record: logging.LogRecord) -> dict[str, Any]:
    """The key/value pairs passed as ``extra`` to a log call."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


def verbosity(record: logging.LogRecord) -> int:
    """klog's V level of a record: 0 for INFO and WARNING, 2 for DEBUG, 4 below."""
    if record.levelno >= logging.INFO:
        return 0
    return 2 if record.levelno >= logging.DEBUG else 4


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ``{"ts", "caller", "msg", "v"|"err", ...pairs}``."""

    def format(self, record: logging.LogRecord) -> str:
        """One line of component-base's JSON log format for ``record``."""
        doc: dict[str, Any] = {"ts": round(record.created, 6), "caller": f"{record.filename}:{record.lineno}",
                               "msg": record.getMessage()}
        if record.levelno >= logging.ERROR:
            doc["err"] = self.formatException(record.exc_info) if record.exc_info else None
        else:
            doc["v"] = verbosity(record)
        for key, value in record_pairs(record).items():
            doc.setdefault(key, value)
        return json.dumps(doc, default=str)


class TextFormatter(logging.Formatter):
    """klog's header (``I1123 05:42:51.983046 12345 file.py:42] msg key="value"``)."""

    LETTERS = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E", logging.CRITICAL: "F"}

    def format(self, record: logging.LogRecord) -> str:
        """One klog text line for ``record``, then the traceback when it has one."""
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(record.created)) + f".{int(record.created % 1 * 1e6):06d}"
        letter = self.LETTERS.get(record.levelno, "I")
        pairs = "".join(f" {k}={json.dumps(v, default=str)}" for k, v in record_pairs(record).items())
        line = f"{letter}{stamp} {(record.thread or 0) % 100000:>7} {record.filename}:{record.lineno}] {record.getMessage()}{pairs}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(fmt: str = "text", v: int = 0, stream: Any = None) -> Callable[[], None]:
    """Send every log record to ``stream`` (stderr) as ``fmt`` ("text" or
    "json"); ``v`` is klog's verbosity: 0 logs INFO and above, 2 adds DEBUG.
    Returns what puts the root logger back as it was (for a command run in
    process, whose stream closes after it).  Raises ValueError for another format."""
    if fmt not in ("text", "json"):
        raise ValueError(f"--log-format: unknown format {fmt!r} (text, json)")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    saved = root.handlers[:], root.level

    def restore() -> None:
        root.handlers[:], root.level = saved

    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if v >= 2 else logging.INFO)
    return restore
