"""The Plan page: ``kubesched plan`` on the scenario - the nodes to add so every pending pod and gang fits
(or, with ``scale_down``, the nodes that can go) - from the node templates among the files
(Nodes annotated ``kubesched.io/node-template``; see :mod:`kubesched.plan.templates`).

The plan starts from the scenario's objects simulated afresh to quiescence (its timed changes are not
applied), with the run's configuration and feature gates; it takes about as long as a run and the plan.
"""

from __future__ import annotations

from typing import Any

from kubesched.core.features import FeatureGates
from kubesched.plan.expanders import EXPANDERS
from kubesched.plan.scale_down import plan_scale_down
from kubesched.plan.scale_up import landing_rows, node_counts, plan_scale_up
from kubesched.sim import Simulator

from ..scenario import Scenario

#: the page's modes: cluster-autoscaler's greedy rounds, the rollout search, the scale-down simulation
MODES = ("greedy", "search", "scale-down")


def plan_page(scenario: Scenario, features: FeatureGates | None, expander: str, mode: str) -> dict[str, Any]:
    """``expanders``/``modes`` (the choices), ``expander``/``mode`` (this one, unknown values replaced by the
    defaults), ``templates`` (name, cost, max count, priority), ``answer`` (:meth:`ScaleUp.as_dict` or
    :meth:`ScaleDown.as_dict`), ``landing`` (scale-up rows: what, nodes) and ``removals`` (scale-down rows)."""
    expander = expander if expander in EXPANDERS else "least-waste"
    mode = mode if mode in MODES else "greedy"
    out: dict[str, Any] = {
        "expanders": list(EXPANDERS), "modes": list(MODES), "expander": expander, "mode": mode,
        "templates": [{"name": t.name, "cost": t.cost_per_hour, "max": t.max_count, "priority": t.priority,
                       "file": t.file} for t in scenario.templates],
        "answer": None, "landing": [], "removals": [],
    }
    if mode != "scale-down" and not scenario.templates:
        return out
    sim = Simulator.from_manifests(list(scenario.objects), config=scenario.config_dict(),
                                   feature_gates=features.overrides if features is not None else None,
                                   emulated_version=features.emulated_version if features is not None else None)
    if mode == "scale-down":
        answer = plan_scale_down(sim).as_dict()
        out["removals"] = [(r["node"], r["utilization"], len(r["moved"]),
                            node_counts(list(r["destinations"].values())) or "-") for r in answer["remove"]]
    else:
        answer = plan_scale_up(sim, scenario.templates, expander, search=mode == "search").as_dict()
        out["landing"] = landing_rows(answer)
    out["answer"] = answer
    return out
