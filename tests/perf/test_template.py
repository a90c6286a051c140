"""The Go text/template subset, on upstream's real templates."""

from __future__ import annotations

import pytest
import yaml

from kubesched.perf.template import Template, TemplateError, expand, format_value, load_template

from .helpers import DATA


def render(relative: str, **data) -> dict:
    return yaml.safe_load(load_template(DATA / relative).expand({"Count": 1, **data}))


@pytest.mark.parametrize("path", sorted(
    str(p.relative_to(DATA)) for p in DATA.rglob("*.yaml")
    if "performance-config" not in p.name and "scheduler-config" not in p.name
))
def test_every_shipped_template_expands_to_one_yaml_object(path):
    # the templateParams the workload-aware configs pass (podgroup/, workload_preemption/, default_preemption/),
    # and what createCompositePodGroups sets (cpg/)
    doc = render(path, Index=3, podsPerGroup=3, minCount=3, cpuRequest="100m", nodesCount=2, podsCount=10,
                 Level=2, ParentLevel=1, ParentIndex=1, ChildrenCount=2, parentLevel=1, childrenPodGroupsPerCPG=2,
                 priority=1000, PodGroupCount=2)
    assert isinstance(doc, dict) and "kind" in doc


def test_a_composite_pod_group_names_its_parent_one_level_up():
    doc = render("cpg/templates/composite-podgroup.yaml", Index=3, Level=2, ParentLevel=1, ParentIndex=1,
                 ChildrenCount=4, gang=True, priority=1000)
    assert doc["metadata"]["name"] == "cpg-l2-3" and doc["spec"]["parentCompositePodGroupName"] == "cpg-l1-1"
    assert doc["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 4}} and doc["spec"]["priority"] == 1000
    root = render("cpg/templates/composite-podgroup.yaml", Index=0, Level=1, ParentLevel=0, ChildrenCount=4)
    assert "parentCompositePodGroupName" not in root["spec"] and root["spec"]["schedulingPolicy"] == {"basic": {}}


def test_the_older_lower_case_mod_and_div_with_spaces_inside_the_braces():
    doc = render("event_handling/templates/nodeupdate-pod-tainttoleration.yaml", Index=27)
    assert doc["spec"]["tolerations"][0]["key"] == "toleration-2"
    doc = render("event_handling/templates/poddelete-pod-blocker-topology-ports-resources.yaml", Index=27)
    assert doc["spec"]["containers"][0]["ports"][0]["hostPort"] == 83


def test_divide_int_shares_one_claim_between_five_pods():
    names = [render("dra/templates/pod-with-claim-ref.yaml", Index=i)["spec"]["resourceClaims"][0]
             ["resourceClaimName"] for i in (0, 4, 5, 12)]
    assert names == ["test-claim-0", "test-claim-0", "test-claim-1", "test-claim-2"]


def test_extended_resource_name_uses_the_index():
    doc = render("misc/templates/pod-with-extended-resource.yaml", Index=4)
    assert doc["spec"]["containers"][0]["resources"]["requests"] == {"foo.com/bar-4": 1}


def test_variables_or_int_json_and_range_over_an_integer():
    default = render("dra/templates/resourceclaimtemplate.yaml", Index=0)
    devices = default["spec"]["spec"]["devices"]
    assert devices["constraints"] is None
    assert [r["name"] for r in devices["requests"]] == ["req-0"]
    assert devices["requests"][0]["exactly"]["selectors"] is None

    selectors = [{"cel": {"expression": 'device.driver == "x"'}}]
    custom = render("dra/templates/resourceclaimtemplate.yaml", Index=0, numRequests=3.0, selectors=selectors)
    requests = custom["spec"]["spec"]["devices"]["requests"]
    assert [r["name"] for r in requests] == ["req-0", "req-1", "req-2"]
    assert requests[2]["exactly"]["selectors"] == selectors


def test_range_over_piped_int_with_default():
    doc = render("dra/templates/resourceslice-basic-devices.yaml", Index=2)
    devices = doc["spec"]["devices"]
    assert len(devices) == 10 and devices[9]["name"] == "basic-device-9"
    assert devices[3]["attributes"]["resource.k8s.io/pciRoot"]["string"] == "3"
    assert doc["spec"]["nodeName"] == "scheduler-perf-dra-2"
    assert len(render("dra/templates/resourceslice-basic-devices.yaml", Index=0, numDevices=2)["spec"]["devices"]) == 2


def test_if_else_and_add_int():
    plain = render("default_preemption/templates/gang-pod.yaml", Index=7)
    assert plain["spec"]["priority"] == 1000 and "schedulingGroup" not in plain["spec"]
    gang = render("default_preemption/templates/gang-pod.yaml", Index=7, priority=5.0, podsPerGroup=3,
                  disruptionMode="all", cpuRequest="300m")
    assert gang["spec"]["priority"] == 5
    assert gang["spec"]["schedulingGroup"]["podGroupName"] == "gang-2"
    assert gang["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "300m"


def test_static_template_is_returned_verbatim():
    template = load_template(DATA / "templates/pod-default.yaml")
    assert template.static
    assert template.expand({"Index": 1}) == (DATA / "templates/pod-default.yaml").read_text()


def test_printing_follows_go():
    assert format_value(5.0) == "5" and format_value(2.5) == "2.5" and format_value(True) == "true"
    assert expand("{{AddInt .Index 1}}/{{.Count}}/{{SubtractInt 9 .Index}}/{{MultiplyInt 2 3}}/{{Mod 7 3}}",
                  {"Index": 4, "Count": 10}) == "5/10/5/6/1"
    assert expand("a {{- .x -}} b", {"x": 1}) == "a1b"
    assert expand('{{if eq .x "y"}}yes{{else if .z}}z{{else}}no{{end}}', {"x": "n", "z": 0}) == "no"
    assert expand("{{/* a comment */}}ok", {}) == "ok"
    # with: the body sees the value as ., only when it is not empty
    assert expand("{{with .p}}priority: {{.}}{{else}}none{{end}}", {"p": 1000}) == "priority: 1000"
    assert expand("{{with .p}}priority: {{.}}{{else}}none{{end}}", {"p": 0}) == "none"
    assert expand("{{with .missing}}x{{end}}ok", {}) == "ok"
    # range naming its element, or its index and element
    assert expand("{{range $i := 3}}[{{$i}}]{{end}}", {}) == "[0][1][2]"
    assert expand("{{range $k, $v := .m}}{{$k}}={{$v}};{{end}}", {"m": {"b": 2, "a": 1}}) == "a=1;b=2;"
    assert expand("{{range $i, $e := .l}}{{$i}}:{{$e}} {{end}}", {"l": ["x", "y"]}) == "0:x 1:y "


@pytest.mark.parametrize("text, problem", [
    ('{{printf "%d" .Index}}', "function 'printf' not defined"),
    ("{{with $v := .x}}{{end}}", "with with variables"),
    ('{{template "x"}}', "unsupported action"),
    ("{{range $i = .list}}{{end}}", "range with variables"),
    ("{{if .x}}never closed", "missing {{end}}"),
    ("{{end}}", "unexpected {{end}}"),
    ("{{.Index", "unclosed action"),
    ("{{$nope}}", "undefined variable $nope"),
    ("{{.missing}}", "no value to print"),
    ("{{DivideInt .Index 0}}", "division by zero"),
    ("{{AddInt .name 1}}", "cannot use 'x' as a number"),
])
def test_anything_else_is_refused_clearly(text, problem):
    with pytest.raises(TemplateError) as err:
        Template(text, "t.yaml").expand({"Index": 1, "name": "x"})
    assert problem in str(err.value)
    assert str(err.value).startswith("t.yaml: ")


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(TemplateError, match="cannot read"):
        load_template(tmp_path / "nope.yaml")


def test_gang_pods_share_a_host_port_per_group_only_when_a_base_is_given():
    with_base = [render("workload_preemption/templates/gang-pod.yaml", Index=i, podsPerGroup=2, cpuRequest="600m",
                        hostPortBase=9000, priority=9999999) for i in (0, 1, 2, 5)]
    assert [d["spec"]["containers"][0]["ports"][0]["hostPort"] for d in with_base] == [9000, 9000, 9001, 9002]
    assert [d["spec"]["schedulingGroup"]["podGroupName"] for d in with_base] == ["gang-0", "gang-0", "gang-1",
                                                                                 "gang-2"]
    assert with_base[0]["spec"]["priority"] == 9999999
    without = render("workload_preemption/templates/gang-pod.yaml", Index=3, podsPerGroup=2, cpuRequest="3970m")
    assert "ports" not in without["spec"]["containers"][0] and without["spec"]["priority"] == 8888888
    assert without["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "3970m"


def test_low_priority_pods_spread_by_host_port_modulo_pods_per_node():
    ports = [render("workload_preemption/templates/pod-low-priority.yaml", Index=i, podsCount=1000, nodesCount=100)
             ["spec"]["containers"][0]["ports"][0]["hostPort"] for i in (0, 9, 10, 23)]
    assert ports == [8000, 8009, 8000, 8003]
