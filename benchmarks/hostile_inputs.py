#!/usr/bin/env python3
"""Hostile inputs to `kubesched simulate`: each must be refused with exit 2 and
one line naming the file, the object and the field, in under 5 s (at machine
factor 1.0) and 300 MB of peak RSS; the large manifests must finish with
progress output.

    python benchmarks/hostile_inputs.py               # every case, a table
    python benchmarks/hostile_inputs.py --case cel    # the cases whose name contains "cel"
    python benchmarks/hostile_inputs.py --large       # also the 10 MB manifest (65,000 pods, one node)

Each case runs `kubesched simulate` in its own process; the peak RSS is that
process's VmHWM as it exits (a fresh count at exec, unlike ``ru_maxrss``, which
keeps the forking parent's), the seconds are wall-clock.  A case passes when
the exit status, the line count and the expected words match and both bounds
hold.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml
from machine_speed import factor_note, machine_factor

SECONDS = 5.0  # at factor 1.0
MEGABYTES = 300

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def pod(name: str = "p", **spec_changes) -> dict:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
    spec = {"containers": [container], **spec_changes}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def with_container(**fields) -> dict:
    doc = pod()
    doc["spec"]["containers"][0].update(fields)
    return doc


def docs(*objects: dict) -> str:
    return yaml.safe_dump_all([NODE, *objects], sort_keys=False)


def nested_all(depth: int, width: int) -> str:
    items = "[" + ", ".join(str(i) for i in range(width)) + "]"
    expr = "true"
    for level in range(depth):
        expr = f"{items}.all(x{level}, {expr})"
    return expr


def selector_class(expression: str) -> str:
    return yaml.safe_dump({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                           "spec": {"selectors": [{"cel": {"expression": expression}}]}})


def cel_bind(depth: int) -> str:
    expr = "true"
    for level in range(depth):
        expr = f"cel.bind(v{level}, {level}, {expr})"
    return expr


def nested_one_all(depth: int) -> str:
    expr = "true"
    for level in range(depth):
        expr = f"[1].all(x{level}, {expr})"
    return expr


def workload_tree(depth: int) -> dict:
    """A Workload whose composite template tree is ``depth`` levels deep (upstream's limit is 4)."""
    node: dict = {"name": "leaf", "schedulingPolicy": {"gang": {"minCount": 1}}}
    for level in range(depth - 1):
        key = "podGroupTemplates" if level == 0 else "compositePodGroupTemplates"
        node = {"name": f"c{level}", "schedulingPolicy": {"gang": {"minGroupCount": 1}}, key: [node]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "default"}, "spec": {"compositePodGroupTemplates": [node]}}


def alias_bomb() -> str:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 9):
        prev, cur = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{cur}: &{cur} [" + ",".join(f"*{prev}" for _ in range(10)) + "]")
    return "\n".join(lines) + "\n"


def many_pods(count: int) -> str:
    """``count`` small pods on one node (the issue's 10 MB manifest: 65,000 pods)."""
    head = yaml.safe_dump(NODE, sort_keys=False)
    body = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: default\n  labels: {{app: web}}\n"
        f"spec:\n  containers:\n  - name: c\n    image: registry.example.com/web:1.0\n"
        f"    resources:\n      requests: {{cpu: 100m, memory: 128Mi}}\n" for i in range(count))
    return head + body


CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

