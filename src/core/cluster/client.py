"""The cluster client interface: what the scheduler and controllers may ask of a cluster.

Kubernetes semantics: list, get, watch (ADDED/MODIFIED/DELETED), create,
update with resourceVersion (a stale one is a :class:`Conflict`), status
updates, strategic-merge and JSON merge patches (of an object or its
status), pods/binding, delete (with a UID precondition), events.  Objects are
the typed classes of :mod:`kubesched.core.api`, addressed by kind name
(``"Pod"``) plus namespace and name.  Implementations: :class:`MemoryCluster`
(embedded) and, with the ``kube`` extra, ``KubernetesCluster``.
"""

from __future__ import annotations

from typing import Any, Callable

from attrs import frozen

from ..api import resource_of

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
#: A relist after the watch expired (410 Gone): ``obj`` is the full list of
#: ``kind``; the receiver replaces its copy, reporting objects missing from the
#: list as deleted (client-go's ``Replace`` on the informer's store).
REPLACE = "REPLACE"


class ApiError(Exception):
    """An API call that failed; ``code`` is the HTTP status, ``reason`` upstream's StatusReason."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    """A request the API server cannot parse (HTTP 400): a malformed patch, a name that does not match the URL."""

    code, reason = 400, "BadRequest"


class Forbidden(ApiError):
    """The client's identity may not make this request (HTTP 403, RBAC)."""

    code, reason = 403, "Forbidden"


class NotFound(ApiError):
    """The object (or the resource) does not exist (HTTP 404)."""

    code, reason = 404, "NotFound"


class Fenced(ApiError):
    """A write refused before it was sent: the leadership term it was made for
    is over (leader election), or the client is shutting down."""

    code, reason = 503, "Fenced"


class AlreadyExists(ApiError):
    """A create of a name that is taken (HTTP 409)."""

    code, reason = 409, "AlreadyExists"


class Conflict(ApiError):
    """A write based on a stale resourceVersion, or a failed precondition."""

    code, reason = 409, "Conflict"


class Gone(ApiError):
    """A watch asked for a resourceVersion older than the server keeps (HTTP 410)."""

    code, reason = 410, "Expired"


class Invalid(ApiError):
    """The object fails the API server's validation, or an immutable field changed (HTTP 422)."""

    code, reason = 422, "Invalid"


@frozen
class WatchEvent:
    """One change: ``type`` is ADDED, MODIFIED or DELETED; ``obj`` the object
    after the change (before it, for DELETED); ``kind`` its kind name.  A
    :data:`REPLACE` event carries the list of every object of ``kind``."""

    type: str
    kind: str
    obj: Any


@frozen
class ListResult:
    """What :meth:`ClusterClient.list` returns: the ``items`` (typed objects) and the list's ``resource_version``,
    to watch from (upstream's ListMeta.resourceVersion)."""

    items: list
    resource_version: str


WatchSink = Callable[[WatchEvent], None]

#: Upstream ``retry.DefaultRetry``: five tries.
CONFLICT_RETRIES = 5


def retry_on_conflict(cluster: "ClusterClient", obj: Any, attempt: Callable[[Any], Any]) -> Any:
    """``attempt(obj)``; on :class:`Conflict`, GET the object afresh and try
    again, at most :data:`CONFLICT_RETRIES` times in all (upstream's
    ``retry.RetryOnConflict`` as the scheduler's plugins use it).  Returns what
    ``attempt`` returns; the last Conflict or any other error is raised.

    No pause between tries (upstream waits ~10 ms): the fresh GET is what
    resolves a conflict, and the scheduler's loop must never block.
    """
    current = obj
    for tries in range(1, CONFLICT_RETRIES + 1):
        try:
            return attempt(current)
        except Conflict:
            if tries == CONFLICT_RETRIES:
                raise
            current = cluster.get(resource_of(obj).kind, obj.metadata.name, obj.metadata.namespace)
    raise AssertionError("unreachable")


class ClusterClient:
    """The operations every cluster offers.  All raise :class:`ApiError` subclasses."""

    def list(self, kind: str, namespace: str | None = None) -> ListResult:
        """Every object of ``kind`` (in ``namespace`` if given) and the list's resourceVersion."""
        raise NotImplementedError

    def get(self, kind: str, name: str, namespace: str = "") -> Any:
        """One object; raises :class:`NotFound`."""
        raise NotImplementedError

    def watch(self, kind: str, resource_version: str, sink: WatchSink) -> Callable[[], None]:
        """Send every change of ``kind`` after ``resource_version`` to ``sink``
        (which must only queue it); returns a function that stops the watch.
        Raises :class:`Gone` when that version is too old."""
        raise NotImplementedError

    def create(self, obj: Any) -> Any:
        """Store a new object (``generateName`` gets a suffix); raises :class:`AlreadyExists`."""
        raise NotImplementedError

    def update(self, obj: Any) -> Any:
        """Replace an object.  A non-empty ``metadata.resourceVersion`` that is not
        the stored one raises :class:`Conflict`."""
        raise NotImplementedError

    def update_status(self, obj: Any) -> Any:
        """Replace only ``status`` (same resourceVersion rule as :meth:`update`)."""
        raise NotImplementedError

    def patch(self, kind: str, name: str, patch: Any, namespace: str = "", *, subresource: str = "",
              patch_type: str = "application/strategic-merge-patch+json", uid: str | None = None,
              resource_version: str | None = None) -> Any:
        """PATCH one object, or its ``/status`` (``subresource="status"``), and
        return it as stored.

        ``patch`` is the body in manifest form (camelCase dicts);
        ``patch_type`` is ``"application/strategic-merge-patch+json"`` (lists
        with upstream's ``patchStrategy:"merge"`` merge on their key: pod and
        meta/v1 conditions on ``type``, a claim's ``reservedFor`` on ``uid``;
        see :mod:`kubesched.core.cluster.patch`) or
        ``"application/merge-patch+json"`` (RFC 7386).  ``uid`` and
        ``resource_version`` are preconditions, sent in the patch's metadata
        as client-go does.  A patch of the main resource leaves ``status``
        alone and a ``/status`` patch leaves everything but ``status``, as
        kube-apiserver's strategies.  Raises :class:`NotFound` (no such
        object), :class:`Invalid` (422: the object's UID is not ``uid``, or
        the patched object is invalid), :class:`Conflict` (409: its
        resourceVersion is not ``resource_version``), :class:`BadRequest`
        (400: a malformed patch or an unsupported ``patch_type``)."""
        raise NotImplementedError

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """POST pods/binding: set ``spec.nodeName``.  Raises :class:`Conflict` when
        the pod is already bound or its UID differs, :class:`NotFound` when gone."""
        raise NotImplementedError

    def delete(self, kind: str, name: str, namespace: str = "", uid: str | None = None) -> None:
        """Delete an object (only if its UID is ``uid``, when given).  With
        finalizers the object only gets a deletionTimestamp."""
        raise NotImplementedError

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait (at most ``timeout`` seconds) until writes the client queued
        in the background (events) are done; returns whether they are."""
        return True

    def bound(self, seconds: float | None) -> None:
        """Requests sent from now on, their retries included, must be over
        within ``seconds`` (client-go's request context with a timeout): later
        ones are refused with :class:`Fenced`; None lifts the bound.  For a
        client one thread owns (the leader elector's).  An in-memory cluster
        answers at once: nothing to bound."""

