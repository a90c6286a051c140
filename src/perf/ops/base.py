"""What every op is and what it may ask of the executor running it.

:class:`PerfOp` is the base of every row of the table in
:mod:`kubesched.perf.ops`: its fields (checked when the config file loads),
its parse-time and resolve-time checks (upstream's ``isValid``), the check
before anything runs (:meth:`PerfOp.check`, raising :class:`Unsupported`
for what kubesched cannot do the way kube-scheduler would) and
:meth:`PerfOp.run`.  :class:`Executor` is the executor as an op sees it:
the cluster, the clock, the counts of pods per namespace and the loop that
drives the scheduler while an op waits; :class:`Background` is a timer chain
an op leaves running (churn, paced deletions).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol

import attrs

from ...core.clock import Clock
from ...core.cluster.informer import Informers
from ...core.cluster.memory import MemoryCluster
from ..errors import PerfConfigError, Unsupported
from ..tracker import PodTracker


@attrs.define
class Background:
    """A timer chain run on the clock (churn, paced deletions); ``cancel`` ends it.
    ``error`` keeps a :class:`~kubesched.perf.errors.WorkloadFailed` that ended it early."""

    name: str
    cancelled: bool = False
    finished: bool = False
    timer: Any = None
    error: Exception | None = None

    def cancel(self) -> None:
        """End the chain: its pending timer is cancelled and no further step runs."""
        self.cancelled = True
        if self.timer is not None:
            self.timer.cancel()


class Executor(Protocol):
    """The executor an op runs in (:class:`kubesched.perf.executor.WorkloadExecutor`).

    ``namespaces`` maps each namespace ops registered to the pods a later
    ``barrier`` waits for (upstream's ``numPodsScheduledPerNamespace``);
    ``feature_gates`` are the test case's overridden by the workload's;
    ``ops``: the workload's ops, in order."""

    cluster: MemoryCluster
    clock: Clock
    rng: random.Random
    namespaces: dict[str, int]
    ops: list[PerfOp]

    @property
    def informers(self) -> Informers:
        """The informers the scheduler and the controllers share."""
        ...

    @property
    def feature_gates(self) -> dict[str, bool]: ...

    @property
    def default_pod_template_path(self) -> Path | None: ...

    @property
    def tracker(self) -> PodTracker: ...

    @property
    def collecting(self) -> bool: ...

    def path(self, value: str) -> Path:
        """A path of the config file, resolved against its folder."""
        ...

    def enabled_everywhere(self, plugin: str) -> bool:
        """True when every profile of the scheduler enables ``plugin``."""
        ...

    def loop(self, done: Callable[[], bool], what: str, deadline: float | None = None,
             on_step: Callable[[], None] | None = None, until_time: bool = False) -> None:
        """Drive the scheduler until ``done()`` (see the executor)."""
        ...

    def ensure_namespace(self, name: str, register: bool = True) -> None:
        """Create namespace ``name`` unless it exists; ``register`` records it (0 pods) for barriers (upstream's
        ``createNamespaceIfNotPresent``)."""
        ...

    def start_collecting(self, namespaces: list[str], selector: dict[str, str] | None) -> None:
        """Start measuring SchedulingThroughput of the pods of ``namespaces`` matching ``selector``; raises
        ``WorkloadFailed`` while a collector already runs."""
        ...

    def finish_collecting(self) -> None:
        """Stop the collector and record its DataItem (pods per second); raises ``WorkloadFailed`` without one."""
        ...

    def pending_hint(self, namespace: str) -> str:
        """``; at least pod NS/NAME is not scheduled: WHY`` for a failure message ("" when none is pending)."""
        ...

    def paced(self, name: str, count: int, rate: int, action: Callable[[int], None]) -> Background:
        """Call ``action(0..count-1)``: all at once when ``rate`` (per second) is 0, else one every ``1/rate`` seconds
        on the clock; returns the task (a ``WorkloadFailed`` from ``action`` ends it, kept in its ``error``)."""
        ...

    def wait_for(self, task: Background, what: str) -> None:
        """Drive the scheduler until ``task`` finished; re-raise its error."""
        ...

    def add_background(self, task: Background) -> None:
        """Keep ``task`` running until the workload ends (then it is cancelled)."""
        ...

    def tick(self) -> None:
        """Let the throughput collector sample (during long create loops)."""
        ...

    def generate_name(self, prefix: str) -> str:
        """``prefix`` and five random characters, never handed out before in this workload."""
        ...


class PerfOp:
    """One op of a workload template, run by the executor.

    Class attributes: ``FIELDS`` (the fields the op takes besides ``opcode``,
    under upstream's camelCase names; matched case-insensitively when the
    file loads, any other is refused), ``NESTED`` (fields holding an op of
    their own -> its opcode; parsed and resolved like a top-level op) and
    ``RUNS`` (False for an upstream op kubesched does not run yet) and
    ``DEFAULT_COUNT`` (the ``count`` of an op given neither ``count`` nor
    ``countParam``; None for an op without a count).

    An instance is made by the executor once the workload's params are
    resolved: ``index`` is the op's position in the template (upstream's
    default names ``namespace-<index>``), ``fields`` its resolved fields."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    NESTED: ClassVar[dict[str, str]] = {}
    RUNS: ClassVar[bool] = True
    DEFAULT_COUNT: ClassVar[int | None] = None

    def __init__(self, executor: Executor, index: int, opcode: str, fields: dict[str, Any]):
        self.executor = executor
        self.index = index
        self.opcode = opcode
        self.fields = fields

    @classmethod
    def validate(cls, fields: dict[str, Any], where: str) -> None:
        """Upstream's parse-time checks (params not resolved yet); may fill
        defaults in ``fields``.  Raises :class:`~kubesched.perf.errors.PerfConfigError`
        naming ``where`` (file, test case, op)."""

    @classmethod
    def validate_resolved(cls, fields: dict[str, Any], where: str) -> None:
        """Checks once a workload's params are in (raises ``PerfConfigError``)."""

    @classmethod
    def collects_metrics(cls, fields: dict[str, Any]) -> bool:
        """Whether this op measures SchedulingThroughput (a test case needs one such op)."""
        return False

    def check(self) -> None:
        """Before anything runs: raise :class:`Unsupported` for what kubesched
        cannot do as kube-scheduler would, ``PerfConfigError`` or
        ``TemplateError`` for a bad template."""

    def run(self) -> None:
        """Do the op (raises ``WorkloadFailed``)."""
        raise NotImplementedError


def check_namespace_list(fields: dict[str, Any], where: str) -> None:
    """``namespaces``, when given, is a list of names (raises ``PerfConfigError``)."""
    namespaces = fields.get("namespaces")
    if namespaces is not None and not (isinstance(namespaces, list) and all(isinstance(n, str) for n in namespaces)):
        raise PerfConfigError(f"{where}: namespaces: expected a list of names")


class NotRun(PerfOp):
    """An upstream op kubesched does not run yet: its fields are kept as given,
    and a workload using it is reported unsupported (never skipped)."""

    RUNS = False

    def check(self) -> None:
        """Always raises Unsupported naming the op."""
        raise Unsupported(f"unsupported op: {self.opcode}")

    def run(self) -> None:
        """Never runs: raises Unsupported as :meth:`check` does."""
        self.check()
