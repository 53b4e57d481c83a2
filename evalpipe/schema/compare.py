"""``compare.json`` — a paired comparison of two runs on the identical manifest."""

from __future__ import annotations

from pydantic import Field

from evalpipe.schema.base import Artifact, Row


class ScoreWithInterval(Row):
    correct: int
    scored: int
    score: float | None
    ci_low: float | None
    ci_high: float | None


class Flip(Row):
    benchmark: str
    source_id: str
    stratum: str
    score_a: float | None
    score_b: float | None
    failure_a: str
    failure_b: str


class PairedBenchmark(Row):
    benchmark: str
    n_pairs: int
    a: ScoreWithInterval
    b: ScoreWithInterval
    difference: float | None = Field(description="score_a - score_b (fraction; x100 for points).")
    diff_ci_low: float | None
    diff_ci_high: float | None
    both_correct: int
    a_only: int = Field(description="Discordant: correct in A, wrong in B.")
    b_only: int = Field(description="Discordant: wrong in A, correct in B.")
    both_wrong: int
    mcnemar_p: float | None = Field(
        description="Exact McNemar (binomial) two-sided p on the discordant pairs."
    )
    flips: list[Flip]
    prompt_hash_unverified: int = Field(
        default=0, description="Pairs where one side has no recorded prompt hash (e.g. no prediction)."
    )
    line: str = Field(
        description='Report line, e.g. "FP8 raw vs BF16 KV: -1.9 pts [-6.3, 2.5], McNemar p = 0.62, 3 flips".'
    )
    length: str | None = Field(
        default=None, description="Context-length bucket of this block (a block inside by_length)."
    )
    by_length: list[PairedBenchmark] = Field(
        default_factory=list,
        description="KV-cache view: the same paired statistics per context-length bucket (benchmarks with a "
        "length stratum), shortest first.",
    )


class CompareResult(Artifact):
    schema_version: int = 1
    run_a: str
    run_b: str
    label_a: str
    label_b: str
    manifest_sha256: str = Field(description="sha256 of the (identical) manifest.json of both runs.")
    bootstrap_resamples: int
    bootstrap_seed: int
    confidence: float = 0.95
    method: str
    benchmarks: list[PairedBenchmark]
    overall: PairedBenchmark | None = None
