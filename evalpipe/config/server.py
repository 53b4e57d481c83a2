"""``server:`` — how the server is launched or attached to: its kind, the kind's own ``settings`` (plain data
here; the resolve step validates them against the kind's settings model), a router's workers, the self-test and
replay servers, and the named variants a paired run overrides it with."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from evalpipe.config.base import Strict
from evalpipe.config.registry_names import ServerKindName

#: Keys that were ``server:`` fields before each kind owned its settings (they are SGLang's launch settings):
#: a config still setting them there — or naming them in ``overrides`` — is read with them moved under
#: ``server.settings`` (``settings.<key>`` in overrides); the loader says so in one notice line.
MOVED_TO_SETTINGS = (
    "tp_size",
    "ep_size",
    "dp_size",
    "attn_cp_size",
    "dcp_size",
    "attention_backend",
    "dsa_prefill_backend",
    "dsa_decode_backend",
    "speculative",
    "enable_deterministic_inference",
    "enable_hisparse",
    "multi_node",
)


def moved_keys(data: object) -> list[str]:
    """The keys of ``data`` (a ``server:`` mapping or an ``overrides`` mapping) that name a setting at its old
    place: ``tp_size``, or dotted ``multi_node.nnodes``."""
    if not isinstance(data, dict):
        return []
    return [k for k in data if isinstance(k, str) and k.split(".", 1)[0] in MOVED_TO_SETTINGS]


def _move_server_settings(data: object) -> object:
    """A ``server:`` mapping with its settings at their old place moved under ``settings``."""
    moved = moved_keys(data)
    if not moved or not isinstance(data, dict):
        return data
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        return data  # the field's own validation names the problem
    twice = [k for k in moved if k in settings]
    if twice:
        raise ValueError(f"{', '.join(twice)}: set both in server and in server.settings (keep settings)")
    out = {k: v for k, v in data.items() if k not in moved}
    out["settings"] = {**settings, **{k: data[k] for k in moved}}
    return out


def _move_override_keys(overrides: object) -> object:
    """``overrides`` with a setting named at its old place addressed as ``settings.<key>``."""
    moved = moved_keys(overrides)
    if not moved or not isinstance(overrides, dict):
        return overrides
    return {(f"settings.{k}" if k in moved else k): v for k, v in overrides.items()}


#: Placeholders a ``server.command`` argument may contain (``{{`` / ``}}`` for literal braces).
COMMAND_PLACEHOLDERS = ("host", "port", "model_path", "served_name", "kv_cache_dtype", "python")


class AnswerKeyConfig(Strict):
    """The embedded self-test server: answers from the bundled datasets' gold answers."""

    mode: Literal["positive", "negative"] = "positive"
    faults: list[
        Literal["duplicate_request", "truncate", "http_500_once", "index_error", "reasoning_budget"]
    ] = Field(default_factory=list)
    thinking: Literal["off", "reasoning_content", "inline"] = Field(
        default="off",
        description="Answer as a thinking model: reasoning in message.reasoning_content (a server with a "
        "reasoning parser) or inline as <think>…</think> before the answer (no parser); off = answer only.",
    )
    wrong_share: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=dict,
        description="A planted regression: per benchmark, the share of its items answered with another item's "
        "gold answer (a fixed set chosen by a hash of each item's id), e.g. {gsm8k: 0.5}.",
    )
    wrong_per_attempt: bool = Field(
        default=False,
        description="Draw the planted regression per attempt (by the request's seed) instead of per item: attempts "
        "of one item then disagree independently, as sampling at a temperature above 0 makes them.",
    )
    data_dir: Path | None = Field(
        default=None,
        description="The directory of benchmark folders the server answers (e.g. gsm8k/, math_500/ as the "
        "sources' local copies hold them; relative to this file); default: evalpipe's bundled miniatures.",
    )
    context_length: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="Tokens per request the server reports in /server_info (context_length, as SGLang "
        "reports it): a scripted server with a small context; nothing is enforced.",
    )


class RouterWorker(Strict):
    """One worker behind the router: a running server (``url``) or one evalpipe launches (``kind``).

    A launched worker is the top-level server settings with its own ``kind``, ``host``/``port`` and ``env``
    (e.g. ``CUDA_VISIBLE_DEVICES``), plus ``overrides`` — which change how it is *launched*, never what it
    is verified against: every worker must resolve the top-level settings.
    """

    url: str | None = Field(
        default=None,
        description="Base URL of a running worker (http://host:port): attached, never started or stopped.",
    )
    kind: ServerKindName | None = Field(
        default=None, description="Launch this worker as this server kind (one that launches a server process)."
    )
    host: str | None = Field(default=None, description="Launched worker's host (default: server.host).")
    port: Annotated[int, Field(ge=0, le=65535)] = Field(
        default=0, description="Launched worker's port (0: a free port)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Launched worker's extra environment, on top of server.env."
    )
    overrides: dict[str, object] = Field(
        default_factory=dict,
        description="ServerConfig fields changed for this worker's launch only (verification still expects "
        "the top-level settings).",
    )

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: object) -> object:
        if isinstance(data, dict) and "overrides" in data:
            return {**data, "overrides": _move_override_keys(data["overrides"])}
        return data

    @model_validator(mode="after")
    def _one_of(self) -> RouterWorker:
        if (self.url is None) == (self.kind is None):
            raise ValueError(
                "give exactly one of url (a running worker) and kind (a worker evalpipe launches)"
            )
        if self.url is not None and (self.port or self.env or self.overrides or self.host):
            raise ValueError("host, port, env and overrides apply to launched workers (kind), not to url")
        return self


