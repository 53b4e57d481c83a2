"""SGLang's launch settings: ``server.settings`` of a kind that launches or verifies an SGLang server.

The config keeps ``server.settings`` as plain data; the resolve step validates it against the kind's
``settings_model`` (this model for ``sglang`` and for the kinds that verify an SGLang server they did not
launch: an attached endpoint, a replayed bundle, a router's fleet), and every reader here takes the validated
model from :func:`sglang_settings`.  The KV cache dtype is not among them: it is the setting under test for
every kind (``server.kv_cache_dtype``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from evalpipe.config.base import Strict

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig


class SpeculativeConfig(Strict):
    """Multi-token prediction (MTP) via speculative decoding."""

    algorithm: Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE"] = "EAGLE"
    num_steps: Annotated[int, Field(gt=0)] = 3
    eagle_topk: Annotated[int, Field(gt=0)] = 1
    num_draft_tokens: Annotated[int, Field(gt=0)] = 4


class MultiNodeConfig(Strict):
    """One SGLang instance over several nodes (``--nnodes``, ``--node-rank``, ``--dist-init-addr``)."""

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


class SglangSettings(Strict):
    """``server.settings`` for SGLang: parallelism, attention kernels, MTP and determinism."""

    tp_size: Annotated[int, Field(gt=0)] = 1
    ep_size: Annotated[int, Field(gt=0)] | None = None
    dp_size: Annotated[int, Field(gt=0)] | None = None
    attn_cp_size: Annotated[int, Field(gt=0)] | None = None
    dcp_size: Annotated[int, Field(gt=0)] | None = None
    attention_backend: str | None = Field(default=None, description="e.g. 'dsa'")
    dsa_prefill_backend: str | None = Field(default=None, description="e.g. 'tilelang'")
    dsa_decode_backend: str | None = Field(default=None, description="e.g. 'tilelang'")
    speculative: SpeculativeConfig | None = None
    enable_deterministic_inference: bool = False
    enable_hisparse: bool = False
    multi_node: MultiNodeConfig = Field(default_factory=MultiNodeConfig)


def sglang_settings(server: ServerConfig) -> SglangSettings:
    """``server.settings`` as SGLang's model (already validated by the resolve step; ValidationError for a
    server that was not resolved and holds an invalid one)."""
    return SglangSettings.model_validate(server.settings)
