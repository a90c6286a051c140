"""Pictures of replays: plots (PNG, with matplotlib).

- :func:`plot_allocation`: GPU allocation ratio against arrived GPU demand, one
  line per policy (the mean over its seeds), as figure 9a of the FGD paper;
- :func:`plot_fragmentation`: fragmented idle GPU compute against arrived demand;
- :func:`plot_heatmap`: one replay's per-node GPU utilisation as arrival grows;
- :func:`sweep_summary`, :func:`plot_sweep_trace`, :func:`sweep_html`: a sweep's
  grid (``kubesched sweep``) per trace, with the FGD paper's published results
  (:func:`load_published`) beside it.

The HTML report of a simulation is :mod:`kubesched.analysis.html_page`.

matplotlib is an optional dependency (``pip install 'kubesched[report]'``);
:class:`ReportError` says so when it is missing.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import attrs
import numpy as np

from kubesched.trace.replay import ReplayResult


class ReportError(RuntimeError):
    """A report cannot be made: matplotlib is missing, or a results file is unreadable."""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ReportError("plots need matplotlib: pip install 'kubesched[report]'") from None
    return plt


def load_results(paths: Iterable[str | Path]) -> list[ReplayResult]:
    """Replay results written by ``kubesched trace replay -o json``; raises
    :class:`ReportError` naming a file that is not one."""
    results = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
            results.append(ReplayResult.from_json(data))
        except (OSError, ValueError, TypeError) as err:
            raise ReportError(f"{path}: not a replay result (kubesched trace replay -o json): {err}") from None
    return results


def label(result: ReplayResult) -> str:
    """A run's name in legends: its configuration file's stem (``fgd``)."""
    return Path(result.config).stem if result.config != "default" else "default"


def mean_curves(results: list[ReplayResult], attribute: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per label: arrived % and the mean over its runs of ``curve`` or
    ``fragmentation`` at each arrival every run reached."""
    grouped: dict[str, list[dict[float, float]]] = defaultdict(list)
    for result in results:
        grouped[label(result)].append(dict((point, value) for point, value in getattr(result, attribute)))
    out = {}
    for name, runs in grouped.items():
        common = sorted(set.intersection(*(set(r) for r in runs)))
        out[name] = (np.array(common), np.array([np.mean([r[p] for r in runs]) for p in common]))
    return out


def _line_plot(results, attribute: str, ylabel: str, title: str, path: str | Path, diagonal: bool) -> Path:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    curves = mean_curves(results, attribute)
    for name in sorted(curves, key=lambda n: -curves[n][1][-1] if len(curves[n][1]) else 0):
        arrived, values = curves[name]
        runs = sum(1 for r in results if label(r) == name)
        axes.plot(arrived, values, label=f"{name} ({runs} run{'s' if runs > 1 else ''})")
    if diagonal:
        top = max((float(c[0][-1]) for c in curves.values() if len(c[0])), default=100.0)
        axes.plot([0, min(top, 100)], [0, min(top, 100)], linestyle=":", color="grey", label="everything allocated")
    axes.set_xlabel("Arrived GPU demand (% of cluster GPUs)")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def plot_allocation(results: list[ReplayResult], path: str | Path) -> Path:
    """GPU allocation ratio vs arrived GPU demand, one line per policy (FGD paper, figure 9a)."""
    return _line_plot(results, "curve", "GPU allocation ratio (%)", "GPU allocation as workload arrives", path, True)


def plot_fragmentation(results: list[ReplayResult], path: str | Path) -> Path:
    """Fragmented idle GPU compute (% of all GPU compute) vs arrived GPU demand."""
    return _line_plot(results, "fragmentation", "Fragmented GPU compute (% of all)",
                      "GPU fragmentation as workload arrives", path, False)


def plot_heatmap(result: ReplayResult, path: str | Path) -> Path:
    """Per-node GPU utilisation (%) of one replay as arrival grows; nodes
    grouped by GPU model."""
    if not result.heatmap:
        raise ReportError(f"{result.trace}: the result has no per-node utilisation (heatmap)")
    plt = _pyplot()
    order = sorted(range(len(result.nodes)), key=lambda i: (result.models[i], result.nodes[i]))
    matrix = np.array(result.heatmap, dtype=float)[:, order].T
    figure, axes = plt.subplots(figsize=(6.4, 6.0))
    image = axes.imshow(matrix, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=100,
                        extent=(result.heatmap_arrived[0] - 2.5, result.heatmap_arrived[-1] + 2.5, len(order), 0))
    boundaries, ticks, names = [], [], []
    start = 0
    models = [result.models[i] for i in order]
    for index in range(1, len(models) + 1):
        if index == len(models) or models[index] != models[start]:
            boundaries.append(index)
            ticks.append((start + index) / 2)
            names.append(f"{models[start] or 'no GPU'} ({index - start})")
            start = index
    for boundary in boundaries[:-1]:
        axes.axhline(boundary, color="white", linewidth=0.5)
    axes.set_yticks(ticks, names, fontsize="x-small")
    axes.set_xlabel("Arrived GPU demand (% of cluster GPUs)")
    axes.set_title(f"GPU utilisation per node: {label(result)}, seed {result.seed}")
    figure.colorbar(image, ax=axes, label="GPU utilisation (%)")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


