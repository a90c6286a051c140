"""A scheduler extender for tests: a real HTTP server on 127.0.0.1 answering each verb with a Python function.

``with ExtenderServer(filter=..., prioritize=..., bind=..., preempt=...) as ext:`` serves ``ext.url`` +
``/<verb>``; each function takes the decoded request body (the extender/v1 JSON) and returns the answer to
encode; ``ext.requests`` lists (verb, body) as they came.  :func:`dead_url` is a URL nothing listens on.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class ExtenderServer:
    """The extender: ``verbs`` maps a verb to the function answering it (see the module doc)."""

    def __init__(self, **verbs: Callable[[dict], Any]):
        self.verbs = verbs
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                verb = self.path.rsplit("/", 1)[-1]
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.lock:
                    server.requests.append((verb, body))
                answer = server.verbs.get(verb)
                if answer is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/scheduler"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ExtenderServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self, verb: str) -> list[dict]:
        """The request bodies of ``verb`` received so far."""
        with self.lock:
            return [body for v, body in self.requests if v == verb]


def dead_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (a connection is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/scheduler"


def node_names(body: dict) -> list[str]:
    """The node names of an ExtenderArgs body, sent as names or as a NodeList."""
    if body.get("NodeNames") is not None:
        return body["NodeNames"]
    return [item["metadata"]["name"] for item in body["Nodes"]["items"]]
