"""``evalpipe.engines.http_base``: the routes every model server shares and the serve loop, written once.

The servers built on it (answer-key, replay, the llama.cpp front, the test doubles) are tested on their own
behaviour elsewhere; this is what they inherit: ``/health`` 503 until ready, the info documents and their
SGLang aliases, 401 without the key, routes left out on purpose, and how a startup ends the serve loop.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from aiohttp import web

from evalpipe.engines.http_base import ModelServer, ServerThread, Shutdown, serve_until_signalled


class _Server(ModelServer):
    served_model_name = "m"

    def __init__(self) -> None:
        self.ready = False
        self.info: dict[str, Any] | None = None

    def is_ready(self) -> bool:
        return self.ready

    def server_info(self) -> dict[str, Any] | None:
        return self.info

    def authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") != "Bearer wrong"


def _get(url: str, key: str | None = None) -> tuple[int, Any]:
    """(status, JSON body, None when empty, or the text when not JSON)."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body) if body else None
    except json.JSONDecodeError:
        return status, body.decode()


def test_shared_routes() -> None:
    server = _Server()
    with ServerThread(server.build_app()) as thread:
        base = f"http://127.0.0.1:{thread.port}"
        assert _get(base + "/health") == (503, {"status": "loading"})
        assert _get(base + "/server_info") == (503, {"status": "loading"})  # no document yet
        server.ready, server.info = True, {"served_model_name": "m", "tp_size": 1}
        assert _get(base + "/health") == (200, None)
        assert _get(base + "/server_info") == _get(base + "/get_server_info") == (200, server.info)
        assert _get(base + "/model_info") == (200, {"model_path": "m", "is_generation": True})
        assert _get(base + "/get_model_info")[0] == 200
        status, models = _get(base + "/v1/models")
        assert status == 200 and [c["id"] for c in models["data"]] == ["m"]
        assert _get(base + "/server_info", key="wrong") == (401, {"error": "unauthorized"})
        assert _get(base + "/v1/models", key="wrong")[0] == 401


def test_routes_left_out_are_not_served() -> None:
    server = _Server()
    server.server_info_paths = server.model_info_paths = server.models_paths = server.health_paths = ()
    with ServerThread(server.build_app()) as thread:
        base = f"http://127.0.0.1:{thread.port}"
        for path in ("/health", "/server_info", "/get_server_info", "/model_info", "/v1/models"):
            assert _get(base + path)[0] == 404, path


@pytest.mark.parametrize(("outcome", "code"), [(3, 3), (RuntimeError("no weights"), 1)])
def test_a_startup_that_ends_ends_serving_with_its_code(outcome: int | Exception, code: int) -> None:
    listened: list[int] = []

    async def startup() -> int | None:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    served = serve_until_signalled(
        web.Application(), "127.0.0.1", 0, startup=startup, on_listening=listened.append, shutdown=Shutdown(signals=())
    )
    assert asyncio.run(asyncio.wait_for(served, 30)) == code
    assert len(listened) == 1 and listened[0] > 0  # the bound port of --port 0
