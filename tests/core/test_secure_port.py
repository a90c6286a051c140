"""The secure port under idle and misbehaving clients (loopback only, bounded counts).

A real server on a thread: the tests wait on sockets with timeouts, never
for fixed times.  Its p99 under load is measured in benchmarks/secure_port.py.
"""

from __future__ import annotations

import io
import json
import socket
import ssl
from contextlib import ExitStack

import pytest

from kubesched.core.observability.health import HealthServer
from kubesched.core.observability.logs import configure_logging
from kubesched.core.observability.serving_cert import self_signed

#: Far below the server's per-connection timeout (10 s): a probe waiting behind idle clients fails.
CLIENT_TIMEOUT = 3.0


def client_context(cert) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    return context


def get(port: int, path: str, context: ssl.SSLContext | None) -> tuple[int, bytes]:
    """One request on a fresh connection; (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT) as raw:
        sock = context.wrap_socket(raw, server_hostname="localhost") if context else raw
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.fixture
def tls_server(tmp_path):
    cert, key = self_signed(tmp_path)
    server = HealthServer("127.0.0.1", 0, lambda: True, lambda: False, tls=(cert, key))
    server.start()
    yield server, client_context(cert)
    server.stop()


def test_probes_answer_while_100_idle_tcp_and_100_idle_tls_connections_are_open(tls_server):
    server, context = tls_server
    with ExitStack() as idle:
        for _ in range(100):  # connected, never starting the TLS handshake
            idle.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT))
        for _ in range(100):  # handshake done, never sending a request
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT)
            idle.enter_context(context.wrap_socket(raw, server_hostname="localhost"))
        for _ in range(20):
            assert get(server.port, "/healthz", context) == (200, b"ok")
        assert get(server.port, "/readyz", context) == (500, b"readyz check failed")
        assert get(server.port, "/nothing", context)[0] == 404
        assert server.connections >= 100  # the idle TLS connections are still held, not refused


def test_an_idle_connection_and_a_stalled_handshake_are_closed_after_their_timeouts(tmp_path):
    cert, key = self_signed(tmp_path)
    server = HealthServer("127.0.0.1", 0, lambda: True, lambda: True, tls=(cert, key),
                          request_timeout=0.3, handshake_timeout=0.3)
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT) as stalled:
            assert stalled.recv(1) == b""  # the server gave up on the handshake and closed
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT)
        with client_context(cert).wrap_socket(raw, server_hostname="localhost") as idle:
            idle.sendall(b"GET /healthz HTTP/1.1\r\n")  # an unfinished request
            assert idle.recv(1) == b""
    finally:
        server.stop()


def test_clients_hanging_up_and_bad_requests_log_one_json_line_each(tmp_path):
    out = io.StringIO()
    restore_logging = configure_logging("json", v=2, stream=out)
    cert, key = self_signed(tmp_path)
    server = HealthServer("127.0.0.1", 0, lambda: True, lambda: True, tls=(cert, key))
    server.start()
    context = client_context(cert)
    try:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT) as early:
                early.sendall(b"\x16\x03\x01\x00")  # the start of a ClientHello, then gone
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT)
            with context.wrap_socket(raw, server_hostname="localhost") as half:
                half.sendall(b"GET /healthz HTTP/1.1\r\nHost")  # hung up mid-request
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=CLIENT_TIMEOUT)
            with context.wrap_socket(raw, server_hostname="localhost") as bad:
                bad.sendall(b"NOT HTTP\r\n\r\n")
                assert bad.recv(100).startswith(b"HTTP/1.1 400")
        assert get(server.port, "/healthz", context) == (200, b"ok")
    finally:
        server.stop()
        restore_logging()  # the root logger as the tests after this one on the worker expect it
    lines = out.getvalue().splitlines()
    assert any("bad request" in line for line in lines)
    for line in lines:
        record = json.loads(line)  # every line is one JSON record
        assert "Traceback" not in json.dumps(record)


def test_a_taken_port_is_an_error_at_start_up():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        with pytest.raises(OSError):
            HealthServer("127.0.0.1", taken.getsockname()[1], lambda: True, lambda: True)
