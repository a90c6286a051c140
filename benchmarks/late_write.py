#!/usr/bin/env python3
"""A deposed leader's delayed allocation write, 20 runs in a row (issue 29's case; tests/late_write.py):
the fake API server holds replica A's ``PUT resourceclaims/c1/status`` (gpu-0 for pod1) while A loses
its lease; B takes over with no takeover grace, gives gpu-0 to c2 and binds pod2; A's write is then
delivered and accepted.  Every run must end with 0 devices under two running pods and 0 pods bound
twice (pod1 is allocated gpu-1 once the stray allocation is withdrawn).

    python benchmarks/late_write.py            # 20 runs
    python benchmarks/late_write.py --runs 5
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from machine_speed import factor_note, machine_factor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    from late_write import late_write_run

    print(factor_note(machine_factor(3)))
    print(f"{'run':>4} {'s':>6}  {'shared devices':14} {'bound twice':11} {'withdrawn':9}  devices")
    bad = 0
    for run in range(1, args.runs + 1):
        started = time.monotonic()
        outcome = late_write_run()
        took = time.monotonic() - started
        ok = not outcome["shared"] and not outcome["bindings"] and len(outcome["devices"]) == 2
        bad += not ok
        print(f"{run:>4} {took:>6.1f}  {len(outcome['shared']):>14} {len(outcome['bindings']):>11} "
              f"{'yes' if outcome['conflict_events'] else 'no':>9}  {outcome['devices']}" + ("" if ok else "  FAIL"))
    print(f"{args.runs - bad}/{args.runs} runs without a device under two pods or a pod bound twice")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
