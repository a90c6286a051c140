"""One cell of a sweep - (trace, config, seed, arrival) - and the function
that runs it, the same for every engine.

:class:`Inputs` carries the contents of every file the cells read (trace
CSVs, manifests, configurations), keyed by content hash, so that an engine
ships them once (Ray: once per node through its object store) and a cell
never depends on paths of the machine that started the sweep.
:func:`run_cell` writes them into a cache directory of the machine it runs
on (shared by the workers there: an openb trace is converted once per seed
and arrival, not once per policy) and returns the result row.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from .spec import SweepSpec

#: Where cells keep materialised inputs and converted traces on a machine.
CACHE_DIR = Path(tempfile.gettempdir()) / "kubesched-sweep-cache"


@attrs.frozen
class Cell:
    """One run of the grid."""

    trace: str
    config: str
    seed: int
    arrival: float

    @property
    def id(self) -> str:
        """A file-name-safe identity (the results file of the cell is named after it)."""
        return f"{self.trace}--{self.config}--seed{self.seed}--arrival{self.arrival:g}"


@attrs.frozen
class Inputs:
    """Every file the cells read: ``files`` content hash -> bytes; ``traces``
    name -> ``{"nodes", "pods", "thin"}`` (openb, hashes) or ``{"manifests":
    {relative path: hash}}``; ``configs`` name -> hash; ``record``: the
    curves to keep; ``rng``: the openb traces' generator."""

    files: dict[str, bytes]
    traces: dict[str, dict[str, Any]]
    configs: dict[str, str]
    record: tuple[str, ...]
    rng: str = "python"

    def digest(self, cell: Cell) -> str:
        """What the cell's result depends on: its inputs' contents and parameters
        (an openb trace's generator only when it is not the default, so earlier results stay valid)."""
        trace = json.dumps(self.traces[cell.trace], sort_keys=True)
        key = f"{trace}|{self.configs[cell.config]}|{cell.seed}|{cell.arrival!r}|{','.join(self.record)}"
        if self.rng != "python" and "manifests" not in self.traces[cell.trace]:
            key += f"|rng={self.rng}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]


def cells_of(spec: SweepSpec) -> list[Cell]:
    """Every cell of the grid, trace by trace (manifest directories take one arrival)."""
    cells = []
    for trace in spec.traces:
        arrivals = spec.arrivals if trace.is_openb else spec.arrivals[:1]
        for seed in spec.seeds:
            for arrival in arrivals:
                for config in spec.configs:
                    cells.append(Cell(trace.name, config.name, seed, arrival))
    return cells


def build_inputs(spec: SweepSpec) -> Inputs:
    """Read every file the sweep's cells need.  Raises OSError."""
    files: dict[str, bytes] = {}

    def add(path: Path) -> str:
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        files[digest] = data
        return digest

    traces: dict[str, dict[str, Any]] = {}
    for trace in spec.traces:
        if trace.manifests is not None:
            traces[trace.name] = {"manifests": {str(p.relative_to(trace.manifests)): add(p)
                                                for p in sorted(trace.manifests.rglob("*"))
                                                if p.is_file() and p.suffix in (".yaml", ".yml", ".json")}}
        else:
            assert trace.nodes is not None and trace.pods is not None
            traces[trace.name] = {"nodes": add(trace.nodes), "pods": add(trace.pods), "thin": trace.thin,
                                  "pods_file": trace.pods.name}
    configs = {config.name: add(config.path) for config in spec.configs}
    return Inputs(files, traces, configs, spec.record, spec.rng)


def run_cell(cell: Cell, inputs: Inputs) -> dict[str, Any]:
    """Run one cell and return its row: the parameters, what the run measured
    (openb: pods, placed, failed, GPU allocation ratio at the end, the
    per-arrival allocation and fragmentation curves; manifests: pods bound
    and pending), its wall time (seconds), the host and the kubesched and
    plugin versions.  Raises what the replay or simulation raises for bad input."""
    started = time.perf_counter()
    trace = inputs.traces[cell.trace]
    config = _materialise(inputs, inputs.configs[cell.config], ".yaml")
    row: dict[str, Any] = {"trace": cell.trace, "config": cell.config, "seed": cell.seed, "arrival": cell.arrival,
                           "cell": cell.id, "digest": inputs.digest(cell)}
    if "manifests" in trace:
        row.update(_simulate(cell, inputs, trace["manifests"], config))
    else:
        row.update(_replay(cell, inputs, trace, config))
    row.update({"wall_seconds": round(time.perf_counter() - started, 3), "host": socket.gethostname(),
                "kubesched_version": _version("kubesched"), "plugin_versions": json.dumps(_plugin_versions())})
    return row


