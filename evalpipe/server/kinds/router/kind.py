"""``server.kind: router`` — SGLang's router (PyPI ``sglang-router``) in front of several workers.

evalpipe launches the router on ``server.host``/``server.port`` in front of ``server.router.workers``: running
servers (``url``) and servers it launches itself (``kind``: any launchable kind — SGLang on a GPU host,
``command`` for llama.cpp in CI — with the top-level server settings, each in its own process group with its
own log under ``server/workers/<n>/``).  Workers start first and are waited for (they load at the same time);
then the router, which is ready only when every worker is listed healthy.  Everything is stopped as one on
the way out: the router, then the workers.

What the run talks to is the router, but what it verifies is each worker (``session`` of this folder): the
router's own ``/server_info`` is 404.  Every value the top-level settings pin must be resolved by every
worker — a worker's ``overrides`` change how it is launched, never what it is verified against.  Attaching to
a running router is ``kind: endpoint`` (it is recognised from its ``/workers``).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, ClassVar

from evalpipe.errors import ConfigError
from evalpipe.processes.ports import free_port
from evalpipe.server.kinds.base import EngineProvenance, Kind, KindPreflight, ServeContext, ServerHandle
from evalpipe.server.kinds.router.errors import RouterNotInstalled
from evalpipe.server.kinds.router.sglang_router import METRICS_PATH, RouterLaunchSpec, router_argv
from evalpipe.server.kinds.sglang import SglangServerInfo
from evalpipe.server.launch_env import API_KEY_PLACEHOLDER_PREFIX, server_env
from evalpipe.server.overrides import with_overrides
from evalpipe.server.preflight_rules import check_port, fail, ok

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.provenance import PackageVersion
    from evalpipe.artifacts.schema.server import PreflightCheck
    from evalpipe.config.models import RouterConfig, RouterWorker, RunConfig, ServerConfig
    from evalpipe.server.kinds.router.sglang_router import RouterLaunchSpec


class RouterKind(SglangServerInfo):
    name: ClassVar[str] = "router"
    requires_server_info: ClassVar[bool] = True  # every worker must report its resolved configuration
    config_section: ClassVar[str | None] = "router"
    fleet: ClassVar[bool] = True

    def __init__(self, lookup: Callable[[str], Kind] | None = None) -> None:
        self._lookup = lookup

    def with_members(self, lookup: Callable[[str], Kind]) -> Kind:
        return RouterKind(lookup)

    def kind_of(self, name: str) -> Kind:
        """A worker's own kind (command, sglang, endpoint, …), through the registry that holds this one."""
        if self._lookup is None:
            raise RuntimeError("the router kind's module KIND is used directly: ask the kind registry for it")
        return self._lookup(name)

    # ------------------------------------------------------------------ config

    def check_config(self, server: ServerConfig) -> None:
        router = server.router
        if router is None:
            raise ValueError("router is required when kind is 'router'")
        if not router.workers:
            raise ValueError("router.workers: at least one worker is required when kind is 'router'")
        if router.metrics_url is not None:
            raise ValueError(
                "router.metrics_url is for an attached router (kind: endpoint); a launched router's counters "
                "are on router.prometheus_port"
            )
        ports: dict[int, str] = {}
        if server.port:
            ports[server.port] = "port (the router's)"
        if router.prometheus_port:
            if router.prometheus_port in ports:
                raise ValueError(f"router.prometheus_port {router.prometheus_port}: also the router's port")
            ports[router.prometheus_port] = "router.prometheus_port"
        for i, worker in enumerate(router.workers):
            if worker.kind is None:
                continue
            launch = worker_launch_server(server, worker, i, self.kind_of)  # ValueError naming the worker
            if launch.port and launch.host == server.host:
                if launch.port in ports:
                    raise ValueError(f"router.workers[{i}].port {launch.port}: also {ports[launch.port]}")
                ports[launch.port] = f"router.workers[{i}].port"

    # ------------------------------------------------------------------ launch
    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        """The router's argv (worker URLs of launched workers on port 0 show port 0 until launch)."""

        urls = [self._worker_url(server, w, i) for i, w in enumerate(_router(server).workers)]
        spec = launch_spec(cfg, server, urls, resolve_secrets=resolve_secrets)
        return router_argv(spec, python or sys.executable)

    def ready_paths(self, server: ServerConfig) -> tuple[str, ...]:
        """``/liveness`` answers once the router listens; readiness proper is every worker listed healthy."""
        return (server.ready_path,) if server.ready_path else ("/liveness",)

    def launch_note(self, server: ServerConfig, engine_version: str | None) -> str | None:
        workers = _router(server).workers
        launched = sum(1 for w in workers if w.kind is not None)
        return (
            f"kind: router — sglang-router in front of {len(workers)} worker(s), {launched} launched by evalpipe "
            "first (their commands above the router's)"
        )

    def member_argvs(self, cfg: RunConfig, server: ServerConfig) -> list[tuple[str, list[str]]]:
        server_kind = self.kind_of

        out: list[tuple[str, list[str]]] = []
        for i, worker in enumerate(_router(server).workers):
            if worker.kind is None:
                out.append((f"worker {i}: {worker.url} (running; not launched)", []))
                continue
            launch = worker_launch_server(server, worker, i, self.kind_of)
            kind = server_kind(launch.kind)
            out.append((f"worker {i}", kind.argv(cfg, launch, resolve_secrets=False)))
        return out

    def footprint(self, cfg: RunConfig, server: ServerConfig) -> set[str]:
        """The router's URL and its Prometheus port, and every worker's footprint (URL and GPUs)."""
        server_kind = self.kind_of

        router = _router(server)
        out = set() if server.port == 0 else {f"url {self.base_url(server)}"}
        if router.prometheus_port:
            out.add(f"port {_local(server.host)}:{router.prometheus_port}")
        for i, worker in enumerate(router.workers):
            if worker.url is not None:
                out.add(f"url {worker.url.rstrip('/')}")
            else:
                launch = worker_launch_server(server, worker, i, self.kind_of)
                out |= server_kind(launch.kind).footprint(cfg, launch)
        return out

    def provenance(self, server: ServerConfig, env: Mapping[str, str]) -> EngineProvenance:
        """Each launched worker kind's engine (once per kind, as the router's environment sees it); a
        running worker's engine is not on this host to look at."""
        packages: dict[str, PackageVersion] = {}
        source = None
        seen: set[str] = set()
        for i, worker in enumerate(_router(server).workers):
            if worker.kind is None or worker.kind in seen:
                continue
            seen.add(worker.kind)
            launch = worker_launch_server(server, worker, i, self.kind_of)
            found = self.kind_of(launch.kind).provenance(launch, env)
            packages.update((p.name, p) for p in found.packages if p.name not in packages)
            source = source or found.source
        return EngineProvenance(packages=tuple(packages.values()), source=source)

    # ------------------------------------------------------------------ preflight
    def preflight(self, cfg: RunConfig, server: ServerConfig, env: Mapping[str, str]) -> KindPreflight:
        """sglang-router installed, the router's ports free, and each launched worker's own preflight."""
        # import cost: the fleet launcher (~17 modules: ctypes, ssl), only when a fleet starts
        from evalpipe.server.kinds.router.launcher import require_router

        server_kind = self.kind_of

        checks: list[PreflightCheck] = []
        try:
            version = require_router()
            checks.append(ok("router", f"sglang-router {version} is installed", "server.kind"))
        except RouterNotInstalled as exc:
            version = None
            checks.append(fail("router", exc.message, "server.kind"))
        checks += check_port(server)
        router = _router(server)
        if router.prometheus_port:
            checks += [
                c.model_copy(update={"flag": "server.router.prometheus_port"})
                for c in check_port(server.model_copy(update={"port": router.prometheus_port}))
            ]
        for i, worker in enumerate(router.workers):
            if worker.kind is None:
                continue
            launch = worker_launch_server(server, worker, i, self.kind_of)
            own = server_kind(launch.kind).preflight(cfg, launch, server_env(launch))
            checks += [
                c.model_copy(update={"message": f"router.workers[{i}]: {c.message}"}) for c in own.checks
            ]
        argv = self.argv(cfg, server, resolve_secrets=False)
        return KindPreflight(argv=argv, checks=checks, engine_version=version)

    # ------------------------------------------------------------------ serve
    @contextlib.contextmanager
    def serve(self, ctx: ServeContext) -> Iterator[ServerHandle]:
        """Workers first (all started, then each waited for), then the router, then the fleet verified."""
        # import cost: the fleet client, launcher and session (~40 modules), only when a fleet starts
        from evalpipe.server.kinds.router.client import RouterClient
        from evalpipe.server.kinds.router.launcher import require_router, wait_registered
        from evalpipe.server.kinds.router.session import PlannedWorker, attached_view, fleet_session

        server_kind = self.kind_of

        server = ctx.server
        router = _router(server)
        version = require_router()
        prometheus_port = router.prometheus_port or free_port("127.0.0.1")
        with contextlib.ExitStack() as stack:
            planned: list[PlannedWorker] = []
            for i, worker in enumerate(router.workers):
                if worker.url is not None:
                    url = worker.url.rstrip("/")
                    view = attached_view(server, url)
                    planned.append(PlannedWorker(url, ctx.member(str(i), view), view))
                    continue
                launch = worker_launch_server(server, worker, i, self.kind_of)
                if launch.port == 0:
                    launch = launch.model_copy(update={"port": free_port(launch.host)})
                kind = server_kind(launch.kind)
                member = ctx.member(str(i), launch)
                argv = kind.argv(ctx.cfg, launch, engine_version=kind.engine_version(member.env))
                ready = kind.ready_paths(launch)
                handle = stack.enter_context(
                    member.launch(argv, base_url=kind.base_url(launch), ready_paths=ready, wait=False)
                )
                verify_as = server.model_copy(update={"kind": launch.kind, "router": None})
                planned.append(PlannedWorker(handle.base_url, member, verify_as, handle, ready))
            for p in planned:  # every launched worker is loading by now; wait for each in turn
                if p.handle is not None:
                    p.ctx.wait_ready(p.handle, p.ready_paths)
            urls = [p.url for p in planned]
            spec = launch_spec(ctx.cfg, server, urls, prometheus_port=prometheus_port, api_key=ctx.api_key)
            argv = router_argv(spec, sys.executable)
            handle = stack.enter_context(
                ctx.launch(argv, base_url=self.base_url(server), ready_paths=self.ready_paths(server))
            )
            client = RouterClient(
                handle.base_url,
                api_key=ctx.api_key,
                rewrites=router.url_rewrites,
                metrics_url=f"http://127.0.0.1:{prometheus_port}{METRICS_PATH}",
            )
            wait_registered(
                client,
                urls,
                proc=handle.process,
                log_path=handle.log_path,
                timeout_s=server.launch_timeout_s,
            )
            with fleet_session(
                ctx,
                handle,
                client,
                planned=planned,
                router_version=version,
                version_source="package",
                policy=router.policy,
                launched=True,
            ) as fleet_handle:
                yield fleet_handle

    def _worker_url(self, server: ServerConfig, worker: RouterWorker, index: int) -> str:
        if worker.url is not None:
            return worker.url.rstrip("/")
        launch = worker_launch_server(server, worker, index, self.kind_of)
        return self.kind_of(launch.kind).base_url(launch)


