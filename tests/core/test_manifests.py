"""Reading manifests: YAML and JSON, multi-document, kind: List, directories, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.core.api import from_manifest, to_manifest
from kubesched.core.api.core_v1 import Node, Pod
from kubesched.core.api.manifests import (
    InvalidManifest,
    dump_yaml,
    load_objects,
    load_sourced_objects,
)
from kubesched.core.api.scheduling_v1 import PriorityClass

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {zone: a}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  priorityClassName: high
  containers:
  - name: main
    image: nginx:1.27
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {memory: 128Mi}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_multi_document_yaml(tmp_path):
    file = write(tmp_path / "cluster.yaml", NODE + "---\n" + POD + "---\n")  # a trailing empty document is fine
    node, pod = load_objects([file])
    assert isinstance(node, Node) and isinstance(pod, Pod)
    assert node.metadata.name == "n1" and node.metadata.labels == {"zone": "a"}
    assert node.allocatable == {"cpu": 4000, "memory": 8 * 2**30, "pods": 110}
    assert node.spec.taints[0].key == "dedicated" and node.spec.taints[0].effect == "NoSchedule"
    assert pod.key == "shop/web"
    assert pod.spec.priority_class_name == "high"
    assert pod.spec.containers[0].resources.requests == {"cpu": 250, "memory": 64 * 2**20}
    assert pod.spec.containers[0].resources.limits == {"memory": 128 * 2**20}


def test_json_file_and_kind_list(tmp_path):
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            yaml.safe_load(NODE),
            {"apiVersion": "v1", "kind": "PodList", "items": [yaml.safe_load(POD)]},  # nested typed list
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
             "value": 1000, "globalDefault": False},
        ],
    }
    file = write(tmp_path / "all.json", json.dumps(doc))
    objects = load_objects([file])
    assert [type(o) for o in objects] == [Node, Pod, PriorityClass]
    assert objects[2].value == 1000


def test_directories_are_read_recursively_in_sorted_order(tmp_path):
    write(tmp_path / "b" / "pods.yml", POD)
    write(tmp_path / "a.yaml", NODE)
    write(tmp_path / "c" / "class.json", json.dumps(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 5}))
    write(tmp_path / "README.md", "not a manifest: [")
    write(tmp_path / "notes.txt", "- neither")
    sourced = load_sourced_objects([tmp_path])
    assert [(Path(f).name, type(o).__name__) for f, o in sourced] == [
        ("a.yaml", "Node"), ("pods.yml", "Pod"), ("class.json", "PriorityClass"),
    ]


def test_several_paths_keep_their_order(tmp_path):
    pods = write(tmp_path / "z-pods.yaml", POD)
    nodes = write(tmp_path / "a-nodes.yaml", NODE)
    assert [type(o) for o in load_objects([pods, nodes])] == [Pod, Node]


def error_for(tmp_path, name: str, text: str) -> InvalidManifest:
    file = write(tmp_path / name, text)
    with pytest.raises(InvalidManifest) as err:
        load_objects([file])
    return err.value


def test_error_names_file_object_and_field_path(tmp_path):
    err = error_for(tmp_path, "pods.yaml", NODE + "---\n" + POD.replace("250m", "lots"))
    file = str(tmp_path / "pods.yaml")
    assert str(err).startswith(f"{file}: Pod/web: spec.containers[0].resources.requests.cpu: ")
    assert "'lots'" in str(err)
    assert (err.file, err.obj, err.field) == (file, "Pod/web", "spec.containers[0].resources.requests.cpu")


@pytest.mark.parametrize(
    "text, obj, field, problem",
    [
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: hi}\n",
         "Pod/p", "spec.priority", "expected an integer, got string 'hi'"),
        ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taints: [{key: k, effect: Sometimes}]}\n",
         "Node/n", "spec.taints[0].effect", "unsupported taint effect 'Sometimes'"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: [a]}\n",
         "Pod/p", "metadata.labels", "expected a map"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    ports: [{containerPort: http}]\n",
         "Pod/p", "spec.containers[0].ports[0].containerPort", "expected an integer"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeSelector: {zone: a}, schedulingGates: {name: g}}\n",
         "Pod/p", "spec.schedulingGates", "expected a list"),
        ("apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n",
         "Pod/p", "apiVersion", "Pod is not served as 'v2'"),
        ("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: d}\n",
         "Ingress/d", "kind", "unknown kind 'Ingress'"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\n",
         "Pod/", "metadata.name", "name or generateName is required"),
        ("apiVersion: v1\nkind: [Pod]\nmetadata: {name: p}\n",
         "['Pod']/p", "kind", "expected a string, got ['Pod']"),
        ("apiVersion: {a: 1}\nkind: Pod\nmetadata: {name: p}\n",
         "Pod/p", "apiVersion", "expected a string, got {'a': 1}"),
    ],
)
def test_field_errors(tmp_path, text, obj, field, problem):
    err = error_for(tmp_path, "x.yaml", text)
    assert (err.obj, err.field) == (obj, field)
    assert problem in err.problem
    assert str(err) == f"{tmp_path / 'x.yaml'}: {obj}: {field}: {err.problem}"


def test_generate_name_objects_are_labelled_with_a_star(tmp_path):
    err = error_for(tmp_path, "x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: web-}\nspec: {priority: x}\n")
    assert err.obj == "Pod/web-*"


def test_unparsable_yaml_and_json(tmp_path):
    err = error_for(tmp_path, "broken.yaml", "kind: Pod\nmetadata: {name: [\n")
    assert str(err).startswith(f"{tmp_path / 'broken.yaml'}: cannot parse: ")
    err = error_for(tmp_path, "broken.json", '{"kind": "Pod",')
    assert str(err).startswith(f"{tmp_path / 'broken.json'}: cannot parse: ")


def test_a_document_that_is_not_an_object(tmp_path):
    err = error_for(tmp_path, "list.yaml", "- a\n- b\n")
    assert str(err) == f"{tmp_path / 'list.yaml'}: expected an object, got list"


def test_missing_path(tmp_path):
    with pytest.raises(InvalidManifest, match="no such file or directory"):
        load_objects([tmp_path / "nope.yaml"])


def test_unmodelled_fields_survive_a_round_trip(tmp_path):
    file = write(tmp_path / "pod.yaml", POD)
    (pod,) = load_objects([file])
    written = yaml.safe_load(dump_yaml([pod]))
    assert written["apiVersion"] == "v1" and written["kind"] == "Pod"
    container = written["spec"]["containers"][0]
    assert container["image"] == "nginx:1.27"
    assert container["resources"]["requests"] == {"cpu": "250m", "memory": "64Mi"}
    assert from_manifest(written) == pod


def test_to_manifest_writes_camel_case_and_omits_defaults():
    pod = from_manifest(yaml.safe_load(POD))
    doc = to_manifest(pod)
    assert list(doc)[:2] == ["apiVersion", "kind"]
    assert doc["spec"]["priorityClassName"] == "high"
    assert "nodeName" not in doc["spec"] and "status" not in doc


# --- output as the API server writes it ----------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


def _leaf_paths(doc, prefix=""):
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaf_paths(value, f"{prefix}.{key}")
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _leaf_paths(value, f"{prefix}[{index}]")
    else:
        yield prefix


def _modelled_documents():
    from kubesched.core.api import RESOURCES

    files = [*REPO.glob("examples/**/*.yaml"), *REPO.glob("data/dra-examples/**/*.yaml")]
    for path in sorted(files):
        text = path.read_text()
        if "{{" in text or "configs" in path.parts or "invalid" in path.parts:
            continue  # templates, scheduler configurations and the README's deliberately broken manifest
        for doc in yaml.safe_load_all(text):
            items = doc if isinstance(doc, list) else doc.get("items", []) if isinstance(doc, dict) and doc.get(
                "kind") == "List" else [doc]
            for item in items:
                if isinstance(item, dict) and item.get("kind") in RESOURCES:
                    yield path, item


def test_every_example_manifest_keeps_every_field_through_load_and_output():
    documents = list(_modelled_documents())
    assert len(documents) > 100
    lost = {}
    for path, doc in documents:
        missing = set(_leaf_paths(doc)) - set(_leaf_paths(to_manifest(from_manifest(doc))))
        if missing:
            lost[f"{path.relative_to(REPO)}: {doc['kind']}/{doc['metadata'].get('name')}"] = sorted(missing)[:3]
    assert not lost, lost


def test_defaults_that_are_not_zero_are_written_as_the_api_server_does():
    event = to_manifest(from_manifest({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "d"},
                                       "reason": "Scheduled"}))
    assert (event["type"], event["count"]) == ("Normal", 1)
    resource_slice = to_manifest(from_manifest({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "d.example.com", "nodeName": "n", "pool": {"name": "p", "resourceSliceCount": 1}}}))
    assert resource_slice["spec"]["pool"] == {"name": "p", "generation": 0, "resourceSliceCount": 1}
    # a sub-object that holds only fields kubesched does not model is still written
    container = to_manifest(from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]}}))["spec"]["containers"][0]
    assert container["resources"] == {"claims": [{"name": "gpu"}]}


BOMB = "".join(f"{name}: &{name} [{', '.join([prev] * 9)}]\n" for prev, name in
               zip(['"lol"'] + [f"*{c}" for c in "abcdefgh"], "abcdefghi"))


@pytest.mark.parametrize("name, text, problem", [
    ("list.yaml", "apiVersion: v1\nkind: List\nitems: 5\n", "List/: items: expected a list, got int"),
    ("deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 100 levels"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
    ("bomb.yaml", BOMB, "expands to 490329055 values through YAML aliases (at most 2000000)"),
    ("cycle.yaml", "apiVersion: v1\nkind: List\nitems: &a [*a]\n", "expected an object, got list"),
])
def test_hostile_manifests_are_refused_with_one_line(tmp_path, name, text, problem):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InvalidManifest) as refused:
        load_objects([path])
    assert problem in str(refused.value) and str(path) in str(refused.value) and "\n" not in str(refused.value)


def test_equal_pod_specs_are_decoded_once_and_shared_but_never_mistaken_for_an_equal_value():
    def pod(name, spec):
        return from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})

    def spec(priority):
        return {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}

    first, second = pod("a", spec(1)), pod("b", spec(1))
    assert first.spec is second.spec and first.spec.containers[0].resources.requests == {"cpu": 1000}
    assert pod("c", spec(1.0)).spec == first.spec  # 4.0 reads as the integer 4, as JSON does
    with pytest.raises(Exception, match="spec.priority: expected an integer, got boolean True"):
        pod("d", spec(True))  # True == 1 and hashes alike: still refused after 1 was read
    with pytest.raises(Exception, match="spec.priority: expected an integer, got string '1'"):
        pod("e", spec("1"))
    assert pod("f", spec(2)).spec.priority == 2 and pod("g", {**spec(1), "nodeName": None}).spec == first.spec


def test_resource_lists_read_alike_are_remembered_but_never_mistaken_for_an_equal_value():
    def node(allocatable):
        return from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                              "status": {"allocatable": allocatable}})

    first, second = node({"cpu": "4", "pods": 110}), node({"cpu": "4", "pods": 110})
    assert first.status.allocatable == second.status.allocatable == {"cpu": 4000, "pods": 110}
    assert first.status.allocatable is not second.status.allocatable  # each object owns its map
    with pytest.raises(Exception, match="status.allocatable.pods: quantities must match"):
        node({"cpu": "4", "pods": True})  # True == 1 and hashes alike: still refused after 1 was read
    node({"pods": 1})
    with pytest.raises(Exception, match="status.allocatable.pods: quantities must match"):
        node({"pods": True})
