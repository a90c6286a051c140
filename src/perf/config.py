"""The scheduler_perf configuration model: test cases, workloads, ops and params.

A scheduler_perf file (e.g. ``misc/performance-config.yaml``) is a YAML list
of test cases.  A test case has a ``workloadTemplate`` (a list of ops) and
``workloads``; each workload runs the template with its own ``params``
(``countParam: $initNodes`` takes ``params.initNodes``), ``labels``,
``featureGates`` and ``threshold`` (the minimum SchedulingThroughput Average,
pods/s; 0 = no check).  Template paths (``defaultPodTemplatePath``,
``nodeTemplatePath``, ``podTemplatePath``, ``templatePath(s)``,
``schedulerConfigPath``) are relative to the config file.

Each op's opcode is looked up in the table of :mod:`kubesched.perf.ops`;
an opcode that is not there is refused with the file, test case and op, as
upstream's decoder refuses an unknown opcode.  Keys are matched
case-insensitively, as Go's JSON decoding does; a key the op does not have is
refused, naming the file, test case, op and key.  Upstream ops kubesched does
not run yet are kept as they are (their fields are not checked) so that a
workload using them is reported as unsupported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import yaml

from kubesched.core.api.manifests import MAX_CONFIG_BYTES, InvalidManifest, read_yaml

from ..core.framework.config import ConfigError, parse_duration
from .errors import PerfConfigError
from .ops import OPS

_CLIENT_FIELDS = ("schedulerApiClientQPS", "schedulerApiClientBurst")
_TEST_CASE_FIELDS = ("name", "featureGates", "metricsCollectorConfig", "workloadTemplate", "workloads",
                     "schedulerConfigPath", "defaultPodTemplatePath", "labels", "defaultThresholdMetricSelector",
                     *_CLIENT_FIELDS)
_WORKLOAD_FIELDS = ("name", "params", "labels", "threshold", "thresholdMetricSelector", "featureGates",
                    *_CLIENT_FIELDS)

#: scheduler_perf's scheduler client QPS and burst when neither the test case nor the workload sets them
DEFAULT_API_CLIENT_QPS, DEFAULT_API_CLIENT_BURST = 5000.0, 5000

#: The metric a threshold is compared with unless a workload says otherwise.
THROUGHPUT_METRIC = "SchedulingThroughput"


def _canonical(raw: dict, allowed: tuple[str, ...], where: str) -> dict[str, Any]:
    """``raw``'s keys mapped case-insensitively onto ``allowed``; an unknown key is an error."""
    lookup = {name.lower(): name for name in allowed}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = lookup.get(str(key).lower())
        if name is None:
            raise PerfConfigError(f"{where}: unknown field {key!r} (known: {', '.join(allowed)})")
        if name in out:
            raise PerfConfigError(f"{where}: field {name!r} given twice")
        out[name] = value
    return out


@attrs.frozen
class Op:
    """One entry of a ``workloadTemplate``: its position (``index``, which
    upstream uses for default names like ``namespace-<index>``), its opcode and
    its fields under upstream's camelCase names (raw, before params)."""

    index: int
    opcode: str
    fields: dict[str, Any]

    @property
    def supported(self) -> bool:
        """False for an upstream op kubesched does not run yet."""
        return OPS[self.opcode].RUNS


@attrs.frozen
class Workload:
    """A workload of a test case: ``params`` for the template's ``$name``
    references, ``labels``, ``threshold`` (minimum Average of the selected
    metric, pods/s; 0 disables the check), ``threshold_metric_selector``
    (metric name; default SchedulingThroughput), ``feature_gates`` and
    ``api_client`` (``schedulerApiClientQPS``/``Burst``: None where unset)."""

    name: str
    params: dict[str, Any]
    labels: tuple[str, ...] = ()
    threshold: float = 0.0
    threshold_metric: str = THROUGHPUT_METRIC
    feature_gates: dict[str, bool] = attrs.field(factory=dict)
    api_client: tuple[float | None, int | None] = (None, None)