def _router(server: ServerConfig) -> RouterConfig:
    if server.router is None:
        raise ConfigError("server.router: required when server.kind is 'router'")
    return server.router


def _local(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::", "localhost") else host


def worker_launch_server(
    server: ServerConfig, worker: RouterWorker, index: int, kind_of: Callable[[str], Kind]
) -> ServerConfig:
    """How a launched worker is started: the top-level settings with its kind, host, port and environment,
    then its ``overrides``.  ``server.settings`` carry over to a worker whose kind reads the same settings
    model (SGLang's); a worker of another kind (a command, the self-test server) starts from none of them —
    they remain what it is verified against.  ValueError naming ``router.workers[index]`` when that is not a valid server.
    ``kind_of``: the kind registry's lookup (``server_kind``)."""

    where = f"router.workers[{index}]"
    assert worker.kind is not None
    kind = kind_of(worker.kind)
    self_model = kind_of(server.kind).settings_model
    if kind.fleet or not kind.launches_process:
        raise ValueError(
            f"{where}.kind: '{worker.kind}' cannot be launched as a worker (it launches no server)"
        )
    base = server.model_copy(
        update={
            "kind": worker.kind,
            "host": worker.host or server.host,
            "port": worker.port,
            "env": {**server.env, **worker.env},
            "settings": server.settings if kind.settings_model is self_model else {},
            "router": None,
            "endpoint": None,
        },
        deep=True,
    )
    try:
        return with_overrides(base, worker.overrides, f"{where}.overrides", where, kind_of)
    except ConfigError as exc:
        raise ValueError("; ".join([exc.message, *exc.details])) from None


def launch_spec(
    cfg: RunConfig,
    server: ServerConfig,
    worker_urls: list[str],
    *,
    prometheus_port: int | None = None,
    api_key: str | None = None,
    resolve_secrets: bool = True,
) -> RouterLaunchSpec:
    """The router's launch settings from the config (``--request-timeout-secs`` at least the run's own
    request timeout: the router's 1800 s default would cut a long thinking answer)."""

    router = _router(server)
    timeout = router.request_timeout_s or math.ceil(cfg.generation.request_timeout_s)
    key = api_key
    if server.api_key_env and not resolve_secrets:
        key = API_KEY_PLACEHOLDER_PREFIX + server.api_key_env
    return RouterLaunchSpec(
        worker_urls=tuple(worker_urls),
        port=server.port,
        prometheus_port=router.prometheus_port if prometheus_port is None else prometheus_port,
        host=server.host,
        prometheus_host="127.0.0.1",
        policy=router.policy,
        dp_aware=router.dp_aware,
        disable_retries=router.disable_retries,
        request_timeout_s=timeout,
        health_check_interval_s=router.health_check_interval_s,
        api_key=key,
        extra_args=tuple(router.extra_args),
    )


KIND = RouterKind()
