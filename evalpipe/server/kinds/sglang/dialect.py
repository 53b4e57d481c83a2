"""SGLang's ``/server_info`` as a kind verifies it: the values a config pins (named as SGLang names them),
how they are read and compared, and the report's layout line.

:class:`SglangServerInfo` is the part of :class:`~evalpipe.server.kinds.base.Kind` that speaks SGLang's
``/server_info``; the SGLang kind has it, and so do the kinds that face an SGLang server without launching
one themselves (an attached endpoint, a recorded bundle served back, a router's fleet).  A server that names
another ``engine`` in its ``/server_info`` (evalpipe's llama.cpp launcher) is verified on what that engine
reports instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from evalpipe.server.kinds.base import Kind, engine_expectations, engine_head
from evalpipe.server.kinds.sglang.dsa_facts import dsa_checks, dsa_facts, layout_words, prefill_words
from evalpipe.server.kinds.sglang.flags import (
    KERNEL_NAMES,
    SERVER_INFO,
    extra_args_conflicts,
    resolved_expectations,
)
from evalpipe.server.kinds.sglang.settings import SglangSettings, sglang_settings
from evalpipe.server.server_info import ServerInfoReader

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import ServerVerification, SparseAttentionFacts, VerifiedValue
    from evalpipe.config.models import RunConfig, ServerConfig


class SglangServerInfo(Kind):
    """Verification in SGLang's terms (abstract: a kind still declares its ``argv``)."""

    server_info_reader: ClassVar[ServerInfoReader] = SERVER_INFO
    #: What the server is launched with, or (attached, replayed, behind a router) verified to resolve.
    settings_model: ClassVar[type[BaseModel]] = SglangSettings

    def expected_values(
        self, cfg: RunConfig, server: ServerConfig, reported_engine: str | None
    ) -> dict[str, Any]:
        """The values SGLang resolves, named as SGLang names them — unless the server reports another
        ``engine``, which can resolve only the KV cache dtype and the name."""
        if reported_engine:
            return engine_expectations(cfg, server)
        return resolved_expectations(cfg, server)

    def extra_args_conflicts(self, server: ServerConfig) -> list[tuple[str, str]]:
        return extra_args_conflicts(server)

    def kernel_label(self, name: str) -> str:
        return _kernel(name)

    def sparse_attention(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        info: Mapping[str, Any] | None,
        log_path: Path | None,
    ) -> tuple[SparseAttentionFacts | None, list[VerifiedValue]]:
        """SGLang's DSA path as the server stated it (``evalpipe.server.kinds.sglang.dsa_facts``): the kernels
        its log names and the KV row its pool's size shows, checked against the kernels and the raw or BF16
        layout the config asks for; the dense-prefill threshold from its log, else (a server evalpipe launched,
        ``log_path`` given) the environment it was launched with, else SGLang's default (the model's
        ``index_topk``) — for an attached server without its log, not stated."""
        if info is None or info.get("engine"):
            return None, []
        st = sglang_settings(server)
        env = {**os.environ, **server.env} if log_path is not None else None
        facts = dsa_facts(info, log_path, cfg.model_path_for_server(), env)
        return facts, dsa_checks(facts, server.kv_cache_dtype, st.dsa_prefill_backend, st.dsa_decode_backend)

    def describe_head(self, v: ServerVerification, info: Mapping[str, Any] | None) -> str:
        """The resolved KV layout, kernels, parallelism and MTP as SGLang reports them; another engine's own
        resolved settings; or, without ``/server_info``, the kind and URL."""
        if info is None:
            return f"{v.kind} server at {v.base_url}"
        if v.engine:
            return engine_head(v, info)
        return layout_head(v)


def layout_head(v: ServerVerification) -> str:
    """E.g. ``KV layout: fp8_e4m3 scaled FP8 (656 B), FlashMLA KV prefill/decode; page size 64; dense prefill
    up to KV length 0 (server log); TP 1``: the row is named only where the server's pool size showed it (a DSA
    server's; ``evalpipe.server.kinds.sglang.dsa_facts``), never inferred from the dtype."""
    sparse = v.sparse_attention
    head = f"KV layout: {layout_words(v.kv_cache_dtype, sparse)}"
    p, d = v.dsa_prefill_backend, v.dsa_decode_backend
    if p or d:
        if p == d:
            head += f", {_kernel(p)} prefill/decode"
        else:
            head += f", {_kernel(p)} prefill, {_kernel(d)} decode"
    elif v.attention_backend:
        head += f", {v.attention_backend} attention"
    head += prefill_words(sparse)
    par = [f"TP {v.tp_size}"] if v.tp_size is not None else []
    if v.ep_size is not None and v.ep_size > 1:
        par.append(f"EP {v.ep_size}")
    if par:
        head += "; " + ", ".join(par)
    if v.speculative_algorithm:
        head += f"; MTP {v.speculative_algorithm}"
    return head


def _kernel(name: str | None) -> str:
    if name is None:
        return "auto"
    return KERNEL_NAMES.get(name, name)
