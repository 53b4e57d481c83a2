"""Run-config and sampling-plan models.

The config describes a run completely: which model and how the server is launched (or which endpoint
to attach to), the generation settings, and per benchmark the EvalScope adapter, few-shot count,
sampling plan, dataset source and optional dataset fingerprint pin.  Every model forbids unknown keys
so that a typo in a YAML file is an error that names the field, never a silently ignored setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from evalpipe.config.code_execution import CodeExecutionConfig
from evalpipe.config.registry_names import BenchmarkName, ServerKindName, StratifyBy
from evalpipe.config.speed import SpeedConfig

#: Placeholders a ``server.command`` argument may contain (``{{`` / ``}}`` for literal braces).
COMMAND_PLACEHOLDERS = ("host", "port", "model_path", "served_name", "kv_cache_dtype", "python")

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ModelConfig(Strict):
    """The model under test."""

    path: str = Field(description="Model weights directory (or hub id) passed to the server as --model-path.")
    served_name: str = Field(
        description="Name the server serves the model under; the `model` field of requests."
    )
    chat_template: Literal["native"] | str = Field(
        default="native",
        description="'native' = the tokenizer's own chat template; otherwise a template path.",
    )
    thinking: Literal["model_default", "enabled", "disabled"] = Field(
        default="model_default",
        description="Reasoning mode; model_default sends no chat_template_kwargs. enabled/disabled send the "
        "toggle the reasoning parser's model family understands (glm45: enable_thinking; deepseek-v3: "
        "thinking).",
    )
    reasoning_parser: Annotated[str, Field(min_length=1)] = Field(
        default="none",
        description="SGLang --reasoning-parser (e.g. 'glm45'); 'none' = not a reasoning model (flag not passed). "
        "Checked against the installed SGLang's parser list at preflight and against /server_info.",
    )
    tool_call_parser: Annotated[str, Field(min_length=1)] | None = Field(
        default=None, description="SGLang --tool-call-parser (e.g. 'glm47'); unset = flag not passed."
    )
    tokenizer_path: str | None = None
    context_length: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="Tokens the server accepts (prompt + output) for the preflight's prompt-length check; "
        "default: max_position_embeddings of a local model's config.json.",
    )


class SpeculativeConfig(Strict):
    """Multi-token prediction (MTP) via speculative decoding."""

    algorithm: Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE"] = "EAGLE"
    num_steps: Annotated[int, Field(gt=0)] = 3
    eagle_topk: Annotated[int, Field(gt=0)] = 1
    num_draft_tokens: Annotated[int, Field(gt=0)] = 4


class MultiNodeConfig(Strict):
    nnodes: Annotated[int, Field(gt=0)] = 1
    node_rank: Annotated[int, Field(ge=0)] = 0
    dist_init_addr: str | None = Field(
        default=None, description="host:port of rank 0 (required when nnodes > 1)"
    )

    @model_validator(mode="after")
    def _check(self) -> MultiNodeConfig:
        if self.nnodes > 1 and not self.dist_init_addr:
            raise ValueError("dist_init_addr is required when nnodes > 1")
        if self.node_rank >= self.nnodes:
            raise ValueError("node_rank must be < nnodes")
        return self


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
        default=None, description="Launch this worker as this server kind (sglang, command, answer_key)."
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
    from urllib.parse import urlsplit

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
    tp_size: Annotated[int, Field(gt=0)] = 1
    ep_size: Annotated[int, Field(gt=0)] | None = None
    dp_size: Annotated[int, Field(gt=0)] | None = None
    attn_cp_size: Annotated[int, Field(gt=0)] | None = None
    dcp_size: Annotated[int, Field(gt=0)] | None = None
    attention_backend: str | None = Field(default=None, description="e.g. 'dsa'")
    dsa_prefill_backend: str | None = Field(default=None, description="e.g. 'tilelang'")
    dsa_decode_backend: str | None = Field(default=None, description="e.g. 'tilelang'")
    kv_cache_dtype: str = Field(default="auto", description="e.g. 'fp8_e4m3' (raw, unscaled) or 'bfloat16'")
    speculative: SpeculativeConfig | None = None
    enable_deterministic_inference: bool = False
    enable_hisparse: bool = False
    multi_node: MultiNodeConfig = Field(default_factory=MultiNodeConfig)
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
    import string

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
    overrides: dict[str, object] = Field(default_factory=dict, description="ServerConfig fields to override.")
    repeat_of: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")] | None = Field(
        default=None,
        description="A/A control: run the named variant's launch settings again (relaunched) on the same "
        "manifest; its discordance with that variant is the server's own noise, reported next to the A/B "
        "discordance and used as the noise model of the MDE. No overrides of its own.",
    )

    @model_validator(mode="after")
    def _repeat_has_no_overrides(self) -> ServerVariant:
        if self.repeat_of is not None and self.overrides:
            raise ValueError("a repeat_of variant takes the named variant's settings: no overrides")
        return self


class SequentialConfig(Strict):
    """Anytime-valid non-inferiority (``evalpipe.stats.sequential``): the paired comparison judged unit by unit."""

    alpha: Annotated[float, Field(gt=0, lt=0.5)] = Field(
        default=0.025,
        description="The gate's one-sided error at the margin (gates.non_inferiority_margin_pts), in every path: "
        "at Delta = -margin a block passes at most alpha of the time, however often the rule looks, wherever it "
        "stops, and after --extend. 0.025 is the fixed gate's own level (its 95 % two-sided interval). It is "
        "split (evalpipe.stats.operating): the e-processes run at sequential_share x alpha (K >= 1/that), the one "
        "fixed look taken when they never cross at the rest.",
    )
    sequential_share: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.5,
        description="Share of alpha the e-processes spend (they stop the run early); the rest goes to one fixed "
        "look on all the units when nothing crossed. 1: no fixed look (no crossing = inconclusive).",
    )
    cap_factor: Annotated[float, Field(ge=1)] = Field(
        default=1.5,
        description="The rule ends 'inconclusive' after cap_factor x the fixed-n plan (the benchmark's sampled "
        "n) units; the bets are tuned to that plan (the planned predictable plug-in bet). A finished run "
        "holds only the plan, so there the rule also ends when its units run out.",
    )
    in_run: bool = Field(
        default=True,
        description="Stop inside a paired run (variants with a control): each benchmark with a margin of its own "
        "and no pool sends its samples in the seeded sequence order, a batch at a time, and stops sending at the "
        "first crossing (evalpipe.run.sequential_stop); false: every sample is sent and the rule only judges "
        "afterwards. A pool is always judged afterwards.",
    )
    batch_units: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="Units released beyond the prefix judged in every arm (what can be in flight, hence wasted, "
        "at the stop); default generation.concurrency / generation.repeats.",
    )

    @property
    def eprocess_alpha(self) -> float:
        """The level of each e-process: ``K⁺`` or ``K⁻`` crossing ``1/eprocess_alpha`` decides."""
        return self.alpha * self.sequential_share

    @property
    def final_alpha(self) -> float:
        """The one-sided level of the fixed look taken when the e-processes never crossed (0: none)."""
        return self.alpha * (1.0 - self.sequential_share)


class GenerationConfig(Strict):
    temperature: Annotated[float, Field(ge=0)] = 0.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    seed: int | None = Field(
        default=42,
        description="Request seeds derive from it: attempt k of a sample sends evalpipe.hashing.attempt_seed("
        "seed, benchmark, source_id, k), distinct per attempt and the same in every arm; null sends none.",
    )
    n: Annotated[int, Field(gt=0)] = 1
    repeats: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description="Attempts per sample (EvalScope's TaskConfig.repeats): every sample is asked this many "
        "times; the summary scores the mean over samples of per-sample means, the sample being the cluster, "
        "and reports how often the attempts at one prompt differed (the server's nondeterminism).",
    )
    concurrency: Annotated[int, Field(gt=0)] = Field(
        default=8,
        description="Requests in flight at the server, for the whole run (all benchmarks share it: the "
        "recording proxy admits at most this many and queues the rest).",
    )
    schedule: Literal["pipelined", "sequential"] = Field(
        default="pipelined",
        description="pipelined: every benchmark's EvalScope work starts together, largest expected cost "
        "(max_tokens × samples) first, so one benchmark's tail overlaps the others' work; sequential: "
        "one benchmark's requests at a time, in config order (the next one's dataset load and prompt check "
        "overlap the previous one's requests; its first request follows the previous one's last answer). "
        "Either way the server sees at most "
        "`concurrency` requests, so its batch — and its answers — do not depend on the schedule.",
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = Field(
        default=3600.0,
        description="Server time allowed per attempt (time queued in the proxy for a slot is not counted); "
        "the proxy answers 504 when it expires, which counts as a failed attempt and is retried.",
    )
    max_tokens: dict[str, Annotated[int, Field(gt=0)]] = Field(
        default_factory=dict, description="Per-benchmark max output tokens, keyed by benchmark name."
    )
    default_max_tokens: Annotated[int, Field(gt=0)] = 32768
    stream: bool = False
    retries: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description="Re-sends of a failed request (0 = one attempt only); every attempt passes the recording "
        "proxy and is audited as a retry.",
    )
    retry_interval_s: Annotated[int, Field(ge=0)] = Field(
        default=10, description="Seconds EvalScope waits before re-sending a failed request."
    )
    sequential: SequentialConfig | None = Field(
        default=None,
        description="Paired runs: also judge each block with a non-inferiority margin sequentially — units "
        "(a sample with all its attempts in both arms) in the manifest's seeded sequence order, two betting "
        "e-processes at the margin, the verdict at the first crossing; with in_run (the default) the run "
        "stops sending there (a benchmark with a margin of its own, not pooled); compare.json's sequential "
        "block says where it stopped, what was never sent and the output tokens spent against the fixed "
        "design's.",
    )

    def max_tokens_for(self, benchmark: str) -> int:
        return self.max_tokens.get(benchmark, self.default_max_tokens)


class DatasetSource(Strict):
    """Where a benchmark's full splits come from: a local mirror or the hub (or, for general_mcq and
    general_qa, your own files and the columns that identify and group their rows)."""

    local: str | None = Field(
        default=None,
        description="Local mirror directory for this benchmark (layout of ../shared/datasets/<benchmark>); "
        "general_mcq/general_qa: your folder in EvalScope's layout (<subset>_val.csv, …) or one file.",
    )
    hub: str | None = Field(
        default=None, description="Hub dataset id; default: the id EvalScope's adapter declares."
    )
    hub_backend: Literal["modelscope", "huggingface"] = "modelscope"
    revision: str | None = None
    id_column: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="general_mcq/general_qa: the column holding each row's id (unique, non-empty); unset: "
        "the id is the first 16 hex characters of the row's canonical sha256.",
    )
    stratify_column: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="general_mcq/general_qa: the column whose value is a row's stratum "
        "(sampling plan `stratify_by: column`).",
    )


class PlanFilter(Strict):
    """Record filter applied before stratification (LiveCodeBench release/date windows)."""

    versions: list[str] | None = Field(default=None, description="Keep records whose `_version` is listed.")
    start_date: str | None = Field(default=None, description="Keep contest_date >= this (ISO date).")
    end_date: str | None = Field(default=None, description="Keep contest_date <= this (ISO date).")


class SamplingPlan(Strict):
    """A declarative sampling plan (``samplers/<benchmark>.yaml``).

    Exactly one of ``per_stratum`` and ``total``.  ``allocation`` applies to ``total`` only:
    ``proportional`` (largest remainder over strata) or ``uniform`` (one stratum: simple random sample).
    """

    schema_version: int = 1
    benchmark: BenchmarkName | None = Field(
        default=None, description="Must match the benchmark using the plan."
    )
    stratify_by: StratifyBy = "none"
    per_stratum: Annotated[int, Field(gt=0)] | None = None
    total: Annotated[int, Field(gt=0)] | None = None
    allocation: Literal["proportional", "uniform"] | None = None
    allow_short: bool = False
    strata: list[str] | None = Field(
        default=None, description="Restrict to these strata (default: all present)."
    )
    filter: PlanFilter | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SamplingPlan:
        if (self.per_stratum is None) == (self.total is None):
            raise ValueError("exactly one of per_stratum and total must be set")
        if self.total is not None and self.allocation is None:
            raise ValueError("allocation (proportional or uniform) is required with total")
        if self.per_stratum is not None and self.allocation is not None:
            raise ValueError("allocation applies to total only")
        if self.allocation == "uniform" and self.stratify_by != "none":
            raise ValueError("allocation uniform samples one stratum: use stratify_by: none")
        return self

    def rule_text(self) -> str:
        if self.per_stratum is not None:
            alloc = f"{self.per_stratum} per {self.stratify_by} stratum"
        elif self.allocation == "proportional":
            alloc = f"{self.total} in total, proportional to {self.stratify_by} strata (largest remainder)"
        else:
            alloc = f"{self.total} uniformly over the split"
        return f"{alloc}; within a stratum, ascending sha256(seed:benchmark:source_id); without replacement"


class BenchmarkConfig(Strict):
    name: BenchmarkName
    subset: str | None = Field(
        default=None,
        description="EvalScope subset name (gsm8k 'main', ifeval 'default', live_code_bench 'release_v6').",
    )
    few_shot: Annotated[int, Field(ge=0)] = 0
    sampling: Annotated[
        Annotated[str, Tag("path")] | Annotated[SamplingPlan, Tag("inline")],
        Discriminator(lambda v: "path" if isinstance(v, str) else "inline"),
    ] = Field(description="Sampling plan: a YAML path (relative to the config file) or an inline plan.")
    source: DatasetSource = Field(default_factory=DatasetSource)
    fingerprint: Annotated[str, Field(pattern=SHA256_PATTERN)] | None = Field(
        default=None, description="Pinned dataset fingerprint (sha256 over sorted record hashes)."
    )
    max_tokens: Annotated[int, Field(gt=0)] | None = Field(
        default=None, description="Overrides generation.max_tokens for this benchmark."
    )
    extra_params: dict[str, object] = Field(
        default_factory=dict, description="EvalScope dataset extra_params."
    )
    drop_overlong: bool = Field(
        default=False,
        description="Consent to drop sampled prompts that cannot fit the context (scored context_overflow, "
        "listed in context_fit.json) instead of refusing the run.",
    )
    review_timeout_s: Annotated[float, Field(gt=0, le=600)] | None = Field(
        default=None,
        description="A code benchmark's per-test limit in its review, in seconds (EvalScope's review_timeout: "
        "the adapter's own when unset, LiveCodeBench 6 s). The re-check of a timeout uses the same limit as "
        "CPU time; outcomes and the report state it.",
    )

    @model_validator(mode="after")
    def _plan_matches(self) -> BenchmarkConfig:
        if isinstance(self.sampling, SamplingPlan) and self.sampling.benchmark not in (None, self.name):
            raise ValueError(f"sampling.benchmark is {self.sampling.benchmark!r}, expected {self.name!r}")
        return self

    @field_validator("subset")
    @classmethod
    def _nonempty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty")
        return v


PointsPerBlock = Annotated[float, Field(ge=0)] | dict[str, Annotated[float, Field(ge=0)]]

#: Gates a config may declare advisory (reported, never deciding the exit code).  ``max_error_findings`` is
#: not one of them: an error finding means a number cannot be trusted, which no config can waive.
AdvisoryGate = Literal[
    "min_score",
    "min_ci_lower",
    "max_transport_failures",
    "non_inferiority_margin_pts",
    "max_mde_pts",
    "min_output_throughput_ratio",
]


class GateConfig(Strict):
    min_score: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    min_ci_lower: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    max_error_findings: Annotated[int, Field(ge=0)] = 0
    max_transport_failures: Annotated[int, Field(ge=0)] | None = None
    min_output_throughput_ratio: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="Serving speed (speed: section, variants): the output-throughput ratio test/control of "
        "every workload (median across rounds) must be at least this; an incomplete round fails it.",
    )
    non_inferiority_margin_pts: PointsPerBlock | None = Field(
        default=None,
        description="Paired runs: the variant under test passes only when test − control is shown above −X "
        "points at one-sided error 0.025 (the Bonett-Price bound at a critical value calibrated to hold that at "
        "the margin whatever the discordance; with generation.sequential, its alpha split between the "
        "e-processes and one final look: evalpipe.stats.operating); inconclusive and inferior fail. One number "
        "for every benchmark and overall, or {benchmark|overall: X}.",
    )
    max_mde_pts: PointsPerBlock | None = Field(
        default=None,
        description="Paired runs: fail when the minimum detectable drop (80 % power) exceeds Y points, or no "
        "drop is detectable. One number for every block, or {benchmark|overall: Y}.",
    )
    must_catch_drop_pts: dict[str, Annotated[float, Field(gt=0, lt=100)]] = Field(
        default_factory=dict,
        description="Per block with a margin: the drop the sign-off must fail (points, test − control), e.g. "
        "the drop a known bug caused. `evalpipe plan` and compare.json state P(pass) there (the operating "
        "characteristic); it must exceed the block's margin.",
    )
    advisory: list[AdvisoryGate] = Field(
        default_factory=list,
        description="Gates evaluated and reported (summary, report, console) but not deciding the verdict "
        "or the exit code — e.g. a non-inferiority margin on a demo model too small to pass it. Each must "
        "be set above.",
    )

    @model_validator(mode="after")
    def _advisory_gates_set(self) -> GateConfig:
        for name in self.advisory:
            value = getattr(self, name)
            if value is None or value == {}:
                raise ValueError(f"advisory: {name} is not set (an advisory gate needs its threshold)")
        return self

    @model_validator(mode="after")
    def _drops_beyond_margins(self) -> GateConfig:
        for name, drop in self.must_catch_drop_pts.items():
            margin = self.points_for("non_inferiority_margin_pts", "all" if name == "overall" else name)
            if margin is None:
                raise ValueError(f"must_catch_drop_pts: {name} has no non_inferiority_margin_pts")
            if drop <= margin:
                raise ValueError(
                    f"must_catch_drop_pts: {name}: {drop:g} pts is within the margin ({margin:g} pts), "
                    "which the gate is built to pass"
                )
        return self

    def points_for(
        self, gate: Literal["non_inferiority_margin_pts", "max_mde_pts"], block: str
    ) -> float | None:
        """The gate's points for a compare.json block (``all`` is the overall block), or None."""
        value = getattr(self, gate)
        if value is None:
            return None
        if isinstance(value, dict):
            found = value.get("overall" if block == "all" else block)
            return float(found) if found is not None else None
        return float(value)


