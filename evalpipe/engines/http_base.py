"""One aiohttp base for the OpenAI-compatible servers evalpipe runs and the servers its tests run.

evalpipe's own servers (the answer-key self-test server, the replay server, the front of the llama.cpp
launcher) and the test doubles all need what the launcher reads (``evalpipe.server.lifecycle``) and a clean
stop on SIGTERM.  Written once here:

* :class:`ModelServer` — the routes every such server shares: ``/health`` (503 while loading, then 200),
  ``/server_info`` (and SGLang's older ``/get_server_info``), ``/model_info`` + ``/get_model_info``,
  ``/v1/models``; a subclass supplies the documents and adds its own routes (chat completions …);
* :func:`serve_until_signalled` — the serve loop of a server *process*: listen, optionally load something
  while ``/health`` says 503, stop on SIGTERM/SIGINT with exit code 0;
* :class:`ServerThread` — the same app served by a background thread (in-process tests).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _bound_port(runner: web.AppRunner) -> int:
    """The port the runner actually listens on (differs from the requested one with port 0)."""
    address = runner.addresses[0]
    return int(address[1])


class ModelServer:
    """The routes a model server shares; subclasses override the hooks and add routes in :meth:`add_routes`.

    A document hook returning None means "not available yet" (503); a path tuple left empty means the route
    is not served at all (404), like the many servers without ``/server_info``.
    """

    served_model_name: str = "model"
    #: Paths answering readiness (SGLang also serves ``/health_generate``).  Class defaults; an instance
    #: may override any of them (a test double without ``/server_info``).
    health_paths: tuple[str, ...] = ("/health",)
    server_info_paths: tuple[str, ...] = ("/server_info", "/get_server_info")
    model_info_paths: tuple[str, ...] = ("/model_info", "/get_model_info")
    models_paths: tuple[str, ...] = ("/v1/models",)
    #: Body of ``/health`` while not ready.
    loading_body: Mapping[str, Any] = {"status": "loading"}
    #: ``owned_by`` of the ``/v1/models`` card.
    owned_by: str = "evalpipe"
    #: Largest request body accepted (aiohttp's default is 1 MiB; long prompts exceed it).
    client_max_size: int = 256 * 1024 * 1024

    # ------------------------------------------------------------------ hooks
    def is_ready(self) -> bool:
        """False while loading: ``/health`` answers 503."""
        return True

    def authorized(self, request: web.Request) -> bool:
        """False: the info routes answer 401 (a server started with an API key)."""
        return True

    def server_info(self) -> Mapping[str, Any] | None:
        """The resolved server arguments (None: not available yet)."""
        return None

    def model_info(self) -> Mapping[str, Any] | None:
        return {"model_path": self.served_model_name, "is_generation": True}

    def model_ids(self) -> list[str]:
        return [self.served_model_name]

    def add_routes(self, app: web.Application) -> None:
        """A subclass's own routes (chat completions, fault listings …)."""

    # ------------------------------------------------------------------ app
    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=self.client_max_size)
        for path in self.health_paths:
            app.router.add_get(path, self.health)
        for path in self.server_info_paths:
            app.router.add_get(path, self._server_info)
        for path in self.model_info_paths:
            app.router.add_get(path, self._model_info)
        for path in self.models_paths:
            app.router.add_get(path, self._models)
        self.add_routes(app)
        return app

    async def health(self, request: web.Request) -> web.StreamResponse:
        if not self.is_ready():
            return web.json_response(dict(self.loading_body), status=503)
        return web.Response(status=200)

    async def _server_info(self, request: web.Request) -> web.StreamResponse:
        return self._document(request, self.server_info())

    async def _model_info(self, request: web.Request) -> web.StreamResponse:
        return self._document(request, self.model_info())

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if not self.authorized(request):
            return _unauthorized()
        cards = [
            {"id": m, "object": "model", "created": 0, "owned_by": self.owned_by} for m in self.model_ids()
        ]
        return web.json_response({"object": "list", "data": cards})

    def _document(self, request: web.Request, doc: Mapping[str, Any] | None) -> web.StreamResponse:
        if not self.authorized(request):
            return _unauthorized()
        if doc is None:
            return web.json_response(dict(self.loading_body), status=503)
        return web.json_response(dict(doc))


