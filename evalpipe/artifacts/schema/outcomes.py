"""``outcomes.jsonl`` — one row per manifest entry: what happened to that sample.

Rows are produced by the EvalScope bridge (the only code that knows EvalScope's output layout) as
normalised facts; the audit judges them.  Missing predictions or reviews are rows too.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from evalpipe.artifacts.schema.base import Row
from evalpipe.artifacts.schema.sandbox import Denial
from evalpipe.config.code_execution import SandboxKind
from evalpipe.stats.unit_scores import PairedState

FailureClass = Literal[
    "ok",
    "wrong",
    "budget_exhausted",
    "budget_exhausted_in_reasoning",
    "api_error",
    "scoring_error",
    "code_wrong_answer",
    "code_timeout",
    "code_runtime_error",
    "code_compile_error",
    "unparsable_answer",
    "missing_prediction",
    "missing_review",
    "context_overflow",
]

FAILURE_CLASSES: tuple[str, ...] = get_args(FailureClass)
#: The output budget ran out: while still thinking (no final answer), or in the answer itself.  Both count
#: as incorrect whatever EvalScope scored.
BUDGET_CLASSES: frozenset[str] = frozenset({"budget_exhausted", "budget_exhausted_in_reasoning"})


class CodeExecution(Row):
    """How a LiveCodeBench sample's program was executed against its tests (``OutcomeRow.code_execution``).

    Both modes run the program in a test process started in the run's sandbox (``sandbox``), and record
    what the sandbox denied it (``denied``).
    ``evalscope_review``: EvalScope's own review, concurrent with the other reviews; its per-test limit is
    wall-clock time and its global limit, ``(limit + 1) × tests`` seconds, starts once the test process is
    up (``wall_from_program_start``; in runs made before evalpipe ran the review's programs itself: at
    the spawn of a fresh Python interpreter, ``wall_from_interpreter_spawn``).
    ``isolated_recheck``: a sample the review left as a timeout or without a result, re-run alone with
    EvalScope's own LiveCodeBench test code (``testing_util.run_test``) in a process whose clock starts
    once its interpreter is up; the per-test limit is the program's CPU time from its own start, with a
    backstop for a program that blocks (wall time not spent waiting for a CPU).  Its class replaces the
    review's.
    """

    mode: Literal["evalscope_review", "isolated_recheck"]
    per_test_limit_s: float = Field(description="EvalScope's review_timeout for the benchmark.")
    limit_clock: Literal["wall_from_interpreter_spawn", "wall_from_program_start", "cpu_from_program_start"]
    wall_backstop_s: float | None = Field(
        default=None,
        description="isolated_recheck: limit per test for a program that blocks, in wall time not spent "
        "waiting for a CPU.",
    )
    global_limit_s: float | None = Field(
        default=None,
        description="Wall-clock limit for all tests together (evalscope_review: from the interpreter's "
        "spawn; isolated_recheck: from the moment the ready test process received the program).",
    )
    tests: int | None = Field(default=None, description="Test cases of the problem.")
    attempts: int = Field(
        default=1, description="Test processes started (isolated_recheck: another only if one never came up)."
    )
    review_class: str | None = Field(
        default=None, description="isolated_recheck: the class EvalScope's review gave (replaced)."
    )
    review_detail: str | None = None
    results: list[bool | int] | None = Field(
        default=None,
        description="isolated_recheck: per-test results (True pass, -2 wrong, -3 time, -4 error).",
    )
    wall_s: float | None = Field(default=None, description="isolated_recheck: wall time of the tests.")
    cpu_s: float | None = Field(default=None, description="isolated_recheck: CPU time of the test process.")
    sandbox: SandboxKind | None = Field(
        default=None, description="The sandbox the program ran in (None: a review made without one)."
    )
    denied: list[Denial] = Field(
        default_factory=list,
        description="What the sandbox refused the program (filesystem, network, environment, processes, "
        "address_space, file_size, cpu_time, …), with the evidence.",
    )
    ready_s: float | None = Field(
        default=None,
        description="Launch of the test process to 'ready': the sandbox, the interpreter and EvalScope's test "
        "code started (not counted in any limit).",
    )


class AttemptOutcome(Row):
    """One attempt at a sample when the run asks every sample ``generation.repeats`` times."""

    attempt: int = Field(description="0 … repeats−1.")
    index: int = Field(description="EvalScope's sample index of the attempt (position × repeats + attempt).")
    response_id: str | None = None
    response_sha256: str | None = Field(default=None, description="sha256 of the final answer text.")
    request_seed: int | None = Field(
        default=None,
        description="The seed the attempt's answered request carried (requests.jsonl, joined on response_id); "
        "None when it carried none or no recorded request answered it.",
    )
    score: float | None = None
    failure_class: FailureClass
    correct: bool = Field(description="Counted correct by the summary's one rule (is_correct).")


class OutcomeRow(Row):
    schema_version: int = 1
    benchmark: str
    subset: str
    index: int = Field(description="EvalScope's positional index within (benchmark, subset); -1: never sent.")
    source_id: str
    stratum: str
    prediction_present: bool
    review_present: bool
    n_predictions: int = Field(description="Prediction records found for this index (should be 1).")
    n_reviews: int = Field(description="Review records found for this index (should be 1).")
    response_id: str | None = Field(default=None, description="model_output.id (the proxy's attempt rid).")
    request_seed: int | None = Field(
        default=None,
        description="The seed the answered request carried (requests.jsonl, joined on response_id): attempt "
        "0's; each attempt's is in attempts.  None when it carried none or no recorded request answered it.",
    )
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float | None = None
    reasoning_chars: int | None = Field(
        default=None,
        description="Characters of reasoning (reasoning_content, or inline <think> text); 0 = none; None "
        "without a prediction.",
    )
    reasoning_tokens: int | None = Field(
        default=None,
        description="Reasoning tokens as the server reported them (usage.reasoning_tokens or "
        "usage.completion_tokens_details.reasoning_tokens); None when not reported — never estimated.",
    )
    answer_chars: int | None = Field(
        default=None, description="Characters of the final answer (content without reasoning)."
    )
    final_answer_present: bool | None = Field(
        default=None, description="The response holds a non-blank final answer besides its reasoning."
    )
    api_error: str | None = None
    prompt_sha256: str | None = Field(
        default=None, description="evalpipe.hashing.prompt_sha256 of the prediction."
    )
    expected_prompt_sha256: str | None = Field(
        default=None,
        description="Prompt hash recorded when this entry was first rendered (prompt_hashes.jsonl).",
    )
    prompt_contains_question: bool | None = Field(
        default=None, description="The final user message contains the manifest entry's question text."
    )
    review_matches_prediction: bool | None = Field(
        default=None, description="The review's messages and output equal the prediction's."
    )
    response_sha256: str | None = None
    score: float | None = Field(default=None, description="Primary metric (0/1 for all four benchmarks).")
    scores: dict[str, float] = Field(default_factory=dict, description="All metrics of the review.")
    instructions_total: int | None = Field(
        default=None, description="IFEval: len(instruction_id_list), on every row (scored or not)."
    )
    instructions_followed_strict: int | None = Field(
        default=None, description="IFEval: instructions followed (strict); None when not scored."
    )
    instructions_followed_loose: int | None = Field(
        default=None, description="IFEval: instructions followed (loose); None when not scored."
    )
    extracted_answer: str | None = None
    gold_answer: str | None = None
    failure_class: FailureClass
    failure_detail: str | None = Field(
        default=None,
        description="e.g. the exception type for code_runtime_error, the error for scoring_error.",
    )
    code_execution: CodeExecution | None = Field(
        default=None, description="LiveCodeBench: how the program was run against its tests."
    )
    attempts: list[AttemptOutcome] = Field(
        default_factory=list,
        description="generation.repeats > 1: every attempt, attempt 0 first (the row's own fields are "
        "attempt 0's); empty with one attempt per sample.",
    )
    mean_score: float | None = Field(
        default=None,
        description="generation.repeats > 1: share of the answered attempts counted correct (0 when none "
        "was answered) — the sample's score in the clustered mean.",
    )

    @property
    def failure_label(self) -> str:
        """``code_runtime_error:IndexError`` style label for reports."""
        if self.failure_class == "code_runtime_error" and self.failure_detail:
            return f"{self.failure_class}:{self.failure_detail}"
        return self.failure_class


#: Why a cached EvalScope row was not reused.
CacheRepairReason = Literal[
    "question_mismatch",
    "prompt_hash_mismatch",
    "no_recorded_hash",
    "unreadable",
    "unknown_index",  # the cached index is beyond the subset's materialized rows
    "prediction_mismatch",  # a review whose messages differ from the prediction kept for its index
]
#: The EvalScope cache a row came from.
CachedArtifact = Literal["prediction", "review"]


class CacheRepair(Row):
    """A cached EvalScope row discarded at resume because it did not belong to its manifest entry."""

    schema_version: int = 1
    benchmark: str
    subset: str
    index: int
    expected_source_id: str
    expected_prompt_sha256: str | None
    found_prompt_sha256: str | None
    found_content_sha256: str | None = Field(
        default=None, description="sha256 of the cached final user message."
    )
    reason: CacheRepairReason
    artifact: CachedArtifact


def counts_scored(row: OutcomeRow | None) -> bool:
    """The row's review scores count: it was scored and did not exhaust its budget.

    A response that hit its output budget counts as incorrect even when EvalScope scored the truncated
    text correct (the declared failure treatment).  The summary, the report and the paired comparison all
    use this rule, so a sample cannot be correct in one and incorrect in another.
    """
    return row is not None and row.score is not None and row.failure_class not in BUDGET_CLASSES


def is_correct(row: OutcomeRow | None) -> bool:
    return counts_scored(row) and row is not None and row.failure_class == "ok" and row.score == 1.0


#: Attempt classes that mean "no answer came back" (the attempt failed after its retries): dropped from the
#: sample's attempt scores, never counted as a wrong answer of the model.
UNANSWERED_CLASSES: frozenset[str] = frozenset({"api_error", "missing_prediction", "context_overflow"})


def attempt_scores(row: OutcomeRow | None) -> list[float]:
    """The sample's attempt scores by the summary's rule, for the clustered statistics of
    ``evalpipe.stats``: one attempt → ``[is_correct]``; repeats → the answered attempts' correctness, or
    ``[0.0]`` when none was answered (the audit's denominator rule: an unanswered sample is wrong)."""
    if row is None or not row.attempts:
        return [1.0 if is_correct(row) else 0.0]
    answered = [1.0 if a.correct else 0.0 for a in row.attempts if a.failure_class not in UNANSWERED_CLASSES]
    return answered or [0.0]


#: Attempt classes without a valid answer to judge (``evalpipe.stats.unit_scores``: ``no_answer``): the
#: unanswered ones and those whose review raised or never came (API or scoring error).
NO_ANSWER_CLASSES: frozenset[str] = UNANSWERED_CLASSES | {"missing_review", "scoring_error"}


#: The class of an entry dropped before generation (never sent; ``evalpipe.stats.unit_scores``: ``dropped``):
#: its prompt and budget exceed the configured context (consented) or the context the server resolved.
DROPPED_CLASS = "context_overflow"


def _state(failure_class: str, score: float | None, correct: bool) -> PairedState:
    if failure_class == DROPPED_CLASS:
        return "dropped"  # decided before generation, the same way in every arm: evidence of nothing
    if failure_class in BUDGET_CLASSES:
        return "wrong"  # an answer that exhausted its budget is wrong, whatever its review scored
    if failure_class in NO_ANSWER_CLASSES or score is None:
        return "no_answer"
    return "correct" if correct else "wrong"


def attempt_states(row: OutcomeRow | None) -> list[PairedState]:
    """Every attempt's final state for the paired scoring rule (``evalpipe.stats.unit_scores``): correct by
    ``is_correct``; wrong for any other answer (a budget-exhausted one included); dropped for an entry dropped
    before generation (``context_overflow``: never sent); no_answer for a missing row, an attempt that failed
    after its retries, or one without a review score.  Every attempt is stated: the rule says how an unanswered
    one counts and when a dropped unit leaves the comparison (dropped in both arms)."""
    if row is None:
        return ["no_answer"]
    if not row.attempts:
        return [_state(row.failure_class, row.score, is_correct(row))]
    return [_state(a.failure_class, a.score, a.correct) for a in row.attempts]
