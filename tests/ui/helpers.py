"""A running ``kubesched ui`` server for the tests, and reading its pages over HTTP (the standard library)."""

from __future__ import annotations

import contextlib
import re
import urllib.error
import urllib.parse
import urllib.request
from html import unescape
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a test waits for a run of an example (they take well under a second).
RUN_TIMEOUT = 60


@contextlib.contextmanager
def serving(paths, config=None, changes=(), watch: bool = False) -> Iterator:
    """(runs, server) over ``paths``, the first run over."""
    from kubesched.ui.runs import Runs
    from kubesched.ui.server import UiServer

    runs = Runs([Path(p) for p in paths], config, changes)
    runs.start()
    server = UiServer(runs, watch=watch)
    server.start()
    try:
        assert runs.wait(0, RUN_TIMEOUT), "the first run did not finish"
        yield runs, server
    finally:
        server.stop()
        runs.close()


def get(server, path: str, status: int = 200) -> str:
    """The page at ``path``, which must answer with ``status``."""
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=RUN_TIMEOUT) as response:
            code, body = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        code, body = err.code, err.read().decode()
    assert code == status, (path, code, body[:500])
    return body


def post(server, path: str, fields: dict[str, str]) -> str:
    """POST a form like the browser does; returns the page it leads to (after the redirect)."""
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(server.url.rstrip("/") + path, data=data, method="POST")
    with urllib.request.urlopen(request, timeout=RUN_TIMEOUT) as response:
        return response.read().decode()


def text(html: str) -> str:
    """The page's text, tags dropped and white space collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()