# --- HTML summary of a simulation --------------------------------------------------------


# --- sweeps (kubesched sweep): the grid as the FGD paper draws it ------------------------------

#: The arrival (% of the cluster's GPUs) at which the summary compares allocation, as the paper does.
SUMMARY_ARRIVAL = 130


def policy_key(name: str) -> str:
    """A policy's name made comparable across the paper and sweep files:
    ``06-FGD`` and ``fgd`` -> ``fgd``, ``04-GpuPacking`` and ``packing`` -> ``packing``."""
    key = re.sub(r"^\d+-", "", name).lower()
    return key[3:] if key.startswith("gpu") and len(key) > 3 else key


@attrs.define
class Published:
    """The FGD paper's published runs: per (workload, policy key) the mean over
    its seeds of the allocation curve and of the fragmentation curve
    (arrived % -> %), and of the allocation at 130 % arrival."""

    allocation: dict[tuple[str, str], dict[int, float]]
    fragmentation: dict[tuple[str, str], dict[int, float]]
    at_130: dict[tuple[str, str], float]


def load_published(directory: str | Path) -> Published:
    """Read fgd-published-results (analysis_allo_discrete.csv,
    analysis_frag_discrete.csv, fgd_summary_mean_over_10_seeds.csv).  Raises
    :class:`ReportError` naming a missing or malformed file."""
    directory = Path(directory)

    def curves(name: str) -> dict[tuple[str, str], dict[int, float]]:
        runs: dict[tuple[str, str], list[dict[int, float]]] = defaultdict(list)
        for row in _csv_rows(directory / name):
            points = {int(k): float(v) for k, v in row.items() if k.isdigit() and v not in ("", None)}
            runs[(row["workload"], policy_key(row["sc_policy"]))].append(points)
        return {key: {p: float(np.mean([r[p] for r in seeds if p in r])) for p in set().union(*seeds)}
                for key, seeds in runs.items()}

    at_130 = {(row["workload"], policy_key(row["sc_policy"])): float(row["alloc_pct_at_arrived_130"])
              for row in _csv_rows(directory / "fgd_summary_mean_over_10_seeds.csv")}
    return Published(curves("analysis_allo_discrete.csv"), curves("analysis_frag_discrete.csv"), at_130)


def _csv_rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as err:
        raise ReportError(f"{path}: {err.strerror}") from None
    if not rows or "workload" not in rows[0] or "sc_policy" not in rows[0]:
        raise ReportError(f"{path}: not one of the FGD paper's published results (no workload/sc_policy columns)")
    return rows


def _value_at(arrived: list[float], values: list[float], point: int) -> float | None:
    return next((v for a, v in zip(arrived, values) if a == point), None)


def sweep_summary(rows: list[dict[str, Any]], published: Published | None = None) -> list[dict[str, Any]]:
    """Per (trace, config) of a sweep's openb rows: seeds, mean GPU allocation
    at :data:`SUMMARY_ARRIVAL` % arrival with its 95 % confidence interval
    (Student's t over the seeds), min and max, the fragmentation at 90 %, and
    the paper's mean and our difference where ``published`` has the
    workload and policy; ``rank`` orders the policies of a trace (1: best)."""
    from scipy import stats

    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("kind") == "openb":
            groups[(row["trace"], row["config"])].append(row)
    summary = []
    for (trace, config), runs in sorted(groups.items()):
        values = [v if (v := _value_at(r.get("curve_arrived") or [], r.get("curve_allocated") or [], SUMMARY_ARRIVAL))
                  is not None else r["gpu_allocation_ratio"] for r in runs]
        frag = [v for r in runs if (v := _value_at(r.get("fragmentation_arrived") or [], r.get("fragmentation") or [],
                                                   90)) is not None]
        mean = float(np.mean(values))
        half = (float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))
                if len(values) > 1 else None)
        entry: dict[str, Any] = {"trace": trace, "config": config, "seeds": len(runs), "mean": round(mean, 2),
                                 "ci95": round(half, 2) if half is not None else None,
                                 "min": min(values), "max": max(values),
                                 "frag90": round(float(np.mean(frag)), 2) if frag else None}
        paper = published.at_130.get((runs[0].get("workload", ""), policy_key(config))) if published else None
        if paper is not None:
            entry["paper"] = paper
            entry["diff"] = round(mean - paper, 2)
        summary.append(entry)
    for trace in {e["trace"] for e in summary}:
        mine = sorted((e for e in summary if e["trace"] == trace), key=lambda e: -e["mean"])
        for rank, entry in enumerate(mine, 1):
            entry["rank"] = rank
    return summary


