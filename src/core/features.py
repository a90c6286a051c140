"""Feature gates and the emulated version, as kube-scheduler's component-base has them.

Every gate kubesched knows is a :class:`Gate`: its stages per release (when it
became alpha, beta, GA, whether it is on by default and whether it is locked
to that default), the release whose binary no longer knows it (gates merged
into another) and the gates it depends on - transcribed from upstream's
versioned feature list (kubernetes/kubernetes ``pkg/features/kube_features.go``
and the scheduler's own list, 1.37 development).  :class:`FeatureGates` is one
scheduler's (and its embedded API server's) set of values: every gate at its
default in the emulated release (``--emulated-version``, one of
:data:`RELEASES`, default the newest), overridden by ``--feature-gates``.

Each scheduler owns its own :class:`FeatureGates` (``kubesched compare`` runs
two releases in one process); a plugin reads it through its handle
(``handle.features.enabled("SchedulerPopFromBackoffQ")``), the scheduler and
the embedded API server hold the same object.

Objects that exist only while a gate is on (a PodGroup needs
GenericWorkload) call :meth:`FeatureGates.require`: a gate that is off only by
default is switched on and a one-line note says so (:attr:`FeatureGates.notes`);
a gate the user turned off, or one that does not exist yet in the emulated
release, refuses the object.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

#: The releases kubesched emulates, oldest first (upstream's binary emulates itself and the three before it).
RELEASES = ("1.34", "1.35", "1.36", "1.37")
#: The default ``--emulated-version``.
NEWEST = RELEASES[-1]

ALPHA, BETA, GA = "ALPHA", "BETA", ""


class FeatureGateError(ValueError):
    """A ``--feature-gates`` or ``--emulated-version`` value refused, with upstream's wording
    (``unrecognized feature gate: X``, ``cannot set feature gate X to false, feature is locked to true``)."""


def _version(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor)


@attrs.frozen
class Stage:
    """One entry of a gate's versioned specs: from release ``since`` on, the gate
    is ``prerelease`` (ALPHA, BETA or GA ``""``), ``default`` on or off, and
    ``locked`` to that default (setting the other value is refused)."""

    since: str
    default: bool
    prerelease: str
    locked: bool = False


@attrs.frozen
class Gate:
    """A feature gate: ``stages`` oldest first; ``removed``: the first release whose binary no longer
    knows it (None: still known), ``merged_into``: the gate that carries its behaviour from then on;
    ``depends``: the gates it needs on; ``switches``: what it changes in kubesched (empty: kubesched has
    no behaviour behind it, its value changes nothing)."""

    name: str
    stages: tuple[Stage, ...]
    switches: str = ""
    depends: tuple[str, ...] = ()
    removed: str | None = None
    merged_into: str | None = None

    def stage(self, release: str) -> Stage | None:
        """The stage in force at ``release``; None before the gate existed (upstream's PreAlpha)."""
        found = None
        for stage in self.stages:
            if _version(stage.since) <= _version(release):
                found = stage
        return found

    def known(self, release: str) -> bool:
        """The release's binary knows this gate (not yet removed)."""
        return self.removed is None or _version(release) < _version(self.removed)


def _gate(name: str, *stages: tuple, switches: str = "", depends: tuple[str, ...] = (),
          removed: str | None = None, merged_into: str | None = None) -> Gate:
    return Gate(name, tuple(Stage(*s) for s in stages), switches, depends, removed, merged_into)


_DRA = ("DynamicResourceAllocation",)

#: Every gate kubesched knows, by name (upstream's versioned specs for the releases before and within
#: :data:`RELEASES`; earlier history kept only where it decides a default).
GATES: dict[str, Gate] = {g.name: g for g in (
    _gate("CompositePodGroup", ("1.37", False, ALPHA), depends=("GenericWorkload",),
          switches="CompositePodGroup objects (API) and their scheduling as one tree"),
    _gate("DRAAdminAccess", ("1.32", False, ALPHA), ("1.34", True, BETA), ("1.36", True, GA, True), depends=_DRA),
    _gate("DRAConsumableCapacity", ("1.34", False, ALPHA), ("1.36", True, BETA), depends=_DRA,
          switches="a ResourceSlice device's allowMultipleAllocations (the embedded API server drops it when off)"),
    _gate("DRADerivedAttributes", ("1.37", False, ALPHA), depends=_DRA),
    _gate("DRADeviceBindingConditions", ("1.34", False, ALPHA), ("1.36", True, BETA),
          depends=("DynamicResourceAllocation", "DRAResourceClaimDeviceStatus"),
          switches="a device's bindingConditions/bindingFailureConditions/bindsToNode (dropped when off): "
                   "PreBind waits for them"),
    _gate("DRADeviceCompatibilityGroups", ("1.37", False, ALPHA), depends=("DRAPartitionableDevices",),
          switches="a counter consumption's compatibilityGroups (dropped when off): devices sharing a counter set "
                   "must share a group; allocations record them"),
    _gate("DRADeviceTaintRules", ("1.35", False, ALPHA), ("1.36", False, BETA), ("1.37", True, GA),
          depends=("DRADeviceTaints",), switches="DeviceTaintRule objects (API)"),
    _gate("DRADeviceTaints", ("1.33", False, ALPHA), ("1.36", True, BETA), ("1.37", True, GA), depends=_DRA,
          switches="a ResourceSlice device's taints (dropped when off): DynamicResources passes tainted devices over"),
    _gate("DRAExtendedResource", ("1.34", False, ALPHA), ("1.36", True, BETA), ("1.37", True, GA, True),
          depends=_DRA, switches="an extended resource a DeviceClass maps to devices: NodeResourcesFit and "
                                 "BalancedAllocation leave it to DynamicResources, DeviceClass events requeue"),
    _gate("DRAFractionalCapacityRange", ("1.37", False, BETA), depends=_DRA),
    _gate("DRAListTypeAttributes", ("1.36", False, ALPHA), depends=_DRA,
          switches="list-typed device attributes (dropped when off); matchAttribute/distinctAttribute over "
                   "value sets (intersection, pairwise disjoint)"),
    _gate("DRANodeAllocatableResources", ("1.36", False, ALPHA), depends=_DRA),
    _gate("DRAOptionalNodeOperations", ("1.37", False, ALPHA), depends=_DRA),
    _gate("DRAPartitionableDevices", ("1.33", False, ALPHA), ("1.36", True, BETA), depends=_DRA,
          switches="a ResourceSlice's sharedCounters and its devices' consumesCounters (dropped when off)"),
    _gate("DRAPrioritizedList", ("1.33", False, ALPHA), ("1.34", True, BETA), ("1.36", True, GA),
          ("1.37", True, GA, True), depends=_DRA),
    _gate("DRAResourceClaimDeviceStatus", ("1.32", False, ALPHA), ("1.33", True, BETA), ("1.37", True, GA, True)),
    _gate("DRASchedulerFilterTimeout", ("1.34", True, BETA), depends=_DRA),
    _gate("DRAWorkloadResourceClaims", ("1.36", False, ALPHA), ("1.37", False, BETA),
          depends=("DynamicResourceAllocation", "GenericWorkload")),
    _gate("DynamicResourceAllocation", ("1.32", False, BETA), ("1.34", True, GA), ("1.35", True, GA, True)),
    _gate("GangScheduling", ("1.35", False, ALPHA), depends=("GenericWorkload",), removed="1.37",
          merged_into="GenericWorkload",
          switches="GangScheduling's PreEnqueue and PlacementFeasible (a gang's minCount); from 1.37 GenericWorkload"),
    _gate("GenericWorkload", ("1.35", False, ALPHA), ("1.37", False, BETA),
          switches="Workload and PodGroup objects (API), a pod's spec.schedulingGroup; a PodGroup's pods queued "
                   "and scheduled as one (the PodGroup cycle); GangScheduling and workload-aware preemption from 1.37"),
    _gate("InPlacePodLevelResourcesVerticalScaling", ("1.35", False, ALPHA), ("1.36", True, BETA),
          depends=("InPlacePodVerticalScaling", "PodLevelResources", "NodeDeclaredFeatures")),
    _gate("InPlacePodVerticalScaling", ("1.33", True, BETA), ("1.35", True, GA, True),
          switches="the pods/resize subresource (API); a placed pod counted by its allocated/applied resources; "
                   "NodeResourcesFit requeues on a placed pod's scale-down"),
    _gate("InPlacePodVerticalScalingSchedulerPreemption", ("1.37", False, ALPHA),
          switches="a bound pod whose resize is Deferred is queued; its cycle preempts on its own node for it"),
    _gate("InterPodAffinityHostnameFastPath", ("1.37", False, ALPHA)),
    _gate("MatchLabelKeysInPodTopologySpread", ("1.27", True, BETA)),
    _gate("NodeDeclaredFeatures", ("1.35", False, ALPHA), ("1.36", True, BETA), ("1.37", True, GA, True),
          switches="a Node's status.declaredFeatures (API); the NodeDeclaredFeatures plugin's PreFilter/Filter"),
    _gate("NodeInclusionPolicyInPodTopologySpread", ("1.26", True, BETA), ("1.33", True, GA, True)),
    _gate("NominatedNodeNameForExpectation", ("1.34", False, ALPHA), ("1.35", True, BETA),
          switches="the binding cycle writes status.nominatedNodeName before PreBind work (PreBindPreFlight) "
                   "or a Permit wait"),
    _gate("OpportunisticBatching", ("1.35", True, BETA),
          switches="a pod signed like the pod scheduled just before it takes the next node of that pod's "
                   "sorted feasible nodes (SignPlugin, core/scheduler/opportunistic_batch.py)"),
    _gate("PodGroupPreemptionPolicy", ("1.37", False, ALPHA), depends=("GenericWorkload",)),
    _gate("PodLevelResources", ("1.32", False, ALPHA), ("1.34", True, BETA),
          switches="a pod's spec.resources (API), counted as its requests"),
    _gate("SchedulerAsyncAPICalls", ("1.34", False, BETA)),
    _gate("SchedulerAsyncPreemption", ("1.32", False, ALPHA), ("1.33", True, BETA),
          switches="a daemon evicts preemption victims on its API workers, the preemptor waiting for them "
                   "(off: on the scheduling loop)"),
    _gate("SchedulerPopFromBackoffQ", ("1.33", True, BETA),
          switches="the queue pops backoffQ's head when activeQ is empty; backoff ends on whole-second windows"),
    _gate("SchedulerPreQueueingHints", ("1.37", False, ALPHA)),
    _gate("SchedulerQueueingHints", ("1.28", False, BETA), ("1.32", True, BETA), ("1.34", True, GA, True)),
    _gate("StorageCapacityScoring", ("1.33", False, ALPHA), ("1.37", True, BETA),
          switches="VolumeBinding's Score and its default shape; a shape is refused while off"),
    _gate("TaintTolerationComparisonOperators", ("1.35", False, ALPHA)),
    _gate("TopologyAwareWorkloadScheduling", ("1.36", False, ALPHA), depends=("GenericWorkload",),
          switches="a PodGroup's spec.schedulingConstraints (API); TopologyPlacementGenerator, PodGroupPodsCount"),
    _gate("VolumeAttributesClass", ("1.31", False, BETA), ("1.34", True, GA), ("1.36", True, GA, True)),
    _gate("VolumeLimitScaling", ("1.35", False, ALPHA), ("1.37", True, BETA),
          switches="NodeVolumeLimits refusing nodes without a CSIDriver's preventPodSchedulingIfMissing driver"),
    _gate("WorkloadAwarePreemption", ("1.36", False, ALPHA), depends=("GangScheduling",), removed="1.37",
          merged_into="GenericWorkload",
          switches="DefaultPreemption's PodGroupPostFilter (a PodGroup preempting as one); from 1.37 GenericWorkload"),
    _gate("WorkloadWithJob", ("1.36", False, ALPHA), depends=("GenericWorkload",),
          switches="the job-controller creates a Job's Workload and PodGroup before its pods and puts them in it "
                   "(1.36: Indexed Jobs with completions = parallelism > 1, as a gang; 1.37: a Job's "
                   "spec.scheduling, Basic when omitted)"),
)}


def parse_feature_gates(values: str | Iterable[str]) -> dict[str, bool]:
    """``Name=true,Other=false`` (one string, or several as repeated ``--feature-gates`` options give)
    as a dict, as component-base's ``Set`` parses it; raises :class:`FeatureGateError`
    (``missing bool value for X``, ``invalid value of X=Y, err: ...``)."""
    parsed: dict[str, bool] = {}
    for value in [values] if isinstance(values, str) else values:
        for item in value.split(","):
            if not item:
                continue
            key, sep, raw = item.partition("=")
            key = key.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {key}")
            parsed[key] = _parse_bool(key, raw.strip())
    return parsed


_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _parse_bool(key: str, raw: str) -> bool:
    """Go's strconv.ParseBool."""
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise FeatureGateError(f'invalid value of {key}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax')


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


class FeatureGates:
    """One scheduler's feature gates: every :data:`GATES` entry at its default in
    ``emulated_version`` (one of :data:`RELEASES`; None: :data:`NEWEST`), with
    ``overrides`` (name -> bool, what ``--feature-gates`` sets) applied.

    Raises :class:`FeatureGateError` with component-base's message for a
    release out of range (``emulation version 1.33 is not between [1.34, 1.37]``),
    an unknown gate (``unrecognized feature gate: X``), a gate locked to its
    default (``cannot set feature gate X to false, feature is locked to true``),
    one that does not exist yet in that release (``... feature is PreAlpha at
    emulated version 1.35, min compatibility version 1.34``) or a gate on whose
    dependency the user turned off (``X is enabled, but depends on features that
    are disabled: [Y]``).  A dependency that is off only by default is switched
    on with a note instead.

    Read with :meth:`enabled`; thread-safe (the daemon's API server and
    scheduler share one).
    """

    def __init__(self, emulated_version: str | None = None, overrides: Mapping[str, bool] | None = None):
        release = emulated_version or NEWEST
        if release not in RELEASES:
            raise FeatureGateError(f"emulation version {release} is not between [{RELEASES[0]}, {NEWEST}]")
        self.emulated_version = release
        #: the values the user set (after validation), by gate name
        self.overrides: dict[str, bool] = {}
        #: one line per gate kubesched switched on by itself (a dependency, an object that needs it)
        self.notes: list[str] = []
        self._lock = threading.RLock()
        self._values: dict[str, bool] = {}
        for name, gate in GATES.items():
            stage = gate.stage(release)
            if gate.known(release) and stage is not None:
                self._values[name] = stage.default
        for name, value in (overrides or {}).items():
            self._set(name, bool(value))
        self._check_dependencies()
        self._resolve()

    def _resolve(self) -> None:
        """Recompute what :meth:`enabled` answers for every gate (after any change of a value): a gate merged
        into another reads that one's value while the emulated release does not know it."""
        answers: dict[str, bool] = {}
        for name in GATES:
            gate = GATES[name]
            while gate.merged_into is not None and not gate.known(self.emulated_version):
                gate = GATES[gate.merged_into]
            answers[name] = self._values.get(gate.name, False)
        self._enabled = answers  # one assignment: a reader on another thread sees the old or the new table

    def _set(self, name: str, value: bool) -> None:
        gate = GATES.get(name)
        if gate is None or not gate.known(self.emulated_version):
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        stage = gate.stage(self.emulated_version)
        if stage is None:
            major, minor = _version(self.emulated_version)
            minimum = f"{major}.{minor - 1}"  # component-base's default: the emulated version minus one minor
            raise FeatureGateError(f"cannot set feature gate {name} to {_go_bool(value)}, feature is PreAlpha at "
                                   f"emulated version {self.emulated_version}, min compatibility version {minimum}")
        if stage.locked and value != stage.default:
            raise FeatureGateError(f"cannot set feature gate {name} to {_go_bool(value)}, feature is locked to "
                                   f"{_go_bool(stage.default)}")
        self.overrides[name] = value
        self._values[name] = value
        if not gate.switches and value != stage.default:
            self.note(f"feature gate {name}={_go_bool(value)}: kubesched switches nothing on this gate "
                      f"(docs/feature-gates.md)")

    def _check_dependencies(self) -> None:
        changed = True
        while changed:  # switching a dependency on may enable gates whose own dependencies are off
            changed = False
            for name in sorted(self._values):
                if not self._values[name]:
                    continue
                off = [dep for dep in GATES[name].depends if not self._values.get(dep, False)]
                fixable = [dep for dep in off if dep in self._values and dep not in self.overrides]
                if off and fixable == off:
                    for dep in off:
                        self._values[dep] = True
                        self.note(f"feature gate {dep} turned on: {name} depends on it "
                                          f"(off by default in {self.emulated_version})")
                    changed = True
                elif off:
                    raise FeatureGateError(f"{name} is enabled, but depends on features that are disabled: "
                                           f"[{' '.join(off)}]")

    def copy(self) -> "FeatureGates":
        """An independent set with the same release, values and notes (a copy of a simulation switches gates on
        for itself alone)."""
        with self._lock:
            twin = FeatureGates(self.emulated_version, self.overrides)
            twin._values = dict(self._values)
            twin.notes = list(self.notes)
            twin._resolve()  # the gates switched on since this set was made answer on in the copy too
        return twin

    def note(self, text: str) -> None:
        """Keep ``text`` in :attr:`notes` (the commands print them): a gate switched on, a field dropped;
        a note already there is not repeated."""
        with self._lock:
            if text not in self.notes:
                self.notes.append(text)

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on.  A gate the emulated release does not know
        is off, unless it was merged into another (GangScheduling into GenericWorkload in 1.37):
        then that gate's value; raises ``KeyError`` for a name no release knows (a typo in code)."""
        try:
            return self._enabled[name]
        except KeyError:
            raise KeyError(f"unknown feature gate {name!r}") from None

    def locked_to(self, name: str) -> bool | None:
        """The value gate ``name`` is locked to in the emulated release (None: not locked, or unknown)."""
        gate = GATES.get(name)
        stage = gate.stage(self.emulated_version) if gate is not None and name in self._values else None
        return stage.default if stage is not None and stage.locked else None

    def settable_release(self, gates: Mapping[str, bool]) -> str | None:
        """The newest release, not newer than the emulated one, that accepts
        every gate of ``gates`` at its value (none unknown, none locked to the
        other value, no dependency left off); None when there is none."""
        for release in reversed(RELEASES[:RELEASES.index(self.emulated_version) + 1]):
            try:
                FeatureGates(release, gates)
            except FeatureGateError:
                continue
            return release
        return None

    def exists(self, name: str) -> bool:
        """Gate ``name`` exists in the emulated release (introduced, not removed)."""
        return name in self._values

    def require(self, name: str, what: str) -> str | None:
        """An object or field ``what`` (``PodGroup default/train``) exists only while gate ``name`` is on:
        None when it is (switching it and the gates it depends on on, with a note, when they are off only
        by default), else why not (the user turned it off, or the release does not have it yet)."""
        with self._lock:
            if self._values.get(name, False):
                return None
            gate = GATES[name]
            chain = [name, *(dep for dep in gate.depends if not self._values.get(dep, False))]
            for gate_name in chain:
                if gate_name not in self._values:
                    return f"feature gate {gate_name} does not exist in {self.emulated_version}"
                if gate_name in self.overrides:
                    return f"feature gate {gate_name} is turned off"
            for gate_name in reversed(chain):
                self._values[gate_name] = True
                self.note(f"feature gate {gate_name} turned on: {what} needs it "
                                  f"(off by default in {self.emulated_version})")
            self._resolve()
            return None

    def with_overrides(self, overrides: Mapping[str, bool]) -> "FeatureGates":
        """A new set at the same release with this one's overrides and then ``overrides`` applied
        (scheduler_perf: a test case's gates, then its workload's).  Raises :class:`FeatureGateError`."""
        return FeatureGates(self.emulated_version, {**self.overrides, **overrides})

    def values(self) -> dict[str, bool]:
        """Every gate the emulated release knows, with its value."""
        with self._lock:
            return dict(sorted(self._values.items()))

    def __repr__(self) -> str:
        sets = ",".join(f"{k}={_go_bool(v)}" for k, v in sorted(self.overrides.items()))
        return f"FeatureGates({self.emulated_version}{', ' + sets if sets else ''})"


def default_table() -> list[dict[str, Any]]:
    """One row per gate: name, its default and stage in each of :data:`RELEASES` (None: not in that
    release), and what it switches in kubesched - the docs table and ``kubesched config gates``."""
    rows = []
    for name, gate in sorted(GATES.items()):
        per_release: dict[str, Any] = {}
        for release in RELEASES:
            stage = gate.stage(release)
            if stage is None or not gate.known(release):
                per_release[release] = None
            else:
                per_release[release] = {"default": stage.default, "stage": stage.prerelease or "GA",
                                        "locked": stage.locked}
        rows.append({"name": name, "releases": per_release, "switches": gate.switches})
    return rows
