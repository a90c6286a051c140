"""KubeSchedulerConfiguration: defaults, upstream's merge rules, and every load-time error."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched import hookimpl
from kubesched.core.framework.config import (
    API_VERSION,
    KIND,
    ConfigError,
    PluginRef,
    PluginSet,
    load_config,
    merge_plugin_set,
    parse_duration,
)
from kubesched.plugins import DEFAULT_PLUGINS

from .helpers import DEFAULT, config, framework, from_yaml, simulation

DEFAULT_FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
                   "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                   "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures"]
DEFAULT_SCORES = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
                  "InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality"]


class MyFilter:
    name = "MyFilter"

    def __init__(self, args, handle):
        self.args = args

    @hookimpl
    def filter(self, state, pod, node_info):
        return None


class MyScore:
    name = "MyScore"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def score(self, state, pod, node_info):
        return 0


class OtherSort:
    name = "OtherSort"

    def __init__(self, args, handle):
        pass

    @hookimpl
    def less(self, pod_info_a, pod_info_b):
        return pod_info_a.timestamp < pod_info_b.timestamp


def points(cfg, *plugins):
    return framework(simulation(cfg, MyFilter, MyScore, OtherSort, *plugins)).points


def weights(cfg):
    return framework(simulation(cfg, MyFilter, MyScore)).score_weights


# --- defaults ----------------------------------------------------------------------------


def test_defaults():
    cfg = load_config(None, DEFAULT_PLUGINS)
    assert cfg.parallelism == 16
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.percentage_of_nodes_to_score is None
    (profile,) = cfg.profiles
    assert profile.scheduler_name == DEFAULT
    assert [p.name for p in profile.plugins.multi_point.enabled] == [p.name for p in DEFAULT_PLUGINS.multi_point.enabled]
    assert cfg.leader_election.resource_name == "kube-scheduler"
    assert cfg.leader_election.resource_namespace == "kube-system"


def test_default_profile_points_and_weights():
    fw = framework(simulation(None))
    assert fw.points["queueSort"] == ["PrioritySort"]
    assert fw.points["preEnqueue"] == ["SchedulingGates", "DynamicResources", "GangScheduling"]
    assert fw.points["filter"] == DEFAULT_FILTERS
    assert fw.points["score"] == DEFAULT_SCORES
    assert fw.points["bind"] == ["DefaultBinder"]
    assert fw.score_weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                "VolumeBinding": 1, "PodTopologySpread": 2, "InterPodAffinity": 2,
                                "DynamicResources": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert fw.points["placementGenerate"] == ["TopologyPlacementGenerator"]
    assert fw.points["placementFeasible"] == ["GangScheduling"]
    assert fw.placement_score_weights == {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}


def test_the_documented_example_file_loads(tmp_path):
    file = tmp_path / "scheduler.yaml"
    file.write_text("""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 16
percentageOfNodesToScore: 0
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
leaderElection: {leaderElect: true, resourceLock: leases, resourceNamespace: kube-system, resourceName: kube-scheduler}
clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf, qps: 50, burst: 100}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
- schedulerName: no-scoring-scheduler
  plugins:
    preScore:
      disabled:
      - name: '*'
    score:
      disabled:
      - name: '*'
""")
    sim = simulation(str(file))
    assert set(sim.scheduler.profiles) == {DEFAULT, "no-scoring-scheduler"}
    assert framework(sim, "no-scoring-scheduler").points["score"] == []
    assert framework(sim, "no-scoring-scheduler").points["preScore"] == []
    assert framework(sim, "no-scoring-scheduler").points["filter"] == DEFAULT_FILTERS
    assert framework(sim).points["score"] == DEFAULT_SCORES


def test_fields_kubesched_keeps_but_does_not_act_on_are_reported_by_name(tmp_path, caplog):
    file = tmp_path / "scheduler.yaml"
    file.write_text("""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 32