class RouterConfig(Strict):
    """SGLang's router (PyPI ``sglang-router``) in front of several workers: ``server.kind: router`` launches
    it (on ``server.host``/``server.port``); an endpoint that turns out to be a router (``kind: endpoint``,
    ``--endpoint``) reads ``metrics_url``, ``version``, ``url_rewrites``, ``probe_fields`` and ``workers``
    (the URLs that must be listed) from here."""

    workers: list[RouterWorker] = Field(
        default_factory=list, description="The workers: running ones (url) and launched ones (kind)."
    )
    policy: Literal["random", "round_robin", "cache_aware", "power_of_two", "manual"] = Field(
        default="round_robin",
        description="Routing policy; round_robin gives every worker its share (cache_aware may starve one).",
    )
    prometheus_port: Annotated[int, Field(ge=0, le=65535)] = Field(
        default=0,
        description="Launched router's Prometheus port on server.host (0: a free port); always passed, "
        "since the router's default binds 0.0.0.0:29000.",
    )
    metrics_url: str | None = Field(
        default=None,
        description="Attached router: its Prometheus URL (http://host:port/metrics) for requests per worker.",
    )
    dp_aware: bool = Field(
        default=False, description="--dp-aware (needs dp_size in every worker's /server_info)."
    )
    disable_retries: bool = Field(
        default=True,
        description="--disable-retries: router retries on another worker are invisible to requests.jsonl.",
    )
    health_check_interval_s: Annotated[int, Field(gt=0)] = Field(
        default=10,
        description="--health-check-interval-secs; at the router's 60 s default a dead worker stays listed "
        "healthy for 180 s.",
    )
    request_timeout_s: Annotated[int, Field(gt=0)] | None = Field(
        default=None, description="--request-timeout-secs (default: generation.request_timeout_s)."
    )
    extra_args: list[str] = Field(
        default_factory=list, description="Passed to the launched router verbatim after built flags."
    )
    version: str | None = Field(
        default=None,
        description="Attached router's version (sglang-router does not report it over HTTP); a launched "
        "router's comes from the installed package.",
    )
    probe_fields: bool = Field(
        default=True,
        description="Before any sample: check that seed, max_tokens, temperature, top_p, n and the thinking "
        "toggle reach the workers with their effect intact.",
    )
    url_rewrites: dict[str, str] = Field(
        default_factory=dict,
        description="Listed worker origin → origin evalpipe reaches it at (scheme://host:port each), for "
        "workers the router lists under addresses this host cannot reach.",
    )
    watch_interval_s: Annotated[float, Field(gt=0, le=600)] = Field(
        default=2.0,
        description="During the evaluation, seconds between polls of the router's /workers and each "
        "worker's /server_info: a worker that dies, comes back, joins or changes configuration is recorded in "
        "server/fleet.json with the time and the requests in flight, and a changed one follows on_mismatch.",
    )
    resend_failed: Annotated[int, Field(ge=0, le=10)] = Field(
        default=3,
        description="The recording proxy re-sends an evaluation request the router answered with a 5xx or "
        "could not forward (a worker died under it) up to this many times, one watch interval apart; every "
        "attempt is in requests.jsonl.",
    )

    @field_validator("url_rewrites")
    @classmethod
    def _origins(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            for what, url in (("key", key), ("value", value)):
                if not _is_origin(url):
                    raise ValueError(f"url rewrite {what} {url!r}: expected scheme://host:port with no path")
        return v

    @field_validator("workers")
    @classmethod
    def _worker_urls(cls, v: list[RouterWorker]) -> list[RouterWorker]:
        for i, w in enumerate(v):
            if w.url is not None and not _is_origin(w.url):
                raise ValueError(f"workers[{i}].url {w.url!r}: expected http(s)://host:port with no path")
        urls = [w.url.rstrip("/") for w in v if w.url is not None]
        dup = sorted({u for u in urls if urls.count(u) > 1})
        if dup:
            raise ValueError(f"worker listed more than once: {', '.join(dup)}")
        return v


def _is_origin(url: str) -> bool:

    parts = urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc) and parts.path in ("", "/")


