"""Progress of a long command on stderr: a rich progress bar on a terminal (done of total, rate,
elapsed, time left), and elsewhere (a log file, CI) one plain line every few seconds, so that a run of
minutes is never silent.  The drivers report through plain callbacks; only this module draws."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

#: Seconds between two plain lines when stderr is not a terminal.
LINE_PERIOD = 5.0


class Reporter:
    """``with Reporter("simulate", unit="pods") as progress: run(progress=progress.update)``.

    :meth:`update` takes ``done`` of ``total`` (None: unknown) and an optional
    new description; :meth:`status` a one-line status instead of counts.  On a
    terminal (``terminal=None``: stderr is one) a bar is drawn and refreshed by
    rich; elsewhere a line ``LABEL: DONE/TOTAL UNIT (RATE/s, Ns)`` is printed at
    most every ``period`` seconds, and once more at the end of a run that
    printed any (a short run prints nothing)."""

    def __init__(self, label: str, unit: str = "", terminal: bool | None = None, period: float = LINE_PERIOD):
        self.label, self.unit, self.period = label, unit, period
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._started = self._last_line = time.monotonic()
        self._line = ""
        self._printed = False
        self._state: tuple[str, int, int | None] = (label, 0, None)

    def __enter__(self) -> Reporter:
        if self.terminal:  # rich's progress bar imported for a terminal only
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TaskProgressColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None, rate="")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, error, trace)
        elif self._printed and kind is None:
            self._print(force=True)  # where the run ended, after the lines of a long run

    def update(self, done: int, total: int | None = None, description: str | None = None) -> None:
        """``done`` of ``total`` units so far (``description`` replaces the label)."""
        self._state = (description or self._state[0], done, total)
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = f"{done / elapsed:,.0f} {self.unit}/s" if self.unit else f"{done / elapsed:,.0f}/s"
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=total, description=self._state[0], rate=rate)
            return
        counted = f"{done:,}/{total:,}" if total else f"{done:,}"
        self._line = f"{self._state[0]}: {counted} {self.unit} ({rate}, {elapsed:.0f}s)".replace("  ", " ")
        self._print()

    def status(self, text: str) -> None:
        """A status line (what is being done) instead of counts."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self.label}: {text}")
            return
        self._line = f"{self.label}: {text} ({time.monotonic() - self._started:.0f}s)"
        self._print()

    def _print(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_line >= self.period:
            self._last_line, self._printed = now, True
            typer.echo(self._line, err=True)