@attrs.frozen
class TestCase:
    """A scheduler_perf test case.  Paths are already resolved against
    ``base_dir`` (the config file's folder)."""

    __test__ = False  # not a pytest class

    name: str
    ops: tuple[Op, ...]
    workloads: tuple[Workload, ...]
    base_dir: Path
    feature_gates: dict[str, bool] = attrs.field(factory=dict)
    scheduler_config_path: Path | None = None
    default_pod_template_path: Path | None = None
    labels: tuple[str, ...] = ()
    metrics_collector_config: Any = None
    api_client: tuple[float | None, int | None] = (None, None)

    def api_client_limits(self, workload: Workload) -> tuple[float, int] | None:
        """The scheduler client's (QPS, burst) for ``workload``: each the workload's, else the test case's, else
        scheduler_perf's default (5000); None when neither sets either (an unlimited client is kubesched's
        scheduler as it is: 5000 requests/s is out of its reach)."""
        if workload.api_client == (None, None) and self.api_client == (None, None):
            return None
        qps = next((v for v in (workload.api_client[0], self.api_client[0]) if v is not None), DEFAULT_API_CLIENT_QPS)
        burst = next((v for v in (workload.api_client[1], self.api_client[1]) if v is not None),
                     DEFAULT_API_CLIENT_BURST)
        return qps, burst

    def workload(self, name: str) -> Workload:
        """The workload called ``name``; raises PerfConfigError listing the test case's workloads when there is none."""
        for workload in self.workloads:
            if workload.name == name:
                return workload
        raise PerfConfigError(f"test case {self.name}: no workload named {name!r} "
                              f"(have: {', '.join(w.name for w in self.workloads)})")

    def path(self, value: str) -> Path:
        """A template or config path from this test case, resolved against the config file."""
        return (self.base_dir / value).resolve()


def load_test_cases(path: str | Path) -> list[TestCase]:
    """Read and check a scheduler_perf config file.

    Raises :class:`PerfConfigError` for a missing or unparsable file, an
    unknown field, a duplicate name, a test case without workloads or ops or
    without an op that collects metrics, or a bad value."""
    path = Path(path)
    try:
        data = read_yaml(path, MAX_CONFIG_BYTES)
    except InvalidManifest as err:
        raise PerfConfigError(str(err)) from None
    if not isinstance(data, list) or not data:
        raise PerfConfigError(f"{path}: expected a non-empty list of test cases")
    base_dir = path.resolve().parent
    cases = []
    seen: set[str] = set()
    for position, raw in enumerate(data):
        case = _test_case(raw, base_dir, f"{path}: [{position}]")
        if case.name in seen:
            raise PerfConfigError(f"{path}: test case {case.name}: name is not unique")
        seen.add(case.name)
        cases.append(case)
    return cases


def _test_case(raw: Any, base_dir: Path, where: str) -> TestCase:
    if not isinstance(raw, dict):
        raise PerfConfigError(f"{where}: expected a test case mapping")
    fields = _canonical(raw, _TEST_CASE_FIELDS, where)
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise PerfConfigError(f"{where}: name: required")
    where = f"{where.rsplit(': ', 1)[0]}: {name}"
    template = fields.get("workloadTemplate")
    if not isinstance(template, list) or not template:
        raise PerfConfigError(f"{where}: no ops defined (workloadTemplate)")
    ops = tuple(_op(item, index, f"{where}: workloadTemplate[{index}]") for index, item in enumerate(template))
    raw_workloads = fields.get("workloads")
    if not isinstance(raw_workloads, list) or not raw_workloads:
        raise PerfConfigError(f"{where}: no workloads defined")
    default_selector = _metric_selector(fields.get("defaultThresholdMetricSelector"),
                                        f"{where}: defaultThresholdMetricSelector")
    workloads = []
    names: set[str] = set()
    for index, item in enumerate(raw_workloads):
        workload = _workload(item, f"{where}: workloads[{index}]", default_selector, base_dir.name)
        if workload.name in names:
            raise PerfConfigError(f"{where}: workload name {workload.name} is not unique")
        names.add(workload.name)
        workloads.append(workload)
    if not any(OPS[op.opcode].collects_metrics(op.fields) for op in ops):
        raise PerfConfigError(f"{where}: no op in the workload template collects metrics")

    def opt_path(key: str) -> Path | None:
        value = fields.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise PerfConfigError(f"{where}: {key}: expected a path")
        return (base_dir / value).resolve()

    return TestCase(
        name=name,
        ops=ops,
        workloads=tuple(workloads),
        base_dir=base_dir,
        feature_gates=_gates(fields.get("featureGates"), f"{where}: featureGates"),
        scheduler_config_path=opt_path("schedulerConfigPath"),
        default_pod_template_path=opt_path("defaultPodTemplatePath"),
        labels=_labels(fields.get("labels"), f"{where}: labels"),
        metrics_collector_config=fields.get("metricsCollectorConfig"),
        api_client=_api_client(fields, where),
    )


