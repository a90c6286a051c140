"""Which nodes to add so that every pending pod and gang fits: cluster-autoscaler's scale-up, on kube-scheduler's decisions.

**Estimating one template** (cluster-autoscaler's ``estimator/binpacking_estimator.go``,
first fit): in a fork of the simulator, nodes of the template are added one at a
time and the scheduler runs to quiescence after each, so every pending pod and
gang goes where kube-scheduler would put it - resources, affinity, spreading,
DRA devices, a gang's topology constraint all decide, not a hand-written check.
Adding stops when nothing is pending, at the template's ``max-count``, or when
the last nodes added stayed empty: one empty node stops it, as upstream's
estimator stops (a pod that does not fit an empty node does not fit the next
one), unless a gang is pending - then up to as many empty nodes as the largest
pending gang has members may be added before it fits (a 4-node gang places
nothing until the 4th node).  Empty nodes are then removed; the estimate is the
nodes that hold pods and the pods placed.

The plan is made in a copy of the cluster as it is now in which the pending
pods (and PodGroups with no pod bound) do not preempt: cluster-autoscaler's
estimator never preempts, and so a pod that fits nowhere does not try
preemption again on every node added.

**Greedy mode** (cluster-autoscaler's loop): each round estimates every
template, the expander (:mod:`.expanders`) picks one, its nodes are added for
good, and rounds go on until nothing is pending or no template places a pod.

**Search mode** (a rollout search): each round tries every template's
estimate in a fork, completes the plan from there greedily with the
price expander, and keeps the first step of the complete plan that leaves the
fewest pods pending at the lowest cost per hour (then fewest nodes); a rollout
stops as soon as its cost passes the best complete plan's with no fewer pods
left (the bound).  It never does worse than the greedy price plan and costs
about templates x rounds greedy plans.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Sequence

import attrs

from kubesched.core.api.core_v1 import Event, ObjectMeta, Pod, PodStatus
from kubesched.core.api.resource_helpers import pod_requests
from kubesched.core.api.scheduling_v1beta1 import PodGroup
from kubesched.sim import Simulator

from .expanders import EXPANDERS, Option, price
from .templates import NodeTemplate


@attrs.frozen
class Unplaced:
    """A pod the plan leaves Pending: ``pod`` (``namespace/name``), ``group``
    (its PodGroup ``namespace/name``, "" alone), ``message`` (its FailedScheduling
    message after the plan, kube-scheduler's words) and ``templates``: template ->
    why a fresh node of it rejects the pod ("" when the pod alone would fit one:
    then its gang, max-count or another pod is in the way)."""

    pod: str
    group: str
    message: str
    templates: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class ScaleUp:
    """A scale-up plan: ``steps`` (the options chosen, in order), ``added``
    (template -> nodes), ``placements`` (each pod pending before -> its node, ""
    when still pending), ``groups`` (PodGroup ``namespace/name`` -> its pods),
    ``owners`` (each of those pods -> its controller ``Kind/name``, "" for none),
    ``unplaced`` (why those still pending are), ``cost_per_hour`` (of the added
    nodes)."""

    steps: tuple[Option, ...]
    placements: dict[str, str]
    groups: dict[str, tuple[str, ...]]
    owners: dict[str, str]
    unplaced: tuple[Unplaced, ...]

    @property
    def added(self) -> dict[str, int]:
        """Template name -> how many of its nodes the plan adds."""
        out: dict[str, int] = {}
        for step in self.steps:
            out[step.template.name] = out.get(step.template.name, 0) + step.count
        return out

    @property
    def cost_per_hour(self) -> float:
        """What the added nodes cost per hour, in the templates' currency."""
        return sum(step.cost_per_hour for step in self.steps)

    def as_dict(self) -> dict[str, Any]:
        """The plan as plain data (what ``kubesched plan -o json`` prints and the UI's Plan page shows):
        ``add`` (template, count, costPerHourEach, costPerHour), ``nodes``, ``costPerHour``, ``steps``,
        ``placements``, ``groups``, ``owners`` (pods with a controller), ``unplaced``."""
        costs = {step.template.name: step.template.cost_per_hour for step in self.steps}
        return {
            "add": [{"template": name, "count": count, "costPerHourEach": costs[name],
                     "costPerHour": round(count * costs[name], 6)} for name, count in self.added.items()],
            "nodes": sum(self.added.values()),
            "costPerHour": round(self.cost_per_hour, 6),
            "steps": [{"template": s.template.name, "count": s.count, "pods": list(s.pods)} for s in self.steps],
            "placements": dict(self.placements),
            "groups": {group: list(pods) for group, pods in self.groups.items()},
            "owners": {pod: owner for pod, owner in self.owners.items() if owner},
            "unplaced": [{"pod": u.pod, "group": u.group, "message": u.message, "templates": dict(u.templates)}
                         for u in self.unplaced],
        }


def landing_rows(answer: dict) -> list[tuple[str, str]]:
    """Where the pending pods of :meth:`ScaleUp.as_dict` land, for a person: (what, nodes) - one row per gang,
    then per controller (a ReplicaSet's pods), then per pod; nodes as :func:`node_counts` writes them."""
    rows = []
    grouped = {pod for pods in answer["groups"].values() for pod in pods}
    for group, pods in answer["groups"].items():
        rows.append((f"podgroup/{group} ({len(pods)} pods)", node_counts([answer["placements"][p] for p in pods])))
    workloads: dict[str, list[str]] = {}
    for pod in answer["placements"]:
        if pod not in grouped:
            owner = answer["owners"].get(pod)
            kind, _, name = (owner or "").partition("/")
            workloads.setdefault(f"{kind} {pod.split('/')[0]}/{name}" if owner else pod, []).append(pod)
    for owner, pods in workloads.items():
        label = pods[0] if owner == pods[0] else f"{owner} ({len(pods)} pods)"
        rows.append((label, node_counts([answer["placements"][p] for p in pods])))
    return rows


def node_counts(nodes: list[str]) -> str:
    """``a, b x2, (pending) x3``: each node (sorted, "(pending)" last) with how many of ``nodes`` name it."""
    counts: dict[str, int] = {}
    for node in sorted(nodes, key=lambda n: (not n, n)):
        counts[node or "(pending)"] = counts.get(node or "(pending)", 0) + 1
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts.items())


