"""Where a sweep's cells run: a local process pool, or Ray tasks.

Both call the same :func:`~kubesched.sweep.cells.run_cell` per cell and hand
each row to ``on_result`` in the driving process as cells finish (so the
driver writes results as they come and a crash loses only the cells still
running).  No distribution layer of our own: :mod:`concurrent.futures`
locally, Ray's tasks and object store for a cluster.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable

from .cells import Cell, Inputs, run_cell

OnResult = Callable[[Cell, dict[str, Any]], None]
ENGINES = ("local", "ray")


def run_local(cells: list[Cell], inputs: Inputs, workers: int, on_result: OnResult) -> None:
    """The cells on ``workers`` processes of this machine (1: in this process).
    The first failing cell's error is raised once the running ones finished;
    on KeyboardInterrupt cells not yet started are cancelled."""
    if workers <= 1:
        for cell in cells:
            on_result(cell, run_cell(cell, inputs))
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        try:
            pending = {pool.submit(run_cell, cell, inputs): cell for cell in cells}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    cell = pending.pop(future)
                    on_result(cell, future.result())
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def run_ray(cells: list[Cell], inputs: Inputs, address: str | None, on_result: OnResult) -> None:
    """The cells as Ray tasks on the cluster at ``address`` (None: a Ray
    started here for the sweep).  The inputs go into Ray's object store once;
    each node fetches them once for all its tasks.  Raises RuntimeError when
    Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("--engine ray needs Ray: pip install 'kubesched[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        # no address: a Ray of our own, never one that happens to run on this machine
        ray.init(address=address or "local", include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        shared = ray.put(inputs)
        task = ray.remote(run_cell)
        pending = {task.remote(cell, shared): cell for cell in cells}
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                cell = pending.pop(ref)
                on_result(cell, ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()
