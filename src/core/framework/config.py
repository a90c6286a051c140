"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): reading, defaults, merge rules.

Files are read exactly as kube-scheduler takes them.  :func:`load_config`
decodes strictly (an unknown field is an error), applies upstream's defaults
(one ``default-scheduler`` profile, backoff 1s/10s, percentageOfNodesToScore
0 = adaptive, parallelism 16) and merges each profile's ``plugins`` over the
default plugin set with upstream's rules (:func:`merge_plugin_set`).  The
default plugin set is given by the caller: core does not know plugins by name.
Plugin args are checked later, when a profile's framework is built.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, ClassVar

import attrs
from attrs import field, frozen

from ..api.convert import ManifestError, structure
from ..api.core_v1 import is_extended_resource
from ..api.manifests import MAX_CONFIG_BYTES, InvalidManifest, read_yaml
from ..api.validation import qualified_name
from ..clock import go_duration
from .hookspecs import EXTENSION_POINTS

log = logging.getLogger(__name__)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
ALL = "*"


class ConfigError(ValueError):
    """A configuration kubesched refuses.  The message names the file, the
    profile, the plugin and the field when they are known."""


@frozen
class PluginRef:
    """``{name, weight}``; weight only matters for Score (0 = 1)."""

    STRICT: ClassVar[bool] = True
    name: str = ""
    weight: int = 0


@frozen
class PluginSet:
    """``enabled`` and ``disabled`` plugins of one extension point (upstream PluginSet); ``disabled: [{name: "*"}]``
    turns off every default."""

    STRICT: ClassVar[bool] = True
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()


@frozen
class Plugins:
    """One PluginSet per extension point config key, plus ``multiPoint``."""

    STRICT: ClassVar[bool] = True
    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    placement_generate: PluginSet = PluginSet()
    placement_feasible: PluginSet = PluginSet()
    placement_score: PluginSet = PluginSet()
    pod_group_post_filter: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()


#: Plugins attribute -> extension point config key, in the hookspecs' order (the one list of extension points is
#: :data:`~kubesched.core.framework.hookspecs.EXTENSION_POINTS`; a test holds :class:`Plugins`' fields to it).
POINT_KEYS = {re.sub(r"(?<!^)(?=[A-Z])", "_", point).lower(): point for point in EXTENSION_POINTS}


@frozen
class PluginConfig:
    """``{name, args}``: one plugin's args, decoded into its ``args_class`` when the profile's framework is built
    (upstream PluginConfig)."""

    STRICT: ClassVar[bool] = True
    name: str = ""
    args: dict[str, Any] = field(factory=dict)


@frozen
class Profile:
    """``KubeSchedulerProfile``: a scheduler name and its plugins.  After
    :func:`load_config`, ``plugins`` is already merged with the defaults."""

    STRICT: ClassVar[bool] = True
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = Plugins()
    plugin_config: tuple[PluginConfig, ...] = ()

    def args_for(self, plugin: str) -> dict[str, Any] | None:
        """The raw ``args`` of ``plugin`` in this profile's ``pluginConfig``, or None when it has no entry."""
        for entry in self.plugin_config:
            if entry.name == plugin:
                return entry.args
        return None


@frozen
class LeaderElection:
    """Durations are Go duration strings in the file, seconds here."""

    STRICT: ClassVar[bool] = True
    leader_elect: bool = True
    lease_duration: Any = "15s"
    renew_deadline: Any = "10s"
    retry_period: Any = "2s"
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@frozen
class ClientConnection:
    """``clientConnection`` (upstream ClientConnectionConfiguration): ``kubeconfig`` and the client's rate limit,
    ``qps`` (requests per second) and ``burst``, used against a real API server.  The content types are kept,
    not used: kubesched's client speaks JSON (reported by :func:`load_config` when a file asks for another)."""

    STRICT: ClassVar[bool] = True
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50
    burst: int = 100


@frozen
class ExtenderTLSConfig:
    """``tlsConfig`` of an extender (upstream ExtenderTLSConfig): ``insecure`` skips verifying the server;
    ``serverName`` is the name verified instead of the URL's host; files (``certFile``, ``keyFile``, ``caFile``)
    or their PEM contents base64-encoded as Go's ``[]byte`` (``certData``, ``keyData``, ``caData``)."""

    STRICT: ClassVar[bool] = True
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""


