"""KubernetesCluster: the cluster client over a real API server (extra ``kubesched[kube]``).

Built on the official ``kubernetes`` package: its kubeconfig and in-cluster
loaders (every auth method they support, token refresh included), its
``ApiClient`` for authenticated requests over urllib3, and urllib3's ``Retry``
(exponential backoff, ``Retry-After`` honoured) for what client-go retries:
a request that never reached the server, an idempotent one (GET, PUT with a
resourceVersion, DELETE with a UID precondition) after a timeout or a
429/5xx answer, and any other (POST, PATCH) only when the server answered
429/5xx with ``Retry-After`` - a POST that timed out may have been carried
out, and is never sent twice.  Each kind of a group served at several
versions (resource.k8s.io) is used at the newest version the server serves
that kubesched reads, found by discovery.
Objects go over the wire as JSON and are decoded straight into kubesched's
typed objects: the generated pydantic models would be a second, slower
conversion, and the typed ``create_namespaced_pod_binding`` decodes the
``Status`` the API server answers as a ``Binding`` and raises, so every call
goes through ``ApiClient.call_api`` with raw JSON.

Like client-go's reflector, each watch lists (from the watch cache,
``resourceVersion=0``, in pages of :data:`LIST_PAGE_SIZE`), then watches from
the list's resourceVersion with bookmarks, resumes from the last version it saw when the
stream ends or breaks, and relists when the version has expired (410 Gone),
handing the full list to the informer as a :data:`REPLACE` event so that
objects deleted meanwhile are reported deleted.  Events are written as
``events.k8s.io/v1`` Events, as kube-scheduler does, and from a thread of
their own, as client-go's event broadcaster: recording an event never slows a
scheduling or binding cycle down.  Requests are throttled by the
configuration's ``clientConnection.qps``/``burst``.
"""

from __future__ import annotations

import copy
import json
import logging
import queue
import random
import socket
import threading
import time
from typing import Any, Callable
from urllib.parse import quote

from ..api import RESOURCES, ResourceType, resource_of
from ..api.convert import ManifestError, format_micro_time, format_time, parse_time, structure, unstructure
from ..api.core_v1 import Event, EventSource
from ..api.meta import ObjectReference
from .client import (
    ADDED,
    DELETED,
    MODIFIED,
    REPLACE,
    AlreadyExists,
    ApiError,
    BadRequest,
    ClusterClient,
    Conflict,
    Fenced,
    Forbidden,
    Gone,
    Invalid,
    ListResult,
    NotFound,
    WatchEvent,
    WatchSink,
)
from .patch import PATCH_TYPES, STRATEGIC_MERGE_PATCH, with_preconditions

log = logging.getLogger(__name__)

#: How many times urllib3 retries a request that timed out, could not connect or got 429/5xx.
RETRIES = 5
#: urllib3 backoff between retries: ``factor * 2**(n-1)`` seconds, at most ``RETRY_BACKOFF_MAX``.
RETRY_BACKOFF_FACTOR = 0.2
RETRY_BACKOFF_MAX = 10.0
#: Seconds a request (other than a watch) may take before it is retried.
REQUEST_TIMEOUT = 30.0
#: Paths whose writes are not fenced (see :meth:`KubernetesCluster.refusal`).
UNFENCED = ("/leases", "/events", "/tokenreviews", "/subjectaccessreviews")
#: A watch asks the server to end it after a random time in this range (seconds), as client-go's reflector.
WATCH_TIMEOUT_RANGE = (300, 600)
#: Backoff between failed watch or relist attempts: starts here, doubles, capped (seconds).
WATCH_BACKOFF = (0.8, 30.0)
#: Objects asked for per list request (client-go's pager default); the watch cache answers ``resourceVersion=0`` whole.
LIST_PAGE_SIZE = 500
#: events.k8s.io/v1 refuses a note longer than this (bytes).
EVENT_NOTE_LIMIT = 1024

EVENTS_API_VERSION = "events.k8s.io/v1"
#: Events waiting to be written; more are dropped (client-go's broadcaster queue length).
EVENT_QUEUE_LENGTH = 1000


