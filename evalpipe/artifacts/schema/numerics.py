"""``numerics.json`` (one arm's next-token log-probabilities on the probe's prompts) and the paired numerics
block of ``compare.json`` (``evalpipe.numerics``).

The per-arm file holds what the server said, parsed from the responses the recording proxy kept
(``numerics/requests.jsonl``, ``numerics/responses.jsonl.gz``): per prompt its id, length and placement, the
prompt's sha256 and the server's own prompt-token count, and per step the chosen token with its
log-probability and the top-k.  The comparison holds, per prompt, the divergences of the arm under test (A/B)
and of the relaunched control (A/A) from the control, and per group the medians and the signed-rank test of
A/B above A/A with the interval that decides it (``evalpipe.stats.divergence``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.config.numerics import NumericsAsk, NumericsConfig

__all__ = [
    "DivergenceName",
    "NumericsAnswer",
    "NumericsComparison",
    "NumericsGate",
    "NumericsGroup",
    "NumericsPair",
    "NumericsProbe",
    "NumericsShift",
    "NumericsStep",
    "PromptDivergence",
    "SpreadOf",
]

#: The per-prompt divergences: ``kl0`` KL of the first generated token's top-k (+ tail) distribution;
#: ``dlp0`` |Δ log p| of the control's first token; ``kl_pre``/``dlp_pre`` their means over the generated
#: steps up to and including the first step whose greedy token differs (identical contexts);
#: ``kl_forced``/``dlp_forced`` their means over the teacher-forced continuation.
DivergenceName = Literal["kl0", "dlp0", "kl_pre", "dlp_pre", "kl_forced", "dlp_forced"]


class NumericsStep(Row):
    """One position: the token there (generated, or the fixed continuation's), its log-probability, and
    the top-k log-probabilities by decoded text (entries of one text summed)."""

    token: str
    logprob: float | None
    top: dict[str, float]


class NumericsAnswer(Row):
    """One prompt as one arm answered it."""

    id: str
    length: int = Field(description="The length the prompt was built for (tokens of the served prompt).")
    placement: str = Field(
        description="'interior', or EDGE-1 / EDGE+0 / EDGE+1: the prompt ends one token before, on or after a "
        "multiple of the edge (page, chunk)."
    )
    prompt_sha256: str = Field(description="sha256 of the messages (chat) or the token ids (teacher_forced).")
    prompt_tokens: int | None = Field(
        description="The prompt's tokens as built (the probe's tokenizer); None without one."
    )
    server_prompt_tokens: int | None = Field(description="usage.prompt_tokens as the server reported it.")
    attempt_id: str | None = Field(description="The recording proxy's attempt (numerics/requests.jsonl).")
    status: int | None = None
    error: str | None = Field(default=None, description="Why this prompt has no steps (one line).")
    text: str | None = Field(default=None, description="The generated text (chat).")
    generated: list[NumericsStep] = Field(default_factory=list)
    forced: list[NumericsStep] = Field(
        default_factory=list, description="teacher_forced: the continuation's positions, in order."
    )


class NumericsProbe(Artifact):
    """``numerics.json``: one arm's answers to the probe, in the order they were sent."""

    schema_version: int = 1
    config: NumericsConfig
    ask: NumericsAsk
    edges: dict[str, int] = Field(description="Edge name → tokens, as used for the placements.")
    edges_from: Literal["config", "server_info", "none"]
    tokenizer: str = Field(description="'words', or the sha256 of the tokenizer.json that counted tokens.")
    dropped_lengths: list[int] = Field(
        default_factory=list, description="Configured lengths the served context cannot hold."
    )
    cache_flushed: bool = False
    seconds: float = Field(ge=0, description="Wall time of the probe's requests.")
    prompt_tokens_sent: int = Field(
        ge=0, description="Prompt tokens of every request, as the server counted."
    )
    answers: list[NumericsAnswer]

    @property
    def answered(self) -> dict[str, NumericsAnswer]:
        return {a.id: a for a in self.answers if a.error is None}


class PromptDivergence(Row):
    """One prompt's divergences of one arm from the control (None where the ask has no such step)."""

    kl0: float | None = None
    dlp0: float | None = None
    kl_pre: float | None = None
    dlp_pre: float | None = None
    kl_forced: float | None = None
    dlp_forced: float | None = None
    first_divergence: int | None = Field(
        default=None, description="First generated step whose greedy token differs; None: none of them."
    )
    steps_compared: int = Field(ge=0, description="Steps on identical contexts that the means run over.")
    identical: bool = Field(description="Every compared log-probability and token equal, bit for bit.")
    same_text: bool | None = None

    def value(self, name: DivergenceName) -> float | None:
        out: float | None = getattr(self, name)
        return out


class NumericsPair(Row):
    """One prompt: the arm under test against the control (``ab``) and the relaunch against it (``aa``)."""

    id: str
    length: int
    placement: str
    server_prompt_tokens: int | None
    ab: PromptDivergence
    aa: PromptDivergence | None


class SpreadOf(Row):
    n: int
    median: float | None
    p90: float | None


class NumericsShift(Row):
    """The one-sided Wilcoxon signed-rank test of the primary divergence, A/B − A/A per prompt, above 0
    (zeros dropped), and the one-sided Hodges–Lehmann bound that is its inversion: ``above`` ⇔ ``lower > 0``
    ⇔ ``p_value ≤ alpha`` (``evalpipe.stats.divergence.shift_test``)."""

    n: int
    nonzero: int
    positive: int
    statistic: float = Field(description="T+: the sum of the ranks of the positive differences.")
    p_value: float
    alpha: float
    method: Literal["exact", "normal"]
    estimate: float | None = Field(description="Hodges–Lehmann estimate of the shift (nats or |Δ log p|).")
    lower: float | None = Field(
        description="One-sided 1 − alpha lower bound of the shift; None: not reachable."
    )
    verdict: Literal["above the A/A floor", "within the A/A floor", "not enough prompts"]

    @property
    def above(self) -> bool:
        """The verdict, read from the bound that decides it."""
        return self.lower is not None and self.lower > 0


class NumericsGroup(Row):
    """Prompts of one length, one placement, or all of them."""

    by: Literal["all", "length", "placement"]
    name: str
    n: int
    ab: dict[str, SpreadOf] = Field(description="Divergence name → median and p90 of A/B over the prompts.")
    aa: dict[str, SpreadOf] = Field(default_factory=dict, description="The same of A/A (empty without one).")
    identical_ab: int
    identical_aa: int | None
    shift: NumericsShift | None = Field(
        description="The deciding test of the primary divergence; None without A/A."
    )


class NumericsGate(Row):
    """``numerics.fail_above``: passed unless the deciding bound exceeds it (failed without an A/A arm)."""

    fail_above: float
    lower: float | None
    passed: bool
    has_aa: bool


class NumericsComparison(Row):
    """The numerics block of ``compare.json``: the arm under test and the relaunch against the control."""

    ask: NumericsAsk
    primary: DivergenceName = Field(description="The divergence the test and the gate read.")
    label_test: str
    label_control: str
    label_aa: str | None
    alpha: float
    prompts: int = Field(description="Prompts every compared arm answered with the same prompt.")
    missing: list[str] = Field(default_factory=list, description="Prompt ids some arm did not answer.")
    mismatched: list[str] = Field(
        default_factory=list, description="Prompt ids whose prompt differed between the arms (left out)."
    )
    prompt_tokens: int = Field(description="Prompt tokens one arm sent, as the server counted.")
    seconds: dict[str, float] = Field(description="Arm label → wall time of its probe.")
    groups: list[NumericsGroup]
    pairs: list[NumericsPair]
    gate: NumericsGate | None = None

    def overall(self) -> NumericsGroup | None:
        return next((g for g in self.groups if g.by == "all"), None)