@frozen
class ExtenderManagedResource:
    """An extended resource an extender manages (upstream ExtenderManagedResource): only pods requesting one
    of an extender's resources are sent to it; ``ignoredByScheduler`` leaves the resource out of
    NodeResourcesFit's checks."""

    STRICT: ClassVar[bool] = True
    name: str = ""
    ignored_by_scheduler: bool = False


@frozen
class Extender:
    """One entry of ``extenders`` (upstream's v1 Extender): the HTTP service at ``urlPrefix`` answering the
    verbs it names (``filterVerb``, ``prioritizeVerb`` with ``weight``, ``preemptVerb``, ``bindVerb``);
    ``enableHTTPS`` with ``tlsConfig``; ``httpTimeout`` (a Go duration, 0 = 5s); ``nodeCacheCapable``: it
    is sent node names instead of Node objects; ``managedResources``; ``ignorable``: scheduling goes on
    when it fails.  :mod:`kubesched.core.framework.extender` calls it."""

    STRICT: ClassVar[bool] = True
    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = field(default=False, metadata={"key": "enableHTTPS"})
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: Any = 0
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


@frozen
class KubeSchedulerConfiguration:
    """The whole file (upstream's v1 KubeSchedulerConfiguration, whose fields
    it has).  ``parallelism``, ``enableProfiling``,
    ``enableContentionProfiling`` and ``delayCacheUntilActive`` are kept,
    not acted on; :func:`load_config` reports a file that sets them to
    something kubesched does not do (:data:`NOT_HONOURED`)."""

    STRICT: ClassVar[bool] = True
    parallelism: int = 16
    leader_election: LeaderElection = LeaderElection()
    client_connection: ClientConnection = ClientConnection()
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: tuple[Profile, ...] = ()
    extenders: tuple[Extender, ...] = ()
    delay_cache_until_active: bool = False


#: Fields kubesched keeps but does not act on: (path in the file, when a value is not honoured, why).
NOT_HONOURED: tuple[tuple[tuple[str, ...], Any, str], ...] = (
    (("parallelism",), lambda v: v != 16,
     "kubesched filters and scores a pod's nodes in one thread (vectorised over the nodes)"),
    (("enableProfiling",), bool, "kubesched serves no /debug/pprof endpoints (Go's profiler); profile with "
                                 "py-spy or cProfile"),
    (("enableContentionProfiling",), bool, "kubesched serves no /debug/pprof endpoints (Go's profiler)"),
    (("delayCacheUntilActive",), bool, "the informers fill their caches before leader election, as with false"),
    (("clientConnection", "contentType"), lambda v: v != "application/json",
     "kubesched's client sends JSON (the Kubernetes Python client has no protobuf)"),
    (("clientConnection", "acceptContentTypes"), lambda v: v not in ("", "application/json"),
     "kubesched's client accepts JSON only"),
)


#: What :func:`load_config` has reported of :data:`NOT_HONOURED` in this process (file: line).
_REPORTED: set[str] = set()


def not_honoured(data: dict[str, Any]) -> list[str]:
    """What of a configuration file's ``data`` (its parsed dict) kubesched
    keeps but does not act on: one line per field set to a value it does not
    honour, ``path: value: why`` (see :data:`NOT_HONOURED`)."""
    found = []
    for path, unhonoured, why in NOT_HONOURED:
        value: Any = data
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and unhonoured(value):
            found.append(f"{'.'.join(path)}: {value!r} is kept, not acted on: {why}")
    return found