enableProfiling: true
delayCacheUntilActive: true
clientConnection: {contentType: application/vnd.kubernetes.protobuf, qps: 50}
""")
    with caplog.at_level("WARNING", logger="kubesched.core.framework.config"):
        load_config(file, DEFAULT_PLUGINS)
    reported = [record.getMessage() for record in caplog.records]
    assert [line.split(": ")[1] for line in reported] == [
        "parallelism", "enableProfiling", "delayCacheUntilActive", "clientConnection.contentType"]
    assert all(line.startswith(f"{file}: ") for line in reported)
    assert "no protobuf" in reported[-1]
    caplog.clear()
    with caplog.at_level("WARNING", logger="kubesched.core.framework.config"):
        load_config(file, DEFAULT_PLUGINS)  # the same file again (the UI reloads it per request): said once
    assert caplog.records == []


def test_upstream_defaults_and_the_shipped_default_file_report_nothing(caplog):
    with caplog.at_level("WARNING", logger="kubesched.core.framework.config"):
        load_config(Path(__file__).resolve().parents[2] / "configs" / "default.yaml", DEFAULT_PLUGINS)
        load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "parallelism": 16, "enableProfiling": False,
                     "clientConnection": {"contentType": "application/json"}}, DEFAULT_PLUGINS)
    assert caplog.records == []


def test_bind_addresses_are_not_v1_fields():
    with pytest.raises(ConfigError, match="healthBindAddress: unknown field"):
        load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                     "healthBindAddress": "0.0.0.0:10251"}, DEFAULT_PLUGINS)


# --- mergePluginSet ----------------------------------------------------------------------


def refs(*items):
    return tuple(PluginRef(*item) if isinstance(item, tuple) else PluginRef(item) for item in items)


def merged(default, enabled=(), disabled=()):
    result = merge_plugin_set(PluginSet(refs(*default)), PluginSet(refs(*enabled), refs(*disabled)))
    return [(p.name, p.weight) for p in result.enabled]


def test_custom_entry_naming_a_default_replaces_it_in_place():
    assert merged([("A", 1), ("B", 2), ("C", 3)], enabled=[("B", 5)]) == [("A", 1), ("B", 5), ("C", 3)]


def test_other_custom_plugins_are_appended_after_the_defaults():
    assert merged([("A", 1), ("B", 2)], enabled=[("X", 4), ("A", 9), ("Y", 0)]) == [
        ("A", 9), ("B", 2), ("X", 4), ("Y", 0),
    ]


def test_disabled_defaults_are_removed():
    assert merged(["A", "B", "C"], enabled=["X"], disabled=["B"]) == [("A", 0), ("C", 0), ("X", 0)]


def test_disabled_star_removes_every_default():
    assert merged(["A", "B", "C"], enabled=["B", "X"], disabled=["*"]) == [("B", 0), ("X", 0)]


def test_disabled_entries_are_kept_for_multipoint_expansion():
    result = merge_plugin_set(PluginSet(refs("A"), refs("Z")), PluginSet((), refs("B")))
    assert [p.name for p in result.disabled] == ["B", "Z"]


# --- the merged profile, as the framework resolves it ------------------------------------


def test_multipoint_entry_naming_a_default_keeps_its_place_with_the_new_weight():
    cfg = config({"plugins": {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}}})
    assert points(cfg)["score"] == DEFAULT_SCORES
    assert weights(cfg)["TaintToleration"] == 9


def test_new_multipoint_plugins_come_after_the_defaults_at_every_point_they_implement():
    cfg = config({"plugins": {"multiPoint": {"enabled": [{"name": "MyFilter"}, {"name": "MyScore", "weight": 4}]}}})
    resolved = points(cfg)
    assert resolved["filter"] == DEFAULT_FILTERS + ["MyFilter"]
    assert resolved["score"] == DEFAULT_SCORES + ["MyScore"]
    assert "MyFilter" not in resolved["score"] and "MyScore" not in resolved["filter"]
    assert weights(cfg)["MyScore"] == 4


def test_disabled_star_at_one_point_keeps_only_that_points_own_plugins():
    cfg = config({"plugins": {"filter": {"enabled": [{"name": "MyFilter"}], "disabled": [{"name": "*"}]}}})
    resolved = points(cfg)
    assert resolved["filter"] == ["MyFilter"]
    # other points still get the defaults
    assert resolved["preFilter"] == ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions",
                                     "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                                     "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures"]
    assert resolved["score"] == DEFAULT_SCORES


def test_disabled_star_at_multipoint_removes_all_defaults():
    cfg = from_yaml("""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: MyFilter}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