def _unauthorized() -> web.Response:
    return web.json_response({"error": "unauthorized"}, status=401)


@dataclass(frozen=True)
class Shutdown:
    """How serving ends: the signals that stop it (none: only the ``startup`` task's exit code does), the
    seconds in-flight handlers get once it stops, and whether a client's closed connection cancels its handler
    (aiohttp's ``handler_cancellation``)."""

    signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)
    timeout_s: float = 60.0
    handler_cancellation: bool = False


async def serve_until_signalled(
    app: web.Application,
    host: str,
    port: int,
    *,
    startup: Callable[[], Awaitable[int | None]] | None = None,
    on_listening: Callable[[int], None] | None = None,
    shutdown: Shutdown = Shutdown(),
    reuse_address: bool | None = None,
    log: logging.Logger | None = None,
) -> int:
    """Serve ``app`` on ``host:port`` until one of ``shutdown.signals`` arrives; returns the exit code (0).

    ``on_listening`` gets the bound port once the socket listens (``port`` 0 picks a free one).  ``startup``
    then runs beside the server — loading a model while :meth:`ModelServer.is_ready` says no: an exit code
    it returns ends serving with that code, an exception ends it with 1, None keeps serving.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stop_signals = shutdown.signals
    for sig in stop_signals:
        loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(
        app, access_log=None, shutdown_timeout=shutdown.timeout_s, handler_cancellation=shutdown.handler_cancellation
    )
    await runner.setup()
    tasks: list[asyncio.Task[Any]] = []
    try:
        await web.TCPSite(runner, host, port, reuse_address=reuse_address).start()
        if on_listening is not None:
            on_listening(_bound_port(runner))
        stopper = asyncio.create_task(stop.wait())
        tasks.append(stopper)
        if startup is not None:
            starter: asyncio.Task[int | None] = asyncio.create_task(_run(startup))
            tasks.append(starter)
            await asyncio.wait({starter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if starter.done():
                exc = starter.exception()
                if exc is not None:
                    (log or logging.getLogger(__name__)).error("cannot start: %r", exc)
                    return 1
                result = starter.result()
                if result is not None:
                    return result
        await stopper
    finally:
        for task in tasks:
            task.cancel()
        for sig in stop_signals:
            loop.remove_signal_handler(sig)
        await runner.cleanup()
    return 0


async def _run(startup: Callable[[], Awaitable[int | None]]) -> int | None:
    return await startup()


class ServerThread:
    """An aiohttp app on ``127.0.0.1:<free port>``, served by a background thread with its own event loop.

    For in-process use (tests): ``with ServerThread(app) as srv: srv.port``.  Stopping cancels requests still
    in flight rather than waiting for them.
    """

    def __init__(
        self, app: web.Application, *, host: str = "127.0.0.1", shutdown_timeout: float = 2.0
    ) -> None:
        self.app = app
        self.host = host
        self.shutdown_timeout = shutdown_timeout
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread = threading.Thread(target=self._run, name="aiohttp-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=timeout):
            raise RuntimeError(f"server thread did not start within {timeout:g} s")
        if self._error is not None:
            raise RuntimeError(f"server thread failed to start: {self._error!r}")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            runner = web.AppRunner(
                self.app, access_log=None, handler_cancellation=True, shutdown_timeout=self.shutdown_timeout
            )
            self._runner = runner
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.TCPSite(runner, self.host, 0).start())
            self.port = _bound_port(runner)
        except BaseException as exc:  # reported by start() instead of dying silently in this thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def log_to_stderr(name: str, prefix: str) -> logging.Logger:
    """The logging setup of a server process: INFO lines on stderr (the launcher's ``server.log``)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format=f"%(asctime)s {prefix} %(levelname)s %(message)s"
    )
    logging.getLogger("aiohttp").setLevel(logging.ERROR)
    return logging.getLogger(name)
