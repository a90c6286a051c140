"""FakeAPIServer: a test double of kube-apiserver, over HTTP on 127.0.0.1.

It speaks the subset of the Kubernetes REST API that ``KubernetesCluster``
uses, with the real ``kubernetes`` client on the other end: list, watch
(chunked JSON lines, ``resourceVersion``, bookmarks, 410 as an ERROR event),
get, create, update and ``/status`` with resourceVersion conflicts,
strategic-merge and JSON merge PATCH (of an object or its ``/status``),
a pod's ``/resize`` (GET, PUT, PATCH: in-place resize, the API server's rules),
``pods/binding``, delete with a UID precondition, ``events.k8s.io/v1`` events
(kept as sent, and checked as the real server checks them) and leases.
Objects live in a :class:`MemoryCluster`, whose semantics it serves, with
what kube-apiserver adds on a real cluster: pods that run on a node are
deleted gracefully (a ``deletionTimestamp`` their grace period ahead; they
stay until :meth:`finish_terminating_pods`, the kubelets' part), a created
object's status is reset (a node's excepted), an event's fields other than
its series are immutable, lists page with ``limit``/``continue`` (except
from the watch cache, ``resourceVersion=0``), discovery of each group's
versions and resources, with kinds served only at the versions given
(``served``), and RBAC (``rbac``: the roles of deploy/rbac.yaml for the
token :data:`SERVICE_ACCOUNT_TOKEN`; 403 with upstream's message).
``writes`` logs every non-GET request with its body and Content-Type.

Faults for tests: :meth:`fail` (answer N requests with an HTTP error),
:meth:`stall` (hold a request until its retry arrives, so the client times
out), :meth:`hold_when` (hold one request of a client in the network until
:meth:`deliver`, then carry it out however late), :meth:`break_watches` (cut every open watch mid-stream),
:meth:`hold_watches` (new watches wait until released), :meth:`compact`
(history gone: resuming watches get 410) and :meth:`bookmark`.

The server is hand-written on ``http.server`` because no package offers a
kube-apiserver for tests (none is installable here; see the reference notes).
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

import attrs
import yaml

from fake_rbac import Attributes, Rbac
from kubesched.core.api import RESOURCES, from_manifest, object_key, to_manifest
from kubesched.core.cluster.client import AlreadyExists, ApiError, BadRequest, Conflict, Invalid, NotFound
from kubesched.core.cluster.memory import MemoryCluster
from kubesched.core.cluster.patch import PATCH_TYPES, apply_patch

#: The bearer token clients present (tokens that start with it are all accepted, as cluster admins).
TOKEN = "fake-token"
#: The token of the service account deploy/rbac.yaml binds its roles to (with ``rbac``).
SERVICE_ACCOUNT_TOKEN = "fake-token-serviceaccount"
#: A token the server's TokenReview accepts, of a user its SubjectAccessReview lets get /metrics.
METRICS_TOKEN = "metrics-reader-token"
METRICS_USER = "system:serviceaccount:monitoring:prometheus"
#: What an events.k8s.io/v1 update may not change (upstream's ``ValidateEventUpdate``).
EVENT_IMMUTABLE = ("action", "reason", "note", "type", "regarding", "related", "eventTime", "reportingController",
                   "reportingInstance", "deprecatedSource", "deprecatedFirstTimestamp")
MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
_BREAK, _BOOKMARK, _END = object(), object(), object()


#: How long :func:`wait_until` waits by default: a guard against a hang on a loaded machine, never what a test
#: measures (a condition met at all is met within seconds).
WAIT_TIMEOUT = 30.0
#: :func:`wait_until` also looks again this often (seconds): a predicate on a daemon's own state (ready,
#: leading) can become true after the last change ``changed`` signalled, with no request to signal it.
RECHECK_SECONDS = 0.2


def wait_until(predicate, changed: threading.Event, timeout: float = WAIT_TIMEOUT) -> None:
    """Return once ``predicate()`` is true, checking it again whenever
    ``changed`` is set (and every :data:`RECHECK_SECONDS`); AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        changed.clear()
        if predicate():
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout}s waiting for {getattr(predicate, '__name__', predicate)}")
        changed.wait(min(remaining, RECHECK_SECONDS))


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure" if code >= 300 else "Success",
            "code": code, "reason": reason, "message": message}