""")
    resolved = points(cfg)
    assert resolved["filter"] == ["MyFilter"]
    assert resolved["score"] == [] and resolved["preEnqueue"] == []
    assert resolved["queueSort"] == ["PrioritySort"] and resolved["bind"] == ["DefaultBinder"]


def test_a_multipoint_plugin_can_be_disabled_at_one_point():
    cfg = config({"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}})
    resolved = points(cfg)
    assert "TaintToleration" not in resolved["filter"]
    assert "TaintToleration" in resolved["score"] and "TaintToleration" in resolved["preScore"]


def test_expansion_order_overrides_then_multipoint_then_other_specific():
    # MyFilter (specific only) is listed first, then two defaults re-declared in an order
    # that differs from the default order
    cfg = config({"plugins": {"filter": {"enabled": [
        {"name": "MyFilter"}, {"name": "NodeResourcesFit"}, {"name": "NodeName"},
    ]}}})
    assert points(cfg)["filter"] == [
        "NodeResourcesFit", "NodeName",  # re-declared at the point, in the point's order
        "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts",  # the rest of multiPoint
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
        "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
        "MyFilter",  # other plugins of the point
    ]


def test_score_weight_specific_point_beats_multipoint():
    cfg = config({"plugins": {
        "multiPoint": {"enabled": [{"name": "MyScore", "weight": 3}]},
        "score": {"enabled": [{"name": "MyScore", "weight": 8}, {"name": "NodeAffinity", "weight": 5}]},
    }})
    got = weights(cfg)
    assert got["MyScore"] == 8
    assert got["NodeAffinity"] == 5
    assert got["TaintToleration"] == 3  # untouched default
    assert points(cfg)["score"] == ["MyScore", "NodeAffinity", "TaintToleration", "NodeResourcesFit",
                                    "VolumeBinding", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
                                    "NodeResourcesBalancedAllocation", "ImageLocality"]


def test_score_weight_zero_or_unset_means_one():
    cfg = config({"plugins": {"score": {"enabled": [{"name": "TaintToleration"}, {"name": "MyScore", "weight": 0}]}}})
    got = weights(cfg)
    assert got["TaintToleration"] == 1  # the specific entry wins even without a weight
    assert got["MyScore"] == 1


def test_profile_percentage_and_top_level_fields_are_kept():
    cfg = load_config(config({"schedulerName": "a", "percentageOfNodesToScore": 30},
                             percentageOfNodesToScore=20, podInitialBackoffSeconds=2, podMaxBackoffSeconds=4),
                      DEFAULT_PLUGINS)
    assert cfg.percentage_of_nodes_to_score == 20
    assert cfg.profiles[0].percentage_of_nodes_to_score == 30
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 4)


def test_plugin_args_reach_the_plugin_raw_for_out_of_tree_plugins():
    cfg = config({"plugins": {"filter": {"enabled": [{"name": "MyFilter"}]}},
                  "pluginConfig": [{"name": "MyFilter", "args": {"limit": 3, "zones": ["a"]}}]})
    sim = simulation(cfg, MyFilter)
    assert framework(sim).plugins["MyFilter"].args == {"limit": 3, "zones": ["a"]}


@pytest.mark.parametrize(
    "text, seconds",
    [("15s", 15.0), ("1m30s", 90.0), ("100ms", 0.1), ("1h", 3600.0), (2, 2.0), ("1.5s", 1.5)],
)
def test_durations(text, seconds):
    assert parse_duration(text, "x") == pytest.approx(seconds)


# --- load-time errors ----------------------------------------------------------------------


def load_error(doc) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(doc, DEFAULT_PLUGINS)
    return str(err.value)


def start_error(doc, *plugins) -> str:
    with pytest.raises(ConfigError) as err:
        simulation(doc, MyFilter, MyScore, OtherSort, *plugins)
    return str(err.value)


def test_unknown_top_level_field():
    assert load_error(config(percentageOfNodeToScore=10)) == "configuration: percentageOfNodeToScore: unknown field"


def test_unknown_nested_fields_name_their_path():
    assert load_error(config({"schedulerName": "a", "plugins": {"filters": {}}})) == (
        "configuration: profiles[0].plugins.filters: unknown field")
    assert load_error(config({"plugins": {"score": {"enabled": [{"name": "X", "wieght": 2}]}}})) == (
        "configuration: profiles[0].plugins.score.enabled[0].wieght: unknown field")


def test_errors_in_a_file_name_the_file(tmp_path):
    file = tmp_path / "bad.yaml"
    file.write_text(yaml.safe_dump(config(podMaxBackofSeconds=3)))
    with pytest.raises(ConfigError, match=rf"^{tmp_path / 'bad.yaml'}: podMaxBackofSeconds: unknown field$"):
        load_config(str(file), DEFAULT_PLUGINS)
    file.write_text("kind: [")
    with pytest.raises(ConfigError, match="cannot parse: while parsing a flow node did not find expected node "
                                          "content, line 2, column 1$"):
        load_config(str(file), DEFAULT_PLUGINS)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing.yaml"), DEFAULT_PLUGINS)


@pytest.mark.parametrize(
    "api_version, kind",
    [
        ("kubescheduler.config.k8s.io/v1beta3", "KubeSchedulerConfiguration"),
        ("kubescheduler.config.k8s.io/v1", "SchedulerConfiguration"),
        (None, "KubeSchedulerConfiguration"),
        ("kubescheduler.config.k8s.io/v1", None),
    ],
)
def test_wrong_api_version_or_kind(api_version, kind):
    doc = {"apiVersion": api_version, "kind": kind}
    message = load_error({k: v for k, v in doc.items() if v is not None})
    assert "apiVersion/kind: expected kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration" in message


def test_not_an_object(tmp_path):
    file = tmp_path / "list.yaml"
    file.write_text("- a\n- b\n")
    assert load_error(str(file)) == f"{file}: expected a KubeSchedulerConfiguration object"


def test_duplicate_scheduler_name():
    assert "profiles[1].schedulerName: Duplicate value: 'a'" in load_error(
        config({"schedulerName": "a"}, {"schedulerName": "a"}))


def test_duplicate_plugin_config():
    message = load_error(config({"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]}))
    assert "profiles[0].pluginConfig: Duplicate value: 'NodeResourcesFit'" in message


@pytest.mark.parametrize(
    "top, problem",
    [
        ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore: not in valid range [0-100]"),
        ({"percentageOfNodesToScore": -1}, "percentageOfNodesToScore: not in valid range [0-100]"),
        ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be greater than 0"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
         "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds"),
        ({"podMaxBackoffSeconds": "ten"}, "podMaxBackoffSeconds: expected an integer, got string 'ten'"),
        ({"leaderElection": {"leaseDuration": "15 seconds"}}, "leaderElection.leaseDuration: invalid duration"),
    ],
)
def test_bad_values(top, problem):
    assert problem in load_error(config(**top))


def test_bad_profile_percentage():
    assert "profiles[0].percentageOfNodesToScore: not in valid range [0-100]" in load_error(
        config({"percentageOfNodesToScore": 150}))


def test_several_problems_are_reported_together():
    message = load_error(config({"schedulerName": "a"}, {"schedulerName": "a"}, podInitialBackoffSeconds=0))
    assert "podInitialBackoffSeconds" in message and "Duplicate value" in message


def test_unknown_plugin():
    message = start_error(config({"schedulerName": "s1", "plugins": {"filter": {"enabled": [{"name": "NodeNmae"}]}}}))
    assert message.startswith("profile 's1': plugin 'NodeNmae' does not exist (known plugins: ")
    assert "NodeName" in message and "MyFilter" in message


def test_plugin_config_for_an_unknown_plugin():
    message = start_error(config({"pluginConfig": [{"name": "Ghost", "args": {"a": 1}}]}))
    assert message.startswith(f"profile '{DEFAULT}': pluginConfig Ghost: plugin does not exist")


def test_plugin_enabled_at_a_point_it_does_not_implement():
    message = start_error(config({"plugins": {"score": {"enabled": [{"name": "MyFilter"}]}}}))
    assert message == f"profile '{DEFAULT}': plugin 'MyFilter' does not extend score plugin"
    message = start_error(config({"plugins": {"filter": {"enabled": [{"name": "DefaultBinder"}]}}}))
    assert message == f"profile '{DEFAULT}': plugin 'DefaultBinder' does not extend filter plugin"


def test_unknown_plugin_args_field_names_profile_plugin_and_field():
    message = start_error(config({
        "schedulerName": "packing",
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"tpye": "MostAllocated"}}}],
    }))
    assert message == "profile 'packing': pluginConfig NodeResourcesFit: args.scoringStrategy.tpye: unknown field"


def test_wrong_plugin_args_value_names_profile_plugin_and_field():
    message = start_error(config({"pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Most"}}},
    ]}))
    assert message.startswith(f"profile '{DEFAULT}': pluginConfig NodeResourcesFit: args.scoringStrategy.type: ")
    assert "Unsupported value: 'Most'" in message
    message = start_error(config({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": "gpu"}}]}))
    assert message.startswith(f"profile '{DEFAULT}': pluginConfig NodeResourcesFit: args.ignoredResources: ")


def test_duplicate_plugin_at_a_point():
    message = start_error(config({"plugins": {"filter": {"enabled": [{"name": "MyFilter"}, {"name": "MyFilter"}]}}}))
    assert message == f"profile '{DEFAULT}': plugin 'MyFilter' already registered as 'filter'"


def test_duplicate_plugin_in_multipoint():
    message = start_error(config({"plugins": {"multiPoint": {"enabled": [{"name": "MyScore"}, {"name": "MyScore"}]}}}))
    assert message == f"profile '{DEFAULT}': plugin 'MyScore' already registered as 'score'"


def test_no_bind_plugin():
    message = start_error(config({"plugins": {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}}}))
    assert message == f"profile '{DEFAULT}': at least one bind plugin is needed"
    message = start_error(config({"schedulerName": "x", "plugins": {"bind": {"disabled": [{"name": "*"}]}}}))
    assert message == "profile 'x': at least one bind plugin is needed"


def test_no_queue_sort_plugin_or_two_of_them():
    message = start_error(config({"plugins": {"queueSort": {"disabled": [{"name": "*"}]}}}))
    assert "only one queue sort plugin required" in message
    message = start_error(config({"plugins": {"queueSort": {"enabled": [{"name": "OtherSort"}]}}}))
    assert "only one queue sort plugin required" in message and "PrioritySort" in message


def test_profiles_with_different_queue_sort():
    message = start_error(config(
        {"schedulerName": "a"},
        {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "OtherSort"}],
                                                          "disabled": [{"name": "*"}]}}},
    ))
    assert "queueSort" in message and "same queue sort plugin" in message


def test_profiles_with_different_queue_sort_args():
    message = start_error(config(
        {"schedulerName": "a"},
        {"schedulerName": "b", "pluginConfig": [{"name": "PrioritySort", "args": {"strandedGangsFirst": False}}]},
    ))
    assert "same queue sort plugin with the same args" in message


def test_profiles_sharing_a_custom_queue_sort_are_fine():
    queue_sort = {"queueSort": {"enabled": [{"name": "OtherSort"}], "disabled": [{"name": "*"}]}}
    sim = simulation(config({"schedulerName": "a", "plugins": queue_sort},
                            {"schedulerName": "b", "plugins": queue_sort}), MyFilter, MyScore, OtherSort)
    assert {fw.queue_sort_name for fw in sim.scheduler.profiles.values()} == {"OtherSort"}


def test_upstreams_own_config_with_podtopologyspread_args_loads_unchanged():
    from pathlib import Path

    from kubesched.core.clock import FakeClock
    from kubesched.core.cluster.memory import MemoryCluster
    from kubesched.core.framework.registry import Registry
    from kubesched.core.scheduler.scheduler import Scheduler

    path = Path(__file__).resolve().parents[2] / "data/scheduler_perf/batching/scheduler-config-no-topology.yaml"
    loaded = load_config(path, DEFAULT_PLUGINS)
    clock = FakeClock()
    scheduler = Scheduler(MemoryCluster(clock), loaded, Registry.discover(), clock)
    spread = scheduler.profiles["default-scheduler"].plugins["PodTopologySpread"]
    assert spread.defaults == () and not spread.system_defaulted


def _with_extenders(*extenders: dict, **top) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "extenders": list(extenders), **top}


def test_extenders_are_read_with_upstreams_field_names():
    loaded = load_config(_with_extenders({
        "urlPrefix": "https://gpu.example.com/scheduler", "filterVerb": "filter", "prioritizeVerb": "prioritize",
        "weight": 5, "preemptVerb": "preempt", "bindVerb": "bind", "enableHTTPS": True,
        "tlsConfig": {"insecure": True, "serverName": "gpu", "caData": "Zm9v"}, "httpTimeout": "30s",
        "nodeCacheCapable": True, "ignorable": True,
        "managedResources": [{"name": "example.com/gpu-mem", "ignoredByScheduler": True}]}), DEFAULT_PLUGINS)
    (extender,) = loaded.extenders
    assert (extender.url_prefix, extender.filter_verb, extender.prioritize_verb, extender.weight,
            extender.preempt_verb, extender.bind_verb) == (
        "https://gpu.example.com/scheduler", "filter", "prioritize", 5, "preempt", "bind")
    assert extender.enable_https and extender.node_cache_capable and extender.ignorable
    assert extender.tls_config.server_name == "gpu" and extender.tls_config.ca_data == "Zm9v"
    assert parse_duration(extender.http_timeout, "httpTimeout") == 30.0
    # ignoredByScheduler resources become NodeResourcesFit's ignoredResources in every profile, as upstream
    assert loaded.profiles[0].args_for("NodeResourcesFit") == {"ignoredResources": ["example.com/gpu-mem"]}


@pytest.mark.parametrize(("extenders", "message"), [
    ([{"urlPrefix": "http://e:1", "prioritizeVerb": "prioritize"}],
     "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://e:1", "prioritizeVerb": "prioritize", "weight": -2}],
     "extenders[0].weight: Invalid value: -2: must have a positive weight applied to it"),
    ([{"urlPrefix": "http://e:1", "bindVerb": "bind"}, {"urlPrefix": "http://f:1", "bindVerb": "bind"}],
     'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'),
    ([{"urlPrefix": "http://e:1", "managedResources": [{"name": "example.com/a"}]},
      {"urlPrefix": "http://f:1", "managedResources": [{"name": "example.com/a"}]}],
     'extenders[1].managedResources[0].name: Invalid value: "example.com/a": duplicate extender managed resource '
     'name'),
    ([{"urlPrefix": "http://e:1", "managedResources": [{"name": "cpu"}]}],
     'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name'),
    ([{"urlPrefix": "http://e:1", "httpTimeout": "soon"}], "extenders[0].httpTimeout: invalid duration 'soon'"),
    ([{"filterVerb": "filter"}], "extenders[0].urlPrefix: Invalid value: '': must be an http:// or https:// URL"),
    ([{"urlPrefix": "http://e:1", "filterverb": "filter"}], "filterverb"),
])
def test_an_extender_section_is_validated_as_upstream(extenders, message):
    with pytest.raises(ConfigError) as err:
        load_config(_with_extenders(*extenders), DEFAULT_PLUGINS)
    assert message in str(err.value)


@pytest.mark.parametrize("weight", [2**31, 2**63 - 1, 2**64])
def test_a_score_weight_beyond_int32_is_refused_by_config_validate(tmp_path, weight):
    from typer.testing import CliRunner

    from kubesched.cli import app

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": API_VERSION, "kind": KIND, "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": weight}]}}}]}))
    result = CliRunner().invoke(app, ["config", "validate", str(path)])
    assert result.exit_code == 2
    if weight < 2**63:
        assert f"plugins.score: NodeResourcesFit: weight {weight} is not an int32" in result.output
    else:  # not even an int64: refused as the field is decoded
        assert f"plugins.score.enabled[0].weight: cannot unmarshal number {weight} into an int64" in result.output
