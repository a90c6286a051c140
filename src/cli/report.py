"""``kubesched report``: plots of replay results and sweeps, and the HTML page of a decisions file."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from kubesched.analysis.html_page import records_report
from kubesched.analysis.plots import (
    ReportError,
    load_published,
    load_results,
    plot_allocation,
    plot_fragmentation,
    plot_heatmap,
    plot_sweep_trace,
    sweep_html,
    sweep_markdown,
    sweep_summary,
)
from kubesched.core.observability.decision_log import DecisionFileError, read_decisions

from .common import refuse


def report(
    results: List[Path] = typer.Argument(None, help="Replay results (kubesched trace replay -o json)."),
    out: Path = typer.Option(Path("."), "-o", "--out", help="Directory for the PNG / HTML files."),
    heatmap: Optional[Path] = typer.Option(None, "--heatmap", help="The result for the per-node heatmap (default: the first)."),
    decisions: Optional[Path] = typer.Option(
        None, "--decisions", help="A decisions file (simulate --record, run --record-decisions): writes "
                                  "decisions.html, a page per pod and the timeline of attempts."),
    published: Optional[Path] = typer.Option(
        None, "--published", help="With a sweep: the FGD paper's published results to overlay "
                                  "(data/alibaba-gpu-v2023/fgd-published-results)."),
) -> None:
    """Plot replay results: allocation.png (GPU allocation vs arrived demand, one
    line per policy), fragmentation.png and heatmap.png (per-node GPU use of one
    run); a sweep's results (its directory or .parquet table): per trace the
    allocation and fragmentation figures and a summary table with 95 %
    confidence intervals, as PNG, sweep.html and summary.md; or, with --decisions, the
    HTML report of a decision record."""
    if decisions is not None:
        try:
            records = list(read_decisions(decisions))
            out.mkdir(parents=True, exist_ok=True)
            page = out / "decisions.html"
            page.write_text(records_report(records, title=f"kubesched decisions {decisions}"))
        except DecisionFileError as err:
            refuse(str(err))
        except OSError as err:
            refuse(f"{out}: {err.strerror}")
        typer.echo(str(page))
        if not results:
            if heatmap is not None or published is not None:
                refuse("--heatmap/--published: replay or sweep results only, not --decisions alone")
            return
    if not results:
        refuse("report: give replay results, a sweep's results, or --decisions FILE")
    if len(results) == 1 and (results[0].is_dir() or results[0].suffix == ".parquet"):
        if heatmap is not None:
            refuse("--heatmap: replay results only (a sweep's report has no heatmap)")
        _report_sweep(results[0], out, published)
        return
    if published is not None:
        refuse("--published: a sweep's results only (give its directory or .parquet table)")
    try:
        loaded = load_results(results)
        chosen = load_results([heatmap])[0] if heatmap is not None else loaded[0]
        out.mkdir(parents=True, exist_ok=True)
        written = [plot_allocation(loaded, out / "allocation.png"),
                   plot_fragmentation(loaded, out / "fragmentation.png"),
                   plot_heatmap(chosen, out / "heatmap.png")]
    except ReportError as err:
        refuse(str(err))
    for path in written:
        typer.echo(str(path))


def _report_sweep(results: Path, out: Path, published: Optional[Path]) -> None:
    from kubesched.sweep.results import read_results  # pyarrow: the extra kubesched[sweep]

    try:
        rows = read_results(results)
        paper = load_published(published) if published is not None else None
        summary = sweep_summary(rows, paper)
        out.mkdir(parents=True, exist_ok=True)
        images = [path for trace in sorted({r["trace"] for r in rows if r.get("kind") == "openb"})
                  for path in plot_sweep_trace(rows, trace, out, paper)]
        page = out / "sweep.html"
        page.write_text(sweep_html(summary, images, title=f"kubesched sweep {results}"))
        markdown = out / "summary.md"
        markdown.write_text(sweep_markdown(summary, title=f"kubesched sweep {results.name}"))
    except (ReportError, ValueError) as err:
        refuse(str(err))
    except ImportError as err:
        refuse(f"report: {err.name} is missing: pip install 'kubesched[report,sweep]'")
    table = Table(title="GPU allocation at 130 % arrival (mean over seeds, 95 % CI)")
    for column in ("TRACE", "RANK", "POLICY", "SEEDS", "MEAN", "±95%", "PAPER", "OURS-PAPER"):
        table.add_column(column)
    for entry in sorted(summary, key=lambda e: (e["trace"], e["rank"])):
        table.add_row(entry["trace"], str(entry["rank"]), entry["config"], str(entry["seeds"]), f"{entry['mean']:.2f}",
                      "-" if entry["ci95"] is None else f"{entry['ci95']:.2f}",
                      str(entry.get("paper", "-")), "-" if "diff" not in entry else f"{entry['diff']:+.2f}")
    Console(width=160).print(table)
    for path in [*images, page, markdown]:
        typer.echo(str(path))
