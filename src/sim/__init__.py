"""Ask what-if from Python: a simulated cluster you can query and change, with kube-scheduler's decisions.

See :mod:`kubesched.sim.simulator` (:class:`Simulator`, :class:`Verdict`) and
:mod:`kubesched.sim.transaction` (:class:`Transaction`: rollback proportional
to what changed).  README, "Ask what-if from Python".
"""

from kubesched.sim.simulator import Simulator, Verdict
from kubesched.sim.transaction import Transaction

__all__ = ["Simulator", "Transaction", "Verdict"]
