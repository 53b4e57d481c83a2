"""One scoring rule for a paired unit (``evalpipe.stats.unit_scores``), applied alike by the in-run stop and compare.

* the table: every (test, control) state pair, a unit failed in both arms is d = −1 (never a tie), a unit
  dropped before generation in both arms is no unit, one dropped in one arm only counts as no answer there;
* the in-run stop's records (``SequenceRecord.attempt_state`` from the worker's events) and compare's rows
  (``attempt_states``) give the same unit values for the same answers, a budget-exhausted one included, also
  when it came from EvalScope's cache with a review score of 1.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import get_args

import pytest

from evalpipe.artifacts.schema.outcomes import AttemptOutcome, OutcomeRow, attempt_states
from evalpipe.artifacts.schema.sequential import SequenceRecord
from evalpipe.evalscope_bridge.patches import cached_sample
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.run.sequential_stop import sequence_record
from evalpipe.stats.unit_scores import (
    AttemptState,
    PairedState,
    arm_scores,
    arm_value,
    dropped_in_both,
    unit_difference,
)

TABLE: dict[tuple[PairedState, PairedState], float] = {
    ("correct", "correct"): 0.0,
    ("correct", "wrong"): 1.0,
    ("correct", "no_answer"): 0.0,  # the control's missing answer is not held for the test arm
    ("wrong", "correct"): -1.0,
    ("wrong", "wrong"): 0.0,
    ("wrong", "no_answer"): -1.0,
    ("no_answer", "correct"): -1.0,
    ("no_answer", "wrong"): 0.0,
    ("no_answer", "no_answer"): -1.0,  # failed in both arms: the most adverse value, not a tie
    # dropped before generation in one arm only: a missing answer there, never for the test arm
    ("dropped", "correct"): -1.0,
    ("dropped", "wrong"): 0.0,
    ("dropped", "no_answer"): -1.0,
    ("correct", "dropped"): 0.0,
    ("wrong", "dropped"): -1.0,
    ("no_answer", "dropped"): -1.0,
}


def test_the_table_covers_every_pair_of_states() -> None:
    states = get_args(PairedState)
    assert set(TABLE) | {("dropped", "dropped")} == {(t, c) for t in states for c in states}
    for (test, control), d in TABLE.items():
        assert unit_difference([test], [control]) == d, (test, control)
        assert not dropped_in_both([test], [control])


def test_a_unit_dropped_in_both_arms_is_no_unit() -> None:
    """Dropped before generation in both arms (every attempt): no value at all, not −1 and not a tie."""
    assert dropped_in_both(["dropped"], ["dropped"])
    assert dropped_in_both(["dropped"] * 3, ["dropped"])
    assert not dropped_in_both(["dropped", "correct"], ["dropped"])
    assert not dropped_in_both([], [])
    with pytest.raises(ValueError, match="dropped before generation in both arms"):
        unit_difference(["dropped"], ["dropped"])
    assert set(get_args(PairedState)) - set(get_args(AttemptState)) == {"dropped"}


def test_no_answer_is_never_evidence_for_non_inferiority() -> None:
    """Replacing any attempt's state by no_answer never raises d: it can only count against the test arm."""
    for (test, control), d in TABLE.items():
        assert unit_difference(["no_answer"], [control]) <= d
        assert unit_difference([test], ["no_answer"]) <= d


def test_repeats_average_every_attempt_and_a_unit_needs_one() -> None:
    assert arm_scores(["correct", "no_answer", "wrong"], "test") == [1.0, 0.0, 0.0]
    assert arm_scores(["correct", "no_answer", "wrong"], "control") == [1.0, 1.0, 0.0]
    assert unit_difference(["correct", "no_answer"], ["correct", "correct"]) == pytest.approx(-0.5)
    assert arm_value(["no_answer"] * 4, "control") == 1.0
    with pytest.raises(ValueError, match="at least one attempt"):
        arm_value([], "test")


