"""One scoring rule for a paired unit: the value each attempt contributes to a non-inferiority judgement.

Both places that judge a paired comparison use these functions — the sequential rule inside a run
(``evalpipe.run.sequential_stop``) and after it (``evalpipe.compare.power``: the paired difference and the
sequential fields) — so a unit has one value wherever it is judged.  Plain values in, numbers out; the
mapping from a stored row or an exchange record to an attempt's state lives with that row's model.

**The state of one attempt** (``AttemptState``):

* ``correct`` — answered and counted correct by the summary's rule (``is_correct``: review score 1 and not
  stopped by its output budget);
* ``wrong`` — answered and not counted correct, a budget-exhausted answer included (whatever EvalScope scored
  the truncated text);
* ``no_answer`` — no valid answer to judge: the request failed after its retries (EvalScope retries inside
  the worker, so the event a stopper sees is final), its row is missing, or it raised an API or scoring
  error.  A pending attempt has no state yet: a unit is judged only once every attempt of it has one.

**A drop decided before generation** (``PairedState``'s ``dropped``): the entry was never sent, for a reason
fixed before any answer existed and by the same rule in every arm — its prompt and output budget exceed the
configured context (the context fit, with the benchmark's ``drop_overlong`` consent) or the context the
server resolved (a benchmark built to lengths, e.g. the KV probe).  Such a drop says nothing about the
difference between the arms.  A unit dropped in **both** arms leaves the paired comparison
(``dropped_in_both``): it is not a unit, the block's n shrinks and the design's operating characteristic is
the one at the units that remain.  A unit dropped in one arm only and answered in the other is a unit, and
the drop counts as ``no_answer`` there — against the test arm, as every missing answer does.

**The rule: a unit without a valid answer is never evidence for non-inferiority.**  The question the gate
asks is "is the test arm at most ``margin`` worse than the control?"; a sample the test arm failed to answer
is a failure of the test arm, and a sample the control failed to answer tells nothing in the test arm's
favour.  So a ``no_answer`` attempt counts **against the test arm**: 0 in the test arm, 1 in the control
arm.  Counting it 0 in both arms (the summary's denominator rule) would make a unit failed in both arms
``d = 0`` — a tie, which near a non-inferiority margin is evidence *for* non-inferiority (the e-process
``K⁺`` grows on ``d > −margin``), and a server failing more requests would pass more easily.  Dropping such
attempts instead would make the units' values depend on which requests failed, again in the failing arm's
favour.  Here a unit failed in both arms is ``d = −1``: the most adverse value, never a tie.  The rule is
conservative for the non-inferiority side only (an "inferior" verdict can come sooner); a run with many
unanswered attempts is an audit finding of its own, not something the statistic should absorb.

For ``correct``/``wrong`` the value is the plain correctness (1/0) in either arm; with repeats the arm's unit
value is the mean over its attempts (the cluster mean, Miller 2024 §3.1), so ``d ∈ [−1, 1]`` as
``evalpipe.stats.sequential`` requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

#: What an attempt that was asked for came to (a run's exchange records hold these).
AttemptState = Literal["correct", "wrong", "no_answer"]
#: An attempt's state for the paired rule: what it came to, or ``dropped`` before generation (module docstring).
PairedState = Literal["correct", "wrong", "no_answer", "dropped"]
Arm = Literal["test", "control"]

_NO_ANSWER_VALUE: dict[Arm, float] = {"test": 0.0, "control": 1.0}


def attempt_value(state: PairedState, arm: Arm) -> float:
    """One attempt's value in its arm: 1 correct, 0 wrong; no_answer — and a drop met by an answer in the other
    arm — 0 in the test arm and 1 in the control arm (module docstring: never evidence for non-inferiority)."""
    if state == "correct":
        return 1.0
    if state == "wrong":
        return 0.0
    return _NO_ANSWER_VALUE[arm]  # no_answer, or dropped in this arm and answered in the other


def dropped_in_both(test_states: Sequence[PairedState], control_states: Sequence[PairedState]) -> bool:
    """The unit was dropped before generation in both arms (every attempt ``dropped``): it leaves the paired
    comparison (module docstring)."""
    return (
        bool(test_states)
        and bool(control_states)
        and all(s == "dropped" for s in test_states)
        and all(s == "dropped" for s in control_states)
    )


def arm_scores(states: Sequence[PairedState], arm: Arm) -> list[float]:
    """Every attempt's value in its arm, in attempt order (the per-attempt scores ``evalpipe.stats.paired``
    takes); refuses a unit without attempts (a pending unit is not a unit yet)."""
    if not states:
        raise ValueError("a unit needs at least one attempt with a final state")
    return [attempt_value(s, arm) for s in states]


def arm_value(states: Sequence[PairedState], arm: Arm) -> float:
    """The arm's value of one unit: the mean of its attempts' values (``x̄_i``)."""
    scores = arm_scores(states, arm)
    return sum(scores) / len(scores)


def unit_difference(test_states: Sequence[PairedState], control_states: Sequence[PairedState]) -> float:
    """``d_i = x̄_i(test) − x̄_i(control) ∈ [−1, 1]`` under the rule of the module docstring (a unit failed in
    both arms is −1); refuses a unit dropped in both arms, which is no unit (``dropped_in_both``)."""
    if dropped_in_both(test_states, control_states):
        raise ValueError("a unit dropped before generation in both arms is not judged")
    return arm_value(test_states, "test") - arm_value(control_states, "control")
