"""The data ``explorer.html`` embeds: an index of every sample and, per sample, a compressed card.

The page is one file that must open from ``file://`` with no server, so the data travels inside it as one
``<script type="application/json">`` block (``evalpipe.explore.page``).  The index is small and plain (the
queue, the filters and the search read it at once); each card is gzip-compressed JSON in base64, decoded by
the browser only when the sample is opened.  ``ExplorerRecord`` is what ``summary.json`` says about the file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.artifacts.schema.compare import PlacementCell
from evalpipe.artifacts.schema.reviews import FlipKind


class Truncation(Row):
    """A long text kept as its head and tail; the whole is in the run's recorded response."""

    chars: int = Field(description="Characters of the whole text.")
    kept_head: int
    kept_tail: int
    responses_line: int | None = Field(
        default=None,
        description="1-based line of the response in ``zcat responses.jsonl.gz`` (one member, one line).",
    )
    body_sha256: str | None = Field(default=None, description="sha256 of that response body as recorded.")
    evidence_windows: int | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Windows kept around the evidence of a generated long-context item (the KV-cache probe) "
        "between the head and the tail.",
    )


class AttemptInfo(Row):
    attempt_id: str
    x_request_id: str | None = None
    response_id: str | None = None
    status: int | None = None
    seed: int | None = Field(default=None, description="The seed the request carried (requests.jsonl).")
    finish_reason: str | None = None
    latency_s: float | None = None
    failure: str | None = Field(
        default=None, description="How the attempt failed (HTTP 500, a transport error); None: ok."
    )
    used: bool = Field(description="The response EvalScope scored (one per attempt of the sample).")


class RepeatInfo(Row):
    attempt: int
    score: float | None = None
    failure_class: str
    correct: bool
    response_sha256: str | None = None
    request_seed: int | None = None


class ArmCard(Row):
    """One arm's answer to the sample."""

    label: str
    answer: str | None = Field(
        default=None, description="The final answer (reasoning split off); None: no response."
    )
    answer_cut: Truncation | None = None
    reasoning: str = ""
    reasoning_cut: Truncation | None = None
    budget_cut: bool = Field(description="The output budget ended the response (finish_reason length).")
    extracted: str | None = None
    score: float | None = None
    correct: bool
    failure_class: str
    failure_detail: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_s: float | None = None
    response_sha256: str | None = None
    attempts: list[AttemptInfo]
    repeats: list[RepeatInfo]


class TextSpan(Row):
    """Characters ``[start, end)`` of a shown text."""

    start: int
    end: int


class PromptMessage(Row):
    role: str
    content: str
    evidence: list[TextSpan] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="Where the evidence of a generated item (the KV-cache probe) sits in ``content``: highlighted.",
    )


class SampleCard(Row):
    """Everything shown for one sample (compressed in the page)."""

    prompt: list[PromptMessage] = Field(description="The messages as sent (the first arm's prediction).")
    prompt_cut: Truncation | None = None
    question: str | None = Field(
        default=None,
        description="The record's question as materialised for EvalScope (index_map.json), when the messages as "
        "sent are not in the run (its EvalScope predictions removed); None otherwise.",
    )
    prompt_sha256: str | None = Field(
        default=None, description="The prompt hash recorded when the entry was rendered."
    )
    prompt_verified: bool | None = Field(
        default=None,
        description="The shown messages hash to prompt_sha256 and every arm sent that hash; None: no prompt.",
    )
    gold: str | None = None
    record_sha256: str
    rank_key: str
    rank: int = Field(description="1-based position in its stratum's hash ranking (the selection order).")
    arms: list[ArmCard]


class SampleIndex(Row):
    """The plain part of a sample: what the queue, the filters and the search read."""

    key: str = Field(description="benchmark/source_id: the sample's anchor in the page.")
    benchmark: str
    stratum: str
    source_id: str
    flip: FlipKind | None = Field(default=None, description="Paired pages only.")
    aa_flip: bool = Field(description="The control and its repeat (A/A) disagree on this sample: noise.")
    correct: list[bool]
    failure: list[str]
    output_tokens: list[int | None]
    budget_cut: list[bool]
    search: str = Field(description="Prompt and answers, for the regex (heads when long).")
    search_partial: bool = Field(description="search holds heads only: the regex also reads the card.")
    truncated: bool = Field(description="Some text of the card is kept as head and tail only.")
    card: str = Field(description="base64 of the gzip-compressed SampleCard JSON.")


