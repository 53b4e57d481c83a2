"""``server.kind: endpoint`` (or ``evalpipe run --endpoint URL``) — attach to a running server or router.

Nothing is launched and nothing is stopped.  Its ``/server_info`` is still verified against the config's
server settings (as SGLang names them, or as another engine reports them); a server without one is
"unverifiable", and readiness falls back to ``/v1/models`` where ``/health`` is not served.

An endpoint that lists workers on ``/workers`` is a router (``RouterClient.is_router``): its own answers
describe no server configuration, so they are never read as one.  Instead every worker behind it
is verified as ``kind: router`` verifies the workers it launched (the router kind's ``attached_fleet``), with
the attach settings of ``server.router`` when the config has them (its Prometheus URL, version, URL rewrites).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import urlsplit, urlunsplit

from evalpipe.errors import ConfigError
from evalpipe.server.kinds.base import ServeContext, ServerHandle, nothing_launched
from evalpipe.server.kinds.router import RouterClient, attached_fleet
from evalpipe.server.kinds.sglang import SglangServerInfo

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig, ServerConfig


class EndpointKind(SglangServerInfo):
    name: ClassVar[str] = "endpoint"
    launches_process: ClassVar[bool] = False
    preflight_before_run: ClassVar[bool] = False
    config_section: ClassVar[str | None] = "endpoint"

    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        raise nothing_launched(self.name, f"attaches to {server.endpoint}")

    def base_url(self, server: ServerConfig) -> str:
        base = str(server.endpoint).rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    def ready_paths(self, server: ServerConfig) -> tuple[str, ...]:
        return (server.ready_path,) if server.ready_path else ("/health", "/v1/models")

    def upstream_path(self, server: ServerConfig) -> str:
        """The endpoint URL's own path (``/v1`` when it names none); ConfigError for a malformed URL."""
        return urlsplit(openai_base_url(str(server.endpoint))).path

    def launch_note(self, server: ServerConfig, engine_version: str | None) -> str | None:
        return f"kind: endpoint — attaches to {server.endpoint}; nothing is launched"

    @contextlib.contextmanager
    def serve(self, ctx: ServeContext) -> Iterator[ServerHandle]:
        """Attach; a router (it answers ``/workers`` with a listing) is verified worker by worker."""
        server = ctx.server
        handle = ctx.attach(self.base_url(server), ready_paths=self.ready_paths(server))
        settings = server.router_settings()
        client = RouterClient(
            handle.base_url,
            api_key=ctx.api_key,
            rewrites=settings.url_rewrites,
            metrics_url=settings.metrics_url,
        )
        if not client.is_router():
            if server.router is not None:  # the config says a router is there: say what answered instead
                client.listed_workers()  # NotARouter / RouterUnreachable: one line each
            handle.verification = ctx.verify(handle)
            yield handle
            return
        with attached_fleet(ctx, handle, client) as fleet_handle:
            yield fleet_handle


def openai_base_url(endpoint: str) -> str:
    """An OpenAI base URL: ``http://host:port`` → ``http://host:port/v1``; a given path is kept."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--endpoint {endpoint!r}: expected http(s)://host:port, optionally with a path")
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


KIND = EndpointKind()