class _Fault:
    def __init__(self, method: str, path: str, times: int, code: int = 0, retry_after: int | None = None):
        self.method, self.path, self.times, self.code = method, re.compile(path), times, code
        self.retry_after = retry_after
        self.held: list[threading.Event] = []
        self.release = threading.Event()
        self.processed = threading.Event()


class _Watch:
    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.last_rv = 0


class FakeAPIServer:
    """A kube-apiserver test double.  ``cluster`` is the store (a new
    :class:`MemoryCluster` by default).  Use as a context manager, or
    :meth:`start`/:meth:`stop`.  ``requests`` logs ``(method, path, query)``;
    ``changed`` is set whenever a request arrives or is answered and when a
    watch opens or closes."""

    def __init__(self, cluster: MemoryCluster | None = None, rbac: str | Path | None = None,
                 served: dict[str, tuple[str, ...]] | None = None):
        self.cluster = cluster or MemoryCluster(graceful_deletion=True)
        self.rbac = Rbac(rbac) if rbac is not None else None
        #: kind -> the apiVersions it is served at (default: its own)
        self.served = {kind: (served or {}).get(kind, (r.api_version,)) for kind, r in RESOURCES.items()}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        #: (method, path, Content-Type, body) of every request but GET, in order of arrival
        self.writes: list[tuple[str, str, str, Any]] = []
        #: (method, path, HTTP status) of every answer but a watch's, in order
        self.answers: list[tuple[str, str, int]] = []
        #: (user, Attributes) of every resource request authorized by RBAC, and of every refused one
        self.authorized: list[tuple[str, Attributes]] = []
        self.forbidden: list[tuple[str, Attributes]] = []
        self._pages: dict[str, list] = {}
        #: events.k8s.io/v1 events and core/v1 events as stored, by namespace/name
        self.events: dict[str, dict] = {}
        self.core_events: dict[str, dict] = {}
        self._event_rv = 0
        self._faults: list[_Fault] = []
        self._watches: list[_Watch] = []
        self._watch_gate = threading.Event()
        self._watch_gate.set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.changed = threading.Event()
        #: (token, method, path) of every request carried out, in order
        self.processed: list[tuple[str, str, str]] = []
        self._partitioned: dict[str, threading.Event] = {}
        self._delays: list[tuple[str, re.Pattern, float]] = []
        self._delayed_now = 0
        #: the most delayed requests (:meth:`delay`) that were in the server at once
        self.most_concurrent = 0
        #: TokenReview: bearer token -> user name (others are not authenticated)
        self.users: dict[str, str] = {METRICS_TOKEN: METRICS_USER, "denied-token": "system:anonymous-ish"}
        #: SubjectAccessReview: (user, non-resource path, verb) that are allowed
        self.allowed: set[tuple[str, str, str]] = {(METRICS_USER, "/metrics", "get")}
        #: token -> how many requests had been carried out when its partition began
        self.cut_at: dict[str, int] = {}
        self._partition_triggers: list[tuple[str, re.Pattern, str]] = []
        self._hold_triggers: list[tuple[str, re.Pattern, str]] = []
        self._held: dict[str, threading.Event] = {}

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> "FakeAPIServer":
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-apiserver", daemon=True).start()
        return self

    def stop(self) -> None:
        self._watch_gate.set()
        with self._lock:
            for cut in [*self._partitioned.values(), *self._held.values()]:
                cut.set()
            for fault in self._faults:
                fault.release.set()
            for watch in self._watches:
                watch.queue.put(_END)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeAPIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def kubeconfig(self, path, token: str = TOKEN) -> str:
        """Write a kubeconfig (bearer token auth) pointing at this server; returns
        the path.  ``token`` (any that starts with ``fake-token``) tells clients
        apart for :meth:`partition_when`."""
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "fake",
               "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
               "users": [{"name": "kubesched", "user": {"token": token}}],
               "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "kubesched"}}]}
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        return str(path)

    # --- faults --------------------------------------------------------------------------

    def fail(self, method: str, path: str, code: int = 503, times: int = 1, retry_after: int | None = None) -> None:
        """Answer the next ``times`` requests ``method`` on a path matching the
        regular expression ``path`` with HTTP ``code`` (and a ``Retry-After``
        header of ``retry_after`` seconds, as kube-apiserver's 429s carry)."""
        with self._lock:
            self._faults.append(_Fault(method, path, times, code, retry_after))

    def stall(self, method: str, path: str) -> None:
        """Hold the next matching request until the next one after it (the
        client's retry after its timeout) arrives; the held request is then
        carried out first, so the retry meets its effect."""
        with self._lock:
            self._faults.append(_Fault(method, path, 1))

    def delay(self, method: str, path: str, seconds: float) -> None:
        """Answer every request ``method`` on a path matching ``path`` only after
        ``seconds`` (API latency); :attr:`most_concurrent` counts how many of
        them were in the server at once."""
        with self._lock:
            self._delays.append((method, re.compile(path), seconds))

    def partition_when(self, method: str, path: str, token: str) -> None:
        """Cut the client ``token`` off when it sends a request ``method`` on a
        path matching ``path``: that request and every later one of the client
        hang until :meth:`heal`, and are then dropped (the connection closes
        without an answer, nothing is carried out), as in a network partition."""
        with self._lock:
            self._partition_triggers.append((method, re.compile(path), token))

    def partitioned(self, token: str) -> bool:
        return token in self._partitioned

    def hold_when(self, method: str, path: str, token: str) -> None:
        """Hold every request ``method`` on a path matching ``path`` of the
        client ``token`` (its retries too) in the network until :meth:`deliver`:
        they are then carried out as sent, in order, whether or not their client
        still waits for the answer (writes that arrive after their sender gave
        up, or lost its lease)."""
        with self._lock:
            self._hold_triggers.append((method, re.compile(path), token))

    def holding(self, token: str) -> bool:
        """A request of ``token`` is held (:meth:`hold_when`)."""
        return token in self._held

    def deliver(self, token: str) -> None:
        """Let the requests of ``token`` that are held go on to the server; hold no more of them."""
        with self._lock:
            self._hold_triggers = [t for t in self._hold_triggers if t[2] != token]
            held = self._held.pop(token, None)
        if held is not None:
            held.set()

    def _hold(self, token: str, method: str, path: str) -> None:
        with self._lock:
            if not any(t[0] == method and t[1].search(path) and t[2] == token for t in self._hold_triggers):
                return
            held = self._held.setdefault(token, threading.Event())
        self.changed.set()
        held.wait(60)

    def heal(self, token: str) -> None:
        """End the partition of ``token``: its held requests are dropped, new ones served."""
        with self._lock:
            healed = self._partitioned.pop(token, None)
        if healed is not None:
            healed.set()

    def break_watches(self) -> None:
        """Cut every open watch mid-stream (no closing chunk)."""
        with self._lock:
            for watch in self._watches:
                watch.queue.put(_BREAK)

    @contextlib.contextmanager
    def hold_watches(self) -> Iterator[None]:
        """Inside the block, new watch requests wait; they go on when it ends."""
        self._watch_gate.clear()
        try:
            yield
        finally:
            self._watch_gate.set()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion on every open watch that asked for them."""
        with self._lock:
            for watch in self._watches:
                watch.queue.put(_BOOKMARK)

    def finish_terminating_pods(self) -> list[str]:
        """The kubelets' part of graceful deletion: every terminating pod goes."""
        return self.cluster.finish_terminating_pods()

    def compact(self) -> None:
        """Drop the change history: watches resuming from an older version get 410 Gone."""
        self.cluster.compact()

    def watch_count(self) -> int:
        with self._lock:
            return len(self._watches)

    def wait_until(self, predicate, timeout: float = WAIT_TIMEOUT) -> None:
        """Return once ``predicate()`` is true, checking after every request
        the server answers (and every :data:`RECHECK_SECONDS`); AssertionError after ``timeout`` seconds."""
        wait_until(predicate, self.changed, timeout)

    def count(self, method: str, path_pattern: str) -> int:
        """How many logged requests match ``method`` and the regular expression ``path_pattern``."""
        pattern = re.compile(path_pattern)
        return sum(1 for m, p, _ in list(self.requests) if m == method and pattern.search(p))

    # --- request handling (called from handler threads) ----------------------------------

    def _wait_delay(self, method: str, path: str) -> None:
        """Hold a request that :meth:`delay` slows down (the injected latency)."""
        seconds = next((d for m, pattern, d in self._delays if m == method and pattern.search(path)), None)
        if seconds is None:
            return
        with self._lock:
            self._delayed_now += 1
            self.most_concurrent = max(self.most_concurrent, self._delayed_now)
        try:
            threading.Event().wait(seconds)  # the latency of the network and the API server
        finally:
            with self._lock:
                self._delayed_now -= 1

    def _partition_for(self, token: str, method: str, path: str) -> threading.Event | None:
        """The event that ends the partition this request of ``token`` falls into, if any."""
        with self._lock:
            cut = self._partitioned.get(token)
            if cut is None:
                for trigger in self._partition_triggers:
                    if trigger[0] == method and trigger[1].search(path) and trigger[2] == token:
                        self._partition_triggers.remove(trigger)
                        cut = self._partitioned[token] = threading.Event()
                        self.cut_at[token] = len(self.processed)
                        break
        if cut is not None:
            self.changed.set()
        return cut

    def _fault_for(self, method: str, path: str) -> _Fault | None:
        """The fault to apply to this request, if any.  The retry of a stalled
        request waits here until the held one was carried out."""
        retried = None
        with self._lock:
            for fault in self._faults:
                if fault.method == method and fault.path.search(path):
                    if fault.times > 0:
                        fault.times -= 1
                        return fault
                    if fault.code == 0 and not fault.release.is_set():
                        retried = fault
                        break
        if retried is not None:
            retried.release.set()
            retried.processed.wait(10)
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls
    api: FakeAPIServer

    def log_message(self, *args: Any) -> None:
        pass

    def handle(self) -> None:
        """Serve the connection; a client that hung up before its answer (its
        request timed out, the test ended) is not an error of the server, as
        for kube-apiserver: no traceback on the test run's terminal."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # --- plumbing ------------------------------------------------------------------------

    def _reply(self, code: int, doc: Any, retry_after: int | None = None) -> None:
        self.api.answers.append((self.command, urlparse(self.path).path, code))
        body = json.dumps(doc).encode()
        self.send_response(code)
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, err: ApiError) -> None:
        self._reply(err.code, status(err.code, err.reason, err.message))

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def _route(self) -> None:
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        path = url.path.rstrip("/")
        body = self._body()
        self.api.requests.append((self.command, path, query))
        if self.command != "GET":
            self.api.writes.append((self.command, path, self.headers.get("Content-Type") or "", json.loads(json.dumps(body))))
        self.api.changed.set()
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if not token.startswith(TOKEN):
            return self._reply(401, status(401, "Unauthorized", "Unauthorized"))
        refused = self._authorize(token, path, query)
        if refused is not None:
            self.api.changed.set()
            return self._reply(403, status(403, "Forbidden", refused))
        cut = self.api._partition_for(token, self.command, path)
        if cut is not None:
            cut.wait(30)
            self.close_connection = True  # dropped: no answer, nothing done
            return None
        self.api._wait_delay(self.command, path)
        self.api._hold(token, self.command, path)
        fault = self.api._fault_for(self.command, path)
        if fault is not None and fault.code:
            return self._reply(fault.code, status(fault.code, "InternalError", "injected failure"), fault.retry_after)
        try:
            if fault is not None:  # stalled: wait for the retry, then carry this one out
                fault.release.wait(10)
            try:
                self.api.processed.append((token, self.command, path))
                self._dispatch(path, query, body)
            except ApiError as err:
                self._error(err)
        finally:
            if fault is not None:
                fault.processed.set()
            self.api.changed.set()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _route

    def _review(self, plural: str, spec: dict, body: dict) -> None:
        """TokenReview: ``api.users``; SubjectAccessReview: ``api.allowed`` (non-resource paths)."""
        if plural == "tokenreviews":
            user = self.api.users.get(spec.get("token", ""))
            status_ = {"authenticated": True, "user": {"username": user, "groups": ["system:authenticated"]}} \
                if user else {"authenticated": False}
        else:
            attributes = spec.get("nonResourceAttributes") or {}
            allowed = (spec.get("user"), attributes.get("path"), attributes.get("verb")) in self.api.allowed
            status_ = {"allowed": allowed, **({} if allowed else {"reason": "no RBAC policy matched"})}
        self._reply(201, {**body, "status": status_})

    def _parse(self, path: str) -> tuple[str, str | None, str, str, str] | None:
        """``(apiVersion, namespace, plural, name, subresource)`` of a resource
        path, or None for another (discovery, unknown)."""
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3:
            group_version, rest = parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            return None
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest:
            return None
        return group_version, namespace, rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""

    def _authorize(self, token: str, path: str, query: dict) -> str | None:
        """None when ``token`` may make this request; else upstream's 403 message.
        Only :data:`SERVICE_ACCOUNT_TOKEN` is checked, against ``rbac``."""
        rbac = self.api.rbac
        parsed = self._parse(path)
        if rbac is None or token != SERVICE_ACCOUNT_TOKEN or parsed is None:
            return None  # an admin, or discovery (open to every authenticated user)
        group_version, namespace, plural, name, sub = parsed
        verb = {"GET": "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(self.command, self.command.lower())
        request = Attributes(verb, group_version.rpartition("/")[0], f"{plural}/{sub}" if sub else plural,
                             namespace or "", name)
        user = rbac.user(*rbac.service_accounts[0])
        if rbac.allows(user, request):
            self.api.authorized.append((user, request))
            return None
        self.api.forbidden.append((user, request))
        return rbac.refusal(user, request)

    def _discovery(self, path: str) -> None:
        """``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``:
        what is served, as :attr:`FakeAPIServer.served` says."""
        served: dict[str, list] = {}
        for kind, versions in self.api.served.items():
            if kind == "Event":
                continue
            for version in versions:
                served.setdefault(version, []).append(RESOURCES[kind])
        served.setdefault("events.k8s.io/v1", []).append(RESOURCES["Event"])
        parts = path.strip("/").split("/")
        if parts == ["api"]:
            return self._reply(200, {"kind": "APIVersions", "versions": ["v1"]})
        groups: dict[str, list[str]] = {}
        for version in served:
            if "/" in version:
                group, _, _ = version.partition("/")
                groups.setdefault(group, []).append(version)
        order = ("v1", "v1beta2", "v1beta1", "v1alpha3")

        def group_doc(group: str) -> dict:
            versions = sorted(groups[group], key=lambda v: order.index(v.partition("/")[2])
                              if v.partition("/")[2] in order else len(order))
            entries = [{"groupVersion": v, "version": v.partition("/")[2]} for v in versions]
            return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
                    "preferredVersion": entries[0]}

        if parts == ["apis"]:
            return self._reply(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                     "groups": [group_doc(g) for g in sorted(groups)]})
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return self._reply(200, group_doc(parts[1]))
        version = parts[1] if parts[0] == "api" and len(parts) == 2 else "/".join(parts[1:3])
        if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3):
            if version in served:
                resources = []
                for r in served[version]:
                    resources.append({"name": r.plural, "namespaced": r.namespaced, "kind": r.kind,
                                      "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
                    if "status" in attrs.fields_dict(r.cls):
                        resources.append({"name": f"{r.plural}/status", "namespaced": r.namespaced, "kind": r.kind,
                                          "verbs": ["get", "patch", "update"]})
                    if r.kind == "Pod":
                        resources.append({"name": "pods/resize", "namespaced": True, "kind": "Pod",
                                          "verbs": ["get", "patch", "update"]})
                return self._reply(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": version,
                                         "resources": resources})
        raise _not_found(path)

    def _dispatch(self, path: str, query: dict, body: Any) -> None:
        parsed = self._parse(path)
        if parsed is None:
            return self._discovery(path)
        group_version, namespace, plural, name, sub = parsed
        if group_version in ("events.k8s.io/v1", "v1") and plural == "events":
            return self._events(namespace or "", name, body, legacy=group_version == "v1")
        if self.command == "POST" and (group_version, plural) in (("authentication.k8s.io/v1", "tokenreviews"),
                                                                   ("authorization.k8s.io/v1", "subjectaccessreviews")):
            return self._review(plural, (body or {}).get("spec") or {}, body or {})
        resource = next((r for r in RESOURCES.values() if group_version in self.api.served[r.kind]
                         and r.plural == plural and r.kind != "Event"), None)
        if resource is None:
            raise _not_found(path)
        cluster = self.api.cluster

        def manifest(obj: Any) -> dict:
            return {**to_manifest(obj), "apiVersion": group_version}

        if self.command == "GET" and not name:
            if query.get("watch") in ("true", "1"):
                return self._watch(resource.kind, query, group_version)
            return self._list(resource, namespace, query, group_version)
        if self.command == "GET":
            return self._reply(200, manifest(cluster.get(resource.kind, name, namespace or "")))
        if self.command == "POST" and sub == "binding":
            target = (body or {}).get("target") or {}
            uid = ((body or {}).get("metadata") or {}).get("uid", "")
            cluster.bind(namespace or "default", name, uid, target.get("name", ""))
            return self._reply(201, status(201, "", "") | {"status": "Success"})
        if self.command == "POST" and not name:
            obj = self._object(body, resource.kind)
            if hasattr(obj, "status") and resource.kind != "Node":  # the strategies reset status on create
                obj = attrs.evolve(obj, status=type(obj.status)(**({"phase": "Pending"} if resource.kind == "Pod"
                                                                   else {})))
            return self._reply(201, manifest(cluster.create(obj)))
        if self.command == "GET" and sub == "resize" and resource.kind == "Pod":
            return self._reply(200, manifest(cluster.get(resource.kind, name, namespace or "")))
        if self.command == "PUT" and (sub in ("", "status") or (sub == "resize" and resource.kind == "Pod")):
            obj = self._object(body, resource.kind)
            stored = (cluster.update_status(obj) if sub == "status" else cluster.update_resize(obj) if sub == "resize"
                      else cluster.update(obj))
            return self._reply(200, manifest(stored))
        if self.command == "PATCH" and name and (sub in ("", "status") or (sub == "resize" and resource.kind == "Pod")):
            patch_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if patch_type not in PATCH_TYPES:
                raise UnsupportedMediaType(f'the body of the request was in an unknown format - accepted media types '
                                           f'include: application/json-patch+json, {", ".join(PATCH_TYPES)}, '
                                           'application/apply-patch+yaml')
            stored = cluster.patch(resource.kind, name, body, namespace or "", subresource=sub, patch_type=patch_type)
            return self._reply(200, manifest(stored))
        if self.command == "DELETE" and name:
            uid = ((body or {}).get("preconditions") or {}).get("uid")
            cluster.delete(resource.kind, name, namespace or "", uid)
            return self._reply(200, status(200, "", "") | {"status": "Success"})
        raise _not_found(path)

    def _list(self, resource: Any, namespace: str | None, query: dict, group_version: str) -> None:
        """A list: whole from the watch cache (``resourceVersion=0``), else in
        pages of ``limit`` with a ``continue`` token, every page of one
        snapshot (as etcd serves them at the first page's revision)."""
        token = query.get("continue")
        if token:
            with self.api._lock:
                items, rv = self.api._pages.pop(token, (None, ""))
            if items is None:
                raise ApiError("The provided continue parameter is too old to display a consistent list result.")
        else:
            listed = self.api.cluster.list(resource.kind, namespace)
            items, rv = sorted(listed.items, key=object_key), listed.resource_version
        limit = int(query.get("limit") or 0)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if limit and query.get("resourceVersion") != "0" and len(items) > limit:
            items, rest = items[:limit], items[limit:]
            next_token = f"{rv}-{len(self.api._pages)}-{object_key(items[-1])}"
            with self.api._lock:
                self.api._pages[next_token] = (rest, rv)
            meta["continue"] = next_token
        return self._reply(200, {"apiVersion": group_version, "kind": f"{resource.kind}List", "metadata": meta,
                                 "items": [{**to_manifest(o), "apiVersion": group_version} for o in items]})

    def _object(self, body: Any, kind: str) -> Any:
        if not isinstance(body, dict) or body.get("kind") != kind:
            raise Invalid(f"expected a {kind} object")
        if kind == "Lease":
            for key in ("acquireTime", "renewTime"):
                value = (body.get("spec") or {}).get(key)
                if value is not None and not MICRO_TIME.match(value):
                    raise Invalid(f"spec.{key}: Invalid value: {value!r}: must be a MicroTime (RFC 3339 with microseconds)")
        try:
            return from_manifest(body)
        except ValueError as err:
            raise Invalid(str(err)) from None

    # --- events.k8s.io/v1 ----------------------------------------------------------------

    def _events(self, namespace: str, name: str, body: Any, legacy: bool = False) -> None:
        """events.k8s.io/v1 events (in :attr:`FakeAPIServer.events`), kept as
        sent: created, read, replaced or patched (merge or strategic),
        validated as kube-apiserver validates them, with every field but
        ``series`` (and metadata) immutable; core/v1 events (``legacy``, in
        :attr:`FakeAPIServer.core_events`) with the legacy rules: an
        involvedObject, a reason, a type, nothing immutable."""
        api = self.api
        store = api.core_events if legacy else api.events
        key = f"{namespace}/{name}"
        if self.command == "GET" and name:
            if key not in store:
                raise _not_found(f"events.events.k8s.io {name!r}")
            return self._reply(200, store[key])
        if self.command not in ("POST", "PUT", "PATCH") or (self.command != "POST") != bool(name):
            raise _not_found(self.path)
        with api._lock:
            stored = store.get(key) if name else None
            if self.command != "POST" and stored is None:
                raise _not_found(f"events.events.k8s.io {name!r}")
            if self.command == "PATCH":
                patch_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                body = apply_patch(stored, body, patch_type)
            if not isinstance(body, dict):
                raise BadRequest("expected an Event")
            required = ("involvedObject", "reason") if legacy else ("reportingController", "reportingInstance",
                                                                    "action", "reason", "regarding")
            problems = [f"{f}: Required value" for f in required if not body.get(f)]
            if not legacy and not MICRO_TIME.match(body.get("eventTime") or ""):
                problems.append("eventTime: Required value")
            if body.get("type") not in ("Normal", "Warning"):
                problems.append(f"type: Unsupported value: {body.get('type')!r}")
            if len((body.get("note") or "").encode()) > 1024:
                problems.append("note: Too long: may not be more than 1024 bytes")
            if stored is not None and not legacy:
                problems += [f"{f}: Invalid value: {body.get(f)!r}: field is immutable" for f in EVENT_IMMUTABLE
                             if body.get(f) != stored.get(f)]
            meta = body.setdefault("metadata", {})
            if problems:
                group = "" if legacy else ".events.k8s.io"
                raise Invalid(f'Event{group} "{meta.get("name")}" is invalid: ' + ", ".join(problems))
            meta["namespace"] = namespace
            key = f"{namespace}/{meta.get('name')}"
            if self.command == "POST" and key in store:
                raise AlreadyExists(f'events.events.k8s.io "{meta.get("name")}" already exists')
            if stored is not None and self.command == "PUT" and meta.get("resourceVersion") \
                    and meta["resourceVersion"] != stored["metadata"]["resourceVersion"]:
                raise Conflict(f'Operation cannot be fulfilled on events.events.k8s.io "{name}": the object has been '
                               "modified; please apply your changes to the latest version and try again")
            api._event_rv += 1
            meta["resourceVersion"] = str(api._event_rv)
            store[key] = body
        return self._reply(201 if self.command == "POST" else 200, body)

    # --- watch ---------------------------------------------------------------------------

    def _watch(self, kind: str, query: dict, group_version: str) -> None:
        api = self.api
        api._watch_gate.wait(10)
        watch = _Watch()
        since = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks") == "true"
        cluster = api.cluster
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stop = None
        try:
            if since in ("", "0"):  # "the most recent": the current objects as ADDED, then changes
                listed = cluster.list(kind)
                for obj in listed.items:
                    watch.queue.put(("ADDED", obj))
                since = listed.resource_version
            try:
                stop = cluster.watch(kind, since, lambda event: watch.queue.put((event.type, event.obj)))
            except ApiError as err:
                self._chunk({"type": "ERROR", "object": status(err.code, err.reason, err.message)})
                self._chunk_end()
                return
            watch.last_rv = int(since or 0)
            with api._lock:
                api._watches.append(watch)
            api.changed.set()
            timeout = float(query.get("timeoutSeconds") or 1800)
            timer = threading.Timer(timeout, lambda: watch.queue.put(_END))
            timer.daemon = True
            timer.start()
            while True:
                item = watch.queue.get()
                if item is _BREAK:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if item is _END:
                    timer.cancel()
                    self._chunk_end()
                    return
                if item is _BOOKMARK:
                    if bookmarks:
                        watch.last_rv = max(watch.last_rv, int(cluster.resource_version()))
                        self._chunk({"type": "BOOKMARK", "object": {
                            "kind": kind, "apiVersion": group_version,
                            "metadata": {"resourceVersion": str(watch.last_rv)}}})
                    continue
                type_, obj = item
                watch.last_rv = max(watch.last_rv, int(obj.metadata.resource_version or 0))
                self._chunk({"type": type_, "object": {**to_manifest(obj), "apiVersion": group_version}})
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            if stop is not None:
                stop()
            with api._lock:
                if watch in api._watches:
                    api._watches.remove(watch)
            api.changed.set()

    def _chunk(self, doc: dict) -> None:
        data = json.dumps(doc).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _chunk_end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


class UnsupportedMediaType(ApiError):
    code, reason = 415, "UnsupportedMediaType"


def _not_found(what: str) -> ApiError:
    return NotFound(f"the server could not find the requested resource ({what})")


def main(argv: list[str] | None = None) -> None:
    """``python tests/fake_apiserver.py -f DIR --kubeconfig FILE``: the fake API server holding the objects of the
    manifests ``-f`` (repeatable), on a free port of 127.0.0.1, with a kubeconfig written to FILE for
    ``kubesched run --kubeconfig FILE`` (or ``snapshot``); it serves until interrupted (Ctrl-C or SIGTERM: exit 0).
    Try the daemon against it without a cluster; pods bound stay bound (no kubelet runs them)."""
    import argparse
    import signal

    from kubesched.core.api.manifests import InvalidManifest
    from kubesched.drivers.simulation import load_paths

    parser = argparse.ArgumentParser(prog="python tests/fake_apiserver.py", description=main.__doc__)
    parser.add_argument("-f", "--filename", action="append", default=[], help="manifest file or directory")
    parser.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig of this server")
    args = parser.parse_args(argv)
    api = FakeAPIServer()
    try:
        load_paths(api.cluster, args.filename)
    except InvalidManifest as err:
        parser.exit(2, f"{err}\n")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with api:
        api.kubeconfig(args.kubeconfig)
        print(f"fake API server on {api.url}, kubeconfig {args.kubeconfig} (Ctrl-C stops it)", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
