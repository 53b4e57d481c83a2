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


class ServerVerification(Artifact):
    schema_version: int = 1
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
    description: str = Field(
        default="",
        description='Human line for the report, e.g. "KV layout: fp8_e4m3 raw, TileLang prefill/decode — '
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
