"""Framework: one profile's plugins, resolved once, run at each extension point.

Built from a merged :class:`Profile` and the plugin :class:`Registry`, it
instantiates each needed plugin once with its args and the :class:`Handle`,
registers it in the profile's own pluggy ``PluginManager`` (which validates
hook names and argument names), then resolves the ordered list of bound
methods for every extension point with upstream's rules (specific extension
point settings, multiPoint expansion, score weights).  The ``run_*`` methods
call those methods directly with kube-scheduler's semantics.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Mapping

import numpy as np
import pluggy

from kubesched.core.observability import metrics

from .config import ALL, POINT_KEYS, ConfigError, PluginRef, Profile
from .cycle_state import CycleState
from .diagnosis import Diagnosis, NodeToStatus
from .extender import EXTENDER_NAME
from .handle import Handle
from .hookspecs import EXTENSION_POINTS, PROJECT, ExtensionPoints
from .nodeinfo import NodeInfo, PodInfo
from .placements import PlacementExtensionPoints
from .registry import PluginError, Registry, build_args, implemented_hooks
from .scoring import ScoreExtensionPoints
from .snapshot import Snapshot
from .status import SKIP, Code, Status
from .timing import TIMED_POINTS, extension_point, no_status, timed_plugin
from .types import (
    EVERY_EVENT,
    INT32_MAX,
    INT64_MAX,
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    PostFilterResult,
    PreBindWait,
    PreFilterResult,
)

#: Upstream caps a Permit wait at 15 minutes.
MAX_PERMIT_TIMEOUT = 15 * 60.0

#: Extension points whose plugins' queueing hints requeue rejected pods (upstream honours
#: EventsToRegister only for these).
ENQUEUE_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")

#: The fewest rows find_feasible_rows judges at once.
MIN_FILTER_CHUNK = 256


class Framework(ScoreExtensionPoints, PlacementExtensionPoints):
    """The plugins of one profile.

    Attributes per extension point are lists of ``(plugin_name, bound_method)``
    in the profile's order.  ``score_weights`` maps Score plugins to weights.
    Raises :class:`ConfigError` (naming the profile, plugin and field) for an
    unknown plugin, wrong args, a plugin enabled at a point it does not
    implement, a duplicate, or no/more than one QueueSort plugin or no Bind
    plugin.
    """

    def __init__(self, profile: Profile, registry: Registry, handle: Handle, where: str = ""):
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        handle.framework = self
        self._where = f"{where}profile {profile.scheduler_name!r}"
        self.plugins: dict[str, Any] = {}
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(ExtensionPoints)
        self._instantiate(registry)
        self.points: dict[str, list[str]] = self._resolve_points()
        self.score_weights = self._score_weights()
        self._score_plans = {}
        self.placement_score_weights = self._score_weights("placementScore")
        self._bind_methods()
        self._check_required()
        #: (extension point, status) -> the observe of this profile's series of
        #: scheduler_framework_extension_point_duration_seconds; extension point -> that of its Success series
        self._point_series: dict[tuple[str, str], Callable[[float], None]] = {}
        self._point_success: dict[str, Callable[[float], None]] = {}
        #: the method lists of TIMED_POINTS with each plugin call timed, for the sampled cycles
        self.sampled: dict[str, Any] = {}
        for attr, point in TIMED_POINTS.items():
            methods = getattr(self, attr)
            self.sampled[attr] = ({name: timed_plugin(name, point, m) for name, m in methods.items()}
                                  if isinstance(methods, dict) else
                                  [(name, timed_plugin(name, point, m)) for name, m in methods])
        #: [cycle sampled? (CycleState.record_plugin_metrics)] -> the method lists of TIMED_POINTS: the plain ones, or
        #: each plugin call timed
        self._lists = ({attr: getattr(self, attr) for attr in TIMED_POINTS}, self.sampled)
        #: scheduler_plugin_evaluation_total's counts, and this profile's keys into them per point and plugin
        self._evaluations = metrics.PLUGIN_EVALUATIONS.counts
        self._evaluation_key = {point: {name: (name, point, self.profile_name) for name, _ in getattr(self, attr)}
                                for point, attr in (("PreFilter", "pre_filter_plugins"), ("Filter", "filter_plugins"),
                                                    ("PreScore", "pre_score_plugins"), ("Score", "score_plugins"))}

    def _point_observer(self, point: str, code: str) -> Callable[[float], None]:
        """The observe of this profile's ``point``/``code`` series (created on first use)."""
        observe = self._point_series.get((point, code))
        if observe is None:
            observe = self._point_series[(point, code)] = metrics.FRAMEWORK_EXTENSION_POINT_DURATION.labels(
                point, code, self.profile_name).observe
            if code == "Success":
                self._point_success[point] = observe
        return observe

    # --- construction --------------------------------------------------------------------

    def _fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self._where}: {message}")

    def _needed_plugins(self) -> list[str]:
        names: list[str] = []
        plugins = self.profile.plugins
        for attr in ("multi_point", *POINT_KEYS):
            for ref in getattr(plugins, attr).enabled:
                if ref.name not in names:
                    names.append(ref.name)
        return names

    def _instantiate(self, registry: Registry) -> None:
        known = registry.names()
        for name in self._needed_plugins():
            try:
                cls = registry.get(name)
            except PluginError as err:
                raise self._fail(f"plugin {name!r}: {err}") from None
            if cls is None:
                raise self._fail(f"plugin {name!r} does not exist (known plugins: {', '.join(known)})")
            try:
                args = build_args(cls, self.profile.args_for(name))
            except PluginError as err:
                raise self._fail(f"pluginConfig {name}: {err}") from None
            try:
                plugin = cls(args, self.handle)
            except (ValueError, TypeError) as err:
                raise self._fail(f"pluginConfig {name}: args: {err}") from None
            try:
                self.pm.register(plugin, name=name)
            except pluggy.PluginValidationError as err:
                raise self._fail(f"plugin {name}: {err}") from None
            self._check_arguments(name, plugin)
            self.plugins[name] = plugin
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as err:
            raise self._fail(f"plugin {self.pm.get_name(err.plugin)}: {err}") from None
        for entry in self.profile.plugin_config:
            if entry.name not in registry:
                raise self._fail(f"pluginConfig {entry.name}: plugin does not exist (known plugins: {', '.join(known)})")

    def _check_arguments(self, name: str, plugin: Any) -> None:
        """Hooks are called positionally, so (unlike pluggy) a hook must take exactly
        the spec's arguments, in the spec's order; a subset would fail at the first pod."""
        for caller in self.pm.get_hookcallers(plugin) or ():
            if caller.spec is None:
                continue
            wanted = tuple(caller.spec.argnames)
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin and (tuple(impl.argnames) + tuple(impl.kwargnames))[:len(wanted)] != wanted:
                    raise self._fail(f"plugin {name}: hook {caller.name}({', '.join(impl.argnames)}) must take "
                                     f"exactly ({', '.join(wanted)}), in that order")

    def _implements(self, name: str, point: str) -> bool:
        return EXTENSION_POINTS[point][0] in implemented_hooks(type(self.plugins[name]))

    def _resolve_points(self) -> dict[str, list[str]]:
        """Upstream ``updatePluginList`` + ``expandMultiPointPlugins``."""
        plugins = self.profile.plugins
        multi_point = plugins.multi_point
        result: dict[str, list[str]] = {}
        for attr, point in POINT_KEYS.items():
            plugin_set = getattr(plugins, attr)
            specific: list[str] = []
            for ref in plugin_set.enabled:
                if not self._implements(ref.name, point):
                    raise self._fail(f"plugin {ref.name!r} does not extend {point} plugin")
                if ref.name in specific:
                    raise self._fail(f"plugin {ref.name!r} already registered as {point!r}")
                specific.append(ref.name)
            disabled = {ref.name for ref in plugin_set.disabled}
            if ALL in disabled:
                result[point] = specific
                continue
            overrides: list[str] = []
            from_multi: list[str] = []
            for ref in multi_point.enabled:
                if not self._implements(ref.name, point) or ref.name in disabled:
                    continue
                if ref.name in specific:
                    overrides.append(ref.name)
                    continue
                if ref.name in from_multi:
                    raise self._fail(f"plugin {ref.name!r} already registered as {point!r}")
                from_multi.append(ref.name)
            # re-declared plugins keep the order the specific point gives them
            overrides = [name for name in specific if name in overrides]
            rest = [name for name in specific if name not in overrides]
            result[point] = overrides + from_multi + rest
        return result

    def _score_weights(self, point: str = "score") -> dict[str, int]:
        """Weights of the plugins at ``point`` (score or placementScore): as
        configured there or in multiPoint, 0 meaning 1."""
        weights: dict[str, int] = {}
        attr = "score" if point == "score" else "placement_score"
        refs: list[PluginRef] = (list(getattr(self.profile.plugins, attr).enabled)
                                 + list(self.profile.plugins.multi_point.enabled))
        for ref in refs:
            if ref.name not in self.plugins or not self._implements(ref.name, point) or ref.name in weights:
                continue
            if ref.weight < 0:
                raise self._fail(f"plugins.{point}: {ref.name}: weight must be positive")
            if ref.weight > INT32_MAX:
                raise self._fail(f"plugins.{point}: {ref.name}: weight {ref.weight} is not an int32")
            weights[ref.name] = ref.weight or 1
        if sum(weights.values()) * MAX_NODE_SCORE > INT64_MAX:
            raise self._fail(f"plugins.{point}: total score of {point} plugins could overflow (the weights times "
                             f"{MAX_NODE_SCORE} exceed {INT64_MAX})")
        return weights

    def _methods(self, point: str, hook: str | None = None) -> list[tuple[str, Callable]]:
        hook = hook or EXTENSION_POINTS[point][0]
        out = []
        for name in self.points[point]:
            plugin = self.plugins[name]
            if hook in implemented_hooks(type(plugin)):
                out.append((name, getattr(plugin, hook)))
        return out

    def _bind_methods(self) -> None:
        self.pre_enqueue_plugins = self._methods("preEnqueue")
        self.queue_sort_plugins = self._methods("queueSort")
        self.pre_filter_plugins = self._methods("preFilter")
        self.add_pod_plugins = self._methods("preFilter", "pre_filter_add_pod")
        self.remove_pod_plugins = self._methods("preFilter", "pre_filter_remove_pod")
        self.filter_plugins = self._methods("filter")
        #: (the filter plugins, the skipped ones, the others) of the last :meth:`run_filter`
        self._filter_plan: tuple[Any, frozenset[str], list[tuple[str, Callable]]] = (None, frozenset(), [])
        self.filter_batch = dict(self._methods("filter", "filter_batch"))
        self.filter_batch_status = dict(self._methods("filter", "filter_batch_status"))
        self.post_filter_plugins = self._methods("postFilter")
        self.pre_score_plugins = self._methods("preScore")
        self.score_plugins = self._methods("score")
        self.score_batch = dict(self._methods("score", "score_batch"))
        self.score_row = dict(self._methods("score", "score_row"))
        self.normalize = dict(self._methods("score", "normalize_score"))
        self.reserve_plugins = self._methods("reserve")
        self.unreserve_plugins = self._methods("reserve", "unreserve")[::-1]  # in the order they run: reversed
        self.permit_plugins = self._methods("permit")
        self.pre_bind_plugins = self._methods("preBind")
        self.pre_bind_pre_flights = dict(self._methods("preBind", "pre_bind_pre_flight"))
        self.bind_plugins = self._methods("bind")
        self.post_bind_plugins = self._methods("postBind")
        self.placement_generate_plugins = self._methods("placementGenerate")
        self.placement_feasible_plugins = self._methods("placementFeasible")
        self.placement_score_plugins = self._methods("placementScore")
        self.normalize_placement = dict(self._methods("placementScore", "normalize_placement_score"))
        self.pod_group_post_filter_plugins = self._methods("podGroupPostFilter")

    def _check_required(self) -> None:
        if len(self.queue_sort_plugins) != 1:
            raise self._fail(
                f"only one queue sort plugin required for profile with scheduler name {self.profile_name!r}, "
                f"got {[n for n, _ in self.queue_sort_plugins]}"
            )
        if not self.bind_plugins:
            raise self._fail("at least one bind plugin is needed")

    @property
    def queue_sort_name(self) -> str:
        return self.queue_sort_plugins[0][0]

    def less(self, a: Any, b: Any) -> bool:
        """Whether queued pod ``a`` goes before ``b``, by the profile's one QueueSort plugin (upstream
        ``Framework.QueueSortFunc``)."""
        return self.queue_sort_plugins[0][1](a, b)

    def events_to_register(self) -> list[tuple[str, ClusterEventWithHint]]:
        """``(plugin, event with hint)`` for the plugins at the points whose
        hints matter; a plugin without ``events_to_register`` gets every event,
        and so does "Extender" when the scheduler has extenders (upstream's
        defaultEnqueueExtension: a pod an extender rejected is retried on any event)."""
        out: list[tuple[str, ClusterEventWithHint]] = []
        if self.handle.extenders:
            out.append((EXTENDER_NAME, ClusterEventWithHint(EVERY_EVENT)))
        seen: set[str] = set()
        for point in ENQUEUE_POINTS:
            for name in self.points.get(point, ()):
                if name in seen:
                    continue
                seen.add(name)
                plugin = self.plugins[name]
                if "events_to_register" in implemented_hooks(type(plugin)):
                    out.extend((name, ev) for ev in plugin.events_to_register())
                else:
                    out.append((name, ClusterEventWithHint(EVERY_EVENT)))
        return out

    # --- running -------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: Any) -> Status | None:
        """First non-success PreEnqueue status (with its plugin), or None."""
        for name, method in self.pre_enqueue_plugins:
            status = method(pod)
            if status is not None and not status.is_success():
                return status.with_plugin(name)
        return None

    @extension_point("PreFilter", itemgetter(1))
    def run_pre_filter(
        self, state: CycleState, pod: Any, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Upstream ``RunPreFilterPlugins``: returns the merged PreFilterResult, the status (None on success) and
        the plugins that rejected the pod (on success: the plugins whose PreFilterResult narrowed the nodes)."""
        result: PreFilterResult | None = None
        rejected: Status | None = None
        rejectors: set[str] = set()
        narrowing: list[str] = []
        record = state.record
        evaluations, keys = self._evaluations, self._evaluation_key["PreFilter"]
        for name, method in self._lists[state.record_plugin_metrics]["pre_filter_plugins"]:
            answer = method(state, pod, nodes)
            if answer is None:  # the usual success: nothing narrowed, nothing to note
                evaluations[keys[name]] += 1
                continue
            if answer is SKIP:  # the shared Skip: the plugin's Filter has nothing to do
                state.skip_filter_plugins.add(name)
                if record is not None:
                    record.pre_filter_answer(name, answer, None)
                continue
            plugin_result, status = answer if isinstance(answer, tuple) else (None, answer)
            if status is None or status.code != Code.SKIP:
                evaluations[keys[name]] += 1
            if record is not None:
                record.pre_filter_answer(name, status, None if plugin_result is None or plugin_result.node_names is None
                                         else len(plugin_result.node_names))
            if status is not None and status.code != Code.SUCCESS:
                if status.code == Code.SKIP:
                    state.skip_filter_plugins.add(name)
                    continue
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status.with_plugin(name), {name}
                if status.code == Code.UNSCHEDULABLE:
                    rejectors.add(name)
                    rejected = rejected or status.with_plugin(name)
                    continue
                if status.code == Code.PENDING:
                    return None, status.with_plugin(name), {name}
                return None, Status(Code.ERROR, (f"running PreFilter plugin \"{name}\": {status.message()}",), name,
                                    status.error), set()
            if plugin_result is not None and plugin_result.node_names is not None:
                narrowing.append(name)
                result = plugin_result if result is None else result.merge(plugin_result)
                if not result.node_names:
                    message = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                    if len(narrowing) == 1:
                        message = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), narrowing[0]), set(narrowing)
        if rejected is not None:
            return None, rejected, rejectors
        return result, None, set(narrowing)

    @extension_point("PreFilter", itemgetter(1))
    def run_pre_filter_kept(self, state: CycleState, result: PreFilterResult | None,
                            narrowing: frozenset[str]) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """PreFilter's successful answer (``result``, the plugins ``narrowing`` it) for a pod whose PreFilter already
        ran on the same state, kept: a PodGroup's member tried again in the next placement, the state back to what
        it was (``state``: a clone of the CycleState that run left).  The plugins are not called again; the run
        is counted and timed as one (each plugin that did not Skip evaluated once more), as :meth:`run_pre_filter`
        returns it."""
        evaluations, keys = self._evaluations, self._evaluation_key["PreFilter"]
        skipped = state.skip_filter_plugins
        for name, _ in self.pre_filter_plugins:
            if name not in skipped:
                evaluations[keys[name]] += 1
        return result, None, set(narrowing)

    def run_pre_filter_add_pod(self, state: CycleState, pod: Any, info: PodInfo, node_info: NodeInfo) -> Status | None:
        """Each PreFilter plugin's AddPod for ``info`` added to ``node_info`` (plugins whose PreFilter said Skip
        excluded): None, or an Error naming the plugin that failed (upstream ``RunPreFilterExtensionAddPod``)."""
        for name, method in self.add_pod_plugins:
            if name in state.skip_filter_plugins:
                continue
            status = method(state, pod, info, node_info)
            if status is not None and not status.is_success():
                return Status(Code.ERROR, (f"running AddPod on PreFilter plugin \"{name}\": {status.message()}",), name)
        return None

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Any, info: PodInfo, node_info: NodeInfo) -> Status | None:
        """Each PreFilter plugin's RemovePod for ``info`` taken off ``node_info`` (plugins whose PreFilter said Skip
        excluded): None, or an Error naming the plugin that failed (upstream ``RunPreFilterExtensionRemovePod``)."""
        for name, method in self.remove_pod_plugins:
            if name in state.skip_filter_plugins:
                continue
            status = method(state, pod, info, node_info)
            if status is not None and not status.is_success():
                return Status(Code.ERROR, (f"running RemovePod on PreFilter plugin \"{name}\": {status.message()}",), name)
        return None

    def run_filter(self, state: CycleState, pod: Any, node_info: NodeInfo) -> Status | None:
        """Upstream ``RunFilterPlugins``: the first non-success status (with its
        plugin), or None.  A non-rejection failure becomes Error."""
        skip = state.skip_filter_plugins
        plan = self._filter_plan
        if plan[0] is not self.filter_plugins or plan[1] != skip:  # another pod's skips (a gang's members share)
            plan = self._filter_plan = (self.filter_plugins, frozenset(skip),
                                        [(name, method) for name, method in self.filter_plugins if name not in skip])
        for name, method in plan[2]:
            status = method(state, pod, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return self.filter_status(name, status)
        return None

    def filter_status(self, name: str, status: Status | None) -> Status | None:
        """Filter plugin ``name``'s answer as the framework reports it: None for
        Success, a rejection with the plugin's name, anything else an Error."""
        if status is None or status.code == Code.SUCCESS:
            return None
        if not status.is_rejected():
            return Status(Code.ERROR, (f"running \"{name}\" filter plugin: {status.message()}",), name, status.error)
        return status.with_plugin(name)

    def run_filter_with_nominated_pods(
        self, state: CycleState, pod: Any, node_info: NodeInfo, nominated: list[PodInfo]
    ) -> Status | None:
        """Upstream ``RunFilterPluginsWithNominatedPods``: first with the ``nominated`` pods (equal or higher
        priority, nominated to this node) added, then, if that passed, without them."""
        if not nominated:
            return self.run_filter(state, pod, node_info)
        state_with = state.clone()
        node_with = node_info.clone()
        for info in nominated:
            node_with.add_pod(info)
            status = self.run_pre_filter_add_pod(state_with, pod, info, node_with)
            if status is not None:
                return status
        status = self.run_filter(state_with, pod, node_with)
        if status is not None:
            return status
        return self.run_filter(state, pod, node_info)

    def find_feasible_rows(
        self, state: CycleState, pod: Any, snapshot: Snapshot, rows: np.ndarray, to_find: int,
        nominated: Mapping[str, list[PodInfo]],
    ) -> tuple[np.ndarray, int]:
        """The first ``to_find`` of ``rows`` (snapshot rows, in the order given: the caller rotates them) that
        pass every Filter plugin, as upstream's ``findNodesThatPassFilters`` asks
        ``RunFilterPluginsWithNominatedPods`` of each node until it has found enough.  The rows are judged in
        chunks (twice ``to_find``, then doubling): batch filters (``filter_batch``) judge a chunk at once;
        per-node filters, and nodes with ``nominated`` pods to respect (node name -> pods of equal or higher
        priority nominated there), run one by one.  Returns ``(feasible rows, rows processed)``.  Raises
        :class:`FilterError` when a plugin fails with an Error."""
        count = len(rows)
        skip = state.skip_filter_plugins
        batches, per_node = [], []
        filter_batch = self._lists[state.record_plugin_metrics]["filter_batch"]
        for name, method in self.filter_plugins:
            if name in skip:
                continue
            batch = filter_batch.get(name)
            if batch is not None:
                batches.append((batch, method, name))
            else:
                per_node.append((method, name))
        nominated_rows = {snapshot.index[name] for name in nominated if name in snapshot.index}
        found: list[np.ndarray] = []
        found_count = 0
        start, size = 0, max(2 * to_find, MIN_FILTER_CHUNK)
        while start < count:
            chunk = rows[start:start + size]
            feasible, processed = self._feasible_in_chunk(state, pod, snapshot, chunk, to_find - found_count,
                                                          batches, per_node, nominated, nominated_rows)
            found.append(feasible)
            found_count += len(feasible)
            if found_count >= to_find:
                return np.concatenate(found), start + processed
            start += len(chunk)
            size *= 2
        return (np.concatenate(found) if found else rows[:0]), count

    def _feasible_in_chunk(self, state: CycleState, pod: Any, snapshot: Snapshot, rows: np.ndarray, to_find: int,
                           batches: list, per_node: list, nominated: Mapping[str, list[PodInfo]],
                           nominated_rows: set[int]) -> tuple[np.ndarray, int]:
        """:meth:`find_feasible_rows` over one chunk of rows.  A batch filter
        that declines (None) moves to ``per_node`` for the rest of the cycle."""
        count = len(rows)
        mask: np.ndarray | None = None  # the answers ANDed (never written into: an answer may be a plugin's array)
        evaluations, keys = self._evaluations, self._evaluation_key["Filter"]
        for batch, method, name in list(batches):
            answer = batch(state, pod, snapshot.table, rows)
            if answer is None:
                batches.remove((batch, method, name))
                per_node.append((method, name))
            else:
                evaluations[keys[name]] += count
                answer = np.asarray(answer, dtype=bool)
                mask = answer if mask is None else mask & answer
        if mask is None:
            mask = np.ones(count, dtype=bool)
        if not per_node:
            if nominated_rows:
                mask = mask.copy()
                self._filter_nominated_rows(state, pod, snapshot, rows, mask, nominated_rows, nominated, to_find)
            chosen = np.flatnonzero(mask)[:to_find]
            processed = int(chosen[-1]) + 1 if len(chosen) == to_find and len(chosen) else count
            return rows[chosen], processed
        feasible: list[int] = []
        calls = [0] * len(per_node)  # how many nodes each per-node plugin judged
        try:
            for position in range(count):
                row = int(rows[position])
                node_info = snapshot.nodes[row]
                if row in nominated_rows:
                    ok = self._filter_with_nominated(state, pod, node_info, nominated) is None
                elif not mask[position]:
                    ok = False
                else:
                    ok = True
                    for at, (method, _) in enumerate(per_node):
                        calls[at] += 1
                        status = method(state, pod, node_info)
                        if status is not None and status.code != Code.SUCCESS:
                            if not status.is_rejected():
                                raise FilterError(self.run_filter(state, pod, node_info) or status)
                            ok = False
                            break
                if ok:
                    feasible.append(row)
                    if len(feasible) >= to_find:
                        return np.array(feasible, dtype=np.int64), position + 1
            return np.array(feasible, dtype=np.int64), count
        finally:
            for (_, name), judged in zip(per_node, calls):
                evaluations[keys[name]] += judged

    def _filter_with_nominated(self, state: CycleState, pod: Any, node_info: NodeInfo,
                               nominated: Mapping[str, list[PodInfo]]) -> Status | None:
        return self.run_filter_with_nominated_pods(state, pod, node_info, nominated.get(node_info.name, []))

    def _filter_nominated_rows(self, state: CycleState, pod: Any, snapshot: Snapshot, rows: np.ndarray,
                               mask: np.ndarray, nominated_rows: set[int],
                               nominated: Mapping[str, list[PodInfo]], to_find: int) -> None:
        """Re-judge, in order, the rows the batch filters passed that have nominated
        pods to respect (Filter with those pods added); stops once ``to_find``
        rows pass before the next one.  Updates ``mask`` in place."""
        positions = np.flatnonzero(mask & np.isin(rows, np.fromiter(nominated_rows, dtype=np.int64)))
        if not len(positions):
            return
        passing_before = np.cumsum(mask) - mask
        rejected = 0
        for position in positions:
            if passing_before[position] - rejected >= to_find:
                return
            if self._filter_with_nominated(state, pod, snapshot.nodes[int(rows[position])], nominated) is not None:
                mask[position] = False
                rejected += 1

    def diagnose(self, state: CycleState, pod: Any, snapshot: Snapshot, rows: np.ndarray, narrowing: set[str],
                 nominated: Mapping[str, list[PodInfo]], within: np.ndarray | None = None) -> Diagnosis:
        """Why a pod fits nowhere: what Filter says of each node of the snapshot (upstream's
        ``Diagnosis.NodeToStatus``), or of the nodes ``within`` a placement (a PodGroup cycle: the others are not
        counted).  ``rows``: the rows PreFilter left; the others were cut by the ``narrowing`` PreFilter plugins'
        PreFilterResult and are UnschedulableAndUnresolvable, blaming them, as upstream does.  Raises
        :class:`FilterError` on a plugin Error."""
        diagnosis = Diagnosis()
        codes, distinct = self.filter_codes(state, pod, snapshot, rows)
        considered = np.zeros(len(snapshot), dtype=bool)
        considered[rows] = True
        for name, pods in nominated.items():
            row = snapshot.index.get(name)
            if pods and row is not None and considered[row]:
                codes[row] = len(distinct)
                distinct.append(self._filter_with_nominated(state, pod, snapshot.nodes[row], nominated))
        universe = np.ones(len(snapshot), dtype=bool) if within is None else np.zeros(len(snapshot), dtype=bool)
        if within is not None:
            universe[within] = True
        if len(rows) < int(universe.sum()):
            diagnosis.unschedulable_plugins |= narrowing
            codes[~considered] = len(distinct)
            distinct.append(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                   (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]",)))
        if within is not None:
            codes[~universe] = -1
        node_status = diagnosis.node_status = NodeToStatus.coded(snapshot.index, codes, distinct)
        for status, _ in node_status.counted():
            if status.code == Code.ERROR:
                raise FilterError(status)
            if status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)
        return diagnosis

    def filter_statuses(self, state: CycleState, pod: Any, snapshot: Snapshot, rows: np.ndarray) -> list[Status | None]:
        """Per snapshot row, what :meth:`run_filter` says (rows outside ``rows``:
        None), as :meth:`filter_codes` finds it."""
        codes, distinct = self.filter_codes(state, pod, snapshot, rows)
        return list(NodeToStatus.coded(snapshot.index, codes, distinct).per_row())

    def filter_codes(self, state: CycleState, pod: Any, snapshot: Snapshot,
                     rows: np.ndarray) -> tuple[np.ndarray, list[Status | None]]:
        """What :meth:`run_filter` says of each snapshot row, as ``(codes, distinct)``: row ``r``'s status is
        ``distinct[codes[r]]`` (code -1: it passed, or is outside ``rows``).  Each plugin is asked only about the
        rows no earlier plugin rejected, in batch where it can (``filter_batch_status``; ``filter_batch`` to skip
        the nodes it passes)."""
        count = len(snapshot)
        everything = np.arange(count, dtype=np.int64)
        codes = np.full(count, -1, dtype=np.int64)
        distinct: list[Status | None] = []
        undecided = np.zeros(count, dtype=bool)
        undecided[rows] = True
        for name, method in self.filter_plugins:
            if name in state.skip_filter_plugins:
                continue
            if not undecided.any():
                break
            batch_status = self.filter_batch_status.get(name)
            answer = batch_status(state, pod, snapshot.table, everything) if batch_status is not None else None
            if answer is not None:
                index, choices = answer
                index = np.asarray(index)
                rejected = undecided & (index >= 0)
                codes[rejected] = index[rejected] + len(distinct)
                distinct.extend(self.filter_status(name, status) for status in choices)
                undecided &= ~rejected
                continue
            batch = self.filter_batch.get(name)
            mask = batch(state, pod, snapshot.table, everything) if batch is not None else None
            asked = undecided if mask is None else undecided & ~np.asarray(mask, dtype=bool)
            for row in np.flatnonzero(asked).tolist():
                status = method(state, pod, snapshot.nodes[row])
                if status is not None and status.code != Code.SUCCESS:
                    codes[row] = len(distinct)
                    distinct.append(self.filter_status(name, status))
                    undecided[row] = False
        return codes, distinct

    @extension_point("PostFilter", itemgetter(1))
    def run_post_filter(
        self, state: CycleState, pod: Any, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``RunPostFilterPlugins``: plugins in order until one succeeds or says
        UnschedulableAndUnresolvable/Error.  When all reject, the status joins their reasons (naming the first
        rejecting plugin) and the result is the last one a plugin returned (None: leave the pod's nomination
        alone)."""
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for name, method in self._lists[state.record_plugin_metrics]["post_filter_plugins"]:
            answer = method(state, pod, statuses)
            plugin_result, status = answer if isinstance(answer, tuple) else (None, answer)
            if status is None or status.is_success():
                return plugin_result, None
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return plugin_result, status.with_plugin(name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, status.reasons, name, status.error)
            if plugin_result is not None:
                result = plugin_result
            reasons.extend(status.reasons)
            rejector = rejector or name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    @extension_point("Reserve")
    def run_reserve(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        """Reserve plugins in order: None, the first rejection as is, or an Error naming the plugin (upstream
        ``RunReservePluginsReserve``)."""
        for name, method in self._lists[state.record_plugin_metrics]["reserve_plugins"]:
            status = method(state, pod, node_name)
            if status is not None and not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(name)
                return Status(Code.ERROR, (f"running Reserve plugin \"{name}\": {status.message()}",), name, status.error)
        return None

    @extension_point("Unreserve", no_status)
    def run_unreserve(self, state: CycleState, pod: Any, node_name: str) -> None:
        """Every Reserve plugin's Unreserve, in reverse order (``unreserve_plugins`` holds them so)."""
        for _, method in self._lists[state.record_plugin_metrics]["unreserve_plugins"]:
            method(state, pod, node_name)

    @extension_point("Permit", lambda answer: answer[0] or (Status(Code.WAIT) if answer[1] else None))
    def run_permit(self, state: CycleState, pod: Any, node_name: str) -> tuple[Status | None, dict[str, float]]:
        """Returns (status, waits): a rejection or error status; or None with
        ``waits`` = {plugin: timeout seconds} for the plugins that said Wait."""
        waits: dict[str, float] = {}
        for name, method in self._lists[state.record_plugin_metrics]["permit_plugins"]:
            answer = method(state, pod, node_name)
            status, timeout = answer if isinstance(answer, tuple) else (answer, 0.0)
            if status is None or status.is_success():
                continue
            if status.code == Code.WAIT:
                waits[name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
                continue
            if status.is_rejected():
                return status.with_plugin(name), {}
            return Status(Code.ERROR, (f"running Permit plugin \"{name}\": {status.message()}",), name, status.error), {}
        return None, waits

    @extension_point("PreBind", itemgetter(0))
    def run_pre_bind(
        self, state: CycleState, pod: Any, node_name: str, start: int = 0
    ) -> tuple[Status | None, PreBindWait | None, int]:
        """PreBind plugins from index ``start`` on.  Returns ``(status, wait,
        index)``: the first failure (wait None); or a plugin's
        :class:`PreBindWait` and that plugin's index, to resume after it with
        ``start=index + 1`` once the wait is over; or ``(None, None, n)``."""
        for index in range(start, len(self.pre_bind_plugins)):
            name, method = self._lists[state.record_plugin_metrics]["pre_bind_plugins"][index]
            answer = method(state, pod, node_name)
            if isinstance(answer, PreBindWait):
                return None, answer, index
            status = self.pre_bind_status(index, answer)
            if status is not None:
                return status, None, index
        return None, None, len(self.pre_bind_plugins)

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Any, node_name: str) -> Status:
        """Upstream ``RunPreBindPreFlights``: Success when some PreBind plugin will act (one without the hook
        counts as acting), Skip when none will (or there is none), an Error naming the plugin when one fails
        (Unschedulable is not a pre-flight answer: an Error too)."""
        acting = False
        for name, _ in self.pre_bind_plugins:
            flight = self.pre_bind_pre_flights.get(name)
            status = flight(state, pod, node_name) if flight is not None else None
            if status is None or status.code == Code.SUCCESS:
                acting = True
            elif status.code != Code.SKIP:
                return Status(Code.ERROR, (f"running PreBindPreFlight plugin \"{name}\": {status.message()}",), name,
                              status.error)
        return Status(Code.SUCCESS) if acting else Status.skip()

    def pre_bind_status(self, index: int, status: Status | None) -> Status | None:
        """The binding outcome of PreBind plugin ``index`` answering ``status``:
        None to go on; Unschedulable as is (a scheduling failure); anything
        else an Error naming the plugin."""
        name = self.pre_bind_plugins[index][0]
        if status is None or status.code in (Code.SUCCESS, Code.SKIP):
            return None
        if status.code == Code.UNSCHEDULABLE:
            return status.with_plugin(name)
        return Status(Code.ERROR, (f"running PreBind plugin \"{name}\": {status.message()}",), name, status.error)

    @extension_point("Bind")
    def run_bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
        """Bind plugins in order until one handles the pod: None on success, an Error naming the plugin, or Skip when
        every plugin skipped (upstream ``RunBindPlugins``)."""
        for name, method in self._lists[state.record_plugin_metrics]["bind_plugins"]:
            status = method(state, pod, node_name)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is None or status.is_success():
                return None
            return Status(Code.ERROR, (f"running Bind plugin \"{name}\": {status.message()}",), name, status.error)
        return Status(Code.SKIP)

    @extension_point("PostBind", no_status)
    def run_post_bind(self, state: CycleState, pod: Any, node_name: str) -> None:
        """Every PostBind plugin, for information only (upstream ``RunPostBindPlugins``)."""
        for _, method in self._lists[state.record_plugin_metrics]["post_bind_plugins"]:
            method(state, pod, node_name)


class FilterError(Exception):
    """A Filter plugin failed with an Error (not a rejection); ``status`` says which and why."""

    def __init__(self, status: Status):
        super().__init__(status.message())
        self.status = status
