"""The ``numerics:`` section of a run config: the next-token distributions of every arm on the same seeded
prompts, compared paired against the A/A arm (``evalpipe.numerics``).

A KV-cache or attention-kernel change moves the model's next-token distribution before it flips an answer:
on SGLang 0.5.17 (SmolLM2, one H100) FP8 KV moved the first token's top-20 in 59 of 60 prompts while 11 of 60
greedy answers changed; on llama.cpp q4_0 KV moved it in 40 of 40 while no answer changed.  The probe asks
each prompt once per arm, at temperature 0, one at a time in a fixed order, right after the server is up,
for a few generated tokens with their top-k log-probabilities (``ask: chat``, every OpenAI-compatible
server) or for the log-probabilities of a fixed continuation inside the prompt (``ask: teacher_forced``,
SGLang's ``/generate``).  Nothing here is a benchmark score: EvalScope is not involved.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from evalpipe.config.base import Strict
from evalpipe.config.speed import JSONScalar

__all__ = ["NumericsAsk", "NumericsConfig", "NumericsEdges"]

#: How the probe asks: OpenAI chat ``logprobs``/``top_logprobs`` (llama.cpp, SGLang, vLLM), or SGLang's
#: native ``/generate`` with ``return_logprob`` over a fixed continuation (teacher forcing).
NumericsAsk = Literal["chat", "teacher_forced"]


class NumericsEdges(Strict):
    """The token edges prompts end around: each prompt length is placed one token before, on and one token
    after a multiple of each edge (``page``: the KV page size; ``chunk``: the prefill chunk).  Unset: read
    from the server's ``/server_info`` (SGLang's ``page_size`` and ``chunked_prefill_size``); an edge of 1
    or none at all adds no placement."""

    page: Annotated[int, Field(gt=0)] | None = None
    chunk: Annotated[int, Field(gt=0)] | None = None


class NumericsConfig(Strict):
    """The numerics probe every arm runs right after its server is up (before the evaluation)."""

    ask: NumericsAsk = Field(
        default="chat", description="chat (any OpenAI server) or teacher_forced (SGLang)."
    )
    lengths: Annotated[list[Annotated[int, Field(ge=32)]], Field(min_length=1)] = Field(
        default_factory=lambda: [256, 1024, 2048, 4096],
        description="Served prompt lengths in tokens (chat template included); lengths that do not fit the "
        "served context with the generated tokens are dropped with one line naming them.",
    )
    prompts_per_cell: Annotated[int, Field(gt=0, le=64)] = Field(
        default=3, description="Prompts per (length, placement): different seeded text, the same length."
    )
    edges: NumericsEdges | None = Field(
        default=None, description="Page and chunk edges the placements use; unset: the server's own."
    )
    generated_tokens: Annotated[int, Field(gt=0, le=64)] = Field(
        default=8,
        description="chat: greedy tokens generated per prompt; the steps before the first differing token are "
        "compared on identical contexts.",
    )
    continuation_tokens: Annotated[int, Field(gt=0, le=512)] = Field(
        default=64,
        description="teacher_forced: tokens at the end of the prompt whose log-probabilities count.",
    )
    top_k: Annotated[int, Field(gt=0, le=20)] = Field(
        default=20, description="Top log-probabilities per step (OpenAI's top_logprobs allows at most 20)."
    )
    seed: int = Field(default=7, description="The prompts' text derives from it (and each prompt's id).")
    tokenizer: str | None = Field(
        default=None,
        description="The served model's tokenizer (a directory with tokenizer.json and chat_template.jinja, or "
        "gguf:FILE / gguf:smollm2): prompts then have exact token lengths; teacher_forced needs it. Unset "
        "(chat only): lengths in words, placements interior only; the server's usage counts are recorded.",
    )
    extra_request_body: dict[str, JSONScalar] = Field(
        default_factory=dict,
        description="Merged into every request body (e.g. {cache_prompt: false} for llama.cpp).",
    )
    flush_cache: bool = Field(
        default=False,
        description="POST /flush_cache (SGLang) before the probe, so every arm starts from an empty prefix cache.",
    )
    alpha: Annotated[float, Field(gt=0, lt=0.5)] = Field(
        default=0.05, description="One-sided level of the signed-rank test of A/B above A/A."
    )
    fail_above: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="Gate (off when unset): the run fails when the one-sided lower bound of the shift of the "
        "primary divergence, A/B over A/A, exceeds this many nats (0: whenever A/B is significantly above A/A).",
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = Field(default=600.0, description="Per request.")

    @model_validator(mode="after")
    def _teacher_forcing_needs_tokens(self) -> NumericsConfig:
        if self.ask == "teacher_forced" and self.tokenizer is None:
            raise ValueError("ask teacher_forced sends token ids: set numerics.tokenizer")
        if self.ask == "teacher_forced" and min(self.lengths) <= self.continuation_tokens + 16:
            raise ValueError("every length must exceed continuation_tokens + 16 (the prompt before it)")
        if "stream" in self.extra_request_body and self.extra_request_body["stream"] is not False:
            raise ValueError("extra_request_body.stream: the probe reads one JSON answer (false)")
        return self

    def prompt_count(self, placements_per_length: int) -> int:
        """Requests one arm sends for ``placements_per_length`` placements of every length."""
        return len(self.lengths) * placements_per_length * self.prompts_per_cell