def _replay(cell: Cell, inputs: Inputs, trace: dict[str, Any], config: Path) -> dict[str, Any]:
    from ..trace.openb import convert
    from ..trace.replay import replay

    nodes = _materialise(inputs, trace["nodes"], ".csv", thin=trace["thin"])
    pods = _materialise(inputs, trace["pods"], ".csv")
    generator = "" if inputs.rng == "python" else f"-{inputs.rng}"
    converted = CACHE_DIR / "traces" / f"{nodes.stem}-{pods.stem}-{cell.seed}-{cell.arrival:g}{generator}"
    if not (converted / "pods.json").is_file():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=CACHE_DIR))
        convert(nodes, pods, scratch / "trace", seed=cell.seed, arrival=cell.arrival, rng=inputs.rng)
        _publish(scratch / "trace", converted)
    result = replay(converted, config)
    row: dict[str, Any] = {"kind": "openb", "workload": Path(trace["pods_file"]).stem, "rng": result.rng,
                           "pods": result.pods, "bound": result.bound, "failed": result.failed,
                           "gpus": result.gpus, "gpu_allocation_ratio": result.gpu_allocation_ratio}
    if "curve" in inputs.record:
        row["curve_arrived"] = [point[0] for point in result.curve]
        row["curve_allocated"] = [point[1] for point in result.curve]
    if "fragmentation" in inputs.record:
        row["fragmentation_arrived"] = [point[0] for point in result.fragmentation]
        row["fragmentation"] = [point[1] for point in result.fragmentation]
    return row


def _simulate(cell: Cell, inputs: Inputs, manifests: dict[str, str], config: Path) -> dict[str, Any]:
    from kubesched.drivers.simulation import Simulation

    directory = CACHE_DIR / "manifests" / hashlib.sha256(json.dumps(manifests, sort_keys=True).encode()).hexdigest()[:16]
    if not directory.is_dir():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=CACHE_DIR))
        for relative, digest in manifests.items():
            (scratch / relative).parent.mkdir(parents=True, exist_ok=True)
            (scratch / relative).write_bytes(inputs.files[digest])
        _publish(scratch, directory)
    sim = Simulation.from_paths([directory], config=config, seed=cell.seed)
    sim.run()
    pods = sim.pods()
    bound = sum(1 for p in pods if p.spec.node_name)
    return {"kind": "manifests", "pods": len(pods), "bound": bound, "failed": len(pods) - bound}


def _materialise(inputs: Inputs, digest: str, suffix: str, thin: int = 1) -> Path:
    """The file of content ``digest`` in the cache (every ``thin``-th data row
    kept, the header always), written once per machine."""
    path = CACHE_DIR / "files" / f"{digest[:16]}{f'-thin{thin}' if thin > 1 else ''}{suffix}"
    if not path.is_file():
        data = inputs.files[digest]
        if thin > 1:
            lines = data.decode().splitlines(keepends=True)
            data = "".join(lines[:1] + lines[1::thin]).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{os.getpid()}")
        scratch.write_bytes(data)
        os.replace(scratch, path)
    return path


def _publish(scratch: Path, final: Path) -> None:
    """Move a finished directory into place; another worker may have won the race."""
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        scratch.rename(final)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def _plugin_versions() -> dict[str, str]:
    """Distribution -> version of every package that provides kubesched plugins."""
    found = {}
    for entry in metadata.entry_points(group="kubesched.plugins"):
        dist = entry.dist
        if dist is not None:
            found[dist.name] = dist.version
    return dict(sorted(found.items()))
