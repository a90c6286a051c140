"""Preemption for PostFilter and PodGroupPostFilter plugins: a public face over
``kubesched.core.framework.preemption`` and ``podgroup_preemption`` (upstream's
``pkg/scheduler/framework/preemption``, which its DefaultPreemption and
out-of-tree preemption plugins share).

:class:`Evaluator` runs a pod's preemption with a plugin's policy (candidates
dry-run on cloned NodeInfos, victims chosen and PDB-checked, one candidate
picked); :class:`Executor` evicts a candidate's victims; :class:`Victim` is a
unit of preemption (a pod, or a whole PodGroup with ``disruptionMode: all``),
:class:`Candidate` a node with its victims, :data:`ScoreFunc` one criterion
of the pick; :func:`node_victims`, :func:`split_by_pdb_violation`,
:func:`victim_priority` and :func:`terminating_by_preemption` the steps a
policy composes.  :class:`PodGroupEvaluator` is a whole PodGroup's
preemption (KEP-5710), picking the :data:`BEST_PLACEMENT` or trying
:data:`EVERY_PLACEMENT`.
"""

from .core.framework.podgroup_preemption import BEST_PLACEMENT, EVERY_PLACEMENT, PodGroupEvaluator
from .core.framework.preemption import (
    Candidate,
    Evaluator,
    Executor,
    ScoreFunc,
    Victim,
    node_victims,
    split_by_pdb_violation,
    terminating_by_preemption,
    victim_priority,
)

__all__ = [
    "BEST_PLACEMENT",
    "Candidate",
    "EVERY_PLACEMENT",
    "Evaluator",
    "Executor",
    "PodGroupEvaluator",
    "ScoreFunc",
    "Victim",
    "node_victims",
    "split_by_pdb_violation",
    "terminating_by_preemption",
    "victim_priority",
]