class ComponentTest(Strict):
    name: str
    pytest_args: list[str] = Field(
        description="Arguments to pytest, e.g. a test file of SGLang's TileLang kernels."
    )
    cwd: str | None = None
    required: bool = False


class DesignAssumption(Strict):
    """What a gated block's design assumes before any run of this release measured it."""

    accuracy: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="The control's expected accuracy p (2p(1-p) is shown beside the assumed discordance)."
    )
    discordance: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="Share of samples whose correctness differs between two runs with no regression (A/A)."
    )
    basis: str = Field(
        description="Where the discordance comes from: the measurement and how it was carried over."
    )


class RunConfig(Strict):
    schema_version: int = 1
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str | None = None
    model: ModelConfig
    server: ServerConfig
    variants: list[ServerVariant] = Field(default_factory=list)
    parallel_variants: bool = Field(
        default=False,
        description="Run the variants at the same time, each on its own server(s); refused unless their "
        "servers share nothing (worker URLs, ports, GPUs). Default: one after the other. With speed:, the "
        "servers stay up until every variant's evaluation is done and the speed rounds alternate across them.",
    )
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    sampling_seed: int = 42
    benchmarks: Annotated[list[BenchmarkConfig], Field(min_length=1)]
    pools: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Benchmarks judged as one paired comparison, e.g. {competition_math: [aime24, aime25, "
        "aime26]}: compare.json's pools hold one block per pool over the members' samples together (its "
        "own interval, MDE, non-inferiority and sequential verdict; gates name it like a benchmark); the "
        "members keep their own blocks. Members must be configured benchmarks, at least two, in one pool.",
    )
    output_root: str = "results"
    dataset_root: str | None = Field(default=None, description="Local mirror root for every benchmark.")
    design: dict[str, DesignAssumption] = Field(
        default_factory=dict,
        description="Per gated block (benchmark or pool): the accuracy and the no-regression discordance "
        "`evalpipe plan` designs under, with the argument for them; without one it assumes 2p(1-p).",
    )
    gates: GateConfig = Field(default_factory=GateConfig)
    component_tests: list[ComponentTest] = Field(default_factory=list)
    speed: SpeedConfig | None = Field(
        default=None,
        description="Serving benchmark on each variant's server after its accuracy evaluation: right after it, "
        "or with parallel_variants once every variant's evaluation is done, rounds alternating across the live "
        "servers (speed.json; variants: speed_compare.json).",
    )
    code_execution: CodeExecutionConfig = Field(
        default_factory=CodeExecutionConfig,
        description="The sandbox that runs model-written code (LiveCodeBench's programs): auto = the "
        "strongest available (bwrap, then unshare); none needs allow_unsandboxed: true.",
    )

    # Set by the loader: where the YAML lives, for resolving relative paths. Not part of the schema.
    _config_path: Path | None = None
    # Set by ``accuracy_only`` (``evalpipe run --no-speed``); recorded in run.json. Not part of the schema.
    _no_speed: bool = False
    _speed_gate_waived: bool = False

    @model_validator(mode="after")
    def _unique(self) -> RunConfig:
        names = [b.name for b in self.benchmarks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"benchmark listed more than once: {', '.join(dup)}")
        vnames = [v.name for v in self.variants]
        vdup = sorted({n for n in vnames if vnames.count(n) > 1})
        if vdup:
            raise ValueError(f"variant listed more than once: {', '.join(vdup)}")
        if self.parallel_variants and len(self.variants) < 2:
            raise ValueError("parallel_variants needs at least two variants")
        names_set = set(names)
        pooled: list[str] = []
        for pool, members in self.pools.items():
            if pool in names_set or pool in ("all", "overall"):
                raise ValueError(f"pools.{pool}: the name is already a benchmark or the overall block")
            unknown = [m for m in members if m not in names_set]
            if unknown or len(set(members)) < 2 or len(set(members)) != len(members):
                raise ValueError(
                    f"pools.{pool}: needs at least two distinct configured benchmarks"
                    + (f" (not configured: {', '.join(unknown)})" if unknown else "")
                )
            pooled += members
        twice = sorted({m for m in pooled if pooled.count(m) > 1})
        if twice:
            raise ValueError(f"pools: a benchmark belongs to one pool at most: {', '.join(twice)}")
        if self.generation.sequential is not None and self.gates.non_inferiority_margin_pts in (None, {}):
            raise ValueError(
                "generation.sequential judges against gates.non_inferiority_margin_pts: set the margin"
            )
        for i, v in enumerate(self.variants):
            if v.repeat_of is None:
                continue
            target = next((t for t in self.variants if t.name == v.repeat_of), None)
            if target is None or target is v:
                raise ValueError(
                    f"variants[{i}] ({v.name}).repeat_of: {v.repeat_of!r} is not another variant"
                )
            if target.repeat_of is not None:
                raise ValueError(f"variants[{i}] ({v.name}).repeat_of: {v.repeat_of!r} is itself a repeat")
            if i == 0:
                raise ValueError(
                    f"variants[0] ({v.name}): the first variant is the one under test, not a repeat"
                )
        return self

    @property
    def config_path(self) -> Path | None:
        return self._config_path

    @property
    def no_speed(self) -> bool:
        """``evalpipe run --no-speed``: the speed section is not run (see ``accuracy_only``)."""
        return self._no_speed

    @property
    def speed_gate_waived(self) -> bool:
        """``--waive-speed-gate``: ``min_output_throughput_ratio`` is reported, not deciding the verdict."""
        return self._speed_gate_waived

    def accuracy_only(self, *, waive_speed_gate: bool = False) -> RunConfig:
        """This config without its ``speed:`` section, marked as such (``evalpipe run --no-speed``).

        The run then writes the config it ran (no speed section) as config.yaml and records ``no_speed``
        (and ``speed_gate_waived``) in run.json, so the audit can say "serving speed not measured
        (--no-speed)" and fail ``gates.min_output_throughput_ratio`` with that reason — unless waived.
        """
        out = self.model_copy(update={"speed": None})
        out._config_path = self._config_path
        out._no_speed = True
        out._speed_gate_waived = waive_speed_gate
        return out

    def base_dir(self) -> Path:
        return self._config_path.parent if self._config_path else Path.cwd()

    def resolve_path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else Path(os.path.normpath(self.base_dir() / p))

    def model_path_for_server(self) -> str:
        """``model.path`` as a launched server receives it: resolved against the config's directory when
        it exists there, else verbatim (a hub id, or a path on the serving host)."""
        candidate = self.resolve_path(self.model.path)
        return str(candidate) if candidate.exists() else self.model.path

    def benchmark(self, name: str) -> BenchmarkConfig:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def max_tokens_for(self, name: str) -> int:
        b = self.benchmark(name)
        return b.max_tokens or self.generation.max_tokens_for(name)