class BlockStats(Row):
    """The paired statistics of one benchmark (or pool, or all), shown beside the queue."""

    block: str
    n_pairs: int
    regressions: int = Field(description="Control right, test wrong.")
    improvements: int
    p_value: float | None
    test: str | None
    ci_low_pts: float | None = Field(description="A descriptive interval of test - control (ci_label); no verdict reads it.")
    ci_high_pts: float | None
    ci_label: str = Field(
        default="descriptive",
        description="What ci_low/high_pts are: 'Bonett-Price 95 %, descriptive' or 'bootstrap 95 %, descriptive'.",
    )
    mde_pts: float | None
    non_inferiority: str | None
    verdict: str | None = Field(
        default=None,
        description="The gate's verdict with the interval that decided it, named (e.g. 'non-inferior [-2.6, +5.9] "
        "(fixed look at z* = 2.29)'); None without a margin.",
    )
    operating: str | None = Field(
        default=None,
        description="The gate's operating characteristic at the discordance measured here, in words.",
    )
    design: str | None = Field(
        default=None,
        description="The measured discordance beside the design's assumption, in words (compare.json design_check).",
    )
    dropped: str | None = Field(
        default=None, description="Units left out (dropped before generation in both arms) and why, in words."
    )
    aa: str | None = Field(description="The A/A noise in words.")
    aa_flips: int | None
    line: str
    placement_grid: list[PlacementCell] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="A generated benchmark's length × placement cells (compare.json by_placement).",
    )


class ArmInfo(Row):
    label: str
    run_dir: str
    run_id: str | None


class NumericsTop(Row):
    """One row of a prompt's first generated step: a token and its log-probability in each arm."""

    token: str
    control: float | None
    test: float | None
    aa: float | None = None


class NumericsPrompt(Row):
    """One prompt of the numerics probe, its divergences and its first step's top-k in the arms side by side."""

    id: str
    length: int
    placement: str
    prompt_tokens: int | None
    ab: float | None = Field(description="The primary divergence of the arm under test from the control.")
    aa: float | None = Field(description="The same of the A/A arm (None without one).")
    first_divergence: int | None
    text_control: str | None
    text_test: str | None
    top: list[NumericsTop] = Field(
        description="The control's top-k of the first step, then tokens only the test has."
    )


class NumericsView(Row):
    """The explorer's numerics panel: the verdict sentence and the prompts with the largest A/B divergence."""

    sentence: str
    primary: str
    prompts: list[NumericsPrompt]


class ExplorerData(Artifact):
    schema_version: int = 2
    title: str
    mode: Literal["paired", "single"]
    arms: list[ArmInfo] = Field(description="Paired: the control first, then the arm under test.")
    manifest_sha256: str
    seed: int
    limit_bytes: int
    tier: str = Field(
        description="How texts were kept: in full, or the unflipped samples cut to head and tail."
    )
    verify_command: str = Field(description="Re-derives the selection; the page appends the sample's key.")
    replay_command: str = Field(description="Serves the run's recorded responses again and re-scores them.")
    stats: list[BlockStats]
    samples: list[SampleIndex]
    numerics: NumericsView | None = Field(
        default=None,
        description="The numerics probe's largest A/B divergences (compare.json's numerics block).",
    )


class ExplorerRecord(Row):
    """What ``summary.json`` records about ``explorer.html`` (the report says what was truncated)."""

    file: str = Field(description="Relative to the run directory.")
    paired_file: str | None = Field(
        default=None, description="The paired comparison's explorer beside the variants (relative), if any."
    )
    samples: int
    truncated: int = Field(description="Samples with a text kept as head and tail only.")
    truncated_ids: list[str] = Field(description="benchmark/source_id of those samples (first 50).")
    tier: str
    bytes: int
    limit_bytes: int
