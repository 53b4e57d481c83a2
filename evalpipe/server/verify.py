"""Verify what the server *resolved* against what the config asked for.

A server (SGLang above all) silently auto-selects kernels and may fall back (a KV dtype, a DSA backend) when a combination is
not supported; a sign-off that only echoes the config would then certify a configuration that never ran.
So the values that define the run are read back from ``/server_info`` and compared — through the server's
kind, which says which values its config pins, where its ``/server_info`` reports them and how they compare
(``Kind.expected_values``, ``Kind.resolved_value``, ``Kind.normalize``): one verification path for every
kind, and for each worker of a fleet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.artifacts.schema.server import CacheState, ServerVerification, VerifiedValue
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.served_context import served_context

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import KvCacheFacts, SparseAttentionFacts
    from evalpipe.config.models import RunConfig, ServerConfig
    from evalpipe.server.kinds.base import Kind


def verify(
    cfg: RunConfig,
    server: ServerConfig,
    server_info: dict[str, Any] | None,
    *,
    base_url: str,
    variant: str | None = None,
    info_error: str | None = None,
    served_models: list[str] | None = None,
    log_path: Path | None = None,
    fresh_start: bool | None = None,
) -> ServerVerification:
    """Compare resolved values with the config: the top level of ``/server_info`` and every
    ``internal_states`` entry that reports the value.

    ``server_info=None`` (the server has no ``/server_info``) leaves the resolved configuration
    unverifiable — recorded as such, never as a mismatch; the served name is still checked against
    ``/v1/models`` (``served_models``) whenever that answered.

    ``log_path`` (a launched server's log) lets the kind state the KV pool as allocated — its dtype is
    checked against the config, its FP8 scale state recorded; ``fresh_start`` (launched by this run for this
    arm, or attached) goes into the cache state with the prefix cache the server reports.
    """
    info = server_info or {}
    engine = info.get("engine") if isinstance(info.get("engine"), str) else None
    kind = server_kind(server.kind)
    resolved_value, normalize = kind.resolved_value, kind.normalize
    expected = kind.expected_values(cfg, server, engine)
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
        ok = normalize(got) == normalize(want)
        if ok and server_info is not None:
            # every data-parallel scheduler must have resolved it, not only the first one reporting it
            odd = [(i, v) for i, v in kind.state_values(info, key) if normalize(v) != normalize(want)]
            if odd:
                ok, got = False, "; ".join(f"internal_states[{i}]: {v!r}" for i, v in odd)
        checks.append(VerifiedValue(key=key, expected=want, resolved=got, ok=ok))
    unreported: list[str] = []
    if server_info is not None and not engine:
        for key, want in kind.optional_expectations(cfg, server).items():
            if key in expected:
                continue
            got = resolved_value(info, key)
            if got is None:
                unreported.append(key)
                continue
            checks.append(VerifiedValue(key=key, expected=want, resolved=got, ok=_same(got, want, normalize)))
    kv_facts, sparse, stated = _stated_facts(kind, cfg, server, server_info, log_path)
    checks += stated
    verified = server_info is not None and not unverified and all(c.ok for c in checks)
    context = served_context(info) if server_info is not None else None
    capacity = _int(resolved_value(info, "max_total_num_tokens")) if server_info is not None else None
    if kv_facts is not None and capacity is not None and kv_facts.capacity_tokens is None:
        kv_facts = kv_facts.model_copy(update={"capacity_tokens": capacity})

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
        server_info_error=info_error if server_info is None else None,
        served_models=served_models,
        engine=_str(res("engine")),
        kv_cache=kv_facts,
        sparse_attention=sparse,
        served_context_tokens=context[0] if context else None,
        served_context_source=context[2] if context else None,
        cache_state=(
            CacheState(prefix_cache=kind.prefix_cache(info), fresh_start=fresh_start)
            if fresh_start is not None
            else None
        ),
        unreported_settings=unreported,
    )
    out.description = describe(out, info_error=info_error if server_info is None else None, info=info)
    return out


def _stated_facts(
    kind: Kind,
    cfg: RunConfig,
    server: ServerConfig,
    server_info: dict[str, Any] | None,
    log_path: Path | None,
) -> tuple[KvCacheFacts | None, SparseAttentionFacts | None, list[VerifiedValue]]:
    """What the server stated beyond its resolved arguments — the KV pool as allocated (its log), a sparse-
    attention server's kernels, KV row, page size and dense-prefill threshold — and their checks."""
    checks: list[VerifiedValue] = []
    kv_facts = kind.kv_cache_facts(log_path)
    want_storage = kind.expected_kv_storage_dtype(server)
    if kv_facts is not None and want_storage is not None:
        checks.append(
            VerifiedValue(
                key="kv_cache_storage_dtype",
                expected=want_storage,
                resolved=kv_facts.storage_dtype,
                ok=kv_facts.storage_dtype == want_storage,
            )
        )
    sparse, sparse_checks = kind.sparse_attention(cfg, server, server_info, log_path)
    return kv_facts, sparse, checks + sparse_checks


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
    v: ServerVerification, *, info_error: str | None = None, info: Mapping[str, Any] | None = None
) -> str:
    """The report line, e.g. ``KV layout: fp8_e4m3 raw (576 B), TileLang prefill/decode; TP 8, EP 4; MTP EAGLE —
    verified from server_info``; the kind names the server (``Kind.describe_head``)."""
    kind = server_kind(v.kind)
    head = kind.describe_head(v, None if info_error is not None else (info or {}))
    if v.reasoning_parser:
        head += f"; reasoning parser {v.reasoning_parser}"
    if v.seed_effective is False:
        head += "; request seed not effective (no --enable-deterministic-inference)"
    head += kv_pool_words(v)
    if info_error is not None:
        if kind.requires_server_info:
            return f"{head} — NOT verified: server_info unavailable ({info_error})"
        head = f"{head} — {unverifiable_text(v)}"
        bad = [c for c in v.checks if not c.ok]
        return head if not bad else f"{head} — MISMATCH with config: " + "; ".join(mismatches(v))
    if v.verified:
        return f"{head} — verified from server_info"
    return f"{head} — MISMATCH with config: " + "; ".join(mismatches(v))


