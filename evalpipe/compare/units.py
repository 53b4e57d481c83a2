"""What every part of a comparison reads: the runs' outcome rows by (benchmark, source id), a sample's score by
the summary's rule, a score with its Wilson interval, the discordance of two arms, the drops decided before
generation and why, and the refusal; ``PairedOutcomes`` (the rows a block is judged from) and ``BlockGate`` (what
it is judged against), the two objects every block function takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import (
    Discordance,
    DropReason,
    ScoreWithInterval,
)
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.artifacts.schema.outcomes import OutcomeRow, is_correct
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.config.models import SequentialConfig
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

#: A block's scoring rule: the gate's paired rule (A/B) or the summary's (an A/A-only record, no arm under test).
Scoring = Literal["paired rule", "summary rule"]


@dataclass(frozen=True)
class PairedOutcomes:
    """The outcome rows a block is judged from, by (benchmark, source id): ``test`` (A, the arm under test),
    ``control`` (B), and the A/A pair when one ran — ``repeat`` (a repeat run) of ``repeated`` (the run it
    repeats; None: the control).  ``drops``: why units were dropped before generation; ``generations``: each
    unit's generation after ``--extend`` (None: one run); ``scoring``: the rule every number of the block
    uses."""

    test: Outcomes
    control: Outcomes
    repeat: Outcomes | None = None
    repeated: Outcomes | None = None
    drops: Drops = field(default_factory=dict)
    generations: Mapping[tuple[str, str], int] | None = None
    scoring: Scoring = "paired rule"


@dataclass(frozen=True)
class BlockGate:
    """What one block is judged against: its non-inferiority margin (None: no gate), the must-catch drop its
    operating characteristic reports, the one-sided α of the fixed look,
    the sequential rule with its sequence seed (None: a fixed design only) and what the run's sending did —
    ``planned`` units when the rule stopped sending inside the run, the ``stop_unit`` it crossed at there, and
    ``plan_sizes``, the units per generation after ``--extend``."""

    margin_pts: float | None = None
    must_catch_pts: float | None = None
    fixed_alpha: float = 0.025
    sequential: tuple[SequentialConfig, int] | None = None
    planned: int | None = None
    stop_unit: int | None = None
    plan_sizes: list[int] | None = None


def drop_reasons(rundir: RunDir) -> Drops:
    """Every entry the run dropped before generation (``context_fit.json``'s overlong entries it did not send),
    with the reason: the served context when the line naming the lengths beyond it is recorded
    (``PromptFit.reason``), else the context fit's estimate against the configured context.  Empty without a
    readable ``context_fit.json``."""
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
    # import cost: numpy, scipy, statsmodels (stats.paired), only on this path
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
