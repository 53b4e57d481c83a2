"""What every part of a comparison reads: the runs' outcome rows by (benchmark, source id), a sample's score by
the summary's rule, a score with its Wilson interval, the discordance of two arms, the drops decided before
generation and why, and the refusal."""

from __future__ import annotations

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import (
    Discordance,
    DropReason,
    ScoreWithInterval,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow, is_correct
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.errors import EvalpipeError
from evalpipe.stats.intervals import wilson_interval


class CompareRefused(EvalpipeError):
    """The two runs are not a valid pair (different manifest or prompts)."""


def run_label(rundir: RunDir, fallback: str) -> str:
    try:
        run = read_model(rundir.run_record, RunRecord)
    except EvalpipeError:
        return fallback
    return run.variant_label or run.variant or fallback


def is_correct_int(row: OutcomeRow | None) -> int:
    """1 when the summary counts the row correct (one rule: budget-exhausted answers are incorrect)."""
    return int(is_correct(row))


def score_with_interval(correct: int, n: int) -> ScoreWithInterval:
    ci = wilson_interval(correct, n)
    return ScoreWithInterval(
        correct=correct,
        scored=n,
        score=correct / n if n else None,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


Outcomes = dict[tuple[str, str], OutcomeRow]

#: An entry dropped before generation: why, and the context (tokens) it was dropped against (None: unknown).
Drops = dict[tuple[str, str], tuple[DropReason, int | None]]


def drop_reasons(rundir: RunDir) -> Drops:
    """Every entry the run dropped before generation (``context_fit.json``'s overlong entries it did not send),
    with the reason: the served context when the line naming the lengths beyond it is recorded
    (``PromptFit.reason``), else the context fit's estimate against the configured context.  Empty without a
    readable ``context_fit.json``."""
    from evalpipe.artifacts.schema.context_fit import ContextFit

    if not rundir.context_fit.is_file():
        return {}
    try:
        fit = read_model(rundir.context_fit, ContextFit)
    except EvalpipeError:
        return {}
    return {
        (p.benchmark, p.source_id): (
            ("served context", fit.served_context_length)
            if p.reason is not None
            else ("context fit", fit.context_length)
        )
        for p in fit.overlong
    }


def discordance(first: list[list[float]], second: list[list[float]]) -> Discordance:
    from evalpipe.stats.paired import paired_difference

    diff = paired_difference(first, second)
    return Discordance(
        n_pairs=diff.n_pairs,
        first_better=diff.test_better,
        second_better=diff.control_better,
        discordant=diff.test_better + diff.control_better,
        second_moment=diff.second_moment,
    )


def responses_differed(rows: list[tuple[OutcomeRow | None, OutcomeRow | None]]) -> tuple[int, int]:
    """(compared, differed): samples whose attempt-0 responses both have a hash, and those that differ."""
    both = [(x.response_sha256, y.response_sha256) for x, y in rows if x and y]
    pairs = [(hx, hy) for hx, hy in both if hx and hy]
    return len(pairs), sum(1 for hx, hy in pairs if hx != hy)