def kv_pool_words(v: ServerVerification) -> str:
    """``; KV pool float8_e4m3fn, 2,165,893 tokens, FP8 scales 1.0 (none provided); prefix cache on, fresh
    server`` — what the server allocated and what it had cached, where it said so."""
    out = ""
    kv = v.kv_cache
    if kv is not None:
        out += f"; KV pool {kv.storage_dtype}"
        if kv.capacity_tokens is not None:
            out += f", {kv.capacity_tokens:,} tokens"
        out += {
            "default_1.0": ", FP8 scales 1.0 (none provided)",
            "loaded": ", FP8 scales loaded",
            "not_logged": ", FP8 scales not stated by the server",
            None: "",
        }[kv.fp8_scales]
    if v.served_context_tokens is not None:
        out += f"; served context {v.served_context_tokens:,} tokens ({v.served_context_source})"
    cs = v.cache_state
    if cs is not None:
        cache = f"prefix cache {cs.prefix_cache}" if cs.prefix_cache else "prefix cache not reported"
        out += f"; {cache}, " + ("fresh server" if cs.fresh_start else "attached (caches may be warm)")
    return out


def _same(got: Any, want: Any, normalize: Callable[[Any], Any]) -> bool:
    """A resolved value equals the one asked for (numbers compared as numbers: 0.3 == "0.3")."""
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == bool(want) if isinstance(got, bool) and isinstance(want, bool) else False
    if isinstance(want, (int, float)) and isinstance(got, (int, float, str)):
        try:
            return float(got) == float(want)
        except ValueError:
            return False
    return bool(normalize(got) == normalize(want))


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None