class TokenBucketRateLimiter:
    """client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``):
    ``qps`` tokens per second, at most ``burst`` saved; :meth:`take` blocks
    the calling thread until a token is free.  ``qps <= 0`` means unlimited.

    Written here (20 lines) because it must block in wall time on any thread,
    which is all it does."""

    def __init__(self, qps: float, burst: int):
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> None:
        """Take a token, sleeping in wall time until one is free (client-go's ``Accept``); returns at once when
        ``qps <= 0``."""
        if self.qps <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)


# --- events.k8s.io/v1 <-> the core Event the recorder writes -----------------------------


def event_to_events_v1(event: Event, instance: str) -> dict:
    """A recorded core/v1 :class:`Event` as the ``events.k8s.io/v1`` Event
    kube-scheduler writes: ``regarding``, ``note`` (cut to 1 KiB),
    ``eventTime``, ``reportingController``/``reportingInstance`` (``instance``
    is appended to the controller name), ``series`` once it repeats."""
    controller = event.reporting_component or event.source.component
    doc: dict[str, Any] = {
        "apiVersion": EVENTS_API_VERSION,
        "kind": "Event",
        "metadata": unstructure(event.metadata),
        "eventTime": format_micro_time(event.first_timestamp if event.first_timestamp is not None else time.time()),
        "reportingController": controller,
        "reportingInstance": f"{controller}-{instance}",
        "action": event.action,
        "reason": event.reason,
        "regarding": unstructure(event.involved_object),
        "note": event.message.encode()[:EVENT_NOTE_LIMIT].decode(errors="ignore"),
        "type": event.type,
    }
    if event.count > 1:
        doc["series"] = {"count": event.count, "lastObservedTime": format_micro_time(event.last_timestamp)}
    return doc


def event_to_core_v1(event: Event, instance: str) -> dict:
    """A recorded Event without an action as the core/v1 Event client-go's
    legacy recorder (``record.EventRecorder``, what kube-controller-manager's
    controllers use) writes: ``involvedObject``, ``message``, ``source``,
    first and last timestamps and ``count``."""
    component = event.source.component or event.reporting_component
    return {
        "apiVersion": "v1", "kind": "Event", "metadata": unstructure(event.metadata),
        "involvedObject": unstructure(event.involved_object), "reason": event.reason, "message": event.message,
        "type": event.type, "source": {"component": component},
        "firstTimestamp": format_time(event.first_timestamp), "lastTimestamp": format_time(event.last_timestamp),
        "count": event.count, "reportingComponent": component, "reportingInstance": f"{component}-{instance}",
    }


def event_from_events_v1(doc: dict) -> Event:
    """An ``events.k8s.io/v1`` Event as kubesched's :class:`Event`."""
    series = doc.get("series") or {}
    first = parse_time(doc.get("eventTime") or doc.get("deprecatedFirstTimestamp"))
    last = parse_time(series.get("lastObservedTime") or doc.get("deprecatedLastTimestamp")) or first
    controller = doc.get("reportingController", "")
    source = (doc.get("deprecatedSource") or {}).get("component") or controller
    return Event(
        metadata=structure(doc.get("metadata") or {}, type(Event().metadata)),
        involved_object=structure(doc.get("regarding") or {}, ObjectReference),
        reason=doc.get("reason", ""),
        message=doc.get("note", ""),
        type=doc.get("type", "Normal"),
        count=int(series.get("count") or doc.get("deprecatedCount") or 1),
        first_timestamp=first,
        last_timestamp=last,
        source=EventSource(component=source),
        reporting_component=controller,
        action=doc.get("action", ""),
    )


