#!/usr/bin/env python3
"""Print this machine's speed factor for stating benchmark targets.

    python benchmarks/machine_speed.py            # factor 1.00 means as fast as the reference
    python benchmarks/machine_speed.py --json     # {"seconds": ..., "factor": ...}

The factor is the best of five timings of a fixed pure-Python loop
(sum(range(10**8)), one core) divided by the reference, 1.30 s: the machine on
which the project's speed targets are stated. A target of X pods/s "at factor
1.0" is X / factor here; a target of T seconds is T * factor. Shared 2-core
machines drift by 20 % or more between minutes: measure the factor in the same
minutes as the benchmark, and print it beside the numbers (the scripts of
benchmarks/ call :func:`machine_factor`).

Copied from the team's shared tool (../shared/tools/machine_speed.py beside the
checkout), which CI and a fresh clone do not have; keep the two the same.
"""

import json
import sys
import time

REFERENCE_S = 1.30


def loop_seconds(repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        sum(range(10**8))
        best = min(best, time.perf_counter() - started)
    return best


def machine_factor(repeats: int = 5) -> float:
    """This machine's factor: seconds of the loop (best of ``repeats``) / the reference's 1.30 s."""
    return loop_seconds(repeats) / REFERENCE_S


def factor_note(factor: float) -> str:
    """How the scripts print ``factor`` beside their numbers."""
    return (f"machine factor {factor:.2f} (benchmarks/machine_speed.py; at factor 1.0: rates x {factor:.2f}, "
            f"seconds / {factor:.2f})")


def main() -> int:
    seconds = loop_seconds()
    factor = seconds / REFERENCE_S
    if "--json" in sys.argv[1:]:
        print(json.dumps({"seconds": round(seconds, 3), "factor": round(factor, 3), "reference_s": REFERENCE_S}))
    else:
        print(f"factor {factor:.2f} (sum(range(10**8)) best of 5: {seconds:.2f} s; reference {REFERENCE_S:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
