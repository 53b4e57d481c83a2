"""Verify what the server *resolved* against what the config asked for.

SGLang silently auto-selects kernels and may fall back (a KV dtype, a DSA backend) when a combination is
not supported; a sign-off that only echoes the config would then certify a configuration that never ran.
So the values that define the run are read back from ``/server_info`` and compared.
"""

from __future__ import annotations

from typing import Any

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.schema.server import ServerVerification, VerifiedValue
from evalpipe.server.sglang_flags import normalize, resolved_value

_KERNEL_NAMES = {
    "tilelang": "TileLang",
    "flashmla_sparse": "FlashMLA sparse",
    "flashmla_kv": "FlashMLA KV",
    "flashmla_auto": "FlashMLA auto",
    "flashinfer_sparse_mla": "FlashInfer sparse MLA",
    "fa3": "FA3",
    "aiter": "AITER",
    "trtllm": "TRT-LLM",
}


def expected_values(cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
    """Config values that must match ``/server_info`` (only those the config pins down)."""
    if server.kind == "answer_key":
        return {"served_model_name": cfg.model.served_name}
    exp: dict[str, Any] = {}
    if server.kv_cache_dtype != "auto":
        exp["kv_cache_dtype"] = server.kv_cache_dtype
    if server.attention_backend is not None:
        exp["attention_backend"] = server.attention_backend
    if server.dsa_prefill_backend is not None:
        exp["dsa_prefill_backend"] = server.dsa_prefill_backend
    if server.dsa_decode_backend is not None:
        exp["dsa_decode_backend"] = server.dsa_decode_backend
    exp["tp_size"] = server.tp_size
    if server.ep_size is not None:
        exp["ep_size"] = server.ep_size
    exp["speculative_algorithm"] = server.speculative.algorithm if server.speculative else None
    exp["served_model_name"] = cfg.model.served_name
    return exp


def verify(
    cfg: RunConfig,
    server: ServerConfig,
    server_info: dict[str, Any] | None,
    *,
    base_url: str,
    variant: str | None = None,
    info_error: str | None = None,
) -> ServerVerification:
    """Compare resolved values with the config; ``server_info=None`` (unavailable) verifies nothing."""
    expected = expected_values(cfg, server)
    info = server_info or {}
    checks = []
    for key, want in expected.items():
        got = resolved_value(info, key) if server_info is not None else None
        checks.append(
            VerifiedValue(key=key, expected=want, resolved=got, ok=normalize(got) == normalize(want))
        )
    verified = server_info is not None and all(c.ok for c in checks)

    def res(key: str) -> Any:
        return resolved_value(info, key)

    det = res("enable_deterministic_inference")
    out = ServerVerification(
        kind=server.kind,
        variant=variant,
        base_url=base_url,
        server_version=_str(res("version")),
        launch_command=_str(res("launch_command")),
        checks=checks,
        verified=verified,
        on_mismatch=server.on_mismatch,
        kv_cache_dtype=_str(res("kv_cache_dtype")),
        attention_backend=_str(res("attention_backend")),
        dsa_prefill_backend=_str(res("dsa_prefill_backend")),
        dsa_decode_backend=_str(res("dsa_decode_backend")),
        tp_size=_int(res("tp_size")),
        ep_size=_int(res("ep_size")),
        speculative_algorithm=_str(normalize(res("speculative_algorithm"))),
        served_model_name=_str(res("served_model_name")),
        seed_effective=bool(det) if det is not None else None,
    )
    out.description = describe(out, info_error=info_error if server_info is None else None)
    return out


def mismatches(v: ServerVerification) -> list[str]:
    return [f"{c.key}: config {c.expected!r}, server resolved {c.resolved!r}" for c in v.checks if not c.ok]


def describe(v: ServerVerification, *, info_error: str | None = None) -> str:
    """The report line, e.g. ``KV layout: fp8_e4m3 raw, TileLang prefill/decode; TP 8, EP 4; MTP EAGLE —
    verified from server_info``."""
    if v.kind == "answer_key":
        head = f"answer-key self-test server, model {v.served_model_name or '?'}"
    else:
        kv = v.kv_cache_dtype or "?"
        layout = f"{kv} raw" if kv.startswith("fp8_e4m3") or kv.startswith("fp8_e5m2") else kv
        head = f"KV layout: {layout}"
        p, d = v.dsa_prefill_backend, v.dsa_decode_backend
        if p or d:
            if p == d:
                head += f", {_kernel(p)} prefill/decode"
            else:
                head += f", {_kernel(p)} prefill, {_kernel(d)} decode"
        elif v.attention_backend:
            head += f", {v.attention_backend} attention"
        par = [f"TP {v.tp_size}"] if v.tp_size is not None else []
        if v.ep_size is not None and v.ep_size > 1:
            par.append(f"EP {v.ep_size}")
        if par:
            head += "; " + ", ".join(par)
        if v.speculative_algorithm:
            head += f"; MTP {v.speculative_algorithm}"
    if v.seed_effective is False:
        head += "; request seed not effective (no --enable-deterministic-inference)"
    if info_error is not None:
        return f"{head} — NOT verified: server_info unavailable ({info_error})"
    if v.verified:
        return f"{head} — verified from server_info"
    return f"{head} — MISMATCH with config: " + "; ".join(mismatches(v))


def _kernel(name: str | None) -> str:
    if name is None:
        return "auto"
    return _KERNEL_NAMES.get(name, name)


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None
