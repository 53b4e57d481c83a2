"""What a server kind declares: the one interface the pipeline, preflight, lifecycle, verification, audit,
report and CLI ask instead of branching on ``server.kind``.

A kind is a :class:`Kind` subclass whose methods have a default wherever most kinds agree; a kind module
overrides only where it differs (as EvalScope's adapters override ``DefaultDataAdapter``).  Facts are class
attributes; behaviour is methods:

* **config** — ``settings_model``: the model ``server.settings`` is validated against in the resolve step
  (:meth:`Kind.settings_errors`; none by default); :meth:`Kind.check_config`: its own section of ``server:``
  is there (``config_section``);
* **launch** — ``launches_process``, :meth:`Kind.argv` (the exact argv), :meth:`Kind.engine_version`,
  :meth:`Kind.base_url`, :meth:`Kind.ready_paths`, :meth:`Kind.upstream_path`, :meth:`Kind.launch_note`;
* **serve** — :meth:`Kind.serve`: a context manager that brings the server up through the building blocks the
  lifecycle hands it (:class:`ServeContext`) and yields a verified :class:`ServerHandle`.  The default launches
  one process group (or attaches); a fleet (``fleet = True``: a router plus workers) overrides it, launching
  and verifying each member through the same blocks (:meth:`ServeContext.member`);
* **provenance** — :meth:`Kind.provenance`: its engine's packages and source tree, for ``provenance.json``;
* **footprint** — :meth:`Kind.footprint`: what the server occupies (URLs, ports, GPUs), so that variants run
  at the same time only on servers that share nothing;
* **preflight** — :meth:`Kind.preflight`: its rules (``evalpipe.server.preflight_rules``) and the argv checked;
* **verification** — :meth:`Kind.expected_values` (what its ``/server_info`` can verify),
  ``server_info_reader`` (where its ``/server_info`` reports each value and which values mean the same:
  :meth:`Kind.resolved_value`, :meth:`Kind.state_values`, :meth:`Kind.normalize`), ``requires_server_info``
  (whether a missing ``/server_info`` is a mismatch) and :meth:`Kind.describe_head` (how the report names it).

Kind modules import the config models only for type checking: ``ServerConfig`` validation asks the kind.
"""

from __future__ import annotations

import contextlib
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ValidationError

from evalpipe.config.base import Strict, error_message
from evalpipe.errors import ConfigError
from evalpipe.server.preflight_rules import check_port
from evalpipe.server.server_info import PLAIN, ServerInfoReader

if TYPE_CHECKING:
    from evalpipe.artifacts import ServerFiles
    from evalpipe.artifacts.schema.provenance import GitInfo, PackageVersion
    from evalpipe.artifacts.schema.server import (
        KvCacheFacts,
        LaunchRecord,
        PreflightCheck,
        ServerVerification,
        SparseAttentionFacts,
        VerifiedValue,
    )
    from evalpipe.config.models import RunConfig, ServerConfig


class RunningWatch(Protocol):
    """A fleet's watch as the server lifecycle runs it during the evaluation."""

    def running(
        self, *, in_flight: Callable[[float | None], list[str]], on_abort: Callable[[str], None]
    ) -> AbstractContextManager[None]:
        """Watch while the block runs: ``in_flight(since)`` names the requests to record with an event,
        ``on_abort(line)`` stops the run (``on_mismatch: abort``)."""
        ...

    def verified_after(self, t: float) -> bool:
        """Whether a look at every worker begun after ``t`` found each as verified (the proxy's gate)."""
        ...


class FleetWatching(Protocol):
    """What a fleet leaves on its handle for the run to watch it by (the router kind's ``FleetWatchPlan``):
    the generic server code names no kind's types."""

    on_mismatch: str

    def watch(self) -> RunningWatch:
        """The run's one watch of this fleet."""
        ...


