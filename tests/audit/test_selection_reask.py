"""The response-selection rule counts attempts by their seed: an attempt a resume asked again with its own seed
(EvalScope had not saved its answer when the run was interrupted) is that attempt again, not a selection — and
a choice among more attempts than the sample holds is still a violation."""

from __future__ import annotations

from evalpipe.artifacts.schema.outcomes import AttemptOutcome, OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.audit.linkage import PromptGroup


def _attempt(attempt_id: str, second: int, seed: int | None) -> RequestAttempt:
    return RequestAttempt(
        attempt_id=attempt_id,
        seq=second,
        started_at=f"2026-12-07T12:00:{second:02d}+00:00",
        ended_at=f"2026-12-07T12:00:{second:02d}.500000+00:00",
        method="POST",
        path="/v1/chat/completions",
        seed=seed,
        status=200,
        body_sha256="0" * 64,
    )


def _group(attempts: list[RequestAttempt], asked: int) -> PromptGroup:
    row = OutcomeRow.model_construct(
        benchmark="gsm8k", source_id="a", attempts=[AttemptOutcome.model_construct() for _ in range(asked)]
    )
    return PromptGroup("sha", samples=[row], attempts=attempts)


def test_an_attempt_asked_again_with_its_seed_replaces_that_attempt() -> None:
    # attempts 0 and 1 answered; the run was killed before EvalScope saved attempt 1; the resume asked it again:
    # attempt 1 is either delivery of its seed (which one EvalScope kept is no choice), attempt 0 still counts
    group = _group([_attempt("a0", 0, 100), _attempt("a1", 1, 101), _attempt("a1-again", 2, 101)], asked=2)
    assert group.expected_ids() == {"a0", "a1", "a1-again"}
    assert group.reasked == 1 and group.duplicates == 1


def test_a_choice_among_more_attempts_than_asked_is_still_flagged() -> None:
    # four seeds answered, two used: the rule allows only the latest two attempts, whichever scored better
    group = _group([_attempt(f"a{i}", i, 100 + i) for i in range(4)], asked=2)
    assert group.expected_ids() == {"a2", "a3"}
    assert group.reasked == 0


def test_without_seeds_the_last_successes_are_the_rule() -> None:
    group = _group([_attempt("a0", 0, None), _attempt("a1", 1, None), _attempt("a1-again", 2, None)], asked=2)
    assert group.expected_ids() == {"a1", "a1-again"}