# ------------------------------------------------------------------ the same answers, in both places
def _row(failure_class: str, score: float | None, **extra: object) -> OutcomeRow:
    return OutcomeRow.model_validate(
        {
            "benchmark": "gsm8k",
            "subset": "main",
            "index": 0,
            "source_id": "s0",
            "stratum": "all",
            "prediction_present": score is not None,
            "review_present": score is not None,
            "n_predictions": 1,
            "n_reviews": 1,
            "failure_class": failure_class,
            "score": score,
            **extra,
        }
    )


def _state_in_run(event: Sample) -> AttemptState | None:
    """What the stopper judges: the worker's event through the exchange record."""
    rec = sequence_record(event)
    return SequenceRecord.model_validate_json(rec.model_dump_json()).attempt_state()


def _event(ok: bool, correct: float | None) -> Sample:
    return Sample(benchmark="gsm8k", subset="main", index=0, ok=ok, correct=correct)


def _budget_state() -> SimpleNamespace:
    choice = SimpleNamespace(stop_reason="max_tokens")
    return SimpleNamespace(output=SimpleNamespace(choices=[choice]))


#: One answer as the worker reports it and as outcomes.jsonl records it after the run.
CASES: list[tuple[str, Sample, OutcomeRow, AttemptState]] = [
    ("right", _event(True, 1.0), _row("ok", 1.0), "correct"),
    ("wrong", _event(True, 0.0), _row("wrong", 0.0), "wrong"),
    # the worker's _correct counts a budget-exhausted answer 0; outcomes classifies it budget_exhausted
    ("budget exhausted, scored 1", _event(True, 0.0), _row("budget_exhausted", 1.0), "wrong"),
    ("request failed after its retries", _event(False, 0.0), _row("api_error", None), "no_answer"),
    (
        "cached, budget exhausted, review score 1",
        cached_sample(
            "gsm8k",
            "main",
            SimpleNamespace(sample_id=0, score=SimpleNamespace(main_value=1.0)),
            _budget_state(),
        ),
        _row("budget_exhausted", 1.0),
        "wrong",
    ),
    (
        "cached, right",
        cached_sample(
            "gsm8k", "main", SimpleNamespace(sample_id=0, score=SimpleNamespace(main_value=1.0)), None
        ),
        _row("ok", 1.0),
        "correct",
    ),
]


@pytest.mark.parametrize(("name", "event", "row", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_in_run_stop_and_compare_read_the_same_state(
    name: str, event: Sample, row: OutcomeRow, expected: AttemptState
) -> None:
    assert _state_in_run(event) == expected
    assert attempt_states(row) == [expected]


def test_compare_and_the_stopper_give_the_same_unit_values_for_the_same_records() -> None:
    """Every pair of the answers above, test × control: the difference the stopper computes from its records
    equals the one compare computes from the rows."""
    for _, ev_t, row_t, _ in CASES:
        for _, ev_c, row_c, _ in CASES:
            in_run = unit_difference(
                [_state_in_run(ev_t) or "no_answer"], [_state_in_run(ev_c) or "no_answer"]
            )
            after = unit_difference(attempt_states(row_t), attempt_states(row_c))
            assert in_run == after


def test_compare_keeps_every_attempt_and_a_missing_row_has_no_answer() -> None:
    attempts = [
        AttemptOutcome(attempt=0, index=0, score=1.0, failure_class="ok", correct=True),
        AttemptOutcome(attempt=1, index=1, score=None, failure_class="api_error", correct=False),
        AttemptOutcome(attempt=2, index=2, score=1.0, failure_class="budget_exhausted", correct=False),
        AttemptOutcome(attempt=3, index=3, score=None, failure_class="scoring_error", correct=False),
    ]
    row = _row("ok", 1.0, attempts=[a.model_dump() for a in attempts])
    assert attempt_states(row) == ["correct", "no_answer", "wrong", "no_answer"]
    assert attempt_states(None) == ["no_answer"]
    assert attempt_states(_row("context_overflow", None, index=-1)) == ["dropped"]  # dropped, never sent
    # an exchange file written before the state field: read from correct
    assert SequenceRecord(subset="main", index=0, correct=1.0, sent=True).attempt_state() == "correct"
    assert SequenceRecord(subset="main", index=0, correct=None, sent=False).attempt_state() is None