@dataclass
class ServerHandle:
    """A ready server: where to send evaluation traffic and what it was verified to be."""

    base_url: str
    launch: LaunchRecord
    server: ServerConfig
    verification: ServerVerification | None = None
    process: subprocess.Popen[bytes] | None = None
    api_key: str | None = field(default=None, repr=False)
    log_path: Path | None = None  # the launched process's log
    #: A fleet's launched workers: the run ends promptly when any of them dies, as when the router does.
    members: list[ServerHandle] = field(default_factory=list)
    #: A fleet behind a router: what the fleet watch needs (the router kind's ``FleetWatchPlan``); then a
    #: launched worker's death is the watch's to record, not the end of the run.
    fleet_watch: FleetWatching | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


class ServeContext(Protocol):
    """The building blocks the lifecycle (``evalpipe.server.lifecycle``) hands :meth:`Kind.serve`."""

    @property
    def cfg(self) -> RunConfig: ...

    @property
    def server(self) -> ServerConfig:
        """The server settings in effect (a launch port already chosen when the config says 0)."""
        ...

    @property
    def env(self) -> dict[str, str]:
        """The environment a launched process gets (ours plus ``server.env``)."""
        ...

    @property
    def files(self) -> ServerFiles:
        """Where this server's log, launch record, ``/server_info`` and verification are written."""
        ...

    @property
    def api_key(self) -> str | None:
        """The API key requests to this server carry (never written anywhere)."""
        ...

    def member(self, name: str, server: ServerConfig) -> ServeContext:
        """A context for one member of a fleet (a worker behind a router): ``server`` its launch settings,
        its files under ``server/workers/<name>/``; signals and secrets shared with this context."""
        ...

    def launch(
        self, argv: list[str], *, base_url: str, ready_paths: tuple[str, ...], wait: bool = True
    ) -> AbstractContextManager[ServerHandle]:
        """Start ``argv`` as its own process group (log and launch record in the run directory), wait until
        ``base_url`` answers on ``ready_paths``, yield its handle; always stop the whole group on exit.
        ``wait=False`` yields at once (several members load at the same time); :meth:`wait_ready` waits."""
        ...

    def wait_ready(self, handle: ServerHandle, ready_paths: tuple[str, ...]) -> None:
        """Wait until a launched server answers on ``ready_paths`` (fails fast, with its log, if it exits)."""
        ...

    def attach(self, base_url: str, *, ready_paths: tuple[str, ...]) -> ServerHandle:
        """Record an attachment to a running server (nothing is launched or stopped) once it is ready."""
        ...

    def verify(
        self, handle: ServerHandle, *, against: ServerConfig | None = None, enforce: bool = True
    ) -> ServerVerification:
        """Save the server's ``/server_info`` and ``/model_info`` (redacted), verify them against the config
        through this kind, and abort (or warn) on a mismatch.  ``against``: the settings it must resolve
        (default: this context's); ``enforce=False`` only records (a fleet judges its workers together)."""
        ...

    def server_info_reader(self, kind: str) -> ServerInfoReader:
        """How a server of kind ``kind`` reports its resolved values (that kind's ``server_info_reader``; a
        fleet reads each worker's ``/server_info`` through this)."""
        ...

    def describe_head(self, verification: ServerVerification, info: Mapping[str, Any] | None) -> str:
        """The report's server line for a verified server, as its own kind describes it
        (:meth:`Kind.describe_head` of ``verification.kind``; a fleet describes its workers through this,
        so fleet code never imports the kind registry that imports it)."""
        ...


@dataclass(frozen=True)
class EngineProvenance:
    """The serving engine as the server's environment holds it, for ``provenance.json``: its packages'
    versions (None: not installed) and its source tree (the runtime base and any patch on top)."""

    packages: tuple[PackageVersion, ...] = ()
    source: GitInfo | None = None


@dataclass
class KindPreflight:
    """A kind's own preflight: the argv it checked and its rules' outcomes."""

    argv: list[str] = field(default_factory=list)  # API key unresolved; empty when nothing is launched
    checks: list[PreflightCheck] = field(default_factory=list)
    engine_version: str | None = None  # the installed engine's version, where the rules probed it


class NoSettings(Strict):
    """The settings model of a kind with no settings of its own: ``server.settings`` must be empty."""


