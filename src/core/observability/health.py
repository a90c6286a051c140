"""The daemon's secure port: ``/healthz``, ``/livez``, ``/readyz`` and ``/metrics``.

As kube-scheduler on 10259: HTTPS with the given serving certificate (or a
self-signed one, :mod:`.serving_cert`); the probes are open, ``/metrics``
needs a request that ``authorize(authorization header, path)`` allows
(delegated authentication and authorization against the API server,
:class:`~kubesched.core.cluster.delegated_auth.DelegatedAuth`) unless it is
None.

The server is asyncio's (its TLS) with h11 parsing HTTP/1.1, on one thread
with its own event loop.  Why not a thread-pool server: cheroot did the TLS
handshake on its accept thread and gave each connection a worker thread, so
one idle TCP connection stalled every probe for its timeout and a few held
all workers; uvicorn has no bound on the TLS handshake (asyncio's 60 s
default) nor on a connection that never sends a request.  Here an idle
connection costs a socket and a coroutine, never a thread: handshakes run in
the event loop beside everything else and are cut after
:data:`HANDSHAKE_TIMEOUT`; each request must arrive whole within
:data:`REQUEST_TIMEOUT` of the connection (or of the previous answer);
at most :data:`MAX_CONNECTIONS` are served at once (more are closed at
once).  The probes are answered on the loop (a flag read); ``/metrics``
(prometheus-client's exposition) and the authorization check (a request to
the API server) run on worker threads so they never hold the loop.  A
connection's errors (a client hanging up mid-handshake, a malformed
request, a timeout) are one DEBUG log record each, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from pathlib import Path
from typing import Callable

import h11
from prometheus_client import REGISTRY, exposition

log = logging.getLogger(__name__)

#: Seconds a client has to complete the TLS handshake.
HANDSHAKE_TIMEOUT = 5.0
#: Seconds a connection may take to send a whole request (from its start or the previous answer).
REQUEST_TIMEOUT = 10.0
#: Seconds a client has to take an answer (a full send buffer) before the connection is dropped.
WRITE_TIMEOUT = 10.0
#: Connections served at once; a further one is closed as soon as it is accepted.
MAX_CONNECTIONS = 1000
#: Bytes of request head (line and headers) accepted; the body of a request is read and dropped up to this too.
MAX_REQUEST_BYTES = 16 * 1024
#: Pending connections the kernel keeps for ``accept``.
BACKLOG = 1024

#: ``authorize(authorization header or None, path) -> (HTTP status, text)``
Authorize = Callable[[str | None, str], tuple[int, str]]
PROTECTED_PATHS = ("/metrics",)


class _BadRequest(Exception):
    """The client sent what is not an acceptable HTTP/1.1 request (answered 400 or 413)."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