def plot_sweep_trace(rows: list[dict[str, Any]], trace: str, directory: str | Path,
                     published: Published | None = None) -> list[Path]:
    """For one trace of a sweep: ``<trace>-allocation.png`` (GPU allocation vs
    arrived demand, per policy the mean over seeds with a band from the lowest
    to the highest seed, figure 9a of the paper) and ``<trace>-fragmentation.png``
    (figure 7); the paper's published means dashed where ``published`` has them."""
    plt = _pyplot()
    mine = [r for r in rows if r["trace"] == trace and r.get("kind") == "openb"]
    written = []
    for what, arrived_key, values_key, published_curves, ylabel in (
            ("allocation", "curve_arrived", "curve_allocated", published.allocation if published else {},
             "GPU allocation ratio (%)"),
            ("fragmentation", "fragmentation_arrived", "fragmentation",
             published.fragmentation if published else {}, "Fragmented GPU compute (% of all)")):
        figure, axes = plt.subplots(figsize=(6.4, 4.2))
        for index, config in enumerate(sorted({r["config"] for r in mine})):
            runs = [dict(zip(r.get(arrived_key) or [], r.get(values_key) or [])) for r in mine if r["config"] == config]
            common = sorted(set.intersection(*(set(run) for run in runs))) if runs else []
            if not common:
                continue
            matrix = np.array([[run[p] for p in common] for run in runs])
            colour = f"C{index}"
            axes.plot(common, matrix.mean(axis=0), color=colour, label=f"{config} ({len(runs)} seeds)")
            axes.fill_between(common, matrix.min(axis=0), matrix.max(axis=0), color=colour, alpha=0.2)
            paper = published_curves.get((mine[0].get("workload", ""), policy_key(config)))
            if paper:
                points = sorted(paper)
                axes.plot(points, [paper[p] for p in points], color=colour, linestyle="--", linewidth=1,
                          label=f"{config}, paper")
        axes.set_xlabel("Arrived GPU demand (% of cluster GPUs)")
        axes.set_ylabel(ylabel)
        axes.set_title(f"{trace}: GPU {what} as workload arrives")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize="x-small")
        figure.tight_layout()
        path = Path(directory) / f"{trace}-{what}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)
    return written


def sweep_html(summary: list[dict[str, Any]], images: list[Path], title: str) -> str:
    """A self-contained page: the summary table and the figures (embedded)."""
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(entry.get(k, '')) if entry.get(k) is not None else '-')}</td>"
                         for k in ("trace", "rank", "config", "seeds", "mean", "ci95", "min", "max", "paper", "diff",
                                   "frag90")) + "</tr>"
        for entry in sorted(summary, key=lambda e: (e["trace"], e["rank"])))
    figures = "".join(
        f'<figure><img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode()}"></figure>' for p in images)
    head = ("trace", "rank", "policy", "seeds", f"mean @{SUMMARY_ARRIVAL} %", "95 % CI ±", "min", "max",
            "paper mean", "ours - paper", "frag @90 %")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>body{{font-family:system-ui,sans-serif;margin:2em}}"
            "table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}"
            "figure{display:inline-block;margin:0.5em}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>GPU allocation ratio (% of the cluster's GPU compute) at "
            f"{SUMMARY_ARRIVAL} % arrived demand, mean over seeds with its 95 % confidence interval.</p>"
            "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + f"</tr>{rows}</table>"
            f"{figures}</body></html>\n")


def sweep_markdown(summary: list[dict[str, Any]], title: str) -> str:
    """The summary as a markdown table (one row per trace and policy) and the
    policy order per trace, ours and the paper's where it is known."""
    lines = [f"# {title}", "",
             f"GPU allocation ratio at {SUMMARY_ARRIVAL} % arrived demand, mean over seeds (95 % CI); "
             "the paper's published 10-seed mean beside it.", "",
             "| trace | policy | seeds | ours | 95 % CI ± | min..max | paper | ours - paper | frag @90 % |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for entry in sorted(summary, key=lambda e: (e["trace"], e["rank"])):
        ci = "-" if entry["ci95"] is None else f"{entry['ci95']:.2f}"
        paper = f"{entry['paper']:.2f}" if "paper" in entry else "-"
        diff = f"{entry['diff']:+.2f}" if "diff" in entry else "-"
        frag = "-" if entry["frag90"] is None else f"{entry['frag90']:.2f}"
        lines.append(f"| {entry['trace']} | {entry['config']} | {entry['seeds']} | {entry['mean']:.2f} | {ci} | "
                     f"{entry['min']:.2f}..{entry['max']:.2f} | {paper} | {diff} | {frag} |")
    lines += ["", "Policy order per trace, best first (ours; the paper's where it has every policy):", ""]
    for trace in sorted({e["trace"] for e in summary}):
        mine = sorted((e for e in summary if e["trace"] == trace), key=lambda e: e["rank"])
        text = f"- {trace}: " + " > ".join(e["config"] for e in mine)
        if all("paper" in e for e in mine):
            text += "; paper: " + " > ".join(e["config"] for e in sorted(mine, key=lambda e: -e["paper"]))
        lines.append(text)
    return "\n".join(lines) + "\n"
