"""The sweep file: a whole experiment grid in YAML.

::

    name: fgd-paper                         # names the results directory's table
    traces:                                 # each: an openb trace (CSV lists) or a manifest directory
    - name: default
      nodes: ../data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv
      pods: ../data/alibaba-gpu-v2023/openb_pod_list_default.csv
      thin: 25                              # optional: every 25th node (and the arrival scaled to them)
    - name: my-cluster
      manifests: my-cluster/                # simulate: placements, no curves
    configs:                                # one KubeSchedulerConfiguration per policy
    - name: fgd
      path: ../examples/kubesched-fgd/configs/fgd.yaml
    seeds: [42, 43]                         # or "42-51"
    arrivals: [1.3]                         # arrival ratios of the openb traces (default [1.3])
    rng: go                                 # arrival order and node ranking from Go's math/rand, as the
                                            # paper's simulator draws them (default python)
    record: [curve, fragmentation]          # per-arrival curves to keep (default both)

Paths are relative to the sweep file.  Every (trace, config, seed, arrival)
is one cell (:mod:`kubesched.sweep.cells`).  :func:`load_spec` refuses an
unknown key or a bad value with the file and the field named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, read_yaml

from ..trace.openb import RNGS

#: What a cell may record besides its final numbers.
RECORDABLE = ("curve", "fragmentation")


class SweepError(ValueError):
    """A sweep file that cannot be used; the message names the file and field."""


@attrs.frozen
class TraceSpec:
    """One input: an openb trace (``nodes`` and ``pods`` CSV lists, every
    ``thin``-th node kept) or a ``manifests`` directory."""

    name: str
    nodes: Path | None = None
    pods: Path | None = None
    manifests: Path | None = None
    thin: int = 1

    @property
    def is_openb(self) -> bool:
        return self.manifests is None


@attrs.frozen
class ConfigSpec:
    """One policy: a KubeSchedulerConfiguration file named ``name``."""

    name: str
    path: Path


@attrs.frozen
class SweepSpec:
    """A loaded sweep file (module docstring); ``source`` is its path."""

    name: str
    source: Path
    traces: tuple[TraceSpec, ...]
    configs: tuple[ConfigSpec, ...]
    seeds: tuple[int, ...]
    arrivals: tuple[float, ...] = (1.3,)
    record: tuple[str, ...] = RECORDABLE
    rng: str = "python"


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep file.  Raises :class:`SweepError`."""
    path = Path(path)
    try:
        document = read_yaml(path, MAX_CONFIG_BYTES)
    except InvalidManifest as err:
        raise SweepError(str(err)) from None
    where = str(path)
    doc = _mapping(document, where, "", {"name", "traces", "configs", "seeds", "arrivals", "record", "rng"})
    base = path.parent
    traces = tuple(_trace(item, where, f"traces[{i}]", base) for i, item in enumerate(_list(doc, where, "traces")))
    configs = tuple(_config(item, where, f"configs[{i}]", base)
                    for i, item in enumerate(_list(doc, where, "configs")))
    for field, names in (("traces", [t.name for t in traces]), ("configs", [c.name for c in configs])):
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise SweepError(f"{where}: {field}: the name {duplicate!r} is used twice")
    seeds = _seeds(doc.get("seeds"), where)
    arrivals = doc.get("arrivals", [1.3])
    if not isinstance(arrivals, list) or not arrivals or not all(
            isinstance(a, (int, float)) and not isinstance(a, bool) and 0 < a <= 10 for a in arrivals):
        raise SweepError(f"{where}: arrivals: a non-empty list of ratios in (0, 10], got {arrivals!r}")
    record = doc.get("record", list(RECORDABLE))
    if not isinstance(record, list) or any(r not in RECORDABLE for r in record):
        raise SweepError(f"{where}: record: a list of {', '.join(RECORDABLE)}, got {record!r}")
    rng = doc.get("rng", "python")
    if rng not in RNGS:
        raise SweepError(f"{where}: rng: one of {', '.join(RNGS)}, got {rng!r}")
    name = doc.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise SweepError(f"{where}: name: a non-empty string, got {name!r}")
    return SweepSpec(name=name, source=path, traces=traces, configs=configs, seeds=seeds,
                     arrivals=tuple(float(a) for a in arrivals), record=tuple(record), rng=rng)


def _mapping(value: Any, where: str, field: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SweepError(f"{where}: {field or 'the file'}: a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        prefix = f"{field}." if field else ""
        raise SweepError(f"{where}: {prefix}{unknown[0]}: unknown field (known: {', '.join(sorted(allowed))})")
    return value


def _list(doc: dict[str, Any], where: str, field: str) -> list[Any]:
    value = doc.get(field)
    if not isinstance(value, list) or not value:
        raise SweepError(f"{where}: {field}: a non-empty list is required")
    return value


def _name(item: dict[str, Any], where: str, field: str) -> str:
    name = item.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise SweepError(f"{where}: {field}.name: a non-empty string without '/', got {name!r}")
    return name


def _existing(item: dict[str, Any], key: str, where: str, field: str, base: Path, directory: bool = False) -> Path:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise SweepError(f"{where}: {field}.{key}: a path is required")
    path = (base / value).resolve()
    if not (path.is_dir() if directory else path.is_file()):
        raise SweepError(f"{where}: {field}.{key}: {value}: no such {'directory' if directory else 'file'}")
    return path


def _trace(item: Any, where: str, field: str, base: Path) -> TraceSpec:
    item = _mapping(item, where, field, {"name", "nodes", "pods", "manifests", "thin"})
    name = _name(item, where, field)
    if "manifests" in item:
        if "nodes" in item or "pods" in item or "thin" in item:
            raise SweepError(f"{where}: {field}: give either manifests or nodes and pods, not both")
        return TraceSpec(name, manifests=_existing(item, "manifests", where, field, base, directory=True))
    thin = item.get("thin", 1)
    if not isinstance(thin, int) or isinstance(thin, bool) or thin < 1:
        raise SweepError(f"{where}: {field}.thin: a positive integer, got {thin!r}")
    return TraceSpec(name, nodes=_existing(item, "nodes", where, field, base),
                     pods=_existing(item, "pods", where, field, base), thin=thin)


def _config(item: Any, where: str, field: str, base: Path) -> ConfigSpec:
    item = _mapping(item, where, field, {"name", "path"})
    return ConfigSpec(_name(item, where, field), _existing(item, "path", where, field, base))


def _seeds(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, str) and "-" in value:
        low, _, high = value.partition("-")
        if low.strip().isdigit() and high.strip().isdigit() and int(low) <= int(high):
            return tuple(range(int(low), int(high) + 1))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        if len(set(value)) != len(value):
            raise SweepError(f"{where}: seeds: a seed is listed twice")
        return tuple(value)
    raise SweepError(f"{where}: seeds: a list of integers or a range like \"42-51\", got {value!r}")