class HealthServer:
    """Serves the endpoints on ``bind_address:port`` (``port`` 0: any free
    port, see :attr:`port`) from a daemon thread.  ``healthy()`` and
    ``ready()`` answer ``/healthz`` (and ``/livez``) and ``/readyz``: 200
    ``ok`` when true, 500 otherwise; they are called on the server's event
    loop and must be quick (a flag or a clock read).  ``tls``: (certificate,
    key) PEM files, None for plain HTTP; ``authorize``: the check of
    :data:`PROTECTED_PATHS` (None: open), called on a worker thread.
    ``request_timeout`` and ``handshake_timeout`` (seconds) default to
    :data:`REQUEST_TIMEOUT` and :data:`HANDSHAKE_TIMEOUT`.  Raises OSError
    (``ssl.SSLError`` included) when the port is taken or the files cannot
    be read."""

    def __init__(self, bind_address: str, port: int, healthy: Callable[[], bool], ready: Callable[[], bool],
                 tls: tuple[Path, Path] | None = None, authorize: Authorize | None = None,
                 request_timeout: float = REQUEST_TIMEOUT, handshake_timeout: float = HANDSHAKE_TIMEOUT):
        self.checks = {"/healthz": healthy, "/livez": healthy, "/readyz": ready}
        self.authorize = authorize
        self.scheme = "https" if tls is not None else "http"
        self.request_timeout = request_timeout
        self.handshake_timeout = handshake_timeout
        self._ssl: ssl.SSLContext | None = None
        if tls is not None:
            self._ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._ssl.load_cert_chain(str(tls[0]), str(tls[1]))
        family = socket.getaddrinfo(bind_address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        # binds now: a taken port is an error at start-up
        self._socket = socket.create_server((bind_address, port), family=family, backlog=BACKLOG)
        self._socket.setblocking(False)
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_log_loop_error)
        self._stopping: asyncio.Event | None = None
        self._connections = 0
        self._thread = threading.Thread(target=self._serve, name="secure-port", daemon=True)

    @property
    def port(self) -> int:
        return self._socket.getsockname()[1]

    @property
    def connections(self) -> int:
        """Connections being served now (after their TLS handshake)."""
        return self._connections

    def start(self) -> None:
        """Serve on the daemon thread (the port is already bound)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the port (waits up to a few seconds for the thread)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._request_stop)
            self._thread.join(timeout=5)
        else:
            self._socket.close()

    def _request_stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._connection, sock=self._socket, ssl=self._ssl,
                                            ssl_handshake_timeout=self.handshake_timeout if self._ssl else None,
                                            limit=MAX_REQUEST_BYTES)
        async with server:
            await self._stopping.wait()
        # connections still open are closed when the loop's tasks are cancelled
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if self._connections >= MAX_CONNECTIONS:
            log.debug("secure port: too many connections, closing a new one", extra={"client": str(peer)})
            writer.close()
            return
        self._connections += 1
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
        try:
            while True:
                try:
                    async with asyncio.timeout(self.request_timeout):
                        request = await _read_request(conn, reader)
                except _BadRequest as bad:
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        await self._send(conn, writer, "GET", bad.status, "text/plain", f"{bad}\n".encode())
                    log.debug("secure port: bad request", extra={"client": str(peer), "err": str(bad)})
                    return
                if request is None:
                    return
                method = request.method.decode("ascii", "replace")
                status, content_type, body = await self._answer(method, request)
                await self._send(conn, writer, method, status, content_type, body)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (TimeoutError, OSError, h11.ProtocolError) as exc:
            log.debug("secure port: connection closed", extra={"client": str(peer),
                                                               "err": f"{type(exc).__name__}: {exc}"})
        finally:
            self._connections -= 1
            writer.close()

    async def _answer(self, method: str, request: h11.Request) -> tuple[int, str, bytes]:
        path = request.target.decode("ascii", "replace").split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"405 method not allowed\n"
        if path in PROTECTED_PATHS and self.authorize is not None:
            header = next((v.decode("latin-1") for k, v in request.headers if k == b"authorization"), None)
            code, text = await asyncio.to_thread(self.authorize, header, path)
            if code != 200:
                return code, "text/plain", text.encode()
        if path == "/metrics":
            return 200, exposition.CONTENT_TYPE_LATEST, await asyncio.to_thread(exposition.generate_latest, REGISTRY)
        check = self.checks.get(path)
        if check is None:
            return 404, "text/plain", b"404 page not found\n"
        if check():
            return 200, "text/plain", b"ok"
        return 500, "text/plain", f"{path[1:]} check failed".encode()

    async def _send(self, conn: h11.Connection, writer: asyncio.StreamWriter, method: str, status: int,
                    content_type: str, body: bytes) -> None:
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body))),
                   ("X-Content-Type-Options", "nosniff")]
        data = conn.send(h11.Response(status_code=status, headers=headers))
        if method != "HEAD":
            data += conn.send(h11.Data(data=body))
        data += conn.send(h11.EndOfMessage())
        writer.write(data)
        async with asyncio.timeout(WRITE_TIMEOUT):
            await writer.drain()


async def _read_request(conn: h11.Connection, reader: asyncio.StreamReader) -> h11.Request | None:
    """The next request on ``conn`` read whole (its body dropped), or None
    when the client closed the connection.  Raises _BadRequest."""
    request: h11.Request | None = None
    body = 0
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise _BadRequest(exc.error_status_hint, f"bad request: {exc}") from None
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(MAX_REQUEST_BYTES))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += len(event.data)
            if body > MAX_REQUEST_BYTES:
                raise _BadRequest(413, "request body too large")
        elif isinstance(event, h11.EndOfMessage):
            return request
        elif isinstance(event, h11.ConnectionClosed):
            return None


def _log_loop_error(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The event loop's errors as one log record (no traceback)."""
    exc = context.get("exception")
    log.warning("secure port: %s", context.get("message", "error"),
                extra={"err": f"{type(exc).__name__}: {exc}" if exc is not None else None})