def _api_client(fields: dict[str, Any], where: str) -> tuple[float | None, int | None]:
    """``schedulerApiClientQPS`` (a positive number) and ``schedulerApiClientBurst`` (a positive integer), None
    where unset."""
    qps, burst = fields.get("schedulerApiClientQPS"), fields.get("schedulerApiClientBurst")
    if qps is not None and (isinstance(qps, bool) or not isinstance(qps, (int, float)) or qps <= 0):
        raise PerfConfigError(f"{where}: schedulerApiClientQPS: expected a positive number, got {qps!r}")
    if burst is not None and (isinstance(burst, bool) or not isinstance(burst, int) or burst <= 0):
        raise PerfConfigError(f"{where}: schedulerApiClientBurst: expected a positive integer, got {burst!r}")
    return (None if qps is None else float(qps)), burst


def _op(raw: Any, index: int, where: str) -> Op:
    if not isinstance(raw, dict):
        raise PerfConfigError(f"{where}: expected an op mapping")
    opcode = next((v for k, v in raw.items() if str(k).lower() == "opcode"), None)
    if not isinstance(opcode, str) or not opcode:
        raise PerfConfigError(f"{where}: opcode: required")
    op_class = OPS.get(opcode)
    if op_class is None:
        raise PerfConfigError(f"{where}: unknown opcode {opcode!r} (kubesched knows {', '.join(OPS)})")
    where = f"{where} ({opcode})"
    if not op_class.RUNS:
        # Not run by kubesched: keep the fields as given, the workload will be reported unsupported.
        return Op(index, opcode, {str(k): v for k, v in raw.items()})
    fields = _canonical(raw, ("opcode", *op_class.FIELDS), where)
    _check_fields(fields, where)
    if op_class.DEFAULT_COUNT is not None and "count" not in fields and "countParam" not in fields:
        fields["count"] = op_class.DEFAULT_COUNT
    op_class.validate(fields, where)
    for name, nested_opcode in op_class.NESTED.items():
        nested = _op(fields.get(name), -1, f"{where}: {name}")
        if nested.opcode != nested_opcode:
            raise PerfConfigError(f"{where}: {name}: invalid opcode {nested.opcode!r}; expected {nested_opcode!r}")
        fields[name] = nested
    return Op(index, opcode, fields)