class ServerConfig(Strict):
    """How the server is launched, or which running server to attach to.

    ``kind: sglang`` launches ``python -m sglang.launch_server`` with flags built for the installed
    SGLang version; ``kind: answer_key`` launches evalpipe's self-test server through the same code
    path; ``kind: command`` launches any OpenAI-compatible server from the argv in ``command`` (e.g.
    ``python -m evalpipe.engines.llamacpp``), through the same lifecycle; ``kind: endpoint`` attaches to
    ``endpoint`` (a running server, or a running sglang-router: then every worker is verified);
    ``kind: router`` launches sglang-router in front of the ``router.workers`` (launched or running).
    """

    kind: ServerKindName = "sglang"
    endpoint: str | None = Field(default=None, description="Base URL of a running server (kind: endpoint).")
    command: list[str] | None = Field(
        default=None,
        description="kind: command — the server's argv. Placeholders: {host}, {port}, {model_path} (model.path "
        "resolved against the config directory), {served_name}, {kv_cache_dtype}, {python} (this "
        "interpreter). The server must answer OpenAI chat completions on {host}:{port}.",
    )
    ready_path: str | None = Field(
        default=None,
        description="Path polled until it answers 200 before the server counts as ready "
        "(default: /health, or /v1/models when the server has no /health).",
    )
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 30000
    kv_cache_dtype: str = Field(
        default="auto",
        description="The KV cache dtype under test, e.g. 'fp8_e4m3' (raw, unscaled) or 'bfloat16': every kind "
        "that can verify it does ({kv_cache_dtype} in a command's argv).",
    )
    settings: dict[str, object] = Field(
        default_factory=dict,
        description="The kind's own launch settings, validated against the kind's settings model when the run "
        "is resolved (kind: sglang and the kinds that verify an SGLang server: tp_size, ep_size, dp_size, "
        "attention_backend, dsa_prefill_backend, dsa_decode_backend, speculative, multi_node, ...).",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding the API key (never the key itself).",
    )
    extra_args: list[str] = Field(
        default_factory=list, description="Passed through verbatim after built flags."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server process.")
    launch_timeout_s: Annotated[float, Field(gt=0)] = 3600.0
    stop_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    on_mismatch: Literal["abort", "warn"] = Field(
        default="abort",
        description="What to do when /server_info resolved a value different from the config.",
    )
    answer_key: AnswerKeyConfig | None = Field(
        default=None, description="Self-test server settings (kind: answer_key)."
    )
    replay: ReplayConfig | None = Field(default=None, description="Replay server settings (kind: replay).")
    router: RouterConfig | None = Field(
        default=None,
        description="kind: router — SGLang's router in front of workers; with kind: endpoint, settings used "
        "when the endpoint is a router.",
    )

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: object) -> object:
        return _move_server_settings(data)

    def router_settings(self) -> RouterConfig:
        """``router``, or the defaults when an endpoint turned out to be a router without one."""
        return self.router if self.router is not None else RouterConfig()

    @model_validator(mode="after")
    def _check(self) -> ServerConfig:
        if self.command is not None:
            _check_placeholders(self.command)
        if self.ready_path is not None and not self.ready_path.startswith("/"):
            raise ValueError(f"ready_path must start with '/': {self.ready_path!r}")
        return self


def _check_placeholders(argv: list[str]) -> None:
    """Every ``{name}`` in ``command`` must be a known placeholder (a typo would reach the server verbatim)."""

    for i, arg in enumerate(argv):
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(arg) if f is not None]
        except ValueError as exc:
            raise ValueError(f"command[{i}] {arg!r}: {exc}") from None
        for name in names:
            if name not in COMMAND_PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in COMMAND_PLACEHOLDERS)
                raise ValueError(f"command[{i}] {arg!r}: unknown placeholder {{{name}}} (known: {known})")


class ReplayConfig(Strict):
    """Reviewer replay: serve a sign-off bundle's recorded responses (``evalpipe replay``)."""

    bundle: str = Field(description="Bundle or run directory holding requests.jsonl + responses.jsonl.gz.")
    miss_log: str = Field(description="Where requests without a recorded answer are logged (JSON lines).")


class ServerVariant(Strict):
    """A named override of launch settings (paired control: fp8_raw vs bf16_control)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    label: str | None = None
    overrides: dict[str, object] = Field(
        default_factory=dict,
        description="ServerConfig fields to override, nested as a mapping or dotted; the kind's settings as "
        "settings: {tp_size: 2} (merged key by key) or settings.tp_size: 2.",
    )
    repeat_of: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")] | None = Field(
        default=None,
        description="A/A control: run the named variant's launch settings again (relaunched) on the same "
        "manifest; its discordance with that variant is the server's own noise, reported next to the A/B "
        "discordance and used as the noise model of the MDE. No overrides of its own.",
    )

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: object) -> object:
        if isinstance(data, dict) and "overrides" in data:
            return {**data, "overrides": _move_override_keys(data["overrides"])}
        return data

    @model_validator(mode="after")
    def _repeat_has_no_overrides(self) -> ServerVariant:
        if self.repeat_of is not None and self.overrides:
            raise ValueError("a repeat_of variant takes the named variant's settings: no overrides")
        return self
