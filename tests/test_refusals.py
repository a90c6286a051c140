"""What kube-apiserver refuses, `kubesched simulate` refuses: exit 2 and one line naming the file, the
object and the field, with upstream's message; hostile sizes are refused before they cost memory
(benchmarks/hostile_inputs.py measures seconds and peak RSS of each at full size)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.core import cel
from kubesched.core.cel import evaluator
from kubesched.core.cel.cost import estimate_cost
from kubesched.core.cel.parser import _parse

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def pod(name: str = "p", metadata: dict | None = None, **spec) -> dict:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata or {"name": name},
            "spec": {"containers": [container], **spec}}


def container(**fields) -> dict:
    doc = pod()
    doc["spec"]["containers"][0].update(fields)
    return doc


def GANG_GROUP(min_count: str) -> dict:  # noqa: N802 - reads as a constant in the table below
    """A PodGroup whose ``minCount`` is the YAML text ``min_count`` (a string or a number beyond int64)."""
    return yaml.safe_load(f"apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {{name: g}}\n"
                          f"spec: {{schedulingPolicy: {{gang: {{minCount: {min_count}}}}}}}\n")


def workload_tree(depth: int) -> dict:
    """A Workload whose composite template tree is ``depth`` levels deep."""
    node: dict = {"name": "leaf", "schedulingPolicy": {"gang": {"minCount": 1}}}
    for level in range(depth - 1):
        key = "podGroupTemplates" if level == 0 else "compositePodGroupTemplates"
        node = {"name": f"c{level}", "schedulingPolicy": {"gang": {"minGroupCount": 1}}, key: [node]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
            "spec": {"compositePodGroupTemplates": [node]}}


def device_class(expression: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def nested_all(depth: int, width: int) -> str:
    expression = "true"
    for level in range(depth):
        expression = f"{list(range(width))}.all(x{level}, {expression})"
    return expression


def nested(depth: int, make) -> str:
    expression = "true"
    for level in range(depth):
        expression = make(level, expression)
    return expression


def simulate(tmp_path: Path, *objects: dict, raw: bytes | None = None, config: str | None = None):
    manifest = tmp_path / "m.yaml"
    manifest.write_bytes(raw if raw is not None else yaml.dump_all([NODE, *objects], Dumper=yaml.CSafeDumper).encode())
    args = ["simulate", "-f", str(manifest)]
    if config is not None:
        (tmp_path / "c.yaml").write_text(config)
        args += ["--config", str(tmp_path / "c.yaml")]
    return CliRunner().invoke(app, args)


def refused_line(result) -> str:
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    return line


@pytest.mark.parametrize("obj, expected", [
    (pod(metadata={"name": "p", "annotations": {"big": "x" * (300 << 10)}}),
     'Pod/p: Pod "p" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'),
    (pod(metadata={"name": "p", "annotations": {"big": "x" * (3 << 20)}}),
     "Pod/p: Request entity too large: limit is 3145728"),
    ({**NODE, "metadata": {"name": "n2", "labels": {f"{'d' * 200}.example.com/label-{i}": "v" * 60
                                                    for i in range(13_000)}}},
     "Node/n2: Request entity too large: limit is 3145728"),
    (pod(tolerations=[{"key": f"{'d' * 150}.example.com/toleration-{i}", "operator": "Exists"}
                      for i in range(8_000)]),
     "Pod/p: etcdserver: request is too large"),
    (container(name=None), 'Pod "p" is invalid: spec.containers[0].name: Required value'),
    (container(ports=[{"containerPort": 80, "hostPort": 99999}]),
     "spec.containers[0].ports[0].hostPort: Invalid value: 99999: must be between 1 and 65535, inclusive"),
    (pod(metadata={"name": "p", "labels": {"app": 5}}), "Pod/p: metadata.labels.app: expected a string, got number 5"),
    (pod(metadata={"name": 5}), "Pod/5: metadata.name: expected a string, got number 5"),
    (pod(nodeSelector={"zone": 1}), "Pod/p: spec.nodeSelector.zone: expected a string, got number 1"),
    (container(resources={"requests": {"example.com/foo": "500m"}, "limits": {"example.com/foo": "500m"}}),
     'spec.containers[0].resources.limits.example.com/foo: Invalid value: "500m": must be an integer'),
    (container(resources={"requests": {"cpu": "1e3000000000"}}),
     "spec.containers[0].resources.requests.cpu: unable to parse quantity's suffix"),
    ({**NODE, "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "-1"}}},
     'Node "n2" is invalid: status.allocatable[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    ({**NODE, "metadata": {"name": "n2"}, "spec": {"taints": [{"effect": "NoSchedule"}]}},
     'Node "n2" is invalid: spec.taints[0].key: Invalid value: "": name part must be non-empty'),
    ({**NODE, "metadata": {"name": "n2"}, "spec": {"taints": [{"key": "a"}]}},
     "Node/n2: spec.taints[0].effect: unsupported taint effect ''"),
    (pod(nodeSelectr={"zone": "a"}, containers=[{"name": "c", "imag": "x"}]),
     'Pod/p: strict decoding error: unknown field "spec.nodeSelectr", unknown field "spec.containers[0].imag"'),
    (pod(metadata={"name": "evil\x1b[2Jname"}),
     'Pod/evil\\x1b[2Jname: Pod "evil\\x1b[2Jname" is invalid: metadata.name: Invalid value: "evil\\x1b[2Jname"'),
    (container(resources={"requests": {"cpu": "1e1000"}}),
     'Pod/p: spec.containers[0].resources.requests.cpu: Invalid value: "1e1000": beyond upstream\'s int64 bound'),
    ({**NODE, "metadata": {"name": "n2"}, "status": {"allocatable": {"memory": 2**63}}},
     'Node/n2: status.allocatable.memory: Invalid value: "9223372036854775808": beyond upstream\'s int64 bound'),
    (GANG_GROUP("9223372036854775808"),
     "PodGroup/g: spec.schedulingPolicy.gang.minCount: cannot unmarshal number 9223372036854775808 into an int32"),
    (GANG_GROUP('"4"'), "PodGroup/g: spec.schedulingPolicy.gang.minCount: expected an integer, got string '4'"),
    (pod(metadata={"name": "p", "namespace": "nowhere"}),
     'Pod/p: metadata.namespace: namespaces "nowhere" not found'),
    (workload_tree(20), "Workload/w: Workload \"w\" is invalid: spec" + ".compositePodGroupTemplates[0]" * 4
     + ".compositePodGroupTemplates: Too many: the template tree is deeper than 4 levels: must have at most 4"),
], ids=["annotations-over-256KiB", "request-over-3MiB", "node-labels-over-3MiB", "pod-over-etcd-1.5MiB",
        "container-without-name", "hostport", "int-label-value", "int-name", "int-node-selector",
        "fraction-of-extended-resource", "exponent-beyond-int32", "negative-allocatable", "taint-without-key",
        "taint-without-effect", "unknown-fields", "control-characters", "cpu-1e1000", "node-memory-2^63",
        "minCount-beyond-int32", "minCount-string", "namespace-not-found", "workload-tree-20-deep"])
def test_what_the_api_server_refuses_is_refused_in_one_line_naming_file_object_and_field(tmp_path, obj, expected):
    line = refused_line(simulate(tmp_path, obj))
    assert line.startswith(f"{tmp_path / 'm.yaml'}: ") and expected in line
    assert "\x1b" not in line


def test_what_the_api_server_accepts_is_accepted_as_it_does(tmp_path):
    """A quantity up to the int64 bound (the scheduler's int64 view: Insufficient cpu), a namespace on a
    cluster-scoped object is cleared, a namespaced object without one goes to "default" (kubectl's)."""
    huge = container(resources={"requests": {"cpu": "9e15", "memory": str(2**63 - 2)}})
    node = {**NODE, "metadata": {"name": "n2", "namespace": "default"}}
    result = CliRunner().invoke(app, ["simulate", "-f", str(_write(tmp_path, NODE, huge, node)), "-o", "json"])
    assert result.exit_code == 0, result.output
    items = {item["metadata"]["name"]: item for item in yaml.safe_load(result.output)["items"]}
    assert "namespace" not in items["n2"]["metadata"] and items["p"]["metadata"]["namespace"] == "default"
    scheduled = next(c for c in items["p"]["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False" and "Insufficient cpu" in scheduled["message"]


def _write(tmp_path: Path, *objects: dict) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_files_in_other_encodings_are_read_or_refused_naming_the_encoding(tmp_path):
    text = yaml.safe_dump_all([NODE, pod()])
    assert simulate(tmp_path, raw=text.encode("utf-16")).exit_code == 0  # YAML allows UTF-16 with a BOM
    line = refused_line(simulate(tmp_path, raw=text.encode("utf-16-le")))
    assert "UTF-16 or UTF-32 without a byte order mark" in line
    line = refused_line(simulate(tmp_path, raw=text.encode() + b"\xff"))
    assert f"{tmp_path / 'm.yaml'}: cannot read: not UTF-8 text: byte 0xff at offset {len(text.encode())}" in line


@pytest.mark.parametrize("config, expected", [
    (CONFIG_HEAD + "parallelism: -4\n",
     "c.yaml: parallelism: Invalid value: -4: should be an integer value greater than zero"),
    (CONFIG_HEAD + "profiles: " + "[" * 200 + "]" * 200 + "\n", "c.yaml: nested deeper than 100 levels (201)"),
    (CONFIG_HEAD + "profiles: [\n", "c.yaml: cannot parse: while parsing a flow node did not find expected node content, line 4, column 1"),
    (CONFIG_HEAD + "profiles:\n- schedulerName: default-scheduler\n  plugins:\n    score:\n"
                   "      enabled: [{name: NoSuchPlugin}]\n",
     "c.yaml: profile 'default-scheduler': plugin 'NoSuchPlugin' does not exist"),
    ('a: &a ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(7)),
     "c.yaml: the document expands to 123456789 values through YAML aliases (at most 2000000)"),
], ids=["parallelism", "nesting", "yaml-syntax", "unknown-plugin", "alias-bomb"])
def test_a_bad_configuration_is_refused_in_one_line_naming_the_file(tmp_path, config, expected):
    line = refused_line(simulate(tmp_path, pod(), config=config))
    assert line.startswith(str(tmp_path)) and expected in line


def plugin_config(entry: str) -> str:
    return CONFIG_HEAD + "profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - " + entry + "\n"


@pytest.mark.parametrize("entry, expected", [
    ("{name: NodeResourcesFit, args: {scoringStratgy: {type: MostAllocated}}}",
     "pluginConfig NodeResourcesFit: args.scoringStratgy: unknown field"),
    ("{name: NodeAffinity, args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
     "{nodeSelectorTerms: [{matchExpresions: [{key: a, operator: Exists}]}]}}}}",
     "pluginConfig NodeAffinity: args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpresions: unknown field"),
    ("{name: PodTopologySpread, args: {defaultingType: List, defaultConstraints: "
     "[{maxSkew: 1, topologyKey: zone, whenUnsatisfable: DoNotSchedule}]}}",
     "pluginConfig PodTopologySpread: args.defaultConstraints[0].whenUnsatisfable: unknown field"),
    ("{name: DynamicResources, args: {filterTimeOut: 5s}}",
     "pluginConfig DynamicResources: args.filterTimeOut: unknown field"),
], ids=["fit", "nested-api-type", "list-item", "dra"])
def test_a_misspelled_plugin_config_field_is_refused_in_one_line_naming_plugin_and_field(tmp_path, entry, expected):
    """kube-scheduler's strict decoding of pluginConfig args, nested objects included."""
    line = refused_line(simulate(tmp_path, pod(), config=plugin_config(entry)))
    assert line == f"{tmp_path / 'c.yaml'}: profile 'default-scheduler': {expected}"


@pytest.mark.parametrize("expression, expected", [
    (nested_all(5, 16), "Forbidden: too complex, exceeds cost limit (estimated worst case 1,258,290"),
    (nested(100, lambda level, inner: f"cel.bind(v{level}, {level}, {inner})"),
     "expression nested too deeply: its syntax tree is 1010 levels deep, this engine evaluates at most 250"),
    (nested(60, lambda level, inner: f"[1].all(x{level}, {inner})"),
     "expression nested too deeply: its syntax tree is 6"),
], ids=["nested-all-over-16", "cel-bind-100-deep", "60-nested-all"])
def test_a_selector_that_could_never_be_evaluated_is_refused_at_load(tmp_path, expression, expected):
    line = refused_line(simulate(tmp_path, device_class(expression)))
    assert "DeviceClass/gpu: spec.selectors[0].cel.expression: " in line and expected in line
    assert len(line) < 400 and f"({len(expression)} characters)" in line or "Forbidden" in line


@pytest.mark.parametrize("expression", [
    nested_all(3, 16), nested(24, lambda level, inner: f"cel.bind(v{level}, {level}, {inner})"),
    nested(22, lambda level, inner: f"[1].all(x{level}, {inner})"), "cel.bind(s, 'ab' + 'cd', s + s == 'abcdabcd')",
    "[1, 2, 3].map(x, x * 2).filter(y, y > 2).size() == 2 && 'a,b'.split(',').join('-') == 'a-b'",
])
def test_every_accepted_selector_evaluates_within_the_budget_its_estimate_promised(expression):
    """The static estimate and the runtime count in the same units: the estimate is never below what an
    evaluation costs, so an accepted selector never fails with the cost limit or the nesting limit."""
    assert estimate_cost(_parse(nested_all(5, 15))) <= cel.MAX_COST < estimate_cost(_parse(nested_all(5, 16)))
    selector = cel.compile(expression)
    run = evaluator._Evaluator(selector._ast, selector._activation)
    run.budget = evaluator._Budget(10**12)
    run.evaluate({"device": None})
    spent = 10**12 - run.budget.left
    assert spent <= estimate_cost(_parse(expression)) <= cel.MAX_COST


def test_a_long_expression_is_shown_cut_with_its_length(tmp_path):
    expression = " || ".join(["device.driver == 'x'"] * 400) + " ||"
    line = refused_line(simulate(tmp_path, device_class(expression)))
    assert f"... ({len(expression)} characters)\": compilation failed: ERROR: <input>:1:" in line
    assert len(line) < 400


def _special(tmp_path: Path, kind: str) -> Path:
    import os

    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "fifo":  # nobody writes to it: opening it for reading would block
        os.mkfifo(tmp_path / "fifo.yaml")
        return tmp_path / "fifo.yaml"
    (tmp_path / "dir.yaml").mkdir()
    return tmp_path / "dir.yaml"


@pytest.mark.parametrize("kind, expected", [
    ("dev-zero", "/dev/zero: cannot read: not a regular file (a character device)"),
    ("fifo", "fifo.yaml: cannot read: not a regular file (a FIFO)"),
    ("directory", "dir.yaml: cannot read: not a regular file (a directory)"),
])
def test_a_file_that_is_not_a_regular_file_is_refused_at_once_as_configuration_manifest_or_compare_side(
        tmp_path, kind, expected):
    path = _special(tmp_path, kind)
    assert expected in refused_line(CliRunner().invoke(app, ["config", "validate", str(path)]))
    if kind != "directory":  # a directory of manifests is read as such
        assert expected in refused_line(CliRunner().invoke(app, ["simulate", "-f", str(path)]))
    cluster = Path(__file__).resolve().parents[1] / "examples/cluster"
    compared = CliRunner().invoke(app, ["compare", "-f", str(cluster), "--config", f"{path}:default-scheduler",
                                        "--config", str(cluster.parents[1] / "configs/bin-packing.yaml")])
    assert expected in refused_line(compared)


@pytest.mark.parametrize("nesting", [
    "profiles: " + "[" * 100_000 + "]" * 100_000 + "\n",  # PyYAML's C loader crashes building it
    "profiles:\n" + "- " * 100_000 + "x\n",
    "profiles: " + "{a: " * 100_000 + "}" * 100_000 + "\n",
], ids=["flow-lists", "block-lists", "flow-mappings"])
def test_a_configuration_nested_100000_deep_is_refused_in_one_line(tmp_path, nesting):
    (tmp_path / "c.yaml").write_text(CONFIG_HEAD + nesting)
    line = refused_line(CliRunner().invoke(app, ["config", "validate", str(tmp_path / "c.yaml")]))
    assert line == f"{tmp_path / 'c.yaml'}: nested deeper than 100 levels (more than 1000)"
    cluster = Path(__file__).resolve().parents[1] / "examples/cluster"
    compared = CliRunner().invoke(app, ["compare", "-f", str(cluster), "--config", f"{tmp_path / 'c.yaml'}:x",
                                        "--config", f"{tmp_path / 'c.yaml'}"])
    assert refused_line(compared) == line
