"""Controllers: control loops beside the scheduler, as kube-controller-manager runs them.

A controller is a few informer handlers that only compute and queue keys, plus
a :meth:`Controller.sync` that does the work for one key (API calls) through a
rate-limited :class:`~kubesched.core.controller.workqueue.WorkQueue`; a sync that raises
an :class:`~kubesched.core.cluster.client.ApiError` is retried with per-item
exponential backoff, for ever, as client-go's workqueue pattern.

:class:`ControllerManager` hosts several controllers over one shared
:class:`Informers` (one watch per kind) and is driven like the scheduler: in
a simulation its :meth:`ControllerManager.step` runs on the caller's thread;
in the daemon :meth:`ControllerManager.run_workers` starts each controller's
fixed number of worker threads.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Hashable

from attrs import define, field

from kubesched.core.clock import Clock
from kubesched.core.cluster.client import ApiError, ClusterClient
from kubesched.core.cluster.informer import Informers
from kubesched.core.controller.workqueue import WorkQueue
from kubesched.core.features import FeatureGates
from kubesched.core.observability.events import EventRecorder
from kubesched.core.undo import Restore, restoring_all, saved_fields

log = logging.getLogger(__name__)


@define
class ControllerContext:
    """What a controller is built from.

    ``embedded`` is True on the in-memory cluster (helpers that stand in for
    kubelets and kube-controller-manager only run there); ``options`` holds
    per-controller settings keyed by controller name; ``features``: the
    controller manager's feature gates (default: the cluster's, else the
    newest release's defaults).
    """

    cluster: ClusterClient
    informers: Informers
    clock: Clock
    embedded: bool = True
    options: dict[str, Any] = field(factory=dict)
    features: FeatureGates = field(default=None)

    def __attrs_post_init__(self) -> None:
        if self.features is None:
            self.features = getattr(self.cluster, "features", None) or FeatureGates()


class Controller:
    """Base class: subclasses set ``name`` (kube-controller-manager's name of
    the controller, where upstream has one: the key of its options and the
    source component of its Events unless ``event_component`` names
    upstream's other one), register informer handlers in ``__init__`` that call
    ``self.queue.add(key)`` / ``add_after``, and implement :meth:`sync`.

    ``workers``: how many items may be processed at once in the daemon
    (upstream ``ConcurrentSyncs``); ``embedded_only``: the controller stands
    in for a component a real cluster runs itself (only started on the
    embedded cluster).  ``synced`` counts successful syncs.
    """

    name = "controller"
    event_component = ""
    workers = 1
    embedded_only = False

    def __init__(self, ctx: ControllerContext):
        self.ctx = ctx
        self.cluster = ctx.cluster
        self.informers = ctx.informers
        self.clock: Clock = ctx.clock
        self.queue = WorkQueue(ctx.clock)
        self.recorder = EventRecorder(ctx.cluster, ctx.clock, self.event_component or self.name)
        self.synced = 0

    def sync(self, item: Any) -> float | None:
        """Do the work for ``item`` (a hashable key of the subclass's choosing).  Raise :class:`ApiError` to retry it later
        with backoff; return a number of seconds to look at it again then
        (upstream's "again after", e.g. an eviction that is not due yet)."""
        raise NotImplementedError

    def process(self, item: Hashable) -> None:
        """Sync one taken item: success forgets its backoff (and queues it
        again after the delay ``sync`` returned, if any), an API error requeues
        it rate-limited; either way the queue is told it is done."""
        try:
            again_after = self.sync(item)
        except ApiError as err:
            log.info("%s: retrying %r after error: %s", self.name, item, err)
            self.queue.add_rate_limited(item)
        else:
            self.queue.forget(item)
            self.synced += 1
            if again_after:
                self.queue.add_after(item, again_after)
        finally:
            self.queue.done(item)

    def savepoint(self) -> Restore:
        """This controller's bookkeeping as it is now - its own fields (expectations, what it saw), its work queue
        and rate limiter, its event recorder, the owned-pods index of a workload controller - for
        ``kubesched.sim``'s rollback; the returned callable puts it back."""
        parts = [self, self.queue, self.queue.rate_limiter, self.recorder]
        owned = getattr(self, "owned", None)
        return restoring_all([saved_fields(part) for part in (*parts, *([owned] if owned is not None else []))])

    def step(self) -> bool:
        """Process one ready item on this thread; False when none was ready."""
        item = self.queue.get()
        if item is None:
            return False
        self.process(item)
        return True

    def worker(self, stop: threading.Event) -> None:
        """A daemon worker thread: take and process items until ``stop``."""
        while not stop.is_set():
            item = self.queue.get(block=True, timeout=0.5)
            if item is None:
                continue
            try:
                self.process(item)
            except Exception:  # a bug must not kill the worker: log it and retry the item later
                log.exception("%s: sync of %r failed", self.name, item)
                self.queue.add_rate_limited(item)


class ControllerManager:
    """Several controllers over one shared :class:`Informers`.

    Build the controllers (they register their handlers), then :meth:`start`
    lists and watches; :meth:`step` delivers pending watch events to the
    handlers and processes ready items (simulation); :meth:`run_workers`
    starts the worker threads (daemon; the caller still pumps events and
    fires timers from its loop through :meth:`pump`).
    """

    def __init__(self, informers: Informers, controllers: list[Controller]):
        self.informers = informers
        self.controllers = controllers
        self._threads: list[threading.Thread] = []

    @property
    def synced(self) -> int:
        """Successful syncs over all controllers (a simulation's sign of progress)."""
        return sum(c.synced for c in self.controllers)

    def start(self) -> None:
        """List and watch every kind the controllers registered, then deliver the existing objects to their handlers."""
        self.informers.start()
        self.informers.pump()

    def pump(self) -> int:
        """Deliver queued watch events to the handlers; returns how many."""
        return self.informers.pump()

    def step(self) -> bool:
        """Deliver pending events, then process every ready item of each controller on this thread; returns whether
        anything happened."""
        busy = self.informers.pump() > 0
        for controller in self.controllers:
            while controller.step():
                busy = True
        return busy

    def savepoint(self) -> Restore:
        """Every controller's :meth:`Controller.savepoint`, as one."""
        return restoring_all([controller.savepoint() for controller in self.controllers])

    def run_workers(self, stop: threading.Event) -> None:
        """Start ``controller.workers`` threads per controller (until ``stop``)."""
        for controller in self.controllers:
            for i in range(controller.workers):
                thread = threading.Thread(target=controller.worker, args=(stop,),
                                          name=f"{controller.name}-{i}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def stop(self) -> None:
        """Shut the controllers' work queues down and stop the informers' watches."""
        for controller in self.controllers:
            controller.queue.shut_down()
        self.informers.stop()