def pending(sim: Simulator) -> list[Pod]:
    """The pods bound to no node and not finished, sorted by ``namespace/name``."""
    return [pod for pod in sim.pods() if not pod.spec.node_name and not pod.terminal
            and pod.metadata.deletion_timestamp is None]


class _Planner:
    """The state of one plan: the simulator (changed as steps are taken) and the next node index per template."""

    def __init__(self, sim: Simulator, templates: Sequence[NodeTemplate]):
        self.sim = sim
        self.templates = list(templates)
        self.next_index = {t.name: 1 for t in self.templates}
        self.added = {t.name: 0 for t in self.templates}
        self.tried = 0  # how many node indices the last estimate used
        #: template name -> (its last option, the fork holding it, indices used): taken without estimating again
        self.estimated: dict[str, tuple[Option, Simulator, int]] = {}

    def budget(self, template: NodeTemplate) -> int:
        return template.max_count - self.added[template.name]

    def estimate(self, template: NodeTemplate) -> Option:
        """Add nodes of ``template`` one at a time as the module says, drop the empty ones; the sim keeps them."""
        before = pending(self.sim)
        waiting = {pod.key: pod for pod in before}
        slack = max((len(members) for members in _groups(waiting.values()).values()), default=0)
        names: list[str] = []
        empty_run = 0
        placements = self.sim.placements()
        while waiting and len(names) < self.budget(template) and empty_run <= slack:
            objects = template.instance(self.next_index[template.name] + len(names))
            self.sim.create(objects)
            names.append(objects[0].metadata.name)
            placements = self.sim.placements()
            placed = [key for key in waiting if placements.get(key)]
            empty_run = 0 if placed else empty_run + 1
            for key in placed:
                del waiting[key]
        self.tried = len(names)
        used = set(placements.values())
        for position, name in enumerate(names):
            if name not in used:
                for obj in template.instance(self.next_index[template.name] + position):
                    self.sim.delete(type(obj).__name__, obj.key)
        placed_pods = [pod for pod in before if placements.get(pod.key)]
        requests = [pod_requests(pod) for pod in placed_pods]
        return Option(template, sum(1 for n in names if n in used), tuple(p.key for p in placed_pods),
                      cpu=sum(r.get("cpu", 0) for r in requests), memory=sum(r.get("memory", 0) for r in requests))

    def options(self) -> list[Option]:
        """Every template's estimate, each in a fork of the simulator (left as it was)."""
        found = []
        estimated = {}
        for template in self.templates:
            if self.budget(template) <= 0:
                continue
            with self.trying():
                option = self.estimate(template)
                estimated[template.name] = (option, self.sim, self.tried)
            if option.pods:
                found.append(option)
        self.estimated = estimated
        return found

    @contextlib.contextmanager
    def trying(self) -> Iterator[None]:
        """Work on a fork of the simulator while the block lasts; then the simulator and indices as they were."""
        saved = self.sim, dict(self.next_index), dict(self.added), self.estimated
        self.sim, self.estimated = saved[0].fork(), {}
        try:
            yield
        finally:
            self.sim, self.next_index, self.added, self.estimated = saved

    def take(self, option: Option) -> Option:
        """Add ``option``'s nodes for good: the fork :meth:`options` made it in becomes the simulator (once),
        or the same estimate is made again and kept."""
        name = option.template.name
        made = self.estimated.pop(name, None)
        if made is not None and made[0] is option:
            taken, self.sim, self.tried = made
        else:
            taken = self.estimate(option.template)
        self.estimated = {}
        self.next_index[name] += self.tried
        self.added[name] += taken.count
        return taken

    def greedy(self, expander: Callable[[Sequence[Option]], Option], bound: float | None = None) -> list[Option]:
        """Rounds of estimate-all, expander picks, take it; stops early when the cost passes ``bound``."""
        steps: list[Option] = []
        while pending(self.sim):
            options = self.options()
            if not options:
                break
            steps.append(self.take(expander(options)))
            if bound is not None and sum(s.cost_per_hour for s in steps) > bound:
                break
        return steps


