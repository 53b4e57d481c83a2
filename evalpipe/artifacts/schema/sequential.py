"""What the sequential rule did inside a run (``generation.sequential`` with ``in_run``): the arms' exchange of
completed units and each arm's stop record.

* ``SequenceRecord`` — one line of ``RUN/sequential/<benchmark>/<variant>.jsonl`` (append-only): one attempt
  of one row of this arm, correct or not by the summary's rule, or refused because the rule had stopped.
  Every arm of the run reads every other arm's file (``evalpipe.run.sequential_stop``).
* ``ArmEnded`` — ``RUN/sequential/<benchmark>/<variant>.end.json``: the arm's EvalScope stage for the benchmark
  is over (finished, stopped or failed); no arm waits for it any longer.
* ``SequentialStops`` — ``RUN/<variant>/sequential_stop.json``: per gated benchmark, the units this arm
  actually sent, where the rule stopped and why; compare.json reads it (units sent, tokens spent).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.stats.unit_scores import AttemptState

InRunStopReason = Literal["crossing", "units exhausted", "partner ended"]


class SequenceRecord(Row):
    """One attempt of one row in this arm (EvalScope's ``subset`` and sample ``index`` = row × repeats +
    attempt)."""

    subset: str
    index: int
    correct: float | None = Field(
        description="1/0 by the summary's rule as the worker saw it; None: the row was not sent."
    )
    sent: bool
    cached: bool = False
    state: AttemptState | None = Field(
        default=None,
        description="The attempt's final state for the scoring rule (evalpipe.stats.unit_scores); None in "
        "files written before it (read from correct) and for a row not sent.",
    )

    def attempt_state(self) -> AttemptState | None:
        """The final state of the attempt, or None when it has none (not sent: beyond the stop)."""
        if not self.sent:
            return None
        if self.state is not None:
            return self.state
        if self.correct is None:
            return "no_answer"
        return "correct" if self.correct == 1.0 else "wrong"


class ArmEnded(Artifact):
    schema_version: int = 1
    variant: str
    ended_at: str = Field(description="UTC, ISO 8601.")


class BenchmarkStop(Row):
    """One gated benchmark of one arm: the plan, what was sent, where the rule stopped."""

    benchmark: str
    block: str | None = Field(
        default=None,
        description="The pool whose rule gated this benchmark (stop_unit and verdict are the pool's, in the "
        "pool's units); None: the benchmark's own block.",
    )
    planned_units: int = Field(description="The benchmark's units in the manifest (the fixed-n plan).")
    batch_units: int = Field(description="Units released ahead of the prefix judged in every arm.")
    test: str = Field(description="The variant under test whose units the rule judged.")
    control: str = Field(description="The control it was paired with.")
    together: bool = Field(
        description="true: the arms ran at once and advanced together (parallel_variants); false: one after "
        "another, each judged against the arms that ran before it."
    )
    units_sent: int = Field(description="Units with at least one request sent by this arm (cached ones too).")
    units_sent_prefix: int = Field(
        description="Leading units of the sequence order with every attempt sent: what the paired comparison "
        "uses (the pool is FIFO in that order, so the units sent are such a prefix but for attempts cut at "
        "the halt).  The order is the manifest's (evalpipe.hashing.block_order): an entry dropped before "
        "sending (context fit) holds its place and counts as done, with no answer."
    )
    units_complete: int = Field(description="Units with every attempt done in this arm.")
    stop_unit: int | None = Field(
        description="The unit of the first crossing (the verdict's unit, of the block's units); None: the rule "
        "did not stop."
    )
    verdict: Literal["non-inferior", "inferior", "inconclusive"]
    stop_reason: InRunStopReason
    units_not_sent: int = Field(description="Units of the plan this arm never sent.")


class SequentialStops(Artifact):
    schema_version: int = 1
    variant: str
    benchmarks: list[BenchmarkStop]
