"""Server artifacts: ``server/launch.json`` and ``server/verification.json``.

Secrets are stripped at the point of capture (``evalpipe.redact``); these models never hold a key.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evalpipe.config.models import ServerKind
from evalpipe.schema.base import Artifact, Row


class LaunchRecord(Artifact):
    schema_version: int = 1
    kind: ServerKind
    variant: str | None = None
    argv: list[str] = Field(default_factory=list, description="Exact argv (redacted); empty when attaching.")
    env: dict[str, str] = Field(default_factory=dict, description="CUDA_VISIBLE_DEVICES, SGLANG_* … (redacted).")
    base_url: str
    pid: int | None = None
    started_at: str | None = None
    ready_at: str | None = None
    stopped_at: str | None = None
    stop_method: str | None = Field(default=None, description="sigterm | sigkill | attached (not ours to stop)")
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
    verified: bool = Field(description="All checks passed.")
    on_mismatch: str = "abort"
    kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    dsa_prefill_backend: str | None = None
    dsa_decode_backend: str | None = None
    tp_size: int | None = None
    ep_size: int | None = None
    speculative_algorithm: str | None = None
    served_model_name: str | None = None
    seed_effective: bool | None = Field(
        default=None, description="Request `seed` acts only with enable_deterministic_inference."
    )
    description: str = Field(
        default="",
        description='Human line for the report, e.g. "KV layout: fp8_e4m3 raw, TileLang prefill/decode — '
        'verified from server_info".',
    )
