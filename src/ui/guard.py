"""What keeps other web pages from driving ``kubesched ui``: an ASGI middleware in front of the application.

The UI listens on loopback, but any page the user's browser shows can send
it requests (a cross-site form post, an ``<img>``), and a DNS-rebinding page
can make the browser read it under a foreign host name.  So, as OWASP's
CSRF and DNS-rebinding advice has it:

- every request must name the server as it is bound in ``Host``
  (``127.0.0.1:PORT``, ``localhost:PORT`` or ``[::1]:PORT``): 400 otherwise;
- every state-changing request (any method but GET, HEAD and OPTIONS) must
  come from the UI's own pages - an ``Origin`` (or, without one, a
  ``Referer``) of one of those hosts - and carry the per-process token, in
  the ``X-Kubesched-Token`` header (htmx sends it) or the ``token`` form
  field (every form has it): 403 otherwise;
- a request body is at most :data:`MAX_BODY_BYTES`: 413 otherwise.

Refusals are one line of plain text.  The token is compared in constant time.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

#: Methods that change nothing (the others need origin and token).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: The header that carries the token.
TOKEN_HEADER = "x-kubesched-token"
#: The form field that carries the token.
TOKEN_FIELD = "token"
#: The largest request body accepted (an edited manifest or configuration; bytes).
MAX_BODY_BYTES = 4 * 1024 * 1024

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


def new_token() -> str:
    """A fresh per-process token (256 random bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


def allowed_hosts(port: int) -> frozenset[str]:
    """The ``Host`` values a loopback server on ``port`` answers to."""
    return frozenset(f"{host}:{port}" for host in ("127.0.0.1", "localhost", "[::1]"))


class Guard:
    """ASGI middleware checking ``Host``, then for state-changing requests the
    origin, the body's size and the token (see the module docstring), before
    ``app`` sees the request.  ``hosts``: :func:`allowed_hosts`; ``token``:
    :func:`new_token`."""

    def __init__(self, app: Any, hosts: frozenset[str], token: str):
        self.app, self.hosts, self.token = app, hosts, token

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        if headers.get("host", "").lower() not in self.hosts:
            await _refuse(send, 400, "kubesched ui: refused: the Host header does not name this server "
                                     f"(expected one of {', '.join(sorted(self.hosts))})")
            return
        if scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        if not self._same_origin(headers):
            await _refuse(send, 403, "kubesched ui: refused: a change must come from the UI's own pages "
                                     "(Origin or Referer of this server)")
            return
        received = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            received += message.get("body", b"")
            more = message.get("more_body", False)
            if len(received) > MAX_BODY_BYTES:
                await _refuse(send, 413, f"kubesched ui: refused: the request body is over {MAX_BODY_BYTES} bytes")
                return
        body = bytes(received)
        if not self._has_token(headers, body):
            await _refuse(send, 403, "kubesched ui: refused: the request does not carry this server's token "
                                     "(reload the page)")
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _same_origin(self, headers: dict[str, str]) -> bool:
        source = headers.get("origin") or headers.get("referer") or ""
        parts = urlsplit(source)
        return parts.scheme == "http" and parts.netloc.lower() in self.hosts

    def _has_token(self, headers: dict[str, str], body: bytes) -> bool:
        given = headers.get(TOKEN_HEADER, "")
        if not given and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            given = next(iter(parse_qs(body.decode("latin-1")).get(TOKEN_FIELD, [])), "")
        return hmac.compare_digest(given.encode(), self.token.encode())


async def _refuse(send: Send, status: int, message: str) -> None:
    body = (message + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
