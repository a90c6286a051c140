"""How the framework times what it runs, with upstream's metrics.

Every ``run_*`` of an extension point observes its duration into
``scheduler_framework_extension_point_duration_seconds`` (:func:`extension_point`); in the cycles
sampled for plugin metrics (10 %, as upstream) each plugin call is observed into
``scheduler_plugin_execution_duration_seconds`` (:func:`timed_plugin`, the method lists of
:data:`TIMED_POINTS`).  Used by :class:`~kubesched.core.framework.runtime.Framework` and its parts.
"""

from __future__ import annotations

import functools
import inspect
from time import perf_counter
from typing import Any, Callable

from kubesched.core.observability import metrics

from .status import Status

#: Method lists timed one plugin call at a time in sampled cycles: attribute -> upstream's extension point label.
#: A plugin's per-node Filter and Score calls are not timed one by one (a batch call, or a pod's whole per-node
#: Score loop, is one observation): kubesched judges nodes in batches, and a timer per node would cost more than
#: the call.
TIMED_POINTS = {
    "pre_filter_plugins": "PreFilter", "filter_batch": "Filter",
    "post_filter_plugins": "PostFilter", "pre_score_plugins": "PreScore",
    "score_batch": "Score", "normalize": "ScoreExtensionNormalize", "reserve_plugins": "Reserve",
    "unreserve_plugins": "Unreserve", "permit_plugins": "Permit", "pre_bind_plugins": "PreBind",
    "bind_plugins": "Bind", "post_bind_plugins": "PostBind",
}


def timed_plugin(plugin: str, point: str, method: Callable) -> Callable:
    """``method`` observing each call into ``scheduler_plugin_execution_duration_seconds`` (its status: the
    answer, or the Status in a tuple answer; any other value, such as a score, is Success; a raise: Error)."""
    series: dict[str, Callable[[float], None]] = {}  # status label -> the labelled series' observe

    def timed(*args: Any) -> Any:
        started, code = perf_counter(), "Error"
        try:
            answer = method(*args)
            status = next((p for p in answer if isinstance(p, Status)), None) if isinstance(answer, tuple) else answer
            code = str(status.code) if isinstance(status, Status) else "Success"
            return answer
        finally:
            (series.get(code) or series.setdefault(
                code, metrics.PLUGIN_EXECUTION_DURATION.labels(plugin, point, code).observe))(perf_counter() - started)
    return timed


def no_status(answer: Any) -> None:
    """An extension point whose answer carries no status (Score, Unreserve, PostBind): Success."""
    return None


def extension_point(point: str, status_of: Callable[[Any], Status | None] | None = None) -> Callable:
    """A ``run_*`` method observing each run into ``scheduler_framework_extension_point_duration_seconds``
    with the status ``status_of(answer)`` (None: the answer is the status; :func:`no_status`: always Success; an
    exception: Error).  One perf_counter pair and one append per run: the labelled series are looked up once per
    profile (the framework's ``_point_observer`` and ``_point_success``), and the timing function takes the
    method's own parameters (made for its signature) rather than packing them into ``*args``."""
    def wrap(run: Callable) -> Callable:
        parameters = list(inspect.signature(run).parameters.values())[1:]
        namespace: dict[str, Any] = {"run": run, "point": point, "status_of": status_of, "perf_counter": perf_counter}
        if all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters):
            names = [p.name for p in parameters]
            namespace.update((f"default_{p.name}", p.default) for p in parameters if p.default is not p.empty)
            declared = "".join(f", {p.name}" + ("" if p.default is p.empty else f"=default_{p.name}")
                               for p in parameters)
            passed = "".join(f", {name}" for name in names)
        else:
            declared, passed = ", *args, **kwargs", ", *args, **kwargs"
        status = "None" if status_of is no_status else "answer" if status_of is None else "status_of(answer)"
        exec(_TIMED.format(declared=declared, passed=passed, status=status), namespace)  # noqa: S102
        return functools.wraps(run)(namespace["timed"])
    return wrap


_TIMED = """
def timed(self{declared}):
    started = perf_counter()
    try:
        answer = run(self{passed})
    except Exception:
        self._point_observer(point, "Error")(perf_counter() - started)
        raise
    status = {status}
    if status is None:
        (self._point_success.get(point) or self._point_observer(point, "Success"))(perf_counter() - started)
    else:
        self._point_observer(point, str(status.code))(perf_counter() - started)
    return answer
"""