def plan_scale_up(sim: Simulator, templates: Sequence[NodeTemplate], expander: str = "least-waste",
                  search: bool = False) -> ScaleUp:
    """Plan the nodes to add (see the module's documentation) in forks of ``sim``,
    which is left as it was.  ``expander``: a
    key of :data:`~.expanders.EXPANDERS`; ``search``: the rollout search instead
    of the greedy rounds.  Raises ``KeyError`` for an unknown expander."""
    choose = EXPANDERS[expander]
    sim = _not_preempting(sim)
    before = pending(sim)
    planner = _Planner(sim, templates)
    steps = _search(planner) if search else planner.greedy(choose)
    placements = planner.sim.placements()
    after = {pod.key: placements.get(pod.key, "") for pod in before}
    groups = _groups(before)
    owners = {pod.key: next((f"{ref.kind}/{ref.name}" for ref in pod.metadata.owner_references if ref.controller), "")
              for pod in before}
    return ScaleUp(tuple(steps), after, {g: tuple(p.key for p in pods) for g, pods in groups.items()}, owners,
                   tuple(_explain(planner, [pod for pod in before if not after[pod.key]])))


def _not_preempting(sim: Simulator) -> Simulator:
    """A simulator of what ``sim`` holds now (its configuration, feature gates and time) in which the pending
    pods - and the PodGroups none of whose pods is bound, with their pods - have ``preemptionPolicy: Never``:
    cluster-autoscaler's estimator never preempts, and a pod that cannot fit would otherwise try preemption
    again on every node added (most of the work)."""
    simulation = sim.simulation
    stored = [obj for obj in simulation.cluster.objects() if not isinstance(obj, Event)]
    bound_groups = {_group_of(obj) for obj in stored if isinstance(obj, Pod) and obj.spec.node_name} - {None}
    objects = []
    for obj in stored:  # the admitted priority is kept without its class, whose policy may differ
        if isinstance(obj, PodGroup) and f"{obj.metadata.namespace}/{obj.metadata.name}" not in bound_groups:
            obj = attrs.evolve(obj, spec=attrs.evolve(obj.spec, preemption_policy="Never", priority_class_name=""))
        elif isinstance(obj, Pod) and not obj.spec.node_name and not obj.terminal and _group_of(obj) not in bound_groups:
            obj = attrs.evolve(obj, spec=attrs.evolve(obj.spec, preemption_policy="Never", priority_class_name=""))
        objects.append(obj)
    features = simulation.features
    return Simulator.from_manifests(objects, config=simulation.config, feature_gates=features.overrides,
                                    emulated_version=features.emulated_version, start=simulation.clock.now())


