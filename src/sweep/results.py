"""A sweep's results: one Parquet file per finished cell, one table for all.

Each finished cell's row is written at once to ``DIR/cells/<cell id>.parquet``
(written aside, then renamed: a crash or Ctrl-C never leaves half a file),
so a re-run computes only the cells whose file is missing or whose inputs
changed (the row's ``digest``).  A directory that holds only the table
(copied from another machine, or kept in version control without the cells)
resumes too: its rows become the cells they came from.  :meth:`ResultStore.table` reads them all as
one pyarrow table and :meth:`ResultStore.finish` writes it to
``DIR/<name>.parquet`` (and CSV or JSON Lines on request; list columns
become JSON text in CSV).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

EXPORTS = ("csv", "json")


class ResultStore:
    """The results directory ``directory`` of sweep ``name``."""

    def __init__(self, directory: str | Path, name: str):
        self.directory = Path(directory)
        self.name = name
        self.cells = self.directory / "cells"
        self.cells.mkdir(parents=True, exist_ok=True)
        self._unpack_table()

    def _unpack_table(self) -> None:
        """Write each row of ``DIR/<name>.parquet`` whose cell file is missing
        back as that cell.  Raises ValueError naming the table when it cannot
        be read (it is left as it is: finishing the sweep would overwrite it)."""
        table_path = self.directory / f"{self.name}.parquet"
        if not table_path.is_file():
            return
        try:
            rows = pq.read_table(table_path).to_pylist()
        except (pa.ArrowException, OSError) as err:
            raise ValueError(f"{table_path}: not a sweep results table ({err}); move it aside to start "
                             f"this sweep's results afresh") from None
        for row in rows:
            cell_id = row.get("cell")
            if isinstance(cell_id, str) and cell_id and not self.path(cell_id).is_file():
                self.write(cell_id, row)

    def path(self, cell_id: str) -> Path:
        """The cell's result file, ``DIR/cells/<cell_id>.parquet``."""
        return self.cells / f"{cell_id}.parquet"

    def done(self, cell_id: str, digest: str) -> bool:
        """Whether the cell has a result computed from the same inputs."""
        path = self.path(cell_id)
        if not path.is_file():
            return False
        try:
            stored = pq.read_table(path, columns=["digest"]).column("digest").to_pylist()
        except (pa.ArrowException, OSError, KeyError):
            return False  # unreadable: computed again
        return stored == [digest]

    def write(self, cell_id: str, row: dict[str, Any]) -> None:
        """Store ``row`` as the cell's one-row Parquet file, atomically (a scratch file renamed over it)."""
        final = self.path(cell_id)
        scratch = final.with_name(f".{final.name}.{os.getpid()}")
        pq.write_table(pa.Table.from_pylist([row]), scratch)
        os.replace(scratch, final)

    def table(self, cell_ids: list[str] | None = None) -> pa.Table:
        """The rows of ``cell_ids`` (default: every stored cell), one table."""
        paths = [self.path(c) for c in cell_ids] if cell_ids is not None else sorted(self.cells.glob("*.parquet"))
        tables = [pq.read_table(p) for p in paths if p.is_file()]
        if not tables:
            return pa.table({})
        return pa.concat_tables(tables, promote_options="default")

    def finish(self, cell_ids: list[str], export: str | None = None) -> list[Path]:
        """Write the sweep's table (and its ``export``: csv or json); returns the files written."""
        table = self.table(cell_ids)
        written = [self.directory / f"{self.name}.parquet"]
        pq.write_table(table, written[0])
        rows = table.to_pylist()
        if export == "json":
            path = self.directory / f"{self.name}.jsonl"
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))
            written.append(path)
        elif export == "csv":
            path = self.directory / f"{self.name}.csv"
            with path.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=table.column_names)
                writer.writeheader()
                for row in rows:
                    writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})
            written.append(path)
        return written


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a sweep table (a ``.parquet`` file), or of a results
    directory: its table and its cells, one row per cell (a cell file wins
    over the table's row: it is newer).  Raises ValueError naming the path
    when it is neither."""
    path = Path(path)
    try:
        if not path.is_dir():
            return pq.read_table(path).to_pylist()
        sources = [*sorted(path.glob("*.parquet")), *sorted((path / "cells").glob("*.parquet"))]
        if not sources:
            return []
        every = pa.concat_tables([pq.read_table(s) for s in sources], promote_options="default").to_pylist()
        return list({row.get("cell"): row for row in every}.values())  # the last (newest) row of each cell
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"{path}: not a sweep results table: {err}") from None
