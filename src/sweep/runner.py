"""Run a sweep: every cell not already done, on an engine, results as they come."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs

from .cells import Cell, build_inputs, cells_of
from .engines import run_local, run_ray
from .results import ResultStore
from .spec import SweepSpec


@attrs.define
class SweepOutcome:
    """``computed``: cells run now; ``skipped``: cells whose results were
    already there; ``files``: the tables written."""

    computed: list[str] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    files: list[Path] = attrs.field(factory=list)


def run_sweep(spec: SweepSpec, out: Path, engine: str = "local", workers: int = 1, address: str | None = None,
              rerun: bool = False, export: str | None = None,
              progress: Callable[[int, int, Cell | None], None] | None = None) -> SweepOutcome:
    """Run the cells of ``spec`` that ``out`` has no current result for (all
    with ``rerun``) on ``engine`` ("local" with ``workers`` processes, or
    "ray" at ``address``), writing each row as it finishes, then the table.
    ``progress(done, total, cell)`` is called at the start (cell None) and
    after each cell.  Raises OSError for unreadable inputs, RuntimeError when
    Ray is missing, and what a cell raises."""
    inputs = build_inputs(spec)
    store = ResultStore(out, spec.name)
    cells = cells_of(spec)
    outcome = SweepOutcome()
    todo = []
    for cell in cells:
        if not rerun and store.done(cell.id, inputs.digest(cell)):
            outcome.skipped.append(cell.id)
        else:
            todo.append(cell)
    total = len(cells)
    if progress is not None:
        progress(len(outcome.skipped), total, None)

    def on_result(cell: Cell, row: dict[str, Any]) -> None:
        store.write(cell.id, row)
        outcome.computed.append(cell.id)
        if progress is not None:
            progress(len(outcome.skipped) + len(outcome.computed), total, cell)

    if engine == "ray":
        run_ray(todo, inputs, address, on_result)
    else:
        run_local(todo, inputs, workers, on_result)
    outcome.files = store.finish([cell.id for cell in cells], export)
    return outcome