def _api_error(status: int, body: bytes | str | None, what: str) -> ApiError:
    """The :class:`ApiError` for an HTTP answer (a ``Status`` object when the API server sent one)."""
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    message = payload.get("message") or f"{what}: HTTP {status}"
    reason = payload.get("reason", "")
    if status == 400:
        return BadRequest(message)
    if status == 403:
        return Forbidden(message)
    if status == 404:
        return NotFound(message)
    if status == 409:
        return AlreadyExists(message) if reason == "AlreadyExists" else Conflict(message)
    if status == 410:
        return Gone(message)
    if status == 422:
        return Invalid(message)
    err = ApiError(message)
    err.code = status
    err.reason = reason or err.reason
    return err


class KubernetesCluster(ClusterClient):
    """A :class:`ClusterClient` over a Kubernetes API server.

    ``configuration`` is a ``kubernetes.client.Configuration`` (see
    :meth:`from_kubeconfig` and :meth:`in_cluster`); ``qps``/``burst`` throttle
    requests as the configuration's ``clientConnection``; ``retries`` and
    ``backoff_factor`` set urllib3's retry of timeouts, connection errors and
    429/5xx answers; ``request_timeout`` (seconds) bounds one request;
    ``watch_timeout`` is the (min, max) seconds a watch asks the server to
    last.  Thread-safe.  Every method raises :class:`ApiError` subclasses, as
    :class:`MemoryCluster` does, except that creating or updating an
    ``Event`` only queues it for the event writer thread (an update of a
    repeated event is sent as a PATCH of its ``series``) and returns the
    object as given (a failed write is logged and counted in
    :attr:`events_dropped`, as upstream's broadcaster drops them).
    """

    def __init__(self, configuration: Any, qps: float = 50.0, burst: int = 100, retries: int = RETRIES,
                 backoff_factor: float = RETRY_BACKOFF_FACTOR, request_timeout: float = REQUEST_TIMEOUT,
                 watch_timeout: tuple[int, int] = WATCH_TIMEOUT_RANGE, watch_backoff: tuple[float, float] = WATCH_BACKOFF):
        from kubernetes.client.api_client import ApiClient
        from urllib3.util.retry import Retry

        fenced_retry = type("ClientGoRetry", (Retry,), {"increment": _fenced_increment, "owner": self,
                                                         "_is_method_retryable": _idempotent_only,
                                                         "is_retry": _client_go_is_retry})
        configuration.retries = fenced_retry(
            total=retries, connect=retries, read=retries, status=retries,
            status_forcelist=(429, 500, 502, 503, 504), allowed_methods=None,
            backoff_factor=backoff_factor, backoff_max=RETRY_BACKOFF_MAX,
            respect_retry_after_header=True, raise_on_status=False, raise_on_redirect=False,
        )
        # one connection per watch plus the writers: keep them all pooled
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 64)
        self.api = ApiClient(configuration)
        self.configuration = configuration
        self._retry_settings = (retries, backoff_factor)
        self.host = configuration.host
        self.limiter = TokenBucketRateLimiter(qps, burst)
        self.request_timeout = request_timeout
        self.watch_timeout = watch_timeout
        self.watch_backoff = watch_backoff
        self.instance = socket.gethostname()
        self.events_dropped = 0
        #: the leadership term's guard: a reason to refuse writes, or None (see :meth:`refusal`)
        self.fence: Callable[[], str | None] | None = None
        self._closing_at: float | None = None
        self._deadline: float | None = None  # see bound()
        self._events: queue.Queue = queue.Queue(EVENT_QUEUE_LENGTH)
        self._event_writer: threading.Thread | None = None
        self._event_lock = threading.Lock()
        self._request = threading.local()  # what the retry of this thread's request may know of it
        self._versions: dict[str, str] = {}  # kind -> the apiVersion the server serves it at
        self._versions_lock = threading.Lock()

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None, **kwargs: Any) -> "KubernetesCluster":
        """A client from a kubeconfig file (``path``; default ``$KUBECONFIG`` or
        ``~/.kube/config``) and ``context`` (default: the current one).
        Raises ``kubernetes.config.ConfigException`` for an unusable file."""
        from kubernetes import config
        from kubernetes.client.configuration import Configuration

        configuration = Configuration()
        config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                persist_config=False)
        return cls(configuration, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> "KubernetesCluster":
        """A client from the pod's service account (token, CA and
        ``KUBERNETES_SERVICE_HOST``).  Raises ``kubernetes.config.ConfigException``
        outside a pod."""
        from kubernetes import config
        from kubernetes.client.configuration import Configuration

        configuration = Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return cls(configuration, **kwargs)

    def leader_election_client(self, renew_deadline: float) -> "KubernetesCluster":
        """A client of its own for the lease (kube-scheduler's leader election
        client, resourcelock.NewFromKubeconfig): the same server, credentials,
        ``qps`` and ``burst`` but its own rate limiter and connections, so a
        renewal never waits behind the scheduler's bindings and events; a
        request timeout of ``renew_deadline`` / 2 (at least 1 s), as upstream."""
        configuration = copy.copy(self.configuration)
        retries, backoff_factor = self._retry_settings
        return KubernetesCluster(configuration, qps=self.limiter.qps, burst=self.limiter.burst, retries=retries,
                                 backoff_factor=backoff_factor, request_timeout=max(renew_deadline / 2, 1.0),
                                 watch_timeout=self.watch_timeout, watch_backoff=self.watch_backoff)

    # --- fencing and shutdown -------------------------------------------------------------

    def bound(self, seconds: float | None) -> None:
        """See :meth:`ClusterClient.bound`: requests and retries past ``seconds`` from now are refused,
        and a request's timeout is cut to what is left."""
        self._deadline = None if seconds is None else time.monotonic() + seconds

    def refusal(self, method: str, path: str) -> str | None:
        """Why the request must not be sent now, or None: a write (anything
        but GET; leases and events excepted: the elector's own renewals and
        releases, and notes that change no state) while :attr:`fence` says
        the leadership term is over; any request once :meth:`close` gave up
        waiting.  Checked before each request and before each of urllib3's
        retries, so a write queued or retried across a lost lease is never
        sent."""
        if self._closing_at is not None and time.monotonic() >= self._closing_at:
            return "the client is shutting down"
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return "the request's deadline passed"
        fence = self.fence
        if fence is None or method == "GET" or any(part in path for part in UNFENCED):
            return None
        return fence()

    def close(self, grace: float) -> None:
        """Shutting down: requests sent from now on may take ``grace`` seconds in
        all (no retries after it); later ones are refused."""
        self._closing_at = time.monotonic() + grace

    def _timeout(self, timeout: float | tuple[float, float] | None) -> float | tuple[float, float]:
        """The request's timeout in seconds (or (connect, read) seconds, as a watch asks), cut to what is
        left of the shutdown grace once :meth:`close` was called, or of the :meth:`bound`."""
        wanted = timeout or self.request_timeout
        ends = min((t for t in (self._closing_at, self._deadline) if t is not None), default=None)
        if ends is None:
            return wanted
        left = ends - time.monotonic()
        if isinstance(wanted, tuple):
            return (max(min(wanted[0], left), 0.001), max(min(wanted[1], left), 0.001))
        return max(min(wanted, left), 0.001)

    # --- REST plumbing -------------------------------------------------------------------

    def _collection(self, resource: ResourceType, namespace: str | None) -> str:
        if resource.kind == "Event":
            base = f"/apis/{EVENTS_API_VERSION}"
        elif resource.group:
            base = f"/apis/{self.api_version(resource)}"
        else:
            base = f"/api/{resource.api_version}"
        if resource.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        plural = resource.plural
        return f"{base}/{plural}"

    def _path(self, resource: ResourceType, name: str, namespace: str, sub: str = "") -> str:
        path = f"{self._collection(resource, namespace or ('default' if resource.namespaced else ''))}/{quote(name, safe='')}"
        return f"{path}/{sub}" if sub else path

    def _send(self, method: str, path: str, query: list | None = None, body: Any = None,
              timeout: Any = None, content_type: str = "application/json") -> Any:
        """One request; returns the kubernetes client's RESTResponse (body unread)."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        refused = self.refusal(method, path)
        if refused is not None:
            raise Fenced(f"{method} {path}: not sent: {refused}")
        self._request.idempotent = _idempotent(method, body)
        self.limiter.take()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self.api.param_serialize(method=method, resource_path=path, query_params=query or [],
                                           header_params=headers, body=body, auth_settings=["BearerToken"])
        try:
            return self.api.call_api(*request, _request_timeout=self._timeout(timeout))
        except (urllib3.exceptions.HTTPError, ApiException) as err:  # unreachable, TLS failure, retries spent
            reason = getattr(err, "reason", None)
            if isinstance(reason, Fenced):
                raise Fenced(f"{method} {path}: {reason}") from None
            error = ApiError(f"{method} {path}: {err}")
            error.code, error.reason = 503, "ServiceUnavailable"
            raise error from None

    def _call(self, method: str, path: str, query: list | None = None, body: Any = None,
              content_type: str = "application/json") -> dict:
        response = self._send(method, path, query, body, content_type=content_type)
        data = response.read()
        if not 200 <= response.status <= 299:
            raise _api_error(response.status, data, f"{method} {path}")
        return json.loads(data) if data else {}

    def _decode(self, resource: ResourceType, doc: dict) -> Any:
        if resource.kind == "Event":
            return event_from_events_v1(doc)
        body = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")}
        served = self.api_version(resource)
        if served != resource.api_version:
            body = resource.older_versions[served](body)
        return structure(body, resource.cls)

    def _encode(self, obj: Any) -> dict:
        resource = resource_of(obj)
        if resource.kind == "Event":
            return (event_to_events_v1 if obj.action else event_to_core_v1)(obj, self.instance)
        served = self.api_version(resource)
        if served != resource.api_version and not _same_shape(resource, served):
            raise ApiError(f"{resource.kind} {obj.metadata.name}: the API server serves {resource.plural} at "
                           f"{served}, whose shape kubesched does not write (it writes {resource.api_version})")
        return {"apiVersion": served, "kind": resource.kind, **unstructure(obj)}

    def api_version(self, resource: ResourceType) -> str:
        """The apiVersion ``resource`` is used at: for a kind kubesched also reads
        at older versions, the newest one the server serves it at (discovery of
        ``/apis/<group>`` and ``/apis/<group>/<version>``, once per kind, as
        client-go's discovery-driven informers); else its own.  A kind the
        server does not serve at all stays at its own (lists of it are empty)."""
        if not resource.older_versions or not resource.group:
            return resource.api_version
        with self._versions_lock:
            known = self._versions.get(resource.kind)
        if known is not None:
            return known
        chosen = resource.api_version
        try:
            served = {v.get("groupVersion") for v in self._call("GET", f"/apis/{resource.group}").get("versions") or ()}
            for candidate in (resource.api_version, *resource.older_versions):
                if candidate in served and any(r.get("name") == resource.plural for r in
                                               self._call("GET", f"/apis/{candidate}").get("resources") or ()):
                    chosen = candidate
                    break
        except NotFound:
            pass  # the group is not served: nothing of it exists
        if chosen != resource.api_version:
            log.info("the API server serves %s at %s, not %s: using it", resource.plural, chosen, resource.api_version)
        with self._versions_lock:
            self._versions[resource.kind] = chosen
        return chosen

    # --- reading -------------------------------------------------------------------------

    def list(self, kind: str, namespace: str | None = None, resource_version: str = "0") -> ListResult:
        """Every object of ``kind``, as client-go's reflector lists: from the
        watch cache (``resourceVersion=0``; ``""`` asks for the latest, a
        quorum read, as a relist after 410 Gone does) in pages of
        :data:`LIST_PAGE_SIZE` (``limit``/``continue``).  A kind the server
        does not serve is empty (logged)."""
        resource = RESOURCES[kind]
        query = [("limit", str(LIST_PAGE_SIZE))] + ([("resourceVersion", resource_version)] if resource_version else [])
        items: list = []
        listed = ""
        while True:
            try:
                doc = self._call("GET", self._collection(resource, namespace), query)
            except NotFound:
                # the API server does not serve this kind (e.g. an older resource.k8s.io): nothing to see
                log.warning("the API server does not serve %s (%s); treating it as empty", resource.plural,
                            self.api_version(resource))
                return ListResult([], "")
            for item in doc.get("items") or ():
                try:
                    items.append(self._decode(resource, item))
                except ManifestError as err:
                    log.warning("skipping %s %s: %s", kind, (item.get("metadata") or {}).get("name"), err)
            meta = doc.get("metadata") or {}
            listed = meta.get("resourceVersion", listed)
            if not meta.get("continue"):
                return ListResult(items, listed)
            query = [("limit", str(LIST_PAGE_SIZE)), ("continue", meta["continue"])]

    def get(self, kind: str, name: str, namespace: str = "") -> Any:
        """GET one object (see :meth:`ClusterClient.get`)."""
        resource = RESOURCES[kind]
        return self._decode(resource, self._call("GET", self._path(resource, name, namespace)))

    def watch(self, kind: str, resource_version: str, sink: WatchSink) -> Callable[[], None]:
        """Watch ``kind`` from ``resource_version`` on its own thread (a reflector: bookmarks, resume, a REPLACE
        relist on 410 Gone); see :meth:`ClusterClient.watch`."""
        reflector = _Reflector(self, RESOURCES[kind], resource_version, sink)
        reflector.start()
        return reflector.stop

    # --- writing -------------------------------------------------------------------------

    def _write_event(self, method: str, event: Event) -> Event:
        with self._event_lock:
            if self._event_writer is None:
                self._event_writer = threading.Thread(target=self._write_events, name="event-writer", daemon=True)
                self._event_writer.start()
        try:
            self._events.put_nowait((method, event))
        except queue.Full:
            self.events_dropped += 1
        return event

    def _write_events(self) -> None:
        while True:
            method, event = self._events.get()
            meta = event.metadata
            namespace = meta.namespace or "default"
            # an event with an action is an events.k8s.io one (kube-scheduler's recorder); without, a
            # core/v1 one, as kube-controller-manager's legacy recorder writes it
            base = f"/apis/{EVENTS_API_VERSION}" if event.action else "/api/v1"
            path = f"{base}/namespaces/{quote(namespace, safe='')}/events"
            if method != "POST":
                path += f"/{quote(meta.name, safe='')}"
            try:
                if method == "PATCH":  # a repeat: as client-go's broadcasters patch it
                    body = ({"series": event_to_events_v1(event, self.instance)["series"]} if event.action else
                            {"count": event.count, "lastTimestamp": format_time(event.last_timestamp)})
                    self._call(method, path, body=body, content_type=STRATEGIC_MERGE_PATCH)
                else:
                    self._call(method, path, body=self._encode(event))
            except ApiError as err:
                self.events_dropped += 1
                log.info("writing event %s/%s failed: %s", meta.namespace, meta.name, err)
            finally:
                self._events.task_done()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until the queued events are written (at most ``timeout`` seconds)."""
        with self._events.all_tasks_done:
            return self._events.all_tasks_done.wait_for(lambda: not self._events.unfinished_tasks, timeout)

    def create(self, obj: Any) -> Any:
        """POST the object (see :meth:`ClusterClient.create`); an Event is only queued for the event writer."""
        if isinstance(obj, Event):
            return self._write_event("POST", obj)
        resource = resource_of(obj)
        namespace = obj.metadata.namespace or ("default" if resource.namespaced else "")
        doc = self._call("POST", self._collection(resource, namespace), body=self._encode(obj))
        return self._decode(resource, doc)

    def update(self, obj: Any) -> Any:
        """PUT the object (see :meth:`ClusterClient.update`); an Event is only queued, to be sent as a PATCH."""
        if isinstance(obj, Event):
            return self._write_event("PATCH", obj)
        resource = resource_of(obj)
        meta = obj.metadata
        return self._decode(resource, self._call("PUT", self._path(resource, meta.name, meta.namespace),
                                                 body=self._encode(obj)))

    def update_status(self, obj: Any) -> Any:
        """PUT the object's ``/status`` (see :meth:`ClusterClient.update_status`)."""
        resource = resource_of(obj)
        meta = obj.metadata
        return self._decode(resource, self._call("PUT", self._path(resource, meta.name, meta.namespace, "status"),
                                                 body=self._encode(obj)))

    def patch(self, kind: str, name: str, patch: Any, namespace: str = "", *, subresource: str = "",
              patch_type: str = STRATEGIC_MERGE_PATCH, uid: str | None = None,
              resource_version: str | None = None) -> Any:
        """PATCH ``.../<name>`` or ``.../<name>/status`` with ``patch_type`` as the
        Content-Type (see :meth:`ClusterClient.patch`)."""
        if patch_type not in PATCH_TYPES:
            raise BadRequest(f"the patch type {patch_type!r} is not supported (supported: {', '.join(PATCH_TYPES)})")
        resource = RESOURCES[kind]
        body = with_preconditions(patch, uid, resource_version)
        doc = self._call("PATCH", self._path(resource, name, namespace, subresource), body=body,
                         content_type=patch_type)
        return self._decode(resource, doc)

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        """POST pods/binding.  The reply (a ``Status``) is not decoded.  A
        Conflict because the pod is already on ``node_name`` is a success:
        it is what a retried request whose first try got through sees."""
        resource = RESOURCES["Pod"]
        binding = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            self._call("POST", self._path(resource, name, namespace, "binding"), body=binding)
        except Conflict:
            current = self.get("Pod", name, namespace)
            if current.spec.node_name != node_name or (uid and current.metadata.uid != uid):
                raise

    def review(self, api_version: str, plural: str, spec: dict[str, Any]) -> dict[str, Any]:
        """POST a review (``authentication.k8s.io/v1`` ``tokenreviews``,
        ``authorization.k8s.io/v1`` ``subjectaccessreviews``) with ``spec``
        and return the API server's answer (its ``status``).  Raises ApiError."""
        kind = {"tokenreviews": "TokenReview", "subjectaccessreviews": "SubjectAccessReview"}[plural]
        body = {"apiVersion": api_version, "kind": kind, "spec": spec}
        return self._call("POST", f"/apis/{api_version}/{plural}", body=body).get("status") or {}

    def delete(self, kind: str, name: str, namespace: str = "", uid: str | None = None) -> None:
        """DELETE with DeleteOptions, a UID precondition when ``uid`` is given (see :meth:`ClusterClient.delete`)."""
        resource = RESOURCES[kind]
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        self._call("DELETE", self._path(resource, name, namespace), body=body)


def _same_shape(resource: ResourceType, api_version: str) -> bool:
    """Whether ``resource``'s manifests at ``api_version`` have the shape of its
    own version (its reader converts nothing), so kubesched may write there."""
    probe: dict = {}
    try:
        return resource.older_versions[api_version](probe) is probe
    except (KeyError, ValueError, TypeError):
        return False


def _idempotent(method: str, body: Any) -> bool:
    """Whether sending the request twice does what sending it once does, as
    client-go sees it: GET, a PUT naming the resourceVersion it replaces (a
    second try conflicts), a DELETE with a UID precondition."""
    if method in ("GET", "HEAD"):
        return True
    if not isinstance(body, dict):
        return False
    if method == "PUT":
        return bool((body.get("metadata") or {}).get("resourceVersion"))
    if method == "DELETE":
        return bool((body.get("preconditions") or {}).get("uid"))
    return False


def _idempotent_only(self, method: str) -> bool:
    """urllib3's ``Retry._is_method_retryable``: a timed-out or broken request
    is retried only when it is idempotent (:func:`_idempotent`)."""
    return getattr(self.owner._request, "idempotent", True)


def _client_go_is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
    """urllib3's ``Retry.is_retry``: an idempotent request on 429/5xx as
    configured; any other only on a 429/5xx that carries ``Retry-After``
    (client-go's ``checkWait``: the server asks for it again)."""
    if _idempotent_only(self, method):
        from urllib3.util.retry import Retry

        return Retry.is_retry(self, method, status_code, has_retry_after)
    return bool(self.total and has_retry_after and (status_code == 429 or status_code >= 500))


def _fenced_increment(self, method=None, url=None, *args, **kwargs):
    """urllib3's ``Retry.increment``, except that a request the client's
    :meth:`KubernetesCluster.refusal` now refuses is not retried."""
    from urllib3.exceptions import MaxRetryError

    refused = self.owner.refusal(method or "GET", url or "")
    if refused is not None:
        raise MaxRetryError(kwargs.get("_pool"), url or "", reason=Fenced(f"not retried: {refused}"))
    return super(type(self), self).increment(method, url, *args, **kwargs)


class _Reflector:
    """One kind's watch on its own thread: watch from a resourceVersion with
    bookmarks, resume from the last version seen, relist on 410 Gone (a
    :data:`REPLACE` event), back off on errors; until :meth:`stop`."""

    def __init__(self, cluster: KubernetesCluster, resource: ResourceType, resource_version: str,
                 sink: WatchSink):
        self.cluster = cluster
        self.resource = resource
        self.resource_version = resource_version
        self.sink = sink
        self._stopped = threading.Event()
        self._response: Any = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"watch-{resource.plural}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the watch; a blocked read is cut by shutting its socket down."""
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # the connection may be gone already
                pass

    def _run(self) -> None:
        delay = self.cluster.watch_backoff[0]
        while not self._stopped.is_set():
            try:
                self._watch_once()
                delay = self.cluster.watch_backoff[0]
                continue
            except Gone as err:
                log.info("watch of %s expired (%s); relisting", self.resource.plural, err)
                try:
                    listed = self.cluster.list(self.resource.kind, resource_version="")
                except ApiError as list_err:
                    log.warning("relisting %s failed: %s", self.resource.plural, list_err)
                else:
                    if not self._stopped.is_set():
                        self.sink(WatchEvent(REPLACE, self.resource.kind, listed.items))
                        self.resource_version = listed.resource_version
                        delay = self.cluster.watch_backoff[0]
                        continue
            except Exception as err:  # a broken stream, an API error, a bad line: back off and resume
                if self._stopped.is_set():
                    return
                log.warning("watch of %s failed: %s; retrying in %.1fs", self.resource.plural, err, delay)
            self._stopped.wait(delay * (1 + random.random() * 0.2))
            delay = min(delay * 2, self.cluster.watch_backoff[1])

    def _watch_once(self) -> None:
        timeout = random.randint(*self.cluster.watch_timeout)
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout))]
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        path = self.cluster._collection(self.resource, None)
        response = self.cluster._send("GET", path, query, timeout=(10.0, timeout + 30.0))
        if not 200 <= response.status <= 299:
            raise _api_error(response.status, response.read(), f"watch {path}")
        raw = response.response
        with self._lock:
            self._response = raw
        try:
            if self._stopped.is_set():
                return
            from kubernetes.watch.watch import iter_resp_lines

            for line in iter_resp_lines(raw):
                if self._stopped.is_set():
                    return
                if line:
                    self._handle(json.loads(line))
        finally:
            with self._lock:
                self._response = None
            raw.close()  # never hand a half-read stream back to the pool
            raw.release_conn()

    def _handle(self, event: dict) -> None:
        type_ = event.get("type")
        doc = event.get("object") or {}
        if type_ == "ERROR":
            raise _api_error(int(doc.get("code") or 500), json.dumps(doc), f"watch {self.resource.plural}")
        rv = (doc.get("metadata") or {}).get("resourceVersion", "")
        if type_ == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        if type_ not in (ADDED, MODIFIED, DELETED):
            return
        try:
            obj = self.cluster._decode(self.resource, doc)
        except ManifestError as err:
            log.warning("skipping %s %s: %s", self.resource.kind, (doc.get("metadata") or {}).get("name"), err)
        else:
            self.sink(WatchEvent(type_, self.resource.kind, obj))
        self.resource_version = rv or self.resource_version
