"""Printing a table of plain-text cells as rich's default ``Table`` prints it, cheaply when the table is large.

rich lays out every cell as a renderable (measure, wrap, crop, pad, style), about 0.4 ms of CPU per row of four
cells: 0.4 s for the 1,000 rows ``kubesched simulate`` shows.  When the output has no styles (not a terminal, so
rich writes no escape codes) and every cell is printable text on one line and the table fits the console's width,
nothing is wrapped or cropped, and the text rich writes is simple to write directly: the same border characters
(rich's own :data:`rich.box.HEAVY_HEAD`, its ASCII form where the console needs one), one space of padding, the
columns as wide as their widest cell (terminal cells, as rich counts them), the title centred above.  Any other
table goes through rich, with the cells as plain text as well (never read as console markup).
"""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text


def print_table(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print ``rows`` (each one string per column) under the ``columns`` headers and ``title`` on ``console``, as
    ``console.print`` prints a ``rich.table.Table(title=title)`` with these columns and rows of ``Text`` cells."""
    text = _plain(console, title, columns, rows)
    if text is not None:
        console.file.write(text)
        return
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


def _plain(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str | None:
    """The table's text written directly, or None when rich must lay it out (styles to write, a cell on several
    lines or with control characters, wider than the console, a title wider than the table)."""
    if console.color_system is not None or console.options.legacy_windows:
        return None
    widths = [cell_len(header) for header in columns]
    for row in rows:
        for index, cell in enumerate(row):
            if not cell.isprintable():
                return None
            length = cell_len(cell)
            if length > widths[index]:
                widths[index] = length
    padded = [width + 2 for width in widths]  # one space each side
    total = sum(padded) + len(padded) + 1  # and a border before, between and after the columns
    if total > console.width or cell_len(title) > total or not title.isprintable():
        return None
    edges = box.HEAVY_HEAD.substitute(console.options, safe=True)
    excess = total - cell_len(title)
    lines = [" " * (excess // 2) + title + " " * (excess - excess // 2), edges.get_top(padded)]

    def line(cells: Sequence[str], left: str, divider: str, right: str) -> str:
        return left + divider.join(f" {cell}{' ' * (width - cell_len(cell))} "
                                   for cell, width in zip(cells, widths)) + right

    lines.append(line(columns, edges.head_left, edges.head_vertical, edges.head_right))
    lines.append(edges.get_row(padded, "head", edge=True))
    for number, row in enumerate(rows, 1):
        if number == len(rows):
            lines.append(line(row, edges.foot_left, edges.foot_vertical, edges.foot_right))
        else:
            lines.append(line(row, edges.mid_left, edges.mid_vertical, edges.mid_right))
    lines.append(edges.get_bottom(padded))
    return "\n".join(lines) + "\n"