def validate_extenders(extenders: tuple[Extender, ...]) -> list[str]:
    """Upstream's ``validateExtenders``: a prioritizing extender has a positive weight, at most one extender
    binds, managed resources are valid extended resource names, each managed by one extender.  kubesched
    also wants an ``http://`` or ``https://`` ``urlPrefix`` and a valid ``httpTimeout``.  One message per
    problem, as the field errors read."""
    problems = []
    binders = 0
    managed: set[str] = set()
    for i, extender in enumerate(extenders):
        path = f"extenders[{i}]"
        if not re.match(r"https?://[^/]", extender.url_prefix):
            problems.append(f"{path}.urlPrefix: Invalid value: {extender.url_prefix!r}: "
                            "must be an http:// or https:// URL")
        if extender.prioritize_verb and extender.weight <= 0:
            problems.append(f"{path}.weight: Invalid value: {extender.weight}: must have a positive weight applied "
                            "to it")
        if extender.bind_verb:
            binders += 1
        try:
            if parse_duration(extender.http_timeout, f"{path}.httpTimeout") < 0:
                problems.append(f"{path}.httpTimeout: Invalid value: {extender.http_timeout!r}: must not be negative")
        except ConfigError as err:
            problems.append(str(err))
        for j, resource in enumerate(extender.managed_resources):
            where = f"{path}.managedResources[{j}].name"
            invalid = qualified_name(where, resource.name)
            problems += invalid
            if not invalid and not is_extended_resource(resource.name):
                problems.append(f'{where}: Invalid value: "{resource.name}": is an invalid extended resource name')
            if resource.name in managed:
                problems.append(f'{where}: Invalid value: "{resource.name}": duplicate extender managed resource name')
            managed.add(resource.name)
    if binders > 1:
        problems.append(f'extenders: Invalid value: "found {binders} extenders implementing bind": '
                        "only one extender can implement bind")
    return problems


#: The plugin whose ``ignoredResources`` the extenders' ``ignoredByScheduler`` resources become.
NODE_RESOURCES_FIT = "NodeResourcesFit"