def _check_fields(fields: dict[str, Any], where: str) -> None:
    """The parse-time checks every op shares, by field name (params are not resolved yet)."""
    for key, value in fields.items():
        if key.endswith("Param") and not (isinstance(value, str) and value.startswith("$")):
            raise PerfConfigError(f"{where}: {key}: expected a $parameter reference, got {value!r}")
        if key in ("count", "number", "deletePodsPerSecond", "intervalMilliseconds", "signatureBatchSize",
                   "maxClaimsPerNode", "updatePerSecond", "rootCount", "childrenPodGroupsPerCPG",
                   "childrenCompositePodGroupsPerCPG"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PerfConfigError(f"{where}: {key}: expected a non-negative integer, got {value!r}")
        if key in ("collectMetrics", "skipWaitToCompletion", "steadyState") and not isinstance(value, bool):
            raise PerfConfigError(f"{where}: {key}: expected true or false, got {value!r}")
        if key.endswith("Path") and not (isinstance(value, str) and value):
            raise PerfConfigError(f"{where}: {key}: expected a path, got {value!r}")
        if key in ("namespace", "name", "prefix", "mode", "stageRequirement", "namespacePrefix") \
                and not isinstance(value, str):
            raise PerfConfigError(f"{where}: {key}: expected a string, got {value!r}")
        if key in ("labelSelector", "templateParams") and not isinstance(value, dict):
            raise PerfConfigError(f"{where}: {key}: expected a mapping, got {value!r}")
        if key == "duration":
            _duration(value, f"{where}: duration")


def _workload(raw: Any, where: str, default_selector: str | None, topic: str) -> Workload:
    if not isinstance(raw, dict):
        raise PerfConfigError(f"{where}: expected a workload mapping")
    fields = _canonical(raw, _WORKLOAD_FIELDS, where)
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise PerfConfigError(f"{where}: name: required")
    where = f"{where.rsplit(': ', 1)[0]}: workload {name}"
    params = fields.get("params") or {}
    if not isinstance(params, dict):
        raise PerfConfigError(f"{where}: params: expected a mapping")
    threshold = _threshold(fields.get("threshold", 0) or 0, topic, where)
    selector = _metric_selector(fields.get("thresholdMetricSelector"), f"{where}: thresholdMetricSelector")
    return Workload(
        name=name,
        params={str(k): v for k, v in params.items()},
        labels=_labels(fields.get("labels"), f"{where}: labels"),
        threshold=float(threshold),
        threshold_metric=selector or default_selector or THROUGHPUT_METRIC,
        feature_gates=_gates(fields.get("featureGates"), f"{where}: featureGates"),
        api_client=_api_client(fields, where),
    )


def _threshold(raw: Any, topic: str, where: str) -> float:
    """A workload's ``threshold``: a number, or upstream's map from topic (the suite's folder: ``dra``,
    ``misc``, ...) to a number, of which the config's ``topic`` applies (0, none, when it is not there).
    Raises :class:`PerfConfigError` for anything else or a negative value."""
    values = raw if isinstance(raw, dict) else {topic: raw}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PerfConfigError(f"{where}: threshold: expected a number (pods/s) or a map of topic to number, "
                                  f"got {raw!r}")
        if value < 0:
            raise PerfConfigError(f"{where}: threshold: invalid {value} for topic {name!r}; should be non-negative")
    return float(values.get(topic, 0))


def _metric_selector(raw: Any, where: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise PerfConfigError(f"{where}: expected a mapping with name")
    fields = _canonical(raw, ("name", "labels", "expectLower"), where)
    if not isinstance(fields.get("name"), str) or not fields["name"]:
        raise PerfConfigError(f"{where}: name: required")
    return fields["name"]


def _labels(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(label, str) for label in raw):
        raise PerfConfigError(f"{where}: expected a list of labels")
    return tuple(raw)


def _gates(raw: Any, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, bool) for v in raw.values()):
        raise PerfConfigError(f"{where}: expected a mapping of feature name to true/false")
    return {str(k): v for k, v in raw.items()}


def _duration(value: Any, where: str) -> float:
    """A Go duration string ("10s", "500ms") -> seconds."""
    if not isinstance(value, str):
        raise PerfConfigError(f"{where}: expected a duration like \"10s\", got {value!r}")
    try:
        return parse_duration(value, where)
    except ConfigError as err:
        raise PerfConfigError(str(err)) from None


# --- params ----------------------------------------------------------------------------------


class Params:
    """A workload's params with upstream's lookups: ``count`` (a number, as
    an integer), ``string``, ``boolean``, ``any``; every lookup marks the
    param used, :meth:`unused` lists the others.  A missing or mistyped param
    is a :class:`PerfConfigError`."""

    def __init__(self, workload: Workload):
        self.values = workload.params
        self.used: set[str] = set()
        self.where = f"workload {workload.name}"

    def _get(self, ref: str) -> Any:
        """``$name``, or ``$name|default`` (newer configs): the default, read as a YAML scalar (``2`` a number,
        nothing an empty string), when the workload does not set ``name``."""
        name = ref[1:] if ref.startswith("$") else ref
        name, bar, default = name.partition("|")
        self.used.add(name)
        if name not in self.values:
            if bar:
                return _scalar(default) if default else ""
            raise PerfConfigError(f"{self.where}: parameter {name} is undefined")
        return self.values[name]

    def count(self, ref: str) -> int:
        """Param ``ref`` (``$name``) as an integer; raises PerfConfigError when undefined or not a number."""
        value = self._get(ref)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PerfConfigError(f"{self.where}: parameter {ref[1:]} has the wrong type: expected a number, "
                                  f"got {value!r}")
        return int(value)

    def string(self, ref: str) -> str:
        """Param ``ref`` (``$name``) as a string; raises PerfConfigError when undefined or not a string."""
        value = self._get(ref)
        if not isinstance(value, str):
            raise PerfConfigError(f"{self.where}: parameter {ref[1:]} has the wrong type: expected a string, "
                                  f"got {value!r}")
        return value

    def boolean(self, ref: str) -> bool:
        """Param ``ref`` (``$name``) as true/false; raises PerfConfigError when undefined or not a boolean."""
        value = self._get(ref)
        if not isinstance(value, bool):
            raise PerfConfigError(f"{self.where}: parameter {ref[1:]} has the wrong type: expected true/false, "
                                  f"got {value!r}")
        return value

    def any(self, ref: str) -> Any:
        """Param ``ref`` (``$name``) as given; raises PerfConfigError when undefined."""
        return self._get(ref)

    def unused(self) -> list[str]:
        """The params no lookup asked for, sorted."""
        return sorted(set(self.values) - self.used)


def _scalar(text: str) -> Any:
    """A ``$name|default`` default as YAML reads it (``2`` -> 2, ``true`` -> True, else the text)."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (int, float, bool, str)) else text


def resolve_op(op: Op, params: Params) -> dict[str, Any]:
    """The op's fields with every ``*Param`` replaced by its value from
    ``params`` (``countParam`` -> ``count``, ``durationParam`` -> ``duration``
    in seconds, ``steadyStateParam`` -> ``steadyState``,
    ``countMultiplierParam`` multiplies ``count``, ``signatureBatchSizeParam``
    -> ``signatureBatchSize``, ``maxClaimsPerNodeParam`` -> ``maxClaimsPerNode``, ``rootCountParam``,
    ``childrenPodGroupsPerCPGParam``, ``childrenCompositePodGroupsPerCPGParam`` -> the counts they name, ``ConditionTypeParam``,
    ``ConditionStatusParam`` and ``ScheduledParam`` -> ``conditionType``, ``conditionStatus``, ``scheduled``)
    and ``templateParams`` values ``$name``
    resolved; an op nested in a field (``createPodSets``' ``createPodsOp``) is
    resolved in turn.  ``duration`` becomes float seconds.  Raises
    :class:`PerfConfigError` for a missing or mistyped param or a value the op refuses."""
    fields = dict(op.fields)
    where = f"op {op.index} ({op.opcode})"
    if "countParam" in fields:
        fields["count"] = params.count(fields.pop("countParam"))
    if "countMultiplierParam" in fields:
        fields["count"] = fields.get("count", 0) * params.count(fields.pop("countMultiplierParam"))
    if "signatureBatchSizeParam" in fields:
        fields["signatureBatchSize"] = params.count(fields.pop("signatureBatchSizeParam"))
    for name in ("rootCount", "childrenPodGroupsPerCPG", "childrenCompositePodGroupsPerCPG"):
        if f"{name}Param" in fields:
            fields[name] = params.count(fields.pop(f"{name}Param"))
    if "maxClaimsPerNodeParam" in fields:
        fields["maxClaimsPerNode"] = params.count(fields.pop("maxClaimsPerNodeParam"))
    if "durationParam" in fields:
        fields["duration"] = _duration(params.string(fields.pop("durationParam")), f"{where}: durationParam")
    elif "duration" in fields:
        fields["duration"] = _duration(fields["duration"], f"{where}: duration")
    if "steadyStateParam" in fields:
        fields["steadyState"] = params.boolean(fields.pop("steadyStateParam"))
    if "ConditionTypeParam" in fields:
        fields["conditionType"] = params.string(fields.pop("ConditionTypeParam"))
    if "ConditionStatusParam" in fields:
        fields["conditionStatus"] = params.string(fields.pop("ConditionStatusParam"))
    if "ScheduledParam" in fields:
        fields["scheduled"] = params.boolean(fields.pop("ScheduledParam"))
    if "templateParams" in fields:
        fields["templateParams"] = {
            key: params.any(value) if isinstance(value, str) and value.startswith("$") else value
            for key, value in fields["templateParams"].items()
        }
    op_class = OPS[op.opcode]
    op_class.validate_resolved(fields, where)
    for name in op_class.NESTED:
        fields[name] = resolve_op(fields[name], params)
    if fields.get("count", 0) < 0:
        raise PerfConfigError(f"{where}: invalid count {fields['count']}")
    return fields
