"""Serving the UI on loopback with uvicorn, and watching the input files.

The socket is bound before the server starts (port 0: the system picks a
free one), so the address is known and can be printed at once.  Only
127.0.0.1 is ever bound: the UI edits and simulates whatever the person at
this machine asks, and nobody else should reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import AsyncIterator, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

from .app import create_app
from .runs import Runs

HOST = "127.0.0.1"
#: Seconds between two looks at the input files' modification times.
WATCH_SECONDS = 1.0
#: Seconds open connections (event streams) get to finish when the server stops.
SHUTDOWN_SECONDS = 1


class UiServer:
    """uvicorn serving :func:`create_app` over ``runs`` on ``127.0.0.1:port``
    (0: a free port).  :attr:`url` is known once constructed.  :meth:`run`
    serves in this thread until interrupted (Ctrl-C); :meth:`start` and
    :meth:`stop` serve from another thread (tests).  Raises OSError when the
    port cannot be bound."""

    def __init__(self, runs: Runs, port: int = 0, title: str = "kubesched ui", watch: bool = True):
        self.runs = runs
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((HOST, port))
        self.socket.listen(128)
        self.url = f"http://{HOST}:{self.socket.getsockname()[1]}/"
        self.closing = threading.Event()
        app = create_app(runs, self.socket.getsockname()[1], title, self.closing)
        if watch:
            app.router.lifespan_context = self._watching
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_SECONDS)
        self.server = _Server(config, self._end_streams)
        self._thread: threading.Thread | None = None

    @contextlib.asynccontextmanager
    async def _watching(self, app: Starlette) -> AsyncIterator[None]:
        """While serving, read the input files again when one changes."""
        async def watch() -> None:
            while True:
                await asyncio.sleep(WATCH_SECONDS)
                await run_in_threadpool(self.runs.reload_files)

        task = asyncio.create_task(watch())
        try:
            yield
        finally:
            task.cancel()

    def _end_streams(self) -> None:
        self.closing.set()
        self.runs.notify()

    def run(self) -> None:
        """Serve until interrupted."""
        self.server.run(sockets=[self.socket])

    def start(self) -> None:
        """Serve from a background thread.  The socket already listens: a
        request made at once waits in its backlog until the server accepts it."""
        self._thread = threading.Thread(target=self.run, name="kubesched-ui-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (the thread started by :meth:`start`)."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join()


class _Server(uvicorn.Server):
    """uvicorn's server that ends the event streams first when it shuts down
    (they would otherwise hold the shutdown until its timeout)."""

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]):
        super().__init__(config)
        self.on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets)