#: name -> (files {name: text or bytes}, simulate arguments with {dir}, words the one line must hold).
#: Not here, as kube-apiserver accepts them: a namespace on a cluster-scoped object
#: (cleared), a namespaced object without one (kubectl's default namespace), UTF-16 with a byte order mark.
Case = tuple[dict[str, str | bytes], list[str], list[str]]
CASES: dict[str, Callable[[], Case]] = {
    "annotation-50MiB": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": "p", "annotations": {"big": "x" * (50 << 20)}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "Request entity too large"]),
    "annotations-300KiB": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": "p", "annotations": {"big": "x" * (300 << 10)}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "metadata.annotations", "262144"]),
    "node-100k-labels": lambda: (
        {"m.yaml": docs({**NODE, "metadata": {"name": "n2", "labels": {
            f"example.com/label-{i}": f"value-{i}" for i in range(100_000)}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Node/n2", "Request entity too large"]),
    "pod-100k-tolerations": lambda: (
        {"m.yaml": docs(pod(tolerations=[{"key": f"k{i}", "operator": "Exists"} for i in range(100_000)]))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "Request entity too large"]),
    "container-without-name": lambda: (
        {"m.yaml": docs(with_container(name=None))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "spec.containers[0].name", "Required value"]),
    "hostport-99999": lambda: (
        {"m.yaml": docs(with_container(ports=[{"containerPort": 80, "hostPort": 99999}]))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "spec.containers[0].ports[0].hostPort", "65535"]),
    "int-label-value": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": "p", "labels": {"app": 5}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "metadata.labels", "string"]),
    "int-name": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": 5}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "metadata.name", "string"]),
    "int-node-selector": lambda: (
        {"m.yaml": docs(pod(nodeSelector={"zone": 1}))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "spec.nodeSelector", "string"]),
    "500m-extended-resource": lambda: (
        {"m.yaml": docs(with_container(resources={"requests": {"example.com/foo": "500m"},
                                                  "limits": {"example.com/foo": "500m"}}))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "example.com/foo", "must be an integer"]),
    "negative-allocatable": lambda: (
        {"m.yaml": docs({**NODE, "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "-1"}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Node/n2", "status.allocatable", "greater than or equal to 0"]),
    "taint-without-key": lambda: (
        {"m.yaml": docs({**NODE, "metadata": {"name": "n2"}, "spec": {"taints": [{"effect": "NoSchedule"}]}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Node/n2", "spec.taints[0].key"]),
    "unknown-field": lambda: (
        {"m.yaml": docs(pod(nodeSelectr={"zone": "a"}))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "unknown field", "spec.nodeSelectr"]),
    "config-parallelism-negative": lambda: (
        {"m.yaml": docs(), "c.yaml": CONFIG_HEAD + "parallelism: -4\n"},
        ["-f", "{dir}/m.yaml", "--config", "{dir}/c.yaml"], ["c.yaml", "parallelism"]),
    "cel-nested-all-15": lambda: (
        {"m.yaml": docs(), "c.yaml": selector_class(nested_all(6, 15))},
        ["-f", "{dir}/m.yaml", "-f", "{dir}/c.yaml"], ["c.yaml", "DeviceClass/gpu", "spec.selectors[0].cel.expression",
                                                       "cost"]),
    "cel-bind-100": lambda: (
        {"m.yaml": docs(), "c.yaml": selector_class(cel_bind(100))},
        ["-f", "{dir}/m.yaml", "-f", "{dir}/c.yaml"], ["c.yaml", "DeviceClass/gpu", "spec.selectors[0].cel.expression",
                                                       "nested"]),
    "cel-one-all-60": lambda: (
        {"m.yaml": docs(), "c.yaml": selector_class(nested_one_all(60))},
        ["-f", "{dir}/m.yaml", "-f", "{dir}/c.yaml"], ["c.yaml", "DeviceClass/gpu", "spec.selectors[0].cel.expression",
                                                       "nested"]),
    "cel-long-expression": lambda: (
        {"m.yaml": docs(), "c.yaml": selector_class(" || ".join(["device.driver == 'x'"] * 400) + " ||")},
        ["-f", "{dir}/m.yaml", "-f", "{dir}/c.yaml"], ["c.yaml", "DeviceClass/gpu", "characters"]),
    "config-deep-nesting": lambda: (
        {"m.yaml": docs(), "c.yaml": CONFIG_HEAD + "profiles: " + "[" * 5000 + "]" * 5000 + "\n"},
        ["-f", "{dir}/m.yaml", "--config", "{dir}/c.yaml"], ["c.yaml", "nested"]),
    "config-bad-plugin": lambda: (
        {"m.yaml": docs(), "c.yaml": CONFIG_HEAD + "profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
                                                   "    score:\n      enabled: [{name: NoSuchPlugin}]\n"},
        ["-f", "{dir}/m.yaml", "--config", "{dir}/c.yaml"], ["c.yaml", "NoSuchPlugin"]),
    "alias-bomb": lambda: (
        {"m.yaml": alias_bomb()}, ["-f", "{dir}/m.yaml"], ["m.yaml", "aliases"]),
    "control-character-name": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": "evil\x1b[2Jname"}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "metadata.name", "\\x1b"]),
    "gang-minCount-string": lambda: (
        {"m.yaml": docs() + "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, "
                            "namespace: default}\nspec: {schedulingPolicy: {gang: {minCount: \"4\"}}}\n"},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "PodGroup/g", "gang.minCount", "string"]),
    "gang-minCount-2^63": lambda: (
        {"m.yaml": docs() + "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, "
                            "namespace: default}\nspec: {schedulingPolicy: {gang: {minCount: 9223372036854775808}}}\n"},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "PodGroup/g", "gang.minCount", "int32"]),
    "workload-tree-20-deep": lambda: (
        {"m.yaml": docs(workload_tree(20))}, ["-f", "{dir}/m.yaml"], ["m.yaml", "Workload/w", "deeper than 4"]),
    "namespace-missing": lambda: (
        {"m.yaml": docs({**pod(), "metadata": {"name": "p", "namespace": "nowhere"}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "metadata.namespace", "not found"]),
    "cpu-1e1000": lambda: (
        {"m.yaml": docs(with_container(resources={"requests": {"cpu": "1e1000"}}))},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Pod/p", "requests.cpu", "int64"]),
    "node-memory-2^63": lambda: (
        {"m.yaml": docs({**NODE, "metadata": {"name": "n2"}, "status": {"allocatable": {"memory": 2**63}}})},
        ["-f", "{dir}/m.yaml"], ["m.yaml", "Node/n2", "allocatable.memory", "int64"]),
    "utf16-without-bom": lambda: (
        {"m.yaml": docs(pod()).encode("utf-16-le")}, ["-f", "{dir}/m.yaml"], ["m.yaml", "UTF-16"]),
    "invalid-utf8": lambda: (
        {"m.yaml": docs(pod()).encode() + b"\xff\xfe"}, ["-f", "{dir}/m.yaml"], ["m.yaml", "UTF-8", "0xff"]),
}
LARGE = {"10MB-65000-pods": lambda: ({"m.yaml": many_pods(65_000)}, ["-f", "{dir}/m.yaml", "-o", "json"], [])}


#: runs the CLI and writes its peak RSS (kB, /proc/self/status VmHWM) to the file named first
WRAPPER = """
import atexit, runpy, sys
path = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status:
        hwm = next(line.split()[1] for line in status if line.startswith("VmHWM"))
    with open(path, "w") as out:
        out.write(hwm)
atexit.register(peak)
sys.argv[0] = "kubesched"
runpy.run_module("kubesched.cli", run_name="__main__", alter_sys=True)
"""


def run_case(name: str, case: Case, scratch: Path, timeout: float) -> dict:
    files, args, words = case
    folder = scratch / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    peak = folder / "peak-kb"
    argv = [sys.executable, "-c", WRAPPER, str(peak), "simulate", *(a.replace("{dir}", str(folder)) for a in args)]
    started = time.monotonic()
    with open(folder / "stdout", "wb") as out, open(folder / "stderr", "wb") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
    seconds = time.monotonic() - started
    stderr = (folder / "stderr").read_text(errors="replace")
    lines = [line for line in stderr.splitlines() if line.strip()]
    mb = int(peak.read_text()) / 1024 if peak.exists() else float("nan")
    return {"case": name, "exit": code, "seconds": seconds, "mb": mb, "lines": len(lines),
            "missing": [w for w in words if w not in stderr], "message": lines[-1] if lines else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", default="", help="only the cases whose name contains this")
    parser.add_argument("--large", action="store_true", help="also the 10 MB manifest")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    factor = machine_factor(3)
    print(factor_note(factor))
    cases = {**CASES, **(LARGE if args.large else {})}
    failed = 0
    print(f"{'case':28} {'exit':>4} {'s':>6} {'MB':>6} {'lines':>5}  verdict  message")
    with tempfile.TemporaryDirectory() as scratch:
        for name, make in cases.items():
            if args.case not in name:
                continue
            row = run_case(name, make(), Path(scratch), args.timeout)
            large = name in LARGE
            ok = (row["exit"] == (0 if large else 2) and (large or row["lines"] == 1) and not row["missing"]
                  and (large or (row["seconds"] <= SECONDS * factor and row["mb"] <= MEGABYTES)))
            failed += not ok
            message = row["message"] if len(row["message"]) < 150 else row["message"][:147] + "..."
            print(f"{name:28} {row['exit']:>4} {row['seconds']:>6.2f} {row['mb']:>6.0f} {row['lines']:>5}  "
                  f"{'ok' if ok else 'FAIL':7}  {message!r}" + (f" missing {row['missing']}" if row["missing"] else ""))
    print(f"bounds: exit 2, one line, under {SECONDS * factor:.1f} s here ({SECONDS} s at factor 1.0) "
          f"and {MEGABYTES} MB; {failed} case(s) fail")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
