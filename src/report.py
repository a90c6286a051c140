"""Pictures of replays: plots (PNG, with matplotlib).

- :func:`plot_allocation`: GPU allocation ratio against arrived GPU demand, one
  line per policy (the mean over its seeds), as figure 9a of the FGD paper;
- :func:`plot_fragmentation`: fragmented idle GPU compute against arrived demand;
- :func:`plot_heatmap`: one replay's per-node GPU utilisation as arrival grows.

The HTML report of a simulation is :mod:`kubesched.html_report`.

matplotlib is an optional dependency (``pip install 'kubesched[report]'``);
:class:`ReportError` says so when it is missing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Iterable

import numpy as np

from .trace.replay import ReplayResult


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
