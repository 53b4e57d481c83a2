"""What the numerics probe costs, before any server exists (``evalpipe plan``): requests, prompt tokens and
generated tokens per arm.  Prefill-heavy and decode-light: every prompt is read once and answered with a few
tokens (chat) or one (teacher forcing)."""

from __future__ import annotations

from dataclasses import dataclass

from evalpipe.config.numerics import NumericsConfig
from evalpipe.numerics.prompts import placements


@dataclass(frozen=True)
class ProbeCost:
    requests: int
    prompt_tokens: int
    generated_tokens: int
    edges_known: bool  # False: the edges come from the server, and each adds 3 placements per length


def probe_cost(cfg: NumericsConfig) -> ProbeCost:
    """Per arm, with the config's edges (none when they are the server's: interior prompts only counted)."""
    edges = (
        {}
        if cfg.edges is None
        else {k: v for k, v in (("page", cfg.edges.page), ("chunk", cfg.edges.chunk)) if v}
    )
    cells = [n for length in cfg.lengths for _, n in placements(length, edges)]
    per_prompt = cfg.generated_tokens if cfg.ask == "chat" else 1
    return ProbeCost(
        requests=len(cells) * cfg.prompts_per_cell,
        prompt_tokens=sum(cells) * cfg.prompts_per_cell,
        generated_tokens=len(cells) * cfg.prompts_per_cell * per_prompt,
        edges_known=cfg.edges is not None,
    )


def cost_line(cfg: NumericsConfig, arms: int) -> str:
    """``evalpipe plan``'s line for the probe."""
    c = probe_cost(cfg)
    more = (
        ""
        if c.edges_known
        else "; the page and chunk edges the server reports add 3 prompts per edge and length (not counted)"
    )
    return (
        f"numerics ({cfg.ask}): {c.requests} requests per arm × {arms} arm(s), {c.prompt_tokens:,} prompt tokens "
        f"and {c.generated_tokens:,} generated tokens per arm (prefill-heavy, decode-light){more}"
    )
