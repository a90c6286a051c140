"""The daemon's secure port: ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics``.

As kube-scheduler on 10259: HTTPS with the given serving certificate (or a
self-signed one, :mod:`.serving_cert`); the probes are open, ``/metrics``
needs a request that ``authorize(authorization header, path)`` allows
(delegated authentication and authorization against the API server,
:class:`~kubesched.core.cluster.delegated_auth.DelegatedAuth`) unless it is
None.  The server is cheroot's WSGI server (CherryPy's): a bounded pool of
:data:`THREADS` worker threads, a bounded queue of accepted connections and
a per-connection timeout, instead of a thread per socket; prometheus-client's
WSGI app renders ``/metrics``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from cheroot import wsgi
from cheroot.ssl.builtin import BuiltinSSLAdapter
from prometheus_client import REGISTRY, make_wsgi_app

#: Worker threads of the server (probes and scrapes are short).
THREADS = 4
#: Connections accepted and waiting for a worker, at most; more wait in the listen backlog.
ACCEPTED_QUEUE = 64
#: Seconds a connection may stay idle or slow before it is closed.
CONNECTION_TIMEOUT = 10

#: ``authorize(authorization header or None, path) -> (HTTP status, text)``
Authorize = Callable[[str | None, str], tuple[int, str]]
PROTECTED_PATHS = ("/metrics",)

_STATUS_TEXT = {200: "200 OK", 401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not Found",
                500: "500 Internal Server Error"}


class HealthServer:
    """Serves the endpoints on ``bind_address:port`` (``port`` 0: any free
    port, see :attr:`port`) from a daemon thread.  ``healthy()`` and
    ``ready()`` answer ``/healthz`` (and ``/livez``) and ``/readyz``: 200
    ``ok`` when true, 500 otherwise.  ``tls``: (certificate, key) PEM files,
    None for plain HTTP; ``authorize``: the check of :data:`PROTECTED_PATHS`
    (None: open).  Raises OSError when the port is taken or the files
    cannot be read."""

    def __init__(self, bind_address: str, port: int, healthy: Callable[[], bool], ready: Callable[[], bool],
                 tls: tuple[Path, Path] | None = None, authorize: Authorize | None = None):
        self.checks = {"/healthz": healthy, "/livez": healthy, "/readyz": ready}
        self.authorize = authorize
        self.scheme = "https" if tls is not None else "http"
        self._metrics = make_wsgi_app(REGISTRY)
        self._server = wsgi.Server((bind_address, port), self._app, numthreads=THREADS, max=THREADS,
                                   timeout=CONNECTION_TIMEOUT, accepted_queue_size=ACCEPTED_QUEUE,
                                   server_name="kubesched")
        if tls is not None:
            self._server.ssl_adapter = BuiltinSSLAdapter(str(tls[0]), str(tls[1]))
        self._server.prepare()  # binds now: a taken port is an error at start-up
        self._thread = threading.Thread(target=self._server.serve, name="secure-port", daemon=True)

    @property
    def port(self) -> int:
        return self._server.bind_addr[1]

    def start(self) -> None:
        """Serve on the daemon thread (the port is already bound)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the port."""
        self._server.stop()

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path in PROTECTED_PATHS and self.authorize is not None:
            code, text = self.authorize(environ.get("HTTP_AUTHORIZATION"), path)
            if code != 200:
                start_response(_STATUS_TEXT.get(code, f"{code} Error"), [("Content-Type", "text/plain")])
                return [text.encode()]
        if path == "/metrics":
            return self._metrics(environ, start_response)
        check = self.checks.get(path)
        if check is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"404 page not found\n"]
        ok = check()
        start_response("200 OK" if ok else "500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"ok" if ok else f"{path[1:]} check failed".encode()]