def _group_of(pod: Pod) -> str | None:
    """The ``namespace/name`` of ``pod``'s PodGroup (None alone)."""
    group = pod.spec.scheduling_group
    return f"{pod.metadata.namespace}/{group.pod_group_name}" if group is not None and group.pod_group_name else None


def _search(planner: _Planner) -> list[Option]:
    steps: list[Option] = []
    while pending(planner.sim):
        options = planner.options()
        if not options:
            break
        best: tuple[int, float, int] | None = None
        chosen = options[0]
        for option in options:
            with planner.trying():
                first = planner.take(option)
                rest = planner.greedy(price, bound=best[1] if best else None)
                score = (len(pending(planner.sim)), sum(s.cost_per_hour for s in [first, *rest]),
                         sum(s.count for s in [first, *rest]))
            if best is None or score < best:
                best, chosen = score, option
        steps.append(planner.take(chosen))
    return steps


def _groups(pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    """PodGroup ``namespace/name`` -> its pods among ``pods``."""
    out: dict[str, list[Pod]] = {}
    for pod in pods:
        group = pod.spec.scheduling_group
        if group is not None and group.pod_group_name:
            out.setdefault(f"{pod.metadata.namespace}/{group.pod_group_name}", []).append(pod)
    return out


def _explain(planner: _Planner, pods: list[Pod]) -> list[Unplaced]:
    """Why each pod in ``pods`` is still pending.  A PodGroup's pod: its FailedScheduling message.  For one pod
    of each shape (same namespace and spec) a copy outside any gang is asked about: its FailedScheduling
    message on the planned cluster (a pod alone), then on a fresh node of every template (in a fork)."""
    sim = planner.sim
    current = {pod.key: pod for pod in sim.pods()}
    shapes = {f"{pod.metadata.namespace}\0{pod.spec!r}": pod for pod in pods}
    messages = {shape: next(iter(sim.can_schedule(_alone(pod)).messages.values()), "")
                for shape, pod in shapes.items()}
    probe = sim.fork()
    probes = {}
    for template in planner.templates:
        objects = template.instance(planner.next_index[template.name])
        probe.create(objects)
        probes[template.name] = objects[0].metadata.name
    reasons = {shape: _template_reasons(probe, pod, probes) for shape, pod in shapes.items()}
    out = []
    for pod in pods:
        shape = f"{pod.metadata.namespace}\0{pod.spec!r}"
        group = pod.spec.scheduling_group.pod_group_name if pod.spec.scheduling_group is not None else None
        in_group = bool(group)
        out.append(Unplaced(pod.key, f"{pod.metadata.namespace}/{group}" if in_group else "",
                            _condition_message(current.get(pod.key, pod)) if in_group else messages[shape],
                            reasons[shape]))
    return out


def _alone(pod: Pod) -> Pod:
    """A copy of ``pod`` to ask about: named ``<name>-probe``, no node, no gang, no status."""
    return attrs.evolve(pod, metadata=ObjectMeta(name=f"{pod.metadata.name}-probe", namespace=pod.metadata.namespace,
                                                 labels=dict(pod.metadata.labels),
                                                 annotations=dict(pod.metadata.annotations)),
                        spec=attrs.evolve(pod.spec, node_name="", scheduling_group=None), status=PodStatus())


def _template_reasons(sim: Simulator, pod: Pod, probes: dict[str, str]) -> dict[str, str]:
    copy = _alone(pod)
    reasons = sim.can_schedule(copy).reasons.get(copy.key, {})
    return {template: reasons.get(node, "") for template, node in probes.items()}


def _condition_message(pod: Pod) -> str:
    return next((c.message for c in pod.status.conditions if c.type == "PodScheduled"), "")