class Kind(ABC):
    """One server kind; a module ``evalpipe/server/kinds/<name>.py`` declares ``KIND = <subclass>()``."""

    #: The ``server.kind`` value (and the module's name).
    name: ClassVar[str]
    #: False: attaches to a running server — nothing is launched, nothing is stopped.
    launches_process: ClassVar[bool] = True
    #: True: the server always serves ``/server_info``, so its absence is a mismatch, not "unverifiable".
    requires_server_info: ClassVar[bool] = False
    #: ``evalpipe run`` evaluates the preflight rules before serving.
    preflight_before_run: ClassVar[bool] = True
    #: How its ``/server_info`` is read (``evalpipe.server.server_info``); default: every key under its own
    #: name, no aliases.
    server_info_reader: ClassVar[ServerInfoReader] = PLAIN

    def with_members(self, lookup: Callable[[str], Kind]) -> Kind:
        """This kind as the registry holds it, ``lookup`` being the registry's.  A kind that composes others
        (the router launching each worker by the worker's own kind) returns a new instance of itself built
        with ``lookup``, rather than importing the registry, which imports it (the import graph stays
        acyclic) — nothing is set on a kind after it is made.  Default: itself, nothing to hold."""
        return self

    #: The model ``server.settings`` must validate against (``evalpipe.resolve`` checks it; the kind reads
    #: its settings through it).
    settings_model: ClassVar[type[BaseModel]] = NoSettings

    #: The ``server:`` field holding this kind's own section, required when the kind is chosen.
    config_section: ClassVar[str | None] = None
    #: A router in front of member servers: ``serve`` launches and verifies each member, and a fleet cannot
    #: itself be a member of another.
    fleet: ClassVar[bool] = False

    # ------------------------------------------------------------------ config
    def check_config(self, server: ServerConfig) -> None:
        """Raise ValueError naming the field when ``server`` lacks what this kind needs (run by the config
        model's validator, so the error carries the ``server`` path and the YAML line)."""
        section = self.config_section
        if section is not None and not getattr(server, section):
            raise ValueError(f"{section} is required when kind is '{self.name}'")

    def settings_errors(self, server: ServerConfig) -> list[tuple[tuple[str | int, ...], str]]:
        """``(field path under settings, message)`` for each way ``server.settings`` fails
        ``settings_model`` (empty: valid).  The resolve step places each on its YAML line; overrides applied
        to a server are checked the same way."""
        if not self.settings_model.model_fields and server.settings:
            keys = ", ".join(sorted(server.settings))
            return [((), f"kind '{self.name}' takes no settings (got {keys})")]
        try:
            self.settings_model.model_validate(server.settings)
        except ValidationError as exc:
            return [(tuple(err["loc"]), error_message(err)) for err in exc.errors()]
        return []

    # ------------------------------------------------------------------ launch
    @abstractmethod
    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        """The exact argv that launches the server (``python``: the interpreter, default this one).

        With ``resolve_secrets=False`` an API key is shown as ``$ENV_NAME`` (for printing, never launching).
        A kind that launches nothing raises ConfigError saying so.
        """

    def engine_version(self, env: Mapping[str, str]) -> str | None:
        """The installed engine's version as the server process would see it (None: not applicable)."""
        return None

    def base_url(self, server: ServerConfig) -> str:
        """Where the server answers (scheme, host, port; no path)."""
        host = server.host if server.host not in ("0.0.0.0", "::") else "127.0.0.1"
        return f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"

    def ready_paths(self, server: ServerConfig) -> tuple[str, ...]:
        """Paths polled until one answers 200 (a 404 hands over to the next): ``server.ready_path``, else
        ``/health`` (served by SGLang and by evalpipe's own servers)."""
        return (server.ready_path,) if server.ready_path else ("/health",)

    def upstream_path(self, server: ServerConfig) -> str:
        """The path prefix of the OpenAI API behind the recording proxy."""
        return "/v1"

    def launch_note(self, server: ServerConfig, engine_version: str | None) -> str | None:
        """A line for ``evalpipe server command`` beside the argv (or instead of it: nothing launched)."""
        return None if self.launches_process else f"kind: {self.name} — nothing is launched"

    def member_argvs(self, cfg: RunConfig, server: ServerConfig) -> list[tuple[str, list[str]]]:
        """``(what, argv)`` of each member a fleet launches before its own argv (API key unresolved), for
        ``evalpipe server command``; none for a single server."""
        return []

    def footprint(self, cfg: RunConfig, server: ServerConfig) -> set[str]:
        """What the server occupies, as comparable strings: two servers sharing one cannot run at once.

        Default: the URL it answers on (a launched server on port 0 gets a free port: nothing shared) and,
        when launched, the GPUs ``server.env`` gives it through ``CUDA_VISIBLE_DEVICES`` (a GPU server
        overrides this: unset means every GPU of the host).
        """
        out = set() if self.launches_process and server.port == 0 else {f"url {self.base_url(server)}"}
        if self.launches_process:
            out |= gpu_footprint(server.host, server.env, unset_means_all=False)
        return out

    def provenance(self, server: ServerConfig, env: Mapping[str, str]) -> EngineProvenance:
        """Its engine's packages and source as ``env`` (the server's environment) sees them — by looking
        (package metadata, ``git``), never by importing the engine.  Default: nothing to record (a server
        evalpipe ships, or one it only attaches to)."""
        return EngineProvenance()

    # ------------------------------------------------------------------ serve
    @contextlib.contextmanager
    def serve(self, ctx: ServeContext) -> Iterator[ServerHandle]:
        """Bring the server up, verify it, yield the handle; stop whatever was launched on the way out.

        Default: launch :meth:`argv` as one process group (or attach when nothing is launched), then verify.
        """
        server = ctx.server
        ready = self.ready_paths(server)
        if not self.launches_process:
            handle = ctx.attach(self.base_url(server), ready_paths=ready)
            handle.verification = ctx.verify(handle)
            yield handle
            return
        argv = self.argv(ctx.cfg, server, engine_version=self.engine_version(ctx.env))
        with ctx.launch(argv, base_url=self.base_url(server), ready_paths=ready) as handle:
            handle.verification = ctx.verify(handle)
            yield handle

    # ------------------------------------------------------------------ preflight
    def preflight(self, cfg: RunConfig, server: ServerConfig, env: Mapping[str, str]) -> KindPreflight:
        """This kind's preflight rules (the API key, ``extra_args`` and NLTK rules run for every kind).

        Default: a launched server's argv builds and its port is free; nothing to check when attaching.
        """
        if not self.launches_process:
            return KindPreflight()
        argv = self.argv(cfg, server, engine_version=None, resolve_secrets=False)
        return KindPreflight(argv=argv, checks=check_port(server))

    def extra_args_conflicts(self, server: ServerConfig) -> list[tuple[str, str]]:
        """``(flag, config field)`` for each flag in ``server.extra_args`` that this kind already builds from
        the config (the preflight refuses them: the config would lie).  Default: none."""
        return []

    # ------------------------------------------------------------------ verification
    def expected_values(
        self, cfg: RunConfig, server: ServerConfig, reported_engine: str | None
    ) -> dict[str, Any]:
        """Config values its ``/server_info`` must resolve identically (only those the config pins down),
        keyed as :meth:`resolved_value` reads them.

        Default: what any engine reporting its resolved settings can confirm (:func:`engine_expectations`).
        """
        return engine_expectations(cfg, server)

    def resolved_value(self, server_info: Mapping[str, Any], key: str) -> Any:
        """The value the server resolved for ``key`` (None: not reported), read by ``server_info_reader``."""
        return self.server_info_reader.value(server_info, key)

    def state_values(self, server_info: Mapping[str, Any], key: str) -> list[tuple[int, Any]]:
        """``(index, value)`` of each per-scheduler ``internal_states`` entry reporting ``key``."""
        return self.server_info_reader.state_values(server_info, key)

    def normalize(self, value: Any) -> Any:
        """The comparable form of a reported or configured value."""
        return self.server_info_reader.normalize(value)

    def optional_expectations(self, cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
        """Values the launch set that ``/server_info`` is checked against only where it reports the key
        (flags passed through ``extra_args``).  Default: none."""
        return {}

    def kv_cache_facts(self, log_path: Path | None) -> KvCacheFacts | None:
        """The KV pool as the launched server's own log states it (dtype, capacity, FP8 scales); None when
        this kind's log says nothing of it or nothing was launched.  Default: None."""
        return None

    def expected_kv_storage_dtype(self, server: ServerConfig) -> str | None:
        """The dtype the KV pool must be allocated in for this config (checked against
        :meth:`kv_cache_facts`); None: nothing to check.  Default: None."""
        return None

    def kernel_label(self, name: str) -> str:
        """How the report names one of this kind's attention kernels (``tilelang`` → ``TileLang``).
        Default: as given."""
        return name

    def sparse_attention(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        info: Mapping[str, Any] | None,
        log_path: Path | None,
    ) -> tuple[SparseAttentionFacts | None, list[VerifiedValue]]:
        """A sparse-attention server's kernels, KV row layout, page size and dense-prefill threshold as it
        stated them (``info``: its ``/server_info``, None without one; ``log_path``: a launched server's log),
        and the checks of them against the config.  Default: nothing stated, nothing checked."""
        return None, []

    def prefix_cache(self, info: Mapping[str, Any]) -> Literal["on", "off"] | None:
        """Whether the server reuses cached prompt prefixes across requests, from its ``/server_info``
        (None: it does not say).  Default: None."""
        return None

    def describe_head(self, v: ServerVerification, info: Mapping[str, Any] | None) -> str:
        """The start of the report's server line (``info``: the redacted ``/server_info``; None without one).

        Default: an engine's own resolved settings where it names itself (``engine``), else the kind and URL.
        """
        if info is not None and v.engine:
            return engine_head(v, info)
        return f"{v.kind} server at {v.base_url}"


def gpu_footprint(host: str, env: Mapping[str, str], *, unset_means_all: bool) -> set[str]:
    """``{"gpu 127.0.0.1:0", …}`` from ``CUDA_VISIBLE_DEVICES`` in a server's own environment; when it is
    unset, ``{"gpu 127.0.0.1:all"}`` for a GPU server (it may use every GPU of the host), else nothing."""
    where = "127.0.0.1" if host in ("0.0.0.0", "::", "localhost") else host
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        return {f"gpu {where}:all"} if unset_means_all else set()
    return {f"gpu {where}:{d.strip()}" for d in visible.split(",") if d.strip()}


def engine_expectations(cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
    """What a non-SGLang engine's ``/server_info`` can confirm: the KV cache dtype (when the config sets
    one) and the served name."""
    out: dict[str, Any] = {}
    if server.kv_cache_dtype != "auto":
        out["kv_cache_dtype"] = server.kv_cache_dtype
    out["served_model_name"] = cfg.model.served_name
    return out


def engine_head(v: ServerVerification, info: Mapping[str, Any]) -> str:
    """A non-SGLang engine that reports its resolved settings (evalpipe's llama.cpp launcher)."""
    parts = [f"{v.engine} {v.server_version or ''}".strip()]
    model = info.get("model_file") or info.get("model_path")
    if model:
        sha = info.get("model_sha256")
        parts.append(f"model {model}" + (f" (sha256 {str(sha)[:12]}…)" if sha else ""))
    k, val = info.get("cache_type_k"), info.get("cache_type_v")
    if k or val:
        parts.append(f"KV cache K {k or '?'} / V {val or '?'}")
    elif v.kv_cache_dtype:
        parts.append(f"KV cache {v.kv_cache_dtype}")
    if info.get("n_ctx") is not None:
        parts.append(f"n_ctx {info['n_ctx']}")
    if info.get("n_parallel") is not None:
        parts.append(f"{info['n_parallel']} parallel slots")
    if info.get("n_threads") is not None:
        parts.append(f"{info['n_threads']} threads")
    return ", ".join(parts)


def nothing_launched(kind: str, where: str) -> ConfigError:
    """The error of :meth:`Kind.argv` for a kind that attaches instead of launching."""
    return ConfigError(f"server.kind is '{kind}': nothing is launched ({where})")
