"""The daemon's HTTP endpoints: ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics``.

kube-scheduler serves them on its secure port (10259).  Here they are plain
HTTP (put a TLS proxy in front if needed), served by the standard library's
WSGI server, threaded as prometheus-client's own, with prometheus-client's
WSGI app for ``/metrics``.
"""

from __future__ import annotations

import threading
from typing import Callable
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import REGISTRY, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # probes every few seconds: not worth a log line
        pass


class HealthServer:
    """Serves the endpoints on ``bind_address:port`` (``port`` 0: any free
    port, see :attr:`port`) from a daemon thread.  ``healthy()`` and
    ``ready()`` answer ``/healthz`` (and ``/livez``) and ``/readyz``: 200
    ``ok`` when true, 500 otherwise.  Raises OSError when the port is taken."""

    def __init__(self, bind_address: str, port: int, healthy: Callable[[], bool], ready: Callable[[], bool]):
        self.checks = {"/healthz": healthy, "/livez": healthy, "/readyz": ready}
        self._metrics = make_wsgi_app(REGISTRY)
        self._server = make_server(bind_address, port, self._app, ThreadingWSGIServer, handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return self._metrics(environ, start_response)
        check = self.checks.get(path)
        if check is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"404 page not found\n"]
        ok = check()
        start_response("200 OK" if ok else "500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"ok" if ok else f"{path[1:]} check failed".encode()]