def with_extender_ignored_resources(profiles: list[Profile], extenders: tuple[Extender, ...]) -> list[Profile]:
    """Upstream's ``buildExtenders``: when extenders manage resources ``ignoredByScheduler``, those names become
    NodeResourcesFit's ``ignoredResources`` in every profile (replacing what the profile set there), so that
    its Filter leaves them to the extenders."""
    ignored = [r.name for extender in extenders for r in extender.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return profiles
    out = []
    for profile in profiles:
        args = dict(profile.args_for(NODE_RESOURCES_FIT) or {})
        args["ignoredResources"] = list(ignored)
        entries = tuple(e for e in profile.plugin_config if e.name != NODE_RESOURCES_FIT)
        out.append(attrs.evolve(profile, plugin_config=entries + (PluginConfig(NODE_RESOURCES_FIT, args),)))
    return out


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream's ``mergePluginSet``: a custom ``enabled`` entry naming a default
    plugin replaces it in place (keeping the default order, taking the new
    weight); other custom plugins are appended; ``disabled`` names (or ``*``)
    remove defaults.  Disabled lists of both are kept for multiPoint expansion."""
    disabled = tuple(custom.disabled) + tuple(default.disabled)
    disabled_names = {p.name for p in disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if ALL not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            if plugin.name in custom_index:
                index = custom_index[plugin.name]
                plugin = custom.enabled[index]
                replaced.add(index)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(tuple(enabled), disabled)


def merge_plugins(default: Plugins, custom: Plugins) -> Plugins:
    """:func:`merge_plugin_set` at every extension point and multiPoint."""
    return Plugins(**{
        f.name: merge_plugin_set(getattr(default, f.name), getattr(custom, f.name))
        for f in attrs.fields(Plugins)
    })


def parse_duration(text: Any, where: str) -> float:
    """A Go duration ("15s", "1m30s", "100ms", "1h") or a number of seconds -> seconds.

    Raises :class:`ConfigError` naming ``where``."""
    try:
        return go_duration(text)
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from None


def load_config(
    source: str | Path | dict | None,
    default_plugins: Plugins,
) -> KubeSchedulerConfiguration:
    """Read a KubeSchedulerConfiguration file (or an already parsed dict, or
    None for all defaults) and return it with defaults applied and every
    profile's plugins merged over ``default_plugins``.

    Raises :class:`ConfigError` for a file that cannot be read, a wrong
    apiVersion/kind, an unknown field, a bad value, duplicate profile names,
    profiles with different queueSort plugins.  A field kubesched keeps but
    does not act on is logged as a warning (:func:`not_honoured`), once per
    file and field in a process.
    """
    where = str(source) if isinstance(source, (str, Path)) else "configuration"
    body = _configuration_body(source, where)
    try:
        config = structure(body, KubeSchedulerConfiguration)
    except ManifestError as err:
        raise ConfigError(f"{where}: {err}") from None
    problems = validate_config(config)
    merged, profile_problems = validated_profiles(config.profiles or (Profile(),), default_plugins)
    problems += profile_problems
    if problems:
        raise ConfigError(f"{where}: " + "; ".join(problems))
    merged = with_extender_ignored_resources(merged, config.extenders)
    _warn_not_honoured(body, where)
    return attrs.evolve(config, profiles=tuple(merged))


def _configuration_body(source: str | Path | dict | None, where: str) -> dict[str, Any]:
    """The KubeSchedulerConfiguration document of ``source`` (a file, bounded as every manifest is; a
    parsed dict; None: all defaults) without ``apiVersion`` and ``kind``, which must be
    kubescheduler.config.k8s.io/v1's.  Raises :class:`ConfigError` naming ``where``."""
    if source is None:
        data: Any = {"apiVersion": API_VERSION, "kind": KIND}
    elif isinstance(source, dict):
        data = source
    else:
        try:
            data = read_yaml(source, MAX_CONFIG_BYTES)
        except InvalidManifest as err:
            raise ConfigError(str(err)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a KubeSchedulerConfiguration object")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise ConfigError(
            f"{where}: apiVersion/kind: expected {API_VERSION} {KIND}, got {data.get('apiVersion')} {data.get('kind')}"
        )
    return {k: v for k, v in data.items() if k not in ("apiVersion", "kind")}


def validate_config(config: KubeSchedulerConfiguration) -> list[str]:
    """Upstream's ``ValidateKubeSchedulerConfiguration`` for the fields outside the profiles:
    leader election's durations, parallelism, the backoffs, percentageOfNodesToScore and the
    extenders.  One message per problem, as the field errors read."""
    problems = []
    for name, key in (("lease_duration", "leaseDuration"), ("renew_deadline", "renewDeadline"),
                      ("retry_period", "retryPeriod")):
        try:
            parse_duration(getattr(config.leader_election, name), key)
        except ConfigError as err:
            problems.append(f"leaderElection.{err}")
    if config.parallelism <= 0:
        problems.append(f"parallelism: Invalid value: {config.parallelism}: should be an integer value greater than zero")
    if config.pod_initial_backoff_seconds <= 0:
        problems.append("podInitialBackoffSeconds: must be greater than 0")
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        problems.append("podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds")
    if config.percentage_of_nodes_to_score is not None and not 0 <= config.percentage_of_nodes_to_score <= 100:
        problems.append("percentageOfNodesToScore: not in valid range [0-100]")
    problems += validate_extenders(config.extenders)
    return problems


def validated_profiles(profiles: tuple[Profile, ...], default_plugins: Plugins) -> tuple[list[Profile], list[str]]:
    """Each profile with its plugins merged over ``default_plugins`` (upstream's defaulting), and the
    problems upstream's ``validateKubeSchedulerProfile`` finds: a missing or duplicate schedulerName,
    percentageOfNodesToScore out of range, a plugin configured twice in pluginConfig."""
    problems = []
    seen: set[str] = set()
    merged = []
    for index, profile in enumerate(profiles):
        label = f"profiles[{index}]"
        if not profile.scheduler_name:
            problems.append(f"{label}.schedulerName: Required value")
        elif profile.scheduler_name in seen:
            problems.append(f"{label}.schedulerName: Duplicate value: {profile.scheduler_name!r}")
        seen.add(profile.scheduler_name)
        pct = profile.percentage_of_nodes_to_score
        if pct is not None and not 0 <= pct <= 100:
            problems.append(f"{label}.percentageOfNodesToScore: not in valid range [0-100]")
        names = [c.name for c in profile.plugin_config]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            problems.append(f"{label}.pluginConfig: Duplicate value: {dup!r}")
        merged.append(attrs.evolve(profile, plugins=merge_plugins(default_plugins, profile.plugins)))
    return merged, problems


def _warn_not_honoured(body: dict[str, Any], where: str) -> None:
    """Log each field of ``body`` that kubesched keeps but does not act on (:func:`not_honoured`), once
    per file and field in a process (a file read again - the UI, each perf workload - is reported once)."""
    for note in not_honoured(body):
        line = f"{where}: {note}"
        if line not in _REPORTED:
            _REPORTED.add(line)
            log.warning("%s", line)
