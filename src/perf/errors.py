"""What can go wrong with a scheduler_perf workload, as the runner reports it.

- :class:`PerfConfigError`: the config file, a template or a parameter is
  wrong (the workload is reported ``failed``; a whole file that does not load
  stops ``kubesched perf``);
- :class:`Unsupported`: the workload needs something kubesched does not do
  yet (reported ``unsupported`` with the reason, never skipped silently);
- :class:`WorkloadFailed`: the workload started but could not finish
  (reported ``failed``).
"""

from __future__ import annotations


class PerfConfigError(ValueError):
    """A scheduler_perf config file, test case, workload or op kubesched refuses."""


class Unsupported(Exception):
    """The workload needs something kubesched does not do yet (the message says what)."""


class WorkloadFailed(Exception):
    """The workload started but could not finish (the message says why)."""
