"""``context_fit.json`` — the preflight's token estimate of every sampled prompt against the context length.

A prompt whose estimate plus its output budget exceeds the model's context would be truncated or
rejected by the server; the preflight refuses the run, or — with ``drop_overlong`` consent for that
benchmark — drops those entries before materialisation and lists them here (their outcome rows are
``context_overflow`` and count as incorrect).  A benchmark built to context lengths (kv_probe) is capped
again once the server is up, at the context its ``/server_info`` resolved: the lengths beyond it are dropped
the same way, each with the line saying which lengths and why (``reason``, ``served_drops``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row


class PromptFit(Row):
    benchmark: str
    source_id: str
    stratum: str
    prompt_tokens: int = Field(description="Estimated prompt tokens (record text + template margin).")
    max_tokens: int = Field(description="Output budget of the benchmark.")
    fits: bool
    reason: str | None = Field(
        default=None,
        description="Why it was dropped when not by this estimate: the line naming the lengths beyond the "
        "context the server resolved (a benchmark built to lengths, e.g. kv_probe); None: by the estimate.",
    )


class BenchmarkFit(Row):
    benchmark: str
    checked: int
    largest_prompt_tokens: int
    overlong: int
    dropped: int = Field(description="Overlong entries dropped with the benchmark's drop_overlong consent.")


#: How prompt tokens were counted: the model's own tokenizer, or a characters-per-token rule.
Estimator = Literal["tokenizer", "heuristic"]


class ContextFit(Artifact):
    schema_version: int = 1
    context_length: int | None = Field(
        description="Tokens the server accepts (prompt + output); None: unknown."
    )
    context_length_source: str = Field(description="model.context_length, or the model's config.json field.")
    estimator: Estimator
    estimator_detail: str = Field(description="Which tokenizer file, or the heuristic's rule.")
    template_margin_tokens: int
    benchmarks: list[BenchmarkFit]
    overlong: list[PromptFit] = Field(description="Every prompt that does not fit, dropped or not.")
    served_context_length: int | None = Field(
        default=None,
        description="The context per request the server resolved (/server_info), once it was up; None: it "
        "reports none, or no benchmark asked for it.",
    )
    served_context_source: str | None = Field(
        default=None, description="The /server_info key served_context_length was read from."
    )
    served_drops: list[str] = Field(
        default_factory=list,
        description="One line per benchmark whose lengths beyond the served context were dropped before any "
        "item was sent: which lengths, and the context and its source.",
    )
