"""A client whose requests share one QPS/burst budget: client-go's rate-limited
REST client in front of any :class:`~kubesched.core.cluster.client.ClusterClient`.

kube-scheduler talks to the API server through a client configured with
``clientConnection.qps``/``burst`` (scheduler_perf sets them per test case or
workload: ``schedulerApiClientQPS``/``schedulerApiClientBurst``): every
request takes a token from one token bucket first, blocking the calling thread
until one is free.  :class:`ThrottledClient` does the same in front of the
embedded cluster, for the scheduler only (the test's own client and the
controllers' are not limited).  Events are exempt: kube-scheduler writes them
through a client of their own (its event broadcaster's), with a bucket of its
own.  A watch is one long request and takes no token per event.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..api import resource_of
from .client import ClusterClient, ListResult, WatchSink


class Limiter(Protocol):
    """What :class:`ThrottledClient` needs of a rate limiter (e.g. kube.py's ``TokenBucketRateLimiter``)."""

    def take(self) -> None:
        """Block until a request may be sent."""
        ...


class ThrottledClient(ClusterClient):
    """``inner`` behind ``limiter``: :meth:`list`, :meth:`get`, :meth:`create`
    (but of an Event), :meth:`update`, :meth:`update_status`, :meth:`patch`,
    :meth:`bind` and :meth:`delete` take a token first; everything else
    (``watch``, ``flush``, attributes such as ``features``) is ``inner``'s."""

    def __init__(self, inner: ClusterClient, limiter: Limiter):
        self.inner = inner
        self.limiter = limiter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list(self, kind: str, namespace: str | None = None) -> ListResult:
        self.limiter.take()
        return self.inner.list(kind, namespace)

    def get(self, kind: str, name: str, namespace: str = "") -> Any:
        self.limiter.take()
        return self.inner.get(kind, name, namespace)

    def watch(self, kind: str, resource_version: str, sink: WatchSink) -> Callable[[], None]:
        return self.inner.watch(kind, resource_version, sink)

    def create(self, obj: Any) -> Any:
        if resource_of(obj).kind != "Event":
            self.limiter.take()
        return self.inner.create(obj)

    def update(self, obj: Any) -> Any:
        self.limiter.take()
        return self.inner.update(obj)

    def update_status(self, obj: Any) -> Any:
        self.limiter.take()
        return self.inner.update_status(obj)

    def patch(self, kind: str, name: str, patch: Any, namespace: str = "", *, subresource: str = "",
              patch_type: str = "application/strategic-merge-patch+json", uid: str | None = None,
              resource_version: str | None = None) -> Any:
        self.limiter.take()
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource, patch_type=patch_type,
                                uid=uid, resource_version=resource_version)

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.limiter.take()
        self.inner.bind(namespace, name, uid, node_name)

    def delete(self, kind: str, name: str, namespace: str = "", uid: str | None = None) -> None:
        self.limiter.take()
        self.inner.delete(kind, name, namespace, uid)

    def flush(self, timeout: float = 10.0) -> bool:
        return self.inner.flush(timeout)

    def bound(self, seconds: float | None) -> None:
        self.inner.bound(seconds)
