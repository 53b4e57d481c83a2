"""Server artifacts: ``server/launch.json`` and ``server/verification.json``.

Secrets are stripped at the point of capture (``evalpipe.artifacts.redact``); these models never hold a key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.config.registry_names import ServerKindName

#: A server kind's name, as the config names it: a string here (a record stays readable where the kind's plugin
#: is not installed); the published schemas list the registered kinds.
ServerKind = ServerKindName


class LaunchRecord(Artifact):
    schema_version: int = 1
    kind: ServerKind
    variant: str | None = None
    argv: list[str] = Field(default_factory=list, description="Exact argv (redacted); empty when attaching.")
    env: dict[str, str] = Field(
        default_factory=dict, description="CUDA_VISIBLE_DEVICES, SGLANG_* … (redacted)."
    )
    base_url: str
    pid: int | None = None
    started_at: str | None = None
    ready_at: str | None = None
    stopped_at: str | None = None
    stop_method: str | None = Field(
        default=None, description="sigterm | sigkill | exited (gone before stop) | attached (not ours)"
    )
    exit_code: int | None = None


class VerifiedValue(Row):
    key: str = Field(description="Config key, e.g. kv_cache_dtype.")
    expected: Any = None
    resolved: Any = None
    ok: bool


#: The FP8 KV cache's scaling factors as the server's log states them: ``loaded`` (from a scales file),
#: ``default_1.0`` (none provided: values cast to FP8 unscaled), ``not_logged`` (an FP8 pool whose log says
#: neither, e.g. scales from the checkpoint itself).
Fp8ScaleState = Literal["loaded", "default_1.0", "not_logged"]


class KvCacheFacts(Row):
    """The KV pool as the server allocated it, from what the server itself said (its log)."""

    storage_dtype: str = Field(
        description="The dtype the pool was allocated in, e.g. float8_e4m3fn, bfloat16."
    )
    capacity_tokens: int | None = Field(default=None, description="Tokens the KV pool holds.")
    fp8_scales: Fp8ScaleState | None = Field(
        default=None, description="FP8 pools only: were scaling factors loaded? None for a non-FP8 pool."
    )
    fp8_scales_evidence: str | None = Field(default=None, description="The server's own line saying so.")
    source: str = Field(description="Where these facts were read (e.g. 'server log').")


#: How a sparse-attention KV pool stores a token's row, as its size shows it: ``raw`` (FP8 values, no scales),
#: ``scaled`` (FP8 values with per-block scales), ``bf16`` (BF16 values).
KvRowLayout = Literal["raw", "scaled", "bf16"]
#: Where the dense-prefill threshold was read: the server's log line, the server's environment, or the
#: engine's default (the model's ``index_topk``).
ThresholdSource = Literal["server log", "server env", "engine default (index_topk)"]


class SparseAttentionFacts(Row):
    """What a DSA (sparse-attention) server ran with, from its own words: the kernels its log names, the KV
    row it allocated (bytes per token per layer, from the pool's size over its slots and the model's layers),
    the page size, and the KV length up to which a prefill takes the dense path instead of the named kernel."""

    prefill_kernel: str | None = Field(default=None, description="The prefill kernel the server's log names.")
    decode_kernel: str | None = Field(default=None, description="The decode kernel the server's log names.")
    kernels_evidence: str | None = Field(default=None, description="The server's own line naming them.")
    page_size: int | None = Field(default=None, description="Tokens per KV page, as the server resolved it.")
    kv_layout: KvRowLayout | None = Field(
        default=None, description="The row layout the pool's size shows; None: the size matches no known row."
    )
    kv_bytes_per_token_layer: float | None = Field(
        default=None, description="The pool's bytes per token per layer, the indexer's row taken off."
    )
    indexer_bytes_per_token_layer: int | None = Field(
        default=None, description="The indexer cache's row (FP8 keys and one FP32 scale) taken off above."
    )
    kv_bytes_evidence: str | None = Field(
        default=None, description="How the bytes were computed (which size, over how many slots and layers)."
    )
    dense_prefill_threshold: int | None = Field(
        default=None,
        description="A prefill whose KV length is at most this many tokens runs dense attention, not the "
        "named prefill kernel (SGLang: SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD on SM90/SM100).",
    )
    dense_prefill_threshold_source: ThresholdSource | None = None
    index_topk: int | None = Field(default=None, description="The model's index_topk (its config.json).")


class CacheState(Row):
    """What the server had cached when evaluation began: a prefix (radix) cache reused across requests
    changes the numerics of a repeated prompt, so an A/A arm on a warm server is not a fresh one."""

    prefix_cache: Literal["on", "off"] | None = Field(
        default=None,
        description="The server's prefix cache (SGLang: radix cache) as /server_info reports it.",
    )
    fresh_start: bool = Field(
        description="The server was launched by this run for this arm (False: attached to a running server, "
        "whose caches may hold earlier requests)."
    )


class ServerVerification(Artifact):
    schema_version: int = 3  # 3: sparse_attention
    kind: ServerKind
    variant: str | None = None
    base_url: str
    server_version: str | None = None
    launch_command: str | None = Field(default=None, description="As reported by /server_info (redacted).")
    checks: list[VerifiedValue] = Field(default_factory=list)
    verified: bool = Field(description="The resolved configuration was available and every check passed.")
    resolved_config_available: bool = Field(
        default=True,
        description="False when the server has no /server_info: its resolved configuration (KV dtype, "
        "kernels, parallelism) could not be checked — not the same as a mismatch.",
    )
    unverified_keys: list[str] = Field(
        default_factory=list, description="Config keys that could not be checked (no /server_info)."
    )
    server_info_error: str | None = Field(
        default=None, description="Why /server_info could not be read (None when it was)."
    )
    served_models: list[str] | None = Field(
        default=None, description="Model ids listed by /v1/models (None when it did not answer)."
    )
    engine: str | None = Field(default=None, description="Engine the server reports (e.g. 'llama.cpp').")
    on_mismatch: str = "abort"
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    dsa_prefill_backend: str | None = None
    dsa_decode_backend: str | None = None
    tp_size: int | None = None
    ep_size: int | None = None
    speculative_algorithm: str | None = None
    served_model_name: str | None = None
    reasoning_parser: str | None = Field(
        default=None, description="Resolved --reasoning-parser (answers split into content + reasoning)."
    )
    seed_effective: bool | None = Field(
        default=None, description="Request `seed` acts only with enable_deterministic_inference."
    )
    kv_cache: KvCacheFacts | None = Field(
        default=None, description="The KV pool as allocated (dtype, capacity, FP8 scales); None: not stated."
    )
    sparse_attention: SparseAttentionFacts | None = Field(
        default=None,
        description="A DSA server's kernels, KV row layout and bytes, page size and dense-prefill threshold as "
        "it stated them; None: not a sparse-attention server (or nothing stated).",
    )
    served_context_tokens: int | None = Field(
        default=None, description="Tokens one request may use, as the server resolved it (see its source)."
    )
    served_context_source: str | None = Field(default=None, description="Which /server_info key said so.")
    cache_state: CacheState | None = Field(default=None, description="Prefix cache and fresh start.")
    unreported_settings: list[str] = Field(
        default_factory=list,
        description="Launch flags whose value /server_info does not report under the flag's own name "
        "(not checked, not a mismatch).",
    )
    description: str = Field(
        default="",
        description='Human line for the report, e.g. "KV layout: fp8_e4m3 raw (576 B), TileLang prefill/decode — '
        'verified from server_info".',
    )


PreflightStatus = Literal["ok", "warn", "fail", "skipped"]


class PreflightCheck(Row):
    rule: str = Field(description="Rule id, e.g. 'dry_parse', 'raw_fp8_both_tilelang', 'port_free'.")
    status: PreflightStatus
    message: str = Field(description="What was checked and, on warn/fail, the fix; names the flag.")
    flag: str | None = Field(default=None, description="The SGLang flag (or config field) concerned.")


class PreflightReport(Artifact):
    """``server/preflight.json``: every rule evaluated before any GPU time is spent."""

    schema_version: int = 1
    kind: ServerKind
    variant: str | None = None
    sglang_version: str | None = None
    argv: list[str] = Field(default_factory=list, description="The argv checked (redacted).")
    checks: list[PreflightCheck] = Field(default_factory=list)
    ok: bool = Field(description="No check failed (warnings allowed).")

    @property
    def failures(self) -> list[PreflightCheck]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def warnings(self) -> list[PreflightCheck]:
        return [c for c in self.checks if c.status == "warn"]
