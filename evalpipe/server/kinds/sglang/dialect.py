"""SGLang's ``/server_info`` as a kind verifies it: the values a config pins (named as SGLang names them),
how they are read and compared, and the report's layout line.

:class:`SglangServerInfo` is the part of :class:`~evalpipe.server.kinds.base.Kind` that speaks SGLang's
``/server_info``; the SGLang kind has it, and so do the kinds that face an SGLang server without launching
one themselves (an attached endpoint, a recorded bundle served back, a router's fleet).  A server that names
another ``engine`` in its ``/server_info`` (evalpipe's llama.cpp launcher) is verified on what that engine
reports instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from evalpipe.server.kinds.base import Kind, engine_expectations, engine_head
from evalpipe.server.kinds.sglang.flags import (
    KERNEL_NAMES,
    SERVER_INFO,
    extra_args_conflicts,
    resolved_expectations,
)
from evalpipe.server.kinds.sglang.settings import SglangSettings
from evalpipe.server.server_info import ServerInfoReader

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import ServerVerification
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

    def describe_head(self, v: ServerVerification, info: Mapping[str, Any] | None) -> str:
        """The resolved KV layout, kernels, parallelism and MTP as SGLang reports them; another engine's own
        resolved settings; or, without ``/server_info``, the kind and URL."""
        if info is None:
            return f"{v.kind} server at {v.base_url}"
        if v.engine:
            return engine_head(v, info)
        return layout_head(v)


def layout_head(v: ServerVerification) -> str:
    """E.g. ``KV layout: fp8_e4m3 raw, TileLang prefill/decode; TP 8, EP 4; MTP EAGLE``."""
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
    return head


def _kernel(name: str | None) -> str:
    if name is None:
        return "auto"
    return KERNEL_NAMES.get(name, name)
