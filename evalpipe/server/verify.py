"""Verify what the server *resolved* against what the config asked for.

SGLang silently auto-selects kernels and may fall back (a KV dtype, a DSA backend) when a combination is
not supported; a sign-off that only echoes the config would then certify a configuration that never ran.
So the values that define the run are read back from ``/server_info`` and compared.
"""

from __future__ import annotations

from typing import Any

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.schema.server import ServerVerification, VerifiedValue
from evalpipe.server.sglang_flags import NO_REASONING_PARSER, normalize, resolved_value

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


def expected_values(
    cfg: RunConfig, server: ServerConfig, reported_engine: str | None = None
) -> dict[str, Any]:
    """Config values that must match ``/server_info`` (only those the config pins down).

    ``kind: command`` servers are not SGLang: only what such a server can resolve is expected (the KV
    cache dtype when the config sets one, and the served name); so are endpoints whose ``/server_info``
    names a non-SGLang ``engine`` (evalpipe's llama.cpp launcher)."""
    if server.kind == "answer_key":
        exp_ak: dict[str, Any] = {"served_model_name": cfg.model.served_name}
        if cfg.model.reasoning_parser != NO_REASONING_PARSER:
            exp_ak["reasoning_parser"] = cfg.model.reasoning_parser
        return exp_ak
    if server.kind == "command" or reported_engine:
        exp_cmd: dict[str, Any] = {}
        if server.kv_cache_dtype != "auto":
            exp_cmd["kv_cache_dtype"] = server.kv_cache_dtype
        exp_cmd["served_model_name"] = cfg.model.served_name
        return exp_cmd
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
    # "none" expects no parser: a server that splits reasoning off would change what is scored
    parser = cfg.model.reasoning_parser
    exp["reasoning_parser"] = None if parser == NO_REASONING_PARSER else parser
    if cfg.model.tool_call_parser is not None:
        exp["tool_call_parser"] = cfg.model.tool_call_parser
    return exp


def verify(
    cfg: RunConfig,
    server: ServerConfig,
    server_info: dict[str, Any] | None,
    *,
    base_url: str,
    variant: str | None = None,
    info_error: str | None = None,
    served_models: list[str] | None = None,
) -> ServerVerification:
    """Compare resolved values with the config.

    ``server_info=None`` (the server has no ``/server_info``) leaves the resolved configuration
    unverifiable — recorded as such, never as a mismatch; the served name is still checked against
    ``/v1/models`` (``served_models``) whenever that answered.
    """
    info = server_info or {}
    engine = info.get("engine") if isinstance(info.get("engine"), str) else None
    expected = expected_values(cfg, server, engine)
    checks: list[VerifiedValue] = []
    unverified: list[str] = []
    for key, want in expected.items():
        if key == "served_model_name":
            got = resolved_value(info, key) if server_info is not None else None
            if got is None and served_models is not None:
                # /v1/models lists what the server answers to: the name is served iff it is listed
                got = want if want in served_models else ", ".join(served_models) or "(no models listed)"
            if got is None:
                unverified.append(key)
                continue
        elif server_info is None:
            unverified.append(key)
            continue
        else:
            got = resolved_value(info, key)
        checks.append(
            VerifiedValue(key=key, expected=want, resolved=got, ok=normalize(got) == normalize(want))
        )
    verified = server_info is not None and not unverified and all(c.ok for c in checks)

    def res(key: str) -> Any:
        return resolved_value(info, key)

    served_check = next((c for c in checks if c.key == "served_model_name"), None)
    served_name = _str(res("served_model_name")) or (
        cfg.model.served_name if served_check is not None and served_check.ok else None
    )
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
        served_model_name=served_name,
        reasoning_parser=_str(res("reasoning_parser")),
        seed_effective=bool(det) if det is not None else None,
        resolved_config_available=server_info is not None,
        unverified_keys=unverified,
        served_models=served_models,
        engine=_str(res("engine")),
    )
    out.description = describe(out, info_error=info_error if server_info is None else None, info=info)
    return out


def mismatches(v: ServerVerification) -> list[str]:
    return [f"{c.key}: config {c.expected!r}, server resolved {c.resolved!r}" for c in v.checks if not c.ok]


def unverifiable_text(v: ServerVerification) -> str:
    """Why nothing beyond the served name could be checked, in the words a reviewer needs."""
    served = next((c for c in v.checks if c.key == "served_model_name"), None)
    if served is None:
        name = "served model name not checked (/v1/models did not answer)"
    elif served.ok:
        name = f"served model name {served.expected!r} checked from /v1/models"
    else:
        name = f"served model name {served.expected!r} NOT listed by /v1/models (lists {served.resolved})"
    keys = [k for k in v.unverified_keys if k != "served_model_name"]
    unchecked = f" ({', '.join(keys)} unchecked)" if keys else ""
    return f"resolved configuration not verifiable: the server has no /server_info{unchecked}; {name}"


def describe(
    v: ServerVerification, *, info_error: str | None = None, info: dict[str, Any] | None = None
) -> str:
    """The report line, e.g. ``KV layout: fp8_e4m3 raw, TileLang prefill/decode; TP 8, EP 4; MTP EAGLE —
    verified from server_info``."""
    info = info or {}
    if v.kind == "answer_key":
        head = f"answer-key self-test server, model {v.served_model_name or '?'}"
    elif info_error is not None:
        head = f"{v.kind} server at {v.base_url}"
    elif v.engine:
        head = _engine_head(v, info)
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
    if v.reasoning_parser:
        head += f"; reasoning parser {v.reasoning_parser}"
    if v.seed_effective is False:
        head += "; request seed not effective (no --enable-deterministic-inference)"
    if info_error is not None:
        if v.kind == "sglang":
            return f"{head} — NOT verified: server_info unavailable ({info_error})"
        head = f"{head} — {unverifiable_text(v)}"
        bad = [c for c in v.checks if not c.ok]
        return head if not bad else f"{head} — MISMATCH with config: " + "; ".join(mismatches(v))
    if v.verified:
        return f"{head} — verified from server_info"
    return f"{head} — MISMATCH with config: " + "; ".join(mismatches(v))


def _engine_head(v: ServerVerification, info: dict[str, Any]) -> str:
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
